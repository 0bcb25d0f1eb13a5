/* The tournament form (new and edit), progressively enhanced; without this script every
 * field shows, each label saying the format it is for, and the server checks them anyway:
 *  - fields and sections marked data-formats="round_robin knockout …" show only while the
 *    Format select is one of them (hidden fields still submit: their values are kept);
 *  - the entrants' checkbox list gets a filter box (name or owner) and a count of picks;
 *  - the registration window shows only for an open tournament (or a ladder by default).
 */
(function () {
  "use strict";
  var form = document.getElementById("tournament-form");
  if (!form) return;
  var format = form.querySelector("select[name=format]");
  var registration = form.querySelector("select[name=open_registration]");

  function sync() {
    var current = format ? format.value : "";
    form.querySelectorAll("[data-formats]").forEach(function (el) {
      el.hidden = el.getAttribute("data-formats").split(" ").indexOf(current) < 0;
    });
    if (registration) {
      var open = registration.value === "open" || (registration.value === "" && current === "ladder");
      ["registration_opens_at", "registration_closes_at"].forEach(function (name) {
        var field = document.getElementById("field-" + name);
        if (field) field.hidden = !open;
      });
    }
  }
  if (format) format.addEventListener("change", sync);
  if (registration) registration.addEventListener("change", sync);
  sync();

  var picker = form.querySelector("[data-entrant-picker]");
  if (!picker) return;
  var filter = picker.querySelector("[data-entrant-filter]");
  var count = picker.querySelector("[data-entrant-count]");
  var options = Array.prototype.slice.call(picker.querySelectorAll(".entrant-option"));
  function counted() {
    var picked = options.filter(function (o) { return o.querySelector("input").checked; }).length;
    count.textContent = picked + " picked of " + options.length + (filter.value ? " · filtered" : "");
  }
  filter.hidden = false;
  count.hidden = false;
  filter.addEventListener("input", function () {
    var words = filter.value.toLowerCase().trim().split(/\s+/).filter(Boolean);
    options.forEach(function (o) {
      var text = o.textContent.toLowerCase();
      // A checked bot always shows: the filter never hides what will be entered.
      o.hidden = !o.querySelector("input").checked && !words.every(function (w) { return text.indexOf(w) >= 0; });
    });
    counted();
  });
  filter.addEventListener("keydown", function (event) {
    if (event.key === "Enter") event.preventDefault();  // filtering, not submitting
  });
  picker.addEventListener("change", counted);
  counted();
})();
