// Workflow runs of the local workspace: lists with filters, a run's steps,
// live logs, history and replay verdict, incidents, human tasks, signals.
import { h, clear, get, request, errorBox, empty, table, badge, fmtTime, short, field, toast, paged, tabs, json, platformEnv, qs, uuid, action, onLeave } from '../lib.js';

const STATUSES = ['running', 'waiting', 'suspended', 'succeeded', 'failed', 'cancelled', 'timed_out'];
const ENDED = ['succeeded', 'failed', 'cancelled', 'timed_out'];

export function runsPage(tab) {
  const view = tabs([
    { key: 'runs', title: 'Runs', render: runList },
    { key: 'incidents', title: 'Incidents', render: () => incidentList() },
    { key: 'tasks', title: 'Human tasks', render: () => taskList() },
  ], tab);
  return h('section', { class: 'page' },
    h('header', { class: 'page-head' }, h('h1', {}, 'Workflow runs')),
    h('p', { class: 'muted' }, 'Runs of your local workspace, read through the platform API as the local operator.'),
    view.el);
}

function runList() {
  const status = h('select', { id: 'run-status' }, h('option', { value: '' }, 'any status'), STATUSES.map((s) => h('option', { value: s }, s.replace('_', ' '))));
  const workflow = h('input', { id: 'run-workflow', placeholder: 'acme/flow or acme/flow@2', autocomplete: 'off' });
  const business = h('input', { id: 'run-business-key', placeholder: 'business key', autocomplete: 'off' });
  const paused = h('select', { id: 'run-paused' }, h('option', { value: '' }, 'paused or not'), h('option', { value: 'true' }, 'paused'), h('option', { value: 'false' }, 'not paused'));
  const wrap = h('div', {});
  const filters = h('form', { class: 'filters', 'data-testid': 'run-filters' },
    field('Status', status), field('Workflow', workflow), field('Business key', business), field('Paused', paused),
    h('button', { class: 'btn', type: 'submit' }, 'Filter'));
  const make = () => paged({
    testid: 'runs',
    columns: [
      { title: 'Run', cell: (r) => h('a', { href: '#/runs/' + r.id, 'data-testid': 'run-link' }, short(r.id)) },
      { title: 'Status', cell: (r) => [badge(r.status), r.paused ? badge('paused') : null] },
      { title: 'Workflow', cell: (r) => h('code', {}, r.workflow) },
      { title: 'Business key', cell: (r) => r.business_key || '—' },
      { title: 'Created', cell: (r) => fmtTime(r.created_at) },
      { title: 'Updated', cell: (r) => fmtTime(r.updated_at) },
    ],
    emptyText: 'No runs match.',
    emptyHint: 'Publish and activate a workflow (bridge workflow publish, bridge workflow activate), then start a run with bridge run start.',
    rowAttrs: (r) => ({ 'data-run': r.id }),
    load: async (cursor) => {
      const env = await platformEnv();
      const p = await get(env + '/runs' + qs({ limit: 50, cursor, status: status.value, workflow: workflow.value.trim(), business_key: business.value.trim(), paused: paused.value }));
      return { rows: p.items, next: p.next_cursor };
    },
  });
  filters.addEventListener('submit', (ev) => { ev.preventDefault(); clear(wrap, make()); });
  wrap.append(make());
  return h('div', {}, filters, wrap);
}

