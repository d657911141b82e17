// Draws every chart of a BLIS report from the JSON data element as SVG,
// with a hover tooltip per marker, legend entries that toggle their series,
// and log/linear toggles per axis; makes every table sortable by column.
// No library, no network: the page is one file.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var W = 720, H = 420, PL = 76, PR = 16, PT = 14, PB = 50;

  function svgEl(tag, attrs, parent) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function htmlEl(tag, cls, parent, txt) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (txt !== undefined) e.textContent = txt;
    if (parent) parent.appendChild(e);
    return e;
  }
  // Tick text: short, and the same for the same value.
  function tickText(v) {
    if (v === 0) return "0";
    var a = Math.abs(v);
    if (a >= 1e6 || a < 1e-3) return v.toExponential(1).replace("e+", "e");
    return String(+v.toPrecision(6));
  }
  // Values in the tooltip: six significant digits, as the tables (num in
  // report.go).
  function valText(v) { return String(+v.toPrecision(6)); }
  // Axis arithmetic as the Go writers' (axes.go): the same ranges and ticks.
  function linTicks(lo, hi) {
    var raw = (hi / 2 - lo / 2) / 4, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    if (!(raw > 0) || !(mag > 0) || mag === Infinity) return [lo, hi];
    var step = 10 * mag, ms = [1, 2, 5, 10];
    for (var i = 0; i < ms.length; i++) if (ms[i] * mag >= raw) { step = ms[i] * mag; break; }
    var out = [];
    for (var k = Math.ceil(lo / step); k * step <= hi + step * 1e-9 && out.length < 12; k++) out.push(k * step);
    return out.length ? out : [lo, hi];
  }
  function logTicks(lo, hi) {
    var e0 = Math.floor(Math.log10(lo)), e1 = Math.ceil(Math.log10(hi));
    var ms = e1 - e0 <= 2 ? [1, 2, 5] : [1], k = Math.max(1, Math.ceil((e1 - e0) / 10)), out = [];
    for (var e = e0; e <= e1; e += k)
      for (var i = 0; i < ms.length; i++) {
        var t = ms[i] * Math.pow(10, e);
        if (t >= lo * (1 - 1e-9) && t <= hi * (1 + 1e-9)) out.push(t);
      }
    return out.length < 2 ? [lo, hi] : out;
  }
  // keep: the padded bound unless it overflowed (or underflowed to zero on
  // a log axis), then the bound itself.
  function keep(padded, v, log) { return Math.abs(padded) === Infinity || (log && !(padded > 0)) ? v : padded; }
  function span(vs, log) {
    if (!vs.length) return log ? [1, 10] : [0, 1];
    var lo = Infinity, hi = -Infinity;
    vs.forEach(function (v) { if (v < lo) lo = v; if (v > hi) hi = v; });
    if (log) {
      if (!(lo > 0)) return [1, 10];
      var f = lo === hi ? 2 : 1.1;
      return [keep(lo / f, lo, true), keep(hi * f, hi, true)];
    }
    var pad = (hi / 2 - lo / 2) * 0.1;
    if (lo === hi) pad = Math.abs(lo) * 0.1 || 1;
    return [keep(lo - pad, lo, false), keep(hi + pad, hi, false)];
  }
  function scale(r, log, p0, p1) {
    var lo = log ? Math.log10(r[0]) : r[0], hi = log ? Math.log10(r[1]) : r[1];
    return function (v) { return p0 + ((log ? Math.log10(v) : v) / 2 - lo / 2) / (hi / 2 - lo / 2) * (p1 - p0); };
  }
  function f1(v) { return (Math.round(v * 10) / 10).toString(); }

  function Chart(spec, body) {
    this.spec = spec;
    this.body = body;
    this.logx = !!spec.logx;
    this.logy = !!spec.logy;
    this.hidden = spec.series.map(function () { return false; });
    var self = this;
    var controls = htmlEl("div", "controls", body);
    [["logx", "log x"], ["logy", "log y"]].forEach(function (a) {
      var lab = htmlEl("label", "", controls);
      var cb = htmlEl("input", a[0], lab);
      cb.type = "checkbox";
      cb.checked = self[a[0]];
      cb.addEventListener("change", function () { self[a[0]] = cb.checked; self.draw(); });
      lab.appendChild(document.createTextNode(" " + a[1]));
    });
    this.skipped = htmlEl("span", "skipped", controls);
    this.svg = svgEl("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": spec.title || spec.id }, body);
    this.tooltip = htmlEl("div", "tooltip", body);
    this.tooltip.hidden = true;
    var legend = htmlEl("ul", "legend", body);
    spec.series.forEach(function (s, i) {
      var b = htmlEl("button", "", htmlEl("li", "", legend));
      b.type = "button";
      b.setAttribute("data-series", i);
      b.setAttribute("aria-pressed", "true");
      var sw = htmlEl("span", "swatch", b);
      sw.style.background = s.color;
      b.appendChild(document.createTextNode(s.name || "series " + (i + 1)));
      b.addEventListener("click", function () {
        self.hidden[i] = !self.hidden[i];
        b.classList.toggle("off", self.hidden[i]);
        b.setAttribute("aria-pressed", self.hidden[i] ? "false" : "true");
        self.draw();
      });
    });
    this.draw();
  }

  // draw redraws the SVG: axes fitted to the visible series, then one
  // group per series (hidden ones kept, with display none).
  Chart.prototype.draw = function () {
    var self = this, spec = this.spec, svg = this.svg;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    this.tooltip.hidden = true;
    var xs = [], ys = [], skipped = 0;
    function drawable(p) { return !(self.logx && p.x <= 0) && !(self.logy && p.y <= 0); }
    spec.series.forEach(function (s, i) {
      s.points.forEach(function (p) {
        if (!drawable(p)) { if (!self.hidden[i]) skipped++; return; }
        if (!self.hidden[i]) { xs.push(p.x); ys.push(p.y); }
      });
    });
    this.skipped.textContent = skipped ? skipped + " point" + (skipped > 1 ? "s" : "") + " ≤ 0 not shown on the log axis" : "";
    var xr = span(xs, this.logx), yr = span(ys, this.logy);
    var X = scale(xr, this.logx, PL, W - PR), Y = scale(yr, this.logy, H - PB, PT);
    var g = svgEl("g", { "class": "axes" }, svg);
    (this.logx ? logTicks(xr[0], xr[1]) : linTicks(xr[0], xr[1])).forEach(function (t) {
      var x = f1(X(t));
      svgEl("line", { "class": "grid", x1: x, x2: x, y1: PT, y2: H - PB }, g);
      svgEl("text", { "class": "axis-text xtick", x: x, y: H - PB + 16, "text-anchor": "middle" }, g).textContent = tickText(t);
    });
    (this.logy ? logTicks(yr[0], yr[1]) : linTicks(yr[0], yr[1])).forEach(function (t) {
      var y = f1(Y(t));
      svgEl("line", { "class": "grid", x1: PL, x2: W - PR, y1: y, y2: y }, g);
      svgEl("text", { "class": "axis-text ytick", x: PL - 5, y: f1(Y(t) + 4), "text-anchor": "end" }, g).textContent = tickText(t);
    });
    svgEl("rect", { "class": "frame", x: PL, y: PT, width: W - PL - PR, height: H - PT - PB }, g);
    svgEl("text", { "class": "axis-label xlabel", x: (PL + W - PR) / 2, y: H - 12, "text-anchor": "middle" }, g).textContent =
      (spec.xlabel || "x") + (this.logx ? " (log)" : "");
    var cy = (PT + H - PB) / 2;
    svgEl("text", { "class": "axis-label ylabel", x: 16, y: cy, "text-anchor": "middle", transform: "rotate(-90 16 " + cy + ")" }, g).textContent =
      (spec.ylabel || "y") + (this.logy ? " (log)" : "");
    svgEl("clipPath", { id: spec.id + "-clip" }, svg).appendChild(svgEl("rect", { x: PL, y: PT, width: W - PL - PR, height: H - PT - PB }));
    spec.series.forEach(function (s, i) {
      var col = s.color; // the series' colour or its palette entry, chosen by the Go writer
      var sg = svgEl("g", { "class": "series", "data-series": i, "data-name": s.name }, svg);
      if (self.hidden[i]) sg.style.display = "none";
      var pts = s.points.filter(drawable);
      if (s.style !== "scatter" && pts.length > 1) {
        var d = pts.map(function (p, j) { return (j ? "L" : "M") + f1(X(p.x)) + "," + f1(Y(p.y)); }).join("");
        var a = { "class": "line", d: d, fill: "none", stroke: col, "stroke-width": s.style === "frontier" ? 3 : 1.5, "clip-path": "url(#" + spec.id + "-clip)" };
        if (s.style === "dashed") a["stroke-dasharray"] = "6,4";
        svgEl("path", a, sg);
      }
      var mg = svgEl("g", { "class": "markers" }, sg);
      pts.forEach(function (p) {
        var m = svgEl("circle", { "class": "marker", cx: f1(X(p.x)), cy: f1(Y(p.y)), r: s.style === "frontier" ? 4.5 : 3.5,
          fill: s.style === "dashed" ? "#fff" : col, stroke: col, "stroke-width": 1.5 }, mg);
        m.addEventListener("mouseenter", function (ev) { self.show(s, p, ev); });
        m.addEventListener("mouseleave", function () { self.tooltip.hidden = true; });
      });
    });
  };

  // show fills the tooltip with the point's series, label, x, y and Info.
  Chart.prototype.show = function (s, p, ev) {
    var tt = this.tooltip, spec = this.spec;
    tt.textContent = "";
    htmlEl("div", "tt-title", tt, (s.name || "") + (p.label ? (s.name ? " — " : "") + p.label : ""));
    var tb = htmlEl("table", "", tt);
    var rows = [[spec.xlabel || "x", valText(p.x)], [spec.ylabel || "y", valText(p.y)]].concat(p.info || [], spec.common || []);
    rows.forEach(function (r) {
      var tr = htmlEl("tr", "", tb);
      htmlEl("th", "", tr, r[0]);
      htmlEl("td", "", tr, r[1]);
    });
    var box = this.body.getBoundingClientRect();
    tt.hidden = false;
    // Right of the pointer, or left of it where the tooltip would leave the chart.
    var left = ev.clientX - box.left + 12;
    if (left + tt.offsetWidth > box.width) left = Math.max(0, ev.clientX - box.left - 12 - tt.offsetWidth);
    tt.style.left = left + "px";
    tt.style.top = (ev.clientY - box.top + 12) + "px";
  };

  // Tables sort by a column on a click of its header: numerically when
  // every non-empty cell of the column is a number, as text otherwise.
  function sortable(table) {
    var ths = table.querySelectorAll("thead th");
    Array.prototype.forEach.call(ths, function (th, col) {
      th.addEventListener("click", function () {
        var asc = !th.classList.contains("asc");
        Array.prototype.forEach.call(ths, function (h) { h.classList.remove("asc", "desc"); });
        th.classList.add(asc ? "asc" : "desc");
        var tbody = table.tBodies[0], rows = Array.prototype.slice.call(tbody.rows);
        var cell = function (r) { return r.cells[col] ? r.cells[col].textContent : ""; };
        var numeric = rows.every(function (r) { var t = cell(r); return t === "" || isFinite(Number(t)); });
        rows.sort(function (a, b) {
          var x = cell(a), y = cell(b);
          if (numeric) { x = x === "" ? -Infinity : Number(x); y = y === "" ? -Infinity : Number(y); }
          var c = x < y ? -1 : x > y ? 1 : 0;
          return asc ? c : -c;
        });
        rows.forEach(function (r) { tbody.appendChild(r); });
      });
    });
  }

  performance.mark("blis-report-start");
  var data = JSON.parse(document.getElementById("blis-report-data").textContent);
  data.charts.forEach(function (spec) {
    var body = document.querySelector('.chart-body[data-chart="' + spec.id + '"]');
    if (body) new Chart(spec, body);
  });
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sortable);
  // Tells a test driving the page that every chart is drawn, and how long
  // the script took.
  performance.mark("blis-report-drawn");
  document.documentElement.setAttribute("data-report", "ready");
})();
