// Small SVG charts for the fedtopic dashboard: line charts and stacked bars, no library, no network.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
  "#4b5563", "#65a30d", "#7c3aed", "#0d9488"];

function svgEl(tag, attrs, text) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function niceTicks(lo, hi, n) {
  if (!(hi > lo)) { hi = lo + 1; }
  const span = hi - lo, step0 = span / Math.max(n, 1);
  const mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0) || step0;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9 && out.length < 50; v += step) out.push(v);
  return out;
}

function fmt(v) {
  const a = Math.abs(v);
  if (a === 0) return "0";
  if (Number.isInteger(v) && a < 1e4) return String(v);
  if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
  if (a >= 1e3) return (v / 1e3).toFixed(a >= 1e4 ? 0 : 1) + "k";
  if (a >= 1) return v.toFixed(a >= 100 ? 0 : (a >= 10 ? 1 : 2));
  return v.toPrecision(2);
}

// A tick's label: as many decimals as the step between ticks needs (0.005 apart: -6.620, -6.625), so no two
// ticks read alike; whole steps as fmt gives them.
function tickLabel(v, step) {
  if (step >= 1) return fmt(v);
  return v.toFixed(Math.min(8, Math.ceil(-Math.log10(step) - 1e-9)));
}

// At most `max` points, keeping the first and the last (every k-th in between).
function thin(points, max) {
  if (points.length <= max) return points;
  const k = Math.ceil(points.length / max), out = [];
  for (let i = 0; i < points.length; i += k) out.push(points[i]);
  if (out[out.length - 1] !== points[points.length - 1]) out.push(points[points.length - 1]);
  return out;
}

// series: [{name, points: [[x, y], ...]}]; opts: {xlabel, ylabel, hlines: [{y, label}], empty}
function lineChart(svg, series, opts) {
  opts = opts || {};
  svg.replaceChildren();
  const [W, H] = [900, Number(svg.getAttribute("viewBox").split(" ")[3]) || 320];
  const m = {l: 64, r: 150, t: 28, b: 40};  // the axis name sits above the plot, clear of the top tick
  const pts = series.flatMap((s) => s.points).filter((p) => Number.isFinite(p[1]));
  const hl = (opts.hlines || []).filter((h) => Number.isFinite(h.y));
  if (!pts.length) {
    svg.append(svgEl("text", {x: W / 2, y: H / 2, "text-anchor": "middle"}, opts.empty || "no data yet"));
    return;
  }
  let [x0, x1] = [Math.min(...pts.map((p) => p[0])), Math.max(...pts.map((p) => p[0]))];
  let ys = pts.map((p) => p[1]).concat(hl.map((h) => h.y));
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) { y0 -= 1; y1 += 1; }
  const pad = (y1 - y0) * 0.05; y0 -= pad; y1 += pad;
  const X = (x) => m.l + (x - x0) / (x1 - x0) * (W - m.l - m.r);
  const Y = (y) => H - m.b - (y - y0) / (y1 - y0) * (H - m.t - m.b);
  const yt = niceTicks(y0, y1, 5), xt = niceTicks(x0, x1, 8);
  for (const t of yt) {
    svg.append(svgEl("line", {x1: m.l, x2: W - m.r, y1: Y(t), y2: Y(t), class: "axis"}));
    svg.append(svgEl("text", {x: m.l - 6, y: Y(t) + 4, "text-anchor": "end"}, tickLabel(t, yt[1] - yt[0] || 1)));
  }
  for (const t of xt) {
    svg.append(svgEl("text", {x: X(t), y: H - m.b + 16, "text-anchor": "middle"}, tickLabel(t, xt[1] - xt[0] || 1)));
  }
  svg.append(svgEl("text", {x: (m.l + W - m.r) / 2, y: H - 6, "text-anchor": "middle"}, opts.xlabel || ""));
  svg.append(svgEl("text", {x: 12, y: 14}, opts.ylabel || ""));
  for (const h of hl) {
    svg.append(svgEl("line", {x1: m.l, x2: W - m.r, y1: Y(h.y), y2: Y(h.y), stroke: "#111", "stroke-dasharray": "5 4"}));
    svg.append(svgEl("text", {x: W - m.r - 4, y: Y(h.y) - 5, "text-anchor": "end"}, h.label));
  }
  const legend = svgEl("g", {class: "legend"});
  series.forEach((s, i) => {
    const color = s.color || PALETTE[i % PALETTE.length];
    const ok = thin(s.points.filter((p) => Number.isFinite(p[1])), 600);
    if (ok.length) {
      const d = ok.map((p, j) => (j ? "L" : "M") + X(p[0]).toFixed(1) + "," + Y(p[1]).toFixed(1)).join("");
      svg.append(svgEl("path", {d, class: "series", stroke: color}));
      if (ok.length === 1) svg.append(svgEl("circle", {cx: X(ok[0][0]), cy: Y(ok[0][1]), r: 3, fill: color}));
    }
    if (i < 16) {
      const y = m.t + 10 + i * 16;
      legend.append(svgEl("rect", {x: W - m.r + 10, y: y - 8, width: 10, height: 10, fill: color}));
      legend.append(svgEl("text", {x: W - m.r + 24, y: y + 1}, s.name));
    } else if (i === 16) {
      legend.append(svgEl("text", {x: W - m.r + 10, y: m.t + 10 + i * 16}, `+${series.length - 16} more`));
    }
  });
  svg.append(legend);
}

