// pytest-ssd site: draws a series' chart from the data embedded in its page (no fetch:
// the pages work from file://). Builds on x, each build's repeats as dots and their spread
// as a bar, the median as a line, steps the verdicts called as dashed marks; hover shows a
// value, a click opens the run's report, a drag across builds zooms, a double-click resets.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"];
  var W = 900, H = 360, L = 70, R = 20, T = 20, B = 60;
  var holder = document.querySelector("div.chart");
  var source = document.getElementById("chart-data");
  if (!holder || !source) return;
  var data = JSON.parse(source.textContent);
  var metrics = [];
  data.traces.forEach(function (t) { if (metrics.indexOf(t.metric) < 0) metrics.push(t.metric); });
  var state = { metric: metrics[0], lo: 0, hi: data.builds.length - 1 };
  var select = document.createElement("select");
  metrics.forEach(function (m) {
    var o = document.createElement("option"); o.value = m; o.textContent = m; select.appendChild(o);
  });
  select.onchange = function () { state.metric = select.value; draw(); };
  var readout = document.createElement("div");
  readout.className = "readout";
  readout.textContent = " ";
  holder.appendChild(select);
  var svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  holder.appendChild(svg);
  holder.appendChild(readout);

  function el(name, attrs, parent, text) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    (parent || svg).appendChild(e);
    return e;
  }
  function fmt(v) {
    return v === 0 || Math.abs(v) >= 100 ? Math.round(v).toLocaleString() : v.toPrecision(3);
  }
  function niceStep(rough) {  // 1, 2, 2.5 or 5 times a power of ten
    if (!(rough > 0)) return 1;
    var p = Math.pow(10, Math.floor(Math.log(rough) / Math.LN10)), f = rough / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
  }
  function tick(v) {
    return Math.abs(v) >= 1000 ? Math.round(v).toLocaleString() : String(Number(v.toPrecision(6)));
  }
  function median(v) {
    var s = v.slice().sort(function (a, b) { return a - b; }); var n = s.length;
    return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }

  function draw() {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var traces = data.traces.filter(function (t) { return t.metric === state.metric; });
    var ys = [];
    traces.forEach(function (t) { t.points.forEach(function (p) {
      if (p.x >= state.lo && p.x <= state.hi) ys = ys.concat(p.ys);
    }); });
    traces.forEach(function (t) { if (t.datasheet != null) ys.push(t.datasheet); });
    var ymin = Math.min.apply(null, ys.concat([0])), ymax = Math.max.apply(null, ys.concat([1])) * 1.05;
    var step = niceStep((ymax - ymin) / 4);  // round ticks: 50,000 not 53,550
    ymin = Math.floor(ymin / step) * step; ymax = Math.ceil(ymax / step) * step;
    var span = Math.max(state.hi - state.lo, 1);
    function X(i) { return L + (i - state.lo + 0.5) * (W - L - R) / (span + 1); }
    function Y(v) { return H - B - (v - ymin) * (H - T - B) / (ymax - ymin || 1); }
    el("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#000" });
    el("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#000" });
    for (var v = ymin; v <= ymax + step / 2; v += step) {
      if (v > ymin) el("line", { x1: L, x2: W - R, y1: Y(v), y2: Y(v), stroke: "#ddd", class: "grid" });
      el("text", { x: L - 5, y: Y(v) + 4, "text-anchor": "end", "font-size": 11, class: "tick" }, svg, tick(v));
    }
    el("text", { x: 4, y: T - 8, "font-size": 12 }, svg, traces.length ? traces[0].unit : "");
    var radius = Math.max(1.5, Math.min(4, (W - L - R) / (span + 1) / 3));
    var every = Math.max(1, Math.ceil((span + 1) / 16));  // at most 16 build names
    for (var i = state.lo; i <= state.hi; i += every) {
      el("text", { x: X(i), y: H - B + 16, "text-anchor": "middle", "font-size": 11 }, svg, data.builds[i]);
    }
    traces.forEach(function (t, n) {
      var color = COLORS[n % COLORS.length];
      var shown = t.points.filter(function (p) { return p.x >= state.lo && p.x <= state.hi; });
      if (t.datasheet != null) {
        el("line", { x1: L, x2: W - R, y1: Y(t.datasheet), y2: Y(t.datasheet), stroke: color,
          "stroke-dasharray": "2,2", class: "datasheet" });
      }
      el("polyline", { fill: "none", stroke: color, points: shown.map(function (p) {
        return X(p.x) + "," + Y(median(p.ys));
      }).join(" ") });
      shown.forEach(function (p) {
        var lo = Math.min.apply(null, p.ys), hi = Math.max.apply(null, p.ys);
        el("line", { x1: X(p.x), x2: X(p.x), y1: Y(lo), y2: Y(hi), stroke: color, "stroke-width": 3,
          opacity: 0.3, class: "spread" });
        p.ys.forEach(function (y, r) {
          var parent = svg, link = p.links[r] || p.links[0];
          if (link) { parent = el("a", { href: link, class: "point-link" }); }
          var label = t.name + " · " + data.builds[p.x] + ": " + fmt(y) + " " + t.unit;
          var dot = el("circle", { cx: X(p.x), cy: Y(y), r: radius, fill: color, class: "point" }, parent);
          el("title", {}, dot, label);
          dot.addEventListener("mouseover", function () { readout.textContent = label; });
        });
      });
      t.steps.forEach(function (build) {
        var i = data.builds.indexOf(build);
        if (i < state.lo || i > state.hi) return;
        var x = X(i - 0.5);
        el("line", { x1: x, x2: x, y1: T, y2: H - B, stroke: color, "stroke-dasharray": "6,4", class: "step" });
      });
      el("text", { x: L + 10 + 220 * (n % 4), y: H - 15 - 14 * Math.floor(n / 4), fill: color,
        "font-size": 11 }, svg, t.name);
    });
    svg.onmousedown = function (e) {
      var box = svg.getBoundingClientRect(), start = e.clientX - box.left;
      svg.onmouseup = function (u) {
        var end = u.clientX - box.left, a = Math.min(start, end), b = Math.max(start, end);
        svg.onmouseup = null;
        if (b - a < 10) return;
        function idx(px) { return state.lo + (px * W / box.width - L) * (span + 1) / (W - L - R) - 0.5; }
        var lo = Math.max(state.lo, Math.ceil(idx(a))), hi = Math.min(state.hi, Math.floor(idx(b)));
        if (hi >= lo) { state.lo = lo; state.hi = hi; draw(); }
      };
    };
  }
  svg.ondblclick = function () { state.lo = 0; state.hi = data.builds.length - 1; draw(); };
  draw();
})();
