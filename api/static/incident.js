// The incident page: stalled jobs, and for one job its verdict, its part of the rail fabric
// with the culprit marked, the evidence timeline and the culprit's counters around the stall.
// Plain DOM and SVG, no build step; every value from the API goes in as text, never as HTML.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const NS_PER_MS = 1e6;
// The counters shown around a stall: before it (to see what changed) and after it.
const CHART_BEFORE_S = 300;
const CHART_AFTER_S = 120;
// A link page shows this much around the moment it was opened for (or the last hour).
const LINK_WINDOW_S = 3600;
const COLORS = ["#2f5fd0", "#d62728", "#2a9d4b", "#9467bd", "#e08a00", "#17becf", "#8c564b"];

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    // Through the CSSOM: the page's CSP forbids inline style attributes.
    else if (k === "swatch") node.style.setProperty("--swatch", v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "text") node.textContent = v;
    else node.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c) node.append(c);
  return node;
}

// -- the token: pasted (or in the URL fragment) once, then this browser's session cookie ------
// The token goes to POST /v1/session, which answers with an HttpOnly cookie: every tab of this
// browser then reads the API with it until the browser closes, and no script here keeps it.

class NeedToken extends Error {}

const REFUSED = "The API refused the token (unknown, revoked, expired or lacking read).";

async function startSession(token) {
  const response = await fetch("/v1/session", {
    method: "POST", headers: { Authorization: `Bearer ${token}` },
  });
  if (response.status === 401 || response.status === 403) throw new NeedToken(REFUSED);
  if (!response.ok) throw new Error(`${response.status}: the session could not be started`);
}

async function takeTokenFromFragment() {
  const m = /(?:^|&)token=([^&]+)/.exec(location.hash.slice(1));
  if (!m) return;
  history.replaceState(null, "", location.pathname + location.search);
  await startSession(decodeURIComponent(m[1]));
}

async function api(path) {
  const response = await fetch(path, { credentials: "same-origin" });
  if (response.status === 401) {
    throw new NeedToken("This page reads the railtrace API, which needs a token.");
  }
  if (response.status === 403) throw new NeedToken(REFUSED);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    const error = new Error(`${response.status}: ${detail || response.statusText}`);
    error.status = response.status;
    throw error;
  }
  document.getElementById("forget-token").hidden = false;
  return body;
}

function askForToken(app, why) {
  document.getElementById("forget-token").hidden = true;
  const form = document.getElementById("token-form").content.cloneNode(true);
  form.querySelector(".why").textContent = why;
  form.querySelector("form").addEventListener("submit", async (event) => {
    event.preventDefault();
    delete app.dataset.ready; // not ready while the session starts: set again either way
    try {
      await startSession(new FormData(event.target).get("token").trim());
    } catch (error) {
      askForToken(app, error.message);
      app.dataset.ready = "error";
      return;
    }
    route();
  });
  app.replaceChildren(form);
}

// -- formatting -----------------------------------------------------------------------------

function when(ns) {
  return ns === null || ns === undefined ? "—" : new Date(ns / NS_PER_MS).toISOString();
}

function offset(ns, stallNs) {
  if (!stallNs) return "";
  const s = (ns - stallNs) / 1e9;
  return `${s >= 0 ? "+" : "−"}${Math.abs(s).toFixed(1)} s`;
}

function badge(state) {
  return el("span", { class: `badge ${state}`, text: state });
}

function causeLink(kind, link, node, at) {
  const text = causeText(kind, link, node);
  if (kind === "link" && link) {
    const q = at ? `?${new URLSearchParams({ at })}` : "";
    return el("a", { href: `/links/${encodeURIComponent(link)}${q}`, text });
  }
  if (kind === "node" && node) return el("a", { href: `/nodes/${encodeURIComponent(node)}`, text });
  return text;
}

function causeText(kind, link, node) {
  if (kind === "link" && link) return link;
  if (kind === "node" && node) return `node ${node}`;
  return "unknown";
}

