// memreplay report: draws the data memreplay embedded in this page (script#memreplay-data) with
// uPlot (the timeline) and a canvas (the segment map). Everything runs before the load event, so
// a headless browser's DOM dump shows the finished page; body[data-state] says how it went.
"use strict";
(function () {
  const errors = [];
  function showErrors() {
    const box = document.getElementById("errors");
    box.hidden = errors.length === 0;
    box.textContent = errors.join("\n");
    document.body.dataset.errors = String(errors.length);
  }
  window.addEventListener("error", (e) => { errors.push(String(e.message)); showErrors(); });

  const KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;
  function fmtBytes(v) {
    if (v == null || isNaN(v)) return "";
    const a = Math.abs(v);
    if (a >= GiB) return (v / GiB).toFixed(2) + " GiB";
    if (a >= MiB) return (v / MiB).toFixed(1) + " MiB";
    if (a >= KiB) return (v / KiB).toFixed(1) + " KiB";
    return v.toFixed(0) + " B";
  }
  const fmtPct = (f) => (f * 100).toFixed(1) + "%";
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }
  function table(head, rows, textColumns) {
    const t = el("table");
    t.append(el("tr", {}, ...head.map((h, i) => el("th", { class: textColumns.includes(i) ? "text" : "" }, h))));
    for (const r of rows) {
      const tr = el("tr", r.cls ? { class: r.cls } : {});
      r.cells.forEach((c, i) => tr.append(el("td", { class: textColumns.includes(i) ? "text" : "" }, c)));
      t.append(tr);
    }
    return t;
  }

  // A packed chunk (results/report_series.h, encode_series): base64 of zlib of LEB128 varints, each
  // zigzag(delta) * 2 + run, followed by the repeat count when run is 1.
  function decode(b64) {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const raw = fflate.unzlibSync(bytes);
    let out = new Float64Array(1024);
    let n = 0, acc = 0, i = 0;
    const next = () => {
      let v = 0, scale = 1, b;
      do { b = raw[i++]; v += (b & 0x7f) * scale; scale *= 128; } while (b & 0x80);
      return v;
    };
    while (i < raw.length) {
      const v = next(), run = v % 2, zz = (v - run) / 2;
      const delta = zz % 2 === 1 ? -(zz + 1) / 2 : zz / 2;
      const times = run ? next() + 1 : 1;
      if (n + times > out.length) { const grown = new Float64Array(Math.max(out.length * 2, n + times)); grown.set(out); out = grown; }
      for (let k = 0; k < times; k++) { acc += delta; out[n++] = acc; }
    }
    return out.subarray(0, n);
  }

  // Decoded chunks, most recently used last; old ones are dropped so memory stays bounded at any
  // trace length (a chunk decodes in about a millisecond).
  const chunkCache = new Map();
  const kCachedChunks = 256;
  function cached(key, make) {
    let v = chunkCache.get(key);
    if (v) { chunkCache.delete(key); chunkCache.set(key, v); return v; }
    v = make();
    chunkCache.set(key, v);
    if (chunkCache.size > kCachedChunks) chunkCache.delete(chunkCache.keys().next().value);
    return v;
  }

  // One series at every level (results/report_series.h): level 0 exact values, level k the
  // min/max of buckets of factor^k events. `plus`: a series whose level-0 values are added to this
  // one's (allocated is packed as its excess over requested).
  function LevelSeries(id, packed, plus) {
    this.id = id; this.packed = packed; this.plus = plus; this.n = packed.n;
  }
  LevelSeries.prototype.chunk = function (level, c) {
    return cached(this.id + "/" + level + "/" + c, () => {
      const p = this.packed.levels[level][c];
      if (level > 0) return { min: decode(p.min), max: decode(p.max) };
      const v = decode(p);
      if (this.plus) { const base = this.plus.chunk(0, c).min; for (let k = 0; k < v.length; k++) v[k] += base[k]; }
      return { min: v, max: v };
    });
  };
  // [min, max] over entries [j0, j1) of `level`, or null past the series' end.
  LevelSeries.prototype.range = function (level, j0, j1, chunk) {
    let lo = Infinity, hi = -Infinity;
    for (let j = j0; j < j1; ) {
      const c = Math.floor(j / chunk), part = this.packed.levels[level][c];
      if (part === undefined) break;
      const v = this.chunk(level, c), end = Math.min(j1, (c + 1) * chunk);
      for (let k = j - c * chunk; k < end - c * chunk && k < v.min.length; k++) {
        if (v.min[k] < lo) lo = v.min[k];
        if (v.max[k] > hi) hi = v.max[k];
      }
      j = end;
    }
    return lo === Infinity ? null : [lo, hi];
  };

  const data = JSON.parse(document.getElementById("memreplay-data").textContent);
  const policies = data.policies;
  const colours = ["#1f6feb", "#d9480f", "#2b8a3e", "#9c36b5", "#c2255c", "#0b7285", "#e67700", "#5f3dc4"];

  document.getElementById("title").textContent = "memreplay report: " + data.trace;
  document.getElementById("subtitle").textContent =
    policies.length + " policies, " + data.series.points.toLocaleString() + " replayed events" +
    (data.capacity ? ", capacity " + fmtBytes(data.capacity) : "") + (data.complete ? "" : " — INCOMPLETE TRACE");

  // ---- advice ----
  // "fits in X (fails at Y)" from a capacity search (results/fit_scan.h), digits enough to tell them apart.
  // Two byte counts in one unit, with more decimals while they would read the same (results/units.h).
  function fmtBytesApart(x, y) {
    const big = Math.max(x, y), unit = big >= GiB ? [GiB, " GiB"] : big >= MiB ? [MiB, " MiB"] : big >= KiB ? [KiB, " KiB"] : [1, " B"];
    for (let d = unit[0] === 1 ? 0 : 2; d <= 6; d++) {
      const a = (x / unit[0]).toFixed(d) + unit[1], b = (y / unit[0]).toFixed(d) + unit[1];
      if (a !== b || x === y) return [a, b];
    }
    return [x.toLocaleString() + " B", y.toLocaleString() + " B"];
  }
  function fitText(fit) {
    if (!fit) return "";
    const [a, b] = fmtBytesApart(fit.smallest_fit_bytes, fit.fails_at_bytes);
    return "fits in " + a + " (fails at " + b + ")";
  }
  function drawAdvice() {
    const a = data.advice;
    const body = document.getElementById("advice-body");
    const cur = a.current;
    body.append(el("p", {}, "Now (" + cur.policy + (data.capacity ? " at capacity " + fmtBytes(data.capacity) : "") + "): " +
      (cur.oom ? "OUT OF MEMORY at replay event " + cur.oom_at_event.toLocaleString()
               : "reserved peak " + fmtBytes(cur.reserved_peak) + ", requested peak " + fmtBytes(cur.requested_peak) + " (the floor)") +
      ", device calls " + cur.device_calls.toLocaleString() + (cur.fit ? ", " + fitText(cur.fit) : "") + "."));
    const list = el("ol", { class: "advice" });
    if (a.items.length === 0) list.append(el("li", {}, "Nothing to change: no setting tried lowers the reserved peak or the device calls."));
    for (const item of a.items) {
      const li = el("li", {}, el("span", { class: "title" }, item.title));
      if (item.paste) {
        const code = el("code", {}, item.paste);
        const copy = el("button", { class: "copy", type: "button" }, "copy");
        copy.addEventListener("click", () => navigator.clipboard && navigator.clipboard.writeText(item.paste));
        li.append(el("br"), code, copy);
      }
      li.append(el("br"), item.evidence);
      list.append(li);
    }
    body.append(list);

    document.getElementById("policy-table").append(table(
      ["policy", "reserved peak", "reserved ÷ requested", "requested peak", "unallocated at peak ¹", "free-space fragmentation ²", "device calls ³", "OOM"],
      policies.map((p) => ({
        cls: p.metrics.oom_at_event != null ? "oom" : (p.starred ? "best" : ""),
        cells: [(p.starred ? "* " : "") + p.policy, fmtBytes(p.metrics.reserved_peak), p.metrics.overhead.toFixed(3), fmtBytes(p.metrics.requested_peak),
          fmtPct(p.metrics.unallocated_at_peak), fmtPct(p.metrics.free_fragmentation_at_peak), p.metrics.device_calls.toLocaleString(),
          p.metrics.oom_at_event != null ? "OOM at event " + p.metrics.oom_at_event.toLocaleString() +
            (p.metrics.ooms > 1 ? " (" + p.metrics.ooms + " in all)" : "") + " (numbers partial)" : "-"],
      })), [0, 7]));
    const notes = ["¹ 1 − allocated/reserved at the peak: of the moments reserved memory stands at its peak, the first with the most allocated.",
      "² 1 − largest free range ÷ all free bytes at that moment: how split the free space is, not how much of it there is.",
      "³ " + data.device_calls_definition + ".",
      policies.length > 1 ? data.star_rule + "." : ""];
    for (const p of policies) if (p.reserves_up_front) notes.push(p.reserves_up_front + ".");
    for (const n of notes) if (n) document.getElementById("policy-table").append(el("p", { class: "hint" }, n));

    const sizes = Object.keys(cur.fits_on_gpu).sort((a, b) => parseFloat(a) - parseFloat(b));
    const rows = [cur].concat(a.candidates).map((c) => ({
      cls: c.oom ? "oom" : "",
      cells: [c.policy, c.paste, c.fit ? fitText(c.fit) : "not searched"]
        .concat(sizes.map((s) => c.fits_on_gpu[s] == null ? "?" : (c.fits_on_gpu[s] ? "yes" : "no"))),
    }));
    document.getElementById("gpu-table").append(table(["setting", "to paste", "smallest fit"].concat(sizes), rows, [0, 1, 2]));
    document.getElementById("gpu-table").append(el("p", { class: "hint" },
      "Smallest fit: the capacity search at a resolution of " + fmtBytes(a.fit_resolution_bytes) + ". A GPU counts as fitting when every capacity tested at or above the search's answer fitted (fitting need not be monotonic). The CUDA context and other libraries take some more memory."));
  }

  // ---- timeline ----
  let timelineInk = 0;
  function drawTimeline() {
    // Entry i of every series is replayed event x0 + i.
    const n = data.series.points, chunk = data.series.chunk, factor = data.series.level_factor, x0 = data.series.first_event;
    const requested = new LevelSeries("requested", data.series.requested, null);
    const series = [{ label: "requested", values: requested, stroke: "#868e96", dash: [], show: true }];
    // A policy that reserves a fixed share of the device up front (bfc, rmm_arena) would flatten every
    // other line: its lines start hidden (the legend shows them again; the log scale shows all at once).
    const smallest = Math.max(1, Math.min(...policies.map((p) => p.metrics.reserved_peak)));
    const hidden = policies.filter((p) => p.metrics.reserved_peak > 8 * smallest);
    policies.forEach((p, i) => {
      const c = colours[i % colours.length], show = !hidden.includes(p);
      series.push({ label: p.policy + " reserved", values: new LevelSeries("r" + i, p.reserved, null), stroke: c, dash: [], show });
      series.push({ label: p.policy + " allocated", values: new LevelSeries("a" + i, p.allocated, requested), stroke: c, dash: [6, 4], show });
    });
    document.getElementById("timeline-note").textContent = hidden.length === 0 ? "" :
      "Hidden at first: " + hidden.map((p) => p.policy + " (reserved peak " + fmtBytes(p.metrics.reserved_peak) + ")").join(", ") +
      ", which would flatten the other lines. Click a name in the legend to show it, or use the log scale.";
    // The capacity line: the cap the replays ran under; without one, the device's memory, drawn where
    // a policy that takes it up front reaches it.
    const capacityLine = data.capacity != null ? { bytes: data.capacity, label: "capacity " + fmtBytes(data.capacity) }
      : hidden.length > 0 ? { bytes: data.device_memory, label: "device memory " + fmtBytes(data.device_memory) } : null;
    const ooms = policies.map((p, i) => ({ at: p.metrics.oom_at_event, colour: colours[i % colours.length], policy: p.policy }))
      .filter((o) => o.at != null);
    const levels = data.series.requested.levels.length;
    const full = { min: x0, max: x0 + Math.max(1, n - 1) };
    const container = document.getElementById("timeline-chart");
    const width = Math.max(600, (container.clientWidth || document.documentElement.clientWidth || 1200) - 8);
    const timeAt = (i) => {
      const c = Math.floor(i / chunk), part = data.series.time_ns[c];
      return part === undefined ? null : cached("t/" + c, () => ({ min: decode(part) })).min[i - c * chunk];
    };

    // The points to draw for events [min, max] on `pixels` pixels: every event when they are few
    // (exact values), otherwise the coarsest level that still has several buckets per pixel,
    // grouped to about one per pixel, each drawn as its maximum then its minimum.
    function window_(min, max, pixels) {
      const i0 = Math.max(0, Math.floor(min - x0) - 1), i1 = Math.min(n, Math.ceil(max - x0) + 2);
      let level = 0, bucket = 1;
      while ((i1 - i0) / bucket > 4 * pixels && level + 1 < levels) { level++; bucket *= factor; }
      const out = [[]].concat(series.map(() => []));
      if (level === 0) {
        for (let i = i0; i < i1; i++) {
          out[0].push(x0 + i);
          series.forEach((s, k) => {
            if (i >= s.values.n) { out[k + 1].push(null); return; }
            const c = Math.floor(i / chunk);
            out[k + 1].push(s.values.chunk(0, c).min[i - c * chunk]);
          });
        }
        return out;
      }
      const j0 = Math.floor(i0 / bucket), j1 = Math.ceil(i1 / bucket);
      const group = Math.max(1, Math.floor((j1 - j0) / pixels));
      for (let j = j0; j < j1; j += group) {
        const a = j * bucket;
        out[0].push(x0 + a, x0 + a + (group * bucket) / 2);
        series.forEach((s, k) => {
          const r = s.values.range(level, j, Math.min(j1, j + group), chunk);
          out[k + 1].push(r ? r[1] : null, r ? r[0] : null);
        });
      }
      return out;
    }

    // The capacity line and a marker at each policy's first OOM, over the drawn series.
    function drawMarks(u) {
      const ctx = u.ctx, b = u.bbox, px = uPlot.pxRatio || 1;
      let drawn = 0;
      ctx.save();
      ctx.font = (11 * px).toFixed(0) + "px system-ui, sans-serif";
      if (capacityLine) {
        const y = u.valToPos(capacityLine.bytes, "y", true);
        if (y >= b.top - 1 && y <= b.top + b.height + 1) {
          ctx.strokeStyle = ctx.fillStyle = "#c92a2a";
          ctx.setLineDash([8 * px, 4 * px]);
          ctx.lineWidth = 1.5 * px;
          ctx.beginPath(); ctx.moveTo(b.left, y); ctx.lineTo(b.left + b.width, y); ctx.stroke();
          ctx.textAlign = "right";
          ctx.fillText(capacityLine.label, b.left + b.width - 6 * px, Math.max(b.top + 12 * px, y - 4 * px));
          ctx.textAlign = "left";
          document.body.dataset.capacityLine = capacityLine.label;
        }
      }
      for (const o of ooms) {
        const x = u.valToPos(o.at, "x", true);
        if (x < b.left || x > b.left + b.width) continue;
        ctx.strokeStyle = ctx.fillStyle = o.colour;
        ctx.setLineDash([3 * px, 3 * px]);
        ctx.lineWidth = 1.5 * px;
        ctx.beginPath(); ctx.moveTo(x, b.top); ctx.lineTo(x, b.top + b.height); ctx.stroke();
        ctx.fillText("OOM: " + o.policy, x + 4 * px, b.top + (14 + 13 * drawn) * px);
        drawn++;
      }
      ctx.restore();
      document.body.dataset.oomMarkers = String(drawn);
    }

    let refilling = false;
    function makeOptions(log) {
      return {
        width, height: 440,
        scales: { x: { time: false }, y: log ? { distr: 4, asinh: MiB, log: 2, range: (u, lo, hi) => [0, hi * 1.5 || 1] }
                                             : { range: (u, lo, hi) => [0, hi * 1.05 || 1] } },
        axes: [
          { label: "replayed event (alloc and free)", values: (u, ticks) => ticks.map((t) => t.toLocaleString()) },
          { label: "bytes" + (log ? " (log scale)" : ""), values: (u, ticks) => ticks.map(fmtBytes), size: 86 },
        ],
        series: [{
          label: "event",
          value: (u, v) => {
            if (v == null) return "";
            const t = timeAt(Math.max(0, Math.min(n - 1, Math.round(v) - x0)));
            return Math.round(v).toLocaleString() + (t == null ? "" : " (" + (t / 1e6).toFixed(1) + " ms)");
          },
        }].concat(series.map((s) => ({ label: s.label, stroke: s.stroke, dash: s.dash, width: 1.5, show: s.show, value: (u, v) => fmtBytes(v), spanGaps: false }))),
        cursor: { drag: { x: true, y: false } },
        hooks: {
          setScale: [(u, key) => {
            if (key !== "x" || refilling) return;
            refilling = true;
            const min = u.scales.x.min, max = u.scales.x.max;
            // New data resets uPlot's visible index window (false would keep the old data's indices).
            u.setData(window_(min, max, width));
            u.setScale("x", { min, max });
            refilling = false;
          }],
          setSeries: [(u, i, o) => { if (i > 0 && o.show != null) series[i - 1].show = o.show; }],
          // uPlot draws in a microtask: the draw hook counts the ink (evidence for the headless test that
          // lines were drawn) and marks the page finished.
          draw: [(u) => {
            drawMarks(u);
            // First paint: the chart is drawn (the browser shows it when this task ends); the ink count
            // below is the test's evidence, not part of the page's work.
            const drawnMs = performance.now().toFixed(0);
            // Opaque pixels inside the plot area: the series' lines (the grid is drawn nearly transparent).
            const b = u.bbox, img = u.ctx.getImageData(b.left, b.top, Math.max(1, b.width), Math.max(1, b.height)).data;
            timelineInk = 0;
            for (let i = 3; i < img.length; i += 4) if (img[i] > 200) timelineInk++;
            document.body.dataset.timelineInk = String(timelineInk);
            document.body.dataset.timelineShown = u.data[0].length + " " + u.scales.x.min + " " + u.scales.x.max;
            document.body.dataset.yAxisLabel = u.axes[1].label;
            // #probe=EVENT: the values drawn at that event, for the test that zoomed values are exact.
            const probe = /probe=(\d+)/.exec(location.hash);
            if (probe) {
              const at = u.data[0].indexOf(Number(probe[1]));
              document.body.dataset.timelineProbe = at < 0 ? "none" : u.data.slice(1).map((d) => d[at] == null ? "-" : String(d[at])).join(" ");
            }
            if (document.body.dataset.state === "drawing") {
              document.body.dataset.drawnMs = drawnMs;
              document.body.dataset.state = timelineInk > 0 ? "drawn" : "empty";
            }
          }],
        },
      };
    }
    let plot = null;
    // The log scale shows every line; the linear one hides again those that would flatten the rest.
    function build(log) {
      series.forEach((s, k) => { if (k > 0) s.show = log || !hidden.includes(policies[Math.floor((k - 1) / 2)]); });
      const range = plot ? { min: plot.scales.x.min, max: plot.scales.x.max } : full;
      if (plot) plot.destroy();
      plot = new uPlot(makeOptions(log), window_(range.min, range.max, width), container);
      plot.over.addEventListener("dblclick", () => plot.setScale("x", full));
      window.memreplayTimeline = plot;
      document.body.dataset.timelineScale = log ? "log" : "linear";
    }
    const controls = document.getElementById("timeline-controls");
    const scaleButtons = ["linear", "log"].map((name) => {
      const b = el("button", { type: "button", id: "scale-" + name }, name + " scale");
      b.addEventListener("click", () => {
        scaleButtons.forEach((x) => x.classList.toggle("selected", x === b));
        build(name === "log");
      });
      controls.append(b);
      return b;
    });
    scaleButtons[0].classList.add("selected");
    build(/scale=log/.test(location.hash));
    if (/scale=log/.test(location.hash)) { scaleButtons[0].classList.remove("selected"); scaleButtons[1].classList.add("selected"); }
  }

  // ---- segment map ----
  let segmentInk = 0;
  function stackColour(index) {
    if (index < 0) return "#74a9cf";
    const h = (index * 137.508) % 360;
    return "hsl(" + h.toFixed(0) + ",55%,55%)";
  }
  function drawSegments(which) {
    const p = policies[which];
    const peak = p.peak;
    const canvas = document.getElementById("segment-canvas");
    const summary = document.getElementById("segment-summary");
    const segs = peak.segments.slice().sort((a, b) => b[1] - a[1]);
    const shown = segs.slice(0, 400);
    const width = Math.max(600, Math.min(1400, (document.documentElement.clientWidth || 1200) - 60));
    const rowH = Math.max(3, Math.min(16, Math.floor(640 / Math.max(1, shown.length))));
    canvas.width = width; canvas.height = Math.max(40, shown.length * rowH + 4);
    const ctx = canvas.getContext("2d");
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    const label = 150, barW = width - label - 10;
    const maxSize = shown.length ? shown[0][1] : 1;
    let free = 0, largestFree = 0;
    for (const s of segs) {
      let cursor = 0;
      for (const b of s[2]) { const gap = b[0] - cursor; if (gap > 0) { free += gap; largestFree = Math.max(largestFree, gap); } cursor = b[0] + b[1]; }
      if (s[1] > cursor) { free += s[1] - cursor; largestFree = Math.max(largestFree, s[1] - cursor); }
    }
    summary.textContent = peak.found
      ? p.policy + " at replay event " + peak.replay_event.toLocaleString() + ": " + segs.length + " segments, reserved " +
        fmtBytes(peak.reserved) + ", allocated " + fmtBytes(peak.allocated) + ", requested " + fmtBytes(peak.requested) +
        ", free " + fmtBytes(free) + " (largest free range " + fmtBytes(largestFree) + ")" +
        (segs.length > shown.length ? "; the " + shown.length + " largest segments drawn" : "")
      : p.policy + ": the peak happened inside an allocation (a retry), not between events; no state to draw";
    ctx.font = "11px system-ui, sans-serif";
    shown.forEach((s, r) => {
      const y = r * rowH + 2, w = Math.max(1, (s[1] / maxSize) * barW);
      ctx.fillStyle = "#e9ecef";
      ctx.fillRect(label, y, w, rowH - 1);
      for (const b of s[2]) {
        ctx.fillStyle = stackColour(b[3]);
        ctx.fillRect(label + (b[0] / maxSize) * barW, y, Math.max(0.5, (b[1] / maxSize) * barW), rowH - 1);
      }
      if (rowH >= 10) { ctx.fillStyle = "#1d232a"; ctx.fillText(fmtBytes(s[1]), 4, y + rowH - 3); }
    });
    drawSegmentLegend(peak);
    const img = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    segmentInk = 0;
    for (let i = 3; i < img.length; i += 16) if (img[i] > 0) segmentInk++;
    document.body.dataset.segmentInk = String(segmentInk);

    const tip = document.getElementById("segment-tip");
    canvas.onmousemove = (e) => {
      const rect = canvas.getBoundingClientRect();
      const x = (e.clientX - rect.left) * (canvas.width / rect.width), y = (e.clientY - rect.top) * (canvas.height / rect.height);
      const r = Math.floor((y - 2) / rowH), s = shown[r];
      if (!s || x < label) { tip.hidden = true; return; }
      const off = ((x - label) / barW) * maxSize;
      if (off > s[1]) { tip.hidden = true; return; }
      let text = "segment 0x" + s[0].toString(16) + ", " + fmtBytes(s[1]) + ", " + s[2].length + " live blocks\n";
      const b = s[2].find((b) => off >= b[0] && off < b[0] + b[1]);
      if (b) {
        text += "block at +" + fmtBytes(b[0]) + ": " + fmtBytes(b[1]) + " (requested " + fmtBytes(b[2]) + ")";
        if (b[3] >= 0) text += "\n" + data.stacks[b[3]].join("\n");
      } else text += "free";
      tip.textContent = text;
      tip.style.left = e.clientX + 14 + "px"; tip.style.top = e.clientY + 14 + "px";
      tip.hidden = false;
    };
    canvas.onmouseleave = () => { tip.hidden = true; };
  }
  // What the colours of the segment map mean: free, no stack, and the stacks that own the most bytes.
  function drawSegmentLegend(peak) {
    const legend = document.getElementById("segment-legend");
    legend.textContent = "";
    const entry = (colour, text) => el("span", { class: "entry" }, el("span", { class: "swatch", style: "background:" + colour }), text);
    legend.append(entry("#e9ecef", "free"), entry(stackColour(-1), "no stack recorded"));
    for (const s of (peak.top_stacks || []).slice(0, 8))
      if (s.stack >= 0) legend.append(entry(stackColour(s.stack), fmtBytes(s.bytes) + "  " + (s.frames[0] || "")));
    document.body.dataset.legendEntries = String(legend.children.length);
  }
  function drawSegmentControls() {
    const controls = document.getElementById("segment-controls");
    const buttons = policies.map((p, i) => {
      const b = el("button", { type: "button" }, p.policy);
      b.addEventListener("click", () => { buttons.forEach((x) => x.classList.remove("selected")); b.classList.add("selected"); drawSegments(i); });
      controls.append(b);
      return b;
    });
    buttons[0].classList.add("selected");
    drawSegments(0);
  }

  // ---- stacks ----
  function drawStacks() {
    const body = document.getElementById("stacks-body");
    for (const p of policies) {
      body.append(el("h3", {}, p.policy + " (reserved peak " + fmtBytes(p.metrics.reserved_peak) + ")"));
      const top = p.peak.top_stacks || [];
      if (top.length === 0) { body.append(el("p", { class: "hint" }, "No live blocks at the peak.")); continue; }
      body.append(table(["requested bytes", "blocks", "stack (innermost first)"],
        top.map((s) => ({ cells: [fmtBytes(s.bytes), s.blocks, el("div", { class: "frames" }, s.frames.length ? s.frames.slice(0, 6).join("\n") : "(no stack recorded)")] })), [2]));
    }
  }

  // #view=timeline shows one view; #zoom=FROM-TO zooms the timeline to those replayed events.
  function applyView() {
    const m = /view=(\w+)/.exec(location.hash);
    document.body.dataset.view = m ? m[1] : "all";
    const z = /zoom=(\d+)-(\d+)/.exec(location.hash);
    if (z && window.memreplayTimeline) window.memreplayTimeline.setScale("x", { min: Number(z[1]), max: Number(z[2]) });
  }
  window.addEventListener("hashchange", applyView);

  // How long each part took (ms since navigation start), for the report's own performance test.
  const stages = [];
  const stage = (name) => stages.push(name + ":" + performance.now().toFixed(0));
  try {
    stage("script");
    drawAdvice();
    drawTimeline();
    stage("timeline");
    drawSegmentControls();
    stage("segments");
    drawStacks();
    stage("stacks");
    document.body.dataset.stages = stages.join(" ");
    applyView();
    document.body.dataset.state = "drawing";  // the timeline's draw hook finishes it
  } catch (e) {
    errors.push(String(e && e.stack || e));
    document.body.dataset.state = "failed";
  }
  showErrors();
})();
