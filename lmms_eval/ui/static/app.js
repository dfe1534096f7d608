// The router: #/runs, #/run/<id>, #/samples/<id>/<task>[/<line>], #/compare[/<a>/<b>], #/launch,
// #/leaderboard[?baseline=&correction=], #/training[/<name>].

import { getJSON } from './api.js';
import { showRuns } from './views/runs.js';
import { showRun } from './views/run.js';
import { showSamples } from './views/samples.js';
import { showCompare } from './views/compare.js';
import { showLaunch } from './views/launch.js';
import { showLeaderboard } from './views/leaderboard.js';
import { showTraining } from './views/training.js';

const view = document.getElementById('view');
let leave = null; // what the current view stops (timers, streams) when another one opens

function route() {
  const [path, query] = location.hash.replace(/^#\/?/, '').split('?');
  const [name, ...args] = path.split('/').map(decodeURIComponent);
  if (leave) { leave(); leave = null; }
  document.querySelectorAll('nav a').forEach((a) => a.classList.toggle('active', a.dataset.nav === (name || 'runs')));
  const show = {
    run: showRun, samples: showSamples, compare: showCompare, launch: showLaunch,
    leaderboard: showLeaderboard, training: showTraining,
  }[name] || showRuns;
  leave = show(view, new URLSearchParams(query || ''), ...args) || null;
}

const lightbox = document.getElementById('lightbox');
lightbox.addEventListener('click', () => { lightbox.hidden = true; });
document.addEventListener('keydown', (e) => { if (e.key === 'Escape') lightbox.hidden = true; });
document.addEventListener('click', (e) => {
  const img = e.target.closest('img.thumb');
  if (!img) return;
  e.stopPropagation();
  lightbox.querySelector('img').src = img.src;
  lightbox.hidden = false;
});

window.addEventListener('hashchange', route);
route();
getJSON('/api/info').then((info) => {
  document.getElementById('where').textContent = `logs: ${info.logs} · eval server: ${info.server.mode}`;
}).catch(() => {});