function incidentList(runId, onChange) {
  const statusSel = h('select', { id: 'incident-status' }, h('option', { value: 'active' }, 'active'), h('option', { value: 'resolved' }, 'resolved'), h('option', { value: '' }, 'all'));
  const wrap = h('div', {});
  const show = () => {
    if (runId) {
      const box = h('div', { 'data-testid': 'incidents' }, h('div', { class: 'muted' }, 'Loading…'));
      platformEnv().then((env) => get(`${env}/runs/${runId}/incidents`)).then((items) => {
        clear(box, items.length ? incidentCards(items, () => { show(); if (onChange) onChange(); }) : empty('This run has no incidents.'));
      }, (e) => clear(box, errorBox(e)));
      clear(wrap, box);
      return;
    }
    clear(wrap, paged({
      testid: 'incidents',
      columns: incidentColumns(() => show()),
      emptyText: statusSel.value === 'active' ? 'No active incidents.' : 'No incidents.',
      emptyHint: 'An incident opens when a step fails in a way the workflow does not handle (retries exhausted, an unknown outcome).',
      rowAttrs: (i) => ({ 'data-incident': i.id }),
      load: async (cursor) => {
        const env = await platformEnv();
        const p = await get(env + '/incidents' + qs({ limit: 50, cursor, status: statusSel.value }));
        return { rows: p.items, next: p.next_cursor };
      },
    }));
  };
  statusSel.addEventListener('change', show);
  show();
  return h('div', {}, runId ? null : h('div', { class: 'filters' }, field('Status', statusSel)), wrap);
}

function incidentColumns(reload) {
  return [
    { title: 'Incident', cell: (i) => h('code', {}, short(i.id)) },
    { title: 'Run', cell: (i) => h('a', { href: '#/runs/' + i.run_id }, short(i.run_id)) },
    { title: 'Step', cell: (i) => i.node_id || '—' },
    { title: 'Code', cell: (i) => h('code', {}, i.code || '—') },
    { title: 'Status', cell: (i) => badge(i.status) },
    { title: 'Error', class: 'wide', cell: (i) => i.error ? `${i.error.code || ''}: ${i.error.message || ''}` : '—' },
    { title: 'Opened', cell: (i) => fmtTime(i.opened_at) },
    { title: '', cell: (i) => i.status === 'active' && !i.unavailable ? resolveForm(i, reload) : (i.resolution ? `${i.resolution.kind}: ${i.resolution.reason}` : '') },
  ];
}

function incidentCards(items, reload) {
  return table(incidentColumns(reload), items, { rowAttrs: (i) => ({ 'data-incident': i.id }) });
}

// resolveForm offers the three resolutions (docs/platform-api.md,
// "Incidents"): retry when safe, accept a reconciled result, terminate.
function resolveForm(inc, reload) {
  const kind = h('select', { name: 'kind', 'data-testid': 'resolve-kind' },
    h('option', { value: 'retry_safe', disabled: !inc.retry_safe }, 'Retry the step' + (inc.retry_safe ? '' : ' (not safe)')),
    h('option', { value: 'accept_reconciled_result' }, 'Accept a reconciled result'),
    h('option', { value: 'terminate' }, 'Terminate the run'));
  if (!inc.retry_safe) kind.value = 'accept_reconciled_result';
  const reason = h('input', { name: 'reason', required: true, maxlength: 2000, placeholder: 'why (required)', 'data-testid': 'resolve-reason' });
  const output = h('textarea', { name: 'output', rows: 2, placeholder: 'output as JSON, e.g. {"chargeId":"ch_1"}', 'data-testid': 'resolve-output' });
  const evidence = h('input', { name: 'evidence', maxlength: 2000, placeholder: 'evidence reference', 'data-testid': 'resolve-evidence' });
  const extra = h('div', { class: 'stack' }, output, evidence);
  const sync = () => { extra.hidden = kind.value !== 'accept_reconciled_result'; };
  kind.addEventListener('change', sync);
  sync();
  const go = h('button', { class: 'btn primary small', type: 'submit', 'data-testid': 'resolve' }, 'Resolve');
  const form = h('form', { class: 'resolve stack', 'data-testid': 'resolve-form' }, kind, reason, extra, go);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    action(go, async () => {
      const body = { receipt_id: uuid(), kind: kind.value, reason: reason.value };
      if (kind.value === 'accept_reconciled_result') {
        if (output.value.trim()) {
          try { body.output = JSON.parse(output.value); } catch { throw new Error('The output is not valid JSON'); }
        }
        if (evidence.value.trim()) body.evidence_reference = evidence.value.trim();
      }
      const env = await platformEnv();
      const r = await request('POST', `${env}/incidents/${inc.id}/resolve`, { body, headers: { 'If-Match': `"${inc.revision}"` } });
      toast(`Incident resolved (${kind.value.replace(/_/g, ' ')}): the run is ${r.data.run.status}`);
      reload();
    }).catch(() => {});
  });
  return form;
}

