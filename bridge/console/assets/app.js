// The console's shell: sign-in, navigation and the hash router.
import { h, clear, session, request, plain, field, runCleanups } from './lib.js';
import { overview } from './pages/overview.js';
import { clients } from './pages/clients.js';
import { jobsPage, jobPage } from './pages/jobs.js';
import { runsPage, runPage } from './pages/runs.js';
import { webhooksPage } from './pages/webhooks.js';
import { callbacksPage } from './pages/callbacks.js';

const app = document.getElementById('app');

const NAV = [
  ['overview', 'Overview'],
  ['clients', 'Clients & tokens'],
  ['jobs', 'Jobs'],
  ['runs', 'Workflow runs'],
  ['webhooks', 'Webhooks'],
  ['callbacks', 'Callbacks'],
];


async function boot() {
  session.onSignedOut = (err) => showSignIn(err ? plain(err) : '');
  // A code from `bridge console` arrives in the fragment; take it out of
  // the address bar (and history) before anything else.
  const frag = new URLSearchParams(location.hash.replace(/^#/, ''));
  const code = frag.get('code');
  if (code) {
    history.replaceState(null, '', location.pathname);
    try {
      const r = await request('POST', 'session', { body: { code } });
      signedIn(r.data);
      return;
    } catch (e) {
      showSignIn(plain(e));
      return;
    }
  }
  try {
    const r = await request('GET', 'session');
    signedIn(r.data);
  } catch (e) {
    showSignIn('');
  }
}

function showSignIn(message) {
  runCleanups();
  const token = h('input', { type: 'password', id: 'owner-token', autocomplete: 'off', spellcheck: 'false', placeholder: 'brg_…', required: true });
  const err = h('div', { class: 'error', role: 'alert', hidden: !message, 'data-testid': 'signin-error' }, message || '');
  const form = h('form', { class: 'signin card', 'data-testid': 'signin' },
    h('h1', {}, 'Agent Bridge'),
    h('p', {}, 'Run ', h('code', {}, 'bridge console'), ' in a terminal: it opens this page signed in.'),
    h('p', { class: 'muted' }, 'Or paste the owner token (the file owner.token in the data directory). Client tokens do not sign in here.'),
    field('Owner token', token),
    err,
    h('button', { class: 'btn primary', type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const r = await request('POST', 'session', { body: { token: token.value.trim() } });
      token.value = '';
      signedIn(r.data);
    } catch (e) {
      err.hidden = false;
      err.textContent = plain(e);
    }
  });
  clear(app, h('main', { class: 'signin-page' }, form));
  app.className = '';
}

let main;

function signedIn(info) {
  session.csrf = info.csrf;
  session.info = info;
  main = h('main', { id: 'main', tabindex: '-1' });
  const nav = h('nav', { class: 'nav', 'aria-label': 'Sections' },
    NAV.map(([key, title]) => h('a', { href: '#/' + key, 'data-nav': key, 'data-testid': 'nav-' + key }, title)));
  const signOut = h('button', { class: 'btn small ghost', 'data-testid': 'signout' }, 'Sign out');
  signOut.addEventListener('click', async () => {
    try { await request('DELETE', 'session'); } catch { /* ended already */ }
    session.csrf = '';
    showSignIn('Signed out.');
  });
  const side = h('aside', { class: 'side' },
    h('div', { class: 'brand' }, h('span', { class: 'logo', 'aria-hidden': 'true' }), h('span', {}, 'Agent Bridge')),
    nav,
    h('div', { class: 'side-foot' }, h('div', { class: 'muted small' }, info.version ? 'bridge ' + info.version : ''), signOut));
  clear(app, h('div', { class: 'shell' }, side, main));
  app.className = '';
  if (!location.hash || location.hash === '#') location.hash = '#/overview';
  else route();
}


function route() {
  if (!main) return;
  runCleanups();
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  const [section, id] = parts;
  for (const a of document.querySelectorAll('[data-nav]')) {
    a.setAttribute('aria-current', a.dataset.nav === section ? 'page' : 'false');
  }
  const pages = {
    overview: () => overview(),
    clients: () => clients(),
    jobs: () => (id ? jobPage(id) : jobsPage()),
    runs: () => (id ? runPage(id) : runsPage(parts[2])),
    webhooks: () => webhooksPage(),
    callbacks: () => callbacksPage(id),
  };
  const page = pages[section] || pages.overview;
  clear(main, page());
  main.focus({ preventScroll: true });
}

window.addEventListener('hashchange', route);
boot();