// -- the list of stalled (and slow) jobs ------------------------------------------------------

async function showList(app) {
  const [stalled, slow] = await Promise.all([
    api("/v1/jobs?state=stalled&limit=200"),
    api("/v1/jobs?state=slow&limit=200"),
  ]);
  const jobs = [...stalled.jobs, ...slow.jobs];
  document.title = `railtrace: ${stalled.jobs.length} stalled jobs`;
  const rows = jobs.map((j) =>
    el("tr", { "data-job": j.job_id },
      el("td", {}, el("a", { href: `/incidents/${encodeURIComponent(j.job_id)}`, text: j.job_id })),
      el("td", {}, badge(j.state)),
      (j.tied || []).length
        ? el("td", { class: "mono tie" }, `tie: ${j.tied.join(" | ")}`)
        : el("td", { class: "mono" }, causeText(j.cause_kind, j.link_id, j.node)),
      el("td", { class: "num" }, `${Math.round(j.confidence * 100)}%`),
      el("td", { class: "mono" }, j.stalled_at || "—"),
      el("td", { class: "mono" }, j.updated_at)));
  app.replaceChildren(
    el("section", { class: "card" },
      el("h1", { text: "Stalled and slow jobs" }),
      jobs.length
        ? el("table", { id: "jobs" },
          el("thead", {}, el("tr", {},
            ["job", "state", "cause", "confidence", "stalled at", "updated"].map(
              (h) => el("th", { text: h })))),
          el("tbody", {}, rows))
        : el("p", { class: "muted", id: "no-jobs", text: "No stalled or slow jobs. " +
          "Healthy jobs are listed by GET /v1/jobs." })));
}

// -- one job --------------------------------------------------------------------------------

async function showJob(app, jobId) {
  const verdict = await api(`/v1/jobs/${encodeURIComponent(jobId)}/verdict`);
  document.title = `railtrace: ${jobId} ${verdict.state}`;
  const culprit = verdict.cause.kind === "link" && verdict.cause.link ? verdict.cause.link.id : null;
  const [timeline, topology, counters] = await Promise.all([
    api(`/v1/jobs/${encodeURIComponent(jobId)}/timeline?limit=1000`),
    api(`/v1/topology?job=${encodeURIComponent(jobId)}`).catch((e) => e),
    culprit && verdict.stalled_at_ns
      ? api(linkUrl(culprit, verdict.stalled_at_ns)).catch((e) => e)
      : Promise.resolve(null),
  ]);
  app.replaceChildren(
    summaryCard(verdict),
    el("div", { class: "grid" },
      el("section", { class: "card", id: "fabric" },
        el("h2", { text: "The job's part of the rail fabric" }),
        topology instanceof Error
          ? el("p", { class: "error", text: `No fabric view: ${topology.message}` })
          : fabricGraph(topology, verdict)),
      el("section", { class: "card", id: "candidates" },
        el("h2", { text: "Candidates, most likely first" }),
        candidateTable(verdict))),
    el("section", { class: "card", id: "counters" },
      el("h2", { text: culprit ? `Counters of ${culprit} around the stall` : "Counters" }),
      counterCharts(counters, verdict)),
    el("section", { class: "card", id: "timeline" },
      el("h2", { text: `Evidence timeline (${timeline.total} events)` }),
      timelineTable(timeline, verdict)));
}

function linkUrl(linkId, stallNs) {
  const since = new Date(stallNs / NS_PER_MS - CHART_BEFORE_S * 1000).toISOString();
  const until = new Date(stallNs / NS_PER_MS + CHART_AFTER_S * 1000).toISOString();
  const q = new URLSearchParams({ since, until, step_s: "5" });
  return `/v1/links/${encodeURIComponent(linkId)}?${q}`;
}

// What each verdict diagnosis means, as the terminal says it (streams/records.py).
const SIDES = {
  "host-nic": "the host's NIC failed",
  "switch-port": "went down at the switch, NIC healthy",
  "optic": "optic dying: receive power fell first",
  "link-errors": "up but corrupting frames",
  "pfc-source": "source of spreading PFC pauses",
  "gpu": "GPU failed",
};

