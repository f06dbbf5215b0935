// The overlay page: reads the daemon's /overlay/v1 endpoints (relative URLs: same origin,
// same credentials) and draws nodes and links in SVG; the lookup form asks /v1/lookup and
// highlights the path. No other origin is contacted.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const state = { nodes: [], links: [], pos: new Map(), version: 0 };

async function get(path) {
  const res = await fetch(path, { headers: { "Accept": "application/json" } });
  const body = await res.json().catch(() => ({ code: "unknown", message: res.statusText }));
  if (!res.ok) {
    throw new Error(body.message || body.code || res.statusText);
  }
  return body;
}

function el(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function showError(err) {
  const p = document.getElementById("error");
  p.textContent = String(err.message || err);
  p.hidden = false;
}

function fmtBandwidth(kbps) {
  if (kbps >= 1e6) return (kbps / 1e6).toFixed(1) + " Gbit/s";
  if (kbps >= 1e3) return (kbps / 1e3).toFixed(1) + " Mbit/s";
  return kbps + " kbit/s";
}

function fmtLatency(us) {
  return us >= 1000 ? (us / 1000).toFixed(1) + " ms" : us + " µs";
}

// layout places super nodes on an inner ring and ordinary nodes on an outer ring.
function layout(nodes) {
  const supers = nodes.filter(n => n.kind === "super");
  const ords = nodes.filter(n => n.kind !== "super");
  const pos = new Map();
  const ring = (list, r) => list.forEach((n, i) => {
    const a = 2 * Math.PI * i / Math.max(list.length, 1) - Math.PI / 2;
    pos.set(n.name, { x: 320 + r * Math.cos(a), y: 320 + r * Math.sin(a) });
  });
  ring(supers, supers.length > 1 ? 130 : 0);
  ring(ords, 270);
  return pos;
}

function draw() {
  const gl = document.getElementById("links");
  const gn = document.getElementById("nodes");
  gl.replaceChildren();
  gn.replaceChildren();
  for (const l of state.links) {
    const a = state.pos.get(l.a), b = state.pos.get(l.b);
    if (!a || !b) continue;
    const line = el("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: "link" + (l.used ? "" : " unused"),
      "data-a": l.a, "data-b": l.b });
    line.appendChild(el("title", {}, `${l.a} – ${l.b}: ${fmtBandwidth(l.bandwidth_kbps)}, ${fmtLatency(l.latency_us)}, ` +
      `loss ${l.loss_ppm} ppm, ` + (l.used ? `cost ${l.cost}` : `unused: ${l.unused}`)));
    gl.appendChild(line);
    gl.appendChild(el("text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 3, class: "metric" }, fmtLatency(l.latency_us)));
  }
  for (const n of state.nodes) {
    const p = state.pos.get(n.name);
    const c = el("circle", { cx: p.x, cy: p.y, r: n.kind === "super" ? 16 : 11,
      class: `node ${n.kind === "super" ? "super" : "ordinary"}${n.health === "down" ? " down" : ""}`, "data-node": n.name });
    c.appendChild(el("title", {}, `${n.name} (${n.kind}, ${n.health}), applied version ${n.applied_version}`));
    gn.appendChild(c);
    gn.appendChild(el("text", { x: p.x, y: p.y + (n.kind === "super" ? 30 : 24), class: "label" }, n.name));
  }
}

function fillTables() {
  const nb = document.querySelector("#node-table tbody");
  nb.replaceChildren(...state.nodes.map(n => {
    const tr = document.createElement("tr");
    tr.dataset.node = n.name;
    for (const v of [n.name, n.kind, n.health, n.applied_version + (n.behind ? ` (${n.behind} behind)` : "")]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.appendChild(td);
    }
    return tr;
  }));
  const lb = document.querySelector("#link-table tbody");
  lb.replaceChildren(...state.links.map(l => {
    const tr = document.createElement("tr");
    for (const v of [`${l.a} – ${l.b}`, fmtBandwidth(l.bandwidth_kbps), fmtLatency(l.latency_us), `${l.loss_ppm} ppm`,
      l.used ? String(l.cost) : "unused"]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.appendChild(td);
    }
    return tr;
  }));
  for (const id of ["src", "dst"]) {
    const sel = document.getElementById(id);
    sel.replaceChildren(...state.nodes.map(n => new Option(n.name, n.name)));
  }
  if (state.nodes.length > 1) document.getElementById("dst").selectedIndex = state.nodes.length - 1;
}

function highlight(path) {
  const on = new Set(path);
  document.querySelectorAll("circle.node").forEach(c => c.classList.toggle("on-path", on.has(c.dataset.node)));
  document.querySelectorAll("#node-table tbody tr").forEach(tr => tr.classList.toggle("on-path", on.has(tr.dataset.node)));
  const pairs = new Set();
  for (let i = 1; i < path.length; i++) {
    pairs.add(path[i - 1] + "\n" + path[i]);
    pairs.add(path[i] + "\n" + path[i - 1]);
  }
  document.querySelectorAll("line.link").forEach(l => l.classList.toggle("on-path", pairs.has(l.dataset.a + "\n" + l.dataset.b)));
}

// showRoutes lists node's stored route table of the newest version: the next hops it runs.
async function showRoutes(node) {
  const t = await get(`v1/routes?node=${encodeURIComponent(node)}`);
  document.getElementById("routes-title").textContent = `Routes of ${t.node}, version ${t.version}`;
  document.querySelector("#route-table tbody").replaceChildren(...t.routes.map(rt => {
    const tr = document.createElement("tr");
    for (const v of [rt.kind, rt.dest, rt.next_hop, String(rt.cost)]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.appendChild(td);
    }
    return tr;
  }));
}

async function lookup(ev) {
  ev.preventDefault();
  document.getElementById("error").hidden = true;
  const src = document.getElementById("src").value, dst = document.getElementById("dst").value;
  const box = document.getElementById("lookup-result");
  try {
    const r = await get(`v1/lookup?src=${encodeURIComponent(src)}&dst=${encodeURIComponent(dst)}`);
    highlight(r.path);
    document.getElementById("lookup-summary").textContent =
      `${r.src} → ${r.dst}: cost ${r.cost}, route version ${r.version}` + (r.in_effect ? " (in effect)" : " (not yet published)");
    document.getElementById("path-list").replaceChildren(...r.path.map((n, i) => {
      const li = document.createElement("li");
      li.textContent = i === 0 ? n : `${n} (+${r.hops[i - 1].cost})`;
      li.dataset.node = n;
      return li;
    }));
    document.getElementById("lookup-note").textContent = r.note || "";
    await showRoutes(r.src);
    box.dataset.version = String(r.version);
    box.dataset.path = r.path.join(" ");
    box.hidden = false;
  } catch (err) {
    highlight([]);
    box.hidden = true;
    showError(err);
  }
}

async function load() {
  try {
    const [nodes, links] = await Promise.all([get("v1/nodes"), get("v1/links")]);
    state.nodes = nodes.nodes;
    state.links = links.links;
    state.version = nodes.route_version;
    state.pos = layout(state.nodes);
    const behind = state.nodes.filter(n => n.behind > 0).length;
    const summary = document.getElementById("summary");
    summary.textContent = `route version ${state.version}; ${state.nodes.length} nodes (${behind} behind), ${state.links.length} links`;
    summary.dataset.version = String(state.version);
    draw();
    fillTables();
    document.body.dataset.loaded = "true";
  } catch (err) {
    showError(err);
  }
}

document.getElementById("lookup").addEventListener("submit", lookup);
load();
