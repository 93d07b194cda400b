// Jobs: the live list, a job's transcript, messages, audit, tool calls and
// controls.
import { h, clear, get, request, errorBox, empty, table, badge, fmtTime, short, field, toast, plain, paged, tabs, jobEvents, qs, action } from '../lib.js';

const TERMINAL = ['succeeded', 'failed', 'cancelled', 'interrupted'];

export function jobsPage() {
  const prompt = h('textarea', { id: 'job-prompt', rows: 3, required: true, maxlength: 100000, placeholder: 'What should the agent do?' });
  const profile = h('input', { id: 'job-profile', value: 'default', autocomplete: 'off' });
  const err = h('div', { class: 'error', role: 'alert', hidden: true });
  const submit = h('button', { class: 'btn primary', type: 'submit', 'data-testid': 'submit-job' }, 'Submit job');
  const form = h('form', { class: 'card form-grid', 'data-testid': 'job-form' },
    h('h2', {}, 'New job'), field('Prompt', prompt), field('Profile', profile, 'an agent profile of config.yaml'), err, h('div', {}, submit));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.hidden = true;
    submit.disabled = true;
    try {
      const r = await request('POST', 'bridge/jobs', { body: { prompt: prompt.value, profile: profile.value.trim() || undefined } });
      prompt.value = '';
      toast('Job submitted');
      location.hash = '#/jobs/' + r.data.id;
    } catch (e) {
      err.hidden = false;
      err.textContent = plain(e);
    } finally {
      submit.disabled = false;
    }
  });

  const rowsById = new Map();
  const columns = [
    { title: 'Job', cell: (j) => h('a', { href: '#/jobs/' + j.id, 'data-testid': 'job-link' }, short(j.id)) },
    { title: 'State', cell: (j) => badge(j.state) },
    { title: 'Prompt', class: 'wide', cell: (j) => h('span', { class: 'clip', title: j.prompt }, j.prompt) },
    { title: 'Client', cell: (j) => j.client },
    { title: 'Provider', cell: (j) => `${j.profile} · ${j.provider}` },
    { title: 'Created', cell: (j) => fmtTime(j.createdAt) },
    { title: 'Updated', cell: (j) => fmtTime(j.updatedAt) },
  ];
  const list = paged({
    testid: 'jobs',
    columns,
    emptyText: 'No jobs yet.',
    emptyHint: 'Submit one above, or from an app with a client token (POST /v1/bridge/jobs). New jobs appear here live.',
    rowAttrs: (j) => ({ 'data-job': j.id, 'data-state': j.state }),
    load: async (cursor) => {
      const p = await get('bridge/jobs' + qs({ order: 'desc', limit: 50, after: cursor }));
      rowsById.clear();
      for (const j of p.jobs) rowsById.set(j.id, j);
      return { rows: p.jobs, next: p.next };
    },
  });
  // Live: update a row in place; new jobs reload the first page (at most
  // twice a second), or, on a later page, are announced without moving it.
  const fresh = h('button', { class: 'btn small', hidden: true, 'data-testid': 'new-jobs' });
  let added = 0;
  fresh.addEventListener('click', () => { added = 0; fresh.hidden = true; list.reset(); });
  let reload = null;
  jobEvents((ev) => {
    if (ev.type === 'job.created') {
      if (!list.atFirst()) {
        added++;
        fresh.textContent = `${added} new job${added === 1 ? '' : 's'}: show the newest`;
        fresh.hidden = false;
        return;
      }
      if (!reload) reload = setTimeout(() => { reload = null; list.reset(); }, 500);
      return;
    }
    if (ev.type !== 'job.updated' || !rowsById.has(ev.jobId)) return;
    const tr = list.querySelector(`tr[data-job="${CSS.escape(ev.jobId)}"]`);
    if (!tr) return;
    const j = ev.data;
    rowsById.set(j.id, j);
    tr.dataset.state = j.state;
    tr.replaceChildren(...columns.map((c) => h('td', { class: c.class }, c.cell(j))));
  });
  return h('section', { class: 'page' },
    h('header', { class: 'page-head' }, h('h1', {}, 'Jobs'), h('span', { class: 'muted live' }, 'live')),
    form, h('div', { class: 'list-head' }, h('h2', {}, 'All jobs'), fresh), list);
}

