// Leaderboard: runs by tasks, the main metric with its 95% CI in each cell, the mean over each run's
// tasks; sortable by any column, filtered by model, task and modality. With a baseline run, the
// server (lmms_eval.leaderboard, the code of `lmms-eval leaderboard`) tests each cell against it
// with the paired test of `lmms-eval compare`, adjusts the p-values together (Holm or
// Benjamini-Hochberg) and marks the cells; the correction is stated under the table.
// Exports (CSV, Markdown) are made by the server from the same table, restricted to what is shown.

import { getJSON, html, setHtml, fmt, enc, showError } from '../api.js';

export function showLeaderboard(view, params) {
  const state = {
    board: null, sort: 'mean', desc: true, model: '', task: '', modality: '',
    baseline: params.get('baseline') || '', correction: params.get('correction') || 'holm',
  };
  setHtml(view, html`<h1>Leaderboard</h1>
    <div class="toolbar">
      <input id="lb-model" type="search" placeholder="filter runs by model or name" size="28">
      <select id="lb-task"><option value="">all tasks</option></select>
      <select id="lb-modality"><option value="">all modalities</option></select>
      <label>baseline <select id="lb-baseline"><option value="">none</option></select></label>
      <label>correction <select id="lb-correction">
        <option value="holm">Holm (family-wise)</option><option value="bh">Benjamini-Hochberg (FDR)</option></select></label>
      <a id="lb-csv" class="export" href="#">CSV</a> <a id="lb-md" class="export" href="#">Markdown</a>
    </div>
    <div id="lb-out"><p class="muted">Loading…</p></div>`);
  const out = view.querySelector('#lb-out');
  const pick = (id, key) => view.querySelector(id).addEventListener('input', (e) => { state[key] = e.target.value; render(); });
  pick('#lb-model', 'model');
  pick('#lb-task', 'task');
  pick('#lb-modality', 'modality');
  for (const [id, key] of [['#lb-baseline', 'baseline'], ['#lb-correction', 'correction']]) {
    view.querySelector(id).addEventListener('change', (e) => {
      state[key] = e.target.value;
      const query = new URLSearchParams({ baseline: state.baseline, correction: state.correction });
      history.replaceState(null, '', `#/leaderboard?${query}`);
      load();
    });
  }
  view.querySelector('#lb-correction').value = state.correction;

  function load() {
    setHtml(out, html`<p class="muted">${state.baseline ? 'Testing every cell against the baseline…' : 'Loading…'}</p>`);
    getJSON('/api/leaderboard', { baseline: state.baseline, correction: state.correction }).then((board) => {
      state.board = board;
      fillSelects(board);
      render();
    }).catch((e) => showError(out, e));
  }

  function fillSelects(board) {
    const options = (values, all) => html`<option value="">${all}</option>${values.map((v) => html`<option value="${v}">${v}</option>`)}`;
    setHtml(view.querySelector('#lb-task'), options(board.tasks, 'all tasks'));
    setHtml(view.querySelector('#lb-modality'), options([...new Set(Object.values(board.modalities))].sort(), 'all modalities'));
    setHtml(view.querySelector('#lb-baseline'), html`<option value="">none</option>${board.rows.map((r) => html`<option value="${r.id}">${r.label} · ${r.id}</option>`)}`);
    view.querySelector('#lb-task').value = state.task;
    view.querySelector('#lb-modality').value = state.modality;
    view.querySelector('#lb-baseline').value = board.baseline || '';
  }

  function shownTasks() {
    const board = state.board;
    return board.tasks.filter((t) => (!state.task || t === state.task) && (!state.modality || board.modalities[t] === state.modality));
  }

  function shownRows(tasks) {
    const needle = state.model.toLowerCase();
    const rows = state.board.rows.filter((r) => !needle || `${r.model} ${r.label} ${r.id}`.toLowerCase().includes(needle))
      .filter((r) => tasks.some((t) => r.cells[t]));
    const key = (r) => {
      if (state.sort === 'mean') return r.mean ?? -Infinity;
      if (state.sort === 'run') return r.label;
      if (state.sort === 'model') return r.model;
      return r.cells[state.sort.slice(5)]?.value ?? -Infinity;
    };
    return rows.sort((a, b) => {
      const [x, y] = [key(a), key(b)];
      const order = typeof x === 'string' ? x.localeCompare(y) : x - y;
      return state.desc ? -order : order;
    });
  }

  function render() {
    const board = state.board;
    if (!board) return;
    const rows = shownRows(shownTasks());
    const tasks = shownTasks().filter((t) => rows.some((r) => r.cells[t]));
    const head = (key, label, cls = '') => html`<th data-sort="${key}" class="${cls}${state.sort === key ? (state.desc ? ' desc' : ' asc') : ''}">${label}</th>`;
    setHtml(out, html`<table id="lb-table"><thead><tr>${head('run', 'Run')}${head('model', 'Model')}
      ${tasks.map((t) => head(`task:${t}`, t, 'num'))}${head('mean', 'Mean', 'num')}</tr></thead>
      <tbody>${rows.map((r) => rowHtml(board, r, tasks))}</tbody></table>
      <p id="lb-correction-text" class="muted">${board.correction_text}</p>
      <p class="muted">Cells: the task's main metric (${tasks.map((t) => `${t}: ${firstMetric(board, t)}`).join('; ')}), 95% CI in brackets; ▲ / ▼ better / worse than the baseline after the correction. Mean: over each run's own tasks.</p>
      ${board.notes.map((n) => html`<p class="muted">${n}</p>`)}`);
    out.querySelectorAll('th[data-sort]').forEach((th) => th.addEventListener('click', () => {
      state.desc = state.sort === th.dataset.sort ? !state.desc : th.dataset.sort !== 'run' && th.dataset.sort !== 'model';
      state.sort = th.dataset.sort;
      render();
    }));
    const query = (format) => `/api/leaderboard/export?${new URLSearchParams({
      format, baseline: board.baseline || '', correction: board.correction, runs: rows.map((r) => r.id).join(','), tasks: tasks.join(','),
    })}`;
    view.querySelector('#lb-csv').href = query('csv');
    view.querySelector('#lb-md').href = query('md');
  }

  load();
}

