// Sample bot "js-greedy": the greedy sample strategy in JavaScript for Node.js, using only the standard library.
//
// It plays the same moves as sample_bots/greedy/bot.py: it throws the legal set worth the most points, takes a floor
// card that is low (3 or less) or forms a set with the cards it keeps, else the deck, and declares whenever it may
// with 5 points or less. It is here to show that protocol v1 is language-neutral: one JSON object per line in, one
// per line out, a reply only to "hello" and "turn", and debug text on stderr only.
"use strict";

const readline = require("readline");

const RANKS = "A23456789TJQK";
const DECLARE_AT = 5;
const LOW_CARD = 3;
// The v1 defaults, for any option a (future) hello leaves out.
const DEFAULT_RULES = { two_pairs_mixed: true, sequence_lengths: [3, 5], sequence_same_suit: false, flush_size: 5 };

const rank = (card) => RANKS.indexOf(card[0]) + 1;
const value = (card) => Math.min(rank(card), 10);
const total = (cards) => cards.reduce((sum, card) => sum + value(card), 0);

function isRun(ranks) {
  // The Ace may sit below the 2 or above the King (as 14), but a run never wraps from King to 2.
  for (const ordered of [ranks.slice(), ranks.map((r) => (r === 1 ? 14 : r))]) {
    ordered.sort((a, b) => a - b);
    if (ordered.every((r, i) => i === 0 || r === ordered[i - 1] + 1)) return true;
  }
  return false;
}

function isSet(cards, rules) {
  const count = cards.length;
  const ranks = cards.map(rank);
  const suits = new Set(cards.map((card) => card[1]));
  if (count === 1) return true;
  if (count === 2) return ranks[0] === ranks[1];
  if (
    rules.sequence_lengths.includes(count) &&
    new Set(ranks).size === count &&
    (suits.size === 1 || !rules.sequence_same_suit) &&
    isRun(ranks)
  ) {
    return true;
  }
  if (count === 4) {
    const counts = {};
    for (const r of ranks) counts[r] = (counts[r] || 0) + 1;
    const shape = Object.values(counts).sort().join(",");
    if (shape === "4" || (shape === "2,2" && rules.two_pairs_mixed)) return true;
  }
  return count === rules.flush_size && suits.size === 1;
}

// Every throwable set of the hand, in the same order as arena_bot.legal_sets (by size, then hand order), so that
// ties break the same way as in the Python greedy bot.
function legalSets(hand, rules) {
  const found = [];
  const pick = (size, start, chosen) => {
    if (chosen.length === size) {
      if (isSet(chosen, rules)) found.push(chosen.slice());
      return;
    }
    for (let i = start; i < hand.length; i++) {
      chosen.push(hand[i]);
      pick(size, i + 1, chosen);
      chosen.pop();
    }
  };
  for (let size = 1; size <= hand.length; size++) pick(size, 0, []);
  return found;
}

function completesSet(kept, card, rules) {
  return legalSets([...kept, card], rules).some((cards) => cards.length > 1 && cards.includes(card));
}

function chooseMove(message, rules) {
  const hand = message.hand;
  if (message.may_declare && total(hand) <= DECLARE_AT) return { type: "declare" };
  let best = null;
  for (const cards of legalSets(hand, rules)) {
    // Strictly better only, so the first of equal sets wins (as Python's max() does).
    if (best === null || total(cards) > total(best) || (total(cards) === total(best) && cards.length > best.length)) {
      best = cards;
    }
  }
  const kept = hand.filter((card) => !best.includes(card));
  let take = "deck";
  for (const card of message.floor) {
    const wanted = value(card) <= LOW_CARD || completesSet(kept, card, rules);
    if (wanted && (take === "deck" || value(card) < value(take))) take = card;
  }
  return { type: "play", discard: best, take: take };
}

let rules = DEFAULT_RULES;

function reply(message) {
  if (message.type === "hello") {
    rules = Object.assign({}, DEFAULT_RULES, message.rules);
    return { type: "ready", persistent: true }; // it may play several matches: each starts with a hello
  }
  if (message.type === "turn") return chooseMove(message, rules);
  if (message.type === "match_end") return { type: "done" }; // a persistent bot's answer to the end of a match
  return null; // every other message type, known or not, wants no reply
}

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on("line", (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch (error) {
    console.error(`js-greedy: ignoring a line that is not JSON: ${error.message}`); // stderr is the log
    return;
  }
  const answer = reply(message);
  // One write per reply, newline included: on Linux a write to a pipe is synchronous, so nothing waits in a buffer.
  if (answer !== null) process.stdout.write(JSON.stringify(answer) + "\n");
});
// When the referee closes stdin (after match_end) readline closes; nothing else keeps Node alive, so it exits.
input.on("close", () => {
  process.exitCode = 0;
});
