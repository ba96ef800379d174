/* django-redis-metrics: the admin's charts, drawn by the vendored uPlot (vendor/uplot/).
 *
 * Every <figure data-drm-chart> is drawn from the JSON of the <script type="application/json">
 * named by data-source (written by Django's json_script; see admin/charts.py for its shape).
 * Dates are never decided here: the payload carries a label per point, made by the server in
 * the site's time zone, and axis ticks are drawn in that zone (payload.tz) through uPlot.tzDate,
 * whatever the browser's zone. With data-url the chart refreshes itself every data-refresh
 * seconds, on ticks aligned to multiples of that period in epoch time; a refresh keeps the
 * cursor and any zoom, and no request is made while the tab is hidden (Page Visibility API).
 * Colours are the admin's CSS variables, read at each draw, so dark mode and the admin's theme
 * toggle apply at once. Text only ever goes into the page through textContent. The
 * annotations of the range (payload.annotations) are drawn as markers, their text on hover.
 */
"use strict";
(function () {
  var MIN = 60, HOUR = 3600, DAY = 86400;
  /* Axis ticks in 24-hour ISO style: [tick size, format, on a new year, new month, new day, ...]. */
  var TIME_TICKS = [
    [DAY * 365, "{YYYY}", null, null, null, null, null, null, 1],
    [DAY * 28, "{MMM}", "\n{YYYY}", null, null, null, null, null, 1],
    [DAY, "{MM}-{DD}", "\n{YYYY}", null, null, null, null, null, 1],
    [HOUR, "{HH}:{mm}", "\n{YYYY}-{MM}-{DD}", null, "\n{MM}-{DD}", null, null, null, 1],
    [MIN, "{HH}:{mm}", "\n{YYYY}-{MM}-{DD}", null, "\n{MM}-{DD}", null, null, null, 1],
    [1, "{HH}:{mm}:{ss}", "\n{YYYY}-{MM}-{DD}", null, "\n{MM}-{DD}", null, null, null, 1]
  ];
  /* Counts are whole numbers: only integer steps between y ticks. */
  var COUNT_STEPS = [];
  [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12].forEach(function (p) {
    COUNT_STEPS.push(p, 2 * p, 5 * p);
  });
  var INDEX_STEPS = [1, 2, 3, 4, 6, 7, 12, 14, 24, 28, 52, 60];
  var charts = [];
  var numbers = new Intl.NumberFormat(document.documentElement.lang || undefined);

  function cssVar(name, fallback) {
    var value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }
  function colour(role) {
    switch (role) {
      case "line": return cssVar("--link-fg", "#447e9b");
      case "compare": return cssVar("--body-quiet-color", "#666");
      case "text": return cssVar("--body-quiet-color", "#666");
      case "grid": return cssVar("--hairline-color", "#e8e8e8");
      case "partial": return cssVar("--selected-row", "#ffc");
      default: return cssVar("--body-fg", "#333");
    }
  }
  /* A labelled metric's breakdown lines (payload series with "part"): distinct hues that read
   * on the admin's light and dark backgrounds; "others" is drawn in the quiet colour. */
  var PARTS = ["#e6862e", "#3aa56b", "#c44e8a", "#8c6bd1", "#d4b226", "#2fa8b8", "#b5523b", "#6b8e23", "#d15c5c", "#5c7fd1"];
  function partColour(s, n) {
    return s.label === "others" && n > 0 ? colour("compare") : PARTS[n % PARTS.length];
  }
  function fill(role, alpha) {
    return function () { return withAlpha(colour(role), alpha); };
  }
  var probe = document.createElement("canvas").getContext("2d");
  function withAlpha(css, alpha) {
    probe.fillStyle = "#000";
    probe.fillStyle = css;
    var hex = probe.fillStyle; /* normalised: #rrggbb or rgba(...) */
    if (hex.charAt(0) !== "#") { return hex; }
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16 & 255) + "," + (n >> 8 & 255) + "," + (n & 255) + "," + alpha + ")";
  }
  function count(value) { return value == null ? "–" : numbers.format(value); }

  /* uPlot's data: x (epoch seconds, or indexes for calendar periods) and one array per series. */
  function toData(payload) {
    var x = payload.period ? payload.x.map(function (_, i) { return i; }) : payload.x;
    return [x].concat(payload.series.map(function (s) { return s.values; }));
  }
  function lastLabel(payload, idx) {
    if (idx == null || !payload.labels.length) { return ""; }
    var text = payload.labels[idx];
    var open = payload.partial && idx === payload.labels.length - 1;
    return open ? text + " (so far)" : text;
  }

  function xAxis(figure) {
    var axis = { stroke: function () { return colour("text"); }, grid: { stroke: function () { return colour("grid"); }, width: 1 }, ticks: { stroke: function () { return colour("grid"); } } };
    if (figure._payload.period) {
      axis.incrs = INDEX_STEPS;
      /* Room for the longest label ("2026-11-23"), so that labels never overlap. */
      axis.space = function () {
        var longest = figure._payload.labels.reduce(function (m, l) { return Math.max(m, l.length); }, 4);
        return longest * 7 + 16;
      };
      axis.values = function (u, splits) {
        return splits.map(function (i) { return figure._payload.labels[i] || ""; });
      };
    } else {
      axis.values = TIME_TICKS;
    }
    return axis;
  }

  /* Counts are drawn as whole numbers; measures (a statistic's ms, a gauge) with their unit. */
  var measures = new Intl.NumberFormat(document.documentElement.lang || undefined, { maximumFractionDigits: 2 });
  function formatter(payload) {
    if (payload.integer !== false) { return count; }
    return function (value) {
      return value == null ? "–" : measures.format(value) + (payload.unit ? " " + payload.unit : "");
    };
  }

  function options(figure, width) {
    var payload = figure._payload;
    var format = formatter(payload);
    var series = [{
      label: payload.period ? payload.period : "time",
      value: function (u, v, si, idx) { return lastLabel(figure._payload, idx); }
    }];
    var edges = {}, parts = 0;
    payload.series.forEach(function (s, i) {
      if (s.band) { edges[s.band] = i + 1; }
      var part = s.part ? partColour(s, parts++) : null;
      series.push({
        label: s.label,
        stroke: part ? function () { return part; } : s.compare ? function () { return colour("compare"); } : function () { return colour("line"); },
        fill: part || s.compare || s.band || payload.series.some(function (o) { return o.band; }) ? undefined : fill("line", 0.12),
        width: s.band ? 0.5 : s.compare || part ? 1.5 : 2,
        dash: s.compare ? [6, 4] : undefined,
        spanGaps: false,
        points: { show: !s.band, size: 4 },
        value: function (u, v) { return format(v); }
      });
    });
    /* A band (p50–p95, min–max) filled between its two edge series, behind the line. */
    var bands = edges.high && edges.low ? [{ series: [edges.high, edges.low], fill: fill("line", 0.18) }] : [];
    var yRange = payload.integer !== false
      ? function (u, min, max) { return [0, Math.max(4, Math.ceil((max || 0) * 1.1))]; }
      : function (u, min, max) {
        var low = Math.min(0, min || 0), high = max == null ? 1 : max;
        return [low, high > low ? high + (high - low) * 0.1 : low + 1];
      };
    var yAxis = {
      stroke: function () { return colour("text"); },
      grid: { stroke: function () { return colour("grid"); }, width: 1 },
      ticks: { stroke: function () { return colour("grid"); } },
      values: function (u, splits) { return splits.map(payload.integer !== false ? count : function (v) { return measures.format(v); }); },
      size: 60
    };
    if (payload.integer !== false) { yAxis.incrs = COUNT_STEPS; }
    return {
      width: width,
      height: Number(figure.dataset.height || 260),
      padding: [12, 36, 0, 0],
      tzDate: function (ts) { return uPlot.tzDate(new Date(ts * 1e3), figure._payload.tz); },
      scales: {
        x: { time: !payload.period },
        y: { range: yRange }
      },
      axes: [xAxis(figure), yAxis],
      bands: bands,
      cursor: { drag: { x: true, y: false, setScale: true }, points: { size: 7 } },
      legend: { live: true },
      series: series,
      hooks: {
        draw: [function (u) { markPartial(u, figure); placeNotes(u, figure); }],
        setScale: [function (u, key) { if (key === "x") { noteZoom(u, figure); } }],
        setLegend: [function (u) { figure.dataset.cursorIdx = u.cursor.idx == null ? "" : String(u.cursor.idx); }]
      }
    };
  }

  /* The open slice is still counting: shade it, and the legend says "(so far)". */
  function markPartial(u, figure) {
    var payload = figure._payload, n = payload.x.length;
    if (!payload.partial || !n) { return; }
    var xs = u.data[0];
    var left = n > 1 ? (u.valToPos(xs[n - 2], "x", true) + u.valToPos(xs[n - 1], "x", true)) / 2 : u.bbox.left;
    left = Math.max(left, u.bbox.left);
    var right = u.bbox.left + u.bbox.width;
    if (left >= right) { return; }
    var ctx = u.ctx;
    ctx.save();
    ctx.fillStyle = withAlpha(colour("partial"), 0.45);
    ctx.fillRect(left, u.bbox.top, right - left, u.bbox.height);
    ctx.restore();
  }

  /* Annotations (payload.annotations, see admin/annotating.py): a marker per annotation at its
   * x, over the plot, showing its time, text and tags on hover or focus. The text is user data:
   * it only ever goes in through textContent. Markers are made anew when the list changes and
   * placed again at every draw (zoom, resize, refresh); those outside the x scale are hidden. */
  function notesKey(list) {
    return JSON.stringify(list.map(function (a) { return [a.x, a.when, a.text, a.tags]; }));
  }
  function buildNotes(u, figure) {
    var list = figure._payload.annotations || [];
    var layer = u._drmNotes;
    if (!layer) {
      layer = document.createElement("div");
      layer.className = "drm-annotations";
      u.over.appendChild(layer);
      u._drmNotes = layer;
    }
    var key = notesKey(list);
    if (layer._key === key) { return layer; }
    layer._key = key;
    layer.textContent = "";
    list.forEach(function (a) {
      var marker = document.createElement("button");
      marker.type = "button";
      marker.className = "drm-annotation";
      marker.dataset.x = String(a.x);
      marker.dataset.when = String(a.when);
      var said = a.label + ": " + a.text + (a.tags && a.tags.length ? " [" + a.tags.join(", ") + "]" : "");
      marker.setAttribute("aria-label", "annotation " + said);
      marker._note = a;
      marker.addEventListener("mouseenter", function () { showNote(figure, marker); });
      marker.addEventListener("focus", function () { showNote(figure, marker); });
      marker.addEventListener("mouseleave", function () { hideNote(figure); });
      marker.addEventListener("blur", function () { hideNote(figure); });
      layer.appendChild(marker);
    });
    figure.dataset.annotations = String(list.length);
    var counted = figure.querySelector("[data-drm-annotation-count]");
    if (counted) { counted.textContent = list.length + " annotation" + (list.length === 1 ? "" : "s") + ": hover a marker"; }
    return layer;
  }
  function placeNotes(u, figure) {
    var layer = buildNotes(u, figure);
    var scale = u.scales.x;
    Array.prototype.forEach.call(layer.children, function (marker) {
      var x = Number(marker.dataset.x);
      var inside = scale.min != null && x >= scale.min && x <= scale.max;
      marker.hidden = !inside;
      if (inside) { marker.style.left = u.valToPos(x, "x") + "px"; }
    });
  }
  function showNote(figure, marker) {
    var tip = figure.querySelector(".drm-annotation-tip");
    if (!tip) {
      tip = document.createElement("div");
      tip.className = "drm-annotation-tip";
      tip.setAttribute("role", "tooltip");
      figure.querySelector(".drm-plot").appendChild(tip);
    }
    var a = marker._note;
    tip.textContent = "";
    var when = document.createElement("strong");
    when.textContent = a.label;
    var text = document.createElement("span");
    text.className = "drm-annotation-text";
    text.textContent = a.text;
    tip.appendChild(when);
    tip.appendChild(document.createTextNode(" "));
    tip.appendChild(text);
    if (a.tags && a.tags.length) {
      var tags = document.createElement("span");
      tags.className = "drm-annotation-tags";
      tags.textContent = a.tags.join(", ");
      tip.appendChild(tags);
    }
    var plot = figure.querySelector(".drm-plot");
    var left = marker.getBoundingClientRect().left - plot.getBoundingClientRect().left;
    tip.style.left = Math.max(0, Math.min(left - 20, plot.clientWidth - 260)) + "px";
    tip.hidden = false;
  }
  function hideNote(figure) {
    var tip = figure.querySelector(".drm-annotation-tip");
    if (tip) { tip.hidden = true; }
  }

  function noteZoom(u, figure) {
    var xs = u.data[0];
    if (!xs.length) { return; }
    var scale = u.scales.x;
    figure._zoomed = scale.min > xs[0] || scale.max < xs[xs.length - 1];
    figure.dataset.zoomed = figure._zoomed ? "true" : "false";
  }

  function describe(figure) {
    var payload = figure._payload;
    var total = payload.series.length ? payload.series[0].values.reduce(function (s, v) { return s + (v || 0); }, 0) : 0;
    figure.dataset.points = String(payload.x.length);
    figure.dataset.total = String(total);
    figure.dataset.last = payload.x.length ? String(payload.x[payload.x.length - 1]) : "";
    figure.dataset.partial = payload.partial ? "true" : "false";
    figure.dataset.series = String(payload.series.length);
    figure.dataset.parts = String(payload.series.filter(function (s) { return s.part; }).length);
    figure.dataset.band = payload.series.some(function (s) { return s.band; }) ? "true" : "false";
    figure.dataset.tz = payload.tz;
    var totalNode = figure.querySelector("[data-drm-total]");
    if (totalNode) { totalNode.textContent = formatter(payload)(total); }
    var zoneNode = figure.querySelector("[data-drm-zone]");
    if (zoneNode) { zoneNode.textContent = payload.tz_label; }
  }

  function draw(figure, payload) {
    figure._payload = payload;
    var target = figure.querySelector(".drm-plot");
    /* A breakdown's lines can change on a refresh (another value enters the top): redraw anew. */
    var shape = JSON.stringify(payload.series.map(function (s) { return s.label; }));
    if (figure._plot && figure._shape !== shape) {
      figure._plot.destroy();
      figure._plot = null;
    }
    figure._shape = shape;
    if (!figure._plot) {
      figure._plot = new uPlot(options(figure, target.clientWidth || 800), toData(payload), target);
    } else {
      /* Keep the zoom if there is one; uPlot keeps the cursor where it is. */
      figure._plot.setData(toData(payload), !figure._zoomed);
    }
    describe(figure);
  }

  function status(figure, message, state) {
    var element = figure.querySelector("[data-drm-status]");
    if (element) { element.textContent = message; }
    figure.dataset.state = state;
  }

  function schedule(figure) {
    var every = Math.max(1, Number(figure.dataset.refresh || 5)) * 1000;
    var delay = every - (Date.now() % every) + 150; /* just after the next aligned tick */
    window.clearTimeout(figure._timer);
    figure._timer = window.setTimeout(function () { tick(figure); }, delay);
  }

  function tick(figure) {
    figure._timer = null;
    if (document.hidden) {
      /* No request from a hidden tab; visibilitychange resumes it. */
      status(figure, "paused while the tab is hidden", "paused");
      return;
    }
    refresh(figure);
  }

  /* The session expired: the endpoint answered with the login page instead of JSON. Say so,
   * with a link back here through the login page, and stop refreshing. */
  function expired(figure, response) {
    var element = figure.querySelector("[data-drm-status]");
    figure.dataset.state = "expired";
    if (!element) { return; }
    var login = new URL(response.url, window.location.href);
    login.search = "?next=" + encodeURIComponent(window.location.pathname + window.location.search);
    var link = document.createElement("a");
    link.href = login.href;
    link.textContent = "log in again";
    element.textContent = "session expired: ";
    element.appendChild(link);
  }

  function refresh(figure) {
    figure.dataset.fetches = String(Number(figure.dataset.fetches || 0) + 1);
    fetch(figure.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        var json = (response.headers.get("Content-Type") || "").indexOf("application/json") === 0;
        if (response.redirected && !json) { expired(figure, response); return; }
        if (response.status === 503 && json) {
          /* Redis is away (the endpoint's 503 JSON): keep the chart, ask again on the next tick. */
          status(figure, "Redis unreachable, retrying", "unreachable");
          return;
        }
        if (!response.ok || !json) { throw new Error("HTTP " + response.status); }
        return response.json().then(function (payload) {
          draw(figure, payload);
          status(figure, "live, updated " + payload.labels[payload.labels.length - 1], "live");
        });
      })
      .catch(function (error) { status(figure, "update failed (" + error.message + "), retrying", "error"); })
      .then(function () { if (figure.dataset.state !== "expired") { schedule(figure); } });
  }

  function init(figure) {
    var source = document.getElementById(figure.dataset.source);
    if (!source || typeof uPlot === "undefined") { return; }
    draw(figure, JSON.parse(source.textContent));
    figure.dataset.state = "drawn";
    charts.push(figure);
    if (figure.dataset.url) { schedule(figure); }
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) { return; }
    charts.forEach(function (figure) {
      if (figure.dataset.url && figure.dataset.state === "paused") { refresh(figure); }
    });
  });

  function redrawAll() { charts.forEach(function (figure) { figure._plot.redraw(false); }); }
  if (window.matchMedia) {
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", redrawAll);
  }
  new MutationObserver(redrawAll).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
  if (window.ResizeObserver) {
    var resizing = new ResizeObserver(function () {
      charts.forEach(function (figure) {
        var width = figure.querySelector(".drm-plot").clientWidth;
        if (width && width !== figure._plot.width) { figure._plot.setSize({ width: width, height: figure._plot.height }); }
      });
    });
    document.addEventListener("DOMContentLoaded", function () { resizing.observe(document.body); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("figure[data-drm-chart]").forEach(init);
  });
  window.djangoRedisMetricsCharts = { draw: draw, charts: charts, colour: colour };
})();