export function jobPage(id) {
  const head = h('div', { class: 'card job-head', 'data-testid': 'job-head' }, h('div', { class: 'muted' }, 'Loading…'));
  const body = h('div', {});
  const root = h('section', { class: 'page' },
    h('header', { class: 'page-head' }, h('a', { href: '#/jobs', class: 'back' }, '← Jobs'), h('h1', {}, 'Job ', h('code', {}, short(id)))),
    head, body);
  const live = h('div', { class: 'live-text', 'data-testid': 'live-text', hidden: true });
  let job = null;
  let view = null;

  function renderHead() {
    const ctl = (name, label, status) => {
      const b = h('button', { class: 'btn small', 'data-testid': 'job-' + name }, label);
      b.addEventListener('click', () => action(b, async () => {
        const r = await request('POST', `bridge/jobs/${id}/${name}`, { body: {} });
        job = r.data;
        renderHead();
      }, `${label}: done`).catch(() => {}));
      b.disabled = !status.includes(job.state);
      return b;
    };
    clear(head,
      h('div', { class: 'job-title' }, badge(job.state), h('span', { class: 'prompt' }, job.prompt)),
      h('dl', { class: 'kv' },
        kv('Id', h('code', {}, job.id)), kv('Client', job.client), kv('Profile', `${job.profile} · ${job.provider}`),
        kv('Attempt', job.attempt), kv('Created', fmtTime(job.createdAt)), kv('Finished', fmtTime(job.finishedAt)),
        job.workDir ? kv('Directory', h('code', {}, job.workDir)) : null,
        job.lastError ? kv('Last error', `${job.lastError.message} (${job.lastError.code})`) : null,
        kv('Usage', `${job.usage.inputTokens || 0} in · ${job.usage.outputTokens || 0} out` + (job.usage.costUsd ? ` · $${job.usage.costUsd.toFixed(4)}` : ''))),
      h('div', { class: 'controls' },
        ctl('pause', 'Pause', ['queued', 'running']),
        ctl('resume', 'Resume', ['paused']),
        ctl('cancel', 'Cancel', ['queued', 'running', 'paused']),
        ctl('retry', 'Retry', ['succeeded', 'failed', 'cancelled', 'interrupted'])));
  }

  // newer keeps whichever view of the job is the more recent: a GET can
  // answer after the event stream already told of a later state (times
  // are fixed-width RFC 3339 in UTC, so they compare as strings).
  const newer = (got) => (job && job.updatedAt > got.updatedAt ? job : got);

  async function load() {
    try {
      job = newer(await get('bridge/jobs/' + id));
    } catch (e) {
      clear(head, errorBox(e));
      return;
    }
    renderHead();
    view = tabs([
      { key: 'transcript', title: 'Transcript', render: transcript },
      { key: 'audit', title: 'Audit', render: audit },
      { key: 'tools', title: 'Tool calls', render: tools },
      { key: 'attempts', title: 'Attempts', render: attempts },
    ]);
    clear(body, view.el);
  }

  function transcript() {
    const box = h('div', { class: 'transcript', 'data-testid': 'transcript' }, h('div', { class: 'muted' }, 'Loading…'));
    const text = h('textarea', { id: 'message-text', rows: 2, maxlength: 100000, placeholder: 'Send the agent a message…', required: true });
    const send = h('button', { class: 'btn primary', type: 'submit', 'data-testid': 'send-message' }, 'Send');
    const form = h('form', { class: 'message-form' }, text, send);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      action(send, async () => {
        await request('POST', `bridge/jobs/${id}/messages`, { body: { text: text.value } });
        text.value = '';
        fill();
      }, 'Message sent').catch(() => {});
    });
    async function fill() {
      try {
        const m = await get(`bridge/jobs/${id}/messages`);
        const items = m.messages.map((x) => h('div', { class: 'msg msg-' + x.role, 'data-role': x.role },
          h('div', { class: 'msg-meta muted small' }, `${x.role} · attempt ${x.attempt} · ${fmtTime(x.createdAt)}` + (x.status && x.status !== 'final' ? ` · ${x.status}` : '')),
          h('div', { class: 'msg-text' }, x.text)));
        const first = h('div', { class: 'msg msg-user', 'data-role': 'prompt' }, h('div', { class: 'msg-meta muted small' }, 'prompt · ' + fmtTime(job.createdAt)), h('div', { class: 'msg-text' }, job.prompt));
        clear(box, first, items, live);
      } catch (e) {
        clear(box, errorBox(e));
      }
    }
    box.refresh = fill;
    fill();
    return h('div', {}, box, form);
  }

  function audit() {
    let through;
    return paged({
      testid: 'audit',
      columns: [
        { title: '#', cell: (e) => e.seq },
        { title: 'Kind', cell: (e) => h('code', {}, e.kind) },
        { title: 'Attempt', cell: (e) => e.attempt },
        { title: 'Summary', class: 'wide', cell: (e) => h('span', { class: 'clip' }, summarize(e.summary)) },
        { title: 'Time', cell: (e) => fmtTime(e.createdAt) },
      ],
      emptyText: 'The audit log is empty.',
      load: async (cursor) => {
        const p = await get(`bridge/jobs/${id}/audit` + qs({ limit: 100, after: cursor || 0, through }));
        through = p.through;
        return { rows: p.entries, next: p.hasMore ? p.nextAfter : null };
      },
    });
  }

  function tools() {
    const filesOnly = h('input', { type: 'checkbox', id: 'files-only' });
    let list;
    const make = () => paged({
      testid: 'tools',
      columns: [
        { title: '#', cell: (t) => t.seq },
        { title: 'Tool', cell: (t) => h('code', {}, t.name) },
        { title: 'Status', cell: (t) => badge(t.status) },
        { title: 'Files', class: 'wide', cell: (t) => (t.files && t.files.length) ? h('ul', { class: 'files' }, t.files.map((f) => h('li', {}, h('code', {}, f)))) : '—' },
        { title: 'Duration', cell: (t) => t.durationMs != null ? `${t.durationMs} ms` : '—' },
        { title: 'Started', cell: (t) => fmtTime(t.startedAt) },
      ],
      emptyText: filesOnly.checked ? 'No tool call touched a file.' : 'The agent made no tool calls.',
      load: async (cursor) => {
        const p = await get(`bridge/jobs/${id}/tools` + qs({ limit: 100, after: cursor || 0, filesOnly: filesOnly.checked ? 'true' : '' }));
        return { rows: p.tools, next: p.hasMore ? p.nextAfter : null };
      },
    });
    const wrap = h('div', {});
    filesOnly.addEventListener('change', () => { list = make(); clear(wrap, list); });
    list = make();
    wrap.append(list);
    return h('div', {}, h('label', { class: 'inline' }, filesOnly, ' only calls that touched files'), wrap);
  }

  function attempts() {
    const box = h('div', {}, h('div', { class: 'muted' }, 'Loading…'));
    get(`bridge/jobs/${id}/attempts`).then((a) => clear(box, table([
      { title: 'Attempt', cell: (x) => x.n },
      { title: 'State', cell: (x) => badge(x.state) },
      { title: 'Reason', cell: (x) => x.reason },
      { title: 'Error', cell: (x) => x.error ? `${x.error.message} (${x.error.code})` : '—' },
      { title: 'Started', cell: (x) => fmtTime(x.startedAt) },
      { title: 'Finished', cell: (x) => fmtTime(x.finishedAt) },
    ], a.attempts)), (e) => clear(box, errorBox(e)));
    return box;
  }

  const es = jobEvents((ev) => {
    if (ev.jobId !== id) return;
    if (ev.type === 'job.updated' || ev.type === 'job.created') {
      job = newer(ev.data);
      renderHead();
      if (TERMINAL.includes(job.state)) live.hidden = true;
    } else if (ev.type === 'agent.message' && ev.data && ev.data.text) {
      live.hidden = false;
      live.textContent += ev.data.text;
    } else if (ev.type === 'message.created') {
      live.textContent = '';
      live.hidden = true;
      const t = document.querySelector('[data-testid="transcript"]');
      if (t && t.refresh) t.refresh();
    }
  });
  // The stream only carries what happens after it opens: read the job
  // again once it is open, so a change between the first read and the
  // stream (a quick job finishing) is not missed.
  es.addEventListener('open', () => {
    get('bridge/jobs/' + id).then((got) => { job = newer(got); renderHead(); }, () => {});
  });
  load();
  return root;
}

function kv(k, v) {
  return [h('dt', {}, k), h('dd', {}, v)];
}

function summarize(s) {
  if (s === null || s === undefined) return '';
  if (typeof s === 'string') return s;
  if (s.text) return s.text;
  if (s.state) return s.state;
  return JSON.stringify(s);
}
