// Samples: a virtualised table (fixed-height rows, pages fetched as they scroll into view) with
// filters (correct / wrong / failed, a document field, full-text search) and a detail panel.
// #/samples/<run>/<task>/<line> opens one sample.

import { getJSON, html, setHtml, text, fmt, enc, mediaUrl, showError } from '../api.js';

const ROW = 56, PAGE = 100;

export function showSamples(view, params, run, task, line) {
  const state = {
    run, task, total: 0, all: 0, pages: new Map(), loading: new Set(), selected: line === undefined ? null : Number(line),
    status: params.get('status') || 'all', field: params.get('field') || '', value: params.get('value') || '', q: params.get('q') || '',
    generation: 0,
  };
  setHtml(view, html`<h1><a href="#/run/${enc(run)}">${run}</a> · ${task} samples</h1>
    <div class="toolbar">
      <select id="status-filter" aria-label="status">${['all', 'correct', 'wrong', 'failed'].map((s) => html`<option>${s}</option>`)}</select>
      <select id="field-filter" aria-label="document field"><option value="">any field</option></select>
      <select id="value-filter" aria-label="field value"><option value="">any value</option></select>
      <input id="search" type="search" placeholder="search the samples" size="30">
      <span id="samples-total" class="muted"></span>
    </div>
    <div class="samples-layout">
      <div><div class="shead"><div>doc</div><div>status</div><div>media</div><div>prompt</div><div>target</div><div>response</div><div>filtered</div><div>score</div></div>
        <div id="samples-scroll"><div id="samples-spacer"></div></div></div>
    </div>`);
  const scroll = view.querySelector('#samples-scroll');
  const spacer = view.querySelector('#samples-spacer');
  const layout = view.querySelector('.samples-layout');
  view.querySelector('#status-filter').value = state.status;
  view.querySelector('#search').value = state.q;

  function filters() {
    return { run, task, status: state.status, field: state.field, value: state.field ? state.value : '', q: state.q };
  }

  async function fetchPage(page) {
    if (state.pages.has(page) || state.loading.has(page)) return;
    const generation = state.generation;
    state.loading.add(page);
    try {
      const data = await getJSON('/api/samples', { ...filters(), offset: page * PAGE, limit: PAGE });
      if (generation !== state.generation) return;
      state.pages.set(page, data.rows);
      setTotal(data.total, data.all);
      paint();
    } catch (error) { view.querySelector('#samples-total').textContent = error.message; } finally { if (generation === state.generation) state.loading.delete(page); }
  }

  function setTotal(total, all) {
    state.total = total; state.all = all;
    spacer.style.height = `${total * ROW}px`;
    view.querySelector('#samples-total').textContent = `${total} of ${all} samples`;
  }

  function rowHtml(row) {
    if (row.error) {
      return html`<div class="srow bad${row.line === state.selected ? ' selected' : ''}" data-line="${row.line}">
        <div>${row.line + 1}</div><div><span class="status failed">unreadable</span></div><div class="bad-line">${row.error}</div></div>`;
    }
    const media = row.media.filter((m) => m.kind === 'image' && m.servable).slice(0, 1)
      .map((m) => html`<img class="thumb" loading="lazy" alt="image" src="${mediaUrl(run, task, row.line, m.n)}">`);
    const score = Object.values(row.scores)[0];
    return html`<div class="srow${row.line === state.selected ? ' selected' : ''}" data-line="${row.line}">
      <div>${row.doc_id}</div><div><span class="status ${row.status}">${row.status}</span></div><div>${media}</div>
      <div title="${text(row.input)}">${text(row.input)}</div><div>${text(row.target)}</div>
      <div>${text(row.resps)}</div><div>${text(row.filtered_resps)}</div><div class="num">${score === undefined ? '' : fmt(score, 2)}</div></div>`;
  }

  function paint() {
    const first = Math.max(0, Math.floor(scroll.scrollTop / ROW) - 5);
    const last = Math.min(state.total, Math.ceil((scroll.scrollTop + scroll.clientHeight) / ROW) + 5);
    const shown = [];
    for (let i = first; i < last; i += 1) {
      const rows = state.pages.get(Math.floor(i / PAGE));
      if (rows) shown.push(i);
      else fetchPage(Math.floor(i / PAGE));
    }
    setHtml(spacer, html`${shown.map((i) => rowHtml(state.pages.get(Math.floor(i / PAGE))[i % PAGE]))}`);
    // row positions through the CSSOM: the page's CSP allows no inline style attributes
    spacer.querySelectorAll('.srow').forEach((el, k) => { el.style.top = `${shown[k] * ROW}px`; });
  }

  function reload() {
    state.generation += 1;
    state.pages.clear();
    state.loading.clear();
    scroll.scrollTop = 0;
    fetchPage(0);
  }

  let timer = null;
  view.querySelector('#search').addEventListener('input', (e) => {
    clearTimeout(timer);
    timer = setTimeout(() => { state.q = e.target.value.trim(); reload(); }, 250);
  });
  view.querySelector('#status-filter').addEventListener('change', (e) => { state.status = e.target.value; reload(); });
  view.querySelector('#field-filter').addEventListener('change', (e) => { state.field = e.target.value; fillValues(); reload(); });
  view.querySelector('#value-filter').addEventListener('change', (e) => { state.value = e.target.value; reload(); });
  scroll.addEventListener('scroll', () => requestAnimationFrame(paint));
  spacer.addEventListener('click', (e) => {
    const row = e.target.closest('.srow');
    if (row && !e.target.closest('img.thumb')) openSample(Number(row.dataset.line));
  });

  let facets = {};
  function fillValues() {
    const values = facets[state.field] || [];
    setHtml(view.querySelector('#value-filter'), values.length ? html`${values.map((v) => html`<option>${v}</option>`)}` : html`<option value="">any value</option>`);
    if (!values.includes(state.value)) state.value = values[0] || '';
    view.querySelector('#value-filter').value = state.value;
  }
  getJSON('/api/facets', { run, task }).then((data) => {
    facets = data.facets;
    setHtml(view.querySelector('#field-filter'), html`<option value="">any field</option>${Object.keys(facets).map((f) => html`<option>${f}</option>`)}`);
    view.querySelector('#field-filter').value = state.field;
    if (state.field) fillValues();
  }).catch(() => {});

  async function openSample(lineNo) {
    state.selected = lineNo;
    history.replaceState(null, '', `#/samples/${enc(run)}/${enc(task)}/${lineNo}`);
    layout.classList.add('with-detail');
    let panel = view.querySelector('#sample-detail');
    if (!panel) { panel = document.createElement('div'); panel.id = 'sample-detail'; layout.append(panel); }
    setHtml(panel, html`<p class="muted">Loading…</p>`);
    try { setHtml(panel, detailHtml(await getJSON('/api/sample', { run, task, line: lineNo }))); } catch (error) { showError(panel, error); }
    paint();
  }

  function detailHtml(s) {
    const media = s.media.map((m) => {
      if (!m.servable) return html`<div class="muted">${m.kind} (not stored: only its hash is recorded)</div>`;
      const src = mediaUrl(run, task, s.line, m.n);
      if (m.kind === 'image') return html`<img class="thumb" alt="image ${m.n}" src="${src}">`;
      if (m.kind === 'video') return html`<video controls preload="metadata" src="${src}"></video>`;
      return html`<audio controls preload="metadata" src="${src}"></audio>`;
    });
    const link = `${location.origin}${location.pathname}#/samples/${enc(run)}/${enc(task)}/${s.line}`;
    const field = (name, value) => html`<dt>${name}</dt><dd>${typeof value === 'string' ? value : JSON.stringify(value, null, 1)}</dd>`;
    return html`<h2>doc ${s.doc_id} <span class="status ${s.status}">${s.status}</span></h2>
      <p><a id="sample-link" href="${link}">link to this sample</a></p>
      <div class="media">${media}</div>
      <dl class="kv">${field('prompt', s.input)}${field('target', s.target)}${field('response', s.resps)}
      ${field('filtered', s.filtered_resps)}${field('filter', s.filter)}${field('scores', s.scores)}
      ${s.errors ? field('errors', s.errors) : ''}${field('document', s.doc)}</dl>`;
  }

  fetchPage(0);
  if (state.selected !== null) openSample(state.selected);
  return () => clearTimeout(timer);
}
