// SPDX-License-Identifier: Apache-2.0
// trainmon serve's dashboard: polls the JSON API (docs/serve.md) and draws with uPlot.
// Text from the machine (process names, commands, labels) only ever goes through textContent.
(function() {
'use strict';

const COLORS = [
  '#58a6ff', '#3fb950', '#d29922', '#f85149', '#bc8cff', '#39c5cf', '#ff7b72', '#e3b341', '#a5d6ff',
  '#7ee787', '#ffa657', '#ff9bce'
];

// Messages in the reader's language (docs/language.md): /api/v1/messages answers the catalogue
// (msgid -> translation) the server's --lang / $TRAINMON_LANG or else the browser's Accept-Language
// asks for; English (the msgids) when it has none or cannot be read. index.html's fixed text is
// marked data-tr (its msgids; scripts/i18n_catalogue.py extracts them).
let MESSAGES = new Map();
let LANG = 'en';  // the page's language: /api/v1/messages' "lang" ('zh_CN', 'en')
const tr = (s) => (s === undefined || s === null) ? '' : (MESSAGES.get(String(s)) || String(s));
// tr() with fmt's automatic {} and numbered {0} fields filled from args (the catalogue's syntax).
const trf = (s, ...args) => {
  let i = 0;
  return tr(s).replace(/\{(\d*)\}/g, (_, n) => String(args[n === '' ? i++ : Number(n)]));
};

async function loadMessages() {
  try {
    const m = await getJSON('/api/v1/messages');
    const table = m && m.messages;
    MESSAGES = new Map(table && typeof table === 'object' ?
                           Object.entries(table).filter(([, v]) => typeof v === 'string' && v) : []);
    if (m && m.lang) document.documentElement.lang = m.lang === 'en' ? 'en' : m.lang.replace('_', '-');
    LANG = (m && typeof m.lang === 'string' && MESSAGES.size) ? m.lang : 'en';
  } catch (e) {
    MESSAGES = new Map();  // English
  }
  document.documentElement.setAttribute('data-lang', document.documentElement.lang);
  for (const e of document.querySelectorAll('[data-tr]')) e.textContent = tr(e.textContent);
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class')
      e.className = v;
    else if (k === 'text')
      e.textContent = v;
    else
      e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

async function getJSON(url) {
  const r = await fetch(url, {credentials: 'same-origin', cache: 'no-store'});
  if (!r.ok) throw new Error(url + ': HTTP ' + r.status);
  return r.json();
}

const fmt = {
  num: (v, d = 0) => (v === null || v === undefined || Number.isNaN(v)) ? 'N/A' : Number(v).toFixed(d),
  mib: (v) => (v === null || v === undefined) ?
      'N/A' :
      (v >= 1024 ? (v / 1024).toFixed(1) + ' GiB' : v.toFixed(0) + ' MiB'),
  bytes: (v) => {
    if (v === null || v === undefined) return 'N/A';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (v >= 1024 && i < u.length - 1) {
      v /= 1024;
      i++;
    }
    return v.toFixed(i ? 1 : 0) + ' ' + u[i];
  },
  time: (ns) => new Date(ns / 1e6).toLocaleString(),
  dur: (s) => {
    if (s === null || s === undefined) return '';
    s = Math.round(s);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    return (h ? h + 'h' : '') + (h || m ? m + 'm' : '') + r + 's';
  },
};

function chartWidth(node) { return Math.max(200, (node.clientWidth || 300) - 10); }

// A chart with a legend (each series' name with its unit) and labelled axes (time; the unit), at a
// height that stays readable on a phone as on a desktop (`height` CSS pixels, never less than 120).
// `series`: [{label, unit}], `yLabel`: the y axis' title with its unit.
function makeChart(node, series, height, yRange, yLabel, live = true) {
  const s = [{label: tr('time')}].concat(series.map(
      (n, i) => ({
        label: n.unit ? n.label + ' (' + n.unit + ')' : n.label,
        stroke: COLORS[i % COLORS.length],
        width: 1.5,
        spanGaps: false,
        points: {show: false},
        value: (u, v) => v === null || v === undefined ? '–' : fmt.num(v, 1) + (n.unit ? ' ' + n.unit : ''),
      })));
  const opts = {
    width: chartWidth(node),
    height: Math.max(120, height),
    series: s,
    legend: {show: true, live: live},  // live: the values under the cursor (the run page's charts)
    scales: {x: {time: true}, y: yRange ? {range: yRange} : {}},
    axes: [
      {stroke: '#8a94a0', grid: {stroke: '#2a3440'}, label: tr('time'), labelSize: 18, font: '11px system-ui',
       labelFont: '11px system-ui'},
      {stroke: '#8a94a0', grid: {stroke: '#2a3440'}, size: 52, label: yLabel, labelSize: 18,
       font: '11px system-ui', labelFont: '11px system-ui'},
    ],
    cursor: {points: {show: true}},
  };
  const data = [[]].concat(series.map(() => []));
  const chart = new uPlot(opts, data, node);
  // uPlot draws the axis titles on its canvas: name them on the chart's element too (tests, a11y).
  chart.root.setAttribute('aria-label', chart.axes.map((a) => a.label || '').join(' / '));
  chart.root.setAttribute('data-axis-labels', JSON.stringify(chart.axes.map((a) => a.label || '')));
  charts.push({chart, node});
  return chart;
}

// Charts follow the width of their box (a resized window, a phone turned round).
const charts = [];
let resizeTimer = 0;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    for (const c of charts)
      if (c.node.isConnected) c.chart.setSize({width: chartWidth(c.node), height: c.chart.height});
  }, 150);
});

