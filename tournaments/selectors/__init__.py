"""Every read the API and the spectator pages share, in a fixed small number of queries,
one module per concern. Callers import from the module that owns a read (nothing is
re-exported here, so an import says where a read lives):

| module        | reads                                                                  |
|---------------|------------------------------------------------------------------------|
| `tournaments` | tournament lists, one by slug, its activity badge and progress          |
| `standings`   | standings (points, places, intervals, strengths, knockout round reached) |
| `cross_table` | pairwise results between entrants                                       |
| `brackets`    | a knockout's bracket and its rounds still to come                       |
| `tables`      | a tournament's tables with their seats                                  |
| `games`       | game lists, one game's result, seating, replay and proof                |
| `deals`       | deal commitments and seeds, the tables of each deal group                |
| `ratings`     | rating pools, leaderboards, a bot's rating history                      |
| `bots`        | bot lists, a bot's page, head-to-heads                                  |
| `adjusted`    | luck-adjusted standings and their cache                                 |
| `collusion`   | the organisers' collusion report (organisers and staff only)            |

The web pages, the API, the live-progress endpoints and the demo command all read here,
so they cannot disagree (copies in the web app once drifted apart). Each selector's query
count is pinned in tests/tournaments/test_selectors.py, so pages stay free of N+1 queries
as data grows. Sums are aggregated in the database; only statistics that need every game
(Plackett-Luce, pairwise results) read the seats, and those are summed with numpy.

Every read here is public, so every read is **sealed** (docs/fair-play.md) through
tournaments.sealing, which owns the rule: a game's result (places, points, strikes,
forfeits, its rating change) and everything aggregated from it is shown only once the
game's deal is revealed — played at every table of its deal group. A result of a deal that
another table has still to play would tell the bots there something about the cards they
are about to be dealt (a stuck-card penalty says a seat held 2s or a bomb). So lists leave
sealed games out, standings and head-to-heads sum revealed games only, and a table's
result (its seats' points, places, advancement and forfeits) is shown once the table is
closed and every game it recorded is revealed. Progress counts games played, not their
results. The modules depend on tournaments.sealing and not on each other (checked by
import-linter, pyproject.toml).
"""
