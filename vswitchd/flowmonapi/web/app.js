// The flowmon page: reads the daemon's /flowmon/v1 endpoints (relative URLs: same origin,
// same credentials). One search asks three queries of the collector: a time series (drawn as
// SVG bars, one per bucket), a top-N (the talkers table) and a flow listing (the flows table).
// No other origin is contacted.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const FILTERS = ["src", "dst", "sport", "dport", "proto", "bridge", "port", "exporter"];

async function get(path) {
  const res = await fetch(path, { headers: { "Accept": "application/json" } });
  const body = await res.json().catch(() => ({ code: "unknown", message: res.statusText }));
  if (!res.ok) {
    throw new Error(body.message || body.code || res.statusText);
  }
  return body;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function cell(text, num) {
  const td = document.createElement("td");
  td.textContent = text;
  if (num) td.className = "num";
  return td;
}

function showError(err) {
  const p = document.getElementById("error");
  p.textContent = String(err.message || err);
  p.hidden = false;
}

function fmtCount(n, unit) {
  const units = ["", "k", "M", "G", "T", "P"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i] + unit;
}

// parseDur reads Go durations of the select boxes (5m, 1h, 168h) in seconds.
function parseDur(s) {
  const m = /^(\d+)(s|m|h)$/.exec(s);
  if (!m) return 0;
  return Number(m[1]) * { s: 1, m: 60, h: 3600 }[m[2]];
}

// autoInterval picks a whole-second bucket giving at most about 120 bars over span seconds.
function autoInterval(span) {
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400];
  for (const s of steps) if (span / s <= 120) return s + "s";
  return "86400s";
}

// params builds the common query parameters from the form.
function params() {
  const p = new URLSearchParams();
  const job = document.getElementById("job").value;
  if (job) p.set("job", job);
  const since = document.getElementById("since").value;
  if (since) {
    p.set("since", since);
  } else {
    p.set("from", document.getElementById("from").value.trim());
    p.set("to", document.getElementById("to").value.trim());
  }
  for (const f of FILTERS) {
    const v = document.getElementById(f).value.trim();
    if (v) p.set(f, v);
  }
  return p;
}

function spanSeconds() {
  const since = document.getElementById("since").value;
  if (since) return parseDur(since);
  const from = Date.parse(document.getElementById("from").value);
  const to = Date.parse(document.getElementById("to").value);
  return (to - from) / 1000;
}