// ---------------- live page ----------------
const cards = new Map();  // gpu index -> {node, chart, fields}

function gpuCard(g) {
  const fields = {};
  const field = (name, label) => {
    const v = el('span', {class: 'value', 'data-field': name});
    fields[name] = v;
    return el('div', {class: 'row'}, el('span', {class: 'muted', text: label}), v);
  };
  const bar = (name) => {
    const b = el('div');
    fields[name + '_bar'] = b;
    return el('div', {class: 'bar'}, b);
  };
  const chartNode = el('div', {class: 'mini'});
  const health = el('div', {class: 'health', 'data-field': 'health'});
  const findings = el('ul', {class: 'gpu-findings', 'data-field': 'findings'});
  fields.health = health;
  fields.findings = findings;
  const node =
      el('div', {class: 'card gpu', 'data-gpu': String(g.index)},
         el('div', {class: 'title', text: 'GPU ' + g.index + ' · ' + (g.name || '')}), health, findings,
         field('util', tr('utilisation')), bar('util'), field('mem', tr('GPU memory')), bar('mem'),
         field('power', tr('power')), field('temp', tr('temperature')), field('procs', tr('processes')),
         chartNode);
  document.getElementById('gpus').append(node);
  const chart = makeChart(
      chartNode, [{label: tr('utilisation'), unit: '%'}, {label: tr('GPU memory'), unit: '%'}], 150, [0, 100], '%',
      false);
  const c = {node, chart, fields, chartNode};
  cards.set(g.index, c);
  return c;
}

// Clock event ("throttle") reasons as nvidia-smi -q names them (its "Clocks Event Reasons" section),
// by the status document's names (docs/status-json.md), with how bad each is: the hardware slowing
// the clocks down (HW Slowdown, HW Thermal, HW Power Brake) is critical, the driver capping them for
// power or heat a warning; Idle, Applications Clocks, Sync Boost and Display Clock are no throttling.
const THROTTLE = new Map([
  ['sw_power_cap', ['SW Power Cap', 'warning']],
  ['sw_thermal_slowdown', ['SW Thermal Slowdown', 'warning']],
  ['hw_slowdown', ['HW Slowdown', 'critical']],
  ['hw_thermal_slowdown', ['HW Thermal Slowdown', 'critical']],
  ['hw_power_brake_slowdown', ['HW Power Brake Slowdown', 'critical']],
]);
const SEVERITY_RANK = {ok: 0, info: 0, warning: 1, critical: 2};

