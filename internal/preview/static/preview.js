// Supervaizer local preview. Every agent-provided string is written with
// textContent or as an attribute value, never as HTML.
'use strict';
(function () {
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const SVG = 'http://www.w3.org/2000/svg';

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  async function postJSON(path, body) {
    const r = await fetch(path, {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const data = await r.json().catch(() => ({ error: 'HTTP ' + r.status }));
    if (!r.ok) throw new Error(data.error || ('HTTP ' + r.status));
    return data;
  }

  // --- fields ---

  // directFields are the fields of a form or of one list item, not those of
  // nested list items.
  function directFields(container) {
    return $$('.field', container).filter((f) => f.parentElement.closest('.list-item, form') === container);
  }

  function control(f) { return f.querySelector('.control'); }

  function itemsOf(listField) {
    const items = listField.querySelector('.list-items');
    return items ? Array.from(items.children).filter((c) => c.classList.contains('list-item')) : [];
  }

  function jsonOf(node) {
    try { return JSON.parse(node.dataset.json); } catch (e) { return node.value; }
  }

  // scalarOf is a field's value stringified as a JSON scalar, as depends_on
  // compares it.
  function scalarOf(f) {
    const c = control(f);
    if (!c) return '';
    switch (f.dataset.kind) {
      case 'boolean': return c.checked ? 'true' : 'false';
      case 'select': {
        const o = c.selectedOptions[0];
        if (!o || o.value === '') return '';
        const v = jsonOf(o);
        return typeof v === 'string' ? v : JSON.stringify(v);
      }
      case 'multi_select': case 'list': case 'file': return '';
      default: return c.value;
    }
  }

  function updateDepends(form) {
    // Twice, so that a field depending on a field that just appeared follows.
    for (let pass = 0; pass < 3; pass++) {
      for (const f of $$('.field[data-depends-field]', form)) {
        const container = f.parentElement.closest('.list-item, form');
        const parent = directFields(container).find((x) => x.dataset.field === f.dataset.dependsField);
        let values = [];
        try { values = JSON.parse(f.dataset.dependsIn); } catch (e) { values = []; }
        f.hidden = !(parent && !parent.hidden && values.includes(scalarOf(parent)));
      }
    }
  }

  function readFile(file) {
    return new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ''));
      r.onerror = () => reject(r.error);
      r.readAsDataURL(file);
    });
  }

  async function readValue(f) {
    const c = control(f);
    const kind = f.dataset.kind;
    if (!c) return { has: false };
    switch (kind) {
      case 'boolean': return { has: true, value: c.checked };
      case 'integer': case 'number': {
        const v = c.value.trim();
        if (v === '') return { has: false };
        const n = Number(v);
        const ok = kind === 'integer' ? Number.isInteger(n) : Number.isFinite(n);
        return { has: true, value: ok ? n : v };
      }
      case 'select': {
        const o = c.selectedOptions[0];
        if (!o || o.value === '') return { has: false };
        return { has: true, value: jsonOf(o) };
      }
      case 'multi_select': {
        const vals = $$('input[type=checkbox]', c).filter((b) => b.checked).map(jsonOf);
        return vals.length ? { has: true, value: vals } : { has: false };
      }
      case 'file': {
        const file = c.files && c.files[0];
        if (!file) return { has: false };
        return { has: true, value: {
          storage: 'inline', filename: file.name, media_type: file.type || 'application/octet-stream',
          size: file.size, encoding: 'base64', content: await readFile(file),
        } };
      }
      case 'list': {
        const items = [];
        for (const item of itemsOf(f)) items.push(await collect(item));
        return items.length ? { has: true, value: items } : { has: false };
      }
      default: {
        const v = c.value;
        return v === '' ? { has: false } : { has: true, value: v };
      }
    }
  }

  // collect reads the active fields of a form or list item; inactive
  // (depends_on) and empty fields are left out, as Studio does.
  async function collect(container) {
    const out = {};
    for (const f of directFields(container)) {
      if (f.hidden || !f.dataset.field) continue;
      const r = await readValue(f);
      if (r.has) out[f.dataset.field] = r.value;
    }
    return out;
  }

  async function buildInput(form) {
    if (form.dataset.doc !== 'ResourceImport') return collect(form);
    const input = { format: 'csv' };
    const file = $('#import-file', form).files[0];
    if (file) input.content = await file.text();
    const fields = await collect(form);
    if (Object.keys(fields).length) input.fields = fields;
    return input;
  }

  // --- errors and results ---

  function clearResult(form) {
    for (const p of $$('.field-error', form)) { p.hidden = true; p.textContent = ''; }
    for (const f of $$('.field.invalid', form)) f.classList.remove('invalid');
    for (const c of $$('[aria-invalid]', form)) c.removeAttribute('aria-invalid');
    for (const id of ['result-errors', 'result-effects']) $('#' + id).replaceChildren();
    $('#result-replay').hidden = true;
    $('#result-job').hidden = true;
    $('#result-plan').hidden = true;
  }

  // fieldForLoc finds the field an error location names: ["input", "a"],
  // ["input", "list", 0, "b"], or an import's ["input", "fields", "a"].
  function fieldForLoc(form, loc) {
    let path = Array.isArray(loc) ? loc.slice() : [];
    if (path[0] === 'input') path = path.slice(1);
    if (form.dataset.doc === 'ResourceImport') {
      if (path[0] === 'fields') path = path.slice(1);
      else return $('.kind-import', form);
    }
    let container = form;
    let found = null;
    while (path.length) {
      const key = String(path.shift());
      found = directFields(container).find((x) => x.dataset.field === key);
      if (!found) return null;
      if (found.dataset.kind !== 'list' || typeof path[0] !== 'number') return found;
      const item = itemsOf(found)[path.shift()];
      if (!item || !path.length) return found;
      container = item;
    }
    return found;
  }

  function showFieldError(f, msg) {
    const p = f.querySelector(':scope > .field-error');
    p.textContent = p.textContent ? p.textContent + '; ' + msg : msg;
    p.hidden = false;
    f.classList.add('invalid');
    const c = f.querySelector(':scope > .control, :scope > label > .control');
    if (c) c.setAttribute('aria-invalid', 'true');
  }

  // fieldLabel is the label a person reads for field f.
  function fieldLabel(f) {
    const l = f.querySelector(':scope > .label, :scope > label.check');
    if (!l) return f.dataset.field || 'This field';
    const copy = l.cloneNode(true);
    for (const x of copy.querySelectorAll('.req, .type, input')) x.remove();
    return copy.textContent.trim() || f.dataset.field || 'This field';
  }

  // humanError turns a schema error about field f into a sentence: "Topic is
  // required" rather than "missing property 'topic_id'".
  function humanError(f, e) {
    const msg = String(e.msg || e.message || '');
    const label = fieldLabel(f);
    const t = String(e.type || '');
    if (/missing propert|required/i.test(msg) || t === 'missing' || t === 'required') return label + ' is required';
    if (/nonblank|blank|empty/i.test(msg) || t === 'nonblank') return label + ' must not be blank';
    let m = /(?:maxLength|at most|longer than|max_length)\D*(\d+)/i.exec(msg);
    if (m) return label + ' must be at most ' + m[1] + ' characters';
    m = /(?:minLength|at least|min_length)\D*(\d+)/i.exec(msg);
    if (m) return label + ' must be at least ' + m[1] + ' characters';
    if (/enum|one of/i.test(msg)) return label + ': choose one of the options';
    return label + ': ' + msg;
  }

  function showResult(form, ans) {
    const section = $('#result');
    section.hidden = false;
    clearResult(form);
    const resp = ans.response || {};
    $('#result-key').textContent = 'Idempotency key ' + ans.idempotency_key + (ans.job_id ? ' · job ' + ans.job_id : '');
    if (ans.replayed) {
      const r = $('#result-replay');
      r.textContent = 'Idempotent replay: the controller returned the same result as the first submit with this key.';
      r.hidden = false;
    }
    const errors = $('#result-errors');
    if (resp.error) {
      $('#result-status').textContent = 'Refused by the SDK: ' + resp.error.message + ' (JSON-RPC ' + resp.error.code + ')';
      section.dataset.outcome = 'refused';
      const list = (resp.error.data && Array.isArray(resp.error.data.errors)) ? resp.error.data.errors : [];
      for (const e of list) {
        const f = fieldForLoc(form, e.loc);
        if (f) showFieldError(f, humanError(f, e));
        else errors.appendChild(el('li', (Array.isArray(e.loc) ? e.loc.join('.') + ': ' : '') + e.msg));
      }
      return;
    }
    const r = resp.result || {};
    section.dataset.outcome = r.status || '';
    $('#result-status').textContent = 'Status: ' + r.status;
    for (const e of r.errors || []) {
      const msg = String(e.message);
      const where = (e.row !== undefined && e.row !== null && !/^row \d/.test(msg)) ? 'row ' + e.row + ': ' : '';
      const li = el('li', where + msg + (e.code ? ' [' + e.code + ']' : ''));
      li.className = 'result-error';
      errors.appendChild(li);
      if (e.field && form.dataset.doc !== 'ResourceImport') {
        const f = fieldForLoc(form, ['input', e.field]);
        if (f) showFieldError(f, e.message);
      }
    }
    const effects = $('#result-effects');
    for (const e of r.effects || []) {
      const li = el('li');
      li.appendChild(el('code', e.type, 'effect-type'));
      const rest = Object.assign({}, e);
      delete rest.type;
      li.appendChild(el('span', ' ' + JSON.stringify(rest), 'effect-data'));
      effects.appendChild(li);
    }
    if (!effects.children.length) effects.appendChild(el('li', 'none', 'meta'));
    if (r.setup_plan) {
      $('#result-plan').hidden = false;
      $('#result-plan-json').textContent = JSON.stringify(r.setup_plan, null, 2);
    }
    if (r.job_state) {
      $('#result-job').hidden = false;
      $('#result-job-state').textContent = JSON.stringify(r.job_state, null, 2);
    }
  }

  // markFields gives each field's control its accessible state: required and
  // aria-required for a required field, aria-describedby naming its error
  // text (aria-invalid is set when an error is shown).
  let errorIDs = 0;
  function markFields(form) {
    for (const f of $$('.field', form)) {
      const c = f.querySelector(':scope > .control, :scope > label > .control');
      const p = f.querySelector(':scope > .field-error');
      if (!c || c.dataset.marked) continue;
      c.dataset.marked = 'true';
      if (f.dataset.required === 'true' && !c.matches('div')) {
        c.required = true;
        c.setAttribute('aria-required', 'true');
      } else if (f.dataset.required === 'true') {
        c.setAttribute('role', 'group');
        c.setAttribute('aria-required', 'true');
      }
      if (p) {
        if (!p.id) p.id = 'err-' + (c.id ? c.id.replace(/^f-/, '') : 'item-' + (++errorIDs));
        c.setAttribute('aria-describedby', p.id);
      }
    }
  }

  function setupForm(form) {
    markFields(form);
    form.addEventListener('change', () => updateDepends(form));
    form.addEventListener('input', () => updateDepends(form));
    form.addEventListener('click', (ev) => {
      const t = ev.target;
      if (t.classList.contains('list-add')) {
        const list = t.closest('.list');
        const tpl = list.querySelector('template.list-item-template');
        list.querySelector('.list-items').appendChild(tpl.content.firstElementChild.cloneNode(true));
        markFields(form);
        updateDepends(form);
      } else if (t.classList.contains('list-remove')) {
        t.closest('.list-item').remove();
        updateDepends(form);
      }
    });
    updateDepends(form);

    let last = null;
    const send = async (body, keep) => {
      const buttons = $$('button', form);
      buttons.forEach((b) => { b.disabled = true; });
      try {
        const ans = await postJSON('/_preview/api/invoke', body);
        body.idempotency_key = ans.idempotency_key;
        body.job_id = ans.job_id || body.job_id;
        showResult(form, ans);
        // A refused submit ran nothing and recorded nothing under its key:
        // there is nothing to replay, so no resubmission is offered.
        const refused = Boolean((ans.response || {}).error);
        if (keep && !refused) {
          last = body;
          $('#resubmit').hidden = false;
        } else if (refused) {
          last = null;
          $('#resubmit').hidden = true;
        }
      } catch (e) {
        $('#result').hidden = false;
        $('#result-status').textContent = 'The preview could not call the controller: ' + e.message;
      } finally {
        buttons.forEach((b) => { b.disabled = false; });
        form.dataset.submits = String(Number(form.dataset.submits || '0') + 1);
      }
    };
    // submit sends the form to action: the submit action (kept for a
    // resubmission with the same key) or the document's preview action.
    const submit = async (action, keep) => {
      const d = form.dataset;
      let input;
      try {
        input = await buildInput(form);
      } catch (e) {
        $('#result').hidden = false;
        $('#result-status').textContent = 'Could not read the form: ' + e.message;
        return;
      }
      await send({ agent: d.agent, surface: d.surface, action: action, job_id: d.jobId,
        case_id: d.caseId, step_id: d.stepId, input: input }, keep);
    };
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      submit(form.dataset.action, true);
    });
    const preview = $('#preview-action', form);
    if (preview) preview.addEventListener('click', () => submit(preview.dataset.action, false));
    $('#resubmit').addEventListener('click', () => { if (last) send(Object.assign({}, last), true); });
  }

  // --- jobs ---

  function setupSync(button) {
    button.addEventListener('click', async () => {
      const status = button.parentElement.querySelector('.sync-status');
      status.textContent = 'syncing…';
      try {
        const ans = await postJSON('/_preview/api/sync', { agent: button.dataset.agent, job_id: button.dataset.jobId });
        if (ans.response && ans.response.error) status.textContent = ans.response.error.message;
        else window.location.reload();
      } catch (e) {
        status.textContent = e.message;
      }
    });
  }

  // --- charts ---

  function svgNode(tag, attrs, text) {
    const n = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v));
    if (text !== undefined) n.textContent = String(text);
    return n;
  }

  // drawChart draws a vega-lite bar or line spec over x/y fields; any other
  // spec keeps only the table.
  function drawChart(div) {
    let spec;
    let rows;
    try {
      spec = JSON.parse(div.dataset.spec);
      rows = JSON.parse(div.dataset.rows);
    } catch (e) {
      div.appendChild(el('p', 'The chart specification is not JSON: see the table.', 'meta'));
      return;
    }
    const mark = typeof spec.mark === 'string' ? spec.mark : (spec.mark && spec.mark.type);
    const enc = spec.encoding || {};
    const x = enc.x && enc.x.field;
    const y = enc.y && enc.y.field;
    if ((mark !== 'bar' && mark !== 'line') || !x || !y || !Array.isArray(rows)) {
      div.appendChild(el('p', 'The preview draws vega-lite bar and line charts only: see the table.', 'meta'));
      return;
    }
    const W = 640; const H = 260; const L = 48; const R = 12; const T = 16; const B = 52;
    const vals = rows.map((r) => { const v = Number(r[y]); return Number.isFinite(v) ? v : 0; });
    const max = Math.max(1, ...vals);
    const min = Math.min(0, ...vals);
    const plotH = H - T - B;
    const yOf = (v) => T + plotH * (max - v) / (max - min);
    const svg = svgNode('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'chart-svg', role: 'img', 'data-mark': mark });
    svg.appendChild(svgNode('title', {}, (enc.y.title || y) + ' by ' + (enc.x.title || x)));
    svg.appendChild(svgNode('line', { x1: L, y1: T, x2: L, y2: H - B, class: 'axis' }));
    svg.appendChild(svgNode('line', { x1: L, y1: yOf(0), x2: W - R, y2: yOf(0), class: 'axis' }));
    for (const v of [min, max]) {
      svg.appendChild(svgNode('text', { x: L - 6, y: yOf(v) + 4, class: 'tick', 'text-anchor': 'end' }, v));
    }
    const n = Math.max(rows.length, 1);
    const bw = (W - L - R) / n;
    const points = [];
    rows.forEach((row, i) => {
      const cx = L + bw * i + bw / 2;
      const v = vals[i];
      const label = String(row[x] === undefined || row[x] === null ? '' : row[x]);
      if (mark === 'bar') {
        const top = yOf(Math.max(v, 0));
        const h = Math.abs(yOf(v) - yOf(0));
        const rect = svgNode('rect', { x: cx - bw * 0.35, y: top, width: bw * 0.7, height: Math.max(h, 0), class: 'bar' });
        rect.appendChild(svgNode('title', {}, label + ': ' + v));
        svg.appendChild(rect);
      } else {
        points.push(cx + ',' + yOf(v));
        svg.appendChild(svgNode('circle', { cx: cx, cy: yOf(v), r: 3, class: 'dot' }));
      }
      svg.appendChild(svgNode('text', { x: cx, y: yOf(v) - 4, class: 'value', 'text-anchor': 'middle' }, v));
      svg.appendChild(svgNode('text', { x: cx, y: H - B + 16, class: 'tick', 'text-anchor': 'middle' },
        label.length > 16 ? label.slice(0, 15) + '…' : label));
    });
    if (mark === 'line') svg.insertBefore(svgNode('polyline', { points: points.join(' '), class: 'line' }), svg.children[1]);
    div.appendChild(svg);
  }

  // --- live events ---

  const EVENTS_KEY = 'supervaizer-preview-events';
  const LAST_KEY = 'supervaizer-preview-last-event';

  // eventItem is one effect of the live event panel: its type, action and
  // job, the time it arrived and, expandable, the effect itself.
  function eventItem(entry) {
    const li = el('li');
    li.dataset.effect = entry.type;
    li.appendChild(el('code', entry.type, 'effect-type'));
    li.appendChild(document.createTextNode(' ' + (entry.action || '') + (entry.job ? ' · ' + entry.job : '') + (entry.status ? ' → ' + entry.status : '')));
    if (entry.at) {
      const t = el('time', new Date(entry.at).toLocaleTimeString(), 'event-time');
      t.setAttribute('datetime', new Date(entry.at).toISOString());
      li.appendChild(document.createTextNode(' '));
      li.appendChild(t);
    }
    if (entry.data) {
      const d = el('details', undefined, 'event-details');
      d.appendChild(el('summary', 'details'));
      d.appendChild(el('pre', entry.data, 'json'));
      li.appendChild(d);
    }
    return li;
  }

  // setupEvents fills the live event panel from the preview's event stream.
  // The stream is closed when the page is hidden (pagehide) and reopened when
  // it is shown again (pageshow, from the back/forward cache): a page kept in
  // that cache would otherwise hold its connection open, and after six of
  // them the browser's connections to the host are used up and the next
  // navigation stalls.
  function setupEvents() {
    const list = $('#event-list');
    const status = $('#event-status');
    if (!list || !window.EventSource) return;
    let kept = [];
    try { kept = JSON.parse(sessionStorage.getItem(EVENTS_KEY) || '[]'); } catch (e) { kept = []; }
    for (const entry of kept) list.appendChild(eventItem(entry));
    let es = null;
    const connected = () => { status.textContent = 'connected'; document.body.dataset.events = 'connected'; };
    const onEffect = (ev) => {
      let d;
      try { d = JSON.parse(ev.data); } catch (e) { return; }
      window.dispatchEvent(new CustomEvent('supervaizer:effect', { detail: d }));
      for (const e of d.effects || []) {
        const entry = { type: String(e.type), action: String(d.action || ''), job: e.job_id ? String(e.job_id) : '',
          status: e.status ? String(e.status) : '', at: Date.now(), data: JSON.stringify(e, null, 2) };
        list.prepend(eventItem(entry));
        kept.unshift(entry);
      }
      kept = kept.slice(0, 50);
      while (list.children.length > 50) list.lastChild.remove();
      try {
        sessionStorage.setItem(EVENTS_KEY, JSON.stringify(kept));
        if (ev.lastEventId) sessionStorage.setItem(LAST_KEY, ev.lastEventId);
      } catch (e) { /* storage full or disabled: the panel still works */ }
    };
    const open = () => {
      if (es) return;
      const after = sessionStorage.getItem(LAST_KEY);
      es = new EventSource('/_preview/events' + (after ? '?after=' + encodeURIComponent(after) : ''));
      es.onopen = connected;
      es.addEventListener('supervaizer.connected', connected);
      es.onerror = () => { status.textContent = 'reconnecting…'; };
      es.addEventListener('supervaizer.effect', onEffect);
    };
    const close = () => {
      if (!es) return;
      es.close();
      es = null;
      status.textContent = 'paused';
      delete document.body.dataset.events;
    };
    window.addEventListener('pagehide', close);
    window.addEventListener('pageshow', (ev) => { if (ev.persisted) open(); });
    open();
  }

  // setupLiveJobs keeps the jobs view current without a click: each effect
  // of the event stream redraws it from the preview's record, and a job that
  // is running (neither finished nor awaiting a person) is synced (job.sync)
  // every 1.5 s while the page is shown, which records its new state.
  const FINISHED = new Set(['completed', 'failed', 'stopped', 'cancelled', 'canceled', 'awaiting']);
  function setupLiveJobs() {
    if (location.pathname !== '/_preview/jobs') return;
    let pending = null;
    const refresh = async () => {
      const r = await fetch('/_preview/jobs', { credentials: 'same-origin' });
      if (!r.ok) return;
      const fresh = new DOMParser().parseFromString(await r.text(), 'text/html').querySelector('main');
      const main = $('main');
      if (!fresh || !main) return;
      const open = new Set($$('details[open]', main).map((d) => d.closest('article.job') ? d.closest('article.job').dataset.jobId : ''));
      main.replaceChildren(...Array.from(fresh.childNodes).map((n) => document.importNode(n, true)));
      for (const a of $$('article.job', main)) if (open.has(a.dataset.jobId)) for (const d of $$('details', a)) d.open = true;
      $$('button.sync', main).forEach(setupSync);
      document.body.dataset.jobsRefreshed = String(Number(document.body.dataset.jobsRefreshed || '0') + 1);
    };
    const schedule = () => {
      if (pending) return;
      pending = setTimeout(() => { pending = null; refresh().catch(() => {}); }, 150);
    };
    window.addEventListener('supervaizer:effect', schedule);
    const poll = async () => {
      if (document.visibilityState === 'visible') {
        for (const b of $$('article.job button.sync')) {
          const st = b.closest('article.job').querySelector('h2 .status');
          if (!st || FINISHED.has(st.textContent.trim())) continue;
          try { await postJSON('/_preview/api/sync', { agent: b.dataset.agent, job_id: b.dataset.jobId }); } catch (e) { /* shown at the next manual sync */ }
        }
      }
      setTimeout(poll, 1500);
    };
    setTimeout(poll, 1500);
  }

  $$('form.surface-form').forEach(setupForm);
  $$('button.sync').forEach(setupSync);
  $$('.chart').forEach(drawChart);
  setupEvents();
  setupLiveJobs();
  document.body.dataset.ready = 'true';
})();
