// Webhooks: recent events with their verification outcome, and the
// dead-letter queue with replay (ingest/README.md).
import { h, clear, get, request, badge, fmtTime, short, field, toast, paged, tabs, qs, action } from '../lib.js';

export function webhooksPage() {
  const view = tabs([
    { key: 'events', title: 'Recent events', render: events },
    { key: 'dlq', title: 'Dead letters', render: dlq },
  ]);
  return h('section', { class: 'page' },
    h('header', { class: 'page-head' }, h('h1', {}, 'Webhooks')),
    h('p', { class: 'muted' }, 'Webhooks arrive at POST /api/v1/webhook/{provider} on the services listener, are published, then verified.'),
    view.el);
}

function events() {
  const provider = h('input', { id: 'wh-provider', placeholder: 'github', autocomplete: 'off' });
  const status = h('select', { id: 'wh-status' }, ['', 'verified', 'unverified', 'duplicate', 'failed'].map((s) => h('option', { value: s }, s || 'any outcome')));
  const wrap = h('div', {});
  const make = () => paged({
    testid: 'webhook-events',
    columns: [
      { title: 'Event', cell: (e) => h('code', {}, short(e.event_id)) },
      { title: 'Provider', cell: (e) => e.provider },
      { title: 'Verification', cell: (e) => badge(e.status) },
      { title: 'Reason', cell: (e) => e.reason || '—' },
      { title: 'Delivery id', cell: (e) => e.delivery_id || '—' },
      { title: 'Topic', cell: (e) => h('code', {}, e.topic) },
      { title: 'Received', cell: (e) => fmtTime(e.received_at) },
      { title: 'Processed', cell: (e) => fmtTime(e.processed_at) },
    ],
    emptyText: 'No webhooks processed yet.',
    emptyHint: 'Configure a provider under platform.webhooks.processors and point its webhook at the services listener.',
    load: async (cursor) => {
      const p = await get('services/api/v1/webhook-events' + qs({ limit: 50, cursor, provider: provider.value.trim(), status: status.value }));
      return { rows: p.items, next: p.next_cursor };
    },
  });
  const form = h('form', { class: 'filters' }, field('Provider', provider), field('Outcome', status), h('button', { class: 'btn', type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); clear(wrap, make()); });
  wrap.append(make());
  return h('div', {}, form, wrap);
}

function dlq() {
  const pending = h('input', { type: 'checkbox', id: 'dlq-pending', checked: true });
  const wrap = h('div', {});
  const make = () => paged({
    testid: 'dlq',
    columns: [
      { title: 'Event', cell: (d) => h('code', {}, short(d.event_id)) },
      { title: 'Provider', cell: (d) => d.provider },
      { title: 'Stage', cell: (d) => d.stage },
      { title: 'Reason', cell: (d) => h('span', { title: d.detail || '' }, d.reason) },
      { title: 'Failures', cell: (d) => d.failures },
      { title: 'Size', cell: (d) => `${d.payload_size} B` },
      { title: 'Failed', cell: (d) => fmtTime(d.failed_at) },
      { title: 'Replays', cell: (d) => d.replays ? `${d.replays} (last ${fmtTime(d.replayed_at)})` : '0' },
      { title: '', cell: (d) => {
        if (!d.replayable) return h('span', { class: 'muted small' }, 'not replayable');
        const b = h('button', { class: 'btn small', 'data-testid': 'replay' }, 'Replay');
        b.addEventListener('click', () => action(b, async () => {
          await request('POST', `services/api/v1/webhook-dlq/${d.event_id}/replay`, { body: {} });
          toast(`Replayed ${short(d.event_id)} to ${d.provider}`);
          list.reload();
        }).catch(() => {}));
        return b;
      } },
    ],
    emptyText: pending.checked ? 'No dead letters wait for a replay.' : 'The dead-letter queue is empty.',
    emptyHint: 'Webhooks that were refused or failed verification land here with the reason.',
    rowAttrs: (d) => ({ 'data-event': d.event_id }),
    load: async (cursor) => {
      const p = await get('services/api/v1/webhook-dlq' + qs({ limit: 50, cursor, pending: pending.checked ? 'true' : '' }));
      return { rows: p.items, next: p.next_cursor };
    },
  });
  let list = make();
  pending.addEventListener('change', () => { list = make(); clear(wrap, list); });
  wrap.append(list);
  return h('div', {}, h('label', { class: 'inline' }, pending, ' only entries not replayed since their last failure'), wrap);
}
