// The card table of a match's replay: the seats around a felt with their hands face up (a spectator's view; the
// page is public only once every card in it may be shown, docs/SECURITY.md), or only one seat's (the bot's-eye
// view: what that bot saw, the others face down with their counts), the floor, the deck face down with its
// count, the last throw and take moved between steps, and each seat's score per round as a small chart. replay.js
// makes every step from the match's data file and calls show() with it: this draws, nothing more, so the table
// shows what the table of hands says at every step (tests/test_site_cardtable.py checks it against the event log).
// It is a picture for sighted readers (aria-hidden): the table of hands and the narration stay what a screen
// reader reads, and the move list what a page without JavaScript shows.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  // Moves animate only one step forward, for readers who have not asked for less motion.
  var still = window.matchMedia ? window.matchMedia("(prefers-reduced-motion: reduce)") : { matches: true };

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function svg(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    return node;
  }

  // What every player at the table is told of an event, applied to a table's state (the one show() draws): the
  // floor, the deck's count, the scores and their rounds, who moved, who is to move, a declaration, who is out. The
  // hands are the caller's (replay.js knows them, watch.js counts card backs), changed before this is called, so
  // that nextSeat(seat), the next seat after seat still in the round, sees them; and so is the rest of its state.
  window.arenaTableEvent = function (state, e, nextSeat) {
    state.took = null;
    state.declarer = null;
    state.failed = false;
    state.actor = typeof e.seat === "number" ? e.seat : null;
    switch (e.type) {
      case "round_start":
        state.round = e.round;
        state.floor = e.floor.slice();
        state.scores = e.scores.slice();
        state.points = null;
        state.turn = e.starter;
        state.actor = null;
        break;
      case "play":
        if (e.take === "deck") state.deck = Math.max(0, (state.deck || 0) - 1);
        state.floor = e.discard.slice();
        state.turn = nextSeat(e.seat);
        break;
      case "declare":
        state.turn = null;
        break;
      case "reshuffle":
        state.deck = e.deck_size;
        state.actor = null;
        break;
      case "forfeit":
        state.status[e.seat] = "forfeited";
        state.turn = state.turn === e.seat ? nextSeat(e.seat) : state.turn;
        break;
      case "round_end":
        state.scores = e.scores.slice();
        state.rounds.push(e.scores.slice());
        state.points = e.points.slice();
        state.actor = e.declarer;
        state.declarer = e.declarer;
        state.failed = e.reason === "failed_declaration";
        state.turn = null;
        e.eliminated.forEach(function (seat) { state.status[seat] = "out"; });
        break;
      case "match_end":
        state.actor = null;
        state.turn = null;
        state.points = null;
        state.scores = e.scores.slice();
        break;
    }
  };

  // names: in seat order; card(code, highlight): replay.js's card node; total(hand): the hand's points, or null
  // where the hands are face down (watch.js: a match in play), when a seat's note says how many cards it holds;
  // threshold: the score above which a seat is out (the chart's line).
  window.arenaCardTable = function (parent, names, card, total, threshold) {
    var box = el("div", "cardtable");
    box.setAttribute("aria-hidden", "true");
    box.style.setProperty("--seats", String(names.length));
    var felt = box.appendChild(el("div", "tablefelt"));
    var centre = felt.appendChild(el("div", "centre"));
    var floorPile = centre.appendChild(el("div", "pile floorpile"));
    floorPile.appendChild(el("span", "pilename", "floor"));
    var floorCards = floorPile.appendChild(el("span", "cards"));
    var deckPile = centre.appendChild(el("div", "pile deckpile"));
    deckPile.appendChild(el("span", "pilename", "deck"));
    var deckBack = deckPile.appendChild(el("span", "card back"));
    var seats = names.map(function (name, seat) {
      // Seat 0 at the bottom, the others clockwise round the felt, as the turns go.
      var angle = Math.PI / 2 + seat * 2 * Math.PI / names.length;
      var node = felt.appendChild(el("div", "tableseat s" + (seat % 10)));
      // A seat is at most a third of the felt wide: centred at most 33% from the middle, it stays inside it.
      node.style.left = (50 + 33 * Math.cos(angle)).toFixed(1) + "%";
      node.style.top = (50 + 36 * Math.sin(angle)).toFixed(1) + "%";
      node.setAttribute("data-seat", String(seat));
      var head = node.appendChild(el("p", "seathead"));
      head.appendChild(el("span", "swatch"));
      head.appendChild(el("b", "seatname", name));
      var score = head.appendChild(el("span", "seatscore"));
      var hand = node.appendChild(el("div", "cards seathand"));
      var note = node.appendChild(el("p", "seatnote"));
      return { node: node, score: score, hand: hand, note: note };
    });
    var chart = box.appendChild(el("div", "roundchart"));
    parent.insertBefore(box, parent.firstChild);

    // Where a card was before this step, for the move's animation: a seat's hand, the floor or the deck.
    function from(node, start) {
      if (still.matches || !node.animate) return;
      var now = node.getBoundingClientRect();
      node.animate([{ transform: "translate(" + (start.left - now.left) + "px," + (start.top - now.top) + "px)" },
                    { transform: "none" }], { duration: 320, easing: "ease-out" });
    }

    // The bot's-eye view: with a seat chosen, the other seats' hands are face down with their counts until a
    // round's end shows them (a declaration reveals every hand, RULES.md clause 5); null, a spectator's, all up.
    var eye = null, shown = null, event = null;
    function see(seat) {
      eye = seat;
      box.classList.toggle("eyeview", seat !== null);
      if (shown) show(shown, event, false);
    }

    function show(s, e, forward) {
      shown = s;
      event = e;
      var ended = !!s.points || !!e && (e.type === "round_end" || e.type === "match_end");
      var before = forward && e && e.type === "play" ? {
        seat: seats[e.seat].hand.getBoundingClientRect(), floor: floorCards.getBoundingClientRect(),
        deck: deckBack.getBoundingClientRect() } : null;
      floorCards.replaceChildren.apply(floorCards, s.floor.map(function (c) { return card(c, false); }));
      deckBack.textContent = s.deck === null ? "" : String(s.deck);
      deckPile.style.visibility = s.deck === null ? "hidden" : "";  // still laid out: the felt keeps its height
      seats.forEach(function (seat, i) {
        var hand = s.hands[i];
        seat.node.classList.toggle("actor", i === s.actor);
        seat.node.classList.toggle("toplay", i === s.turn);
        seat.node.classList.toggle("declarer", i === s.declarer);
        seat.node.classList.toggle("failed", i === s.declarer && !!s.failed);
        seat.node.classList.toggle("gone", !hand.length);
        seat.score.textContent = String(s.scores[i]);
        var hidden = eye !== null && i !== eye && !ended && hand.length > 0;
        seat.node.classList.toggle("hidden", hidden);
        if (hidden) seat.hand.replaceChildren(el("span", "card back", String(hand.length)));
        else seat.hand.replaceChildren.apply(seat.hand, hand.map(function (c) {
          return card(c, c === s.took && i === s.actor);
        }));
        // A hand face down (the bot's-eye view), or one the caller cannot total (the live page's backs), is counted.
        var note = !hand.length ? s.status[i] || "\u2013"
          : hidden || !total ? hand.length + (hand.length === 1 ? " card" : " cards") : "total " + total(hand);
        if (hand.length && s.points) note += " \u00b7 +" + s.points[i];
        if (hand.length && s.status[i]) note += " \u00b7 " + s.status[i];
        if (i === s.declarer) note += s.failed ? " \u00b7 \u2605 failed" : " \u00b7 \u2605 declared";
        if (i === s.turn) note += " \u00b7 to play";
        seat.note.textContent = note;
      });
      if (before) {
        // The throw goes from the seat to the floor; the card taken comes from the deck or the floor as it was.
        floorCards.querySelectorAll(".card").forEach(function (node) { from(node, before.seat); });
        var taken = seats[e.seat].hand.querySelector(".new");
        if (taken) from(taken, e.take === "deck" ? before.deck : before.floor);
      }
      drawChart(s.rounds);
    }

    // The running score after each round ended so far, a line a seat; the threshold dashed. Its numbers are the
    // "Scores per round" table's (a screen reader's), drawn only up to the step shown: a replay does not tell
    // the end before it comes.
    var drawn = -1;
    function drawChart(rounds) {
      if (rounds.length === drawn) return;
      drawn = rounds.length;
      chart.replaceChildren();
      if (!rounds.length) return;
      rounds = [names.map(function () { return 0; })].concat(rounds);  // from the start: one round is a line
      var width = 240, height = 72, top = Math.max(threshold || 0, 1);
      rounds.forEach(function (r) { r.forEach(function (v) { top = Math.max(top, v); }); });
      var x = function (i) { return 4 + i * (width - 8) / (rounds.length - 1); };
      var y = function (v) { return height - 4 - v * (height - 8) / top; };
      var picture = svg("svg", { viewBox: "0 0 " + width + " " + height, "class": "scorechart", focusable: "false" });
      if (threshold) {
        picture.appendChild(svg("line", { x1: 0, x2: width, y1: y(threshold), y2: y(threshold), "class": "limit" }));
      }
      names.forEach(function (name, seat) {
        var points = rounds.map(function (r, i) { return x(i).toFixed(1) + "," + y(r[seat]).toFixed(1); });
        var group = picture.appendChild(svg("g", { "class": "s" + (seat % 10) }));
        group.appendChild(svg("polyline", { points: points.join(" "), "class": "line" }));
        var end = points[points.length - 1].split(",");
        group.appendChild(svg("circle", { cx: end[0], cy: end[1], r: 2.5, "class": "dot" }));
      });
      chart.appendChild(el("span", "charttitle", "score after each round"));
      chart.appendChild(picture);
    }
    return { show: show, see: see };
  };
})();
