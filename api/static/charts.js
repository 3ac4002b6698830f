// A link's counters as charts: one panel per unit (a count of pauses and a speed in Gb/s never
// share an axis), both ends and both directions visible, a read-out of every value at the
// time under the pointer. Drawn at the width the page gives them, so text keeps its size on
// a narrow screen instead of shrinking with a scaled picture; drawn again when that changes.
// Also the page's times: ISO seconds in UTC beside the browser's local time.
// Uses el() and svg() from incident.js.
"use strict";

const PANELS = [
  { id: "traffic", title: "traffic", unit: "Gb/s", metrics: ["in_octets", "out_octets"],
    scale: (v) => (v * 8) / 1e9, always: true },
  { id: "packets", title: "packets", unit: "packets/s", metrics: ["in_pkts", "out_pkts"] },
  { id: "errors", title: "errors and discards", unit: "per second", nonzero: true,
    empty: "No error, discard, FEC or carrier counts on this link in the window.",
    metrics: ["in_errors", "out_errors", "in_discards", "out_discards", "in_fcs_errors",
      "symbol_errors", "fec_corrected", "fec_uncorrectable", "carrier_transitions"] },
  { id: "pauses", title: "PFC pauses and ECN marks", unit: "per second", nonzero: true,
    empty: "No PFC pause or ECN mark on this link in the window.",
    metrics: ["pfc_rx_pause", "pfc_tx_pause", "ecn_marked"] },
  { id: "optics", title: "receive power", unit: "dBm", metrics: ["rx_power_dbm"], free: true },
  { id: "speed", title: "negotiated speed", unit: "Gb/s", metrics: ["port_speed_gbps"], step: true,
    height: 120 },
];
const SERIES_COLORS = ["#1f4fbf", "#5aa0e6", "#c85a00", "#e9a23b", "#2a9d4b", "#9467bd",
  "#8c564b", "#17becf", "#e377c2", "#7f7f7f"];
const CHART_FONT_PX = 12;
const Y_TICKS = 5;
const X_TICKS = 6;
// Steps a time axis may tick at, in seconds.
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];
const DRAWN = []; // {box, draw}: charts to draw again when the page's width changes

// -- times ----------------------------------------------------------------------------------

/** Milliseconds since the epoch from the API's ISO strings (nine fraction digits at most). */
function isoMs(iso) {
  return Date.parse(iso.replace(/(\.\d{3})\d*Z$/, "$1Z"));
}

function utcSeconds(ms) {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}

function localClock(ms) {
  return new Intl.DateTimeFormat(undefined, {
    hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false, timeZoneName: "short",
  }).format(new Date(ms));
}

/** A time element: `2026-05-16T16:55:38Z` and, after it, the browser's local clock. */
function timeEl(iso) {
  if (!iso) return el("span", { text: "—" });
  const ms = isoMs(iso);
  return el("time", { datetime: iso, title: iso },
    el("span", { class: "utc", text: utcSeconds(ms) }),
    el("span", { class: "local", text: ` ${localClock(ms)}` }));
}

// -- panels ---------------------------------------------------------------------------------

function seriesName(s) {
  return `${s.device}:${s.interface} ${s.metric}${s.qualifier ? `[${s.qualifier}]` : ""}`;
}

function outbound(metric) {
  return metric.startsWith("out_") || metric.includes("_tx_");
}

/** The panels for one link's counters; `ends` are its two endpoints, `markNs` the moment
 * to mark (the stall), `events` its link events. */
