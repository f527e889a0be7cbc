// SPDX-License-Identifier: Apache-2.0
// trainmon run report: draws the model embedded in the page (docs/report.md) with uPlot.
// Exposes window.trainmonReport = {charts: [{id, points, shaded, epochs}], renderMs, ready, errors}
// for tests and the render benchmark.
(function () {
  'use strict';
  const state = { charts: [], renderMs: 0, ready: false, errors: [] };
  window.trainmonReport = state;
  const t0 = performance.now();
  const model = JSON.parse(document.getElementById('trainmon-data').textContent);
  const root = document.getElementById('report');
  // Messages in the reader's language (docs/language.md): the catalogue the binary embedded
  // (msgid -> translation; none for English) and the findings' shown texts (model.findings_shown).
  const i18nEl = document.getElementById('trainmon-i18n');
  const MESSAGES = (i18nEl && JSON.parse(i18nEl.textContent).messages) || {};
  const tr = (s) => MESSAGES[s] || s;
  // tr() with fmt's automatic {} and numbered {0} fields filled from args (the catalogue's syntax).
  const trf = (s, ...args) => {
    let i = 0;
    return tr(s).replace(/\{(\d*)\}/g, (_, n) => String(args[n === '' ? i++ : Number(n)]));
  };
  root.textContent = '';

  const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf',
    '#bcbd22', '#7f7f7f'];
  const SEVERITY = { critical: 'rgba(214,39,40,0.16)', warning: 'rgba(255,127,14,0.16)',
    info: 'rgba(31,119,180,0.10)' };

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c == null) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }
  function fmtDur(s) {
    if (s == null || !isFinite(s)) return '';
    const neg = s < 0 ? '-' : '';
    s = Math.abs(s);
    if (s < 120) return neg + (Math.round(s * 10) / 10) + 's';
    const t = Math.round(s);
    const d = Math.floor(t / 86400), h = Math.floor(t % 86400 / 3600), m = Math.floor(t % 3600 / 60);
    const pad = (n) => String(n).padStart(2, '0');
    if (d > 0) return `${neg}${d}d${pad(h)}h${pad(m)}m`;
    if (h > 0) return `${neg}${h}h${pad(m)}m`;
    return `${neg}${m}m${pad(t % 60)}s`;
  }
  function fmtValue(v, unit) {
    if (v == null || !isFinite(v)) return '—';
    if (v === 0) return '0' + (unit ? ' ' + unit : '');
    const a = Math.abs(v);
    const txt = a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
    return txt + (unit ? ' ' + unit : '');
  }
  // A table cell carries its own unit: MiB up to 1 GiB, then GiB.
  function fmtMiB(v) {
    return (v != null && isFinite(v) && Math.abs(v) >= 1024) ? (v / 1024).toFixed(1) + ' GiB' : fmtValue(v, 'MiB');
  }
  function withAlpha(hex, a) {
    const n = parseInt(hex.slice(1), 16);
    return `rgba(${n >> 16 & 255},${n >> 8 & 255},${n & 255},${a})`;
  }

  // ---- header ----
  const run = model.run || {};
  // A whole job read from Prometheus (`report --prometheus`, docs/cluster.md): its nodes, not a run.
  const job = model.job;
  root.append(el('h1', {}, job ? trf('Job {} · {} nodes, {} GPUs', job.id, job.nodes.length, job.gpus)
    : trf('Run {} · {}', run.id, run.name || '')));
  const hdr = el('table', { class: 'header' });
  const row = (k, v) => hdr.append(el('tr', {}, el('th', {}, k), el('td', {}, v)));
  const utc = (s) => new Date(s * 1000).toISOString().replace('.000Z', 'Z');
  if (job) {
    row('Prometheus', job.prometheus);
    row(tr('Range'), trf('{} – {} ({}), a point every {}', utc(job.start_unix_s), utc(job.end_unix_s),
      fmtDur(job.duration_s), fmtDur(job.step_s)));
    row(tr('Nodes'), job.nodes.map((n) => n.ranks ? trf('{} ({} GPUs, {} ranks)', n.host, n.gpus.length, n.ranks)
      : trf('{} ({} GPUs)', n.host, n.gpus.length)).join('; '));
  } else {
    row(tr('Command'), el('code', {}, (run.command && run.command.length) ? run.command.join(' ') : `(${run.kind})`));
    row(tr('User@host'), `${run.user || '?'}@${run.host || '?'}`);
    const gpus = (run.gpus || []).map((g) => {
      const mem = g.memory_total_bytes != null ? ` · ${(g.memory_total_bytes / 2 ** 30).toFixed(0)} GiB` : '';
      return `${g.index}: ${g.name || 'GPU'}${mem}${g.used_by_job ? ' (job)' : ''}`;
    });
    row(tr('GPUs'), gpus.length ? gpus.join('; ') : tr('none seen'));
    row(tr('Start'), run.start_unix_s ? `${new Date(run.start_unix_s * 1000).toLocaleString()} (${run.start})` : '?');
    const until = { now: ' so far (still recording)', last_sample: ' up to the last stored sample (the recorder is gone)' };
    row(tr('Duration'), fmtDur(run.duration_s) + (until[run.duration_until] || ''));
    let exit = run.status || '?';
    if (run.exit_signal != null)
      exit += run.exit_signal_name && run.exit_signal_name !== `signal ${run.exit_signal}`
        ? `, ${run.exit_signal_name} (signal ${run.exit_signal})` : `, signal ${run.exit_signal}`;
    else if (run.exit_code != null) exit += `, exit status ${run.exit_code}`;
    row(tr('Status'), el('span', { class: 'status status-' + (run.status || 'unknown') }, exit));
    const labels = Object.entries(run.labels || {}).map(([k, v]) => `${k}=${v}`);
    if (labels.length) row(tr('Labels'), labels.join(', '));
    if (run.cgroup_limits) row(tr('Cgroup limits'), run.cgroup_limits);
  }
  row(tr('Samples'), `${model.ticks} ticks${model.reduced ? `, drawn in buckets of ${fmtDur(model.bucket_s)} (min / mean / max)` : ''}` +
    `, ${model.train_events} training events, ${(model.epochs || []).length} epochs`);
  // The training loop over the run (the run summary's figures), per rank when there are several.
  const train = model.train;
  const fmtStep = (v) => (v == null || !isFinite(v)) ? '—' : v < 1 ? fmtValue(v * 1000, 'ms') : fmtValue(v, 's');
  const fmtShare = (v) => (v == null || !isFinite(v)) ? '—' : (100 * v).toFixed(1) + ' %';
  const fmtRate = (v) => (v == null || !isFinite(v)) ? '—' : (v >= 100000 ? v.toFixed(0) : v.toFixed(1)) + ' samples/s';
  // Energy: the ranks' GPUs' NVML energy counter over their steps (null: unknown, never 0).
  const fmtJ = (v) => (v == null || !isFinite(v)) ? '—'
    : v >= 1e4 ? (v / 1e3).toFixed(1) + ' kJ' : (v < 1 ? v.toFixed(3) : v < 100 ? v.toFixed(1) : v.toFixed(0)) + ' J';
  const fmtWh = (j) => (j == null || !isFinite(j)) ? '—'
    : j / 3600 >= 1000 ? (j / 3.6e6).toFixed(2) + ' kWh' : (j / 3600).toFixed(j / 3600 < 1 ? 3 : j / 3600 < 10 ? 2 : 1) + ' Wh';
  const energyOf = (r) => r.energy_shared ? tr('GPU shared') : r.energy_j == null ? '—'
    : `${fmtJ(r.j_per_step)}/step · ${fmtJ(r.j_per_sample)}/sample · ${fmtWh(r.energy_j)}` +
      (r.wh_per_epoch != null ? ` (${fmtWh(r.wh_per_epoch * 3600)}/epoch)` : '');
  if (train) {
    // The run summary's words (train_summary.cpp); the collective wait only where it was measured
    // (protocol v3 senders): an older run's line is as it was.
    const parts = [fmtRate(train.samples_per_s), trf('step {} median', fmtStep(train.step_median_s)),
      trf('data wait {}', fmtShare(train.data_share))];
    if (train.comm_share != null) parts.push(trf('collective wait {}', fmtShare(train.comm_share)));
    parts.push(train.steps === 1 ? trf('{} step', train.steps) : trf('{} steps', train.steps));
    row(tr('Training'), el('span', { class: 'train-line' }, parts.join(' · ')));
    if (train.energy_j != null || train.energy_shared) row(tr('Energy'), energyOf(train));
  }
  root.append(hdr);
  if (job) {
    // Every GPU of the job over the range, node by node.
    const t = el('table', { class: 'procs gpus' }, el('tr', {}, ...[tr('Node'), 'GPU', tr('Name'), tr('Mean util'),
      tr('Peak util'), tr('Peak memory'), tr('Memory total'), tr('Mean power'), tr('Peak temp'), tr('Mean SM clock')]
      .map((h) => el('th', {}, h))));
    for (const n of job.nodes) {
      for (const g of n.gpus) {
        t.append(el('tr', { class: g.lost ? 'lost' : '' }, el('td', {}, n.host), el('td', {}, g.index + (g.lost ? tr(' (lost)') : '')),
          el('td', {}, g.name || 'GPU'), el('td', {}, fmtValue(g.mean_util_pct, '%')), el('td', {}, fmtValue(g.peak_util_pct, '%')),
          el('td', {}, fmtMiB(g.peak_mem_used_mib)), el('td', {}, fmtMiB(g.mem_total_mib)), el('td', {}, fmtValue(g.mean_power_w, 'W')),
          el('td', {}, fmtValue(g.peak_temp_c, '°C')), el('td', {}, fmtValue(g.mean_sm_clock_mhz, 'MHz'))));
      }
    }
    root.append(t);
  }
  if (train && (train.ranks || []).length > 1) {
    const t = el('table', { class: 'procs ranks' }, el('tr', {}, ...[tr('Rank'), tr('Host'), 'GPU',
      tr('Steps'), 'Samples/s', tr('Median step'), tr('p90 step'), tr('Data wait'), tr('Energy')].map((h) => el('th', {}, h))));
    for (const r of train.ranks) {
      t.append(el('tr', {}, el('td', {}, r.rank != null ? r.rank : `pid ${-1 - r.key}`), el('td', {}, r.host || '—'),
        el('td', {}, r.gpu != null ? r.gpu : '—'), el('td', {}, r.steps), el('td', {}, fmtRate(r.samples_per_s)),
        el('td', {}, fmtStep(r.step_median_s)), el('td', {}, fmtStep(r.step_p90_s)), el('td', {}, fmtShare(r.data_share)),
        el('td', {}, energyOf(r))));
    }
    root.append(t);
  }
  // Where each rank's step time went (as the Markdown report's table): data wait, collective wait,
  // compute (the rest), as shares of its step time, a stacked bar with the figures beside it in
  // words; only for ranks whose collective wait was measured (protocol v3), none for older runs.
  const split = ((train && train.ranks) || []).filter((r) => r.comm_share != null);
  if (split.length) {
    const sec = el('section', { class: 'time-split', id: 'time-split' }, el('h2', {}, tr('Where the time went')));
    const kinds = [['data', tr('Data wait')], ['comm', tr('Collective wait')], ['compute', tr('Compute')]];
    sec.append(el('p', { class: 'split-legend' }, ...kinds.map(([k, name]) =>
      el('span', { class: 'split-key' }, el('span', { class: 'split-swatch seg-' + k, 'aria-hidden': 'true' }), name))));
    for (const r of split) {
      const who = r.rank != null ? trf('rank {}', r.rank) : `pid ${-1 - r.key}`;
      const data = r.data_share != null ? r.data_share : 0;
      const shares = { data, comm: r.comm_share, compute: Math.max(0, 1 - data - r.comm_share) };
      const words = [trf('data wait {}', fmtShare(r.data_share)), trf('collective wait {}', fmtShare(r.comm_share)),
        trf('compute {}', fmtShare(shares.compute))];
      if (r.compute_mean_s != null) words.push(trf('compute per step {}', fmtStep(r.compute_mean_s)));
      const text = words.join(' · ');
      const bar = el('div', { class: 'split-bar', role: 'img', 'aria-label': `${who}: ${text}` },
        ...kinds.filter(([k]) => shares[k] > 0).map(([k, name]) => el('span', {
          class: 'seg seg-' + k, 'data-kind': k, 'data-share': String(shares[k]),
          style: `width:${(100 * shares[k]).toFixed(2)}%`, title: `${name} ${fmtShare(shares[k])}` })));
      sec.append(el('div', { class: 'split-row', 'data-rank': r.rank != null ? r.rank : '' },
        el('span', { class: 'split-who' }, who), bar, el('span', { class: 'split-text' }, text)));
    }
    root.append(sec);
  }
  for (const n of model.notes || []) root.append(el('p', { class: 'note' }, n));

  // ---- findings ----
  const findings = model.findings || [];
  const regions = {};  // chart id -> findings shaded on it
  for (const f of findings) for (const id of f.charts || []) (regions[id] = regions[id] || []).push(f);
  const fsec = el('section', { class: 'findings' }, el('h2', {}, trf('Findings ({})', findings.length)));
  if (!findings.length) fsec.append(el('p', {}, tr('Nothing found.')));
  const shown = model.findings_shown || [];
  findings.forEach((f, i) => {
    const say = shown[i] || f;
    const first = (f.charts || [])[0];
    const range = f.end_s > f.start_s ? `${fmtDur(f.start_s)} – ${fmtDur(f.end_s)}` : trf('at {}', fmtDur(f.start_s));
    const where = ((f.gpus || []).length ? ` · GPU ${f.gpus.join(', ')}` : '') + (f.host ? trf(' on {}', f.host) : '');
    const head = el('div', { class: 'finding-head' },
      el('span', { class: 'sev sev-' + f.severity }, tr(f.severity)),
      el('b', {}, `${f.code} ${say.title}`), ` · ${range}${where} `,
      first ? el('a', { href: '#chart-' + first, class: 'goto' }, tr('show on chart')) : null);
    const box = el('div', { class: 'finding sev-border-' + f.severity, id: 'finding-' + f.id }, head);
    // The finding that explains this one (its cause, listed before it): a link to it.
    const cause = f.cause ? findings.find((c) => c.code === f.cause) : null;
    if (cause) box.append(el('p', { class: 'cause' }, tr('Caused by '),
      el('a', { href: '#finding-' + cause.id }, `${cause.code} ${cause.slug}`)));
    box.append(el('p', { class: 'evidence' }, say.evidence));
    if (f.cost) {
      const basis = f.cost.basis === 'estimated' ? tr(' (estimated from the GPU side)') : '';
      box.append(el('p', { class: 'cost' }, f.cost.speedup > 0
        ? trf('Costs {} % of throughput{}: up to {}× samples/s if fixed.', Math.round(100 * f.cost.share), basis,
          f.cost.speedup.toPrecision(2))
        : tr('Costs all of the throughput: no step completes.')));
    }
    for (const st of f.stacks || []) {
      const who = st.rank >= 0 ? trf('rank {}', st.rank) : tr('process');
      const d = el('details', { class: 'stack' },
        el('summary', {}, `${who} pid ${st.pid}${st.host ? ' on ' + st.host : ''}: ${st.where || '(no Python frame)'}` +
          (st.caller ? ` (called from ${st.caller})` : '')),
        el('pre', {}, st.main_stack || ''));
      box.append(d);
    }
    box.append(el('p', { class: 'advice' }, '→ ' + say.advice));
    fsec.append(box);
  });
  root.append(fsec);

  // ---- charts ----
  const x = model.x || [];
  const epochs = model.epochs || [];
  const charts = model.charts || [];
  const csec = el('section', { class: 'charts' }, el('h2', {}, tr('Charts')));
  root.append(csec);
  // two charts a row: the figure's padding and border (2 x 5 px) and the 8-px gap come off
  const width = Math.max(360, Math.floor((Math.min(csec.clientWidth || 1200, 1600) - 8) / 2) - 12);
  let group = null, grid = null;

  function shade(u, rec) {
    const list = regions[rec.id] || [];
    const ctx = u.ctx, b = u.bbox;
    let n = 0;
    ctx.save();
    for (const f of list) {
      let x0 = u.valToPos(f.start_s, 'x', true), x1 = u.valToPos(f.end_s, 'x', true);
      if (x1 - x0 < 4) { x0 -= 2; x1 += 2; }
      x0 = Math.max(x0, b.left); x1 = Math.min(x1, b.left + b.width);
      if (x1 <= x0) continue;
      ctx.fillStyle = SEVERITY[f.severity] || SEVERITY.info;
      ctx.fillRect(x0, b.top, x1 - x0, b.height);
      n++;
    }
    ctx.restore();
    rec.shaded = n;
  }
  function markEpochs(u, rec) {
    const ctx = u.ctx, b = u.bbox;
    let n = 0;
    ctx.save();
    ctx.strokeStyle = 'rgba(90,90,90,0.7)';
    ctx.fillStyle = 'rgba(60,60,60,0.9)';
    ctx.lineWidth = 1;
    ctx.setLineDash([3, 3]);
    ctx.font = `${10 * devicePixelRatio}px sans-serif`;
    let lastLabel = -Infinity;
    for (const e of epochs) {
      // An epoch that sets the axis's end lies exactly on its edge: test the unrounded position, then
      // keep the half-pixel-aligned line inside the plot (rounding pushed it half a pixel out).
      const pos = u.valToPos(e.t, 'x', true);
      if (!(pos >= b.left - 1 && pos <= b.left + b.width + 1)) continue;
      const px = Math.min(Math.max(Math.round(pos) + 0.5, b.left + 0.5), b.left + b.width - 0.5);
      ctx.beginPath(); ctx.moveTo(px, b.top); ctx.lineTo(px, b.top + b.height); ctx.stroke();
      if (px - lastLabel > 28 * devicePixelRatio) { ctx.fillText('e' + e.epoch, px + 2, b.top + 10 * devicePixelRatio); lastLabel = px; }
      n++;
    }
    ctx.restore();
    rec.epochs = n;
  }

  // One unit per chart, said in its caption and on every tick and legend value: a MiB chart whose
  // values reach 1 GiB is drawn in GiB (its data divided by 1024), never MiB in the caption with GiB
  // ticks.
  // Likewise a step-time chart (s) whose steps all take under a second is drawn in ms.
  function displayUnit(c) {
    if (c.unit !== 'MiB' && c.unit !== 'MiB/s' && c.unit !== 's') return { unit: c.unit, scale: 1 };
    let peak = 0;
    for (const s of c.series) {
      if (s.scale === 'y2') continue;
      for (const arr of [s.mean, s.max]) if (arr) for (const v of arr) if (v != null && Math.abs(v) > peak) peak = Math.abs(v);
    }
    if (c.unit === 's') return peak < 1 ? { unit: 'ms', scale: 1000 } : { unit: 's', scale: 1 };
    return peak >= 1024 ? { unit: c.unit.replace('MiB', 'GiB'), scale: 1 / 1024 } : { unit: c.unit, scale: 1 };
  }
  const scaled = (arr, k) => (k === 1 || !arr) ? arr : arr.map((v) => v == null ? v : v * k);

  function makeChart(c) {
    const shown = displayUnit(c);
    const rec = { id: c.id, title: c.title, group: c.group, points: 0, shaded: 0, epochs: 0, unit: shown.unit,
      y_ticks: [] };
    const data = [x];
    const series = [{ label: 'time', value: (u, v) => fmtDur(v) }];
    const bands = [];
    let color = 0;
    // Stacked charts draw each series on top of the ones before it (the top line is their sum); the
    // legend still says each series' own value.
    let below = null, belowIdx = 0;
    for (const s of c.series) {
      const col = s.dash ? '#777777' : PALETTE[color++ % PALETTE.length];
      const unit = s.scale === 'y2' ? (c.y2 && c.y2.unit === '% of time' ? '%' : '') : shown.unit;
      const k = s.scale === 'y2' ? 1 : shown.scale;
      const own = scaled(s.mean, k);
      const common = { scale: s.scale === 'y2' ? 'y2' : 'y', spanGaps: !!s.spanGaps,
        value: c.stacked ? (u, v, si, i) => fmtValue(i == null ? v : own[i], unit) : (u, v) => fmtValue(v, unit) };
      if (!s.dash) for (const v of s.mean) if (v != null) rec.points++;
      if (c.stacked) {
        const top = below ? own.map((v, i) => (v == null ? null : v + (below[i] == null ? 0 : below[i]))) : own;
        data.push(top);
        series.push(Object.assign({ label: s.label, stroke: col, width: 1.25, points: { show: false },
          fill: below ? undefined : withAlpha(col, 0.35) }, common));
        if (below) bands.push({ series: [data.length - 1, belowIdx], fill: withAlpha(col, 0.35) });
        below = top;
        belowIdx = data.length - 1;
        continue;
      }
      data.push(own);
      const mean = data.length - 1;
      series.push(Object.assign({ label: s.label, stroke: col, width: s.dash ? 1 : 1.25,
        dash: s.dash ? [6, 4] : undefined, points: { show: !!s.spanGaps && c.kind !== 'train', size: 4 } }, common));
      if (s.min && s.max) {
        data.push(scaled(s.max, k), scaled(s.min, k));
        series.push(Object.assign({ label: s.label + ' (max)', stroke: withAlpha(col, 0.45), width: 0.5,
          points: { show: false }, class: 'envelope' }, common));
        series.push(Object.assign({ label: s.label + ' (min)', stroke: withAlpha(col, 0.45), width: 0.5,
          points: { show: false }, class: 'envelope' }, common));
        bands.push({ series: [mean + 1, mean + 2], fill: withAlpha(col, 0.15) });
      }
    }
    const yRange = (c.y_min != null && c.y_max != null) ? [c.y_min * shown.scale, c.y_max * shown.scale]
      : (u, lo, hi) => [Math.min(0, lo ?? 0), (hi == null || hi <= 0) ? 1 : hi * 1.08];
    // The time axis spans the epoch markers too: the last epoch often ends after the last sample (the
    // command exits right after it), and a marker outside the axis is not drawn.
    const xRange = (u, lo, hi) => {
      for (const e of epochs) {
        if (lo == null || e.t < lo) lo = e.t;
        if (hi == null || e.t > hi) hi = e.t;
      }
      return [lo, hi];
    };
    const scales = { x: { time: false, range: xRange }, y: { range: yRange } };
    const axes = [
      { values: (u, splits) => splits.map(fmtDur), size: 32 },
      // wide enough for "150 samples/s": 84 px hold a number and a unit of up to 3 characters
      { values: (u, splits) => (rec.y_ticks = splits.map((v) => fmtValue(v, shown.unit))),
        size: 84 + 7 * Math.max(0, (shown.unit || '').length - 3) },
    ];
    if (c.y2) {
      scales.y2 = { range: [c.y2.min, c.y2.max] };
      axes.push({ scale: 'y2', side: 1, grid: { show: false }, size: 46,
        values: (u, splits) => splits.map((v) => v + '%') });
    }
    const wrap = el('figure', { class: 'chart', id: 'chart-' + c.id, 'data-chart': c.id });
    wrap.append(el('figcaption', {}, `${c.title}${shown.unit ? ' (' + shown.unit + ')' : ''}`));
    grid.append(wrap);
    const opts = {
      width, height: 220, series, bands, scales, axes,
      legend: { live: true },
      cursor: { sync: { key: 'trainmon' }, drag: { x: true, y: false } },
      hooks: { drawClear: [(u) => shade(u, rec)], draw: [(u) => markEpochs(u, rec)] },
    };
    rec.plot = new uPlot(opts, data, wrap);
    Object.defineProperty(rec, 'plot', { enumerable: false });
    for (const e of wrap.querySelectorAll('.u-legend .u-series')) {
      const label = e.textContent || '';
      if (label.includes('(max)') || label.includes('(min)')) e.classList.add('envelope-legend');
    }
    state.charts.push(rec);
  }

  if (!charts.length) csec.append(el('p', {}, tr('No samples to draw.')));
  for (const c of charts) {
    if (c.group !== group) {
      group = c.group;
      csec.append(el('h3', {}, group));
      grid = el('div', { class: 'chart-grid' });
      csec.append(grid);
    }
    try {
      makeChart(c);
    } catch (err) {
      state.errors.push(`${c.id}: ${err}`);
      console.error('trainmon report: chart', c.id, err);
    }
  }
  state.renderMs = performance.now() - t0;

  // ---- processes, batch size ----
  const procs = model.processes || [];
  const psec = el('section', { class: 'processes' }, el('h2', {}, tr('Processes')));
  // The driver's process lists failed: the table is not every process that held a GPU.
  const unknown = model.processes_unknown || [];
  for (const u of unknown)
    psec.append(el('p', { class: 'warn' }, `GPU ${u.gpu}: processes unknown in ${u.samples_unknown} of ${u.samples} samples: ${u.reason}`));
  if (!procs.length && !unknown.length) psec.append(el('p', {}, tr('No processes recorded.')));
  else {
    const t = el('table', { class: 'procs' }, el('tr', {}, ...['PID', 'Command', 'In job', 'Peak RSS', 'CPU time',
      'Peak GPU memory', 'GPUs'].map((h) => el('th', {}, h))));
    for (const p of procs) {
      t.append(el('tr', { class: p.in_job ? 'job' : 'other' }, el('td', {}, p.pid),
        el('td', { title: p.cmdline || '' }, el('code', {}, (p.cmdline || p.comm || '').slice(0, 80)),
          p.host_visibility === 'exited' ? ' (exited)'
            : p.host_visibility === 'not_visible' ? ' (not visible from here)' : ''),
        el('td', {}, p.in_job ? 'yes' : 'no'), el('td', {}, fmtMiB(p.peak_rss_mib)),
        el('td', {}, p.cpu_time_s == null ? '—' : fmtDur(p.cpu_time_s)),
        el('td', {}, fmtMiB(p.peak_gpu_mem_mib)), el('td', {}, (p.gpus || []).join(', ') || '—')));
    }
    psec.append(t);
  }
  if (!job) root.append(psec);  // a job's report has no process table (Prometheus has none)
  const bsec = el('section', { class: 'batch' }, el('h2', {}, tr('Batch size')));
  const advice = model.batch_advice || [];
  if (!advice.length) bsec.append(el('p', {}, tr('No advice: the training process sent no batch size with PyTorch memory figures (D22).')));
  for (const a of advice) bsec.append(el('p', {}, a.evidence), el('p', { class: 'advice' }, '→ ' + a.advice));
  if (!job || advice.length) root.append(bsec);
  root.append(el('footer', {}, `trainmon report format ${model.version}`));

  // Finding links: scroll to the chart and flash it.
  root.addEventListener('click', (ev) => {
    const a = ev.target.closest && ev.target.closest('a.goto');
    if (!a) return;
    const target = document.getElementById(a.getAttribute('href').slice(1));
    if (target) {
      target.classList.remove('flash');
      void target.offsetWidth;
      target.classList.add('flash');
    }
  });
  requestAnimationFrame(() => { state.ready = true; });
})();
