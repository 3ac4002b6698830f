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
      el("td", { class: `num ${j.confidence < SURE_CONFIDENCE ? "unsure" : ""}` },
        `${Math.round(j.confidence * 100)}%`),
      el("td", {}, timeEl(j.stalled_at)),
      el("td", {}, timeEl(j.updated_at))));
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
          "Healthy jobs are listed by GET /v1/jobs." })),
    refreshControl(app));
}

// The list reloads itself while it is open, unless paused; one timer for the whole page.
const REFRESH_S = 15;
let refreshTimer = null;
let refreshPaused = false;

function refreshControl(app) {
  clearTimeout(refreshTimer);
  const button = el("button", { type: "button", id: "refresh-toggle",
    text: refreshPaused ? "resume" : "pause" });
  const status = el("span", { class: "muted", id: "refresh-status", text: refreshPaused
    ? "Auto-refresh paused. "
    : `Refreshed ${utcSeconds(Date.now())} (${localClock(Date.now())}); again in ${REFRESH_S} s. ` });
  button.addEventListener("click", () => {
    refreshPaused = !refreshPaused;
    showList(app).catch((e) => { status.textContent = `Refresh failed: ${e.message} `; });
  });
  if (!refreshPaused) {
    refreshTimer = setTimeout(() => {
      if (location.pathname === "/incidents" || location.pathname === "/") {
        showList(app).catch((e) => { status.textContent = `Refresh failed: ${e.message} `; });
      }
    }, REFRESH_S * 1000);
  }
  return el("p", { class: "refresh" }, status, button);
}

// -- one job --------------------------------------------------------------------------------

async function showJob(app, jobId) {
  const verdict = await api(`/v1/jobs/${encodeURIComponent(jobId)}/verdict`);
  document.title = `railtrace: ${jobId} ${verdict.state}`;
  const culprit = verdict.cause.kind === "link" && verdict.cause.link ? verdict.cause.link.id : null;
  const [timeline, topology, counters, next] = await Promise.all([
    api(`/v1/jobs/${encodeURIComponent(jobId)}/timeline?limit=1000`),
    api(topologyUrl(jobId, verdict.stalled_at_ns)).catch((e) => e),
    culprit && verdict.stalled_at_ns
      ? api(linkUrl(culprit, verdict.stalled_at_ns)).catch((e) => e)
      : Promise.resolve(null),
    api(`/v1/jobs/${encodeURIComponent(jobId)}/next-steps`).catch((e) => e),
  ]);
  app.replaceChildren(
    summaryCard(verdict),
    nextStepsCard(next),
    el("div", { class: "grid" },
      el("section", { class: "card", id: "fabric" },
        el("h2", { text: "The job's part of the rail fabric, by tier and rail" }),
        topology instanceof Error
          ? el("p", { class: "error", text: `No fabric view: ${topology.message}` })
          : fabricView(topology, verdict, timeline)),
      el("section", { class: "card", id: "candidates" },
        el("h2", { text: "Candidates, most likely first" }),
        candidateTable(verdict))),
    el("section", { class: "card", id: "counters" },
      el("h2", { text: culprit ? `Counters of ${culprit} around the stall` : "Counters" }),
      counterCharts(counters, verdict)),
    el("section", { class: "card", id: "timeline" },
      el("h2", { text: `Evidence timeline (${timeline.total} events)` }),
      timelineTable(timeline, verdict)));
  // A drawing wider than its column of the grid (a big job's leaves) takes the grid's whole
  // width, the candidates going below it, rather than shrink its text.
  const drawing = app.querySelector("#fabric svg.fabric");
  if (drawing && drawing.width.baseVal.value > drawing.parentElement.clientWidth) {
    app.querySelector(".grid").classList.add("wide-fabric");
  }
  drawCharts();
}

function counterCharts(counters, verdict) {
  if (counters === null) return el("p", { class: "muted", text: "The verdict names no link." });
  if (counters instanceof Error) return el("p", { class: "error", text: `No counters: ${counters.message}` });
  return el("div", {}, counterPanels(counters, [counters.a, counters.b], verdict.stalled_at_ns));
}