// The health line of one GPU: [{what, severity, text, title}] from the status document's gpu `g` and
// the snapshot's gpu_health entry `h` (docs/serve.md). Severities: a GPU that does not answer, any
// volatile uncorrected ECC error, a hardware slowdown: critical; uncorrected errors only in the
// aggregate (lifetime) count, a driver power / thermal cap: warning; the last Xid: its severity in
// trainmon's Xid table (docs/diagnosis.md, D10 / D11).
function gpuHealth(g, h) {
  const items = [];
  if (g.responsive && g.responsive !== 'ok') {
    items.push({
      what: 'lost',
      severity: 'critical',
      text: g.responsive === 'gpu_lost' ? tr('GPU lost') : trf('GPU unreadable: {}', g.responsive),
    });
  }
  const vol = g['ecc.errors.uncorrected.volatile.total'];
  const agg = h ? h['ecc.errors.uncorrected.aggregate.total'] : null;
  if (vol > 0 || agg > 0) {
    items.push({
      what: 'ecc',
      severity: vol > 0 ? 'critical' : 'warning',
      text: trf('ECC uncorrected: {} volatile, {} aggregate', fmt.num(vol), fmt.num(agg)),
    });
  } else if (g['ecc.mode.current'] === true && vol === 0) {
    items.push({what: 'ecc', severity: 'ok', text: tr('ECC: no uncorrected errors')});
  }
  const x = h && h.xid;
  if (x) {
    items.push({
      what: 'xid',
      severity: x.severity,
      text: trf('Xid {}: {}', x.code, tr(x.meaning)),
      title: trf('last at {}, {} Xid events since serve started', fmt.time(x.time_unix_ns), x.events),
    });
  }
  const reasons = (g['clocks_event_reasons.active_names'] || []).filter((n) => THROTTLE.has(n));
  if (reasons.length) {
    const worst = reasons.some((n) => THROTTLE.get(n)[1] === 'critical') ? 'critical' : 'warning';
    items.push({
      what: 'throttle',
      severity: worst,
      text: trf('throttled: {}', reasons.map((n) => THROTTLE.get(n)[0]).join(', ')),
    });
  }
  if (!items.some((i) => i.severity !== 'ok') && !(g.responsive && g.responsive !== 'ok'))
    items.unshift({what: 'ok', severity: 'ok', text: tr('healthy')});
  return items;
}

// The id of a finding's entry in the findings list (code, GPUs and pids: how the live diagnosis
// tells findings apart).
function findingId(f) {
  return 'finding-' + f.code + '-g' + (f.gpus || []).join('_') + '-p' + (f.pids || []).join('_');
}

function renderGpuHealth(c, g, h, findings) {
  const items = gpuHealth(g, h);
  let worst = 'ok';
  c.fields.health.replaceChildren(...items.map((i) => {
    if (SEVERITY_RANK[i.severity] > SEVERITY_RANK[worst]) worst = i.severity;
    const e = el('span', {class: 'h-item ' + i.severity, 'data-health': i.what, text: i.text});
    if (i.title) e.title = i.title;
    return e;
  }));
  c.node.classList.remove('sev-ok', 'sev-warning', 'sev-critical');
  c.node.classList.add('sev-' + worst);
  const mine = findings.filter((f) => (f.gpus || []).includes(g.index));
  c.fields.findings.replaceChildren(...mine.map(
      (f) => el('li', {class: f.severity},
                el('a', {href: '#' + findingId(f), 'data-code': f.code, text: f.code + ' ' + tr(f.title)}))));
}

function renderGpus(status, health, findings) {
  for (const g of status.gpus || []) {
    const c = cards.get(g.index) || gpuCard(g);
    const f = c.fields;
    renderGpuHealth(c, g, (health || []).find((h) => h.index === g.index), findings || []);
    if (g.responsive && g.responsive !== 'ok') {
      f.util.textContent = g.responsive;
      continue;
    }
    f.util.textContent = fmt.num(g['utilization.gpu']) + ' %';
    f.util_bar.style.width = (g['utilization.gpu'] || 0) + '%';
    const used = g['memory.used'], total = g['memory.total'];
    f.mem.textContent = fmt.mib(used) + ' / ' + fmt.mib(total);
    f.mem_bar.style.width = (total ? 100 * used / total : 0) + '%';
    f.power.textContent = fmt.num(g['power.draw']) + ' / ' + fmt.num(g['enforced.power.limit']) + ' W';
    f.temp.textContent = fmt.num(g['temperature.gpu']) + ' °C';
    // processes null: the driver's lists failed (never shown as 0 next to the memory they hold)
    f.procs.textContent = g.processes === null ? tr('unknown') : String((g.processes || []).length);
    f.procs.title = g.processes_unknown ? trf('processes unknown: {}', g.processes_unknown) : '';
  }
}

function renderHost(status) {
  const h = status.host || {};
  const node = document.getElementById('hostcard');
  node.replaceChildren();
  const row = (label, value, name) => node.append(
      el('div', {class: 'row'}, el('span', {class: 'muted', text: label}),
         el('span', {class: 'value', 'data-field': name, text: value})));
  const cpu = h.cpu || {}, mem = h.memory || {};
  row(tr('CPU busy'), trf('{} % of {} CPUs', fmt.num(cpu.busy_pct, 1), cpu.count_online || '?'), 'cpu');
  row(tr('load'), [h.load1, h.load5, h.load15].map((x) => fmt.num(x, 2)).join(' '), 'load');
  row(tr('memory'), fmt.bytes(mem.used_bytes) + ' / ' + fmt.bytes(mem.total_bytes), 'memory');
  row(tr('swap'), fmt.bytes(mem.swap_used_bytes) + ' / ' + fmt.bytes(mem.swap_total_bytes), 'swap');
}

