// Launch: model (searchable, from the eval server's /models), its arguments, tasks (search over
// /tasks, groups and tags), run options (the settings model, from /api/options); a live preview of
// the CLI command and the --config YAML; submit, follow progress and the log, stop.

import { getJSON, sendJSON, html, setHtml, showError } from '../api.js';

const SPECIAL = new Set(['model', 'model_args', 'tasks']);
const OPEN = new Set(['running', 'outputs and logging', 'eval server']);

export function showLaunch(view) {
  const state = { models: [], tasks: [], chosen: new Set(), options: [], body: null, job: null, timer: null, stream: null };
  setHtml(view, html`<h1>Launch an evaluation</h1><div class="launch">
    <div>
      <h2>Model</h2><input id="model-search" type="search" placeholder="search models" size="30">
      <select id="model" size="6"></select>
      <div class="opt"><label for="model_args">model_args</label><input id="model_args" type="text" placeholder="k=v,k=v"></div>
      <h2>Tasks</h2><input id="task-search" type="search" placeholder="search tasks and groups" size="30">
      <div id="task-list" class="pick-list"></div><div id="task-chips" class="chips"></div>
      <h2>Options</h2><div id="options"></div>
    </div>
    <div>
      <h2>Command</h2><pre id="preview-command"></pre>
      <h2>--config YAML</h2><pre id="preview-yaml"></pre><p id="preview-error" class="error"></p>
      <div class="toolbar"><button id="submit" disabled>Submit to the eval server</button><button id="stop" class="secondary" disabled>Stop</button>
        <span id="job-status"></span></div>
      <pre id="job-log"></pre>
    </div></div>`);
  const $ = (sel) => view.querySelector(sel);

  function values() {
    const out = { model: $('#model').value, model_args: $('#model_args').value, tasks: [...state.chosen].join(',') };
    view.querySelectorAll('#options [data-name]').forEach((el) => { out[el.dataset.name] = el.type === 'checkbox' ? el.checked : el.value; });
    return out;
  }

  let pending = null;
  function refreshPreview() {
    clearTimeout(pending);
    pending = setTimeout(async () => {
      try {
        const p = await sendJSON('POST', '/api/preview', values());
        $('#preview-command').textContent = p.command;
        $('#preview-yaml').textContent = p.yaml;
        $('#preview-error').textContent = p.error || '';
        state.body = p.error ? null : p.body;
      } catch (error) { $('#preview-error').textContent = error.message; state.body = null; }
      $('#submit').disabled = !state.body || (state.job && !isDone(state.job.status));
    }, 120);
  }

  function renderModels() {
    const q = $('#model-search').value.toLowerCase();
    const current = $('#model').value;
    setHtml($('#model'), html`${state.models.filter((m) => [m.model_id, ...m.aliases].join(' ').toLowerCase().includes(q))
      .map((m) => html`<option value="${m.model_id}">${m.model_id}${m.aliases.length ? ` (${m.aliases.join(', ')})` : ''}</option>`)}`);
    if (current) $('#model').value = current;
  }

  function renderTasks() {
    const q = $('#task-search').value.toLowerCase();
    const shown = state.tasks.filter((t) => t.name.toLowerCase().includes(q)).slice(0, 300);
    setHtml($('#task-list'), shown.length ? html`${shown.map((t) => html`<label><input type="checkbox" value="${t.name}" ${state.chosen.has(t.name) ? 'checked' : ''}>
      ${t.name} <span class="kind">${t.kind}</span></label>`)}` : html`<span class="muted">no match</span>`);
    setHtml($('#task-chips'), html`${[...state.chosen].map((t) => html`<span>${t}</span>`)}`);
  }

  function renderOptions() {
    const groups = new Map();
    state.options.filter((o) => !SPECIAL.has(o.name)).forEach((o) => groups.set(o.group, [...(groups.get(o.group) || []), o]));
    setHtml($('#options'), html`${[...groups].map(([group, opts]) => html`<details ${OPEN.has(group) ? 'open' : ''}><summary>${group}</summary>
      ${opts.map((o) => html`<div class="opt"><label for="opt-${o.name}">${o.flag || o.name}</label>${input(o)}<span class="help">${o.help}</span></div>`)}</details>`)}`);
  }

  function input(o) {
    if (o.kind === 'bool') return html`<input id="opt-${o.name}" data-name="${o.name}" type="checkbox" ${o.default ? 'checked' : ''}>`;
    if (o.kind === 'choice') return html`<select id="opt-${o.name}" data-name="${o.name}"><option value=""></option>${o.choices.map((c) => html`<option>${c}</option>`)}</select>`;
    return html`<input id="opt-${o.name}" data-name="${o.name}" type="text" value="${o.default}">`;
  }

  function isDone(status) { return ['completed', 'failed', 'cancelled'].includes(status); }

  async function follow(jobId) {
    const controller = new AbortController();
    state.stream = controller;
    try {
      const response = await fetch(`/api/server/jobs/${jobId}/logs?follow=true`, { signal: controller.signal });
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        $('#job-log').textContent += decoder.decode(value, { stream: true });
        $('#job-log').scrollTop = $('#job-log').scrollHeight;
      }
    } catch (error) { if (error.name !== 'AbortError') $('#job-log').textContent += `\n[${error.message}]`; }
  }

  async function poll() {
    try {
      const job = await getJSON(`/api/server/jobs/${state.job.job_id}`);
      state.job = job;
      const p = job.progress;
      const progress = p && p.total ? ` · ${p.done ?? 0}/${p.total}${p.eta_s ? ` · eta ${Math.round(p.eta_s)} s` : ''}` : '';
      setHtml($('#job-status'), html`job ${job.job_id}: <span class="status ${job.status}" id="job-state">${job.status}</span>${progress}${job.error ? html`<div class="error">${job.error}</div>` : ''}`);
      $('#stop').disabled = isDone(job.status);
      if (isDone(job.status)) { clearInterval(state.timer); state.timer = null; refreshPreview(); }
    } catch (error) { $('#job-status').textContent = error.message; }
  }

  $('#submit').addEventListener('click', async () => {
    $('#submit').disabled = true;
    $('#job-log').textContent = '';
    try {
      state.job = await sendJSON('POST', '/api/server/evaluate', state.body);
      poll();
      state.timer = setInterval(poll, 1000);
      follow(state.job.job_id);
    } catch (error) { showError($('#job-status'), error); $('#submit').disabled = false; }
  });
  $('#stop').addEventListener('click', async () => {
    try { await sendJSON('DELETE', `/api/server/jobs/${state.job.job_id}`); poll(); } catch (error) { $('#job-status').textContent = error.message; }
  });
  $('#model-search').addEventListener('input', renderModels);
  $('#task-search').addEventListener('input', renderTasks);
  $('#task-list').addEventListener('change', (e) => {
    if (e.target.checked) state.chosen.add(e.target.value); else state.chosen.delete(e.target.value);
    renderTasks(); refreshPreview();
  });
  view.addEventListener('input', (e) => { if (!e.target.matches('#model-search, #task-search')) refreshPreview(); });
  view.addEventListener('change', (e) => { if (e.target.matches('#model, #options [data-name]')) refreshPreview(); });

  getJSON('/api/options').then((d) => { state.options = d.options; renderOptions(); refreshPreview(); }).catch((e) => showError($('#options'), e));
  getJSON('/api/server/models?detail=1').then((d) => {
    state.models = d.models; renderModels();
    if (!$('#model').value && state.models.length) $('#model').value = state.models[0].model_id;
    refreshPreview();
  }).catch((e) => { $('#preview-error').textContent = e.message; });
  getJSON('/api/server/tasks?detail=1').then((d) => {
    state.tasks = [...(d.groups || []).map((n) => ({ name: n, kind: 'group' })), ...(d.tags || []).map((n) => ({ name: n, kind: 'tag' })),
      ...(d.tasks || []).map((n) => ({ name: n, kind: 'task' }))];
    renderTasks();
  }).catch((e) => showError($('#task-list'), e));
  return () => { clearInterval(state.timer); if (state.stream) state.stream.abort(); };
}