function summaryCard(v) {
  const cause = v.cause;
  const delay = v.stalled_at_ns && v.decided_at_ns
    ? `${((v.decided_at_ns - v.stalled_at_ns) / 1e9).toFixed(1)} s after the stall` : "—";
  return el("section", { class: "card", id: "summary" },
    el("h1", {}, `Job ${v.job_id} `, badge(v.state)),
    el("dl", { class: "facts" },
      el("dt", { text: "cause" }),
      (cause.tied || []).length
        ? el("dd", { class: "tie mono", id: "cause" }, "a tie the evidence cannot tell apart: ", cause.tied.join(" | "))
        : el("dd", { class: "culprit mono", id: "cause" }, causeLink(cause.kind, cause.link && cause.link.id, cause.node, v.stalled_at)),
      el("dt", { text: "side" }), el("dd", { id: "side", text: SIDES[cause.diagnosis] || "—" }),
      el("dt", { text: "confidence" }), el("dd", { text: `${Math.round(cause.confidence * 100)}%` }),
      el("dt", { text: v.state === "slow" ? "slow since" : "stalled at" }), el("dd", { class: "mono", text: v.stalled_at || "—" }),
      el("dt", { text: "decided" }), el("dd", { text: delay }),
      el("dt", { text: "scale" }), el("dd", { text: `${v.ranks} ranks on ${v.hosts} hosts` })));
}

function candidateTable(v) {
  if (!v.candidates.length) return el("p", { class: "muted", text: "No candidates." });
  return el("table", {},
    el("thead", {}, el("tr", {}, ["#", "cause", "score", "evidence"].map((h) => el("th", { text: h })))),
    el("tbody", {}, v.candidates.slice(0, 8).map((c) =>
      el("tr", {},
        el("td", { class: "num", text: c.rank }),
        el("td", { class: "mono" }, causeText(c.kind, c.link && c.link.id, c.node)),
        el("td", { class: "num", text: c.score.toFixed(2) }),
        el("td", { class: "num", text: c.evidence.length })))));
}

// -- the fabric graph: spines on top, leaves by rail, the job's hosts below -------------------

const LAYER = { spine: 0, core: 0, leaf: 1, host: 2 };

