// The JavaScript kit for arena's Least Score bots (protocol v1, PROTOCOL.md): the same helpers as the Python kit
// (protocol/arena_bot.py), with the same names in JavaScript's case. Node's standard library only.
"use strict";

const readline = require("readline");

const RANKS = "A23456789TJQK";
const DEFAULT_RULES = { two_pairs_mixed: true, sequence_lengths: [3, 5], sequence_same_suit: false, flush_size: 5 };

/** Points a card counts: Ace 1, 2..9 face value, T J Q K 10. */
const value = (card) => Math.min(RANKS.indexOf(card[0]) + 1, 10);
/** Rank number: Ace 1 .. King 13. */
const rank = (card) => RANKS.indexOf(card[0]) + 1;
const total = (cards) => cards.reduce((sum, card) => sum + value(card), 0);

/** Distinct consecutive ranks; the Ace may also follow the King as 14, but a run never wraps (KA2). */
function isRun(ranks) {
  const consecutive = (ordered) => ordered.every((r, i) => i === 0 || r === ordered[i - 1] + 1);
  const numeric = (a, b) => a - b;
  return consecutive([...ranks].sort(numeric)) || consecutive(ranks.map((r) => (r === 1 ? 14 : r)).sort(numeric));
}

function isSet(cards, rules) {
  const count = cards.length;
  const ranks = cards.map(rank);
  const suits = new Set(cards.map((card) => card[1]));
  if (count === 1) return true;
  if (count === 2) return ranks[0] === ranks[1];
  if (rules.sequence_lengths.includes(count) && new Set(ranks).size === count
      && (suits.size === 1 || !rules.sequence_same_suit) && isRun(ranks)) return true;
  if (count === 4) {
    const counts = {};
    for (const r of ranks) counts[r] = (counts[r] || 0) + 1;
    const shape = Object.values(counts).sort().join(",");
    if (shape === "4" || (shape === "2,2" && rules.two_pairs_mixed)) return true;
  }
  return count === rules.flush_size && suits.size === 1;
}

/**
 * Every set of cards from `hand` that may be thrown together, each once, cards in hand order, smallest first.
 * `rules` is the hello message's "rules" object (missing options take the v1 defaults): one card, a pair, two
 * pairs, a sequence of one of the sequence_lengths (A23 or QKA, never KA2), or a flush of flush_size cards.
 */
function legalSets(hand, rules) {
  const options = { ...DEFAULT_RULES, ...(rules || {}) };
  const found = [];
  const pick = (start, size, chosen) => {
    if (chosen.length === size) {
      if (isSet(chosen, options)) found.push([...chosen]);
      return;
    }
    for (let i = start; i < hand.length; i++) pick(i + 1, size, [...chosen, hand[i]]);
  };
  for (let size = 1; size <= hand.length; size++) pick(0, size, []);
  return found;
}

/** A move: throw `discard`, then take "deck" or one card of the floor. */
const play = (discard, take = "deck") => ({ type: "play", discard: [...discard], take });
const declare = () => ({ type: "declare" });
/** Debug output: stderr, which the referee keeps (stdout is only for replies). */
const log = (...parts) => console.error(...parts);

/** The reply to one message, or null: hello gets ready, turn gets bot.onTurn's move, the rest go to onMessage. */
function reply(bot, message) {
  if (message.type === "hello") {
    bot.seat = message.seat;
    bot.rules = message.rules;
    if (bot.onHello) bot.onHello(message);
    return { type: "ready" };
  }
  if (message.type === "turn") return bot.onTurn(message);
  if (bot.onMessage) bot.onMessage(message);
  return null;
}

/** Play until the referee closes stdin: one JSON line in, at most one JSON line out, each as it comes. */
function run(bot, input = process.stdin, output = process.stdout) {
  const lines = readline.createInterface({ input });
  lines.on("line", (line) => {
    const answer = reply(bot, JSON.parse(line));
    if (answer !== null && answer !== undefined) output.write(JSON.stringify(answer) + "\n");
  });
}

module.exports = { RANKS, value, rank, total, legalSets, play, declare, log, reply, run };