/** The job's links, with each one's link events around the stall (where pauses spread). */
function topologyUrl(jobId, stallNs) {
  const q = new URLSearchParams({ job: jobId });
  if (stallNs) {
    q.set("since", new Date(stallNs / NS_PER_MS - CHART_BEFORE_S * 1000).toISOString());
    q.set("until", new Date(stallNs / NS_PER_MS + CHART_AFTER_S * 1000).toISOString());
  }
  return `/v1/topology?${q}`;
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
  const unsure = cause.kind !== "unknown" && cause.confidence < SURE_CONFIDENCE;
  const tiedLinks = (cause.tied || []).map((t) => t.includes("--")
    ? causeLink("link", t, null, v.stalled_at) : causeLink("node", null, t, v.stalled_at));
  return el("section", { class: "card", id: "summary" },
    el("h1", {}, `Job ${v.job_id} `, badge(v.state)),
    el("dl", { class: "facts" },
      el("dt", { text: "cause" }),
      tiedLinks.length
        ? el("dd", { class: "tie mono", id: "cause" }, "a tie the evidence cannot tell apart: ",
          tiedLinks.flatMap((a, i) => (i ? [" | ", a] : [a])))
        : unsure
          ? el("dd", { class: "unsure mono", id: "cause" }, "unsure: ", causeLink(cause.kind, cause.link && cause.link.id, cause.node, v.stalled_at))
          : el("dd", { class: `${cause.kind === "unknown" ? "" : "culprit "}mono`, id: "cause" }, causeLink(cause.kind, cause.link && cause.link.id, cause.node, v.stalled_at)),
      el("dt", { text: "side" }), el("dd", { id: "side", text: SIDES[cause.diagnosis] || "—" }),
      el("dt", { text: "confidence" }), el("dd", { id: "confidence", class: unsure ? "unsure" : "",
        text: `${Math.round(cause.confidence * 100)}%${unsure ? " (low: check the other candidates)" : ""}` }),
      el("dt", { text: v.state === "slow" ? "slow since" : "stalled at" }), el("dd", {}, timeEl(v.stalled_at)),
      el("dt", { text: "decided" }), el("dd", { text: delay }),
      el("dt", { text: "scale" }), el("dd", { text: `${v.ranks} ranks on ${v.hosts} hosts` }),
      v.cost ? [el("dt", { text: "cost" }), el("dd", { id: "cost", text: v.cost.text })] : null));
}

/** What to do next, as commands to copy: railtrace runs none of them. */
function nextStepsCard(next) {
  const card = el("section", { class: "card", id: "next-steps" },
    el("h2", { text: "Next steps (to copy; railtrace runs nothing)" }));
  if (next instanceof Error) {
    card.append(el("p", { class: "error", text: `No next steps: ${next.message}` }));
  } else if (!next.steps.length) {
    card.append(el("p", { class: "muted", text: next.topology
      ? "None: the verdict names no single culprit."
      : "None shown: without the fabric (api.topology_dir) a link's host and switch ends cannot be told apart." }));
  } else {
    card.append(el("ol", {}, next.steps.map((s) => el("li", { "data-action": s.action },
      el("p", { text: s.what }),
      s.command ? el("pre", { class: "mono command", text: s.command }) : null))));
  }
  return card;
}

function candidateTable(v) {
  if (!v.candidates.length) return el("p", { class: "muted", text: "No candidates." });
  return el("table", {},
    el("thead", {}, el("tr", {}, ["#", "cause", "score", "evidence"].map((h) => el("th", { text: h })))),
    el("tbody", {}, v.candidates.slice(0, 8).map((c) =>
      el("tr", {},
        el("td", { class: "num", text: c.rank }),
        el("td", { class: "mono" }, causeLink(c.kind, c.link && c.link.id, c.node, v.stalled_at)),
        el("td", { class: "num", text: c.score.toFixed(2) }),
        el("td", { class: "num", text: c.evidence.length })))));
}

// -- one link: its counters, events and blast radius -----------------------------------------

