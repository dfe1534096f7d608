// Runs: every results file under the logs folder; sortable, filterable, polled while open.

import { getJSON, html, setHtml, fmt, ci, enc, showError } from '../api.js';

const POLL_MS = 3000;
const COLUMNS = [
  ['model', 'Model'], ['tasks', 'Tasks'], ['date', 'Date'], ['status', 'Status'], ['score', 'Main scores (95% CI)'],
];

export function showRuns(view) {
  const state = { runs: [], skipped: [], sort: 'date', desc: true, filter: '', picked: [], last: '' };
  setHtml(view, html`<h1>Runs</h1>
    <div class="toolbar">
      <input id="runs-filter" type="search" placeholder="filter by model, task, status, folder" size="40">
      <button id="compare-btn" disabled>Compare the two selected</button>
      <span id="runs-count" class="muted"></span>
    </div>
    <table id="runs-table"><thead><tr><th></th>${COLUMNS.map(([k, t]) => html`<th data-sort="${k}">${t}</th>`)}<th>Folder</th></tr></thead>
    <tbody></tbody></table>
    <details id="runs-skipped" hidden><summary></summary><ul></ul></details>`);
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
    setHtml(body, html`${shown.map((r) => html`<tr class="run-row" data-id="${r.id}">
      <td><input type="checkbox" class="pick" value="${r.id}" ${state.picked.includes(r.id) ? 'checked' : ''} aria-label="select for compare"></td>
      <td><a href="#/run/${enc(r.id)}">${r.model}</a></td>
      <td>${r.tasks.join(', ')}</td>
      <td>${String(r.date).replace('T', ' ').slice(0, 19)}</td>
      <td><span class="status ${r.status}">${r.status}</span>${r.error ? html` <span class="error" title="${r.error}">!</span>` : ''}</td>
      <td>${r.scores.map((s) => html`<div class="score">${s.task} ${s.metric}: <b>${fmt(s.value)}</b> <span class="muted">${ci(s)}</span></div>`)}</td>
      <td class="muted">${r.id}</td></tr>`)}`);
    if (!shown.length) setHtml(body, html`<tr><td colspan="7" class="muted">No runs under the logs folder yet.</td></tr>`);
    renderSkipped();
    view.querySelector('#runs-count').textContent = `${shown.length} of ${state.runs.length} runs`;
    view.querySelector('#compare-btn').disabled = state.picked.length !== 2;
  }

  // files of the logs folder that could not be read (FIFOs, devices, too large, too deep, not JSON...)
  function renderSkipped() {
    const box = view.querySelector('#runs-skipped');
    box.hidden = !state.skipped.length;
    box.querySelector('summary').textContent = `${state.skipped.length} file(s) of the logs folder skipped`;
    setHtml(box.querySelector('ul'), html`${state.skipped.map((s) => html`<li><code>${s.path}</code>: ${s.reason}</li>`)}`);
  }

  async function load() {
    try {
      const data = await getJSON('/api/runs');
      const textForm = JSON.stringify([data.runs, data.skipped]);
      if (textForm !== state.last) { state.last = textForm; state.runs = data.runs; state.skipped = data.skipped || []; render(); }
    } catch (error) { showError(body, error); }
  }

  load();
  const timer = setInterval(load, POLL_MS);
  return () => clearInterval(timer);
}