function fabricGraph(topology, verdict) {
  // A tie is drawn as a tie: no one link or node in red.
  const tied = new Set(verdict.cause.tied || []);
  const culprit = verdict.cause.link && !tied.size ? verdict.cause.link.id : null;
  const culpritNode = verdict.cause.kind === "node" && !tied.size ? verdict.cause.node : null;
  const candidates = new Set(verdict.candidates.filter((c) => c.link).map((c) => c.link.id));
  const layers = [[], [], []];
  for (const d of topology.devices) layers[LAYER[d.role] ?? 1].push(d);
  const byRail = (a, b) => (a.rail ?? -1) - (b.rail ?? -1) || a.name.localeCompare(b.name);
  layers.forEach((l) => l.sort(byRail));
  const width = Math.max(720, 26 * Math.max(...layers.map((l) => l.length)));
  const height = 330;
  const pos = new Map();
  layers.forEach((layer, i) => {
    const y = 30 + i * 130;
    layer.forEach((d, j) => pos.set(d.name, { x: (width * (j + 0.5)) / layer.length, y }));
  });
  const lines = topology.links
    .slice()
    .sort((a, b) => (a.id === culprit) - (b.id === culprit)) // the culprit drawn last, on top
    .map((l) => {
      const a = pos.get(l.a.device), b = pos.get(l.b.device);
      if (!a || !b) return null;
      const kind = l.id === culprit ? "culprit" : tied.has(l.id) ? "tied" : candidates.has(l.id) ? "candidate" : "";
      const w = l.id === culprit ? 4 : 0.6 + 2.4 * (l.weight ?? 0.3);
      return svg("line", {
        class: `link ${kind}`, x1: a.x, y1: a.y, x2: b.x, y2: b.y, "stroke-width": w,
        "data-link": l.id, "stroke-opacity": l.id === culprit ? 1 : 0.35 + 0.65 * (l.weight ?? 0.5),
      }, svg("title", { text: `${l.id}\nchance the job crosses it: ${Math.round((l.weight ?? 0) * 100)}%` }));
    });
  const nodes = topology.devices.map((d) => {
    const p = pos.get(d.name);
    const hit = culprit && verdict.cause.link && [verdict.cause.link.a.device, verdict.cause.link.b.device].includes(d.name);
    return svg("g", { "data-device": d.name },
      svg("circle", {
        class: `device ${d.role} ${hit || d.name === culpritNode ? "culprit" : ""}`,
        cx: p.x, cy: p.y, r: d.role === "host" ? 6 : 8,
      }, svg("title", { text: `${d.name} (${d.role}${d.rail !== null ? `, rail ${d.rail}` : ""})` })),
      svg("text", {
        x: p.x, y: p.y + (d.role === "host" ? 18 : -12), "text-anchor": "middle",
        transform: `rotate(${d.role === "host" ? 35 : -35} ${p.x} ${p.y + (d.role === "host" ? 18 : -12)})`,
        text: shortName(d.name),
      }));
  });
  return el("div", {},
    svg("svg", { viewBox: `0 0 ${width} ${height}`, width: "100%", role: "img",
      "aria-label": `fabric of job ${verdict.job_id}` }, lines, nodes),
    el("div", { class: "legend" },
      el("span", { swatch: "#d62728", text: "culprit" }),
      el("span", { swatch: "#e08a00", text: "other candidates" }),
      el("span", { swatch: "#9aa3b2", text: "links the job may cross (thicker: more likely)" })));
}

function shortName(name) {
  return name.length > 14 ? `…${name.slice(-13)}` : name;
}

// -- counters around the stall ----------------------------------------------------------------

function counterCharts(counters, verdict) {
  if (counters === null) return el("p", { class: "muted", text: "The verdict names no link." });
  if (counters instanceof Error) return el("p", { class: "error", text: `No counters: ${counters.message}` });
  const stall = verdict.stalled_at_ns;
  const traffic = counters.series.filter((s) => s.metric === "in_octets" || s.metric === "out_octets");
  const errors = counters.series.filter(
    (s) => !s.metric.endsWith("octets") && !s.metric.endsWith("pkts") && s.peak.some((v) => v > 0));
  const events = counters.events.map((e) => e.ts_ns);
  return el("div", {},
    chart("traffic, Gb/s", traffic, (v) => (v * 8) / 1e9, stall, events, "chart-traffic"),
    errors.length
      ? chart("errors and pauses, per second", errors, (v) => v, stall, events, "chart-errors")
      : el("p", { class: "muted", text: "No error, discard, FEC or pause counts on this link in the window." }),
    el("p", { class: "muted", text: `${counters.events.length} link events in the window; ` +
      "red dashes: the stall; orange: link events." }));
}