function taskList(runId, onChange) {
  const statusSel = h('select', { id: 'task-status' }, ['open', 'claimed', 'completed', 'closed', ''].map((s) => h('option', { value: s }, s || 'all')));
  const wrap = h('div', {});
  const show = () => clear(wrap, paged({
    testid: 'tasks',
    columns: [
      { title: 'Task', cell: (t) => h('strong', {}, t.title) },
      { title: 'Run', cell: (t) => h('a', { href: '#/runs/' + t.run_id }, short(t.run_id)) },
      { title: 'Step', cell: (t) => t.node_id },
      { title: 'Status', cell: (t) => badge(t.status) },
      { title: 'Assignees', cell: (t) => (t.assignees || []).join(', ') || '—' },
      { title: 'Deadline', cell: (t) => fmtTime(t.deadline) },
      { title: '', class: 'wide', cell: (t) => taskActions(t, () => { show(); if (onChange) onChange(); }) },
    ],
    emptyText: runId ? 'This run has no human tasks.' : 'No human tasks here.',
    emptyHint: runId ? null : 'A human step of a workflow opens a task for people to claim and complete.',
    rowAttrs: (t) => ({ 'data-task': t.id, 'data-status': t.status }),
    load: async (cursor) => {
      const env = await platformEnv();
      const p = await get(env + '/human-tasks' + qs({ limit: 50, cursor, status: statusSel.value, run_id: runId }));
      return { rows: p.items, next: p.next_cursor };
    },
  }));
  statusSel.addEventListener('change', show);
  if (runId) statusSel.value = '';
  show();
  return h('div', {}, h('div', { class: 'filters' }, field('Status', statusSel)), wrap);
}

function taskActions(t, reload) {
  if (t.status === 'completed' || t.status === 'closed') {
    return t.decision ? `decided ${t.decision}` + (t.close_reason ? ` (${t.close_reason})` : '') : (t.close_reason || '');
  }
  const call = async (verb, body) => {
    const env = await platformEnv();
    return request('POST', `${env}/human-tasks/${t.id}/${verb}`, { body, headers: { 'Idempotency-Key': uuid() } });
  };
  if (t.status === 'open') {
    const b = h('button', { class: 'btn small', 'data-testid': 'claim' }, 'Claim');
    b.addEventListener('click', () => action(b, async () => { await call('claim', {}); reload(); }, 'Task claimed').catch(() => {}));
    return b;
  }
  const decision = h('select', { name: 'decision', 'data-testid': 'decision' }, (t.decisions || ['complete']).map((d) => h('option', { value: d }, d)));
  const data = h('textarea', { name: 'data', rows: 2, placeholder: 'data as JSON (optional)', 'data-testid': 'task-data' });
  const go = h('button', { class: 'btn primary small', type: 'submit', 'data-testid': 'complete' }, 'Complete');
  const release = h('button', { class: 'btn small ghost', type: 'button' }, 'Release');
  release.addEventListener('click', () => action(release, async () => { await call('release', {}); reload(); }, 'Task released').catch(() => {}));
  const form = h('form', { class: 'stack', 'data-testid': 'complete-form' },
    t.form ? h('details', {}, h('summary', {}, 'form schema'), json(t.form)) : null, decision, data, h('div', { class: 'row' }, go, release));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    action(go, async () => {
      const body = { decision: decision.value };
      if (data.value.trim()) {
        try { body.data = JSON.parse(data.value); } catch { throw new Error('The data is not valid JSON'); }
      }
      await call('complete', body);
      reload();
    }, 'Task completed').catch(() => {});
  });
  return form;
}

