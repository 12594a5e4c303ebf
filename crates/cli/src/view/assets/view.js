// h5chunk view: the page. The CLI reads the file and answers JSON (/api/tree, /api/info,
// /api/data, /api/refresh); this script renders it: the tree (keyboard navigation), a
// dataset's metadata, attributes and statistics, a line plot of 1-D data, an image of a 2-D
// slice of n-D data with a colour scale and sliders for the other dimensions, and, for a
// dataset that can grow, polling that follows a SWMR writer.
// What was plotted last is kept in #plotted (JSON) for tests; body[data-ready] counts renders.
"use strict";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const POLL_MS = Math.max(100, Number(params.get("poll")) || 250);
const LINE_POINTS = 20000;
const IMAGE_SIDE = 1024;
// A 2-D dataset of at most this many columns (a logger's rows of a few values) is drawn as
// one line per column rather than as an image.
const LINE_COLUMNS = 16;
const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d"];

const asLines = (info) => info.shape.length === 2 && info.shape[1] <= LINE_COLUMNS;

const state = { info: null, slider: [], timer: null, version: 0, live: false };

async function api(route, query) {
  const r = await fetch(`/api/${route}?` + new URLSearchParams(query || {}));
  const j = await r.json();
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function fmt(v) {
  if (v == null || Number.isNaN(v)) return "nan";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return String(+v.toPrecision(6));
}

const dims = (s) => (s == null ? "null" : "(" + s.map((d) => (d == null ? "∞" : d)).join(", ") + (s.length === 1 ? ",)" : ")"));

function showError(e) {
  const p = $("error");
  p.hidden = !e;
  p.textContent = e ? String(e.message || e) : "";
}

// ---------------------------------------------------------------- the tree

function treeItem(node, depth) {
  const li = el("li", { role: "treeitem", tabindex: "-1", "data-path": node.path || "", "data-kind": node.kind });
  const icon = { group: "▣", dataset: "▤", link: "↪", error: "!" }[node.kind] || "·";
  const row = el("div", { class: "row" },
    el("span", { class: "twisty", text: node.children && node.children.length ? "▾" : "" }),
    el("span", { class: "icon " + node.kind, text: icon }),
    el("span", { class: "name", text: node.name }),
    node.note ? el("span", { class: "note", text: node.note, title: node.note }) : null);
  li.append(row);
  if (node.children && node.children.length) {
    li.setAttribute("aria-expanded", depth < 3 ? "true" : "false");
    const ul = el("ul", { role: "group" });
    for (const c of node.children) ul.append(treeItem(c, depth + 1));
    li.append(ul);
    row.querySelector(".twisty").textContent = depth < 3 ? "▾" : "▸";
  }
  row.addEventListener("click", (ev) => {
    if (ev.target.classList.contains("twisty")) toggle(li);
    focusItem(li);
  });
  return li;
}

function toggle(li, open) {
  if (!li.hasAttribute("aria-expanded")) return false;
  const now = li.getAttribute("aria-expanded") === "true";
  const next = open === undefined ? !now : open;
  li.setAttribute("aria-expanded", String(next));
  li.querySelector(":scope > .row > .twisty").textContent = next ? "▾" : "▸";
  return now !== next;
}

const visibleItems = () => [...$("tree").querySelectorAll("li")].filter((li) => li.offsetParent !== null);

let openTimer = null;
function focusItem(li, now) {
  for (const x of $("tree").querySelectorAll("li[tabindex='0']")) x.tabIndex = -1;
  li.tabIndex = 0;
  li.focus();
  for (const x of $("tree").querySelectorAll("li[aria-selected]")) x.removeAttribute("aria-selected");
  li.setAttribute("aria-selected", "true");
  clearTimeout(openTimer);
  // Selection follows focus, a moment later, so holding an arrow key does not read every object.
  openTimer = setTimeout(() => openObject(li.dataset.path), now ? 0 : 120);
}

function onTreeKey(ev) {
  const items = visibleItems();
  const li = document.activeElement.closest("li");
  if (!li) return;
  const i = items.indexOf(li);
  let to = null;
  switch (ev.key) {
    case "ArrowDown": to = items[i + 1]; break;
    case "ArrowUp": to = items[i - 1]; break;
    case "Home": to = items[0]; break;
    case "End": to = items[items.length - 1]; break;
    case "ArrowRight":
      if (!toggle(li, true)) to = li.querySelector(":scope > ul > li");
      break;
    case "ArrowLeft":
      if (!toggle(li, false)) to = li.parentElement.closest("li");
      break;
    case "Enter": case " ": focusItem(li, true); break;
    default: return;
  }
  ev.preventDefault();
  if (to) focusItem(to);
}

function findItem(path) {
  return [...$("tree").querySelectorAll("li")].find((li) => li.dataset.path === path);
}

function firstDataset(node) {
  if (node.kind === "dataset") return node.path;
  for (const c of node.children || []) {
    const p = firstDataset(c);
    if (p) return p;
  }
  return null;
}

// ---------------------------------------------------------------- an object

async function openObject(path) {
  if (!path) return;
  stopFollowing();
  const version = ++state.version;
  showError(null);
  if (decodeURIComponent(location.hash.slice(1)) !== path) history.replaceState(null, "", "#" + encodeURIComponent(path));
  $("title").textContent = path;
  let info;
  try {
    info = await api("info", { path });
  } catch (e) {
    showError(e);
    return;
  }
  if (version !== state.version) return;
  state.info = info;
  renderMeta(info);
  renderAttrs(info.attrs || []);
  $("viz").hidden = true;
  $("values-card").hidden = true;
  $("stats").replaceChildren();
  $("stats-card").hidden = info.kind !== "dataset";
  if (info.kind !== "dataset" || info.null) {
    markReady();
    return;
  }
  if (!info.numeric) {
    await showText(info, version);
    return;
  }
  setupControls(info);
  await draw(version);
  if (growable(info)) startFollowing(version);
}

function growable(info) {
  return info.maxshape.some((m, i) => m == null || m > info.shape[i]);
}

function renderMeta(info) {
  const rows = [];
  if (info.kind === "group") {
    rows.push(["kind", "group"], ["attributes", String(info.attrs.length)]);
  } else {
    rows.push(["type", info.dtype + (info.class && !info.numeric ? `  (${info.class})` : "")]);
    rows.push(["shape", info.null ? "null (no values)" : dims(info.shape)]);
    rows.push(["max shape", dims(info.maxshape)]);
    rows.push(["layout", info.layout + (info.layout_version != null ? ` (layout message v${info.layout_version})` : "")]);
    if (info.chunks) rows.push(["chunks", dims(info.chunks)]);
    if (info.index) rows.push(["chunk index", info.index]);
    rows.push(["filters", info.filters.length ? info.filters.join(", ") : "none"]);
    if (info.fields) rows.push(["fields", info.fields.join(", ")]);
  }
  $("meta").replaceChildren(...rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
  $("meta").previousElementSibling.textContent = info.kind === "group" ? "Group" : "Dataset";
}

function renderAttrs(attrs) {
  if (!attrs.length) {
    $("attrs").replaceChildren(el("p", { class: "empty", text: "none" }));
    return;
  }
  const t = el("table", {}, el("tr", {}, el("th", { text: "name" }), el("th", { text: "type" }), el("th", { text: "shape" }), el("th", { text: "value" })));
  for (const a of attrs) {
    t.append(el("tr", {}, el("td", { text: a.name }), el("td", { class: "t", text: a.type }), el("td", { class: "t", text: a.shape }), el("td", { class: "v", text: a.value })));
  }
  $("attrs").replaceChildren(t);
}

function renderStats(s, step, shown) {
  const rows = [["values shown", String(s.count) + (step.some((t) => t > 1) ? `  (every ${step.join("×")})` : "")]];
  if (s.finite !== s.count) rows.push(["finite", String(s.finite)]);
  if (s.finite > 0) rows.push(["min", fmt(s.min)], ["max", fmt(s.max)], ["mean", fmt(s.mean)], ["std", fmt(s.std)]);
  if (shown) rows.push(["slice", shown]);
  $("stats").replaceChildren(...rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
}

async function showText(info, version) {
  const rank = info.shape.length;
  const count = info.shape.map((n, i) => (i === 0 ? Math.min(n, 1000) : rank > 1 ? Math.min(n, 1) : n));
  let d;
  try {
    d = await api("data", { path: info.path, start: info.shape.map(() => 0).join(","), count: count.join(","), step: info.shape.map(() => 1).join(",") });
  } catch (e) {
    showError(e);
    return;
  }
  if (version !== state.version) return;
  const heads = d.fields ? d.fields : ["value"];
  const t = el("table", {}, el("tr", {}, el("th", { text: "index" }), ...heads.map((h) => el("th", { text: h }))));
  d.text.forEach((v, i) => {
    const cells = d.rows ? d.rows[i] : [v];
    t.append(el("tr", {}, el("td", { class: "t", text: String(i) }), ...cells.map((c) => el("td", { class: "v", text: c }))));
  });
  $("values").replaceChildren(t);
  $("values-card").hidden = false;
  $("stats").replaceChildren(el("dt", { text: "values shown" }), el("dd", { text: String(d.text.length) }));
  $("plotted").textContent = JSON.stringify({ path: info.path, kind: "text", text: d.text });
  markReady();
}

// ---------------------------------------------------------------- controls and plots

function setupControls(info) {
  const rank = info.shape.length;
  const box = $("controls");
  box.replaceChildren();
  state.slider = [];
  // The image's axes: the last two dimensions; a slider for each other one.
  for (let i = 0; i + 2 < rank; i++) {
    const max = Math.max(0, info.shape[i] - 1);
    const input = el("input", { type: "range", min: "0", max: String(max), value: "0", "aria-label": `index along dimension ${i}` });
    const out = el("output", { text: "0" });
    input.addEventListener("input", () => {
      out.textContent = input.value;
      draw(state.version);
    });
    state.slider[i] = input;
    box.append(el("label", {}, `dim ${i}`, input, out, el("span", { class: "note", text: `of ${info.shape[i]}` })));
  }
}

function selection(info) {
  const rank = info.shape.length;
  if (rank === 0) return { start: [], count: [], step: [] };
  if (rank === 1) {
    const n = info.shape[0];
    const step = Math.max(1, Math.ceil(n / LINE_POINTS));
    return { start: [0], count: [Math.ceil(n / step)], step: [step] };
  }
  if (asLines(info)) {
    const n = info.shape[0], cols = info.shape[1];
    const step = Math.max(1, Math.ceil((n * Math.max(1, cols)) / LINE_POINTS));
    return { start: [0, 0], count: [Math.ceil(n / step), cols], step: [step, 1] };
  }
  const start = [], count = [], step = [];
  for (let i = 0; i < rank; i++) {
    if (i + 2 < rank) {
      start.push(Math.min(Number(state.slider[i].value), Math.max(0, info.shape[i] - 1)));
      count.push(info.shape[i] ? 1 : 0);
      step.push(1);
    } else {
      const n = info.shape[i];
      const s = Math.max(1, Math.ceil(n / IMAGE_SIDE));
      start.push(0);
      count.push(Math.ceil(n / s));
      step.push(s);
    }
  }
  return { start, count, step };
}

async function draw(version) {
  const info = state.info;
  const sel = selection(info);
  let d;
  try {
    d = await api("data", { path: info.path, start: sel.start.join(","), count: sel.count.join(","), step: sel.step.join(",") });
  } catch (e) {
    showError(e);
    return;
  }
  if (version !== state.version) return;
  const rank = info.shape.length;
  $("viz").hidden = rank === 0;
  const shown = rank > 2 ? "[" + d.start.map((s, i) => (i + 2 < rank ? String(s) : ":")).join(", ") + "]" : null;
  renderStats(d.stats, d.step, shown);
  const lines = rank === 1 || asLines(info);
  if (rank === 1) linePlot(d, [{ values: d.values, label: null }]);
  else if (lines) {
    const rows = d.count[0], cols = d.count[1];
    linePlot(d, Array.from({ length: cols }, (_, k) => ({
      values: Array.from({ length: rows }, (_, i) => d.values[i * cols + k]),
      label: `[:, ${k}]`,
    })));
  } else if (rank >= 2) imagePlot(d, d.count[rank - 2], d.count[rank - 1]);
  else $("stats").prepend(el("dt", { text: "value" }), el("dd", { text: fmt(d.values[0]) }));
  $("plotted").textContent = JSON.stringify({
    path: info.path, kind: rank === 1 ? "line" : lines ? "lines" : rank === 0 ? "scalar" : "image",
    shape: d.shape, start: d.start, count: d.count, step: d.step, values: d.values,
  });
  markReady();
}

function markReady() {
  document.body.dataset.ready = String(Number(document.body.dataset.ready || 0) + 1);
}

function niceTicks(lo, hi, n) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

function sizeCanvas(c, w, h) {
  const r = window.devicePixelRatio || 1;
  c.width = Math.round(w * r);
  c.height = Math.round(h * r);
  c.style.width = w + "px";
  c.style.height = h + "px";
  const g = c.getContext("2d");
  g.setTransform(r, 0, 0, r, 0, 0);
  return g;
}

function linePlot(d, series) {
  const c = $("plot");
  const n = series.length ? series[0].values.length : 0;
  $("readout").textContent = `index along dimension 0${d.step[0] > 1 ? ` (every ${d.step[0]})` : ""} · ${n} points${series.length > 1 ? ` × ${series.length} columns` : ""}`;
  c.classList.remove("image");
  $("colorbar").hidden = true;
  const legend = $("legend");
  legend.replaceChildren(...(series.length > 1 ? series.map((s, k) =>
    el("span", { class: "key" }, el("span", { class: "swatch", style: `background:${PALETTE[k % PALETTE.length]}` }), s.label)) : []));
  legend.hidden = series.length <= 1;
  const W = Math.max(320, c.parentElement.clientWidth), H = 360;
  const g = sizeCanvas(c, W, H);
  const m = { l: 64, r: 16, t: 12, b: 34 };
  const xs = Array.from({ length: n }, (_, i) => d.start[0] + i * d.step[0]);
  const s = d.stats;
  let lo = s.finite ? s.min : 0, hi = s.finite ? s.max : 1;
  if (lo === hi) { lo -= 1; hi += 1; }
  const pad = (hi - lo) * 0.05;
  lo -= pad; hi += pad;
  const x0 = xs.length ? xs[0] : 0, x1 = xs.length > 1 ? xs[xs.length - 1] : x0 + 1;
  const X = (x) => m.l + ((x - x0) / (x1 - x0 || 1)) * (W - m.l - m.r);
  const Y = (y) => H - m.b - ((y - lo) / (hi - lo)) * (H - m.t - m.b);
  g.clearRect(0, 0, W, H);
  g.font = "12px " + getComputedStyle(document.body).fontFamily;
  g.strokeStyle = "#eceef2";
  g.fillStyle = "#6b7280";
  g.lineWidth = 1;
  g.textAlign = "right";
  g.textBaseline = "middle";
  for (const t of niceTicks(lo, hi, 6)) {
    const y = Math.round(Y(t)) + 0.5;
    g.beginPath(); g.moveTo(m.l, y); g.lineTo(W - m.r, y); g.stroke();
    g.fillText(fmt(t), m.l - 8, y);
  }
  g.textAlign = "center";
  g.textBaseline = "top";
  for (const t of niceTicks(x0, x1, 8)) {
    const x = Math.round(X(t)) + 0.5;
    g.beginPath(); g.moveTo(x, m.t); g.lineTo(x, H - m.b); g.stroke();
    g.fillText(fmt(t), x, H - m.b + 8);
  }
  g.strokeStyle = "#c5cad3";
  g.strokeRect(m.l + 0.5, m.t + 0.5, W - m.l - m.r - 1, H - m.t - m.b - 1);
  series.forEach((sr, k) => {
    const colour = PALETTE[k % PALETTE.length];
    g.strokeStyle = colour;
    g.lineWidth = 1.6;
    g.lineJoin = "round";
    g.beginPath();
    let pen = false;
    sr.values.forEach((v, i) => {
      if (v == null) { pen = false; return; }
      const x = X(xs[i]), y = Y(v);
      if (pen) g.lineTo(x, y); else g.moveTo(x, y);
      pen = true;
    });
    g.stroke();
    if (n <= 120) {
      g.fillStyle = colour;
      sr.values.forEach((v, i) => {
        if (v == null) return;
        g.beginPath(); g.arc(X(xs[i]), Y(v), 2.6, 0, 2 * Math.PI); g.fill();
      });
    }
  });
  c.onmousemove = (ev) => {
    const r = c.getBoundingClientRect();
    const x = x0 + ((ev.clientX - r.left - m.l) / (W - m.l - m.r)) * (x1 - x0);
    const i = Math.min(xs.length - 1, Math.max(0, Math.round((x - x0) / d.step[0])));
    if (xs.length) $("readout").textContent = `[${xs[i]}] = ` + series.map((sr) => fmt(sr.values[i])).join(", ");
  };
}

// viridis, sampled at eleven stops and interpolated.
const VIRIDIS = ["440154", "482475", "414487", "355f8d", "2a788e", "21918c", "22a884", "44bf70", "7ad151", "bddf26", "fde725"]
  .map((h) => [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16)));
const LUT = Array.from({ length: 256 }, (_, k) => {
  const f = (k / 255) * (VIRIDIS.length - 1), i = Math.min(VIRIDIS.length - 2, Math.floor(f)), t = f - i;
  return VIRIDIS[i].map((a, j) => Math.round(a + (VIRIDIS[i + 1][j] - a) * t));
});

function imagePlot(d, rows, cols) {
  const c = $("plot");
  $("legend").hidden = true;
  c.classList.add("image");
  const s = d.stats;
  let lo = s.finite ? s.min : 0, hi = s.finite ? s.max : 1;
  if (lo === hi) hi = lo + 1;
  const off = document.createElement("canvas");
  off.width = Math.max(1, cols);
  off.height = Math.max(1, rows);
  const og = off.getContext("2d");
  const img = og.createImageData(off.width, off.height);
  for (let k = 0; k < rows * cols; k++) {
    const v = d.values[k];
    const rgb = v == null ? [255, 255, 255] : LUT[Math.max(0, Math.min(255, Math.round(((v - lo) / (hi - lo)) * 255)))];
    img.data.set([rgb[0], rgb[1], rgb[2], 255], k * 4);
  }
  og.putImageData(img, 0, 0);
  // The image inside margins for the index ticks of its two dimensions.
  const m = { l: 52, r: 6, t: 6, b: 28 };
  const avail = Math.max(240, c.parentElement.clientWidth - 120 - m.l - m.r);
  const scale = Math.max(1, Math.min(Math.floor(avail / Math.max(1, cols)), Math.floor(520 / Math.max(1, rows))) || 1);
  const fit = Math.min(1, avail / (cols * scale), 520 / (rows * scale));
  const W = Math.max(1, Math.round(cols * scale * fit)), H = Math.max(1, Math.round(rows * scale * fit));
  const g = sizeCanvas(c, W + m.l + m.r, H + m.t + m.b);
  g.imageSmoothingEnabled = false;
  g.drawImage(off, m.l, m.t, W, H);
  g.strokeStyle = "#c5cad3";
  g.strokeRect(m.l - 0.5, m.t - 0.5, W + 1, H + 1);
  g.font = "12px " + getComputedStyle(document.body).fontFamily;
  g.fillStyle = "#6b7280";
  const rk = d.count.length;
  const r0 = d.start[rk - 2], rs = d.step[rk - 2], c0 = d.start[rk - 1], cs = d.step[rk - 1];
  g.textAlign = "right";
  g.textBaseline = "middle";
  for (const t of niceTicks(r0, r0 + Math.max(0, rows - 1) * rs, 6)) {
    if (!Number.isInteger(t)) continue;
    const y = m.t + ((t - r0) / rs + 0.5) * (H / Math.max(1, rows));
    g.fillRect(m.l - 5, Math.round(y), 4, 1);
    g.fillText(String(t), m.l - 8, y);
  }
  g.textAlign = "center";
  g.textBaseline = "top";
  for (const t of niceTicks(c0, c0 + Math.max(0, cols - 1) * cs, 8)) {
    if (!Number.isInteger(t)) continue;
    const x = m.l + ((t - c0) / cs + 0.5) * (W / Math.max(1, cols));
    g.fillRect(Math.round(x), m.t + H + 1, 1, 4);
    g.fillText(String(t), x, m.t + H + 8);
  }
  const cb = $("cb-canvas");
  const cg = cb.getContext("2d");
  for (let k = 0; k < 256; k++) {
    const [r, gg, b] = LUT[255 - k];
    cg.fillStyle = `rgb(${r},${gg},${b})`;
    cg.fillRect(0, k, 14, 1);
  }
  $("cb-max").textContent = fmt(hi);
  $("cb-min").textContent = fmt(lo);
  $("colorbar").hidden = false;
  $("colorbar").style.height = H + "px";
  $("colorbar").style.marginTop = m.t + "px";
  const rank = d.count.length;
  const every = (k) => (d.step[k] > 1 ? ` (every ${d.step[k]})` : "");
  $("readout").textContent = `rows: dimension ${rank - 2}${every(rank - 2)} · columns: dimension ${rank - 1}${every(rank - 1)} · ${rows}×${cols} shown`;
  c.onmousemove = (ev) => {
    const r = c.getBoundingClientRect();
    const j = Math.floor(((ev.clientX - r.left - m.l) / W) * cols);
    const i = Math.floor(((ev.clientY - r.top - m.t) / H) * rows);
    if (i < 0 || j < 0 || i >= rows || j >= cols) return;
    const idx = d.start.map((s0, k) => (k === rank - 2 ? s0 + i * d.step[k] : k === rank - 1 ? s0 + j * d.step[k] : s0));
    $("readout").textContent = `[${idx.join(", ")}] = ${fmt(d.values[i * cols + j])}`;
  };
}

// ---------------------------------------------------------------- following a writer

function startFollowing(version) {
  state.live = true;
  $("live").hidden = false;
  $("live-text").textContent = "following";
  state.timer = setInterval(async () => {
    const info = state.info;
    let r;
    try {
      r = await api("refresh", { path: info.path });
    } catch (e) {
      $("live-text").textContent = "refresh failed: " + e.message;
      return;
    }
    if (version !== state.version) return;
    if (r.shape.join(",") !== info.shape.join(",")) {
      info.shape = r.shape;
      info.maxshape = r.maxshape;
      renderMeta(info);
      state.slider.forEach((s, i) => {
        if (!s) return;
        // At the newest position (a stack of frames being written): stay at the newest.
        const atEnd = s.value === s.max;
        s.max = String(Math.max(0, info.shape[i] - 1));
        if (atEnd) {
          s.value = s.max;
          s.nextElementSibling.textContent = s.value;
        }
        s.parentElement.querySelector(".note").textContent = `of ${info.shape[i]}`;
      });
      await draw(version);
    }
    $("live-text").textContent = `following · ${dims(info.shape)} at ${new Date().toLocaleTimeString()}`;
  }, POLL_MS);
}

function stopFollowing() {
  clearInterval(state.timer);
  state.timer = null;
  state.live = false;
  $("live").hidden = true;
}

// ---------------------------------------------------------------- start

async function main() {
  let t;
  try {
    t = await api("tree");
  } catch (e) {
    showError(e);
    return;
  }
  document.title = `${t.file} · h5chunk view`;
  $("filename").textContent = t.file + (t.truncated ? " (tree shortened)" : "");
  const tree = $("tree");
  tree.replaceChildren(treeItem(t.root, 0));
  tree.addEventListener("keydown", onTreeKey);
  const wanted = decodeURIComponent(location.hash.slice(1)) || firstDataset(t.root) || "/";
  let li = findItem(wanted);
  if (li) {
    // Unfold the way to it.
    for (let p = li.parentElement.closest("li"); p; p = p.parentElement.closest("li")) toggle(p, true);
  } else {
    li = tree.querySelector("li");
  }
  focusItem(li, true);
  addEventListener("hashchange", () => {
    const target = findItem(decodeURIComponent(location.hash.slice(1)));
    if (target && !target.hasAttribute("aria-selected")) focusItem(target, true);
  });
}

main();
