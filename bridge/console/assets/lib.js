// Shared helpers of the console's pages: DOM building, the API client,
// formatting, tables with paging, charts. No framework, no build step.

const SVG = 'http://www.w3.org/2000/svg';

// h builds an element: h('div', {class: 'x', onclick: f}, 'text', child).
export function h(tag, attrs, ...children) {
  const el = tag.startsWith('svg:') ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// ApiError is an API refusal in plain words.
export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || [];
  }
  get plain() {
    const d = this.details.length ? ' (' + this.details.join('; ') + ')' : '';
    return `${this.message}${d}` + (this.code ? ` [${this.code}, HTTP ${this.status}]` : ` [HTTP ${this.status}]`);
  }
}

export const session = { csrf: '', info: null, onSignedOut: () => {} };

const BASE = '/console/api/';

// request calls the console gateway: path is 'bridge/...' or
// 'services/...'. Answers are JSON; refusals become ApiError.
export async function request(method, path, { body, headers, signal } = {}) {
  const hdr = { Accept: 'application/json', ...(headers || {}) };
  if (method !== 'GET' && method !== 'HEAD') hdr['X-Bridge-CSRF'] = session.csrf;
  let payload;
  if (body !== undefined) {
    hdr['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(BASE + path, { method, headers: hdr, body: payload, credentials: 'same-origin', signal });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network', 'The daemon did not answer: is `bridge serve` still running?');
  }
  const text = await resp.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = { message: text }; }
  }
  if (!resp.ok && resp.status !== 202) {
    const err = toError(resp.status, data);
    // The console's own refusal (not an API's): the session ended.
    if (resp.status === 401 && err.message.startsWith('not signed in')) session.onSignedOut(err);
    throw err;
  }
  return { status: resp.status, data, headers: resp.headers };
}

export const get = (path, opts) => request('GET', path, opts).then((r) => r.data);
export const post = (path, body, opts) => request('POST', path, { ...opts, body }).then((r) => r.data);

// toError reads the bridge's {error: {code, message}} and the services'
// problem+json {code, message|detail|title, diagnostics}.
function toError(status, data) {
  if (data && data.error && typeof data.error === 'object') {
    return new ApiError(status, data.error.code || '', data.error.message || 'refused');
  }
  if (data && (data.code || data.title || data.detail || data.message)) {
    const diags = (data.diagnostics || []).map((d) => [d.path || d.parameter, d.message].filter(Boolean).join(': '));
    return new ApiError(status, data.code || '', data.message || data.detail || data.title, diags);
  }
  const words = { 404: 'Not found', 500: 'The daemon failed (see its log)', 502: 'A listener did not answer', 503: 'Unavailable right now' };
  return new ApiError(status, '', words[status] || 'The request was refused');
}

export function plain(err) {
  if (err instanceof ApiError) return err.plain;
  return String(err && err.message ? err.message : err);
}

// errorBox shows an API error in plain words.
export function errorBox(err) {
  return h('div', { class: 'error', role: 'alert' }, plain(err));
}

export function empty(text, hint) {
  return h('div', { class: 'empty' }, h('p', { text }), hint ? h('p', { class: 'muted', text: hint }) : null);
}

export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const today = new Date();
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  if (d.toDateString() === today.toDateString()) return time;
  return d.toLocaleDateString([], { year: 'numeric', month: 'short', day: 'numeric' }) + ' ' + time;
}

export function short(id) {
  return id ? String(id).slice(0, 8) : '—';
}

export function badge(state) {
  const s = String(state || 'unknown').toLowerCase();
  return h('span', { class: 'badge badge-' + s.replace(/[^a-z_]/g, ''), 'data-state': s }, s.replace(/_/g, ' '));
}

export function json(v) {
  return h('pre', { class: 'json' }, JSON.stringify(v, null, 2));
}

export function link(href, text) {
  return h('a', { href }, text);
}

