// The matches list: open a match by clicking anywhere on its row (the filter over every match is search.js).
// Without JavaScript every match still has its link.
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
})();