function counterPanels(detail, ends, markNs) {
  const events = detail.events.map((e) => e.ts_ns);
  // One time axis for every panel, so a moment lines up from one panel to the next.
  const all = detail.series.flatMap((s) => s.ts_ns);
  const span = [Math.min(...all, markNs ?? Infinity), Math.max(...all, markNs ?? -Infinity)];
  const reporting = new Set(detail.series.map((s) => `${s.device}:${s.interface}`));
  const silent = ends.filter((e) => !reporting.has(`${e.device}:${e.interface}`));
  const endIndex = (s) => ends.findIndex((e) => e.device === s.device && e.interface === s.interface);
  const out = [];
  if (silent.length) {
    out.push(el("p", { class: "muted ends-note", text: silent.length === ends.length
      ? "Neither end of this link reported counters in the window."
      : `Only ${ends.filter((e) => !silent.includes(e)).map((e) => `${e.device}:${e.interface}`).join(", ")} ` +
        `reported counters; ${silent.map((e) => `${e.device}:${e.interface}`).join(", ")} sent none ` +
        "in the window (railtrace has no telemetry from that side)." }));
  }
  for (const p of PANELS) {
    const series = detail.series
      .filter((s) => p.metrics.includes(s.metric))
      .filter((s) => !p.nonzero || s.peak.some((v) => v > 0))
      .sort((a, b) => endIndex(a) - endIndex(b) || p.metrics.indexOf(a.metric) - p.metrics.indexOf(b.metric)
        || a.qualifier.localeCompare(b.qualifier));
    if (!series.length) {
      if (p.empty) out.push(el("p", { class: "muted", id: `chart-${p.id}-none`, text: p.empty }));
      continue;
    }
    out.push(chartPanel(p, series, markNs, events, span));
  }
  out.push(el("p", { class: "muted", text: `${detail.events.length} link events in the window; ` +
    "red dashes: the stall; orange: link events. Solid: in/received; dashed: out/sent." }));
  return out;
}

function chartPanel(panel, series, markNs, events, span) {
  const box = el("div", { class: "chart-box" });
  const readout = el("div", { class: "readout", "aria-live": "polite",
    text: "Point at the chart to read its values." });
  const legend = el("div", { class: "legend" }, series.map((s, i) => el("span", {
    swatch: SERIES_COLORS[i % SERIES_COLORS.length], class: outbound(s.metric) ? "dashed" : "",
    text: seriesName(s),
  })));
  const section = el("figure", { class: "chart", id: `chart-${panel.id}` },
    el("figcaption", { text: `${panel.title}, ${panel.unit}` }), box, readout, legend);
  const draw = () => {
    const width = Math.max(280, Math.floor(box.clientWidth || 700));
    box.replaceChildren(chartSvg(panel, series, markNs, events, span, width, readout));
  };
  DRAWN.push({ box, draw });
  return section;
}

/** Draw every chart put on the page since the last call, at its box's width. */
function drawCharts() {
  for (let i = DRAWN.length - 1; i >= 0; i--) {
    if (DRAWN[i].box.isConnected) DRAWN[i].draw();
    else DRAWN.splice(i, 1);
  }
}

let resizeTimer = null;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(drawCharts, 150);
});

function niceStep(span, count) {
  const raw = span / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= raw) || 10 * mag;
}

