// The matches list: filter the rows of this page by a bot and its opponent, and open a match by clicking anywhere
// on its row. Without JavaScript the list is complete and every match has its link; this only narrows it down.
(function () {
  "use strict";
  var rows = Array.prototype.slice.call(document.querySelectorAll("table.matches tr[data-bots]"));
  // The whole row opens the match, except where it has links of its own (the bots).
  rows.forEach(function (row) {
    row.addEventListener("click", function (event) {
      if (event.target.closest("a") || window.getSelection().toString()) return;
      var link = row.querySelector("a.whole");
      if (link) window.location.href = link.href;
    });
  });

  var form = document.querySelector("[data-filter]");
  if (!form) return;
  var bot = form.querySelector("[data-filter-bot]");
  var opponent = form.querySelector("[data-filter-opponent]");
  var count = form.querySelector("[data-filter-count]");

  function apply() {
    var shown = 0;
    rows.forEach(function (row) {
      var bots = row.getAttribute("data-bots").split("\n");
      var keep = (!bot.value || bots.indexOf(bot.value) >= 0) && (!opponent.value || bots.indexOf(opponent.value) >= 0);
      row.hidden = !keep;
      if (keep) shown++;
    });
    // A deal none of whose matches is left is hidden whole, its heading included.
    document.querySelectorAll("table.matches tbody.deal").forEach(function (body) {
      body.hidden = !body.querySelector("tr[data-bots]:not([hidden])");
    });
    count.textContent = bot.value || opponent.value ? shown + " of " + rows.length + " matches on this page" : "";
  }
  bot.addEventListener("change", apply);
  opponent.addEventListener("change", apply);
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  form.hidden = false;
})();