// table renders rows with columns [{title, cell(row)}].
export function table(columns, rows, { rowAttrs } = {}) {
  return h('div', { class: 'table-wrap' },
    h('table', {},
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', { class: c.class }, c.title)))),
      h('tbody', {}, rows.map((r) => h('tr', rowAttrs ? rowAttrs(r) : {}, columns.map((c) => h('td', { class: c.class }, c.cell(r))))))));
}

// paged renders a list that pages with cursors: load(cursor) answers
// {rows, next}. It keeps the cursors of earlier pages for "Previous".
export function paged({ columns, load, emptyText, emptyHint, rowAttrs, testid }) {
  const box = h('div', { class: 'paged', 'data-testid': testid });
  const stack = [];
  let cursor = null;
  async function show() {
    clear(box, h('div', { class: 'muted' }, 'Loading…'));
    let page;
    try {
      page = await load(cursor);
    } catch (e) {
      clear(box, errorBox(e));
      return;
    }
    if (!page.rows.length && !stack.length) {
      clear(box, empty(emptyText, emptyHint));
      return;
    }
    const prev = h('button', { class: 'btn small', disabled: !stack.length, onclick: () => { cursor = stack.pop(); show(); } }, '← Previous');
    const next = h('button', { class: 'btn small', disabled: !page.next, 'data-testid': 'next-page', onclick: () => { stack.push(cursor); cursor = page.next; show(); } }, 'Next →');
    clear(box, table(columns, page.rows, { rowAttrs }),
      h('div', { class: 'pager' }, prev, h('span', { class: 'muted' }, `page ${stack.length + 1} · ${page.rows.length} rows`), next));
  }
  box.reload = () => show();
  box.atFirst = () => stack.length === 0;
  box.reset = () => { stack.length = 0; cursor = null; return show(); };
  show();
  return box;
}

export function toast(text, kind = 'ok') {
  let host = document.getElementById('toasts');
  if (!host) {
    host = h('div', { id: 'toasts', 'aria-live': 'polite' });
    document.body.append(host);
  }
  const t = h('div', { class: 'toast toast-' + kind, role: kind === 'error' ? 'alert' : 'status' }, text);
  host.append(t);
  setTimeout(() => t.remove(), kind === 'error' ? 9000 : 4000);
}

// action runs fn with the button disabled and reports the outcome.
export async function action(button, fn, okText) {
  button.disabled = true;
  try {
    const r = await fn();
    if (okText) toast(okText);
    return r;
  } catch (e) {
    toast(plain(e), 'error');
    throw e;
  } finally {
    button.disabled = false;
  }
}

// confirmButton asks again before a destructive change.
export function confirmButton(label, confirmLabel, fn, attrs = {}) {
  const b = h('button', { class: 'btn danger small', ...attrs }, label);
  let armed = false;
  b.addEventListener('click', async () => {
    if (!armed) {
      armed = true;
      b.textContent = confirmLabel;
      b.classList.add('armed');
      setTimeout(() => { armed = false; b.textContent = label; b.classList.remove('armed'); }, 5000);
      return;
    }
    armed = false;
    b.textContent = label;
    b.classList.remove('armed');
    await action(b, fn).catch(() => {});
  });
  return b;
}

export function copyButton(text) {
  const b = h('button', { class: 'btn small', type: 'button', 'data-testid': 'copy' }, 'Copy');
  b.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      b.textContent = 'Copied';
    } catch {
      b.textContent = 'Select and copy';
    }
    setTimeout(() => { b.textContent = 'Copy'; }, 2000);
  });
  return b;
}

export function uuid() {
  return crypto.randomUUID();
}

// perMinute counts times into the 60 minutes that end now.
export function perMinute(times, now = Date.now()) {
  const buckets = new Array(60).fill(0);
  for (const t of times) {
    const ms = new Date(t).getTime();
    const age = Math.floor((now - ms) / 60000);
    if (age >= 0 && age < 60) buckets[59 - age]++;
  }
  return buckets;
}

