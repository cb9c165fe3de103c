// Whole-tournament search on the matches list and a bot's page: filter every match of the tournament (its match
// index, matches/index.js, loaded when first needed) by bot, opponent, fault and result, the filter kept in the
// address (?bot=flaky&vs=planner&fault=crash) so that it can be shared and survives a reload. Without JavaScript
// the static, paged list is all there is; with a filter set it is hidden and the hits are listed instead.
(function () {
  "use strict";
  var form = document.querySelector("form[data-search]");
  if (!form) return;
  var FIELDS = ["bot", "vs", "fault", "result", "sort"];
  var SHOWN = 200;  // hits rendered at a time (a bot's matches in a league can be tens of thousands)
  var indexSrc = form.getAttribute("data-index");
  var base = indexSrc.replace(/matches\/index\.js$/, "");  // the tournament's directory, relative to this page
  var fixed = form.getAttribute("data-for-bot");  // a bot's page: its matches only
  var listing = document.querySelector("[data-listing]");
  var found = document.querySelector("[data-found]");
  var count = form.querySelector("[data-filter-count]");
  var field = {};
  FIELDS.forEach(function (name) { field[name] = form.querySelector("[name=" + name + "]"); });
  var loading = null;
  var limit = SHOWN;

  function load(then) {
    if (window.arenaIndex) { then(); return; }
    if (!loading) {
      loading = [];
      var script = document.createElement("script");
      script.src = indexSrc;
      script.onload = function () { decode(); loading.forEach(function (f) { f(); }); };
      script.onerror = function () { count.textContent = "The match index (matches/index.js) could not be loaded."; };
      document.head.appendChild(script);
    }
    loading.push(then);
  }

  // The index's compact rows (see arena/site/html.py, match_index_js) as objects, once.
  var matches = null;
  function decode() {
    var index = window.arenaIndex;
    var id = 0, group = 0;
    matches = index.m.map(function (row) {
      id += row[0];
      group += row[1];
      var done = Array.isArray(row[3]);
      return {id: id, group: group, bots: row[2], status: done ? "done" : row[3], places: done ? row[3] : null,
              scores: done ? row[4] : null, faults: done && row[5] ? row[5] : null, rounds: done ? row[6] : null,
              turns: done ? row[7] : null, ending: done ? index.endings[row[8]] : null, outs: done ? row[9] || null : null};
    });
    // A big field's page leaves its bots out of the selects (data-fill): they are the index's.
    ["bot", "vs"].forEach(function (name) {
      var select = field[name];
      if (!select || !select.hasAttribute("data-fill")) return;
      var kept = select.value;
      index.bots.forEach(function (bot) { if (bot !== fixed && bot !== kept) option(select, bot, bot); });
    });
    var reasons = {};
    index.reasons.forEach(function (reason) { reasons[reason] = true; });
    Object.keys(reasons).sort().forEach(function (reason) { option(field.fault, reason, reason); });
    if (value("fault")) field.fault.value = value("fault");
  }

  function option(select, value, label) {
    if (!select) return;
    for (var i = 0; i < select.options.length; i++) if (select.options[i].value === value) return;
    var o = document.createElement("option");
    o.value = value;
    o.textContent = label;
    select.appendChild(o);
  }

  function value(name) {
    if (name === "bot" && fixed) return fixed;
    return field[name] ? field[name].value : "";
  }

  function seatOf(m, name) {
    var names = window.arenaIndex.bots;
    for (var s = 0; s < m.bots.length; s++) if (names[m.bots[s]] === name) return s;
    return -1;
  }

  function faultMatches(reason, wanted) {
    if (!reason) return false;
    return wanted === "any" || reason === wanted || reason.indexOf(wanted + ".") === 0;
  }

  function keep(m, f) {
    var me = f.bot ? seatOf(m, f.bot) : -1;
    if (f.bot && me < 0) return false;
    var them = f.vs ? seatOf(m, f.vs) : -1;
    if (f.vs && them < 0) return false;
    var reasons = window.arenaIndex.reasons;
    function reasonAt(s) { return m.faults && m.faults[s] ? reasons[m.faults[s] - 1] : null; }
    if (f.fault) {
      var seats = me >= 0 ? [me] : m.bots.map(function (_, s) { return s; });
      if (!seats.some(function (s) { return faultMatches(reasonAt(s), f.fault); })) return false;
    }
    if (f.result) {
      if (m.status !== "done" || me < 0) return false;
      var place = m.places[me], faulted = !!reasonAt(me);
      if (f.result === "won" && place !== 1) return false;
      if (f.result === "placed" && (place === 1 || faulted)) return false;
      if (f.result === "last" && place !== m.bots.length) return false;
      if (f.result === "faulted" && !faulted) return false;
      if (f.result === "above" && !(them >= 0 && place < m.places[them])) return false;
      if (f.result === "below" && !(them >= 0 && place > m.places[them])) return false;
    }
    return true;
  }

  function current() {
    var f = {};
    FIELDS.forEach(function (name) { f[name] = value(name); });
    return f;
  }

  function active(f) { return !!(f.vs || f.fault || f.result || f.sort || (f.bot && !fixed)); }

  // A sort puts the worst first (a bot's worst place, its highest score, the longest match): what an author looks
  // for; ties stay in schedule order. Matches not finished go last.
  function sortKey(m, by) {
    if (m.status !== "done") return -Infinity;
    var mine = fixed ? seatOf(m, fixed) : -1;
    return by === "place" ? m.places[mine] : by === "score" ? m.scores[mine] : by === "rounds" ? m.rounds : m.turns;
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function row(m) {
    var index = window.arenaIndex;
    var names = m.bots.map(function (b) { return index.bots[b]; });
    var tr = el("tr", {"class": "rowlink" + (m.status === "done" ? "" : " status-" + m.status), "data-bots": names.join("\n")});
    var th = el("th", {scope: "row"});
    th.appendChild(el("a", {href: base + "matches/" + m.id + ".html", "class": "whole"}, "#" + m.id));
    tr.appendChild(th);
    if (fixed) {
      var mine = seatOf(m, fixed);
      var place = m.places ? m.places[mine] : null;
      tr.appendChild(el("td", {"class": "num place-" + place}, place === null ? "–" : String(place)));
    }
    var players = el("td", {"class": "players"});
    if (m.status !== "done") players.appendChild(el("span", {"class": "tag"}, m.status));
    var order = m.bots.map(function (_, s) { return s; });
    if (m.places) order.sort(function (a, b) { return m.places[a] - m.places[b] || a - b; });
    order.forEach(function (s) {
      var span = el("span", {"class": "player" + (m.places && m.places[s] === 1 ? " winner" : "")});
      span.appendChild(el("b", {}, (m.places ? m.places[s] : "–") + "."));
      span.appendChild(document.createTextNode(" "));
      span.appendChild(el("a", {href: base + "bots/" + index.slugs[m.bots[s]] + "/index.html"}, names[s]));
      if (m.scores) { span.appendChild(document.createTextNode(" ")); span.appendChild(el("i", {}, String(m.scores[s]))); }
      if (m.outs && m.outs[s]) {
        span.appendChild(document.createTextNode(" "));
        span.appendChild(el("span", {"class": "outtag"}, "out r" + m.outs[s]));
      }
      if (m.faults && m.faults[s]) {
        var reason = index.reasons[m.faults[s] - 1];
        span.appendChild(document.createTextNode(" "));
        span.appendChild(el("span", {"class": "fault", title: reason}, reason.split(".")[0]));
      }
      players.appendChild(span);
      players.appendChild(document.createTextNode(" "));
    });
    tr.appendChild(players);
    // The static list's columns (arena/site/html.py, row_parts): a match looks the same with a filter on or off.
    tr.appendChild(el("td", {"class": "num opt"}, m.rounds === null ? "\u2013" : String(m.rounds)));
    tr.appendChild(el("td", {"class": "num opt"}, m.turns === null ? "\u2013" : String(m.turns)));
    tr.appendChild(el("td", {"class": "opt"}, m.ending ? m.ending.replace(/_/g, " ") : "\u2013"));
    return tr;
  }

  function render(f) {
    var hits = [], total = 0;
    matches.forEach(function (m) {
      if (fixed && seatOf(m, fixed) < 0) return;
      total++;
      if (keep(m, f)) hits.push(m);
    });
    if (f.sort) {
      hits = hits.map(function (m, i) { return [sortKey(m, f.sort), i, m]; })
        .sort(function (a, b) { return b[0] - a[0] || a[1] - b[1]; }).map(function (entry) { return entry[2]; });
    }
    count.textContent = hits.length + " of " + total + " matches";
    found.textContent = "";
    var table = el("table", {"class": "matches listing found"});
    var sorts = {place: "worst place first", score: "highest score first", rounds: "most rounds first",
                 turns: "most turns first"};
    var words = [f.bot, f.vs && "against " + f.vs, f.fault && "fault " + f.fault, f.result,
                 f.sort && sorts[f.sort]].filter(Boolean);
    table.appendChild(el("caption", {}, "Matches found: " + words.join(", ") + " (" + hits.length + ")"));
    var head = el("tr");
    function heading(text, className, by) {
      var th = head.appendChild(el("th", {scope: "col", "class": className}, text));
      if (by && f.sort === by) th.setAttribute("aria-sort", "descending");
      return th;
    }
    heading("Match", "");
    if (fixed) heading("Place", "num", "place");
    var result = heading("Result (place. bot score; ", "", "score");
    result.appendChild(el("span", {"class": "outtag"}, "out rN"));
    result.appendChild(document.createTextNode(": out over the threshold in round N)"));
    heading("Rounds", "num opt", "rounds");
    heading("Turns", "num opt", "turns");
    heading("Ended", "opt");
    table.appendChild(el("thead")).appendChild(head);
    var body = table.appendChild(el("tbody"));
    hits.slice(0, limit).forEach(function (m) { body.appendChild(row(m)); });
    if (!hits.length) body.appendChild(el("tr")).appendChild(el("td", {colspan: fixed ? 6 : 5}, "No matches."));
    var scroll = el("div", {"class": "scroll", tabindex: "0", role: "region", "aria-label": "Matches found"});
    scroll.appendChild(table);
    found.appendChild(scroll);
    if (hits.length > limit) {
      var more = el("button", {type: "button", "class": "more"}, "Show " + Math.min(SHOWN, hits.length - limit) + " more");
      more.addEventListener("click", function () { limit += SHOWN; render(current()); });
      found.appendChild(more);
    }
  }

  function apply(push) {
    var f = current();
    if (field.result) {
      // Results are of the chosen bot; "above"/"below" are against the opponent.
      field.result.disabled = !f.bot;
      Array.prototype.forEach.call(field.result.querySelectorAll("[data-needs-vs]"), function (o) { o.disabled = !f.vs; });
    }
    if (push) {
      var params = new URLSearchParams();
      FIELDS.forEach(function (name) { if (field[name] && field[name].value) params.set(name, field[name].value); });
      var query = params.toString();
      history.replaceState(null, "", window.location.pathname + (query ? "?" + query : "") + window.location.hash);
    }
    if (!active(f)) {
      listing.hidden = false;
      found.hidden = true;
      found.textContent = "";
      count.textContent = "";
      return;
    }
    count.textContent = "Searching every match…";
    load(function () {
      var now = current();
      if (!active(now)) return;
      listing.hidden = true;
      found.hidden = false;
      render(now);
    });
  }

  // The address first: a shared or reloaded link shows its filter.
  var params = new URLSearchParams(window.location.search);
  FIELDS.forEach(function (name) {
    var wanted = params.get(name);
    if (!field[name] || !wanted) return;
    option(field[name], wanted, wanted);
    field[name].value = wanted;
  });
  FIELDS.forEach(function (name) {
    if (field[name]) field[name].addEventListener("change", function () { limit = SHOWN; apply(true); });
  });
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  form.addEventListener("reset", function () { setTimeout(function () { limit = SHOWN; apply(true); }, 0); });
  form.addEventListener("focusin", function () { load(function () {}); });  // fetch ahead of the first choice
  // The whole row of a hit opens its match, as on the static list.
  found.addEventListener("click", function (event) {
    var tr = event.target.closest("tr[data-bots]");
    if (!tr || event.target.closest("a") || window.getSelection().toString()) return;
    var link = tr.querySelector("a.whole");
    if (link) window.location.href = link.href;
  });
  form.hidden = false;
  apply(false);
})();