function chart(title, series, scale, stallNs, eventNs, id) {
  const W = 900, H = 200, L = 60, R = 10, T = 20, B = 30;
  const xs = series.flatMap((s) => s.ts_ns);
  if (!xs.length) return el("p", { class: "muted", text: `${title}: no samples in the window.` });
  const x0 = Math.min(...xs, stallNs ?? Infinity), x1 = Math.max(...xs, stallNs ?? -Infinity);
  const ymax = Math.max(1e-9, ...series.flatMap((s) => s.mean.map(scale)));
  const X = (t) => L + ((t - x0) / Math.max(1, x1 - x0)) * (W - L - R);
  const Y = (v) => H - B - (v / ymax) * (H - T - B);
  const paths = series.map((s, i) => svg("polyline", {
    fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": 1.6,
    points: s.ts_ns.map((t, k) => `${X(t).toFixed(1)},${Y(scale(s.mean[k])).toFixed(1)}`).join(" "),
    "data-series": `${s.device}:${s.interface} ${s.metric}${s.qualifier ? `[${s.qualifier}]` : ""}`,
  }));
  const marks = [
    ...eventNs.filter((t) => t >= x0 && t <= x1).map((t) =>
      svg("line", { class: "event", x1: X(t), x2: X(t), y1: T, y2: H - B })),
    stallNs ? svg("line", { class: "stall", x1: X(stallNs), x2: X(stallNs), y1: T, y2: H - B }) : null,
  ];
  const axis = [
    svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }),
    svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }),
    svg("text", { x: L - 6, y: T + 4, "text-anchor": "end", text: fmt(ymax) }),
    svg("text", { x: L - 6, y: H - B, "text-anchor": "end", text: "0" }),
    svg("text", { x: L, y: H - 8, text: `${offset(x0, stallNs)}` }),
    svg("text", { x: W - R, y: H - 8, "text-anchor": "end", text: `${offset(x1, stallNs)}` }),
    svg("text", { x: L, y: 12, text: title }),
  ];
  return el("div", { id },
    svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%" }, axis, marks, paths),
    el("div", { class: "legend" }, series.map((s, i) => el("span", {
      swatch: COLORS[i % COLORS.length],
      text: `${s.device}:${s.interface} ${s.metric}${s.qualifier ? `[${s.qualifier}]` : ""}`,
    }))));
}

function fmt(v) {
  return v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toPrecision(2);
}

// -- one link: its counters, events and blast radius -----------------------------------------

async function showLink(app, linkId) {
  const at = new URLSearchParams(location.search).get("at");
  const center = at ? Date.parse(at) : Date.now() - (LINK_WINDOW_S * 1000) / 2;
  if (Number.isNaN(center)) throw new Error(`not a time: at=${at}`);
  const q = new URLSearchParams({
    since: new Date(center - (LINK_WINDOW_S * 1000) / 2).toISOString(),
    until: new Date(center + (LINK_WINDOW_S * 1000) / 2).toISOString(),
  });
  const link = await api(`/v1/links/${encodeURIComponent(linkId)}?${q}`);
  document.title = `railtrace: link ${linkId}`;
  const markNs = at ? center * NS_PER_MS : null;
  const traffic = link.series.filter((s) => s.metric === "in_octets" || s.metric === "out_octets");
  const errors = link.series.filter(
    (s) => !s.metric.endsWith("octets") && !s.metric.endsWith("pkts") && s.peak.some((v) => v > 0));
  const events = link.events.map((e) => e.ts_ns);
  app.replaceChildren(
    el("section", { class: "card", id: "link-summary" },
      el("h1", { class: "mono", text: `Link ${link.id}` }),
      el("dl", { class: "facts" },
        el("dt", { text: "ends" }), el("dd", { class: "mono", text: `${link.a.device}:${link.a.interface} ↔ ${link.b.device}:${link.b.interface}` }),
        el("dt", { text: "rail" }), el("dd", { text: link.rail === null ? "above the leaves (all rails)" : String(link.rail) }),
        el("dt", { text: "window" }), el("dd", { class: "mono", text: `${link.since} – ${link.until}` }))),
    el("section", { class: "card", id: "blast-radius" },
      el("h2", { text: `Blast radius: ${link.jobs.length} jobs whose paths may cross it` }),
      link.jobs.length
        ? el("table", {},
          el("thead", {}, el("tr", {}, ["job", "state", "chance it crosses", "blamed", "last seen"].map((h) => el("th", { text: h })))),
          el("tbody", {}, link.jobs.map((j) => el("tr", { "data-job": j.job_id },
            el("td", {}, el("a", { href: `/incidents/${encodeURIComponent(j.job_id)}`, text: j.job_id })),
            el("td", {}, j.state ? badge(j.state) : "—"),
            el("td", { class: "num", text: `${Math.round(j.weight * 100)}%` }),
            el("td", { class: j.blamed ? "culprit" : "", text: j.blamed ? "yes" : "" }),
            el("td", { class: "mono", text: j.last_seen })))))
        : el("p", { class: "muted", text: "No job railtrace knows of crosses this link." })),
    el("section", { class: "card", id: "counters" },
      el("h2", { text: "Counters" }),
      chart("traffic, Gb/s", traffic, (v) => (v * 8) / 1e9, markNs, events, "chart-traffic"),
      errors.length ? chart("errors and pauses, per second", errors, (v) => v, markNs, events, "chart-errors") : null),
    el("section", { class: "card", id: "events" },
      el("h2", { text: `${link.events.length} link events` }),
      el("table", {}, el("tbody", {}, link.events.map((e) => el("tr", {},
        el("td", { class: "mono", text: e.at }),
        el("td", { class: "mono", text: `${e.device}:${e.interface}` }),
        el("td", { text: e.kind }),
        el("td", { text: e.detail })))))));
}

