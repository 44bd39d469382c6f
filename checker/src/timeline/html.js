(function () {
"use strict";
var D = JSON.parse(document.getElementById("zk-data").textContent);
var svg = document.getElementById("chart"), wrap = document.getElementById("wrap");
var status = document.getElementById("status");
var N = D.ev.length, LANE_H = 26, TOP = 24, LEFT = 150, RIGHT = 14;
var mode = "time";
var marked = {};
D.marked.forEach(function (m) { marked[m[0]] = m[1]; });
function pos(i) { return mode === "time" ? D.ev[i][1] : i; }
function full() {
  if (N === 0) { return [0, 1]; }
  var a = pos(0), b = pos(N - 1);
  if (b <= a) { b = a + 1; }
  var pad = (b - a) * 0.02;
  return [a - pad, b + pad];
}
var view = full();
function esc(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
function tip(i, extra) {
  var t = (extra ? extra + "\n" : "") + D.ev[i][3];
  if (marked[i] !== undefined) { t += "\n<- " + marked[i]; }
  return "<title>" + esc(t) + "</title>";
}
function laneY(l) { return TOP + l * LANE_H; }
function niceStep(span, target) {
  var raw = span / target, p = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10)), m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}
function render() {
  var W = Math.max(500, wrap.clientWidth || 1200), plotW = W - LEFT - RIGHT;
  var H = TOP + D.lanes.length * LANE_H + 6;
  var x0 = view[0], x1 = view[1], k = plotW / (x1 - x0);
  function X(v) { return LEFT + (v - x0) * k; }
  function f(v) { return v.toFixed(1); }
  var out = [];
  out.push('<defs><clipPath id="plot"><rect x="' + LEFT + '" y="0" width="' + plotW + '" height="' + H + '"/></clipPath></defs>');
  // Lanes.
  out.push('<g class="lanes">');
  D.lanes.forEach(function (label, l) {
    out.push('<g class="lane" data-lane="' + esc(label) + '"><rect class="lane-bg" x="0" y="' + laneY(l) + '" width="' + W + '" height="' + LANE_H + '"/><text class="lane-label" x="6" y="' + (laneY(l) + 17) + '">' + esc(label) + '</text></g>');
  });
  out.push('</g>');
  // Axis.
  var step = niceStep(x1 - x0, Math.max(2, plotW / 110));
  out.push('<g class="axis">');
  for (var v = Math.max(0, Math.ceil(x0 / step) * step); v <= x1; v += step) {
    var label = mode === "time" ? (v / 1000).toFixed(step < 1000 ? 3 : 0) + " ms" : "#" + Math.round(v);
    out.push('<line x1="' + f(X(v)) + '" x2="' + f(X(v)) + '" y1="' + (TOP - 4) + '" y2="' + H + '"/><text x="' + f(X(v) + 2) + '" y="' + (TOP - 8) + '">' + label + '</text>');
  }
  out.push('</g><g clip-path="url(#plot)">');
  function inView(a, b) { return b >= x0 && a <= x1; }
  var endX = N > 0 ? pos(N - 1) : 0;
  // Fault spans first, under everything.
  D.faults.forEach(function (fl) {
    var i = fl[0], l = D.ev[i][0];
    if (mode === "time" && fl[1] > 0 && inView(pos(i), pos(i) + fl[1])) {
      out.push('<rect class="fault-span" x="' + f(X(pos(i))) + '" y="' + laneY(l) + '" width="' + f(Math.max(1, fl[1] * k)) + '" height="' + LANE_H + '">' + tip(i, "lasts " + fl[1] / 1000 + " ms") + '</rect>');
    }
  });
  // Holds.
  var holds = 0;
  D.holds.forEach(function (h) {
    var a = pos(h[1]), b = h[2] >= 0 ? pos(h[2]) : endX;
    if (!inView(a, b)) { return; }
    holds++;
    var xa = X(a), xb = Math.max(X(b), xa + 3), y = laneY(h[0]) + 4;
    out.push('<rect class="hold end-' + h[3] + '" x="' + f(xa) + '" y="' + y + '" width="' + f(xb - xa) + '" height="10"><title>' + esc("hold " + h[4] + ", ended: " + h[3]) + '\n' + esc(D.ev[h[1]][3]) + (h[2] >= 0 ? '\n' + esc(D.ev[h[2]][3]) : '') + '</title></rect>');
    out.push('<line class="hold-end ' + h[3] + '" x1="' + f(xb) + '" x2="' + f(xb) + '" y1="' + (y - 2) + '" y2="' + (y + 12) + '"/>');
  });
  // A work queue's processing of items, as holds.
  var procs = 0;
  (D.processing || []).forEach(function (h) {
    var a = pos(h[1]), b = h[2] >= 0 ? pos(h[2]) : endX;
    if (!inView(a, b)) { return; }
    procs++;
    var xa = X(a), xb = Math.max(X(b), xa + 3), y = laneY(h[0]) + 4;
    out.push('<rect class="proc end-' + h[3] + '" x="' + f(xa) + '" y="' + y + '" width="' + f(xb - xa) + '" height="10"><title>' + esc("processing " + h[4] + ", ended: " + h[3]) + '\n' + esc(D.ev[h[1]][3]) + (h[2] >= 0 ? '\n' + esc(D.ev[h[2]][3]) : '') + '</title></rect>');
    out.push('<line class="proc-end ' + h[3] + '" x1="' + f(xb) + '" x2="' + f(xb) + '" y1="' + (y - 2) + '" y2="' + (y + 12) + '"/>');
  });
  // A work queue's produced items: a labelled diamond each.
  (D.produced || []).forEach(function (p) {
    var i = p[0], x = X(pos(i)), y = laneY(D.ev[i][0]) + 9;
    if (!inView(pos(i), pos(i))) { return; }
    out.push('<path class="produced" d="M' + f(x) + ' ' + (y - 5) + 'l5 5l-5 5l-5-5z">' + tip(i) + '</path><text class="produced-label" x="' + f(x + 6) + '" y="' + (y + 3) + '">' + esc(p[1]) + '</text>');
  });
  // Requests and minor events: one by one, or as a density when too many are in view.
  var minor = [];
  D.ops.forEach(function (o, n) {
    var a = pos(o[0]), b = o[1] >= 0 ? pos(o[1]) : a;
    if (inView(a, b)) { minor.push(["op", n, a, b]); }
  });
  for (var i = 0; i < N; i++) {
    var kind = D.ev[i][2];
    if (kind === "op" || kind === "ok" || kind === "fail" || kind === "unknown" || kind === "acquired" || kind === "fault" || kind === "produced" || kind === "process" || kind === "completed") { continue; }
    if (inView(pos(i), pos(i))) { minor.push(["pt", i, pos(i), pos(i)]); }
  }
  var collapsed = minor.length > D.detail_max;
  if (collapsed) {
    var BIN = 4, bins = {};
    minor.forEach(function (m) {
      var lane = m[0] === "op" ? D.ev[D.ops[m[1]][0]][0] : D.ev[m[1]][0];
      var b = Math.floor((X(m[2]) - LEFT) / BIN), key = lane + ":" + b;
      bins[key] = (bins[key] || 0) + 1;
    });
    var max = 1;
    Object.keys(bins).forEach(function (key) { max = Math.max(max, bins[key]); });
    Object.keys(bins).forEach(function (key) {
      var p = key.split(":"), lane = +p[0], b = +p[1], c = bins[key], hgt = Math.max(1, 8 * c / max);
      out.push('<rect class="density" x="' + (LEFT + b * BIN) + '" y="' + f(laneY(lane) + LANE_H - 2 - hgt) + '" width="' + BIN + '" height="' + f(hgt) + '"><title>' + c + ' requests and events here: zoom in to see each</title></rect>');
    });
  } else {
    minor.forEach(function (m) {
      if (m[0] === "op") {
        var o = D.ops[m[1]], y = laneY(D.ev[o[0]][0]) + 19, xa = X(m[2]), xb = Math.max(X(m[3]), xa + 2);
        out.push('<line class="op ' + o[2] + '" x1="' + f(xa) + '" x2="' + f(xb) + '" y1="' + y + '" y2="' + y + '">' + tip(o[0], o[1] >= 0 ? D.ev[o[1]][3] : "no outcome recorded") + '</line>');
      } else {
        var i = m[1], e = D.ev[i], cx = X(m[2]), cy = laneY(e[0]) + 19;
        out.push('<circle class="pt ' + e[2] + '" cx="' + f(cx) + '" cy="' + cy + '" r="3.5">' + tip(i) + '</circle>');
      }
    });
  }
  // Faults where they strike.
  D.faults.forEach(function (fl) {
    var i = fl[0], x = X(pos(i)), y = laneY(D.ev[i][0]);
    if (!inView(pos(i), pos(i))) { return; }
    out.push('<g class="fault-mark"><line class="fault-line" x1="' + f(x) + '" x2="' + f(x) + '" y1="' + y + '" y2="' + (y + LANE_H) + '"/><path class="fault" d="M' + f(x - 5) + ' ' + y + 'h10l-5 8z">' + tip(i) + '</path></g>');
  });
  // The violation's events.
  var rings = 0;
  D.marked.forEach(function (m) {
    var i = m[0], x = X(pos(i)), y = laneY(D.ev[i][0]) + LANE_H / 2;
    if (!inView(pos(i), pos(i))) { return; }
    rings++;
    out.push('<line class="violation-line" x1="' + f(x) + '" x2="' + f(x) + '" y1="' + TOP + '" y2="' + H + '"/><circle class="violation-mark" data-ev="' + i + '" cx="' + f(x) + '" cy="' + y + '" r="9">' + tip(i) + '</circle>');
  });
  out.push('</g>');
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  svg.setAttribute("data-rendered", N + " events");
  svg.innerHTML = out.join("");
  status.textContent = "showing " + (mode === "time" ? (x0 / 1000).toFixed(3) + "–" + (x1 / 1000).toFixed(3) + " ms" : "events #" + Math.max(0, Math.round(x0)) + "–#" + Math.min(N - 1, Math.round(x1))) +
    " of " + N + " events; " + holds + " holds, " + (D.processing ? procs + " items processing, " : "") + rings + " marked events in view" +
    (collapsed ? "; " + minor.length + " requests and events collapsed into a density: zoom in to see each" : "");
}
function zoom(factor, at) {
  var span = view[1] - view[0], c = at === undefined ? view[0] + span / 2 : at;
  var lo = c - (c - view[0]) * factor, hi = c + (view[1] - c) * factor;
  if (hi - lo < 1) { hi = lo + 1; }
  view = [lo, hi];
  render();
}
function toEvents(list) {
  if (list.length === 0) { return; }
  var lo = Infinity, hi = -Infinity;
  list.forEach(function (i) { lo = Math.min(lo, pos(i)); hi = Math.max(hi, pos(i)); });
  var pad = Math.max((hi - lo) * 0.15, mode === "time" ? 2000 : 10);
  view = [lo - pad, hi + pad];
  render();
}
// A failing run opens on its violation; `fit` shows the whole run.
if (D.marked.length > 0) { toEvents(D.marked.map(function (m) { return m[0]; })); }
document.getElementById("zoom-in").onclick = function () { zoom(0.5); };
document.getElementById("zoom-out").onclick = function () { zoom(2); };
document.getElementById("fit").onclick = function () { view = full(); render(); };
document.getElementById("to-violation").onclick = function () { toEvents(D.marked.map(function (m) { return m[0]; })); };
document.getElementById("axis").onchange = function (e) { mode = e.target.value; view = full(); render(); };
Array.prototype.forEach.call(document.querySelectorAll("a[data-ev]"), function (a) {
  a.onclick = function () { toEvents([+a.getAttribute("data-ev")]); };
});
function valueAt(clientX) {
  var r = svg.getBoundingClientRect(), plotW = r.width - LEFT - RIGHT;
  return view[0] + (clientX - r.left - LEFT) * (view[1] - view[0]) / plotW;
}
wrap.addEventListener("wheel", function (e) {
  e.preventDefault();
  zoom(e.deltaY < 0 ? 0.8 : 1.25, valueAt(e.clientX));
}, { passive: false });
var drag = null;
wrap.addEventListener("mousedown", function (e) { drag = { x: e.clientX, view: view.slice() }; });
window.addEventListener("mouseup", function () { drag = null; });
window.addEventListener("mousemove", function (e) {
  if (!drag) { return; }
  var r = svg.getBoundingClientRect(), d = (e.clientX - drag.x) * (drag.view[1] - drag.view[0]) / (r.width - LEFT - RIGHT);
  view = [drag.view[0] - d, drag.view[1] - d];
  render();
});
window.addEventListener("resize", render);
if (D.marked.length === 0) { render(); }
})();
