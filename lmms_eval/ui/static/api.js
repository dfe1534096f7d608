// Calls to the UI's JSON API and small helpers shared by the views.

export async function getJSON(path, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ''));
  const response = await fetch(query.size ? `${path}?${query}` : path, { credentials: 'same-origin' });
  return unwrap(response);
}

export async function sendJSON(method, path, body) {
  const response = await fetch(path, {
    method, credentials: 'same-origin',
    headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return unwrap(response);
}

async function unwrap(response) {
  const data = await response.json().catch(() => ({ detail: `HTTP ${response.status}` }));
  if (!response.ok) throw new Error(typeof data.detail === 'string' ? data.detail : JSON.stringify(data.detail));
  return data;
}

// Every HTML string the views build is an html`...` template: each interpolated value is escaped
// (for text and quoted attributes alike) unless it is itself an html`...` fragment (or an array of
// them). setHtml accepts only such fragments, so no string from results, samples, configs or file
// names reaches innerHTML unescaped.
const ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

function esc(value) {
  return String(value ?? '').replace(/[&<>"'`]/g, (c) => ENTITIES[c]);
}

class Html {
  constructor(markup) { this.markup = markup; }
  toString() { return this.markup; }
}

function piece(value) {
  if (value instanceof Html) return value.markup;
  if (Array.isArray(value)) return value.map(piece).join('');
  return esc(value);
}

export function html(strings, ...values) {
  return new Html(strings.reduce((out, part, i) => out + piece(values[i - 1]) + part));
}

export function setHtml(el, fragment) {
  if (!(fragment instanceof Html)) throw new TypeError('setHtml takes an html`...` fragment');
  el.innerHTML = fragment.markup;
}

export function text(value) {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.length === 1) return text(value[0]);
  return JSON.stringify(value);
}

export function fmt(value, digits = 4) {
  return value === null || value === undefined || Number.isNaN(value) ? '–' : Number(value).toFixed(digits);
}

// A p-value as the CLI prints it (lmms_eval/compare.py `_p`, loggers/table.py): `<0.0001` below 1e-4.
export function fmtP(value) {
  if (value === null || value === undefined || Number.isNaN(value)) return '–';
  return value < 1e-4 ? '<0.0001' : Number(value).toFixed(4);
}

export function ci(row, digits = 4) {
  return row.ci_lower === null || row.ci_lower === undefined ? '' : `[${fmt(row.ci_lower, digits)}, ${fmt(row.ci_upper, digits)}]`;
}

export const enc = encodeURIComponent;

export function mediaUrl(run, task, line, n) {
  return `/api/media?${new URLSearchParams({ run, task, line, n })}`;
}

export function showError(el, error) {
  const p = document.createElement('p');
  p.className = 'error';
  p.textContent = String(error?.message ?? error);
  el.replaceChildren(p);
}
