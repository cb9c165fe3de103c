// arena play --web: polls the seat's state, shows the turn in front of the person, posts their choice.
// The server checks every choice; this page only offers the legal ones.
"use strict";
(function () {
  const token = document.querySelector('meta[name="table-token"]').content;
  const base = document.querySelector('meta[name="table-base"]').content;
  const $ = (id) => document.getElementById(id);
  let next = 0;
  let chosenThrow = null;
  let turnKey = null;
  // The turn just answered: a poll sent before the seat took the move still shows it, and must not bring it back.
  let answeredKey = null;
  let over = false;

  function cardButton(card, label, onClick) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "play-card" + (/[HD]$/.test(card) ? " red" : "");
    button.textContent = label || card;
    button.addEventListener("click", onClick);
    return button;
  }

  async function post(move) {
    $("problem").textContent = "";
    const reply = await fetch(base + "move", {method: "POST", headers: {"Content-Type": "application/json",
      "X-Table-Token": token}, body: JSON.stringify(move)});
    if (!reply.ok) {
      $("problem").textContent = (await reply.json()).error;
      return;
    }
    chosenThrow = null;
    answeredKey = turnKey;
    showTurn(null);
  }

  function take(card) {
    if (chosenThrow === null) {
      $("problem").textContent = "Choose a throw first, then what to take.";
      return;
    }
    post({throw: chosenThrow, take: card});
  }

  function showTurn(turn) {
    const throws = $("throws"), floor = $("floor"), hand = $("hand");
    let key = turn ? JSON.stringify([turn.round, turn.hand, turn.floor]) : null;
    if (key !== null && key === answeredKey) {
      turn = null;
      key = null;
    }
    if (key === turnKey) {
      if (turn) $("clock").textContent = "Your turn: " + turn.seconds_left + " s left.";
      return;
    }
    turnKey = key;
    chosenThrow = null;
    throws.replaceChildren(); floor.replaceChildren(); hand.replaceChildren();
    $("deck").disabled = !turn;
    $("declare").disabled = !(turn && turn.may_declare);
    $("coach").disabled = !turn;
    $("advice").textContent = "";
    if (!turn) {
      $("clock").textContent = over ? "The match is over." : "The bots are playing.";
      return;
    }
    $("clock").textContent = "Your turn: " + turn.seconds_left + " s left.";
    document.body.dataset.turns = String(Number(document.body.dataset.turns || 0) + 1);
    $("scores").textContent = "Cards held: " + turn.hand_sizes.join(", ") + "; the deck has " + turn.deck_size + ".";
    $("total").textContent = "(total " + turn.total + ")";
    for (const card of turn.hand) {
      const span = document.createElement("span");
      span.className = "play-card" + (/[HD]$/.test(card) ? " red" : "");
      span.textContent = card;
      hand.append(span);
    }
    turn.throws.forEach((cards, index) => {
      const button = cardButton(cards.join(" "), "Throw " + cards.join(" "), () => {
        chosenThrow = index;
        for (const other of throws.children) other.setAttribute("aria-pressed", String(other === button));
        $("problem").textContent = "";
      });
      button.setAttribute("aria-pressed", "false");
      button.classList.add("play-throw");
      throws.append(button);
    });
    for (const card of turn.floor) {
      floor.append(cardButton(card, "Take " + card, () => take(card)));
    }
  }

  async function poll() {
    try {
      const reply = await fetch(base + "state?since=" + next, {cache: "no-store"});
      const state = await reply.json();
      for (const line of state.lines) {
        if (!line.trim()) continue;
        const item = document.createElement("li");
        item.textContent = line;
        $("log").append(item);
      }
      next = state.next;
      if (state.coach && coachName === null) {
        coachName = state.coach;
        $("coach").textContent = "What would " + coachName + " play?";
        $("coach-row").hidden = false;
      }
      over = state.over;
      showTurn(state.turn);
    } catch (error) {
      $("clock").textContent = "The table has closed.";
      return;
    }
    if (!over) setTimeout(poll, 400);
    else $("clock").textContent = "The match is over.";
  }

  async function askCoach() {
    const button = $("coach");
    button.disabled = true;
    $("advice").textContent = "Asking " + coachName + "...";
    try {
      const reply = await fetch(base + "coach", {method: "POST", headers: {"X-Table-Token": token}});
      const data = await reply.json();
      $("advice").textContent = reply.ok ? "Coach: " + data.sentence : data.error;
    } finally {
      button.disabled = turnKey === null;
    }
  }

  let coachName = null;
  $("deck").addEventListener("click", () => take("deck"));
  $("coach").addEventListener("click", askCoach);
  $("declare").addEventListener("click", () => post({declare: true}));
  $("leave").addEventListener("click", () => post({leave: true}));
  poll();
})();
