// Training runs: #/training lists them; #/training/<name> draws score against step for each task and
// metric (the 95% CI as a band), the eval server's jobs in flight as pending points (polled while
// there are any), and the paired comparison of two steps one click away (the compare view, i.e. the
// numbers of `lmms-eval compare`).

import { getJSON, html, setHtml, fmt, enc, showError } from '../api.js';

const POLL_MS = 3000;
const W = 640, H = 220, L = 52, R = 16, T = 12, B = 30;
const finite = (v) => typeof v === 'number' && Number.isFinite(v);

export function showTraining(view, _params, name) {
  if (!name) return showList(view);
  setHtml(view, html`<h1>Training run <span id="tr-name"></span></h1><div id="tr-out"><p class="muted">Loading…</p></div>`);
  view.querySelector('#tr-name').textContent = name;
  const out = view.querySelector('#tr-out');
  const picked = { a: null, b: null };
  let timer = null;
  const load = () => getJSON('/api/training', { name }).then((data) => {
    render(out, data, picked);
    timer = data.pending.length ? setTimeout(load, POLL_MS) : null;
  }).catch((e) => showError(out, e));
  load();
  return () => { if (timer) clearTimeout(timer); };
}

function showList(view) {
  setHtml(view, html`<h1>Training runs</h1><div id="tr-list"><p class="muted">Loading…</p></div>`);
  const out = view.querySelector('#tr-list');
  getJSON('/api/training-runs').then((data) => {
    if (!data.runs.length) {
      setHtml(out, html`<p class="muted">No results file records a training run yet: jobs submitted with training_run and step (the trainer callbacks of lmms_eval.integrations) appear here.</p>`);
      return;
    }
    setHtml(out, html`<table id="tr-runs"><thead><tr><th>Training run</th><th class="num">Checkpoints evaluated</th><th class="num">Last step</th></tr></thead>
      <tbody>${data.runs.map((r) => html`<tr><td><a href="#/training/${enc(r.name)}">${r.name}</a></td><td class="num">${r.checkpoints}</td><td class="num">${r.last_step ?? '–'}</td></tr>`)}</tbody></table>`);
  }).catch((e) => showError(out, e));
}

// [{key, task, metric, filter, points: [{step, value, lo, hi, run}]}] of the metrics with a value
function seriesOf(data) {
  const byKey = new Map();
  for (const point of data.points) {
    for (const m of point.metrics) {
      const key = `${m.task}|${m.metric}|${m.filter}`;
      if (!byKey.has(key)) byKey.set(key, { key, task: m.task, metric: m.metric, filter: m.filter, points: [] });
      byKey.get(key).points.push({ step: point.step, value: m.value, lo: m.ci_lower, hi: m.ci_upper, run: point.run });
    }
  }
  return [...byKey.values()].filter((s) => s.points.some((p) => finite(p.value)));
}

function render(out, data, picked) {
  const steps = data.points.filter((p) => p.run);
  if (picked.a === null && steps.length) picked.a = steps[steps.length - 1].run;
  if (picked.b === null && steps.length > 1) picked.b = steps[steps.length - 2].run;
  const options = html`${steps.map((p) => html`<option value="${p.run}">step ${p.step}</option>`)}`;
  const pending = data.pending.map((p) => html`<span class="status ${p.status}">step ${p.step}: ${p.status}</span> `);
  const failed = data.failed.map((f) => html`<p class="error">step ${f.step ?? '?'} failed: ${f.error ?? ''}</p>`);
  setHtml(out, html`<div class="toolbar">
      <span>Compare step</span><select id="tr-a">${options}</select><span>with step</span><select id="tr-b">${options}</select>
      <a id="tr-compare" href="#">paired comparison</a>
      <span class="muted">${data.points.length} checkpoint(s) evaluated</span>${pending}</div>
    ${data.server_note ? html`<p class="muted">eval server: ${data.server_note}</p>` : ''}${failed}
    <div class="tr-charts">${seriesOf(data).map((s) => html`<div class="card tr-card" data-key="${s.key}">
      <h2>${s.task} · ${s.metric}${s.filter !== 'none' ? ` (${s.filter})` : ''}</h2>${curve(s, data.pending)}</div>`)}</div>`);
  const a = out.querySelector('#tr-a'), b = out.querySelector('#tr-b'), link = out.querySelector('#tr-compare');
  if (picked.a) a.value = picked.a;
  if (picked.b) b.value = picked.b;
  const update = () => {
    picked.a = a.value; picked.b = b.value;
    link.href = a.value && b.value ? `#/compare/${enc(a.value)}/${enc(b.value)}` : '#';
  };
  a.addEventListener('change', update);
  b.addEventListener('change', update);
  update();
}

