// Callbacks: configurations, executions with their attempts, manual retry
// (callbacks/README.md).
import { h, clear, get, request, badge, fmtTime, short, field, toast, paged, tabs, qs, action, json, errorBox, table } from '../lib.js';

const STATES = ['PENDING', 'HELD_CIRCUIT_OPEN', 'SUCCEEDED', 'FAILED_RETRYING', 'FAILED_PERMANENT', 'CANCELLED'];

export function callbacksPage() {
  const view = tabs([
    { key: 'executions', title: 'Executions', render: executions },
    { key: 'configurations', title: 'Configurations', render: configurations },
  ]);
  return h('section', { class: 'page' },
    h('header', { class: 'page-head' }, h('h1', {}, 'Callbacks')),
    h('p', { class: 'muted' }, 'Signed HTTP deliveries of events to your receivers; each attempt is one execution.'),
    view.el);
}

function configurations() {
  return paged({
    testid: 'callback-configurations',
    columns: [
      { title: 'Name', cell: (c) => h('strong', {}, c.name) },
      { title: 'Status', cell: (c) => badge(c.status) },
      { title: 'URL', class: 'wide', cell: (c) => h('code', {}, `${c.httpMethod} ${c.url}`) },
      { title: 'Events', cell: (c) => (c.subscribedEventTypes || []).join(', ') || 'all' },
      { title: 'Signed', cell: (c) => c.signatureEnabled ? (c.signatureScheme || 'yes') : 'no' },
      { title: 'Created', cell: (c) => fmtTime(c.createdAt) },
    ],
    emptyText: 'No callback configurations.',
    emptyHint: 'Create one with bridge callbacks or POST /api/v1/callback-configurations (its domain must be authorized first).',
    load: async (cursor) => {
      const p = await get('services/api/v1/callback-configurations' + qs({ size: 50, cursor }));
      return { rows: p.content, next: p.nextCursor };
    },
  });
}

function executions() {
  const state = h('select', { id: 'cb-state' }, h('option', { value: '' }, 'any state'), STATES.map((s) => h('option', { value: s }, s.replace(/_/g, ' ').toLowerCase())));
  const event = h('input', { id: 'cb-event-type', placeholder: 'event type', autocomplete: 'off' });
  const wrap = h('div', {});
  const detail = h('div', { 'data-testid': 'execution-detail' });
  const make = () => paged({
    testid: 'callback-executions',
    columns: [
      { title: 'Execution', cell: (x) => h('a', { href: '#/callbacks', onclick: (ev) => { ev.preventDefault(); showAttempts(x); } }, short(x.id)) },
      { title: 'Receiver', cell: (x) => x.configurationName },
      { title: 'Event', cell: (x) => x.eventType },
      { title: 'Attempt', cell: (x) => `${x.attempt} / ${x.maxAttempts}` },
      { title: 'State', cell: (x) => badge(x.state) },
      { title: 'Trigger', cell: (x) => x.trigger.toLowerCase().replace('_', ' ') },
      { title: 'Answer', cell: (x) => x.response ? `HTTP ${x.response.status}` : (x.error ? x.error.code : '—') },
      { title: 'Created', cell: (x) => fmtTime(x.createdAt) },
      { title: '', cell: (x) => retryButton(x) },
    ],
    emptyText: 'No callback deliveries yet.',
    emptyHint: 'Deliveries start when an event matches an active configuration.',
    load: async (cursor) => {
      const p = await get('services/api/v1/callback-executions' + qs({ size: 50, cursor, state: state.value, eventType: event.value.trim() }));
      return { rows: p.content, next: p.nextCursor };
    },
  });
  let list;
  function retryButton(x) {
    if (!['FAILED_PERMANENT', 'CANCELLED'].includes(x.state)) return '';
    const b = h('button', { class: 'btn small', 'data-testid': 'retry-execution' }, 'Retry');
    b.addEventListener('click', () => action(b, async () => {
      const r = await request('POST', 'services/api/v1/callback-executions/retry', { body: { executionId: x.id } });
      toast(`Retry scheduled: attempt ${r.data.attempt}`);
      list.reload();
    }).catch(() => {}));
    return b;
  }
  async function showAttempts(x) {
    clear(detail, h('div', { class: 'muted' }, 'Loading…'));
    try {
      const p = await get('services/api/v1/callback-executions' + qs({ size: 100, deliveryId: x.deliveryId }));
      clear(detail, h('div', { class: 'card' },
        h('h2', {}, `Delivery ${short(x.deliveryId)} to ${x.configurationName}`),
        table([
          { title: 'Attempt', cell: (a) => a.attempt },
          { title: 'State', cell: (a) => badge(a.state) },
          { title: 'Request', cell: (a) => a.request ? `${a.request.method} ${a.request.url}` : '—' },
          { title: 'Answer', cell: (a) => a.response ? `HTTP ${a.response.status}` : '—' },
          { title: 'Error', class: 'wide', cell: (a) => a.error ? `${a.error.code}: ${a.error.message}` : '' },
          { title: 'Duration', cell: (a) => a.durationMs != null ? `${a.durationMs} ms` : '—' },
          { title: 'Finished', cell: (a) => fmtTime(a.finishedAt) },
          { title: '', cell: (a) => h('details', {}, h('summary', {}, 'detail'), json(a)) },
        ], p.content)));
    } catch (e) {
      clear(detail, errorBox(e));
    }
  }
  const form = h('form', { class: 'filters' }, field('State', state), field('Event type', event), h('button', { class: 'btn', type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); list = make(); clear(wrap, list); });
  list = make();
  wrap.append(list);
  return h('div', {}, form, wrap, detail);
}