// barChart draws a small per-minute chart of the last hour.
export function barChart(title, buckets, note) {
  const w = 240, hgt = 56, bw = w / buckets.length;
  const top = Math.max(1, ...buckets);
  const total = buckets.reduce((a, b) => a + b, 0);
  const svg = h('svg:svg', { viewBox: `0 0 ${w} ${hgt}`, class: 'chart', role: 'img', 'aria-label': `${title}: ${total} in the last hour` });
  svg.append(h('svg:line', { x1: 0, y1: hgt - 0.5, x2: w, y2: hgt - 0.5, class: 'axis' }));
  buckets.forEach((v, i) => {
    if (!v) return;
    const bh = Math.max(2, (v / top) * (hgt - 4));
    const r = h('svg:rect', { x: i * bw + 0.5, y: hgt - bh, width: Math.max(1, bw - 1), height: bh, class: 'bar' });
    r.append(h('svg:title', {}, `${v} (${59 - i} min ago)`));
    svg.append(r);
  });
  return h('div', { class: 'chart-card', 'data-testid': 'chart' },
    h('div', { class: 'chart-head' }, h('span', {}, title), h('strong', {}, String(total))),
    svg, h('div', { class: 'chart-foot muted' }, h('span', {}, '60 min ago'), h('span', {}, note || 'per minute'), h('span', {}, 'now')));
}

// field is a labelled form control.
export function field(label, control, hint) {
  return h('label', { class: 'field' }, h('span', { class: 'label' }, label), control, hint ? h('span', { class: 'hint' }, hint) : null);
}

export function tabs(defs, initial) {
  const bar = h('div', { class: 'tabs', role: 'tablist' });
  const body = h('div', { class: 'tab-body' });
  let current = null;
  function open(key) {
    current = key;
    for (const b of bar.children) b.setAttribute('aria-selected', b.dataset.key === key ? 'true' : 'false');
    const def = defs.find((d) => d.key === key);
    clear(body, def.render());
  }
  for (const d of defs) {
    bar.append(h('button', { class: 'tab', role: 'tab', 'data-key': d.key, 'data-testid': 'tab-' + d.key, onclick: () => open(d.key) }, d.title));
  }
  open(initial || defs[0].key);
  return { el: h('div', {}, bar, body), open, get current() { return current; } };
}

// Cleanup functions of the page on screen (streams, timers), run when
// another page opens.
let cleanups = [];
export function onLeave(fn) { cleanups.push(fn); }
export function runCleanups() {
  for (const f of cleanups) { try { f(); } catch { /* already closed */ } }
  cleanups = [];
}

// every runs fn now and every ms until the page is left.
export function every(ms, fn) {
  fn();
  const t = setInterval(fn, ms);
  onLeave(() => clearInterval(t));
}

// The job event stream (GET /v1/bridge/events), shared by the pages.
export function jobEvents(onEvent) {
  const es = new EventSource('/console/api/bridge/events');
  const types = ['job.created', 'job.updated', 'message.created', 'agent.message', 'agent.reasoning', 'tool.started', 'tool.finished'];
  for (const t of types) es.addEventListener(t, (ev) => { try { onEvent(JSON.parse(ev.data)); } catch { /* not JSON */ } });
  onLeave(() => es.close());
  return es;
}

// The local workspace's environment path on the platform, from
// GET /api/v1/identity (the local operator's workspaces).
let envPath = null;
export async function platformEnv() {
  if (envPath) return envPath;
  const id = await get('services/api/v1/identity');
  for (const w of id.workspaces || []) {
    for (const p of w.projects || []) {
      for (const e of p.environments || []) {
        envPath = `services/api/v1/tenants/${w.id}/projects/${p.id}/environments/${e.id}`;
        return envPath;
      }
    }
  }
  throw new ApiError(404, '', 'The local operator has no workspace environment on the platform');
}

export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, v);
  const s = u.toString();
  return s ? '?' + s : '';
}
