"use strict";
(function () {
  var began = performance.now();
  var root = document.documentElement;
  window.addEventListener("error", function (e) {
    root.dataset.errors = (root.dataset.errors || "") + String(e.message) + "\n";
  });
  var D = JSON.parse(document.getElementById("data").textContent);
  var S = D.strings;
  var KINDS = ["event", "start", "interrupt", "resume", "takeover", "gate_pass", "gate_fail", "end", "interrupt m-unrecorded"];
  var GLYPHS = ["", "○", "▼", "▶", "⇄", "✓", "✗", "■", "▽"];
  var NAMES = ["event", "start", "interrupt", "resume", "takeover", "gate passed", "gate failed", "end", "stopped, nothing recorded"];
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#393b79", "#637939"];

  function colour(i) {
    if (i < 0) return "#98a2b3";
    if (i < PALETTE.length) return PALETTE[i];
    return "hsl(" + Math.round((i * 137.508) % 360) + ", 55%, 48%)";
  }
  // Every time on the page is UTC, and says so.
  function time(t) {
    return new Date((D.start + t) * 1000).toISOString().replace(".000Z", "Z");
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function span(from, to) {
    var s = Math.max(0, to - from), d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    if (d) return d + "d " + h + "h";
    if (h) return h + "h " + m + "m";
    if (m) return m + "m";
    return s + "s";
  }
  // A session as lanes and the legend show it: its first 8 characters; the whole id on hover.
  function short(s) {
    return Array.from(s).slice(0, 8).join("");
  }
  function who(name, cls) {
    var e = el("span", cls, short(name));
    e.title = "session " + name;
    return e;
  }

  // Where the axis puts a time (seconds from the start): evenly between two knots, the folded
  // idle stretches being the knots' short steps.
  var K = D.knots.length ? D.knots : [[0, 1], [Math.max(1, D.now), 99]];
  function X(t) {
    if (t <= K[0][0]) return K[0][1];
    for (var i = 1; i < K.length; i++) {
      if (t <= K[i][0]) {
        var a = K[i - 1], b = K[i];
        return b[0] === a[0] ? b[1] : a[1] + (b[1] - a[1]) * (t - a[0]) / (b[0] - a[0]);
      }
    }
    return K[K.length - 1][1];
  }
  // The time (seconds from the start) at an axis position: X's inverse.
  function T(x) {
    if (x <= K[0][1]) return K[0][0];
    for (var i = 1; i < K.length; i++) {
      if (x <= K[i][1]) {
        var a = K[i - 1], b = K[i];
        return b[1] === a[1] ? b[0] : a[0] + (b[0] - a[0]) * (x - a[1]) / (b[1] - a[1]);
      }
    }
    return K[K.length - 1][0];
  }
  // Axis percent per second where nothing is folded (knot pairs 0–1, 2–3, …).
  var slope = 0;
  for (var ki = 0; ki + 1 < K.length; ki += 2) {
    if (K[ki + 1][0] > K[ki][0]) { slope = (K[ki + 1][1] - K[ki][1]) / (K[ki + 1][0] - K[ki][0]); break; }
  }
  if (!slope) slope = 98 / Math.max(60, K[K.length - 1][0] - K[0][0]);

  // The most urgent next step, from the order `baton status` gives: an item a person or a
  // resume must act on first (the lanes carry each one's urgency, lower first).
  var urgent = null;
  D.lanes.forEach(function (l) {
    if (l.urgency !== null && l.urgency !== undefined && (!urgent || l.urgency < urgent.urgency)) urgent = l;
  });
  var next = document.getElementById("next");
  if (urgent) {
    next.appendChild(el("b", "", "Next: "));
    next.appendChild(document.createTextNode(urgent.kind + " " + urgent.key + (urgent.class ? " (" + urgent.class + ")" : "") +
      ", " + urgent.verdict + (urgent.next ? ": " + urgent.next : "")));
    if (urgent.command) {
      next.appendChild(document.createTextNode(" — run "));
      next.appendChild(el("code", "", urgent.command));
    }
  } else {
    next.className = "calm";
    var live = D.lanes.filter(function (l) { return l.verdict === "live"; }).length;
    next.appendChild(el("b", "", "Nothing waits on a next step: "));
    next.appendChild(document.createTextNode("no work is interrupted" + (live ? "; " + live + " piece" + (live === 1 ? "" : "s") + " of work live" : "") + "."));
  }
  next.dataset.key = urgent ? urgent.key : "";

  // Header: what the page holds, who owned what, what the marks mean.
  var interrupts = 0;
  D.lanes.forEach(function (l) { l.marks.forEach(function (m) { if (m[1] === 2 || m[1] === 8) interrupts++; }); });
  document.getElementById("summary").textContent =
    D.lanes.length + " lane" + (D.lanes.length === 1 ? "" : "s") + " · " + D.events + " events · " +
    D.sessions.length + " session" + (D.sessions.length === 1 ? "" : "s") + " · " + interrupts + " interrupt" +
    (interrupts === 1 ? "" : "s") + " · from " + time(0) + " to now, " + time(D.now) + " (times in UTC)" +
    (D.folds.length ? " · " + D.folds.length + " idle stretch" + (D.folds.length === 1 ? "" : "es") + " folded (≈)" : "");
  var legend = document.getElementById("legend");
  var shown = Math.min(D.sessions.length, 40);
  for (var i = 0; i < shown; i++) {
    var item = el("span", "item session");
    var sw = el("span", "swatch");
    sw.style.background = colour(i);
    item.appendChild(sw);
    item.appendChild(document.createTextNode("session "));
    item.appendChild(who(D.sessions[i], ""));
    legend.appendChild(item);
  }
  if (D.sessions.length > shown) legend.appendChild(el("span", "item more", "… and " + (D.sessions.length - shown) + " more sessions"));
  var waitItem = el("span", "item");
  waitItem.appendChild(el("span", "swatch hatch"));
  waitItem.appendChild(document.createTextNode("waiting for a rate limit's reset"));
  legend.appendChild(waitItem);
  for (var k = 1; k < KINDS.length; k++) {
    var it = el("span", "item");
    it.appendChild(el("span", "glyph m-" + KINDS[k], GLYPHS[k]));
    it.appendChild(document.createTextNode(NAMES[k]));
    legend.appendChild(it);
  }

  // Labels beside marks are measured as drawn (a canvas with the label's font), once each.
  var font = getComputedStyle(root).fontFamily;
  var ctx = document.createElement("canvas").getContext("2d");
  ctx.font = "500 10px " + font;
  var widths = {};
  function width(si) {
    if (widths[si] === undefined) widths[si] = Math.ceil(ctx.measureText(S[si]).width) + 4;
    return widths[si];
  }

  var axis = document.getElementById("axis");
  var lanes = document.getElementById("lanes");
  // The view: the stretch of the axis (in its percent, 0 to 100) the tracks show. The whole
  // history by default; zooming narrows it, and what falls outside is not drawn, so nothing
  // ever needs a sideways scroll.
  var lo = 0, hi = 100;
  function V(x) {
    return (x - lo) * 100 / (hi - lo);
  }
  function seen(x) {
    return x >= lo && x <= hi;
  }
  // The track's width: the window less the label column, the page's padding and the track's
  // own margins.
  function trackPx() {
    var label = parseFloat(getComputedStyle(root).getPropertyValue("--label")) || 320;
    return Math.max(160, root.clientWidth - 32 - label - 12);
  }
  // A stretch [a, b] of the axis in the view, clipped to it; null when it is outside.
  function clip(a, b) {
    if (b < lo || a > hi) return null;
    var x0 = V(Math.max(a, lo)), x1 = V(Math.min(b, hi));
    return [x0, Math.max(0, x1 - x0)];
  }
  var multiDay = time(0).slice(0, 10) !== time(D.now).slice(0, 10);

  function labelOf(l) {
    var label = el("div", "label");
    var l1 = el("div", "l1");
    l1.appendChild(el("span", "kind", l.kind));
    l1.appendChild(el("span", "key", l.key));
    if (l.class) l1.appendChild(el("span", "class c-" + l.class, l.class));
    label.appendChild(l1);
    label.appendChild(el("div", "l2", l.status + " · " + l.verdict));
    if (l.phase || l.owner || l.ownerState) {
      var l3 = el("div", "l3", l.phase || "");
      if (l.owner || l.ownerState) {
        if (l.phase) l3.appendChild(document.createTextNode(" · "));
        if (l.owner) l3.appendChild(who(l.owner, "owner"));
        else l3.appendChild(document.createTextNode("no owner"));
        if (l.ownerState) l3.appendChild(document.createTextNode(" " + l.ownerState));
      }
      label.appendChild(l3);
    }
    label.title = l.kind + " " + l.key + "\nstatus: " + l.status + "\nverdict: " + l.verdict +
      (l.phase ? "\nat: " + l.phase : "") + (l.owner ? "\nowner: session " + l.owner + (l.ownerState ? " (" + l.ownerState + ")" : "") : "") +
      (l.next ? "\nnext: " + l.next : "") + (l.command ? "\nrun: " + l.command : "");
    return label;
  }

  function vline(cls, x) {
    var v = el("div", cls);
    v.style.left = x + "%";
    return v;
  }

  // The axis: round times (UTC), folded idle stretches, now. Ticks are placed for the width
  // the axis has at this zoom, at most one every 64 pixels.
  function drawAxis(trackWidth) {
    axis.textContent = "";
    axis.appendChild(el("div", "label", "time (UTC)"));
    var track = el("div", "track");
    var steps = [60, 300, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400, 604800, 2592000];
    var perPx = (hi - lo) / (slope * trackWidth);
    var step = steps.find(function (s) { return s / perPx >= 64; }) || 2592000;
    var end = K[K.length - 1][0];
    var text = function (t) {
      var iso = time(t);
      return step >= 86400 ? iso.slice(5, 10) : multiDay ? iso.slice(5, 16).replace("T", " ") : iso.slice(11, 16);
    };
    var lastPx = -1e9;
    var put = function (t) {
      // A tick's time is centred on it; at the left edge it starts there instead.
      if (!seen(X(t))) return;
      var label = text(t), px = V(X(t)) / 100 * trackWidth, half = label.length * 3.4 + 2;
      var from = px - half < 0 ? px : px - half;
      if (from < lastPx + 12 || from + 2 * half > trackWidth - 30) return;
      // Not under the now label either.
      if (seen(D.nowX) && Math.abs(px - V(D.nowX) / 100 * trackWidth) < half + 14) return;
      var tick = el("span", from === px ? "tick first" : "tick", label);
      tick.style.left = V(X(t)) + "%";
      track.appendChild(tick);
      lastPx = from + 2 * half;
    };
    put(lo > K[0][1] ? T(lo) : 0);
    var t = (Math.floor((D.start + T(lo)) / step) + 1) * step - D.start;
    while (t < end) {
      var fold = D.folds.find(function (f) { return f[1] < t && t < f[2]; });
      if (fold) { t = (Math.floor((D.start + fold[2]) / step) + 1) * step - D.start; continue; }
      put(t);
      t += step;
    }
    D.folds.forEach(function (f) {
      if (!seen(f[0])) return;
      var fold = el("span", "fold", "≈");
      fold.style.left = V(f[0]) + "%";
      fold.title = "idle " + span(f[1], f[2]) + ", folded: " + time(f[1]) + " to " + time(f[2]);
      track.appendChild(fold);
    });
    if (seen(D.nowX)) {
      var now = el("span", "now", "now");
      if (V(D.nowX) / 100 * trackWidth + 16 > trackWidth) now.className += " end";
      now.style.left = V(D.nowX) + "%";
      now.title = "now: " + time(D.now);
      track.appendChild(now);
    }
    axis.appendChild(track);
  }

  // The lanes, most urgent first, as the caller ordered them.
  function drawLanes(trackWidth) {
    lanes.textContent = "";
    var frag = document.createDocumentFragment();
    if (!D.lanes.length) frag.appendChild(el("p", "empty", "Nothing in this project yet: no loop, batch, run or ledger."));
    D.lanes.forEach(function (l, li) {
      var lane = el("div", "lane");
      lane.dataset.kind = l.kind;
      lane.dataset.key = l.key;
      lane.dataset.lane = li;
      lane.appendChild(labelOf(l));
      var track = el("div", "track");
      D.folds.forEach(function (f) { if (seen(f[0])) track.appendChild(vline("foldline", V(f[0]))); });
      (l.waits || []).forEach(function (w, wi) {
        var c = clip(w[0], w[1]);
        if (!c) return;
        var wait = el("div", "wait");
        wait.style.left = c[0] + "%";
        wait.style.width = c[1] + "%";
        wait.dataset.w = li + ":" + wi;
        track.appendChild(wait);
      });
      l.seg.forEach(function (s, si) {
        var c = clip(s[0], s[1]);
        if (!c) return;
        var seg = el("div", s[4] < 0 ? "seg phase" : "seg");
        seg.style.left = c[0] + "%";
        seg.style.width = c[1] + "%";
        if (s[4] >= 0) seg.style.background = colour(s[4]);
        seg.dataset.s = li + ":" + si;
        track.appendChild(seg);
      });
      // A label is drawn where it stays inside the lane's track and does not run into the one
      // before it; near the right edge it reads leftwards. Hover shows them all.
      var labelEnd = -1e9;
      l.marks.forEach(function (m, mi) {
        if (!seen(m[0])) return;
        var kind = KINDS[m[1]];
        var mark = el("i", "mark m-" + kind, GLYPHS[m[1]]);
        mark.style.left = V(m[0]) + "%";
        mark.dataset.m = li + ":" + mi;
        if (m[1] === 2 || m[1] === 8) {
          var cls = S[m[4]].split(":")[0];
          mark.className += " c-" + cls;
          mark.dataset.class = cls;
        }
        if (m[1] >= 2) {
          var px = V(m[0]) / 100 * trackWidth, w = width(m[4]);
          var from = px - 4, flip = false;
          if (from + w > trackWidth - 2) { from = px + 4 - w; flip = true; }
          if (from >= 0 && from > labelEnd + 6) {
            mark.appendChild(el("span", flip ? "ml flip" : "ml", S[m[4]]));
            labelEnd = from + w;
          }
        }
        track.appendChild(mark);
      });
      if (seen(D.nowX)) track.appendChild(vline("nowline", V(D.nowX)));
      lane.appendChild(track);
      frag.appendChild(lane);
    });
    lanes.appendChild(frag);
  }

  // Zoom: the view narrows (+) or widens (−) about its middle, or about now when now is in
  // it; ← and → move it by half its width; "last hour" shows the hour before now to the
  // axis's end (a rate limit's reset may lie after now).
  var buttons = {};
  var end = K[K.length - 1][1];
  function draw(a, b) {
    var width = Math.max(0.05, Math.min(100, b - a));
    lo = Math.max(0, Math.min(100 - width, a));
    hi = lo + width;
    var trackWidth = trackPx();
    drawAxis(trackWidth);
    drawLanes(trackWidth);
    var whole = lo <= 0 && hi >= 100;
    buttons.fit.setAttribute("aria-pressed", whole ? "true" : "false");
    var at = function (x) { var iso = time(T(x)); return multiDay ? iso.slice(5, 16).replace("T", " ") : iso.slice(11, 16); };
    buttons.level.textContent = whole ? "the whole history" : "from " + at(lo) + " to " + at(hi) + " UTC";
    root.dataset.zoom = (100 / (hi - lo)).toFixed(1).replace(".0", "");
  }
  var controls = document.getElementById("zoom");
  function button(name, text, title, act) {
    var b = el("button", "", text);
    b.type = "button";
    b.title = title;
    b.addEventListener("click", act);
    controls.appendChild(b);
    buttons[name] = b;
  }
  function around(factor) {
    var width = (hi - lo) * factor;
    var a = factor < 1 && seen(D.nowX) ? D.nowX - 0.8 * width : (lo + hi - width) / 2;
    draw(a, a + width);
  }
  controls.appendChild(el("span", "", "zoom:"));
  button("fit", "fit", "the whole history", function () { draw(0, 100); });
  button("out", "−", "zoom out", function () { around(2); });
  button("in", "+", "zoom in", function () { around(0.5); });
  button("left", "←", "earlier", function () { draw(lo - (hi - lo) / 2, hi - (hi - lo) / 2); });
  button("right", "→", "later", function () { draw(lo + (hi - lo) / 2, hi + (hi - lo) / 2); });
  var hourAgo = X(D.now - 3600);
  if (D.now > 3600 && hourAgo > K[0][1] + 1) {
    button("hour", "last hour", "the hour before now", function () { draw(hourAgo - 0.5, 100); });
  }
  buttons.level = el("span", "");
  controls.appendChild(buttons.level);
  // A link to the page may ask for the last hour (`page.html#last-hour`).
  if (location.hash === "#last-hour" && buttons.hour) buttons.hour.click();
  else draw(0, 100);
  var resized = 0;
  window.addEventListener("resize", function () {
    clearTimeout(resized);
    resized = setTimeout(function () { draw(lo, hi); }, 100);
  });

  // What `baton log` prints for a mark; who owned a stretch, and when; a wait and its reset.
  function describe(target) {
    var m = target.dataset.m, s = target.dataset.s, w = target.dataset.w;
    if (m) {
      var p = m.split(":"), l = D.lanes[+p[0]], mk = l.marks[+p[1]];
      return { title: l.kind + " " + l.key, text: time(mk[2]) + "  " + S[mk[3]], hint: "baton log " + l.key };
    }
    if (s) {
      var q = s.split(":"), ln = D.lanes[+q[0]], sg = ln.seg[+q[1]];
      var owner = sg[4] >= 0 ? "session " + D.sessions[sg[4]] + (sg[5] === null ? "" : " (epoch " + sg[5] + ")") : "phase " + (sg[6] === null ? "?" : S[sg[6]]);
      return { title: ln.kind + " " + ln.key, text: owner + "\nfrom " + time(sg[2]) + "\nto   " + time(sg[3]) + " (" + span(sg[2], sg[3]) + ")", hint: "baton log " + ln.key };
    }
    if (w) {
      var r = w.split(":"), lw = D.lanes[+r[0]], wt = lw.waits[+r[1]];
      var left = wt[3] > D.now ? "resets in " + span(D.now, wt[3]) : "reset " + span(wt[3], D.now) + " ago";
      return { title: lw.kind + " " + lw.key, text: "waiting for the rate limit's reset (" + left + ")\nfrom " + time(wt[2]) + " (the interrupt)\nto   " + time(wt[3]) + " (resume_after, " + span(wt[2], wt[3]) + ")", hint: "baton log " + lw.key };
    }
    return null;
  }
  var tip = document.getElementById("tip");
  var details = document.getElementById("details");
  lanes.addEventListener("mousemove", function (e) {
    var d = describe(e.target);
    if (!d) { tip.hidden = true; return; }
    tip.textContent = d.title + "\n" + d.text;
    tip.hidden = false;
    var x = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    var y = e.clientY + 16 + tip.offsetHeight > window.innerHeight ? e.clientY - tip.offsetHeight - 10 : e.clientY + 16;
    tip.style.left = Math.max(4, x) + "px";
    tip.style.top = Math.max(4, y) + "px";
  });
  lanes.addEventListener("mouseleave", function () { tip.hidden = true; });
  lanes.addEventListener("click", function (e) {
    var d = describe(e.target);
    if (!d) return;
    details.textContent = "";
    var close = el("button", "", "×");
    close.title = "close";
    close.addEventListener("click", function () { details.hidden = true; });
    details.appendChild(close);
    details.appendChild(el("h2", "", d.title));
    details.appendChild(el("pre", "", d.text + "\n\nthe whole history: " + d.hint));
    details.hidden = false;
  });
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") details.hidden = true; });

  root.dataset.scriptStartMs = began.toFixed(1);
  root.dataset.renderMs = (performance.now() - began).toFixed(1);
  root.dataset.rendered = "ok";
  // From the start of the page's load to the first frame drawn after the script: reading,
  // parsing, the script, style, layout and paint.
  requestAnimationFrame(function () {
    setTimeout(function () { root.dataset.drawnMs = performance.now().toFixed(1); }, 0);
  });
})();
