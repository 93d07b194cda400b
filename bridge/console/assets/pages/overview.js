// Overview: the daemon, its providers, subsystem health, counts and the
// last hour per minute.
import { h, clear, get, request, session, errorBox, table, badge, barChart, perMinute, every, jobEvents, platformEnv, plain, qs } from '../lib.js';

export function overview() {
  const info = session.info || {};
  const health = h('div', { class: 'health-grid', 'data-testid': 'health' });
  const counts = h('div', { class: 'stats', 'data-testid': 'counts' });
  const charts = h('div', { class: 'charts', 'data-testid': 'charts' });
  const providers = h('div', {}, h('div', { class: 'muted' }, 'Loading…'));
  const root = h('section', { class: 'page' },
    h('header', { class: 'page-head' }, h('h1', {}, 'Overview'), h('span', { class: 'muted live' }, 'live')),
    h('div', { class: 'facts card' },
      fact('Version', info.version || 'dev', 'version'),
      fact('Bridge API', info.bridgeUrl),
      fact('Services API', info.servicesUrl),
      fact('Data directory', info.dataDir, 'datadir')),
    h('h2', {}, 'Last hour'), charts,
    h('h2', {}, 'Counts'), counts,
    h('h2', {}, 'Subsystems'), health,
    h('h2', {}, 'Agent providers'), providers);

  let pending = false;
  async function refresh() {
    if (pending) return;
    pending = true;
    try {
      await Promise.all([loadStatus(), loadCharts()]);
    } finally {
      pending = false;
    }
  }

  async function loadStatus() {
    const checks = [
      ['Bridge (jobs)', () => get('bridge/status')],
      ['Services listener', () => get('services/health/ready')],
      ['Workflow platform', () => platformEnv()],
      ['Webhook ingestion', () => get('services/api/v1/webhook-dlq?limit=1')],
      ['Callbacks', () => get('services/api/v1/callback-configurations?size=1')],
    ];
    const results = await Promise.allSettled(checks.map(([, f]) => f()));
    clear(health, checks.map(([name], i) => {
      const r = results[i];
      return h('div', { class: 'health ' + (r.status === 'fulfilled' ? 'up' : 'down') },
        h('span', { class: 'dot', 'aria-hidden': 'true' }), h('strong', {}, name),
        h('span', { class: 'muted small' }, r.status === 'fulfilled' ? 'answering' : plain(r.reason)));
    }));
    const status = results[0].status === 'fulfilled' ? results[0].value : null;
    if (status) {
      const jobs = status.jobs || {};
      const total = Object.values(jobs).reduce((a, b) => a + b, 0);
      const dlq = results[3].status === 'fulfilled' ? null : '—';
      const cfgs = results[4].status === 'fulfilled' ? results[4].value.totalElements : '—';
      clear(counts,
        stat('Jobs', total, Object.entries(jobs).filter(([, v]) => v).map(([k, v]) => `${v} ${k}`).join(' · ') || 'none yet'),
        stat('Running now', `${status.concurrency.running} / ${status.concurrency.limit}`, 'concurrent job slots'),
        stat('Events retained', status.events.newest ? status.events.newest - status.events.oldest + 1 : 0, `ring of ${status.events.capacity}`),
        stat('Callback configurations', cfgs, ''),
        dlq === null ? await dlqStat() : stat('Dead-lettered webhooks', dlq, ''));
      clear(providers, status.providers.length ? table([
        { title: 'Profile', cell: (p) => p.profile },
        { title: 'Provider', cell: (p) => p.provider + (p.demo ? ' (demo)' : '') },
        { title: 'Found on PATH', cell: (p) => badge(p.available ? 'available' : 'missing') },
        { title: 'Permissions', cell: (p) => p.permissions || '—' },
        { title: 'Note', cell: (p) => p.error || '' },
      ], status.providers) : h('p', { class: 'muted' }, 'No profiles are configured.'));
    } else {
      clear(counts, errorBox(results[0].reason));
      clear(providers, errorBox(results[0].reason));
    }
  }

  async function dlqStat() {
    try {
      const d = await get('services/api/v1/webhook-dlq?pending=true&limit=500');
      return stat('Dead letters pending', d.items.length + (d.next_cursor ? '+' : ''), 'webhooks waiting for replay');
    } catch (e) {
      return stat('Dead letters pending', '—', plain(e));
    }
  }

  async function loadCharts() {
    const since = new Date(Date.now() - 3600 * 1000);
    const series = await Promise.allSettled([
      collect(async (cur) => {
        const p = await get('bridge/jobs' + qs({ order: 'desc', limit: 200, after: cur }));
        return { times: p.jobs.map((j) => j.createdAt), next: p.next, done: p.jobs.some((j) => new Date(j.createdAt) < since) };
      }),
      collect(async (cur) => {
        const env = await platformEnv();
        const p = await get(env + '/runs' + qs({ limit: 100, created_after: since.toISOString(), cursor: cur }));
        return { times: p.items.map((r) => r.created_at), next: p.next_cursor };
      }),
      collect(async (cur) => {
        const p = await get('services/api/v1/webhook-events' + qs({ limit: 500, cursor: cur }));
        return { times: p.items.map((e) => e.received_at), next: p.next_cursor, done: p.items.some((e) => new Date(e.received_at) < since) };
      }),
      collect(async (cur) => {
        const p = await get('services/api/v1/callback-executions' + qs({ size: 500, cursor: cur }));
        return { times: p.content.map((e) => e.createdAt), next: p.nextCursor, done: p.content.some((e) => new Date(e.createdAt) < since) };
      }),
    ]);
    const titles = ['Jobs started', 'Workflow runs', 'Webhooks processed', 'Callback deliveries'];
    clear(charts, series.map((s, i) => s.status === 'fulfilled'
      ? barChart(titles[i], perMinute(s.value))
      : h('div', { class: 'chart-card' }, h('div', { class: 'chart-head' }, titles[i]), errorBox(s.reason))));
  }

  every(15000, refresh);
  let timer = null;
  jobEvents((ev) => {
    if (ev.type !== 'job.created' && ev.type !== 'job.updated') return;
    clearTimeout(timer);
    timer = setTimeout(refresh, 500);
  });
  return root;
}

// collect pages through a list until an hour back (at most 10 pages).
async function collect(page) {
  const times = [];
  let cur;
  for (let i = 0; i < 10; i++) {
    const p = await page(cur);
    times.push(...p.times);
    if (!p.next || p.done) break;
    cur = p.next;
  }
  return times;
}

function fact(label, value, testid) {
  return h('div', { class: 'fact' }, h('span', { class: 'label' }, label), h('code', { 'data-testid': testid }, value || '—'));
}

function stat(label, value, note) {
  return h('div', { class: 'stat card' }, h('span', { class: 'label' }, label), h('strong', { class: 'value' }, String(value)), h('span', { class: 'muted small' }, note));
}
