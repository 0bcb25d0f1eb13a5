/* Live tournament progress: polls the page's JSON endpoint (works under WSGI and ASGI)
 * and updates the bar without a reload; stops once the tournament is over. */
(function () {
  "use strict";
  var panel = document.getElementById("progress-panel");
  if (!panel) return;
  var url = panel.getAttribute("data-progress-url");
  var interval = parseInt(panel.getAttribute("data-poll-ms") || "2000", 10) || 2000;
  function set(id, value) { var n = document.getElementById(id); if (n) n.textContent = String(value); }
  function tick() {
    fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) {
        if (!d) return;
        var bar = document.getElementById("progress-bar");
        if (bar) bar.style.width = d.percent + "%";
        var pb = panel.querySelector("[role=progressbar]");
        if (pb) pb.setAttribute("aria-valuenow", String(d.percent));
        set("games-done", d.games_done); set("games-planned", d.games_planned);
        set("tables-done", d.tables_done); set("tables-total", d.tables_total);
        var badge = document.getElementById("t-status");
        if (badge && d.status) { badge.textContent = d.status.charAt(0).toUpperCase() + d.status.slice(1); badge.className = "badge " + d.status; }
        panel.setAttribute("data-status", d.status);
        if (d.status === "finished" || d.status === "cancelled") return;
        window.setTimeout(tick, interval);
      })
      .catch(function () { window.setTimeout(tick, interval * 3); });
  }
  var status = panel.getAttribute("data-status");
  if (status !== "finished" && status !== "cancelled") window.setTimeout(tick, interval);
})();
