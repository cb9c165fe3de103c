// Turn-by-turn replay of one match, from its data file (matches/N.js, a script: a page opened from disk may load
// one but not fetch a file), which sets window.arenaMatch to the names and the engine events in the compact form
// of arena/site/replay.py (compact_events; a run of turns is only their seats, their cards are the move list's
// grid cells on the page). Every step is the table after one engine event. Its text is the
// narrator's (arena/game/narrate.py) line for that event: from the page's move list ([data-e] elements) for a forfeit
// and the match's start and end; a turn (a play, a declaration, a reshuffle), a deal and a round's end are worded
// here the way the narrator words it (the browser tests check that every line agrees), since a page of 10,000
// that carried a sentence per turn would be several times the size.
// Text from the log (bot names, fault details) is only ever set with textContent, never parsed as HTML:
// bots are untrusted. The step shown is in the address (#step=N, 1-based as the counter says) so that a moment
// can be shared; without one the replay opens at the first deal. What every player is told of an event (the floor,
// the deck's count, the scores, whose turn it is) is applied by cardtable.js's arenaTableEvent, which the match
// page loads first and the live page (watch.js) shares; the hands, the last moves and the fates are this file's.
(function () {
  "use strict";
  var root = document.querySelector("[data-replay]");
  var data = window.arenaMatch;
  if (!root || !data) return;
  // The replay's controls exist only where the script runs, so the script makes them (fixed markup, no text from
  // the match in it): a page without JavaScript is spared their bytes, a few kilobytes on each of 10,000 pages.
  // On a phone the buttons show only their symbols (the words stay, for screen readers): the whole bar is one line.
  // Play has a glyph of its own (▷, not Forward's ▶): on a phone, where the words are hidden, the bar read ◀ ▶ ▶.
  var PLAY = "\u25b7 <span class=\"w\">Play</span>", PAUSE = "❚❚ <span class=\"w\">Pause</span>";
  root.innerHTML = [
    "<h2>Replay</h2>",
    "<div class=\"replaybar\">",
    "<p class=\"counter\"><span data-counter>Step 1 / 1</span></p>",
    // What a screen reader says at each step: the counter and the move in words, in one polite live region (the
    // counter alone told a listener the step number and never the move).
    "<p class=\"sr\" data-announce aria-live=\"polite\" aria-atomic=\"true\"></p>",
    "<div class=\"controls\" role=\"group\" aria-label=\"Replay controls\">",
    "<button type=\"button\" data-go=\"first\" title=\"First step (Home)\">« <span class=\"w\">First</span></button>",
    "<button type=\"button\" data-go=\"prevround\" title=\"Back to the start or the end of a round (Page Up)\">◀◀ <span class=\"w\">Round</span></button>",
    "<button type=\"button\" data-go=\"prev\" title=\"Previous step (←)\">◀ <span class=\"w\">Back</span></button>",
    "<button type=\"button\" data-play aria-pressed=\"false\" title=\"Play or pause (Space)\">" + PLAY + "</button>",
    "<button type=\"button\" data-go=\"next\" title=\"Next step (→)\"><span class=\"w\">Forward</span> ▶</button>",
    "<button type=\"button\" data-go=\"nextround\" title=\"On to the end of this round, or the next deal (Page Down)\"><span class=\"w\">Round</span> ▶▶</button>",
    "<button type=\"button\" data-go=\"last\" title=\"Last step (End)\"><span class=\"w\">Last</span> »</button>",
    "<label class=\"speed\">Speed <select data-speed>",
    "<option value=\"1600\">0.5×</option><option value=\"800\" selected>1×</option><option value=\"400\">2×</option><option value=\"150\">5×</option>",
    "</select></label>",
    "</div>",
    "<input type=\"range\" class=\"slider\" data-slider min=\"0\" max=\"0\" value=\"0\" aria-label=\"Step\">",
    "</div>",
    "<p class=\"what\" data-what></p>",
    "<p class=\"think\" data-think></p>",
    "<div class=\"felt\">",
    // The card table (cardtable.js) is a picture; the table of hands, what a screen reader reads, is shown instead
    // at a press of this button.
    "<button type=\"button\" class=\"view\" data-view aria-pressed=\"false\">Table of hands</button>",
    "<p class=\"floorline\"><span class=\"label\">Floor</span> <span data-floor class=\"cards\"></span> <span class=\"label deck\" data-deck></span></p>",
    "<div class=\"scroll handsbox\" tabindex=\"0\" role=\"region\" aria-label=\"Hands\">",
    "<table class=\"hands\">",
    "<caption>Every hand at this step (spectators see all cards; each bot sees only its own)</caption>",
    "<colgroup><col class=\"c-seat\"><col class=\"c-bot\"><col class=\"c-hand\"><col class=\"c-total\"><col class=\"c-points\"><col class=\"c-score\"><col class=\"c-last\"></colgroup>",
    "<thead><tr><th scope=\"col\">Seat</th><th scope=\"col\">Bot</th><th scope=\"col\">Hand</th><th scope=\"col\" class=\"num\">Total</th><th scope=\"col\" class=\"num\">Points</th><th scope=\"col\" class=\"num\">Score</th><th scope=\"col\">Last move</th></tr></thead>",
    "<tbody data-hands></tbody>",
    "</table>",
    "</div>",
    "<p class=\"note handkey\"><span class=\"key actor\">highlighted row</span> just moved \u00b7 <b>\u25b6</b> before a seat: to move next \u00b7 <span class=\"card new\">card</span> the card just taken</p>",
    "<div class=\"final\" data-final hidden></div>",
    "</div>",
    // What the bots wrote on stderr during this step: in data.debug only on the organiser's own site (issue 43).
    "<section class=\"debug\" data-debug hidden aria-label=\"Debug output\"><h3>Debug output (stderr) at this step</h3><div data-debug-lines></div></section>",
    "<p class=\"note taps\">Tap the left half of the table to step back, the right half to step forward.</p>",
    "<p class=\"note keys\">Keys: ← and → step, Page Up and Page Down stop at each deal and each round's end, Home and End jump, Space plays. A link to this moment: the page's address (<code>#step=N</code>).</p>"
  ].join("\n");
  var names = data.names;
  var faults = data.faults || {};
  var said = {};
  document.querySelectorAll("[data-e]").forEach(function (node) { said[node.getAttribute("data-e")] = node.textContent; });
  var SUITS = { C: ["\u2663", "black"], D: ["\u2666", "red"], H: ["\u2665", "red"], S: ["\u2660", "black"] };
  var VALUES = { A: 1, T: 10, J: 10, Q: 10, K: 10 };

  function value(code) { return VALUES[code[0]] || parseInt(code[0], 10) || 0; }
  function total(hand) { return hand.reduce(function (sum, c) { return sum + value(c); }, 0); }
  function label(code) {
    var suit = SUITS[code[1]];
    return suit ? (code[0] === "T" ? "10" : code[0]) + suit[0] : code;
  }
  function copy(hands) { return hands.map(function (h) { return h.slice(); }); }
  function cardList(text) { return text ? text.match(/../g) : []; }
  function ints(text) { return text ? text.split(",").map(Number) : []; }
  function seatOf(text) { return text === "" ? null : Number(text); }

  // A deal's hands may be its grid's first line (arena/site/replay.py, dealt_line and read_deal): "=" and the
  // digits of the seats with cards, whose parts of the line (" · " between them) end with their cards; the
  // grid follows its round's summary, whose data-e is the deal's event. A deal's scores left out are the last
  // round end's (zeros before any). A round end's hands "=" are those the replay holds by then.
  var deals = {};
  document.querySelectorAll("[data-moves] summary[data-e] + pre").forEach(function (pre) {
    deals[pre.previousElementSibling.getAttribute("data-e")] = pre.textContent.split("\n")[0];
  });
  function dealt(index, seats) {
    var parts = (deals[index] || "").slice("dealt: ".length).split(" \u00b7 "), hands = names.map(function () { return []; });
    seats.split("").forEach(function (seat, i) {
      var found = (parts[i] || "").match(/(?: [A2-9TJQK][CDHS])+$/);
      hands[Number(seat)] = found ? found[0].slice(1).split(" ") : [];
    });
    return hands;
  }
  var lastScores = names.map(function () { return 0; });

  // One token per event (see compact_events): back into the engine's events (index: the event's).
  function decode(token, index) {
    var kind = token[0], f = token.slice(1).split(":");
    switch (kind) {
      case "p":
        return { type: "play", seat: Number(f[0]), discard: cardList(f[1]), take: f[2][0] === "d" ? "deck" : f[2].slice(1),
                 drew: f[2][0] === "d" ? (f[2].slice(1) || null) : undefined };
      case "c": return { type: "declare", seat: Number(f[0]) };
      case "r": return { type: "reshuffle", deck_size: Number(f[0]) };
      case "f": return { type: "forfeit", seat: Number(f[0]) };
      case "s": return { type: "round_start", round: Number(f[0]), starter: Number(f[1]),
                         hands: f[2][0] === "=" ? dealt(index, f[2].slice(1)) : f[2].split("|").map(cardList),
                         floor: cardList(f[3]), scores: f[4] ? ints(f[4]) : lastScores.slice() };
      case "e": lastScores = ints(f[5]);
        return { type: "round_end", round: Number(f[0]),
                 reason: f[1] === "d" ? "declared" : f[1] === "f" ? "failed_declaration" : "turn_cap",
                 declarer: seatOf(f[2]), hands: f[3] === "=" ? null : f[3].split("|").map(cardList), points: ints(f[4]),
                 scores: lastScores.slice(), eliminated: ints(f[6]) };
      case "x": return { type: "match_end", places: ints(f[0]), scores: ints(f[1]) };
      case "m": return { type: "match_start" };
      default: return { type: "?" };
    }
  }
  // A token of seats (t0120) is a run of turns whose cards are the page's own: the next cells of the move list's
  // grids (arena/site/replay.py, turn_grid), read in order past each grid's deal and names lines, so that the
  // turns are on the page once. A cell is a declaration (★) or the cards thrown, then + and the card drawn (? when
  // not known) or ^ and the card taken from the floor.
  var cells = [];
  document.querySelectorAll("[data-moves] pre").forEach(function (pre) {
    pre.textContent.split("\n").slice(2).forEach(function (line) {
      cells.push.apply(cells, line.match(/\u2605|(?:[A2-9TJQK][CDHS])+ [+^](?:[A2-9TJQK][CDHS]|\?)/g) || []);
    });
  });
  function turn(seat) {
    var cell = cells.shift() || "";
    if (cell === "\u2605") return { type: "declare", seat: seat };
    var parts = cell.split(" "), took = parts[1] || "+?", card = took.slice(1) === "?" ? null : took.slice(1);
    return { type: "play", seat: seat, discard: cardList(parts[0]), take: took[0] === "+" ? "deck" : card,
             drew: took[0] === "+" ? card : undefined };
  }
  var events = [];
  (data.events ? data.events.split(" ") : []).forEach(function (token) {
    if (token[0] !== "t") { events.push(decode(token, events.length)); return; }
    for (var i = 1; i < token.length; i++) events.push(turn(Number(token[i])));
  });
  // Each move's think time and the mover's bank after it (arena/match/thinktime.py, compact): a number a move event, its
  // last digit in base 36 (0-9a-z), the digits before it in base 26 (A-Z); after it, ~ and the bank, where that is
  // not what the bank before (the match's, at first) less the time beyond the move's own (data.move) makes it.
  var thinks = [], code = data.think || "", at = 0;
  function number() {
    var n = 0, c;
    while (at < code.length) {
      c = code.charCodeAt(at++);
      if (c >= 65 && c <= 90) n = n * 26 + c - 65;
      else return n * 36 + (c <= 57 ? c - 48 : c - 87);
    }
    return n;
  }
  while (at < code.length) {
    var time = number();
    thinks.push([time, code[at] === "~" ? (at++, number()) : null]);
  }
  var banks = names.map(function () { return typeof data.bank === "number" ? data.bank : null; });
  var thought = 0;
  events.forEach(function (e) {
    // A move that never came (timeout.move): the seat waited its whole budget, the move's time and what was left of
    // its bank (the referee's budget), which then ran out.
    if (e.type === "forfeit" && (faults[String(e.seat)] || [])[0] === "timeout.move" && typeof data.move === "number" &&
        banks[e.seat] !== null) {
      e.waited = data.move + banks[e.seat];
      e.bankBefore = banks[e.seat];
      banks[e.seat] = 0;
      return;
    }
    if ((e.type !== "play" && e.type !== "declare") || thought >= thinks.length) return;
    var t = thinks[thought++], before = banks[e.seat];
    e.think = t[0];
    e.bank = banks[e.seat] = t[1] !== null ? t[1]
      : before !== null && typeof data.move === "number" ? Math.max(0, before - Math.max(0, t[0] - data.move)) : null;
  });
  function ms(n) { return n.toLocaleString("en") + " ms"; }

  // A turn's sentence, as arena/game/narrate.py words it (after the event is applied to the hands).
  function who(seat) { return names[seat] + " (seat " + seat + ")"; }
  function cardsText(codes) { return codes.map(label).join(" "); }
  function turnText(e) {
    if (e.type === "play") {
      var took = e.take === "deck" ? (e.drew ? "from the deck (" + label(e.drew) + ")" : "from the deck")
        : label(e.take) + " from the floor";
      return who(e.seat) + " throws " + cardsText(e.discard) + " and takes " + took + "; hand total now " +
        total(state.hands[e.seat]) + ".";
    }
    if (e.type === "declare") return who(e.seat) + " declares with a total of " + total(state.hands[e.seat]) + ".";
    if (e.type === "reshuffle") return "The deck is empty: " + e.deck_size + " dead cards are shuffled into a new deck.";
    return e.type;
  }
  // A deal's and a round end's sentence, as arena/game/narrate.py words them (the page's move list has a shorter line
  // of its own for them, arena/site/replay.py fold_line): the sums of round_arithmetic, from the event's hands.
  function roundText(e) {
    if (e.type === "round_start") {
      return "Round " + e.round + " is dealt. " + who(e.starter) + " starts; the floor shows " + cardsText(e.floor) + ".";
    }
    var totals = e.hands.map(total), d = e.declarer;
    var live = names.map(function (n, seat) { return seat; }).filter(function (seat) { return e.hands[seat].length; });
    var how = d === null ? "no declaration (turn cap)" : e.reason === "declared" ? who(d) + " declared and was lowest"
      : who(d) + " declared but was not lowest (failed)";
    var sums = live.map(function (seat) {
      var t = totals[seat], gained = e.points[seat], text;
      if (d === null) text = t + " = +" + gained;
      else if (e.reason === "declared") text = seat === d ? t + ", declarer: +" + gained : t + " - " + totals[d] + " = +" + gained;
      else if (seat === d) {
        var others = live.filter(function (other) { return other !== seat; }).map(function (other) { return totals[other]; });
        var lowest = others.length ? Math.min.apply(null, others) : 0;
        text = "failed declaration: " + (gained - (t - lowest)) + " + (" + t + " - " + lowest + ") = +" + gained;
      } else text = t + " \u2192 +" + gained;
      return names[seat] + " " + text;
    });
    var out = e.eliminated.map(function (seat) { return names[seat]; }).join(", ");
    return "Round " + e.round + " ends: " + how + ". Points: " + sums.join(", ") + "." + (out ? " Out: " + out + "." : "");
  }

  // Build every step up front: stepping back is then just showing an earlier one.
  var steps = [];
  var state = { round: 0, hands: names.map(function () { return []; }), floor: [], deck: null,
                scores: names.map(function () { return 0; }), points: null, status: names.map(function () { return ""; }),
                actor: null, turn: null, took: null, last: names.map(function () { return null; }),
                out: names.map(function () { return null; }), fate: names.map(function () { return null; }),
                rounds: [], gone: names.map(function () { return false; }), putAway: null };
  var roundStarts = [];
  var roundEnds = [];

  var tableEvent = window.arenaTableEvent;
  function nextSeat(seat) {
    for (var step = 1; step <= names.length; step++) {
      var candidate = (seat + step) % names.length;
      if (state.hands[candidate].length && !state.gone[candidate]) return candidate;
    }
    return null;
  }
  function snapshot(index, e) {
    var text = e.type === "round_start" || e.type === "round_end" ? roundText(e)
      : said[index] !== undefined ? said[index] : turnText(e);
    steps.push({ round: state.round, hands: copy(state.hands), floor: state.floor.slice(), deck: state.deck,
                 scores: state.scores.slice(), points: state.points && state.points.slice(),
                 status: state.status.slice(), actor: state.actor, turn: state.turn, took: state.took, text: text,
                 last: state.last.slice(), declarer: state.declarer, failed: state.failed, final: state.final || null,
                 rounds: state.rounds.slice() });
  }

  events.forEach(function (e, index) {
    if (state.putAway !== null) {
      state.hands[state.putAway] = [];
      state.putAway = null;
    }
    // The hands first (nextSeat reads them), then what every player sees (cardtable.js), then the rest.
    switch (e.type) {
      case "round_start":
        roundStarts.push(index);
        state.last = names.map(function () { return null; });
        state.hands = copy(e.hands);
        break;
      case "play":
        var hand = state.hands[e.seat];
        e.discard.forEach(function (c) { var i = hand.indexOf(c); if (i >= 0) hand.splice(i, 1); });
        var taken = e.take === "deck" ? e.drew : e.take;
        if (taken) hand.push(taken);
        break;
      case "forfeit":
        // The hand it held stays in view at this step, marked forfeited: from the next step on its cards are out
        // of play (the engine puts them with the dead cards).
        state.putAway = e.seat;
        state.gone[e.seat] = true;
        break;
      case "round_end":
        roundEnds.push(index);
        // "=": the hands as the deal and the plays since left them (arena/site/replay.py, _Tokens).
        if (!e.hands) e.hands = copy(state.hands);
        state.hands = copy(e.hands);
        break;
    }
    tableEvent(state, e, nextSeat);
    switch (e.type) {
      case "round_start":
        state.deck = 52 - 1 - e.hands.reduce(function (n, h) { return n + h.length; }, 0);
        break;
      case "play":
        state.took = taken || null;
        state.last[e.seat] = { threw: e.discard.slice(), took: taken || null, from: e.take === "deck" ? "deck" : "floor" };
        break;
      case "declare":
        state.last[e.seat] = { declared: true };
        break;
      case "forfeit":
        var fault = faults[String(e.seat)];
        state.fate[e.seat] = (state.round ? "forfeited in round " + state.round : "forfeited before the first deal") +
          (fault ? " (" + fault[0] + ")" : "");
        state.last[e.seat] = { forfeited: true };
        break;
      case "round_end":
        e.eliminated.forEach(function (seat) {
          state.out[seat] = e.round;
          state.fate[seat] = "out in round " + e.round;
        });
        break;
      case "match_end":
        var order = names.map(function (n, seat) { return seat; })
          .sort(function (a, b) { return e.places[a] - e.places[b] || a - b; });
        order.forEach(function (seat) {
          state.status[seat] = "place " + e.places[seat] + (state.fate[seat] ? " · " + state.fate[seat]
            : e.places[seat] === 1 ? " · winner" : "");
        });
        // The final table: each seat's place, score and how its match ended (the winner first, marked).
        var inPlay = order.filter(function (seat) { return state.fate[seat] === null; }).length;
        state.final = order.map(function (seat) {
          var fate = state.fate[seat];
          if (fate === null) {
            fate = e.places[seat] === 1 ? (inPlay === 1 ? "winner: the last in play" : "winner: the lowest score")
              : "in play to the end";
          }
          return { seat: seat, place: e.places[seat], score: e.scores[seat], fate: fate };
        });
        break;
    }
    snapshot(index, e);
  });
  if (!steps.length) return;

  var counter = root.querySelector("[data-counter]");
  var slider = root.querySelector("[data-slider]");
  var what = root.querySelector("[data-what]");
  var announce = root.querySelector("[data-announce]");
  var thinkLine = root.querySelector("[data-think]");
  var debugBox = root.querySelector("[data-debug]");
  var debugLines = root.querySelector("[data-debug-lines]");
  var debugAt = {};  // step -> [[seat, text], ...]
  (data.debug || []).forEach(function (d) { (debugAt[d[1]] = debugAt[d[1]] || []).push([d[0], d[2]]); });
  var floor = root.querySelector("[data-floor]");
  var deck = root.querySelector("[data-deck]");
  var body = root.querySelector("[data-hands]");
  var playButton = root.querySelector("[data-play]");
  var speed = root.querySelector("[data-speed]");
  var buttons = {};
  root.querySelectorAll("[data-go]").forEach(function (b) { buttons[b.getAttribute("data-go")] = b; });
  var current = 0;
  var timer = null;
  var last = steps.length - 1;
  var felt = root.querySelector(".felt");
  var handsBox = root.querySelector(".handsbox");
  var viewButton = root.querySelector("[data-view]");
  var table = null;
  var shownOnce = false;  // the first step shown is not a move made: nothing to animate

  function cardNode(code, highlight) {
    var span = document.createElement("span");
    var suit = SUITS[code[1]];
    span.className = "card" + (suit ? " " + suit[1] : "") + (highlight ? " new" : "");
    span.textContent = label(code);
    return span;
  }
  function cell(row, text, className) {
    var td = document.createElement("td");
    if (className) td.className = className;
    td.textContent = text;
    row.appendChild(td);
    return td;
  }
  // The step's text and its think time have boxes of a fixed height (the table below must not jump), which scroll
  // when a long line overflows them: then, and only then, they are tab stops, so the keyboard can scroll them.
  function reachable(box) {
    var style = getComputedStyle(box);
    if ((box.scrollHeight > box.clientHeight + 1 && /auto|scroll/.test(style.overflowY)) ||
        (box.scrollWidth > box.clientWidth + 1 && /auto|scroll/.test(style.overflowX))) box.tabIndex = 0;
    else box.removeAttribute("tabindex");
  }
  // A line per stderr line, the seat's name first; the box stays (empty) on a step without any while the match
  // has some, so that stepping does not make the page below jump.
  function showDebug(lines) {
    if (!data.debug || !data.debug.length) return;
    debugBox.hidden = false;
    debugLines.replaceChildren.apply(debugLines, lines.map(function (l) {
      var pre = document.createElement("pre");
      pre.className = "said";
      var who = document.createElement("b");
      who.textContent = names[l[0]] + ": ";
      pre.appendChild(who);
      pre.appendChild(document.createTextNode(l[1]));
      return pre;
    }));
    if (!lines.length) debugLines.textContent = "\u2013";
  }
  function lastMove(td, move) {
    if (!move) { td.textContent = "–"; return; }
    if (move.declared) { td.textContent = "declared"; return; }
    if (move.forfeited) { td.textContent = "forfeited"; td.className += " forfeit"; return; }
    td.appendChild(document.createTextNode("threw "));
    move.threw.forEach(function (c) { td.appendChild(cardNode(c, false)); });
    td.appendChild(document.createTextNode(" took "));
    if (move.took) td.appendChild(cardNode(move.took, false));
    if (move.from === "deck") td.appendChild(document.createTextNode(move.took ? " (deck)" : "deck"));
  }

  // Where "previous round" and "next round" go: a round's deal and its end, in order, so that stepping by round
  // stops at the end of a round (its points, and why it ended) before the next deal; else the first or last step.
  var marks = roundStarts.concat(roundEnds).sort(function (a, b) { return a - b; });
  function prevRound(index) {
    for (var i = marks.length - 1; i >= 0; i--) if (marks[i] < index) return marks[i];
    return 0;
  }
  function nextRound(index) {
    for (var i = 0; i < marks.length; i++) if (marks[i] > index) return marks[i];
    return last;
  }

  function show(index) {
    var was = table && shownOnce ? current : null;
    shownOnce = true;
    current = Math.max(0, Math.min(last, index));
    var s = steps[current];
    counter.textContent = "Step " + (current + 1) + " / " + steps.length + (s.round ? " · round " + s.round : "");
    var spoken = "Step " + (current + 1) + " of " + steps.length + (s.round ? ", round " + s.round : "");
    slider.value = String(current);
    slider.setAttribute("aria-valuetext", spoken);
    what.textContent = s.text;
    announce.textContent = spoken + ": " + s.text;
    var moved = events[current];
    // A line on every step (a no-break space where no move was made), so that the table below never moves.
    thinkLine.textContent = moved.waited !== undefined ? names[moved.seat] + " waited " + ms(moved.waited) + " (" +
        ms(data.move) + " a move and " + ms(moved.bankBefore) + " left in its bank) without a move; its time bank: 0 ms left."
      : moved.think === undefined ? "\u00a0" : names[moved.seat] + " thought " + ms(moved.think) +
      (typeof moved.bank === "number" ? "; its time bank: " + ms(moved.bank) + " left" : "") + ".";
    reachable(what);
    reachable(thinkLine);
    showDebug(debugAt[current] || []);
    floor.replaceChildren.apply(floor, s.floor.map(function (c) { return cardNode(c, false); }));
    if (!s.floor.length) floor.textContent = "–";
    deck.textContent = s.deck === null ? "" : "deck " + s.deck;
    var rows = names.map(function (name, seat) {
      var tr = document.createElement("tr");
      if (seat === s.actor) tr.className = "actor";
      if (s.final && s.final.some(function (r) { return r.seat === seat && r.place === 1; })) tr.className += " winner";
      if (seat === s.declarer) tr.className += " declarer" + (s.failed ? " failed" : "");
      var th = document.createElement("th");
      th.scope = "row";
      th.className = "seat";
      th.textContent = (seat === s.turn ? "▶ " : "") + seat;
      tr.appendChild(th);
      var bot = cell(tr, name, "bot");
      if (seat === s.declarer) {
        var star = document.createElement("span");
        star.className = "star";
        star.title = s.failed ? "failed declaration" : "declared";
        star.textContent = " ★";
        bot.appendChild(star);
      }
      var hand = cell(tr, "", "cards");
      s.hands[seat].forEach(function (c) { hand.appendChild(cardNode(c, c === s.took && seat === s.actor)); });
      if (!s.hands[seat].length) hand.textContent = s.status[seat] || "–";
      else if (s.status[seat]) {
        var status = document.createElement("span");
        status.className = "status";
        status.textContent = " " + s.status[seat];
        hand.appendChild(status);
      }
      cell(tr, s.hands[seat].length ? String(total(s.hands[seat])) : "–", "num total");
      cell(tr, s.points ? (s.hands[seat].length ? "+" + s.points[seat] : "–") : "", "num points");
      cell(tr, String(s.scores[seat]), "num strong score");
      lastMove(cell(tr, "", "last"), s.last[seat]);
      return tr;
    });
    body.replaceChildren.apply(body, rows);
    if (table) table.show(s, events[current], was !== null && current === was + 1);
    showFinal(s.final);
    buttons.first.disabled = buttons.prev.disabled = buttons.prevround.disabled = current === 0;
    buttons.next.disabled = buttons.last.disabled = buttons.nextround.disabled = current === last;
    if (current === last) pause();
    var hash = "#step=" + (current + 1);
    if (location.hash !== hash) {
      try { history.replaceState(null, "", hash); } catch (error) { /* an address that cannot change: no link */ }
    }
  }

  var finalBox = root.querySelector("[data-final]");
  function showFinal(rows) {
    finalBox.hidden = !rows;
    if (!rows) return;
    var table = document.createElement("table");
    table.className = "finaltable";
    var caption = document.createElement("caption");
    caption.textContent = "Final result: place, score and how each seat's match ended";
    table.appendChild(caption);
    var tbody = document.createElement("tbody");
    rows.forEach(function (r) {
      var tr = document.createElement("tr");
      if (r.place === 1) tr.className = "winner";
      var th = document.createElement("th");
      th.scope = "row";
      th.className = "num";
      th.textContent = r.place + ".";
      tr.appendChild(th);
      cell(tr, names[r.seat] + " (seat " + r.seat + ")", "bot");
      cell(tr, String(r.score), "num strong");
      cell(tr, r.fate, "fate" + (r.fate.indexOf("forfeited") === 0 ? " forfeit" : ""));
      tbody.appendChild(tr);
    });
    table.appendChild(tbody);
    finalBox.replaceChildren(table);
  }

  function pause() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    playButton.innerHTML = PLAY;
    playButton.setAttribute("aria-pressed", "false");
  }
  function play() {
    if (current === last) show(0);
    pause();
    timer = setInterval(function () { show(current + 1); }, parseInt(speed.value, 10));
    playButton.innerHTML = PAUSE;
    playButton.setAttribute("aria-pressed", "true");
  }
  function toggle() { if (timer === null) play(); else pause(); }

  // The step an address asks for (0-based), or null when it asks for none. An address that asks for a step the
  // replay does not have is taken as near as it goes: past the end the last, and anything that is not a step
  // number (#step=abc, #step=) the first, as #step=0 is; never the step a page opens at without one.
  function stepFromHash() {
    if (location.hash.indexOf("#step=") !== 0) return null;
    var found = /^#step=(\d+)$/.exec(location.hash);
    return found ? parseInt(found[1], 10) - 1 : 0;
  }

  root.querySelectorAll("[data-go]").forEach(function (button) {
    button.addEventListener("click", function () {
      var go = button.getAttribute("data-go");
      show(go === "first" ? 0 : go === "last" ? last : go === "prevround" ? prevRound(current) :
           go === "nextround" ? nextRound(current) : current + (go === "next" ? 1 : -1));
    });
  });
  playButton.addEventListener("click", toggle);
  speed.addEventListener("change", function () { if (timer !== null) play(); });
  slider.max = String(last);
  slider.addEventListener("input", function () { show(parseInt(slider.value, 10)); });
  document.addEventListener("keydown", function (event) {
    // The slider keeps its own arrows, Home and End (the same steps), but not Page Up and Page Down: a range input
    // takes Page Up as a bigger value, forward, where the rest of the page goes back a round.
    if (event.altKey || event.ctrlKey || event.metaKey ||
        (event.target === slider && event.key !== "PageUp" && event.key !== "PageDown")) return;
    var tag = event.target && event.target.tagName;
    if ((tag === "INPUT" && event.target !== slider) || tag === "TEXTAREA" || tag === "SELECT") return;
    if (event.key === " " && tag !== "BUTTON" && tag !== "SUMMARY" && tag !== "A") {
      event.preventDefault();
      toggle();
      return;
    }
    var moves = { ArrowRight: current + 1, ArrowLeft: current - 1, Home: 0, End: last,
                  PageUp: prevRound(current), PageDown: nextRound(current) };
    if (event.key in moves) {
      event.preventDefault();
      show(moves[event.key]);
    }
  });
  // Tap zones: a tap on the left half of the table steps back, on the right half forward, so that a phone's thumb
  // steps the replay where it looks rather than reaching for the bar (a drag that selected text is not a tap).
  // A mouse on a wide screen has the buttons at hand (and clicks to select text): taps are for touch and phones.
  var narrow = window.matchMedia("(max-width: 40rem)");
  root.querySelector(".felt").addEventListener("click", function (event) {
    if (event.target.closest("a, button, input, select, summary") || window.getSelection().toString()) return;
    if (event.pointerType === "mouse" && !narrow.matches) return;
    var box = event.currentTarget.getBoundingClientRect();
    show(current + (event.clientX < box.left + box.width / 2 ? -1 : 1));
  });
  // A link to a step (a round of the score table, or one pasted into the address bar) moves the replay there.
  window.addEventListener("hashchange", function () {
    var step = stepFromHash();
    if (step === null) return;
    pause();
    show(step);
    root.scrollIntoView({ block: "start" });
  });
  // "Scores per round", made here from the data file's round ends rather than carried as markup by every page
  // (about a quarter of a match page's bytes): without JavaScript the move list says each round's end and scores.
  var rounds = document.querySelector("[data-rounds]");
  if (rounds) {
    var wrap = document.createElement("div");
    wrap.className = "scroll";
    wrap.style.setProperty("--seats", String(names.length));  // the phone layout's columns (style.css)
    wrap.tabIndex = 0;
    wrap.setAttribute("role", "region");
    wrap.setAttribute("aria-label", "Scores per round");
    wrap.innerHTML = "<table class=\"rounds\"><caption>Points each round (+) and the running score; lower is " +
      "better. \u2605 marks the declarer, in red when the declaration failed. A round's number opens the replay at " +
      "its end.</caption><thead><tr><th scope=\"col\" class=\"num\">Round</th><th scope=\"col\">Ended</th></tr>" +
      "</thead><tbody></tbody></table>";
    var head = wrap.querySelector("thead tr"), tbody = wrap.querySelector("tbody");
    names.forEach(function (name) {
      var th = document.createElement("th");
      th.scope = "col";
      th.className = "num";
      th.textContent = name;
      head.appendChild(th);
    });
    // The forfeits of each round: said on its row, or on a row of their own for a round that never ended (the
    // forfeits left one seat in play, which ends the match at once: rule 8.6).
    var forfeitsIn = {}, dealt = {}, round = 0, closed = {};
    events.forEach(function (e, index) {
      if (e.type === "round_start") { round = e.round; dealt[round] = e; }
      if (e.type === "round_end") closed[e.round] = true;
      if (e.type === "forfeit") (forfeitsIn[round] = forfeitsIn[round] || []).push({ seat: e.seat, step: index + 1 });
    });
    function leaving(list) {
      return list.map(function (f) {
        var fault = faults[String(f.seat)];
        return names[f.seat] + " forfeited" + (fault ? " (" + fault[0] + ")" : "");
      }).join(", ");
    }
    events.forEach(function (e, index) {
      if (e.type !== "round_end") return;
      var tr = document.createElement("tr");
      tr.setAttribute("data-step", String(index + 1));
      if (e.reason === "failed_declaration") tr.className = "failed";
      var th = document.createElement("th");
      th.scope = "row";
      var link = document.createElement("a");
      link.href = "#step=" + (index + 1);
      link.textContent = String(e.round);
      th.appendChild(link);
      tr.appendChild(th);
      var ended = cell(tr, e.reason.replace(/_/g, " ") + (e.declarer === null ? "" : " by " + names[e.declarer]));
      if (e.eliminated.length) {
        ended.appendChild(document.createTextNode("; "));
        var out = document.createElement("span");
        out.className = "outtag";
        out.textContent = "out: " + e.eliminated.map(function (seat) { return names[seat]; }).join(", ");
        ended.appendChild(out);
      }
      if (forfeitsIn[e.round]) {
        var left = document.createElement("span");
        left.className = "forfeit";
        left.textContent = "; " + leaving(forfeitsIn[e.round]);
        ended.appendChild(left);
      }
      names.forEach(function (name, seat) {
        if (!(e.hands[seat] || []).length) { cell(tr, "\u2013", "out"); return; }
        var td = cell(tr, "", seat === e.declarer ? "declarer" : "");
        if (seat === e.declarer) {
          var star = document.createElement("span");
          star.className = "star";
          star.textContent = "\u2605";
          td.appendChild(star);
          td.appendChild(document.createTextNode(" "));
        }
        var points = document.createElement("b");
        if (e.points[seat] === 0) points.className = "zero";
        points.textContent = "+" + e.points[seat];
        td.appendChild(points);
        td.appendChild(document.createTextNode(" "));
        var score = document.createElement("i");
        score.textContent = String(e.scores[seat]);
        td.appendChild(score);
      });
      tbody.appendChild(tr);
    });
    Object.keys(forfeitsIn).forEach(function (key) {
      var r = Number(key), list = forfeitsIn[key];
      if (closed[r] || !dealt[r]) return;
      var tr = document.createElement("tr");
      var step = list[list.length - 1].step;
      tr.setAttribute("data-step", String(step));
      tr.className = "forfeitrow";
      var th = document.createElement("th");
      th.scope = "row";
      var link = document.createElement("a");
      link.href = "#step=" + step;
      link.textContent = String(r);
      th.appendChild(link);
      tr.appendChild(th);
      cell(tr, "never ended: " + leaving(list), "forfeit");
      var gone = {};
      events.slice(0, step).forEach(function (e) { if (e.type === "forfeit") gone[e.seat] = true; });
      names.forEach(function (name, seat) {
        if (gone[seat] || !(dealt[r].hands[seat] || []).length) { cell(tr, "\u2013", "out"); return; }
        var td = cell(tr, "", "");
        var score = document.createElement("i");
        score.textContent = String(dealt[r].scores[seat]);
        td.appendChild(score);
      });
      tbody.appendChild(tr);
    });
    if (tbody.children.length) {
      rounds.appendChild(wrap);
      rounds.hidden = false;
    }
  }
  // A whole row of "Scores per round" is a link to its round's end, not only its number.
  document.querySelectorAll("table.rounds tr[data-step]").forEach(function (row) {
    row.classList.add("rowlink");
    row.addEventListener("click", function (event) {
      if (event.target.closest("a") || window.getSelection().toString()) return;
      location.hash = "#step=" + row.getAttribute("data-step");
    });
  });
  // The card table, when its script loaded; the table of hands is then for screen readers (and at the view
  // button's press, for everyone), out of the tab order while it is not on the screen.
  if (window.arenaCardTable) {
    felt.classList.add("withtable");
    var chosen = function (asTable) {
      felt.classList.toggle("astable", asTable);
      viewButton.setAttribute("aria-pressed", String(asTable));
      if (asTable) handsBox.tabIndex = 0; else handsBox.removeAttribute("tabindex");
    };
    viewButton.addEventListener("click", function () { chosen(!felt.classList.contains("astable")); });
    chosen(false);
    table = window.arenaCardTable(felt, names, cardNode, total, Number(root.getAttribute("data-threshold")) || null);
    // Whose eyes the table shows: everyone's hand (a spectator), or one seat's, the others face down.
    var eye = document.createElement("label");
    eye.className = "eye";
    eye.appendChild(document.createTextNode("Hands seen by "));
    var eyes = eye.appendChild(document.createElement("select"));
    eyes.setAttribute("data-eye", "");
    [["", "a spectator: all"]].concat(names.map(function (name, seat) {
      return [String(seat), "seat " + seat + ": " + name];
    })).forEach(function (option) {
      eyes.appendChild(new Option(option[1], option[0]));
    });
    eyes.addEventListener("change", function () { table.see(eyes.value === "" ? null : Number(eyes.value)); });
    felt.insertBefore(eye, felt.firstChild);
  } else viewButton.hidden = true;
  root.hidden = false;
  var asked = stepFromHash();
  show(asked !== null ? asked : roundStarts.length ? roundStarts[0] : 0);
  if (asked !== null) root.scrollIntoView({ block: "start" });
})();