function ticks(lo, hi, count) {
  return Array.from({ length: count }, (_, i) => lo + ((hi - lo) * i) / (count - 1));
}

// score against step: the CI band, the line, the points, and hollow points for jobs in flight
function curve(series, pending) {
  const points = series.points.filter((p) => finite(p.value));
  const steps = [...points.map((p) => p.step), ...pending.map((p) => p.step)];
  let [x0, x1] = [Math.min(...steps), Math.max(...steps)];
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  const values = points.flatMap((p) => [p.value, p.lo, p.hi]).filter(finite);
  const unit = values.every((v) => v >= 0 && v <= 1);
  let [y0, y1] = unit ? [0, 1] : [Math.min(...values), Math.max(...values)];
  if (y0 === y1) { y0 -= 1; y1 += 1; }
  const x = (s) => L + ((s - x0) / (x1 - x0)) * (W - L - R);
  const y = (v) => T + (1 - (v - y0) / (y1 - y0)) * (H - T - B);
  const banded = points.filter((p) => finite(p.lo) && finite(p.hi));
  const band = banded.length < 2 ? '' : html`<polygon class="band" points="${[
    ...banded.map((p) => `${x(p.step)},${y(p.hi)}`), ...banded.slice().reverse().map((p) => `${x(p.step)},${y(p.lo)}`),
  ].join(' ')}"/>`;
  const line = html`<polyline class="curve" points="${points.map((p) => `${x(p.step)},${y(p.value)}`).join(' ')}"/>`;
  const errs = banded.map((p) => html`<line class="err" x1="${x(p.step)}" x2="${x(p.step)}" y1="${y(p.lo)}" y2="${y(p.hi)}"/>`);
  const dots = points.map((p) => html`<circle class="pt" cx="${x(p.step)}" cy="${y(p.value)}" r="4" data-step="${p.step}">
    <title>step ${p.step}: ${fmt(p.value, 4)}${finite(p.lo) ? ` [${fmt(p.lo, 4)}, ${fmt(p.hi, 4)}]` : ''}</title></circle>`);
  const waiting = pending.map((p) => html`<circle class="pending" cx="${x(p.step)}" cy="${y((y0 + y1) / 2)}" r="5" data-step="${p.step}">
    <title>step ${p.step}: ${p.status}</title></circle>`);
  const xs = [...new Set(steps)].sort((m, n) => m - n);
  const xTicks = (xs.length <= 8 ? xs : ticks(x0, x1, 5).map(Math.round)).map((s) => html`<text x="${x(s)}" y="${H - 12}" text-anchor="middle">${s}</text>`);
  const yTicks = ticks(y0, y1, 3).map((v) => html`<line class="axis" x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}"/><text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${fmt(v, 2)}</text>`);
  return html`<svg class="chart curve-chart" viewBox="0 0 ${W} ${H}" width="100%" role="img">${yTicks}${band}${line}${errs}${dots}${waiting}${xTicks}
    <text x="${(L + W - R) / 2}" y="${H - 1}" text-anchor="middle" class="muted">step</text></svg>`;
}