function drawChart(points, metric, interval) {
  const bars = document.getElementById("bars");
  const axes = document.getElementById("axes");
  bars.replaceChildren();
  axes.replaceChildren();
  const W = 800, H = 260, L = 60, B = 20, T = 10;
  axes.append(svg("line", { class: "axis", x1: L, y1: H - B, x2: W, y2: H - B }),
    svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
  if (!points.length) {
    axes.append(svg("text", { class: "tick", x: W / 2, y: H / 2 }, "no flows"));
    return;
  }
  const t0 = Date.parse(points[0].start);
  const t1 = Date.parse(points[points.length - 1].start) + interval * 1000;
  const maxV = Math.max(...points.map(p => p[metric]), 1);
  const x = t => L + (W - L) * (t - t0) / Math.max(t1 - t0, 1);
  const w = Math.max((W - L) * interval * 1000 / Math.max(t1 - t0, 1) - 1, 1);
  for (const p of points) {
    const h = (H - B - T) * p[metric] / maxV;
    const r = svg("rect", { class: "bar", x: x(Date.parse(p.start)).toFixed(2), y: (H - B - h).toFixed(2),
      width: w.toFixed(2), height: h.toFixed(2), "data-start": p.start, "data-value": String(p[metric]) });
    r.append(svg("title", {}, p.start + ": " + fmtCount(p[metric], metric === "bytes" ? "B" : "") + " " + metric));
    bars.append(r);
  }
  axes.append(svg("text", { class: "tick", x: 2, y: T + 10 }, fmtCount(maxV, "")),
    svg("text", { class: "tick", x: L, y: H - 4 }, new Date(t0).toISOString().slice(11, 19)),
    svg("text", { class: "tick", x: W - 50, y: H - 4 }, new Date(t1).toISOString().slice(11, 19)));
}

function fillTop(groups, keyLabel) {
  document.getElementById("top-key").textContent = keyLabel;
  const body = document.querySelector("#top-table tbody");
  body.replaceChildren();
  for (const g of groups) {
    const tr = document.createElement("tr");
    tr.append(cell(g.key || "-"), cell(String(g.bytes), true), cell(String(g.packets), true), cell(String(g.flows), true));
    body.append(tr);
  }
}

function fillFlows(records) {
  const body = document.querySelector("#flow-table tbody");
  body.replaceChildren();
  for (const f of records) {
    const tr = document.createElement("tr");
    tr.append(cell(f.end.replace("T", " ").replace("Z", "")), cell(f.exporter || "-"), cell(f.bridge || "-"),
      cell(f.in_port || String(f.in_if)), cell(f.out_port || String(f.out_if)), cell(String(f.proto)),
      cell(f.src), cell(String(f.src_port), true), cell(f.dst), cell(String(f.dst_port), true),
      cell(String(f.bytes), true), cell(String(f.packets), true));
    body.append(tr);
  }
}

// showStatus shows the collector's ingest counters (what it stored and every loss).
async function showStatus(job) {
  const st = await get("v1/status" + (job ? "?job=" + encodeURIComponent(job) : ""));
  const c = st.counters || {};
  const n = k => String(c[k] || 0);
  document.getElementById("ingest").textContent = "collector " + st.job + " (" + st.store + "): " + n("stored") + " stored, " +
    n("dropped") + " dropped, " + n("socket_drops") + " socket drops, " + n("decode_errors") + " decode errors";
}

async function search(ev) {
  if (ev) ev.preventDefault();
  document.getElementById("error").hidden = true;
  const metric = document.getElementById("by").value;
  const interval = document.getElementById("interval").value || autoInterval(spanSeconds());
  const keySel = document.getElementById("topkey");
  const base = params();
  const series = new URLSearchParams(base); series.set("series", interval); series.set("by", metric);
  const top = new URLSearchParams(base); top.set("top", keySel.value); top.set("by", metric); top.set("n", "10");
  const flows = new URLSearchParams(base); flows.set("n", "100");
  try {
    const [s, t, f] = await Promise.all([get("v1/query?" + series), get("v1/query?" + top), get("v1/query?" + flows)]);
    const points = s.points || [], groups = t.groups || [], records = f.records || [];
    drawChart(points, metric, parseDur(interval));
    fillTop(groups, keySel.options[keySel.selectedIndex].text);
    fillFlows(records);
    const total = points.reduce((a, p) => a + p.bytes, 0);
    const nflows = points.reduce((a, p) => a + p.flows, 0);
    document.getElementById("chart-title").textContent = "Throughput (" + metric + " per " + interval + ")";
    document.getElementById("summary").textContent = nflows + " flows, " + fmtCount(total, "B") + "; showing the newest " + records.length;
    await showStatus(base.get("job"));
    document.body.dataset.searched = String(Number(document.body.dataset.searched || "0") + 1);
  } catch (err) {
    showError(err);
  }
}

async function init() {
  document.getElementById("search").addEventListener("submit", search);
  try {
    const c = await get("v1/collectors");
    const sel = document.getElementById("job");
    for (const col of c.collectors) {
      const o = document.createElement("option");
      o.value = o.textContent = col.job;
      sel.append(o);
    }
    if (!c.collectors.length) {
      document.getElementById("summary").textContent = "no flowmon-collector job runs";
      return;
    }
    await search();
  } catch (err) {
    showError(err);
  }
}

init();
