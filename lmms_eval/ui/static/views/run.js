// A run: per-task metrics (chart with error bars and table), per-category scores, config,
// versions, throughput, usage and failures.

import { getJSON, html, setHtml, fmt, ci, enc, showError } from '../api.js';
import { barChart, chartId } from '../chart.js';

export function showRun(view, _params, id) {
  setHtml(view, html`<p class="muted">Loading run…</p>`);
  let stopped = false;
  getJSON('/api/run', { id }).then((run) => { if (!stopped) render(view, run); }).catch((e) => showError(view, e));
  return () => { stopped = true; };
}

function metricsTable(run) {
  const rows = Object.entries(run.task_results || {}).flatMap(([task, t]) => t.metrics.map((m) => html`<tr>
      <td>${task}${t.group ? html` <span class="muted">(group)</span>` : ''}</td><td>${m.metric}</td><td>${m.filter}</td>
      <td class="num value" data-key="${`${task}|${m.metric}|${m.filter}`}">${fmt(m.value)}</td>
      <td class="num">${fmt(m.stderr)}</td><td class="num">${ci(m)}</td>
      <td class="num">${t.samples ?? ''}</td><td class="num">${t.failed ?? ''}</td>
      <td>${t.has_samples ? html`<a class="samples-link" href="#/samples/${enc(run.id)}/${enc(task)}">samples</a>` : ''}</td></tr>`));
  return html`<table id="run-metrics"><thead><tr><th>Task</th><th>Metric</th><th>Filter</th><th class="num">Value</th>
    <th class="num">Stderr</th><th class="num">95% CI</th><th class="num">Docs</th><th class="num">Failed</th><th></th></tr></thead>
    <tbody>${rows}</tbody></table>`;
}

function chartRows(run) {
  return Object.entries(run.task_results || {}).flatMap(([task, t]) => t.metrics
    .filter((m) => m.value !== null)
    .map((m) => ({ label: `${task} ${m.metric}${m.filter === 'none' ? '' : ` (${m.filter})`}`, value: m.value, lo: m.ci_lower, hi: m.ci_upper })));
}

function block(title, value) {
  if (value === null || value === undefined || (typeof value === 'object' && !Object.keys(value).length)) return '';
  return html`<div class="card"><h2>${title}</h2><pre>${JSON.stringify(value, null, 2)}</pre></div>`;
}

function render(view, run) {
  const tasks = Object.entries(run.task_results || {}).filter(([, t]) => t.has_samples).map(([task]) => task);
  setHtml(view, html`<h1>${run.model} <span class="status ${run.status}">${run.status}</span></h1>
    <p class="muted">${run.id} · started ${run.start_time || run.date} · ${run.duration_s ? `${fmt(run.duration_s, 1)} s` : ''}
      · <a href="#/compare/${enc(run.id)}">compare with…</a></p>
    <h2>Scores</h2>${barChart('run-chart', chartRows(run))}
    ${metricsTable(run)}
    <div id="breakdown"></div>
    <div class="grid2">${block('Config', run.config)}${block('Versions', run.versions)}
      ${block('Throughput', run.throughput)}${block('Usage', run.usage)}${block('Timings', run.timings)}${block('Failures', run.failures)}</div>`);
  tasks.forEach((task) => loadBreakdown(view, run, task));
}

async function loadBreakdown(view, run, task) {
  const box = document.createElement('div');
  view.querySelector('#breakdown').append(box);
  try {
    const data = await getJSON('/api/breakdown', { run: run.id, task });
    setHtml(box, html`${Object.entries(data.fields).map(([field, rows]) => html`<h2>${task}: ${data.metric} by ${field}</h2>
      ${barChart(chartId('cat-chart'), rows.map((r) => ({ label: r.value, value: r.mean, lo: r.ci_lower, hi: r.ci_upper })))}
      <table class="categories"><thead><tr><th>${field}</th><th class="num">Docs</th><th class="num">Mean</th><th class="num">95% CI</th></tr></thead>
      <tbody>${rows.map((r) => html`<tr><td><a href="#/samples/${enc(run.id)}/${enc(task)}?${new URLSearchParams({ field, value: r.value })}">${r.value}</a></td>
        <td class="num">${r.n}</td><td class="num">${fmt(r.mean)}</td><td class="num">${ci(r)}</td></tr>`)}</tbody></table>`)}`);
  } catch (error) { showError(box, error); }
}
