// Hand-written SVG charts: horizontal bars with error bars, and differences with intervals around 0.
// Both return html`...` fragments; labels (task, metric and category names) are escaped by html``,
// and an id is either a fixed name of the view or one from chartId() (never built from data).

import { html, fmt, fmtP } from './api.js';

const W = 640, LABEL = 200, ROW = 22, PAD = 24;
let charts = 0;

// a fresh element id for a chart whose name would otherwise come from data
export function chartId(prefix = 'chart') {
  charts += 1;
  return `${prefix}-${charts}`;
}

function scale(lo, hi) {
  const span = hi - lo || 1;
  return (v) => LABEL + ((v - lo) / span) * (W - LABEL - PAD);
}

// a row label that fits the label column (cut with an ellipsis; the whole label shows on hover)
const LABEL_CHARS = 28;

function label(text, y) {
  const whole = String(text ?? '');
  const shown = whole.length > LABEL_CHARS ? whole.slice(0, LABEL_CHARS - 1) + '\u2026' : whole;
  return html`<text class="label" x="${LABEL - 6}" y="${y}" text-anchor="end"><title>${whole}</title>${shown}</text>`;
}

function axis(x, lo, hi, height) {
  const ticks = [lo, (lo + hi) / 2, hi];
  return ticks.map((t) => html`<line class="axis" x1="${x(t)}" x2="${x(t)}" y1="0" y2="${height - 14}"/>
    <text x="${x(t)}" y="${height - 2}" text-anchor="middle">${fmt(t, 2)}</text>`);
}

function svg(id, height, content) {
  return html`<svg id="${id}" class="chart" viewBox="0 0 ${W} ${height}" width="100%" role="img">${content}</svg>`;
}

const finite = (v) => typeof v === 'number' && Number.isFinite(v);

// rows: [{label, value, lo, hi}]; values in [0, 1] are drawn on [0, 1]
export function barChart(id, rows) {
  const values = rows.flatMap((r) => [r.value, r.lo, r.hi]).filter(finite);
  const unit = values.every((v) => v >= 0 && v <= 1);
  const lo = unit ? 0 : Math.min(0, ...values), hi = unit ? 1 : Math.max(...values, 0);
  const x = scale(lo, hi), height = rows.length * ROW + 20;
  const bars = rows.map((r, i) => {
    const y = i * ROW + 3, mid = y + (ROW - 6) / 2, value = finite(r.value) ? r.value : 0;
    const err = !finite(r.lo) || !finite(r.hi) ? '' :
      html`<line class="err" x1="${x(r.lo)}" x2="${x(r.hi)}" y1="${mid}" y2="${mid}"/>
        <line class="err" x1="${x(r.lo)}" x2="${x(r.lo)}" y1="${y + 3}" y2="${y + ROW - 9}"/>
        <line class="err" x1="${x(r.hi)}" x2="${x(r.hi)}" y1="${y + 3}" y2="${y + ROW - 9}"/>`;
    return html`${label(r.label, mid + 4)}<rect class="bar" x="${x(Math.min(0, value))}" y="${y}" width="${Math.abs(x(value) - x(0))}" height="${ROW - 6}"><title>${r.label}: ${fmt(r.value)}</title></rect>${err}`;
  });
  return svg(id, height, [axis(x, lo, hi, height), bars]);
}

// rows: [{label, diff, lo, hi, p}]: points with their intervals and a dashed line at 0
export function diffChart(id, rows) {
  const values = rows.flatMap((r) => [r.lo, r.hi, r.diff]).filter(finite);
  const bound = Math.max(1e-9, ...values.map(Math.abs)) * 1.1;
  const x = scale(-bound, bound), height = rows.length * ROW + 20;
  const marks = rows.map((r, i) => {
    const mid = i * ROW + ROW / 2;
    return html`${label(r.label, mid + 4)}<line class="err" x1="${x(r.lo)}" x2="${x(r.hi)}" y1="${mid}" y2="${mid}"/>
      <circle class="pt" cx="${x(r.diff)}" cy="${mid}" r="4"><title>${r.label}: ${fmt(r.diff, 2)} (p=${fmtP(r.p)})</title></circle>`;
  });
  return svg(id, height, [axis(x, -bound, bound, height), html`<line class="zero" x1="${x(0)}" x2="${x(0)}" y1="0" y2="${height - 14}"/>`, marks]);
}
