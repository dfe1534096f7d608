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

export function esc(value) {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
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

export function ci(row, digits = 4) {
  return row.ci_lower === null || row.ci_lower === undefined ? '' : `[${fmt(row.ci_lower, digits)}, ${fmt(row.ci_upper, digits)}]`;
}

export const enc = encodeURIComponent;

export function mediaUrl(run, task, line, n) {
  return `/api/media?${new URLSearchParams({ run, task, line, n })}`;
}

export function showError(el, error) {
  el.innerHTML = `<p class="error">${esc(error.message || error)}</p>`;
}
