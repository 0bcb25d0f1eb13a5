/* Live tournament progress without reloading the page.
 *
 * Listens to server-sent events when the page came over ASGI, else polls the small JSON
 * endpoint (works under WSGI and ASGI alike), and moves the bar.
 * When games were recorded, the standings, cross-table, bracket, tables and latest games are
 * refreshed from a fresh copy of the page (at most every REFRESH_MS, and once at the end),
 * so a spectator can leave the page open for a whole tournament. Stops once it is over.
 */
(function () {
  "use strict";
  var panel = document.getElementById("progress-panel");
  if (!panel) return;
  var url = panel.getAttribute("data-progress-url");
  var interval = parseInt(panel.getAttribute("data-poll-ms") || "2000", 10) || 2000;
  var REFRESH_MS = Math.max(4 * interval, 5000);
  /* The progress label too: at the end its counts come from the same page as the standings,
     so a finished tournament never shows a table "playing now" nor two different totals. */
  var SECTIONS = ["progress-label", "result", "standings", "cross-table", "bracket", "tables", "games", "incidents", "organiser-actions"];
  var lastGames = parseInt((document.getElementById("games-done") || {}).textContent || "0", 10);
  var lastRefresh = Date.now();
  var refreshing = false;

  function set(id, value) { var n = document.getElementById(id); if (n) n.textContent = String(value); }

  function refreshSections() {
    if (refreshing) return;
    refreshing = true;
    lastRefresh = Date.now();
    fetch(window.location.href, { cache: "no-store", headers: { Accept: "text/html" } })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        SECTIONS.forEach(function (id) {
          var fresh = doc.getElementById(id), old = document.getElementById(id);
          if (fresh && old) old.innerHTML = fresh.innerHTML;
        });
        document.body.setAttribute("data-refreshed", String(lastRefresh));
      })
      .catch(function () { /* keep the old sections; the next change retries */ })
      .then(function () { refreshing = false; });
  }

  /* Apply one progress document; returns true once the tournament is over. */
  function apply(d) {
    var bar = document.getElementById("progress-bar");
    if (bar) bar.style.width = d.percent + "%";
    var pb = panel.querySelector("[role=progressbar]");
    if (pb) pb.setAttribute("aria-valuenow", String(d.percent));
    set("games-done", d.games_done); set("games-planned", d.games_planned);
    set("tables-done", d.tables_done); set("tables-total", d.tables_total);
    /* What plays now: the open tables, or the bots they wait for (not connected). */
    var part = document.getElementById("tables-running-part");
    if (part) {
      var waiting = d.waiting_for || [];
      var always = part.getAttribute("data-always") === "1";
      var text = waiting.length ? "waiting for " + waiting.join(", ") : d.tables_running + " playing now";
      part.textContent = always ? text : " · " + text;
      part.hidden = !always && !d.tables_running;
    }
    /* The badge says what the tournament does now (its activity: "Running" only for what
       runs), and the reason under the title why, e.g. a ladder waiting for bots. */
    var badge = document.getElementById("t-status");
    if (badge && d.activity) { badge.textContent = d.activity_label; badge.className = "badge " + d.activity; }
    var reason = document.getElementById("status-reason");
    if (reason && typeof d.reason === "string") { reason.textContent = d.reason; reason.hidden = !d.reason; }
    var over = d.status === "finished" || d.status === "cancelled";
    if (over || (d.games_done !== lastGames && Date.now() - lastRefresh >= REFRESH_MS)) {
      lastGames = d.games_done;
      refreshSections();
    }
    panel.setAttribute("data-status", d.status);
    return over;
  }

  function tick() {
    panel.setAttribute("data-live", "poll");
    fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (d) { if (!apply(d)) window.setTimeout(tick, interval); })
      .catch(function () { window.setTimeout(tick, interval * 3); });
  }

  /* Server-sent events when the page was served over ASGI; polling otherwise or on error. */
  function stream(streamUrl) {
    var source = new EventSource(streamUrl);
    var over = false;
    panel.setAttribute("data-live", "sse");
    source.onmessage = function (ev) { over = apply(JSON.parse(ev.data)) || over; };
    source.addEventListener("end", function () {
      source.close();
      if (!over) window.setTimeout(function () { stream(streamUrl); }, interval);
    });
    source.onerror = function () {
      if (over) return;
      source.close();
      window.setTimeout(tick, interval);
    };
  }

  var status = panel.getAttribute("data-status");
  var streamUrl = panel.getAttribute("data-stream-url");
  if (status !== "finished" && status !== "cancelled") {
    if (streamUrl && window.EventSource) stream(streamUrl);
    else window.setTimeout(tick, interval);
  }
})();
