// The fabric drawing of one job: its switches by tier (super-spines, spines, leaves) and its
// host cables as a matrix, one row per host and one column per leaf, the leaves grouped by
// rail. A rail-optimized fabric cables every host to every rail, so lines from hosts to leaves
// cross each other whatever the order; a matrix cell per cable never does, and it stays
// readable when the job spans hundreds of hosts (rows without anything to see are folded).
// Uses el() and svg() from incident.js; loaded before it, called only once both are loaded.
"use strict";

// Below this confidence the answer is drawn as unsure: the same level under which Slack
// stays silent by default (alerts.min_confidence), so the page never looks surer than Slack.
const SURE_CONFIDENCE = 0.5;
// More host rows than this and the rows with nothing marked are folded into one.
const HOST_ROWS_SHOWN = 24;
// Monospace at 11 px: the width of one character, to size label bands so none is clipped.
const FONT_PX = 11;
const CHAR_PX = 6.8;
const COL_PX = 22;
// The least room between two switches of a tier: their names stand vertical, one line each.
const SWITCH_PITCH_PX = FONT_PX + 5;
const MIN_SCALE = 0.75;
const RAIL_GAP_PX = 12;
const ROW_PX = 18;
const TIER_GAP_PX = 110;
// One colour per candidate rank; red is kept for a sure culprit, amber for a tie or doubt,
// purple for the PFC spread (a purple candidate vanished in it), grey for plain links.
const CANDIDATE_COLORS = ["#2f5fd0", "#17becf", "#8c564b", "#e377c2", "#1b7f5b", "#bcbd22", "#0b3d91"];
const RED = "#d62728";
const AMBER = "#e08a00";
const PFC_COLOR = "#6a3d9a";

/** What the verdict says about each link and node, as the drawing and its legend show it. */
function fabricMarks(verdict, timeline, topology) {
  const tied = new Set(verdict.cause.tied || []);
  const named = verdict.cause.link ? verdict.cause.link.id : verdict.cause.node;
  const sure = !tied.size && verdict.cause.kind !== "unknown"
    && verdict.cause.confidence >= SURE_CONFIDENCE;
  const marks = new Map(); // link id or node name -> {rank, score, kind, color}
  let other = 0;
  for (const c of verdict.candidates.slice(0, 8)) {
    const key = c.link ? c.link.id : c.node;
    if (!key || marks.has(key)) continue;
    let kind = "candidate", color;
    if (tied.has(key)) { kind = "tied"; color = AMBER; }
    else if (key === named && sure) { kind = "culprit"; color = RED; }
    else if (key === named && verdict.cause.kind !== "unknown") { kind = "unsure"; color = AMBER; }
    else color = CANDIDATE_COLORS[other++ % CANDIDATE_COLORS.length];
    marks.set(key, { rank: c.rank, score: c.score, kind, color });
  }
  // The PFC spread: every link the evidence, the timeline or the link events around the
  // stall saw pausing or storming.
  const pfc = new Set(verdict.evidence
    .concat(verdict.candidates.flatMap((c) => c.evidence), timeline ? timeline.events : [])
    .filter((e) => e.source === "gnmi" && /pfc|pause/i.test(e.kind))
    .map((e) => e.subject));
  for (const l of topology.links) if ((l.events || []).some((k) => k.startsWith("pfc"))) pfc.add(l.id);
  return { tied, sure, marks, pfc, at: verdict.stalled_at, named: verdict.cause.kind !== "unknown" };
}

function fabricView(topology, verdict, timeline) {
  const box = el("div", { class: "fabric-box" });
  const draw = (unfold) => box.replaceChildren(...fabricDrawing(topology, verdict, timeline, unfold, draw));
  draw(false);
  return box;
}