function renderProcs(status) {
  const body = document.querySelector('#procs tbody');
  body.replaceChildren();
  let unknown = 0;
  for (const g of status.gpus || []) {
    if (g.processes_unknown) {
      unknown++;
      body.append(el('tr', {}, el('td', {text: String(g.index)}),
                      el('td', {colspan: '7', class: 'warn', text: trf('processes unknown: {}', g.processes_unknown)})));
    }
    for (const p of g.processes || g.processes_listed || []) {
      body.append(
          el('tr', {}, el('td', {text: String(g.index)}), el('td', {text: String(p.pid)}),
             el('td', {text: p.username || ''}),
             el('td', {text: (p.full_command || []).join(' ') || p.command || p.process_name || ''}),
             el('td', {text: fmt.mib(p.gpu_memory_usage)}), el('td', {text: fmt.num(p.sm_util)}),
             el('td', {text: fmt.num(p.cpu_percent, 1)}), el('td', {text: fmt.bytes(p.cpu_memory_usage)})));
    }
  }
  if (!body.children.length && !unknown)
    body.append(el('tr', {}, el('td', {colspan: '8', class: 'muted', text: tr('no GPU processes')})));
}

// The findings' evidence and advice for people in serve's language (docs/language.md): `url` answers
// {lang, findings: [{code, gpus, pids, start_s, evidence, advice}]}; used when that is the page's
// language, by finding (the JSON API's own findings stay English for scripts). An empty map when the
// page reads English or it cannot be read.
async function findingsText(url) {
  if (LANG === 'en') return new Map();
  try {
    const t = await getJSON(url);
    if (!t || t.lang !== LANG || !Array.isArray(t.findings)) return new Map();
    // by finding and start (a stored run may hold episodes of the same one), and by finding alone (the
    // live ones are unique by it, and an open one's start may move between the two requests)
    const m = new Map();
    for (const x of t.findings) {
      if (!x || typeof x.evidence !== 'string' || typeof x.advice !== 'string') continue;
      m.set(findingId(x) + '@' + x.start_s, x);
      if (!m.has(findingId(x))) m.set(findingId(x), x);
    }
    return m;
  } catch (e) {
    return new Map();
  }
}

function renderFindings(list, node, text) {
  node.replaceChildren();
  if (!list.length) {
    node.append(el('li', {class: 'muted', text: tr('nothing to report')}));
    return;
  }
  for (const f of list) {
    // The title and severity from the catalogue; evidence and advice in the page's language when serve
    // has them in it (`text`), else the API's English (a fixed advice sentence through the catalogue).
    const local = (text && (text.get(findingId(f) + '@' + f.start_s) || text.get(findingId(f)))) || null;
    node.append(
        el('li', {class: f.severity, id: findingId(f)}, el('strong', {text: f.code + ' ' + tr(f.title)}),
           el('span', {class: 'muted', text: ' [' + tr(f.severity) + ']'}),
           el('div', {text: local ? local.evidence : (f.evidence || '')}),
           el('div', {class: 'muted', text: local ? local.advice : tr(f.advice)})));
  }
}

function renderHistory(h) {
  const t = h.t || [];
  for (const g of h.gpus || []) {
    const c = cards.get(g.index);
    if (!c) continue;
    const totalMib = c.totalMib || 0;
    const pct = g.mem_used_mib.map((v) => (v === null || !totalMib) ? null : 100 * v / totalMib);
    c.chart.setData([t, g.util_gpu_pct, pct]);
  }
}

function renderRuns(runs) {
  const body = document.querySelector('#runs tbody');
  body.replaceChildren();
  for (const r of runs.slice(0, 50)) {
    const end = r.end_unix_ns || Date.now() * 1e6;
    body.append(el(
        'tr', {'data-run': String(r.id)}, el('td', {}, el('a', {href: '/runs/' + r.id, text: String(r.id)})),
        el('td', {text: r.name}), el('td', {text: r.kind}), el('td', {text: tr(r.status)}),
        el('td', {text: fmt.time(r.start_unix_ns)}), el('td', {text: fmt.dur((end - r.start_unix_ns) / 1e9)}),
        el('td', {text: String(r.gpus.length)}),
        el('td', {class: r.finding_count > 0 ? 'warn' : 'muted', 'data-field': 'findings'},
           r.finding_count > 0 ? el('a', {href: '/runs/' + r.id + '#run-findings', text: String(r.finding_count)}) :
                                 '0')));
  }
}

