// Compare: two runs side by side; the paired differences A − B computed by the server with
// lmms_eval.compare.compare_runs (the numbers of `lmms-eval compare`), a chart, and the
// documents where the runs disagree, with both answers.

import { getJSON, html, setHtml, text, fmt, fmtP, enc, mediaUrl, showError } from '../api.js';
import { diffChart } from '../chart.js';

export function showCompare(view, _params, a, b) {
  setHtml(view, html`<h1>Compare</h1>
    <div class="toolbar">A <select id="cmp-a"></select> B <select id="cmp-b"></select>
      <button id="cmp-go">Compare</button></div><div id="cmp-out"></div>`);
  const out = view.querySelector('#cmp-out');
  getJSON('/api/runs').then((data) => {
    const options = html`${data.runs.map((r) => html`<option value="${r.id}">${r.model} · ${r.tasks.join(',')} · ${r.id}</option>`)}`;
    setHtml(view.querySelector('#cmp-a'), options);
    setHtml(view.querySelector('#cmp-b'), options);
    // by default A and B are two different runs (the newest two), never the same one twice
    const first = a || data.runs[0]?.id;
    if (first) view.querySelector('#cmp-a').value = first;
    const second = b || data.runs.find((r) => r.id !== first)?.id;
    if (second) view.querySelector('#cmp-b').value = second;
  }).catch((e) => showError(out, e));
  view.querySelector('#cmp-go').addEventListener('click', () => {
    location.hash = `#/compare/${enc(view.querySelector('#cmp-a').value)}/${enc(view.querySelector('#cmp-b').value)}`;
  });
  if (a && b) {
    setHtml(out, html`<p class="muted">Comparing…</p>`);
    getJSON('/api/compare', { a, b }).then((data) => render(out, data)).catch((e) => showError(out, e));
  }
}

function render(out, data) {
  const report = data.report;
  const unit = (c) => (c.unit === 'points' ? ' pts' : '');
  const rows = report.comparisons.map((c) => html`<tr class="cmp-row" data-key="${`${c.task}|${c.metric}|${c.filter}`}">
    <td>${c.task}${c.task_b ? ` / ${c.task_b}` : ''}</td><td>${c.metric}</td><td>${c.filter}</td>
    <td class="num">${fmt(c.mean_a, 2)}</td><td class="num">${fmt(c.mean_b, 2)}</td>
    <td class="num diff" data-value="${c.diff}">${fmt(c.diff, 2)}${unit(c)}</td><td class="num">[${fmt(c.ci_lower, 2)}, ${fmt(c.ci_upper, 2)}]</td>
    <td class="num pvalue" data-value="${c.p_value}">${fmtP(c.p_value)}</td><td class="num">${c.docs.matched}</td></tr>`);
  const chart = diffChart('cmp-chart', report.comparisons.map((c) => ({
    label: `${c.task} ${c.metric}`, diff: c.diff, lo: c.ci_lower, hi: c.ci_upper, p: c.p_value,
  })));
  setHtml(out, html`<p class="muted">A: ${data.a} · B: ${data.b} · Diff = A − B, ${Math.round(report.confidence * 100)}% CI, paired t-test</p>
    ${chart}
    <table id="cmp-table"><thead><tr><th>Task</th><th>Metric</th><th>Filter</th><th class="num">A</th><th class="num">B</th>
      <th class="num">Diff</th><th class="num">CI</th><th class="num">p</th><th class="num">Docs</th></tr></thead><tbody>${rows}</tbody></table>
    ${report.notes.map((n) => html`<p class="muted">${n}</p>`)}
    <div id="disagreements">${data.disagreements.map((d) => disagreementTable(data, d))}</div>`);
}

function disagreementTable(data, d) {
  const rows = d.docs.map((doc) => {
    const image = doc.media.find((m) => m.kind === 'image' && m.servable);
    const thumb = image ? html`<img class="thumb small" alt="image" src="${mediaUrl(data.a, d.task, doc.line_a, image.n)}">` : '';
    return html`<tr class="disagree-row"><td><a href="#/samples/${enc(data.a)}/${enc(d.task)}/${doc.line_a}">${doc.doc_id}</a></td><td>${thumb}</td>
      <td>${text(doc.input)}</td><td>${text(doc.target)}</td>
      <td>${text(doc.answer_a)} <span class="muted">(${fmt(doc.score_a, 2)})</span></td>
      <td>${text(doc.answer_b)} <span class="muted">(${fmt(doc.score_b, 2)})</span></td></tr>`;
  });
  return html`<h2>${d.task}: ${d.total} documents where ${d.metric} differs${d.total > d.docs.length ? ` (first ${d.docs.length})` : ''}</h2>
    <table class="disagreements"><thead><tr><th>doc</th><th></th><th>prompt</th><th>target</th><th>answer A</th><th>answer B</th></tr></thead>
    <tbody>${rows}</tbody></table>`;
}