async function showLink(app, linkId) {
  const at = new URLSearchParams(location.search).get("at");
  const center = at ? isoMs(at) : Date.now() - (LINK_WINDOW_S * 1000) / 2;
  if (Number.isNaN(center)) throw new Error(`not a time: at=${at}`);
  const q = new URLSearchParams({
    since: new Date(center - (LINK_WINDOW_S * 1000) / 2).toISOString(),
    until: new Date(center + (LINK_WINDOW_S * 1000) / 2).toISOString(),
  });
  const link = await api(`/v1/links/${encodeURIComponent(linkId)}?${q}`);
  document.title = `railtrace: link ${linkId}`;
  const markNs = at ? center * NS_PER_MS : null;
  app.replaceChildren(
    el("section", { class: "card", id: "link-summary" },
      el("h1", { class: "mono", text: `Link ${link.id}` }),
      el("dl", { class: "facts" },
        el("dt", { text: "ends" }), el("dd", { class: "mono", id: "ends" }, linkEnd(link.a, link.hosts), " ↔ ", linkEnd(link.b, link.hosts)),
        el("dt", { text: "rail" }), el("dd", { text: link.rail === null ? "above the leaves (all rails)" : String(link.rail) }),
        el("dt", { text: "window" }), el("dd", {}, timeEl(link.since), " – ", timeEl(link.until)))),
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
            el("td", {}, timeEl(j.last_seen))))))
        : el("p", { class: "muted", text: "No job railtrace knows of crosses this link." })),
    el("section", { class: "card", id: "counters" },
      el("h2", { text: at ? "Counters around the moment asked for (red dashes)" : "Counters, the last hour" }),
      counterPanels(link, [link.a, link.b], markNs)),
    el("section", { class: "card", id: "events" },
      el("h2", { text: `${link.events.length} link events` }),
      el("table", {}, el("tbody", {}, link.events.map((e) => el("tr", {},
        el("td", {}, timeEl(e.at)),
        el("td", { class: "mono", text: `${e.device}:${e.interface}` }),
        el("td", { text: e.kind }),
        el("td", { text: e.detail })))))));
  drawCharts();
}

/** One end of a link, leading to its node's page (a host) or its cabling (a switch). */
function linkEnd(end, hosts) {
  const text = `${end.device}:${end.interface}`;
  return (hosts || []).includes(end.device)
    ? el("a", { href: `/nodes/${encodeURIComponent(end.device)}`, class: "host-end", text })
    : el("a", { href: `/cabling?${new URLSearchParams({ device: end.device })}`, text });
}

// -- one GPU node: quarantine state and Xid history -------------------------------------------

async function showNode(app, name) {
  const node = await api(`/v1/nodes/${encodeURIComponent(name)}?limit=200`).catch((e) => {
    if (e.status === 404) return null;
    throw e;
  });
  if (node === null) {
    // A host with no Xid stored is not an error: say so, and that it is in service.
    document.title = `railtrace: node ${name}`;
    app.replaceChildren(el("section", { class: "card", id: "node-summary" },
      el("h1", {}, `Node ${name} `, el("span", { class: "badge healthy", text: "in service" })),
      el("p", { id: "no-xids", text: "No Xid or quarantine event from this node is stored: " +
        "railtrace has not seen its GPUs fail." })));
    return;
  }
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
        el("dt", { text: "decided at" }), el("dd", {}, timeEl(s.decided_at)),
        el("dt", { text: "Xids seen" }), el("dd", { text: s.xids }),
        el("dt", { text: "release" }), el("dd", { text: s.sdc_suspect
          ? "suspected silent data corruption: only `railtrace release-node` lifts it"
          : "`railtrace release-node` where its Xid collector runs" }))),
    el("section", { class: "card", id: "xids" },
      el("h2", { text: "Xid history, newest first" }),
      el("table", {},
        el("thead", {}, el("tr", {}, ["time (UTC, local)", "Xid", "PCI", "action", "detail"].map((h) => el("th", { text: h })))),
        el("tbody", {}, node.events.map((e) => el("tr", {},
          el("td", {}, timeEl(e.at)),
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
          el("td", {}, timeEl(d.since)),
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
    el("td", { class: "when" }, timeEl(e.ts)),
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
    el("thead", {}, el("tr", {}, ["time (UTC, local)", "vs stall", "source", "kind", "subject", "detail"]
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
