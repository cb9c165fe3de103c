// Filtering a table's rows by name (form[data-rows], its value the table's id): a row whose heading does not hold
// the typed text is hidden. On a big field's standings (the form's data-index: the standings index, loaded when
// first typed in) the bots found on the other pages are listed under the form too, each with its rank, its page and
// the standings page it is on. Without JavaScript the form stays hidden and the table is all there is.
(function () {
  "use strict";
  var SHOWN = 50;  // bots from other pages listed at a time

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  Array.prototype.forEach.call(document.querySelectorAll("form[data-rows]"), function (form) {
    var table = document.getElementById(form.getAttribute("data-rows"));
    var input = form.querySelector("[data-rows-input]");
    if (!table || !input) return;
    var count = form.querySelector("[data-rows-count]");
    var indexSrc = form.getAttribute("data-index");
    var found = indexSrc ? form.nextElementSibling : null;
    if (found && !found.hasAttribute("data-rows-found")) found = null;
    var rows = Array.prototype.slice.call(table.tBodies[0].rows);
    var names = rows.map(function (row) {
      var th = row.querySelector("th");
      var link = th && th.querySelector("a");
      return (link || th || row).textContent.trim().toLowerCase();
    });
    var here = {};
    names.forEach(function (name) { here[name] = true; });
    var loading = null;

    function load(then) {
      if (window.arenaStandings) { then(); return; }
      if (!loading) {
        loading = [];
        var script = el("script", {src: indexSrc});
        script.onload = function () { loading.forEach(function (f) { f(); }); };
        script.onerror = function () { count.textContent = "The standings index could not be loaded."; };
        document.head.appendChild(script);
      }
      loading.push(then);
    }

    function elsewhere(wanted) {
      found.textContent = "";
      found.hidden = true;
      if (!wanted) return;
      if (!window.arenaStandings) {
        load(function () { if (input.value.trim().toLowerCase() === wanted) elsewhere(wanted); });
        return;
      }
      var index = window.arenaStandings;
      var base = indexSrc.replace(/standings\.js$/, "");
      var hits = [];
      index.bots.forEach(function (bot, position) {
        var name = bot[1].toLowerCase();
        if (name.indexOf(wanted) >= 0 && !here[name]) hits.push([bot, Math.floor(position / index.per_page) + 1]);
      });
      if (!hits.length) return;
      found.appendChild(el("p", {"class": "note"}, hits.length + " on other pages of the standings" +
                                                   (hits.length > SHOWN ? ", the first " + SHOWN + ":" : ":")));
      var list = found.appendChild(el("ul", {"class": "found-bots"}));
      hits.slice(0, SHOWN).forEach(function (hit) {
        var bot = hit[0], page = hit[1];
        var item = list.appendChild(el("li", {}, bot[0] + ". "));
        item.appendChild(el("a", {href: base + "bots/" + bot[2] + "/index.html"}, bot[1]));
        item.appendChild(document.createTextNode(" ("));
        item.appendChild(el("a", {href: base + (page === 1 ? "index.html" : "standings-" + page + ".html")},
                            "standings page " + page));
        item.appendChild(document.createTextNode(")"));
      });
      found.hidden = false;
    }

    function apply() {
      var wanted = input.value.trim().toLowerCase();
      var shown = 0;
      rows.forEach(function (row, position) {
        var keep = !wanted || names[position].indexOf(wanted) >= 0;
        row.hidden = !keep;
        if (keep) shown++;
      });
      count.textContent = wanted ? shown + " of " + rows.length + (found ? " on this page" : "") : "";
      if (found) elsewhere(wanted);
    }

    input.addEventListener("input", apply);
    form.addEventListener("submit", function (event) { event.preventDefault(); });
    form.hidden = false;
    if (input.value) apply();  // a value the browser kept over a reload
  });
})();
