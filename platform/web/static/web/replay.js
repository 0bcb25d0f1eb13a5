/* Replay viewer for Tiến Lên games. Plain JavaScript, no dependencies.
 *
 * The server embeds one JSON document (<script id="replay-data">): the replay's initial
 * hands and moves plus, per step, the table state the referee's engine computed when it
 * re-simulated the game (so the viewer never re-implements the rules). Step 0 is the deal,
 * step k is the position after move k. Hands are the initial hands minus the cards played.
 * The URL carries the step (?move=k) and the optional single-seat view (?seat=s).
 */
(function () {
  "use strict";
  var SUITS = { S: "\u2660", C: "\u2663", D: "\u2666", H: "\u2665" };
  var SUIT_NAMES = { S: "spades", C: "clubs", D: "diamonds", H: "hearts" };
  var SPEEDS = [0.5, 1, 2, 4, 8];

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === "text") node.textContent = attrs[k];
        else if (k === "cls") node.className = attrs[k];
        else node.setAttribute(k, attrs[k]);
      });
    }
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }

  function cardEl(text, extraClass) {
    var rank = text.slice(0, -1), suit = text.slice(-1);
    var node = el("span", {
      cls: "card suit-" + suit + (extraClass ? " " + extraClass : ""),
      "data-card": text,
      title: rank + " of " + (SUIT_NAMES[suit] || suit)
    });
    node.appendChild(el("b", { text: rank }));
    node.appendChild(el("i", { text: SUITS[suit] || suit }));
    return node;
  }

  function backEl() { return el("span", { cls: "card back", "aria-hidden": "true", text: "##" }); }

  function cardsEl(list, extraClass) {
    var wrap = el("span", { cls: "cards" });
    list.forEach(function (c) { wrap.appendChild(cardEl(c, extraClass)); });
    return wrap;
  }

  /* The page's ?move= and ?seat=, each a plain number or null. A hand-edited URL must not
   * stop the viewer: URLSearchParams decodes leniently (decodeURIComponent threw URIError on
   * ?seat=%E0%A4%A and nothing was drawn), and anything but ASCII digits is ignored. */
  function params() {
    var query = new URLSearchParams(window.location.search);
    function number(name) {
      var text = query.get(name);
      return text !== null && /^[0-9]{1,6}$/.test(text) ? parseInt(text, 10) : null;
    }
    return { seat: number("seat"), move: number("move") };
  }

  function Viewer(root, data) {
    this.root = root;
    this.data = data;
    this.n = data.players;
    this.total = data.moves.length;
    var p = params();
    this.seatView = (p.seat !== null && p.seat < this.n) ? p.seat : null;
    var move = p.move === null ? this.total : p.move;  // a finished game opens on its final position
    this.step = Math.max(0, Math.min(this.total, move));
    this.speedIndex = 1;
    this.timer = null;
    this.handsAt = this.computeHands();
    this.build();
    this.render();
  }

  /* hands[k][s]: the cards seat s holds after k moves. */
  Viewer.prototype.computeHands = function () {
    var data = this.data, out = [];
    var current = data.hands.map(function (h) { return h.slice(); });
    out.push(current.map(function (h) { return h.slice(); }));
    data.moves.forEach(function (m) {
      if (m.cards) {
        var held = current[m.seat];
        m.cards.forEach(function (c) {
          var i = held.indexOf(c);
          if (i >= 0) held.splice(i, 1);
        });
      }
      out.push(current.map(function (h) { return h.slice(); }));
    });
    return out;
  };

  Viewer.prototype.positionOf = function (seat) {
    var base = this.seatView === null ? 0 : this.seatView;
    var rel = (seat - base + this.n) % this.n;
    var layouts = { 2: [0, 2], 3: [0, 1, 3], 4: [0, 1, 2, 3] };
    return (layouts[this.n] || layouts[4])[rel];
  };

  Viewer.prototype.build = function () {
    var self = this;
    this.felt = this.root.querySelector(".felt");
    this.seatEls = [];
    for (var s = 0; s < this.n; s++) {
      var seatEl = el("section", { cls: "seat", "data-seat": String(s), "data-pos": String(this.positionOf(s)) });
      var head = el("div", { cls: "seat-head" }, [
        el("span", { cls: "seat-name", text: this.data.names[s] || ("Seat " + s) }),
        el("span", { cls: "seat-tags" })
      ]);
      seatEl.appendChild(head);
      seatEl.appendChild(el("div", { cls: "hand" }));
      seatEl.appendChild(el("div", { cls: "last-play" }));
      this.felt.appendChild(seatEl);
      this.seatEls.push(seatEl);
    }
    this.center = el("div", { cls: "center", id: "table-center" });
    this.felt.appendChild(this.center);

    this.status = this.root.querySelector("#move-status");
    this.slider = this.root.querySelector("#move-slider");
    this.slider.max = String(this.total);
    this.playBtn = this.root.querySelector("#btn-play");
    this.speedSel = this.root.querySelector("#speed");
    this.linkEl = this.root.querySelector("#move-link");
    this.moveList = this.root.querySelector("#move-list");
    this.resultEl = this.root.querySelector("#result-panel");
    this.noteEl = this.root.querySelector("#move-note");
    var notesToggle = this.root.querySelector("#show-notes");
    if (notesToggle) {
      notesToggle.addEventListener("change", function () {
        self.moveList.classList.toggle("hide-notes", !notesToggle.checked);
      });
    }

    SPEEDS.forEach(function (sp, i) {
      var o = el("option", { value: String(i), text: sp + "\u00d7" });
      if (i === self.speedIndex) o.selected = true;
      self.speedSel.appendChild(o);
    });
    this.speedSel.addEventListener("change", function () {
      self.speedIndex = parseInt(self.speedSel.value, 10);
      if (self.timer) { self.pause(); self.play(); }
    });
    this.root.querySelector("#btn-first").addEventListener("click", function () { self.go(0); });
    this.root.querySelector("#btn-prev").addEventListener("click", function () { self.go(self.step - 1); });
    this.root.querySelector("#btn-next").addEventListener("click", function () { self.go(self.step + 1); });
    this.root.querySelector("#btn-last").addEventListener("click", function () { self.go(self.total); });
    this.playBtn.addEventListener("click", function () { self.toggle(); });
    this.slider.addEventListener("input", function () { self.go(parseInt(self.slider.value, 10)); });
    document.addEventListener("keydown", function (ev) { self.onKey(ev); });

    this.buildMoveList();
  };

  Viewer.prototype.describeMove = function (m) {
    return m.pass ? (m.offer ? "declines" : "passes") : (m.kind || "plays");
  };

  Viewer.prototype.buildMoveList = function () {
    var self = this;
    var first = el("li", { "data-step": "0" }, [
      el("span", { cls: "n", text: "0" }), el("span", { text: "Deal" })
    ]);
    first.addEventListener("click", function () { self.go(0); });
    this.moveList.appendChild(first);
    this.data.moves.forEach(function (m, i) {
      var li = el("li", { "data-step": String(i + 1), cls: m.lead ? "round-start" : "" }, [
        el("span", { cls: "n", text: String(i + 1) }),
        el("span", { cls: "who", text: self.data.names[m.seat] || ("Seat " + m.seat) })
      ]);
      if (m.cards && (self.seatView === null || true)) {
        li.appendChild(cardsEl(m.cards));
      } else {
        li.appendChild(el("span", { cls: "muted", text: self.describeMove(m) }));
      }
      if (m.chop) li.appendChild(el("span", { cls: "badge chop", text: "chop" }));
      if (m.fallback) li.appendChild(el("span", { cls: "badge error", title: "the referee played for this bot", text: "fallback: " + m.fallback.replace(/_/g, " ") }));
      if (m.attempts) li.appendChild(el("span", { cls: "badge pending", title: "illegal moves tried before this one", text: m.attempts + " tries" }));
      if (typeof m.ms === "number") li.appendChild(el("span", { cls: "ms", title: "thinking time, as the bot reported it", text: (m.ms < 10 ? m.ms.toFixed(1) : Math.round(m.ms)) + " ms" }));
      if (m.out) li.appendChild(el("span", { cls: "badge finished", text: "out #" + m.out }));
      // Only the viewer's own bots' notes, and published ones, are in the data (tournaments/sealing.py).
      if (typeof m.note === "string") li.appendChild(el("div", { cls: "move-note", title: "the bot's note on this move", text: m.note }));
      li.addEventListener("click", function () { self.go(i + 1); });
      self.moveList.appendChild(li);
    });
  };

  /* Each seat's latest play in the round going on after k moves (what a real table shows
   * in front of each player); empty once the table is cleared. */
  Viewer.prototype.roundPlays = function (k) {
    var out = {}, states = this.data.states, moves = this.data.moves;
    if (!states[k] || !states[k].table) return out;
    for (var j = k; j >= 1; j--) {
      var m = moves[j - 1];
      if (m.cards && !(m.seat in out)) out[m.seat] = m.cards;
      if (!states[j - 1].table) break;  // the move that opened this round
    }
    return out;
  };

  Viewer.prototype.onKey = function (ev) {
    var tag = (ev.target && ev.target.tagName) || "";
    if (tag === "INPUT" && ev.target.type !== "range") return;
    if (tag === "SELECT" || tag === "TEXTAREA" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var handled = true;
    switch (ev.key) {
      case "ArrowRight": case "l": this.pause(); this.go(this.step + 1); break;
      case "ArrowLeft": case "h": this.pause(); this.go(this.step - 1); break;
      case "Home": this.pause(); this.go(0); break;
      case "End": this.pause(); this.go(this.total); break;
      case " ": case "k": this.toggle(); break;
      case "+": case "=": this.setSpeed(this.speedIndex + 1); break;
      case "-": this.setSpeed(this.speedIndex - 1); break;
      default: handled = false;
    }
    if (handled) ev.preventDefault();
  };

  Viewer.prototype.setSpeed = function (i) {
    this.speedIndex = Math.max(0, Math.min(SPEEDS.length - 1, i));
    this.speedSel.value = String(this.speedIndex);
    if (this.timer) { this.pause(); this.play(); }
  };

  Viewer.prototype.toggle = function () { if (this.timer) this.pause(); else this.play(); };

  Viewer.prototype.play = function () {
    var self = this;
    if (this.step >= this.total) this.go(0);
    this.playBtn.textContent = "Pause";
    this.playBtn.setAttribute("aria-label", "Pause");
    this.root.classList.add("playing");
    this.timer = window.setInterval(function () {
      if (self.step >= self.total) { self.pause(); return; }
      self.go(self.step + 1);
    }, 1000 / SPEEDS[this.speedIndex]);
  };

  Viewer.prototype.pause = function () {
    if (this.timer) window.clearInterval(this.timer);
    this.timer = null;
    this.playBtn.textContent = "Play";
    this.playBtn.setAttribute("aria-label", "Play");
    this.root.classList.remove("playing");
  };

  Viewer.prototype.go = function (step) {
    step = Math.max(0, Math.min(this.total, step));
    if (step === this.step && this.rendered) return;
    this.step = step;
    this.render();
  };

  Viewer.prototype.urlFor = function (step) {
    var q = "?move=" + step + (this.seatView === null ? "" : "&seat=" + this.seatView);
    return window.location.pathname + q;
  };

  Viewer.prototype.render = function () {
    var self = this, k = this.step, data = this.data;
    var state = data.states[k] || {};
    var hands = this.handsAt[k];
    var move = k > 0 ? data.moves[k - 1] : null;
    var finalStep = k === this.total;
    // frozen (cóng) is judged when the first player goes out; the engine's state says when
    var frozen = state.frozen || (finalStep && data.result && data.result.frozen) || [];
    var finished = state.finished || [];
    var locked = state.locked || [];
    var lastPlays = this.roundPlays(k);

    for (var s = 0; s < this.n; s++) {
      var seatEl = this.seatEls[s];
      var hide = this.seatView !== null && s !== this.seatView;
      var handEl = seatEl.querySelector(".hand");
      handEl.innerHTML = "";
      handEl.setAttribute("data-count", String(hands[s].length));
      if (hide) {
        var backs = el("span", { cls: "cards" });
        for (var i = 0; i < hands[s].length; i++) backs.appendChild(backEl());
        handEl.appendChild(backs);
      } else {
        handEl.appendChild(cardsEl(hands[s]));
      }
      var lastEl = seatEl.querySelector(".last-play");
      lastEl.innerHTML = "";
      if (lastPlays[s]) {
        lastEl.appendChild(el("span", { cls: "muted", text: "this round: " }));
        lastEl.appendChild(cardsEl(lastPlays[s]));
      }
      var tags = seatEl.querySelector(".seat-tags");
      tags.innerHTML = "";
      var left = hands[s].length;
      tags.appendChild(el("span", { cls: "muted", text: left + (left === 1 ? " card" : " cards") }));
      var place = finished.indexOf(s);
      // At the end, the result's places (seats tied for last share it); before, the order out.
      if (finalStep && data.places) tags.appendChild(el("span", { cls: "badge finished", text: "place " + data.places[s] }));
      else if (place >= 0) tags.appendChild(el("span", { cls: "badge finished", text: "out #" + (place + 1) }));
      if (locked.indexOf(s) >= 0) tags.appendChild(el("span", { cls: "badge passed", text: "passed" }));
      if (frozen.indexOf(s) >= 0) tags.appendChild(el("span", { cls: "badge frozen", text: "frozen" }));
      if (finalStep && data.result && data.result.points) {
        var pts = data.result.points[s];
        tags.appendChild(el("span", { cls: "badge " + (pts > 0 ? "running" : pts < 0 ? "cancelled" : ""), text: (pts > 0 ? "+" : "") + pts + " pts" }));
      }
      seatEl.classList.toggle("to-move", state.to_move === s && !finalStep);
      seatEl.classList.toggle("locked", locked.indexOf(s) >= 0);
      seatEl.classList.toggle("out", place >= 0);
    }

    // the table in the middle
    this.center.innerHTML = "";
    if (move) {
      var who = data.names[move.seat] || ("Seat " + move.seat);
      var text = move.pass ? who + " " + this.describeMove(move) : who + " plays";
      this.center.appendChild(el("div", { cls: "last-move", id: "last-move", text: text }));
    } else {
      this.center.appendChild(el("div", { cls: "last-move", id: "last-move", text: data.instant_win_text || "The deal" }));
    }
    if (state.table) {
      var tc = cardsEl(state.table.cards);
      tc.classList.add("table-cards");
      tc.id = "table-cards";
      tc.setAttribute("data-cards", state.table.cards.join(" "));
      this.center.appendChild(tc);
      this.center.appendChild(el("div", { cls: "kind", text: (state.table.kind || "").replace(/_/g, " ") + " \u00b7 " + (data.names[state.table.seat] || "") }));
    } else {
      this.center.appendChild(el("div", { cls: "empty-table", id: "table-cards", "data-cards": "", text: finalStep ? "Game over" : k === 0 ? "Waiting for the first play" : "Table clear \u2014 new round" }));
    }
    if (state.chain && state.chain.length) {
      this.center.appendChild(el("div", { cls: "chain", id: "chop-chain", text: "Chop chain \u00d7" + state.chain.length + ": " + state.chain.map(function (c) { return data.names[c.seat] || c.seat; }).join(" \u2192 ") }));
    }
    if (!finalStep && state.to_move !== null && state.to_move !== undefined) {
      this.center.appendChild(el("div", { cls: "kind", id: "to-move", text: "next: " + (data.names[state.to_move] || ("seat " + state.to_move)) }));
    }
    if (state.offer) {
      this.center.appendChild(el("div", { cls: "kind", text: "offer: " + state.offer.replace(/_/g, " ") }));
    }

    // the owner's "fork from here": the command that asks their bot about the next move
    var forkEl = this.root.querySelector("#fork-line");
    if (forkEl && data.fork) {
      var owned = data.fork.seats;
      var seat = owned.indexOf(state.to_move) >= 0 ? state.to_move : owned[0];
      forkEl.parentNode.hidden = finalStep;
      forkEl.textContent = "tienlen-bot fork " + data.fork.url + " --move " + (k + 1) + " --seat " + seat + " --bot my_bot.py";
    }

    // controls and list
    this.status.textContent = k === 0 ? "Deal \u00b7 move 0 / " + this.total : "Move " + k + " / " + this.total;
    this.status.setAttribute("data-step", String(k));
    this.slider.value = String(k);
    this.root.querySelector("#btn-prev").disabled = k === 0;
    this.root.querySelector("#btn-first").disabled = k === 0;
    this.root.querySelector("#btn-next").disabled = k === this.total;
    this.root.querySelector("#btn-last").disabled = k === this.total;
    var url = this.urlFor(k);
    if (this.linkEl) { this.linkEl.href = url; }
    if (window.history && window.history.replaceState) window.history.replaceState(null, "", url);
    var items = this.moveList.querySelectorAll("li");
    for (var j = 0; j < items.length; j++) {
      var on = parseInt(items[j].getAttribute("data-step"), 10) === k;
      items[j].classList.toggle("current", on);
      if (on && this.rendered && items[j].scrollIntoView) {
        var box = this.moveList.getBoundingClientRect(), it = items[j].getBoundingClientRect();
        if (it.top < box.top || it.bottom > box.bottom) this.moveList.scrollTop += it.top - box.top - box.height / 2;
      }
    }
    if (this.noteEl) this.noteEl.textContent = state.note || "";
    if (this.resultEl) this.resultEl.hidden = !finalStep;
    this.rendered = true;
    this.root.setAttribute("data-step", String(k));
  };

  function start() {
    var root = document.getElementById("replay-viewer");
    var script = document.getElementById("replay-data");
    if (!root || !script) return;
    var data = JSON.parse(script.textContent);
    window.tienlenViewer = new Viewer(root, data);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
