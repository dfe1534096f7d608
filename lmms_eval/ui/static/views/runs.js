// Runs: every results file under the logs folder; sortable, filterable, polled while open.

import { getJSON, esc, fmt, ci, enc, showError } from '../api.js';

const POLL_MS = 3000;
const COLUMNS = [
  ['model', 'Model'], ['tasks', 'Tasks'], ['date', 'Date'], ['status', 'Status'], ['score', 'Main scores (95% CI)'],
];

export function showRuns(view) {
  const state = { runs: [], sort: 'date', desc: true, filter: '', picked: [], last: '' };
  view.innerHTML = `<h1>Runs</h1>
    <div class="toolbar">
      <input id="runs-filter" type="search" placeholder="filter by model, task, status, folder" size="40">
      <button id="compare-btn" disabled>Compare the two selected</button>
      <span id="runs-count" class="muted"></span>
    </div>
    <table id="runs-table"><thead><tr><th></th>${COLUMNS.map(([k, t]) => `<th data-sort="${k}">${t}</th>`).join('')}<th>Folder</th></tr></thead>
    <tbody></tbody></table>`;
  const body = view.querySelector('tbody');
  view.querySelector('#runs-filter').addEventListener('input', (e) => { state.filter = e.target.value.toLowerCase(); render(); });
  view.querySelectorAll('th[data-sort]').forEach((th) => th.addEventListener('click', () => {
    state.desc = state.sort === th.dataset.sort ? !state.desc : false;
    state.sort = th.dataset.sort;
    render();
  }));
  view.querySelector('#compare-btn').addEventListener('click', () => {
    location.hash = `#/compare/${enc(state.picked[0])}/${enc(state.picked[1])}`;
  });
  body.addEventListener('change', (e) => {
    if (!e.target.matches('input.pick')) return;
    const id = e.target.value;
    state.picked = e.target.checked ? [...state.picked.filter((p) => p !== id), id].slice(-2) : state.picked.filter((p) => p !== id);
    render();
  });

  function key(run) {
    if (state.sort === 'tasks') return run.tasks.join(',');
    if (state.sort === 'score') return run.scores[0]?.value ?? -Infinity;
    return String(run[state.sort] ?? '');
  }

  function render() {
    const shown = state.runs.filter((r) => !state.filter ||
      [r.model, r.status, r.id, ...r.tasks].join(' ').toLowerCase().includes(state.filter));
    shown.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0) * (state.desc ? -1 : 1));
    body.innerHTML = shown.map((r) => `<tr class="run-row" data-id="${esc(r.id)}">
      <td><input type="checkbox" class="pick" value="${esc(r.id)}" ${state.picked.includes(r.id) ? 'checked' : ''} aria-label="select for compare"></td>
      <td><a href="#/run/${enc(r.id)}">${esc(r.model)}</a></td>
      <td>${esc(r.tasks.join(', '))}</td>
      <td>${esc(String(r.date).replace('T', ' ').slice(0, 19))}</td>
      <td><span class="status ${esc(r.status)}">${esc(r.status)}</span>${r.error ? ` <span class="error" title="${esc(r.error)}">!</span>` : ''}</td>
      <td>${r.scores.map((s) => `<div class="score">${esc(s.task)} ${esc(s.metric)}: <b>${fmt(s.value)}</b> <span class="muted">${ci(s)}</span></div>`).join('')}</td>
      <td class="muted">${esc(r.id)}</td></tr>`).join('') || '<tr><td colspan="7" class="muted">No runs under the logs folder yet.</td></tr>';
    view.querySelector('#runs-count').textContent = `${shown.length} of ${state.runs.length} runs`;
    view.querySelector('#compare-btn').disabled = state.picked.length !== 2;
  }

  async function load() {
    try {
      const data = await getJSON('/api/runs');
      const textForm = JSON.stringify(data.runs);
      if (textForm !== state.last) { state.last = textForm; state.runs = data.runs; render(); }
    } catch (error) { showError(body, error); }
  }

  load();
  const timer = setInterval(load, POLL_MS);
  return () => clearInterval(timer);
}