function fabricDrawing(topology, verdict, timeline, unfold, redraw) {
  const m = fabricMarks(verdict, timeline, topology);
  const roles = new Map(topology.devices.map((d) => [d.name, d]));
  const isHost = (name) => (roles.get(name) || {}).role === "host";
  const hosts = topology.devices.filter((d) => d.role === "host").map((d) => d.name).sort();
  const leaves = topology.devices.filter((d) => d.role === "leaf");
  const upper = topology.devices.filter((d) => d.role !== "host" && d.role !== "leaf");
  // Leaves in rail columns; a leaf without a rail goes in a last column of its own.
  const rails = [...new Set(leaves.map((d) => d.rail))].sort((a, b) => (a ?? 1e9) - (b ?? 1e9));
  const byRail = rails.map((r) => leaves.filter((d) => d.rail === r).map((d) => d.name).sort());
  // Cables: a host cable is a cell of the matrix, any other is a line between tiers.
  const cells = new Map(); // host -> [{link, leaf}]
  const lines = [];
  for (const l of topology.links) {
    const [ha, hb] = [isHost(l.a.device), isHost(l.b.device)];
    if (ha !== hb) {
      const host = ha ? l.a.device : l.b.device;
      if (!cells.has(host)) cells.set(host, []);
      cells.get(host).push({ link: l, leaf: ha ? l.b.device : l.a.device });
    } else lines.push(l);
  }
  const marked = (h) => m.marks.has(h) || (cells.get(h) || []).some(
    (c) => m.marks.has(c.link.id) || m.pfc.has(c.link.id));
  const fold = !unfold && hosts.length > HOST_ROWS_SHOWN;
  const shownHosts = fold ? hosts.filter(marked) : hosts;
  const folded = hosts.length - shownHosts.length;

  const longest = (names) => Math.max(4, ...names.map((n) => n.length)) * CHAR_PX;
  // Room for the longest host name with a candidate's rank before it, and for the line that
  // counts the folded hosts (longer than short host names: cut at the left edge otherwise).
  const foldText = `+ ${folded} hosts folded`;
  const gutter = 16 + longest(hosts.map((h) => `#8 ${h}`).concat(["no rail", folded ? foldText : ""]));
  const pos = new Map();
  let x = gutter;
  const railSpans = [];
  byRail.forEach((names, i) => {
    // As wide as its leaves, or as its label when it has only one.
    const span = Math.max(names.length * COL_PX, railName(rails[i]).length * CHAR_PX + 6);
    const start = x;
    let lx = x + (span - names.length * COL_PX) / 2;
    for (const n of names) { pos.set(n, { x: lx + COL_PX / 2 }); lx += COL_PX; }
    x += span;
    railSpans.push({ rail: rails[i], start, end: x });
    x += RAIL_GAP_PX;
  });
  // Upper tiers, the highest first, each spread over the leaves' width with its label band;
  // a tier with more switches than fit there (a big pod's spines) widens the drawing, with
  // the rails centred under it, rather than draw its names over each other.
  const tiers = [...new Set(upper.map((d) => d.tier ?? 2))].sort((a, b) => b - a);
  const tierNames = tiers.map((t) => upper.filter((d) => (d.tier ?? 2) === t).map((d) => d.name).sort());
  const leafSpan = Math.max(COL_PX, x - RAIL_GAP_PX - gutter);
  const span = Math.max(leafSpan, ...tierNames.map((names) => names.length * SWITCH_PITCH_PX));
  const shift = (span - leafSpan) / 2;
  for (const p of pos.values()) p.x += shift;
  for (const s of railSpans) { s.start += shift; s.end += shift; }
  x += shift * 2;
  const width = Math.max(x + 16, gutter + 240);
  let y = 8;
  const tierRows = tiers.map((t, i) => {
    const names = tierNames[i];
    const band = longest(names) + 6;
    const row = { tier: t, names, labelTop: y, y: y + band + 8 };
    names.forEach((n, j) => pos.set(n, { x: gutter + (span * (j + 0.5)) / names.length, y: row.y }));
    y = row.y + TIER_GAP_PX;
    return row;
  });
  const leafY = y;
  for (const names of byRail) for (const n of names) pos.get(n).y = leafY;
  const leafLabelTop = leafY + 10;
  const railRowY = leafLabelTop + longest(leaves.map((d) => d.name)) + 16;
  const firstRowY = railRowY + ROW_PX;
  const rowY = new Map(shownHosts.map((h, i) => [h, firstRowY + i * ROW_PX]));
  const height = firstRowY + (shownHosts.length + (folded ? 1 : 0)) * ROW_PX + 8;

  const parts = [];
  // Rail bands behind everything, so the eye finds a rail's leaves and cables at once.
  for (const s of railSpans) {
    parts.push(svg("rect", { class: "rail-band", x: s.start - 3, y: leafY - 14,
      width: s.end - s.start + 6, height: height - leafY + 8 }));
    parts.push(svg("text", { class: "rail-label", x: (s.start + s.end) / 2, y: railRowY,
      "text-anchor": "middle", text: railName(s.rail) }));
  }
  // Lines between switch tiers, plain ones first so the marked ones are drawn on top.
  const pairs = new Map();
  for (const l of lines) {
    const key = [l.a.device, l.b.device].sort().join(" ");
    pairs.set(key, (pairs.get(key) || 0) + 1);
  }
  const seen = new Map();
  const order = (l) => (m.marks.has(l.id) ? 2 : m.pfc.has(l.id) ? 1 : 0);
  const drawn = [];
  for (const l of lines.slice().sort((p, q) => order(p) - order(q))) {
    const a = pos.get(l.a.device), b = pos.get(l.b.device);
    if (!a || !b) continue;
    const key = [l.a.device, l.b.device].sort().join(" ");
    const k = seen.get(key) || 0;
    seen.set(key, k + 1);
    const fan = (k - (pairs.get(key) - 1) / 2) * 3; // parallel cables side by side
    const [lo, hi] = a.y > b.y ? [a, b] : [b, a];
    drawn.push({ l, x1: lo.x, y1: lo.y, x2: hi.x + fan, y2: hi.y });
  }
  const dots = rankDots(drawn.filter((d) => m.marks.has(d.l.id)), m);
  for (const d of drawn) parts.push(linkLine(d, dots.get(d.l.id), m));
  // Devices: switches as dots with their full name, hosts as row labels.
  for (const row of tierRows) for (const n of row.names) parts.push(switchNode(n, pos.get(n), row.labelTop, m, roles));
  for (const names of byRail) for (const n of names) parts.push(switchNode(n, pos.get(n), leafLabelTop, m, roles, true));
  for (const h of shownHosts) {
    const yy = rowY.get(h);
    const mark = m.marks.get(h);
    if (mark) {
      // A node candidate (a GPU): its whole row outlined in its colour.
      parts.push(paint(svg("rect", { class: `host-row ${mark.kind}`, x: 4, y: yy - ROW_PX / 2,
        width: x - 4, height: ROW_PX }), "stroke", mark));
    }
    parts.push(svg("a", { href: `/nodes/${encodeURIComponent(h)}`, class: "host", "data-device": h },
      svg("title", { text: `${h}${mark ? `: candidate #${mark.rank}, score ${mark.score.toFixed(2)}` : ""}` }),
      paint(svg("text", { class: `host-label ${mark ? mark.kind : ""}`, x: gutter - 8, y: yy + 4,
        "text-anchor": "end", text: mark ? `#${mark.rank} ${h}` : h }), "fill", mark)));
    for (const c of cells.get(h) || []) parts.push(cableCell(c, pos.get(c.leaf), yy, m));
  }
  if (folded) {
    parts.push(svg("text", { class: "fold-label", x: gutter - 8, y: firstRowY + shownHosts.length * ROW_PX + 4,
      "text-anchor": "end", text: foldText }));
  }
  const drawing = svg("svg", {
    viewBox: `0 0 ${width} ${height}`, width, height, class: "fabric", role: "img",
    "aria-label": `fabric of job ${verdict.job_id}`,
  }, parts);
  // Scaled down to fit a narrow card, but not below where its 11 px text stays legible:
  // past that the drawing scrolls inside its card.
  drawing.style.setProperty("min-width", `${Math.round(width * MIN_SCALE)}px`);
  const out = [drawing, fabricLegend(m)];
  if (folded) {
    const button = el("button", { type: "button", class: "unfold-hosts",
      text: `Show all ${hosts.length} hosts (${folded} without a candidate or PFC pauses are folded)` });
    button.addEventListener("click", () => redraw(true));
    out.push(el("p", {}, button));
  }
  return out;
}

function railName(rail) {
  return rail === null ? "no rail" : `rail ${rail}`;
}

// Where along a candidate's line its rank dot may sit, most wanted first: candidates often
// share a switch, so their lines meet at one end and dots at one fixed place would cover
// each other.
const DOT_AT = [0.35, 0.55, 0.2, 0.7, 0.45, 0.85, 0.1];
const DOT_R = 8;

/** Link id -> its rank dot's centre, the best ranked placed first, each where it keeps
 * clear of the dots already placed (or, crowded, where it comes closest to that). */
function rankDots(marked, m) {
  const placed = new Map();
  const rank = (d) => m.marks.get(d.l.id).rank;
  for (const d of marked.slice().sort((p, q) => rank(p) - rank(q))) {
    let best = null;
    for (const t of DOT_AT) {
      const c = { x: d.x1 + (d.x2 - d.x1) * t, y: d.y1 + (d.y2 - d.y1) * t };
      const gap = Math.min(Infinity, ...[...placed.values()].map((o) => Math.hypot(o.x - c.x, o.y - c.y)));
      if (!best || gap > best.gap) best = { ...c, gap };
      if (gap >= 2 * DOT_R + 3) break;
    }
    placed.set(d.l.id, best);
  }
  return placed;
}

function linkLine({ l, x1, y1, x2, y2 }, dot, m) {
  const mark = m.marks.get(l.id);
  const pfc = m.pfc.has(l.id);
  const kind = mark ? mark.kind : pfc ? "pfc" : "";
  const title = `${l.id}\nchance the job crosses it: ${Math.round((l.weight ?? 0) * 100)}%` +
    (mark ? `\ncandidate #${mark.rank}, score ${mark.score.toFixed(2)} (${mark.kind})` : "") +
    (pfc ? "\nPFC pauses in the evidence" : "");
  const g = svg("a", { href: linkHref(l.id, m), class: `link ${kind}${pfc ? " pfc" : ""}`, "data-link": l.id },
    svg("title", { text: title }),
    // A wide transparent stroke under the visible one, so a hairline is easy to click.
    svg("line", { class: "hit", x1, y1, x2, y2 }),
    // A white casing under a candidate, so it stays distinct where it crosses many others.
    mark ? svg("line", { class: "casing", x1, y1, x2, y2 }) : null,
    paint(svg("line", { class: `link ${kind}`, x1, y1, x2, y2, "data-link": l.id }), "stroke", mark));
  if (mark) {
    g.append(svg("circle", { class: "rank-dot", cx: dot.x, cy: dot.y, r: DOT_R, fill: mark.color }),
      svg("text", { class: "rank-text", x: dot.x, y: dot.y + 4, "text-anchor": "middle", text: mark.rank }));
  }
  return g;
}

function cableCell(c, leaf, y, m) {
  const mark = m.marks.get(c.link.id);
  const pfc = m.pfc.has(c.link.id);
  const kind = mark ? mark.kind : pfc ? "pfc" : "";
  const size = ROW_PX - 4;
  return svg("a", { href: linkHref(c.link.id, m), class: `cable ${kind}${pfc ? " pfc" : ""}`, "data-link": c.link.id },
    svg("title", { text: `${c.link.id}` +
      (mark ? `\ncandidate #${mark.rank}, score ${mark.score.toFixed(2)} (${mark.kind})` : "") +
      (pfc ? "\nPFC pauses in the evidence" : "") }),
    paint(svg("rect", { class: `cell ${kind}`, x: leaf.x - size / 2, y: y - size / 2, width: size,
      height: size, rx: 2 }), "fill", mark),
    mark ? svg("text", { class: "rank-text", x: leaf.x, y: y + 4, "text-anchor": "middle", text: mark.rank }) : null);
}

function switchNode(name, p, labelTop, m, roles, below) {
  const mark = m.marks.get(name);
  const end = [...m.marks.entries()].some(([id, k]) => k.kind === "culprit" && id.includes("--")
    && id.split("--").some((side) => side.split(":")[0] === name));
  const d = roles.get(name);
  // Full names, vertical, in a band sized to the longest: never cut.
  const lx = p.x + 4, ly = below ? labelTop : p.y - 12;
  return svg("a", { href: `/cabling?device=${encodeURIComponent(name)}`, class: "switch", "data-device": name },
    svg("title", { text: `${name} (${d.role}${d.rail !== null ? `, rail ${d.rail}` : ""}); its cabling` }),
    svg("circle", { class: `device ${d.role} ${end ? "culprit" : ""} ${mark ? mark.kind : ""}`,
      cx: p.x, cy: p.y, r: 7 }),
    svg("text", { class: "device-label", x: lx, y: ly, "text-anchor": below ? "start" : "start",
      transform: `rotate(${below ? 90 : -90} ${lx} ${ly})`, text: name }));
}

/** A candidate's colour on `node`, through the CSSOM: it must win over the stylesheet's
 * plain-link colour, and the page's CSP forbids style attributes. */
function paint(node, property, mark) {
  if (mark) node.style.setProperty(property, mark.color);
  return node;
}

function linkHref(id, m) {
  const q = m.at ? `?${new URLSearchParams({ at: m.at })}` : "";
  return `/links/${encodeURIComponent(id)}${q}`;
}

function fabricLegend(m) {
  const items = [...m.marks.entries()].map(([key, k]) =>
    el("span", { swatch: k.color, class: `mark ${k.kind}`, "data-mark": key },
      `#${k.rank} `, el("span", { class: "mono", text: key }),
      ` ${k.score.toFixed(2)}${k.kind === "culprit" ? " culprit" : k.kind === "tied" ? " tie"
        : k.kind === "unsure" ? " unsure" : ""}`));
  if (m.pfc.size) items.push(el("span", { swatch: PFC_COLOR, class: "mark pfc", text: `PFC pauses seen (${m.pfc.size} links)` }));
  items.push(el("span", { swatch: "#c3c9d4", text: "other links the job may cross" }));
  const note = m.tied.size
    ? "A tie: the evidence cannot tell these candidates apart, so none is drawn as the culprit."
    : m.marks.size && !m.named
      ? "No cause named: the evidence does not single one out, so every candidate keeps its own colour and none is red."
      : m.marks.size && !m.sure
      ? "Low confidence: the best candidate is drawn amber and dashed, not as a sure culprit."
      : "Host cables are cells (row: host, column: its leaf); click any link, host or switch.";
  return el("div", { class: "legend fabric-legend" }, items, el("p", { class: "muted note", text: note }));
}
