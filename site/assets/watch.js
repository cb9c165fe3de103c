// A league match followed while it is played (the server's /live/N page, arena/server/watch.py): asks for the
// match's new public events every data-poll ms (GET /api/live/N?from=K), draws them on the replay's card table
// (cardtable.js) and lists them in words, then, when the match is over, says so and links to its replay.
// The feed holds what every player at the table was told (arena/match/spectator.py): no hand and no card drawn from
// the deck. So the hands here are card backs, counted as the players count them (five dealt to each seat in play,
// one fewer a card thrown and one more a card taken), and the deck's count follows the same way.
(function () {
  "use strict";
  var root = document.querySelector("[data-watch]");
  if (!root) return;
  var feed = root.getAttribute("data-feed");
  var replay = root.getAttribute("data-replay");
  var every = Math.max(200, parseInt(root.getAttribute("data-poll"), 10) || 500);
  var status = root.querySelector("[data-watch-status]");
  var moves = root.querySelector("[data-watch-moves]");
  var holder = root.querySelector("[data-watch-table]");
  var HAND = 5;  // the engine deals five cards to each seat in play (arena/game/engine.py)
  var DECK = 52;
  var SUITS = { C: ["\u2663", "black"], D: ["\u2666", "red"], H: ["\u2665", "red"], S: ["\u2660", "black"] };
  var BACK = "?";  // a card the spectator may not see

  function cardNode(code, highlight) {
    var span = document.createElement("span");
    if (code === BACK) {
      span.className = "card back";
      return span;
    }
    var suit = SUITS[code[1]];
    span.className = "card" + (suit ? " " + suit[1] : "") + (highlight ? " new" : "");
    span.textContent = suit ? (code[0] === "T" ? "10" : code[0]) + suit[0] : code;
    return span;
  }
  function backs(n) { var hand = []; for (var i = 0; i < n; i++) hand.push(BACK); return hand; }

  var names = null, table = null, next = 0, state = null, shown = 0;

  function start(found) {
    names = found;
    state = { round: 0, hands: names.map(function () { return []; }), floor: [], deck: null,
              scores: names.map(function () { return 0; }), points: null, status: names.map(function () { return ""; }),
              actor: null, turn: null, took: null, declarer: null, failed: false, rounds: [],
              out: names.map(function () { return false; }), putAway: null };
    if (window.arenaCardTable) table = window.arenaCardTable(holder, names, cardNode, null, null);
  }
  function nextSeat(seat) {
    for (var step = 1; step <= names.length; step++) {
      var candidate = (seat + step) % names.length;
      if (state.hands[candidate].length && !state.out[candidate]) return candidate;
    }
    return null;
  }
  // One public event applied to the table as a spectator sees it: the hands (card backs) here, the rest as the
  // replay does it (cardtable.js).
  function apply(e) {
    if (state.putAway !== null) {
      state.hands[state.putAway] = [];
      state.putAway = null;
    }
    switch (e.type) {
      case "round_start":
        state.hands = names.map(function (n, seat) { return state.out[seat] ? [] : backs(HAND); });
        break;
      case "play":
        state.hands[e.seat] = backs(Math.max(0, state.hands[e.seat].length - e.discard.length + 1));
        break;
      case "forfeit":
        // As in the replay: its hand (face down) stays in view at this step, and is put away at the next.
        state.putAway = e.seat;
        state.out[e.seat] = true;
        break;
      case "round_end":
        e.eliminated.forEach(function (seat) { state.out[seat] = true; });
        break;
      case "match_end":
        state.hands = names.map(function () { return []; });
        break;
    }
    window.arenaTableEvent(state, e, nextSeat);
    if (e.type === "round_start") {
      var dealt = state.hands.filter(function (hand) { return hand.length; }).length;
      state.deck = DECK - 1 - dealt * HAND;
    } else if (e.type === "match_end") {
      names.forEach(function (n, seat) {
        state.status[seat] = "place " + e.places[seat] + (state.status[seat] ? " \u00b7 " + state.status[seat] : "");
      });
    }
  }
  function said(text) {
    var item = document.createElement("li");
    item.textContent = text;
    moves.insertBefore(item, moves.firstChild);
  }

  function over(found) {
    // The match is over: the status turns into the way to its replay.
    var link = document.createElement("a");
    link.href = replay;
    link.setAttribute("data-watch-replay", "");
    link.textContent = found ? "The match is over: watch its replay" : "This match is not in play: its replay";
    status.replaceChildren(link);
    root.setAttribute("data-watch-over", found ? "ended" : "absent");
  }

  function poll() {
    var request = new XMLHttpRequest();
    request.open("GET", feed + "?from=" + next);
    request.setRequestHeader("Accept", "application/json");
    request.onload = function () {
      if (request.status === 404) {
        // Never seen in play (not begun, or ended long ago): say so, and look again a little later.
        if (names === null) {
          over(false);
          window.setTimeout(poll, every * 4);
        } else over(true);
        return;
      }
      var body;
      try { body = JSON.parse(request.responseText); } catch (error) { body = null; }
      if (request.status !== 200 || !body) { retry(); return; }
      if (names === null) start(body.names);
      root.removeAttribute("data-watch-over");
      body.events.forEach(function (e, i) {
        apply(e);
        said(body.said[i]);
      });
      next = body.next;
      if (table && body.events.length) {
        var last = body.events[body.events.length - 1];
        table.show(state, last, body.events.length === 1 && shown > 0);
        shown += body.events.length;
      }
      if (body.over) { over(true); return; }
      status.textContent = state.round ? "In play: round " + state.round + ", " + next + " events so far."
        : "In play: the match has begun.";
      window.setTimeout(poll, every);
    };
    request.onerror = retry;
    request.send();
  }
  function retry() {
    status.textContent = "The server did not answer: trying again.";
    window.setTimeout(poll, every * 4);
  }
  poll();
})();
