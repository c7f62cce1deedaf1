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

  // Header: what the page holds, who owned what, what the marks mean.
  var interrupts = 0;
  D.lanes.forEach(function (l) { l.marks.forEach(function (m) { if (m[1] === 2 || m[1] === 8) interrupts++; }); });
  document.getElementById("summary").textContent =
    D.lanes.length + " lane" + (D.lanes.length === 1 ? "" : "s") + " · " + D.events + " events · " +
    D.sessions.length + " session" + (D.sessions.length === 1 ? "" : "s") + " · " + interrupts + " interrupt" +
    (interrupts === 1 ? "" : "s") + " · from " + time(0) + " to now, " + time(D.now) +
    (D.folds.length ? " · " + D.folds.length + " idle stretch" + (D.folds.length === 1 ? "" : "es") + " folded (≈)" : "");
  var legend = document.getElementById("legend");
  var shown = Math.min(D.sessions.length, 40);
  for (var i = 0; i < shown; i++) {
    var item = el("span", "item session");
    var sw = el("span", "swatch");
    sw.style.background = colour(i);
    item.appendChild(sw);
    item.appendChild(document.createTextNode("session " + D.sessions[i]));
    legend.appendChild(item);
  }
  if (D.sessions.length > shown) legend.appendChild(el("span", "item more", "… and " + (D.sessions.length - shown) + " more sessions"));
  for (var k = 1; k < KINDS.length; k++) {
    var it = el("span", "item");
    it.appendChild(el("span", "glyph m-" + KINDS[k], GLYPHS[k]));
    it.appendChild(document.createTextNode(NAMES[k]));
    legend.appendChild(it);
  }

  // The axis: round times, folded idle stretches, now.
  var axis = document.getElementById("axis");
  var dayOf = function (t) { return time(t).slice(0, 10); };
  var multiDay = dayOf(0) !== dayOf(D.now);
  D.ticks.forEach(function (t) {
    var iso = time(t[1]);
    var tick = el("span", "tick", multiDay ? iso.slice(5, 16).replace("T", " ") : iso.slice(11, 16));
    tick.style.left = t[0] + "%";
    axis.appendChild(tick);
  });
  D.folds.forEach(function (f) {
    var fold = el("span", "fold", "≈");
    fold.style.left = f[0] + "%";
    fold.title = "idle " + span(f[1], f[2]) + ", folded: " + time(f[1]) + " to " + time(f[2]);
    axis.appendChild(fold);
  });
  var now = el("span", "now", "now");
  now.style.left = D.nowX + "%";
  axis.appendChild(now);

  // The lanes, most urgent first, as the caller ordered them.
  var lanes = document.getElementById("lanes");
  var labelWidth = parseFloat(getComputedStyle(root).getPropertyValue("--label")) || 300;
  var trackWidth = Math.max(200, lanes.clientWidth - labelWidth);
  var frag = document.createDocumentFragment();
  if (!D.lanes.length) frag.appendChild(el("p", "empty", "Nothing in this project yet: no loop, batch, run or ledger."));
  D.lanes.forEach(function (l, li) {
    var lane = el("div", "lane");
    lane.dataset.kind = l.kind;
    lane.dataset.key = l.key;
    lane.dataset.lane = li;
    var label = el("div", "label");
    label.appendChild(el("span", "kind", l.kind));
    label.appendChild(el("span", "key", l.key));
    if (l.class) label.appendChild(el("span", "class c-" + l.class, l.class));
    label.appendChild(el("span", "status", l.status + " · " + l.verdict));
    label.title = l.kind + " " + l.key + "\nstatus: " + l.status + "\nverdict: " + l.verdict + (l.next ? "\nnext: " + l.next : "");
    lane.appendChild(label);
    var track = el("div", "track");
    l.seg.forEach(function (s, si) {
      var seg = el("div", s[4] < 0 ? "seg phase" : "seg");
      seg.style.left = s[0] + "%";
      seg.style.width = Math.max(0, s[1] - s[0]) + "%";
      if (s[4] >= 0) seg.style.background = colour(s[4]);
      seg.dataset.s = li + ":" + si;
      track.appendChild(seg);
    });
    // A label is drawn where it does not run into the one before it (hover shows them all).
    var labelEnd = -1;
    l.marks.forEach(function (m, mi) {
      var kind = KINDS[m[1]];
      var mark = el("i", "mark m-" + kind, GLYPHS[m[1]]);
      mark.style.left = m[0] + "%";
      mark.dataset.m = li + ":" + mi;
      if (m[1] === 2 || m[1] === 8) {
        var cls = S[m[4]].split(":")[0];
        mark.className += " c-" + cls;
        mark.dataset.class = cls;
      }
      if (m[1] >= 2 && m[0] > labelEnd) {
        mark.appendChild(el("span", "ml", S[m[4]]));
        labelEnd = m[0] + (S[m[4]].length * 5.5 + 20) / trackWidth * 100;
      }
      track.appendChild(mark);
    });
    lane.appendChild(track);
    frag.appendChild(lane);
  });
  lanes.appendChild(frag);
  var overlay = el("div");
  overlay.id = "overlay";
  D.folds.forEach(function (f) {
    var line = el("div", "foldline");
    line.style.left = f[0] + "%";
    overlay.appendChild(line);
  });
  var nowline = el("div", "nowline");
  nowline.style.left = D.nowX + "%";
  overlay.appendChild(nowline);
  lanes.appendChild(overlay);

  // What `baton log` prints for a mark; who owned a stretch, and when.
  function describe(target) {
    var m = target.dataset.m, s = target.dataset.s;
    if (m) {
      var p = m.split(":"), l = D.lanes[+p[0]], mk = l.marks[+p[1]];
      return { title: l.kind + " " + l.key, text: time(mk[2]) + "  " + S[mk[3]], hint: "baton log " + l.key };
    }
    if (s) {
      var q = s.split(":"), ln = D.lanes[+q[0]], sg = ln.seg[+q[1]];
      var who = sg[4] >= 0 ? "session " + D.sessions[sg[4]] + (sg[5] === null ? "" : " (epoch " + sg[5] + ")") : "phase " + (sg[6] === null ? "?" : S[sg[6]]);
      return { title: ln.kind + " " + ln.key, text: who + "\nfrom " + time(sg[2]) + "\nto   " + time(sg[3]) + " (" + span(sg[2], sg[3]) + ")", hint: "baton log " + ln.key };
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