// -- one GPU node: quarantine state and Xid history -------------------------------------------

async function showNode(app, name) {
  const node = await api(`/v1/nodes/${encodeURIComponent(name)}?limit=200`);
  const s = node.state;
  document.title = `railtrace: node ${name}`;
  app.replaceChildren(
    el("section", { class: "card", id: "node-summary" },
      el("h1", {}, `Node ${s.node} `, el("span", {
        class: `badge ${s.quarantined ? "stalled" : "healthy"}`,
        text: s.quarantined ? "quarantined" : "in service",
      })),
      el("dl", { class: "facts" },
        el("dt", { text: "why" }), el("dd", { text: s.reason || "—" }),
        el("dt", { text: "decided at" }), el("dd", { class: "mono", text: s.decided_at || "—" }),
        el("dt", { text: "Xids seen" }), el("dd", { text: s.xids }),
        el("dt", { text: "release" }), el("dd", { text: s.sdc_suspect
          ? "suspected silent data corruption: only `railtrace release-node` lifts it"
          : "`railtrace release-node` where its Xid collector runs" }))),
    el("section", { class: "card", id: "xids" },
      el("h2", { text: "Xid history, newest first" }),
      el("table", {},
        el("thead", {}, el("tr", {}, ["time (UTC)", "Xid", "PCI", "action", "detail"].map((h) => el("th", { text: h })))),
        el("tbody", {}, node.events.map((e) => el("tr", {},
          el("td", { class: "mono", text: e.at }),
          el("td", { class: "num", text: e.xid ?? e.kind }),
          el("td", { class: "mono", text: e.pci }),
          el("td", { class: e.action === "quarantine" ? "culprit" : "", text: e.action || "" }),
          el("td", { text: e.detail })))))));
}

// -- ports cabled differently from the plan --------------------------------------------------

async function showCabling(app) {
  const device = new URLSearchParams(location.search).get("device");
  const q = new URLSearchParams({ limit: "1000" });
  if (device) q.set("device", device);
  const found = await api(`/v1/topology/cabling?${q}`);
  document.title = `railtrace: ${found.differences.length} cabling differences`;
  const end = (e) => (e ? `${e.device}:${e.interface}` : "—");
  app.replaceChildren(el("section", { class: "card", id: "cabling" },
    el("h1", { text: device ? `Cabling differences seen from ${device}` : "Cabling differences" }),
    el("p", { class: "muted", text: "Ports whose LLDP neighbour differs from cables.csv now. " +
      "A port leaves the list once it is cabled as planned again." }),
    found.differences.length
      ? el("table", {},
        el("thead", {}, el("tr", {}, ["port", "kind", "planned far end", "seen far end", "since", "detail"]
          .map((h) => el("th", { text: h })))),
        el("tbody", {}, found.differences.map((d) => el("tr", { "data-port": `${d.device}:${d.interface}` },
          el("td", { class: "mono", text: `${d.device}:${d.interface}` }),
          el("td", { class: d.kind === "miswired" ? "culprit" : "", text: d.kind }),
          el("td", { class: "mono", text: end(d.planned) }),
          el("td", { class: "mono", text: end(d.seen) }),
          el("td", { class: "mono", text: d.since }),
          el("td", { text: d.detail })))))
      : el("p", { id: "no-differences", text: "Every port that reports LLDP is cabled as planned." })));
}

