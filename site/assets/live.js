// A live page (a tournament being played while its site is built): reload it every data-live-refresh seconds, so
// the standings follow the run. The build at the run's end writes the page without this script, so the reloading
// stops by itself. A button pauses it (WCAG 2.2.1: a user can turn off a time limit); the choice is kept for the
// session, so a paused page stays paused across pages of the site.
(function () {
  "use strict";
  var banner = document.querySelector("[data-live-refresh]");
  if (!banner) return;
  var seconds = Math.max(1, parseInt(banner.getAttribute("data-live-refresh"), 10) || 10);
  var button = banner.querySelector("[data-live-pause]");
  var key = "arena-live-paused";
  var paused = false;
  try { paused = window.sessionStorage.getItem(key) === "1"; } catch (e) { /* storage off: not kept */ }
  var timer = null;
  function schedule() {
    if (timer !== null) window.clearTimeout(timer);
    timer = paused ? null : window.setTimeout(function () { window.location.reload(); }, seconds * 1000);
    if (button) {
      button.textContent = paused ? "Resume updates" : "Pause updates";
      button.setAttribute("aria-pressed", paused ? "true" : "false");
    }
  }
  if (button) {
    button.hidden = false;
    button.addEventListener("click", function () {
      paused = !paused;
      try { window.sessionStorage.setItem(key, paused ? "1" : "0"); } catch (e) { /* storage off */ }
      schedule();
    });
  }
  schedule();
}());