function firstMetric(board, task) {
  for (const row of board.rows) if (row.cells[task]) return row.cells[task].metric;
  return '';
}

function cellHtml(cell, baseline) {
  if (!cell || cell.value === null) return html`<td class="num lb-cell">–</td>`;
  const mark = cell.significant ? (cell.better ? 'sig-better' : 'sig-worse') : '';
  const tip = cell.p_value === null ? '' : `diff ${fmt(cell.diff, 4)} vs baseline, p ${fmt(cell.p_value, 4)}, adjusted p ${fmt(cell.p_adjusted, 4)}`;
  const ci = cell.ci_lower === null ? '' : html` <span class="muted">[${fmt(cell.ci_lower, 2)}, ${fmt(cell.ci_upper, 2)}]</span>`;
  const arrow = cell.significant ? (cell.better ? ' ▲' : ' ▼') : '';
  return html`<td class="num lb-cell ${mark}${baseline ? ' lb-base' : ''}" data-value="${cell.value}" title="${tip}">${fmt(cell.value, 4)}${ci}${arrow}</td>`;
}

function rowHtml(board, r, tasks) {
  const baseline = r.id === board.baseline;
  const training = r.training_run ? html` <a class="muted" href="#/training/${enc(r.training_run)}">training run</a>` : '';
  return html`<tr class="lb-row${baseline ? ' lb-baseline' : ''}" data-id="${r.id}">
    <td><a href="#/run/${enc(r.id)}">${r.label}</a>${baseline ? html` <span class="status">baseline</span>` : ''}${training}<div class="muted small">${r.id}</div></td>
    <td>${r.model}</td>${tasks.map((t) => cellHtml(r.cells[t], baseline))}
    <td class="num lb-mean" data-value="${r.mean ?? ''}">${fmt(r.mean, 4)}</td></tr>`;
}