// -- the evidence timeline --------------------------------------------------------------------

// Runs of one kind from one source (every rank's watchdog line) are folded after the first
// few, so the events that differ stay on screen.
const RUN_SHOWN = 3;

function timelineTable(timeline, verdict) {
  const stall = verdict.stalled_at_ns;
  if (!timeline.events.length) return el("p", { class: "muted", text: "No events stored for this job." });
  const row = (e) => el("tr", { class: stall && e.ts_ns >= stall ? "after-stall" : "" },
    el("td", { class: "when mono", text: e.ts }),
    el("td", { class: "num", text: offset(e.ts_ns, stall) }),
    el("td", { text: e.source }),
    el("td", { text: e.kind }),
    el("td", { class: "mono", text: e.subject }),
    el("td", { text: e.detail }));
  const rows = [];
  const events = timeline.events;
  for (let i = 0; i < events.length;) {
    let j = i;
    while (j < events.length && events[j].source === events[i].source && events[j].kind === events[i].kind) j++;
    const run = events.slice(i, j);
    rows.push(...run.slice(0, RUN_SHOWN).map(row));
    if (run.length > RUN_SHOWN) {
      const rest = run.slice(RUN_SHOWN);
      const last = rest[rest.length - 1];
      const fold = el("tr", { class: "fold" }, el("td", { colspan: 6 },
        el("button", { type: "button", class: "unfold", text:
          `… ${rest.length} more ${run[0].source} ${run[0].kind} until ${offset(last.ts_ns, stall)} (show)` })));
      const hidden = rest.map(row);
      hidden.forEach((r) => { r.hidden = true; });
      fold.querySelector("button").addEventListener("click", () => {
        hidden.forEach((r) => { r.hidden = false; });
        fold.remove();
      });
      rows.push(fold, ...hidden);
    }
    i = j;
  }
  return el("table", { class: "timeline" },
    el("thead", {}, el("tr", {}, ["time (UTC)", "vs stall", "source", "kind", "subject", "detail"]
      .map((h) => el("th", { text: h })))),
    el("tbody", {}, rows));
}

// -- routing ----------------------------------------------------------------------------------

async function route() {
  const app = document.getElementById("app");
  const path = location.pathname;
  const job = /^\/incidents\/(.+)$/.exec(path);
  const link = /^\/links\/(.+)$/.exec(path);
  const node = /^\/nodes\/(.+)$/.exec(path);
  const cabling = path === "/cabling";
  delete app.dataset.ready; // set again once this rendering has finished, either way
  try {
    if (job) await showJob(app, decodeURIComponent(job[1]));
    else if (link) await showLink(app, decodeURIComponent(link[1]));
    else if (node) await showNode(app, decodeURIComponent(node[1]));
    else if (cabling) await showCabling(app);
    else await showList(app);
    app.dataset.ready = "true";
  } catch (error) {
    if (error instanceof NeedToken) askForToken(app, error.message);
    else app.replaceChildren(el("section", { class: "card" },
      el("p", { class: "error", id: "load-error", text: error.message }),
      el("p", {}, el("a", { href: "/incidents", text: "All stalled jobs" }))));
    app.dataset.ready = "error";
  }
}

document.addEventListener("DOMContentLoaded", async () => {
  document.getElementById("forget-token").addEventListener("click", async () => {
    await fetch("/v1/session", { method: "DELETE" });
    route();
  });
  try {
    await takeTokenFromFragment();
  } catch (error) {
    const app = document.getElementById("app");
    if (error instanceof NeedToken) askForToken(app, error.message);
    else app.replaceChildren(el("p", { class: "error", id: "load-error", text: error.message }));
    app.dataset.ready = "error";
    return;
  }
  route();
});
