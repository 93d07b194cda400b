// Clients and tokens: every client with its scopes and profiles, token
// creation with the presets of the API spec, revocation.
import { h, clear, get, request, errorBox, empty, table, badge, fmtTime, field, copyButton, confirmButton, toast, plain } from '../lib.js';

// The console's presets (spec 1, Authentication 5).
const PRESETS = [
  { key: 'default', title: 'Console default', scopes: ['read', 'submit', 'control'] },
  { key: 'readonly', title: 'Read-only inspection', scopes: ['read'] },
  { key: 'workflows', title: 'Jobs and workflows', scopes: ['read', 'submit', 'control', 'workflows'] },
];

export function clients() {
  const list = h('div', { 'data-testid': 'clients' });
  const issued = h('div', { 'data-testid': 'issued' });
  const id = h('input', { id: 'client-id', name: 'id', required: true, maxlength: 64, pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}', placeholder: 'my-ide', autocomplete: 'off' });
  const preset = h('select', { id: 'client-preset', name: 'preset' }, PRESETS.map((p) => h('option', { value: p.key }, `${p.title} (${p.scopes.join(', ')})`)));
  const profiles = h('input', { id: 'client-profiles', name: 'profiles', value: 'default', placeholder: 'default', autocomplete: 'off' });
  const err = h('div', { class: 'error', role: 'alert', hidden: true });
  const submit = h('button', { class: 'btn primary', type: 'submit', 'data-testid': 'create-token' }, 'Create token');
  const form = h('form', { class: 'card form-grid', 'data-testid': 'token-form' },
    h('h2', {}, 'New client token'),
    field('Client name', id, '1–64 of A–Z a–z 0–9 . _ -; tokens under one name are one client'),
    field('Access', preset, 'what the token may do'),
    field('Profiles', profiles, 'comma-separated agent profiles it may run; * for all'),
    err, h('div', {}, submit));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.hidden = true;
    const p = PRESETS.find((x) => x.key === preset.value);
    const body = { id: id.value.trim(), profiles: profiles.value.split(',').map((s) => s.trim()).filter(Boolean), scopes: p.scopes };
    submit.disabled = true;
    try {
      const r = await request('POST', 'bridge/admin/tokens', { body });
      showIssued(r.data);
      id.value = '';
      load();
    } catch (e) {
      err.hidden = false;
      err.textContent = plain(e);
    } finally {
      submit.disabled = false;
    }
  });

  function showIssued(t) {
    const value = h('code', { class: 'secret', 'data-testid': 'new-token' }, t.token);
    clear(issued, h('div', { class: 'card notice', role: 'status' },
      h('h2', {}, `Token for ${t.client}`),
      h('p', {}, 'Copy it now: it is shown only once and the daemon keeps only its hash.'),
      h('div', { class: 'token-row' }, value, copyButton(t.token)),
      h('p', { class: 'muted small' }, `scopes ${t.scopes.join(', ')} · profiles ${t.profiles.join(', ')}`),
      h('button', { class: 'btn small ghost', onclick: () => clear(issued) }, 'Done, hide it')));
  }

  async function load() {
    let data;
    try {
      data = await get('bridge/admin/tokens');
    } catch (e) {
      clear(list, errorBox(e));
      return;
    }
    const byClient = new Map();
    for (const t of data.tokens) {
      const c = byClient.get(t.client) || { client: t.client, tokens: [], active: 0 };
      c.tokens.push(t);
      if (!t.revokedAt) c.active++;
      byClient.set(t.client, c);
    }
    const rows = [...byClient.values()];
    if (!rows.length) {
      clear(list, empty('No client tokens yet.', 'Create one above for an app or IDE panel; the owner token stays in owner.token.'));
      return;
    }
    clear(list, table([
      { title: 'Client', cell: (c) => h('strong', {}, c.client) },
      { title: 'Scopes', cell: (c) => latest(c).scopes.join(', ') },
      { title: 'Profiles', cell: (c) => latest(c).profiles.join(', ') },
      { title: 'Tokens', cell: (c) => `${c.active} active of ${c.tokens.length}` },
      { title: 'Created', cell: (c) => fmtTime(latest(c).createdAt) },
      { title: 'State', cell: (c) => badge(c.active ? 'active' : 'revoked') },
      { title: '', cell: (c) => c.active ? confirmButton('Revoke', 'Revoke all its tokens?', async () => {
        const r = await request('DELETE', 'bridge/admin/clients/' + encodeURIComponent(c.client));
        toast(`Revoked ${r.data.revokedTokens} token(s) of ${c.client}`);
        load();
      }, { 'data-testid': 'revoke-' + c.client }) : '' },
    ], rows, { rowAttrs: (c) => ({ 'data-client': c.client }) }));
  }
  load();
  return h('section', { class: 'page' },
    h('header', { class: 'page-head' }, h('h1', {}, 'Clients & tokens')),
    h('p', { class: 'muted' }, 'Apps and IDE panels call the bridge with client tokens. Revoking a client ends its access at once: its streams close and its waiting completions end.'),
    form, issued, h('h2', {}, 'Clients'), list);
}

function latest(c) {
  return c.tokens[0];
}
