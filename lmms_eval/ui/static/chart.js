// Hand-written SVG charts: horizontal bars with error bars, and differences with intervals around 0.

import { esc, fmt } from './api.js';

const W = 640, LABEL = 200, ROW = 22, PAD = 24;

function scale(lo, hi) {
  const span = hi - lo || 1;
  return (v) => LABEL + ((v - lo) / span) * (W - LABEL - PAD);
}

// a row label that fits the label column (cut with an ellipsis; the whole label shows on hover)
const LABEL_CHARS = 28;

function label(text, y) {
  const whole = String(text ?? '');
  const shown = whole.length > LABEL_CHARS ? whole.slice(0, LABEL_CHARS - 1) + '\u2026' : whole;
  return `<text class="label" x="${LABEL - 6}" y="${y}" text-anchor="end"><title>${esc(whole)}</title>${esc(shown)}</text>`;
}

function axis(x, lo, hi, height) {
  const ticks = [lo, (lo + hi) / 2, hi];
  return ticks.map((t) => `<line class="axis" x1="${x(t)}" x2="${x(t)}" y1="0" y2="${height - 14}"/>` +
    `<text x="${x(t)}" y="${height - 2}" text-anchor="middle">${fmt(t, 2)}</text>`).join('');
}

// rows: [{label, value, lo, hi}]; values in [0, 1] are drawn on [0, 1]
export function barChart(id, rows) {
  const values = rows.flatMap((r) => [r.value, r.lo, r.hi]).filter((v) => v !== null && v !== undefined);
  const unit = values.every((v) => v >= 0 && v <= 1);
  const lo = unit ? 0 : Math.min(0, ...values), hi = unit ? 1 : Math.max(...values, 0);
  const x = scale(lo, hi), height = rows.length * ROW + 20;
  const bars = rows.map((r, i) => {
    const y = i * ROW + 3, mid = y + (ROW - 6) / 2;
    const err = r.lo === null || r.lo === undefined ? '' :
      `<line class="err" x1="${x(r.lo)}" x2="${x(r.hi)}" y1="${mid}" y2="${mid}"/>` +
      `<line class="err" x1="${x(r.lo)}" x2="${x(r.lo)}" y1="${y + 3}" y2="${y + ROW - 9}"/>` +
      `<line class="err" x1="${x(r.hi)}" x2="${x(r.hi)}" y1="${y + 3}" y2="${y + ROW - 9}"/>`;
    return label(r.label, mid + 4) +
      `<rect class="bar" x="${x(Math.min(0, r.value ?? 0))}" y="${y}" width="${Math.abs(x(r.value ?? 0) - x(0))}" height="${ROW - 6}"><title>${esc(r.label)}: ${fmt(r.value)}</title></rect>${err}`;
  }).join('');
  return `<svg id="${id}" viewBox="0 0 ${W} ${height}" width="100%" style="max-width:${W}px" role="img">${axis(x, lo, hi, height)}${bars}</svg>`;
}

// rows: [{label, diff, lo, hi, p}]: points with their intervals and a dashed line at 0
export function diffChart(id, rows) {
  const values = rows.flatMap((r) => [r.lo, r.hi, r.diff]).filter((v) => v !== null && v !== undefined);
  const bound = Math.max(1e-9, ...values.map(Math.abs)) * 1.1;
  const x = scale(-bound, bound), height = rows.length * ROW + 20;
  const marks = rows.map((r, i) => {
    const mid = i * ROW + ROW / 2;
    return label(r.label, mid + 4) +
      `<line class="err" x1="${x(r.lo)}" x2="${x(r.hi)}" y1="${mid}" y2="${mid}"/>` +
      `<circle class="pt" cx="${x(r.diff)}" cy="${mid}" r="4"><title>${esc(r.label)}: ${fmt(r.diff, 2)} (p=${fmt(r.p, 4)})</title></circle>`;
  }).join('');
  return `<svg id="${id}" viewBox="0 0 ${W} ${height}" width="100%" style="max-width:${W}px" role="img">${axis(x, -bound, bound, height)}` +
    `<line class="zero" x1="${x(0)}" x2="${x(0)}" y1="0" y2="${height - 14}"/>${marks}</svg>`;
}