// bars: [{name, parts: [v0, v1, ...]}]; parts named by `keys` with `colors`.
function stackedBars(svg, bars, keys, colors, opts) {
  opts = opts || {};
  svg.replaceChildren();
  const [W, H] = [900, Number(svg.getAttribute("viewBox").split(" ")[3]) || 300];
  const m = {l: 64, r: 150, t: 28, b: 40};  // the axis name sits above the plot, clear of the top tick
  if (!bars.length) {
    svg.append(svgEl("text", {x: W / 2, y: H / 2, "text-anchor": "middle"}, opts.empty || "no data yet"));
    return;
  }
  const top = Math.max(...bars.map((b) => b.parts.reduce((a, v) => a + (v || 0), 0)), 1e-9);
  const Y = (y) => H - m.b - y / top * (H - m.t - m.b);
  const yt = niceTicks(0, top, 5);
  for (const t of yt) {
    svg.append(svgEl("line", {x1: m.l, x2: W - m.r, y1: Y(t), y2: Y(t), class: "axis"}));
    svg.append(svgEl("text", {x: m.l - 6, y: Y(t) + 4, "text-anchor": "end"}, tickLabel(t, yt[1] - yt[0] || 1)));
  }
  const slot = (W - m.l - m.r) / bars.length, w = Math.max(1, slot * 0.75);
  const every = Math.ceil(bars.length / 20);
  bars.forEach((b, i) => {
    let acc = 0;
    const x = m.l + i * slot + (slot - w) / 2;
    b.parts.forEach((v, j) => {
      if (!(v > 0)) return;
      svg.append(svgEl("rect", {x, y: Y(acc + v), width: w, height: Y(acc) - Y(acc + v), fill: colors[j]}));
      acc += v;
    });
    if (i % every === 0) {
      svg.append(svgEl("text", {x: x + w / 2, y: H - m.b + 16, "text-anchor": "middle"}, b.name));
    }
  });
  svg.append(svgEl("text", {x: (m.l + W - m.r) / 2, y: H - 6, "text-anchor": "middle"}, opts.xlabel || ""));
  svg.append(svgEl("text", {x: 12, y: 14}, opts.ylabel || "seconds"));
  const legend = svgEl("g", {class: "legend"});
  keys.forEach((k, j) => {
    const y = m.t + 10 + j * 16;
    legend.append(svgEl("rect", {x: W - m.r + 10, y: y - 8, width: 10, height: 10, fill: colors[j]}));
    legend.append(svgEl("text", {x: W - m.r + 24, y: y + 1}, k));
  });
  svg.append(legend);
}

window.FedCharts = {lineChart, stackedBars, svgEl, fmt, PALETTE};