export function runPage(id) {
  const head = h('div', { class: 'card', 'data-testid': 'run-head' }, h('div', { class: 'muted' }, 'Loading…'));
  const body = h('div', {});
  let run = null;
  async function loadHead() {
    try {
      const env = await platformEnv();
      run = await get(`${env}/runs/${id}`);
    } catch (e) {
      clear(head, errorBox(e));
      return false;
    }
    clear(head,
      h('div', { class: 'job-title' }, badge(run.status), run.paused ? badge('paused') : null, h('code', {}, run.activation ? run.activation.id : '')),
      h('dl', { class: 'kv' },
        kv('Run', h('code', {}, run.id)), kv('Business key', run.business_key || '—'), kv('Correlation key', run.correlation_key || '—'),
        kv('Created', fmtTime(run.created_at)), kv('Updated', fmtTime(run.updated_at)), kv('Event', run.accepted_sequence),
        run.parent_run_id ? kv('Retry of', h('a', { href: '#/runs/' + run.parent_run_id }, short(run.parent_run_id))) : null,
        run.state && run.state.error ? kv('Error', `${run.state.error.code || ''} ${run.state.error.message || ''}`) : null),
      h('details', {}, h('summary', {}, 'Input and output'), json({ input: run.state && run.state.input, output: run.state && run.state.output })));
    return true;
  }
  loadHead().then((ok) => {
    if (!ok) return;
    const view = tabs([
      { key: 'steps', title: 'Steps', render: steps },
      { key: 'logs', title: 'Logs', render: logs },
      { key: 'history', title: 'History', render: history },
      { key: 'replay', title: 'Replay', render: replay },
      { key: 'incidents', title: 'Incidents', render: () => incidentList(id, loadHead) },
      { key: 'tasks', title: 'Human tasks', render: () => taskList(id, loadHead) },
      { key: 'signal', title: 'Send signal', render: signal },
    ]);
    clear(body, view.el);
  });

  function steps() {
    return paged({
      testid: 'steps',
      columns: [
        { title: 'Step', cell: (s) => h('code', {}, s.instance) },
        { title: 'Kind', cell: (s) => s.kind },
        { title: 'Status', cell: (s) => badge(s.status) },
        { title: 'Waiting for', cell: (s) => s.waiting_for || '' },
        { title: 'Attempts', cell: (s) => s.attempts || '' },
        { title: 'Started', cell: (s) => fmtTime(s.started_at) },
        { title: 'Ended', cell: (s) => fmtTime(s.ended_at) },
        { title: 'Last error', class: 'wide', cell: (s) => s.last_error ? `${s.last_error.code}: ${s.last_error.message}` : '' },
      ],
      emptyText: 'No steps have started.',
      load: async (cursor) => {
        const env = await platformEnv();
        const p = await get(`${env}/runs/${id}/steps` + qs({ limit: 200, cursor }));
        return { rows: p.items, next: p.next_cursor };
      },
    });
  }

  // logs follows the run's log with after= (docs/platform-api.md, "Logs").
  function logs() {
    const box = h('div', { class: 'log', 'data-testid': 'logs', role: 'log' });
    const state = h('div', { class: 'muted small' }, 'following…');
    let after = 0;
    let stopped = false;
    onLeave(() => { stopped = true; });
    async function poll() {
      if (stopped || !box.isConnected && after > 0) return;
      try {
        const env = await platformEnv();
        const p = await get(`${env}/runs/${id}/logs` + qs({ limit: 500, after }));
        for (const l of p.items) {
          after = l.id;
          box.append(h('div', { class: 'log-line lvl-' + l.level },
            h('span', { class: 'muted' }, new Date(l.at).toLocaleTimeString([], { hour12: false }) + ' '),
            h('span', { class: 'lvl' }, l.level.toUpperCase().padEnd(5) + ' '),
            h('span', { class: 'node' }, (l.node_id || '-') + ' '), l.message));
        }
        const ended = p.items.some((l) => ['run_succeeded', 'run_failed', 'run_cancelled', 'run_timed_out'].includes(l.type));
        if (!box.children.length) box.append(h('div', { class: 'muted' }, 'No log lines yet.'));
        else if (box.firstChild.classList.contains('muted')) box.firstChild.remove();
        if (ended) state.textContent = 'the run ended';
        if (!stopped && box.isConnected) setTimeout(poll, p.next_cursor ? 0 : 1500);
      } catch (e) {
        clear(box, errorBox(e));
      }
    }
    setTimeout(poll, 0);
    return h('div', {}, state, box);
  }

  function history() {
    return paged({
      testid: 'history',
      columns: [
        { title: 'Seq', cell: (e) => e.seq },
        { title: 'Event', cell: (e) => h('code', {}, e.kind) },
        { title: 'Records', class: 'wide', cell: (e) => (e.records || []).map((r) => r.type || r.kind || '').filter(Boolean).join(', ') || '—' },
        { title: 'Time', cell: (e) => fmtTime(e.at) },
        { title: '', cell: (e) => h('details', {}, h('summary', {}, 'detail'), json(e)) },
      ],
      emptyText: 'No history yet.',
      load: async (cursor) => {
        const env = await platformEnv();
        const p = await get(`${env}/runs/${id}/history` + qs({ limit: 100, cursor }));
        return { rows: p.items, next: p.next_cursor };
      },
    });
  }

  function replay() {
    const out = h('div', { 'data-testid': 'replay' });
    const b = h('button', { class: 'btn', 'data-testid': 'check-replay' }, 'Replay the history');
    b.addEventListener('click', () => action(b, async () => {
      const env = await platformEnv();
      const r = await get(`${env}/runs/${id}/replay`);
      clear(out, h('div', { class: 'card verdict verdict-' + r.verdict },
        h('strong', {}, `Verdict: ${r.verdict}`), h('span', { class: 'muted' }, ` — ${r.events} events replayed up to ${r.seq}`),
        r.detail ? h('p', {}, typeof r.detail === 'string' ? r.detail : JSON.stringify(r.detail)) : null));
    }).catch((e) => clear(out, errorBox(e))));
    return h('div', {}, h('p', { class: 'muted' }, 'Feeds the recorded events to the workflow kernel again from an empty state and compares the result with the stored state.'), b, out);
  }

  function signal() {
    const name = h('input', { id: 'signal-name', required: true, maxlength: 200, placeholder: 'parcel.shipped' });
    const payload = h('textarea', { id: 'signal-payload', rows: 3, placeholder: '{"trackingId": "1Z999"} (optional JSON)' });
    const go = h('button', { class: 'btn primary', type: 'submit', 'data-testid': 'send-signal' }, 'Send signal');
    const form = h('form', { class: 'card form-grid' }, field('Signal name', name), field('Payload', payload), h('div', {}, go));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      action(go, async () => {
        const body = { name: name.value.trim() };
        if (payload.value.trim()) {
          try { body.payload = JSON.parse(payload.value); } catch { throw new Error('The payload is not valid JSON'); }
        }
        const env = await platformEnv();
        const r = await request('POST', `${env}/runs/${id}/signals`, { body, headers: { 'Idempotency-Key': uuid() } });
        toast(`Signal ${r.data.name} accepted${r.data.held ? ' (held: the run is paused)' : ''}; the run is ${r.data.status}`);
        loadHead();
      }).catch(() => {});
    });
    return form;
  }

  return h('section', { class: 'page' },
    h('header', { class: 'page-head' }, h('a', { href: '#/runs', class: 'back' }, '← Runs'), h('h1', {}, 'Run ', h('code', {}, short(id)))),
    head, body);
}

function kv(k, v) {
  return [h('dt', {}, k), h('dd', {}, v)];
}
