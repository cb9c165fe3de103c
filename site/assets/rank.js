// A big field's bot page: its rank and 95% rank interval, from the standings index (standings.js, which the page
// loads before this script). They move whenever any bot plays, so the page itself does not hold them: a page that
// did would be written again after every league batch, a thousand pages for a few dozen matches. Without
// JavaScript the badge stays a link to the standings.
(function () {
  "use strict";
  var badge = document.querySelector("[data-rank-of]");
  var index = window.arenaStandings;
  if (!badge || !index) return;
  var slug = badge.getAttribute("data-rank-of");
  for (var position = 0; position < index.bots.length; position++) {
    var bot = index.bots[position];
    if (bot[2] !== slug) continue;
    var page = Math.floor(position / index.per_page) + 1;
    badge.textContent = "#" + bot[0];
    badge.setAttribute("aria-label", "rank " + bot[0] + ", on standings page " + page);
    if (bot[0].indexOf("=") >= 0) badge.title = "a shared rank: the order with a neighbour is not settled at 95%";
    if (page > 1) badge.href = badge.getAttribute("href").replace(/index\.html$/, "standings-" + page + ".html");
    var interval = document.querySelector("[data-rank95]");
    if (interval && bot[3] !== null && bot[3] !== undefined) {
      interval.querySelector("dd").textContent = bot[3] + "\u2013" + bot[4];
      interval.hidden = false;
    }
    return;
  }
})();
