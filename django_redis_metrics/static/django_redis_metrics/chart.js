/* django-redis-metrics: a small dependency-free SVG line chart for the admin pages.
 *
 * Every <figure data-drm-chart> is drawn from the JSON of the <script type="application/json">
 * named by data-source (written by Django's json_script). With data-url it refreshes itself
 * every data-refresh seconds, on ticks aligned to multiples of that period in epoch time, so
 * successive charts move by whole slices. Text only ever goes in through textContent.
 */
"use strict";
(function () {
  var NS = "http://www.w3.org/2000/svg";
  var W = 800, H = 260, LEFT = 56, RIGHT = 12, TOP = 12, BOTTOM = 28;

  function node(name, attrs, parent) {
    var element = document.createElementNS(NS, name);
    Object.keys(attrs || {}).forEach(function (key) { element.setAttribute(key, attrs[key]); });
    if (parent) { parent.appendChild(element); }
    return element;
  }

  function text(parent, x, y, value, anchor) {
    var element = node("text", { x: x, y: y, "text-anchor": anchor || "start" }, parent);
    element.textContent = value;
    return element;
  }

  function niceMax(value) {
    if (value <= 4) { return 4; }
    var power = Math.pow(10, Math.floor(Math.log10(value)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (steps[i] * power >= value) { return steps[i] * power; }
    }
    return 10 * power;
  }

  function timeLabel(seconds, step) {
    var date = new Date(seconds * 1000);
    if (step >= 86400) { return date.toLocaleDateString(); }
    if (step >= 3600) {
      return date.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
    }
    return date.toLocaleTimeString();
  }

  function draw(figure, data) {
    var svg = figure.querySelector("svg");
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var points = data.points || [];
    var step = points.length > 1 ? points[1][0] - points[0][0] : (data.precision || data.window || 1);
    var max = niceMax(points.reduce(function (m, p) { return Math.max(m, p[1]); }, 0));
    var plotW = W - LEFT - RIGHT, plotH = H - TOP - BOTTOM;
    var x = function (i) { return LEFT + (points.length > 1 ? i * plotW / (points.length - 1) : plotW / 2); };
    var y = function (v) { return TOP + plotH - v * plotH / max; };

    var grid = node("g", { "class": "drm-grid" }, svg);
    for (var g = 0; g <= 4; g++) {
      var value = max * g / 4;
      node("line", { x1: LEFT, x2: W - RIGHT, y1: y(value), y2: y(value) }, grid);
      text(grid, LEFT - 6, y(value) + 4, String(Math.round(value * 100) / 100), "end");
    }
    if (points.length) {
      var ticks = Math.min(5, points.length);
      for (var t = 0; t < ticks; t++) {
        var index = Math.round(t * (points.length - 1) / Math.max(ticks - 1, 1));
        text(grid, x(index), H - 8, timeLabel(points[index][0], step), t === 0 ? "start" : (t === ticks - 1 ? "end" : "middle"));
      }
      var line = points.map(function (p, i) { return x(i).toFixed(1) + "," + y(p[1]).toFixed(1); });
      node("polygon", {
        "class": "drm-area",
        points: [x(0).toFixed(1) + "," + y(0)].concat(line, [x(points.length - 1).toFixed(1) + "," + y(0)]).join(" ")
      }, svg);
      node("polyline", { "class": "drm-line", points: line.join(" ") }, svg);
      var dots = node("g", { "class": "drm-points" }, svg);
      points.forEach(function (p, i) {
        var dot = node("circle", { cx: x(i).toFixed(1), cy: y(p[1]).toFixed(1), r: p[1] ? 2.5 : 1.2, "data-t": p[0], "data-v": p[1] }, dots);
        node("title", {}, dot).textContent = timeLabel(p[0], step) + ": " + p[1];
      });
    }
    var total = points.reduce(function (sum, p) { return sum + p[1]; }, 0);
    figure.dataset.points = String(points.length);
    figure.dataset.total = String(total);
    figure.dataset.last = points.length ? String(points[points.length - 1][0]) : "";
    var totalNode = figure.querySelector("[data-drm-total]");
    if (totalNode) { totalNode.textContent = String(total); }
  }

  function status(figure, message, state) {
    var element = figure.querySelector("[data-drm-status]");
    if (element) { element.textContent = message; }
    figure.dataset.state = state;
  }

  function schedule(figure) {
    var every = Math.max(1, Number(figure.dataset.refresh || 5)) * 1000;
    var delay = every - (Date.now() % every) + 150; // just after the next aligned tick
    window.setTimeout(function () { refresh(figure); }, delay);
  }

  function refresh(figure) {
    fetch(figure.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
      })
      .then(function (data) {
        draw(figure, data);
        status(figure, "live, updated " + new Date().toLocaleTimeString(), "live");
      })
      .catch(function (error) { status(figure, "update failed (" + error.message + "), retrying", "error"); })
      .then(function () { schedule(figure); });
  }

  function init(figure) {
    var source = document.getElementById(figure.dataset.source);
    if (!source) { return; }
    draw(figure, JSON.parse(source.textContent));
    figure.dataset.state = "drawn";
    if (figure.dataset.url) { schedule(figure); }
  }

  function localTimes() {
    document.querySelectorAll("time[data-drm-epoch]").forEach(function (element) {
      element.textContent = new Date(Number(element.dataset.drmEpoch) * 1000).toLocaleString();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("figure[data-drm-chart]").forEach(init);
    localTimes();
  });
  window.djangoRedisMetricsChart = { draw: draw };
})();
