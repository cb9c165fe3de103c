// __NAME__: a Least Score bot for Node.js, standard library only. Change chooseMove, then run `arena check __NAME__`.
"use strict";

const readline = require("readline");

const RANKS = "A23456789TJQK";
const value = (card) => Math.min(RANKS.indexOf(card[0]) + 1, 10); // A=1 .. 9=9, T J Q K = 10
const total = (cards) => cards.reduce((sum, card) => sum + value(card), 0);

function chooseMove(message) {
  const hand = message.hand;
  // may_declare is false on your first turn of a round: declaring then is an illegal move.
  if (message.may_declare && total(hand) <= 4) return { type: "declare" };
  // A single card is always a legal set; a pair (two cards of one rank) is too. Cards come from message.hand.
  let best = [hand.reduce((a, b) => (value(b) > value(a) ? b : a))];
  for (let i = 0; i < hand.length; i++) {
    for (let j = i + 1; j < hand.length; j++) {
      if (hand[i][0] === hand[j][0] && total([hand[i], hand[j]]) > total(best)) best = [hand[i], hand[j]];
    }
  }
  console.error("hand", hand.join(" "), "throwing", best.join(" ")); // stderr is your log, never stdout
  return { type: "play", discard: best, take: "deck" };
}

function reply(answer) {
  // One JSON object per line. process.stdout.write to a pipe is synchronous, so no flush is needed.
  process.stdout.write(JSON.stringify(answer) + "\n");
}

const input = readline.createInterface({ input: process.stdin });
input.on("line", (line) => {
  const message = JSON.parse(line);
  // "persistent": this process may play several matches: each starts with its own hello, and match_end gets "done".
  if (message.type === "hello") reply({ type: "ready", persistent: true });
  else if (message.type === "turn") reply(chooseMove(message));
  else if (message.type === "match_end") reply({ type: "done" });
  // Every other message (round_start, played, round_end, ...) wants no reply: answering it is a fault.
});