function setConn(ok, text) {
  const c = document.getElementById('conn');
  c.className = 'pill ' + (ok ? 'ok' : 'bad');
  c.textContent = text;
}

async function liveTick() {
  try {
    const s = await getJSON('/api/v1/snapshot');
    if (s.status) {
      document.getElementById('host').textContent = s.status.hostname || '';
      document.getElementById('updated').textContent =
          trf('updated {}', new Date(s.status.query_time_unix_ns / 1e6).toLocaleTimeString());
      renderGpus(s.status, s.gpu_health, s.findings);
      for (const g of s.status.gpus || []) {
        const c = cards.get(g.index);
        if (c && g['memory.total']) c.totalMib = g['memory.total'];
      }
      renderHost(s.status);
      renderProcs(s.status);
    }
    const findings = s.findings || [];
    renderFindings(findings, document.getElementById('findings'),
                   findings.length ? await findingsText('/api/v1/findings/l10n') : null);
    renderHistory(await getJSON('/api/v1/history?seconds=600'));
    setConn(true, trf('live · run {}', s.run_id));
  } catch (e) {
    setConn(false, tr('disconnected'));
  }
}

async function runsTick() {
  try {
    renderRuns(await getJSON('/api/v1/runs'));
  } catch (e) { /* shown by the live pill */
  }
}

// ---------------- run page ----------------
async function runPage(id) {
  await loadMessages();
  document.getElementById('run').hidden = false;
  const run = await getJSON('/api/v1/runs/' + id);
  document.title = trf('trainmon · run {}', id);
  document.getElementById('run-title').textContent = trf('Run {} · {}', run.id, run.name);
  const end = run.end_unix_ns || Date.now() * 1e6;
  const labels = Object.entries(run.labels || {}).map(([k, v]) => k + '=' + v).join(' ');
  document.getElementById('run-meta').textContent = run.kind + ' · ' + run.status + ' · ' + run.host +
      ' · ' + trf('started {}', fmt.time(run.start_unix_ns)) + ' · ' + fmt.dur((end - run.start_unix_ns) / 1e9) +
      (run.command.length ? ' · ' + run.command.join(' ') : '') + (labels ? ' · ' + labels : '');
  const report = document.getElementById('run-report');
  report.href = '/runs/' + id + '/report';
  const s = await getJSON('/api/v1/runs/' + id + '/samples?step=0');
  const t0 = run.start_unix_ns / 1e9;
  const t = s.t.map((x) => t0 + x);
  const names = (unit) => s.gpus.map((g) => ({label: 'GPU ' + g.index, unit}));
  const draw = (nodeId, cols, series, range, yLabel) => {
    const node = document.getElementById(nodeId);
    node.replaceChildren();
    makeChart(node, series, 240, range, yLabel).setData([t].concat(cols));
  };
  draw('chart-util', s.gpus.map((g) => g.util_gpu_pct), names('%'), [0, 100], trf('utilisation ({})', '%'));
  draw('chart-mem', s.gpus.map((g) => g.mem_used_mib), names('MiB'), null, trf('GPU memory ({})', 'MiB'));
  draw('chart-power', s.gpus.map((g) => g.power_w), names('W'), null, trf('power ({})', 'W'));
  draw('chart-cpu', [s.host.cpu_busy_pct], [{label: tr('CPU busy'), unit: '%'}], [0, 100], trf('CPU busy ({})', '%'));
  let findings = await getJSON('/api/v1/runs/' + id + '/findings');
  let text = findings.length ? await findingsText('/api/v1/runs/' + id + '/findings/l10n') : null;
  if (!findings.length) {
    // the serve run itself stores its findings at the end: show the live ones meanwhile
    const snap = await getJSON('/api/v1/snapshot');
    if (snap.run_id === Number(id)) findings = snap.findings || [];
    text = findings.length ? await findingsText('/api/v1/findings/l10n') : null;
  }
  renderFindings(findings, document.getElementById('run-findings'), text);
  document.body.setAttribute('data-ready', 'run');
}

async function livePage() {
  await loadMessages();
  document.getElementById('live').hidden = false;
  await liveTick();
  await runsTick();
  document.body.setAttribute('data-ready', 'live');
  setInterval(liveTick, 1000);
  setInterval(runsTick, 5000);
}

const m = location.pathname.match(/^\/runs\/(\d+)$/);
(m ? runPage(m[1]) : livePage()).catch((e) => {
  setConn(false, tr('error'));
  document.body.append(el('pre', {class: 'muted', text: String(e)}));
});
})();