function ticks(lo, hi, count) {
  const step = niceStep(Math.max(hi - lo, 1e-9), count);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

function fmtValue(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return `${+(v / 1e9).toPrecision(3)}G`;
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toPrecision(3)}k`;
  return a >= 100 ? v.toFixed(0) : a >= 1 ? +v.toPrecision(3) + "" : v === 0 ? "0" : +v.toPrecision(2) + "";
}

function chartSvg(panel, series, markNs, events, span, W, readout) {
  const H = panel.height || 200, T = 12, B = 26, R = 12;
  const scale = panel.scale || ((v) => v);
  const values = series.map((s) => s.mean.map(scale));
  const [x0, x1] = span;
  const flat = values.flat();
  let ylo = panel.free ? Math.min(...flat) : Math.min(0, ...flat);
  let yhi = Math.max(...flat);
  if (yhi - ylo < 1e-9) { yhi += panel.free ? 1 : Math.max(1, Math.abs(yhi)); if (panel.free) ylo -= 1; }
  const yTicks = ticks(ylo, yhi, Y_TICKS);
  ylo = Math.min(ylo, yTicks[0]); yhi = Math.max(yhi, yTicks[yTicks.length - 1]);
  const L = 14 + Math.max(...yTicks.map((v) => fmtValue(v).length)) * CHART_FONT_PX * 0.62;
  const X = (t) => L + ((t - x0) / Math.max(1, x1 - x0)) * (W - L - R);
  const Y = (v) => H - B - ((v - ylo) / (yhi - ylo)) * (H - T - B);
  const parts = [];
  for (const v of yTicks) {
    parts.push(svg("line", { class: "grid", x1: L, x2: W - R, y1: Y(v), y2: Y(v) }),
      svg("text", { class: "tick", x: L - 6, y: Y(v) + 4, "text-anchor": "end", text: fmtValue(v) }));
  }
  const spanS = (x1 - x0) / 1e9;
  const stepS = TIME_STEPS.find((s) => spanS / s <= X_TICKS) || TIME_STEPS[TIME_STEPS.length - 1];
  const tickCount = Math.min(X_TICKS + 1, Math.floor((W - L - R) / 80));
  const every = Math.max(1, Math.ceil(spanS / stepS / Math.max(2, tickCount)));
  for (let s = Math.ceil(x0 / 1e9 / (stepS * every)) * stepS * every; s * 1e9 <= x1; s += stepS * every) {
    const x = X(s * 1e9);
    parts.push(svg("line", { class: "grid", x1: x, x2: x, y1: T, y2: H - B }),
      svg("text", { class: "tick", x, y: H - B + 16, "text-anchor": "middle",
        text: new Date(s * 1000).toISOString().slice(11, 19) }));
  }
  parts.push(svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  for (const t of events) parts.push(svg("line", { class: "event", x1: X(t), x2: X(t), y1: T, y2: H - B }));
  if (markNs) parts.push(svg("line", { class: "stall", x1: X(markNs), x2: X(markNs), y1: T, y2: H - B }));
  series.forEach((s, i) => {
    const pts = [];
    s.ts_ns.forEach((t, k) => {
      const y = Y(values[i][k]);
      if (panel.step && k) pts.push(`${X(t).toFixed(1)},${Y(values[i][k - 1]).toFixed(1)}`);
      pts.push(`${X(t).toFixed(1)},${y.toFixed(1)}`);
    });
    parts.push(svg("polyline", {
      fill: "none", stroke: SERIES_COLORS[i % SERIES_COLORS.length],
      class: outbound(s.metric) ? "series out" : "series in",
      points: pts.join(" "), "data-series": seriesName(s),
    }));
  });
  const cross = svg("line", { class: "cross", x1: -10, x2: -10, y1: T, y2: H - B });
  const overlay = svg("rect", { class: "overlay", x: L, y: T, width: W - L - R, height: H - T - B });
  const show = (clientX) => {
    const box = overlay.getBoundingClientRect();
    const t = x0 + ((clientX - box.left) / box.width) * (x1 - x0);
    const picks = series.map((s, i) => {
      let best = 0;
      s.ts_ns.forEach((u, k) => { if (Math.abs(u - t) < Math.abs(s.ts_ns[best] - t)) best = k; });
      return { s, i, k: best };
    });
    const at = picks.length ? picks[0].s.ts_ns[picks[0].k] : t;
    cross.setAttribute("x1", X(at)); cross.setAttribute("x2", X(at));
    readout.replaceChildren(el("strong", { text: `${utcSeconds(at / 1e6)} (${localClock(at / 1e6)})` }),
      ...picks.map(({ s, i, k }) => el("span", { swatch: SERIES_COLORS[i % SERIES_COLORS.length],
        class: outbound(s.metric) ? "dashed" : "",
        text: `${seriesName(s)}: ${fmtValue(values[i][k])} ${panel.unit}` })));
  };
  overlay.addEventListener("mousemove", (e) => show(e.clientX));
  return svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "chart-svg" }, parts, cross, overlay);
}
