/* A casual table in the browser (docs/web.md, "Play").
   The server decides everything: the plays offered are the engine's legal plays as the
   seat gateway wrote them; this page never applies a rule itself. It shows the state it
   is sent (server-sent events under ASGI, else polling the JSON) and POSTs the person's
   choice, which the server checks again. */
(function () {
  "use strict";
  var root = document.getElementById("play-table");
  if (!root) return;
  var mine = root.dataset.mine === "1";
  var stateUrl = root.dataset.stateUrl, streamUrl = root.dataset.streamUrl, moveUrl = root.dataset.moveUrl;
  var csrf = root.dataset.csrf;
  var SUITS = {S: "♠", C: "♣", D: "♦", H: "♥"};
  var OFFERS = {
    steal_lead: "Offer: you may steal the lead with a three-pair sequence — play it, or decline (P).",
    out_of_turn_chop: "Offer: you may chop out of turn — play the chop, or decline (P)."
  };
  var state = null, selected = [], focusPlay = -1, sending = false, lastMove = null, clockTimer = null;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function cardEl(text) {
    var suit = text.slice(-1), rank = text.slice(0, -1);
    if (rank === "T") rank = "10";
    var c = el("span", "card suit-" + suit);
    c.dataset.card = text;
    c.title = rank + SUITS[suit];
    var b = el("b", "", rank), i = el("i", "", SUITS[suit] || suit);
    c.appendChild(b); c.appendChild(i);
    return c;
  }
  function cardsEl(list, cls) {
    var box = el("span", "cards" + (cls ? " " + cls : ""));
    (list || []).forEach(function (t) { box.appendChild(cardEl(t)); });
    return box;
  }
  function same(a, b) {
    if (a.length !== b.length) return false;
    var x = a.slice().sort(), y = b.slice().sort();
    for (var i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
    return true;
  }
  function liveToMove(pub) {
    var live = state.live || {};
    return live.moves && live.moves.length && live.game_index >= (pub.game_index || 0) ? live.to_move : pub.to_move;
  }
  function seatName(pub, s) { return (pub.names && pub.names[s]) || ("Seat " + (s + 1)); }

  function render() {
    var pub = state.public || {}, seat = state.seat;
    var status = document.getElementById("play-status");
    var over = state.status === "done" || state.status === "failed";
    if (state.status === "pending") status.textContent = "Waiting for the table to start…";
    else if (state.status === "failed") status.textContent = "The table ended early: " + (state.detail || "it could not be played");
    else if (state.status === "done") status.textContent = "The table is over. Totals: " + (state.names || []).map(function (n, i) { return n + " " + (state.totals[i] > 0 ? "+" : "") + state.totals[i]; }).join(" · ");
    else if (seat && seat.move_id != null) status.textContent = "Your move (game " + (seat.game_index + 1) + " of " + state.games_total + ")";
    else if (liveToMove(pub) != null) status.textContent = "Game " + ((pub.game_index || 0) + 1) + " of " + state.games_total + ": " + seatName(pub, liveToMove(pub)) + " to move";
    else status.textContent = "Game " + ((pub.game_index || 0) + 1) + " of " + state.games_total + (pub.over ? ": over — its result and replay are below" : "");
    root.dataset.status = state.status;
    root.dataset.moveId = seat && seat.move_id != null ? String(seat.move_id) : "";

    // The referee's public moves, one by one as they are played (state.live, the same
    // for every viewer): newer than the seat's last request whenever they reach its game.
    var live = state.live || {}, moves = live.moves || [];
    var now = moves.length && live.game_index >= (pub.game_index || 0) ? live : null;
    var toMove = now ? now.to_move : pub.to_move, counts = now ? now.card_counts : pub.card_counts;
    var finished = (now ? now.finished : pub.finished) || [];
    root.dataset.liveGame = moves.length ? String(live.game_index) : "";
    root.dataset.liveMoves = moves.length ? String(moves[moves.length - 1].n) : "0";
    var seats = document.getElementById("seats");
    seats.textContent = "";
    (pub.names || []).forEach(function (name, s) {
      var box = el("div", "play-seat" + (toMove === s ? " to-move" : "") + (pub.person_seat === s ? " person" : ""));
      box.dataset.seat = s;
      box.appendChild(el("b", "", name + (pub.person_seat === s ? " (person)" : "")));
      var count = counts ? counts[s] : null;
      var c = el("span", "seat-count", count == null ? "" : count + " card" + (count === 1 ? "" : "s"));
      box.appendChild(document.createTextNode(" "));
      box.appendChild(c);
      if (finished.indexOf(s) >= 0) box.appendChild(el("span", "badge finished", "out #" + (finished.indexOf(s) + 1)));
      seats.appendChild(box);
    });

    var plays = document.getElementById("round-plays");
    plays.textContent = "";
    var hist = now ? moves : pub.history || [];
    var onTable = now ? now.table : pub.table;
    var from = Math.max(0, hist.length - 12);
    if (onTable) {
      var on = el("li", "on-table");
      on.appendChild(el("span", "", "On the table: " + seatName(pub, onTable.seat) + " · " + onTable.kind + " "));
      on.appendChild(cardsEl(onTable.cards));
      plays.appendChild(on);
    }
    for (var i = hist.length - 1; i >= from; i--) {
      var m = hist[i], li = el("li", "round-play");
      if (m.n) { li.dataset.n = m.n; li.dataset.seat = m.seat; }
      li.appendChild(el("span", "", seatName(pub, m.seat) + (m.offer ? " (" + m.offer.replace(/_/g, " ") + ")" : "") + ": "));
      if (m.pass) li.appendChild(el("i", "", "pass")); else li.appendChild(cardsEl(m.cards));
      plays.appendChild(li);
    }
    if (!hist.length && !onTable) plays.appendChild(el("li", "empty", "No play yet."));

    if (mine) {
      renderSeat(seat, over);
      document.getElementById("leave-form").hidden = over;
    }
    renderResults();
  }

  function renderSeat(seat, over) {
    var hand = document.getElementById("hand"), opts = document.getElementById("plays");
    var prompt = document.getElementById("prompt");
    hand.textContent = ""; opts.textContent = "";
    var asked = seat && seat.move_id != null;
    if (!asked || !seat || seat.move_id !== lastMove) { selected = []; focusPlay = -1; }
    lastMove = asked ? seat.move_id : null;
    (seat && seat.hand || []).forEach(function (t) {
      var c = cardEl(t);
      c.setAttribute("role", "button");
      c.tabIndex = 0;
      if (selected.indexOf(t) >= 0) c.classList.add("selected");
      c.addEventListener("click", function () { toggle(t); });
      hand.appendChild(c);
    });
    var legal = asked ? seat.legal_plays || [] : [];
    legal.forEach(function (p, i) {
      var b = el("button", "button secondary small play-option" + (i === focusPlay || same(p, selected) ? " chosen" : ""));
      b.type = "button";
      b.dataset.index = i;
      if (i < 9) b.appendChild(el("span", "kbd", String(i + 1)));
      b.appendChild(cardsEl(p));
      b.addEventListener("click", function () { selected = p.slice(); focusPlay = i; renderSeat(state.seat, false); });
      opts.appendChild(b);
    });
    var text = "";
    if (over) text = "";
    else if (asked && seat.offer) text = OFFERS[seat.offer] || ("Offer: " + seat.offer);
    else if (asked && !legal.length) text = "You cannot beat the table: pass.";
    else if (asked && !seat.can_pass) text = "You lead: choose a play.";
    else if (asked) text = "Beat the table, or pass.";
    else if (seat && seat.timed_out) text = "Your time ran out: the referee played the safe move for you (a strike).";
    else if (state.status === "running") text = "Waiting for the others…";
    prompt.textContent = text;
    var strikes = (seat && seat.timeouts) || 0;
    document.getElementById("timeouts").textContent = strikes ? strikes + " timeout" + (strikes === 1 ? "" : "s") + " (a strike each, as for a bot)" : "";
    prompt.dataset.offer = asked && seat.offer ? seat.offer : "";
    var btnPlay = document.getElementById("btn-play"), btnPass = document.getElementById("btn-pass");
    btnPlay.disabled = !asked || sending || !legal.some(function (p) { return same(p, selected); });
    btnPass.disabled = !asked || sending || !seat.can_pass;
    btnPass.textContent = asked && seat.offer ? "Decline (P)" : "Pass (P)";
    clock(seat, asked);
  }

  function clock(seat, asked) {
    var box = document.getElementById("clock");
    if (clockTimer) { clearInterval(clockTimer); clockTimer = null; }
    if (!asked) { box.textContent = ""; return; }
    function tick() {
      var left = Math.max(0, seat.deadline_unix_ms - Date.now());
      var move = seat.move_time_ms || 0;
      var bank = Math.max(0, Math.min(seat.time_bank_ms, left));
      var inMove = Math.max(0, left - seat.time_bank_ms);
      box.textContent = "⏱ " + Math.ceil(inMove / 1000) + " s" + (move ? "" : "") + " + bank " + Math.ceil(bank / 1000) + " s";
      box.classList.toggle("low", left < 5000);
    }
    tick();
    clockTimer = setInterval(tick, 250);
  }

  function renderResults() {
    var box = document.getElementById("game-results");
    var results = state.results || [];
    if (!results.length) return;
    box.textContent = "";
    results.forEach(function (r) {
      var sec = el("div", "game-result");
      sec.dataset.game = r.index;
      var h = el("h3", "", "Game " + (r.index + 1) + " ");
      var a = el("a", "", "replay");
      a.href = r.replay;
      h.appendChild(a);
      sec.appendChild(h);
      var pts = el("p", "small", r.names.map(function (n, s) { return n + " " + (r.points[s] > 0 ? "+" : "") + r.points[s]; }).join(" · ") + (r.end_reason && r.end_reason !== "finished" ? " (" + r.end_reason.replace(/_/g, " ") + ")" : ""));
      sec.appendChild(pts);
      var ul = el("ul", "plain small payments");
      r.payments.forEach(function (p) { ul.appendChild(el("li", "", p.from_name + " → " + p.to_name + ": " + p.points + " (" + p.reason_text + ")")); });
      if (!r.payments.length) ul.appendChild(el("li", "empty", "Nobody paid anything."));
      sec.appendChild(ul);
      box.appendChild(sec);
    });
  }

  function toggle(t) {
    if (!state || !state.seat || state.seat.move_id == null) return;
    var i = selected.indexOf(t);
    if (i >= 0) selected.splice(i, 1); else selected.push(t);
    focusPlay = -1;
    renderSeat(state.seat, false);
  }

  function showError(text) {
    var box = document.getElementById("move-error");
    box.textContent = text || "";
    box.hidden = !text;
  }

  function send(body) {
    if (sending || !state.seat || state.seat.move_id == null) return;
    body.move_id = state.seat.move_id;
    sending = true;
    showError("");
    fetch(moveUrl, {method: "POST", credentials: "same-origin", headers: {"Content-Type": "application/json", "X-CSRFToken": csrf}, body: JSON.stringify(body)})
      .then(function (r) { return r.json().then(function (j) { return [r.ok, j]; }); })
      .then(function (res) { sending = false; if (!res[0]) showError(res[1].error || "refused"); else { selected = []; refresh(); } })
      .catch(function () { sending = false; showError("The answer did not reach the server: try again."); });
  }

  function playSelected() {
    var legal = (state.seat && state.seat.legal_plays) || [];
    var hit = legal.filter(function (p) { return same(p, selected); })[0];
    if (hit) send({cards: hit});
  }

  if (mine) {
    document.getElementById("btn-play").addEventListener("click", playSelected);
    document.getElementById("btn-pass").addEventListener("click", function () { send({pass: true}); });
    document.getElementById("btn-clear").addEventListener("click", function () { selected = []; focusPlay = -1; renderSeat(state.seat, false); });
    document.addEventListener("keydown", function (e) {
      if (!state || e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
      if (e.key === "Enter" && e.target.tagName === "BUTTON") return;  // the button's own click
      var legal = (state.seat && state.seat.legal_plays) || [];
      if (e.key >= "1" && e.key <= "9" && legal[+e.key - 1]) { focusPlay = +e.key - 1; selected = legal[focusPlay].slice(); renderSeat(state.seat, false); e.preventDefault(); }
      else if ((e.key === "ArrowRight" || e.key === "ArrowLeft") && legal.length) {
        focusPlay = (focusPlay + (e.key === "ArrowRight" ? 1 : legal.length - 1)) % legal.length;
        if (focusPlay < 0) focusPlay = 0;
        selected = legal[focusPlay].slice(); renderSeat(state.seat, false); e.preventDefault();
      } else if (e.key === "Enter") { playSelected(); e.preventDefault(); }
      else if (e.key === "p" || e.key === "P") { if (state.seat && state.seat.can_pass) send({pass: true}); e.preventDefault(); }
      else if (e.key === "Escape") { selected = []; focusPlay = -1; renderSeat(state.seat, false); }
    });
  }

  function take(s) {
    state = s;
    render();
    root.dataset.version = String(s.version) + "." + (s.results || []).length;
  }
  function refresh() {
    return fetch(stateUrl, {credentials: "same-origin", cache: "no-store"}).then(function (r) { return r.json(); }).then(take).catch(function () {});
  }
  if (streamUrl && window.EventSource) {
    root.dataset.live = "sse";
    var source = new EventSource(streamUrl);
    source.onmessage = function (e) { take(JSON.parse(e.data)); };
    source.addEventListener("end", function () { source.close(); refresh(); });
    source.addEventListener("gone", function () { source.close(); });
  } else {
    root.dataset.live = "poll";
    refresh();
    var poll = setInterval(function () {
      if (state && (state.status === "done" || state.status === "failed")) { clearInterval(poll); return; }
      refresh();
    }, 400);
  }
})();
