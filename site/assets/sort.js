// Sortable tables (table[data-sortable], its value the column the rows come sorted by): each column heading becomes a button that sorts the rows by that column,
// again to reverse; the heading's aria-sort says the order. A cell's data-value, when it has one, is what it sorts
// by (a bar, a list of counts); else its text, as a number when it reads as one. Without JavaScript the table
// stays in the order the page was built in.
(function () {
  "use strict";
  function key(cell) {
    if (!cell) return "";
    var text = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent;
    text = text.trim().replace(/\u2212/g, "-");
    var number = parseFloat(text);
    return isNaN(number) ? text.toLowerCase() : number;
  }

  function compare(a, b) {
    var numbers = typeof a === "number", others = typeof b === "number";
    if (numbers !== others) return numbers ? -1 : 1;  // cells without a number ("–") go last
    return a < b ? -1 : a > b ? 1 : 0;
  }

  Array.prototype.forEach.call(document.querySelectorAll("table[data-sortable]"), function (table) {
    var heads = Array.prototype.slice.call(table.querySelectorAll("thead th"));
    var body = table.tBodies[0];
    var initial = table.getAttribute("data-sortable");  // the column the page is built sorted by, if any
    if (initial && heads[+initial]) heads[+initial].setAttribute("aria-sort", "ascending");
    heads.forEach(function (head, column) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      while (head.firstChild) button.appendChild(head.firstChild);
      head.appendChild(button);
      button.addEventListener("click", function () {
        var ascending = head.getAttribute("aria-sort") !== "ascending";
        var rows = Array.prototype.slice.call(body.rows);
        var keyed = rows.map(function (row, position) { return [key(row.cells[column]), position, row]; });
        keyed.sort(function (a, b) {
          var order = compare(a[0], b[0]);
          if (typeof a[0] === "number" && typeof b[0] === "number" && !ascending) order = -order;
          else if (typeof a[0] !== "number" && typeof b[0] !== "number" && !ascending) order = -order;
          return order || a[1] - b[1];
        });
        keyed.forEach(function (entry) { body.appendChild(entry[2]); });
        heads.forEach(function (other) { other.removeAttribute("aria-sort"); });
        head.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      });
    });
  });
})();
