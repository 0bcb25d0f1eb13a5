"""What is public about a game, a table, a deal, a standing or a rating, and whose private
data a user may read: the platform's fair-play invariant, in one place.

Two rules, every page, API view, export, log and event stream asks this module:

- **Sealed results** (docs/fair-play.md): a game's result, moves and hands, and anything
  summed from them, are public only once its deal is revealed, i.e. played at every table
  that plays it. Before that a bot that is still to play the deal elsewhere could learn it.
  A deal's seed is public from the same moment; its commitment always.
- **A bot's private data** (its hosted code and versions' validation logs, its runtime
  logs, its move notes) is shown to the bot's owner only: never to other bots, other
  users, organisers or spectators, before or after the reveal (move notes: unless the
  owner publishes them once the tournament has finished, services.notes).

Readers filter with these functions instead of writing the predicates out: a page that
writes its own test of a deal's `revealed_at` can forget it, so
tests/tournaments/test_sealing_in_one_place.py fails on any such test outside this module
(and outside tournaments/deals.py, which decides when a deal is revealed).

What is decided where: tournaments.deals writes `Deal.revealed_at` (the reveal); this module
says what that makes public; the selectors (tournaments.selectors) and the web's own queries
read through it; the rating order (tournaments.rating_order) rates a game only once
`is_revealed`, since a rating change is a result too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    Max,
    OuterRef,
    Q,
    QuerySet,
)

from bots_sdk.rules.notes import has_notes, without_notes
from tournaments.models import (
    Bot,
    BotSubmission,
    CasualGame,
    CasualTable,
    Deal,
    Game,
    GameSeat,
    Gate,
    GateStatus,
    GateVerdict,
    Hosting,
    Table,
    TableSeat,
    Tournament,
)
from tournaments.play.lifecycle import CLOSED

#: What a sealed game's pages, API answers and downloads say instead of its result.
DEAL_WITHHELD = "withheld until this deal has been played at every table"

#: A table seat's result while its table's result is sealed.
SEALED_SEAT = {"points": None, "place": None, "advanced": None, "forfeited": None}

#: A table is closed (plays no more, tournaments.play.lifecycle.CLOSED): only then can its
#: result (its seats' totals, who advances, why it closed) be public.
CLOSED_STATUSES = tuple(sorted(CLOSED))


class DealWithheld(Exception):
    """The game's deal is still to be played at another table of its group: its seed, its
    hands, its result and every replay dealt from it stay secret until then (a 403, never
    a 500). `what` names what was asked for: "replay" (also the proof) or "result"."""

    def __init__(self, game: Game, what: str = "replay") -> None:
        super().__init__(f"The {what} of game {game.pk} is {DEAL_WITHHELD}.")
        self.game = game
        self.what = what


# --- one deal, one game ------------------------------------------------------------------


def is_revealed(revealed_at: datetime | None) -> bool:
    """A deal whose `revealed_at` is this is revealed: the one predicate, for rows read as
    plain values (the rating order's and the recorder's SQL)."""
    return revealed_at is not None


def deal_revealed(deal: Deal) -> bool:
    """Is this deal revealed (played at every table of its group)?"""
    return is_revealed(deal.revealed_at)


def game_revealed(game: Game) -> bool:
    """Is this game's result public (its deal revealed)? Reads `game.deal`: select it."""
    return deal_revealed(game.deal)


def game_check(game: Game, *, what: str = "result") -> Game:
    """The game, if its result is public; DealWithheld otherwise. Every read of one game's
    result, replay or proof (API, page, download) calls this before reading it."""
    if not game_revealed(game):
        raise DealWithheld(game, what=what)
    return game


def deal_seed(deal: Deal) -> str | None:
    """The deal's seed as the public sees it: None until the deal is revealed (the seed
    gives every hand of every game dealt from it)."""
    return deal.seed if deal_revealed(deal) else None


def table_error_public(table: Table) -> bool:
    """May the table's `last_error` be shown? Not while it has a sealed game (annotation
    `sealed`, `table_list`): why it stopped or retried can tell how its sealed games went."""
    return not getattr(table, "sealed", True)


# --- filters on queries ------------------------------------------------------------------


def revealed(path: str = "") -> Q:
    """Games (reached through `path`, e.g. "game__") whose deal is revealed: the only ones
    whose result any public read may show or count. A join to games and deals: reads of
    one tournament exclude `sealed_games` instead, which costs less."""
    return Q(**{f"{path}deal__revealed_at__isnull": False})


def sealed(path: str = "") -> Q:
    """Games (through `path`) whose deal is not revealed: counted, never shown."""
    return Q(**{f"{path}deal__revealed_at__isnull": True})


def deals_revealed(value: bool = True) -> Q:
    """On a Deal query: the revealed deals (or, with False, the sealed ones)."""
    return Q(revealed_at__isnull=not value)


def sealed_games(*, tournament: Tournament) -> QuerySet[Game]:
    """The ids of the tournament's sealed games (recorded, deal not revealed), for
    `.exclude(game_id__in=...)`: a hashed subplan over the few sealed games, where joining
    every seat to its game and deal cost the 10,000-game standings 3x the time
    (benchmarks/README.md, sealed results)."""
    return Game.objects.filter(sealed(), table__tournament_id=tournament.pk).values("id")


def sealed_game_count(*, tournament: Tournament) -> int:
    """How many of the tournament's recorded games are sealed (1 query): a count of games
    played, which the public may know, without their results."""
    return Game.objects.filter(sealed(), table__tournament_id=tournament.pk).count()


def reveal_state(*, tournament: Tournament) -> dict[str, Any]:
    """What a statistic over the tournament's revealed games depends on (1 query): the
    games it counts (`scored`), those withheld, the last reveal (ISO text, "-" before
    any) and how many revealed deals have a luck baseline. A cache key made of these
    changes whenever the counted games do (a deal is revealed only once all its games are
    recorded), so a cached statistic never includes a sealed game."""
    shown = revealed()
    state = Game.objects.filter(table__tournament=tournament).aggregate(
        scored=Count("id", filter=shown),
        withheld=Count("id", filter=~shown),
        last_reveal=Max("deal__revealed_at"),
        baselines=Count("deal_id", filter=shown & Q(deal__baseline__isnull=False), distinct=True),
    )
    state["last_reveal"] = state["last_reveal"].isoformat() if state["last_reveal"] else "-"
    return state


# --- tables ------------------------------------------------------------------------------


def table_has_sealed(table: OuterRef) -> Exists:
    """The table (an outer reference to its id) recorded a game whose deal is not revealed."""
    return Exists(Game.objects.filter(sealed(), table_id=table))


def table_results_public() -> ExpressionWrapper:
    """On a Table query: its result (its seats' points, places, advancement, forfeits, and
    why it closed) is public once it is closed and every game it recorded is revealed."""
    return ExpressionWrapper(
        Q(status__in=CLOSED_STATUSES) & ~table_has_sealed(OuterRef("pk")), output_field=BooleanField()
    )


def seat_results_public() -> Q:
    """On a TableSeat query: its table's result is public (as `table_results_public`)."""
    return Q(table__status__in=CLOSED_STATUSES) & ~table_has_sealed(OuterRef("table_id"))


def table_seat_result(seat: TableSeat, *, public: bool) -> dict[str, Any]:
    """A seat's result at its table as the public may see it: None everywhere until the
    table's result is public (`table_results_public`)."""
    if not public:
        return dict(SEALED_SEAT)
    return {"points": seat.points, "place": seat.place, "advanced": seat.advanced, "forfeited": seat.forfeited}


# --- a bot's private data ----------------------------------------------------------------


def bot_private_visible(*, user: Any, bot: Bot) -> bool:
    """May `user` read `bot`'s private data (hosted code, versions, logs, move notes)? Its
    owner only: staff and organisers see what the public sees, so a platform account with
    privileges cannot become a channel between competitors."""
    return bool(user is not None and user.is_authenticated and bot.owner_id == user.pk)


#: What each gate setting does with a version whose gate is over (docs/hosting.md, "The gate").
GATE_MODES = {
    "auto": "promoted when its gate is over unless the verdict is worse",
    "manual": "you promote it (or not) when its gate is over",
    "off": "no gate: a new ready version is promoted at once",
}


def version_gate(*, user: Any, bot: Bot, submission: BotSubmission) -> dict[str, Any] | None:
    """A version's gate against its predecessor (docs/hosting.md) as its owner sees it: the
    SPRT's verdict, the games, the score, both versions' logs, and what became of the
    version (`outcome`, `promoted`). None for a version that had no gate and for anyone but
    the bot's owner: a gate's result is the owner's data (like its validation log)."""
    if not submission.gate_status or not bot_private_visible(user=user, bot=bot):
        return None
    against = submission.gate_against
    active = bot.active_submission_id == submission.pk
    status, verdict = submission.gate_status, submission.gate_verdict or None
    if status in (GateStatus.QUEUED, GateStatus.PLAYING):
        outcome = "pending"  # it plays (or waits for a runner); the predecessor keeps playing
    elif active or submission.promoted_at is not None:
        outcome = "promoted"
    elif status == GateStatus.FAILED:
        outcome = "not_promoted"  # the gate could not be played out: nothing is promoted
    elif bot.active_submission is not None and bot.active_submission.seq > submission.seq:
        outcome = "superseded"  # a newer version is active
    elif bot.gate == Gate.AUTO and verdict == GateVerdict.WORSE:
        outcome = "not_promoted"
    else:
        outcome = "awaiting_promotion"  # the manual gate (or the gate was turned off since)
    return {"status": status, "against": against.version if against else None,
            "games": submission.gate_games, "duplicate_sets": submission.gate_sets,
            "score": submission.gate_score, "half_width": submission.gate_half_width, "verdict": verdict,
            "detail": submission.gate_detail, "finished_at": submission.gate_finished_at,
            "mode": bot.gate, "mode_means": GATE_MODES.get(bot.gate, ""), "outcome": outcome,
            "promoted": submission.promoted_at is not None, "log": submission.gate_log}


def owned_seats(*, user: Any, game: Game) -> frozenset[int]:
    """The seats of `game` whose bot's private data `user` may read (`bot_private_visible`;
    1 query for a signed-in user, none for anyone else)."""
    if user is None or not user.is_authenticated:
        return frozenset()
    seats = GameSeat.objects.filter(game_id=game.pk).select_related("bot")
    return frozenset(s.seat for s in seats if bot_private_visible(user=user, bot=s.bot))


def notes_published_seats(*, game_id: int) -> frozenset[int]:
    """The seats of the game whose bot's owner published its notes of the game's tournament
    (services.notes), which has finished (1 query)."""
    return frozenset(GameSeat.objects.filter(
        game_id=game_id, entrant__notes_published_at__isnull=False,
        entrant__tournament__status=Tournament.Status.FINISHED,
    ).values_list("seat", flat=True))


def replay_for(replay: dict[str, Any], *, user: Any, game: Game) -> dict[str, Any]:
    """A revealed game's replay as `user` may see it: the move notes of the seats whose bot
    `user` owns and of those whose owner published them, and no other seat's. Every page,
    API answer and download that hands out a replay reads it through this or
    `replay_public`; the replay itself must already be public (`game_check`)."""
    if not has_notes(replay):
        return replay
    keep = owned_seats(user=user, game=game) | notes_published_seats(game_id=game.pk)
    return without_notes(replay, keep_seats=keep)


def replay_public(replay: dict[str, Any], *, game_id: int) -> dict[str, Any]:
    """A revealed game's replay as the public sees it: only the published move notes."""
    if not has_notes(replay):
        return replay
    return without_notes(replay, keep_seats=notes_published_seats(game_id=game_id))


# --- casual tables (a person against bots, out of competition) ----------------------------
#
# A casual table deals for itself alone (never a tournament deal group's deal), so nothing
# about it can help a bot in competition: its plays are public as they happen and its
# games' replays once each game ends. What stays private while a game plays is every hand:
# the person's own (their hand, their legal plays, an offer made to them) is shown to the
# person only, the bots' to nobody. The seat gateway keeps the two apart as it writes them
# (`CasualTable.public_state` never holds a card not yet played), the referee's live moves
# are stored in the form `casual_public_move` gives (`CasualTable.live_state`); every page,
# JSON answer and event stream of a casual table reads them through these functions.


def casual_seat_visible(*, user: Any, table: CasualTable) -> bool:
    """Is `user` the person playing `table` (may see its seat's hand, act for it)?"""
    return bool(user is not None and user.is_authenticated and table.owner_id == user.pk)


#: What a watcher is shown of the gateway's public state: what changes only when a game
#: starts or ends. The rest (whose move, the plays, the counts) is written each time the
#: person is asked to move, and its change would say when they are asked: while they are
#: offered an out-of-turn chop, that they hold a bomb (docs/rules.md §2). Watchers get those
#: from the referee's live moves instead (`live`), which never show a pending offer.
_WATCHED_PUBLIC = ("names", "person_seat", "players", "game_index", "over")
#: docs/rules.md §2: every player is dealt 13 cards, whatever the number of players.
_DEALT = 13


def casual_state_for(*, table: CasualTable, user: Any) -> dict[str, Any]:
    """A casual table's live state as `user` may see it: for anyone, the public moves as
    they are played (`live`) and the table's names and game; for the person only, the
    gateway's own view of the table when they were last asked and their seat (hand, legal
    plays, offer, clock) while the table plays, and the table's write counter (`version`,
    which moves when they are asked)."""
    public = table.public_state or {}
    if casual_seat_visible(user=user, table=table):
        seat = table.seat_state if table.is_open else None
        return {"id": table.pk, "status": table.status, "version": table.version,
                "detail": table.detail, "public": public, "seat": seat or None,
                "live": table.live_state or {}}
    watched = {key: public[key] for key in _WATCHED_PUBLIC if key in public}
    players = public.get("players") or len(public.get("names") or [])
    if players:
        watched["card_counts"] = [_DEALT] * int(players)  # before the game's first move
    return {"id": table.pk, "status": table.status, "detail": table.detail, "public": watched,
            "seat": None, "live": table.live_state or {}}


def casual_public_move(*, table: CasualTable, move: Any) -> dict[str, Any]:
    """One move of a casual table as anyone watching it live may see it (`move`: the
    referee's LiveMove, tournaments.play.referee.LiveMove): who moved, the cards played or
    the pass, the card counts, whose move it is now, who has gone out, the play to beat.
    Built from the cards played only, so no card still in a hand can be in it; the referee
    sends no event for a declined offer and never shows a pending offer in `to_move`.
    Casual tables only: a tournament table's moves are never streamed (its games stay
    sealed as their deals require)."""
    if not isinstance(table, CasualTable):
        raise TypeError("only a casual table's moves are public as they happen")
    from bots_sdk.cards import DECK

    def texts(indices: Any) -> list[str]:
        return [str(DECK[i]) for i in sorted(indices)]

    public_table = None
    if move.table_cards:
        public_table = {"seat": move.table_seat, "kind": move.table_kind,
                        "cards": texts(move.table_cards)}
    return {"game_index": move.game_index, "n": move.number, "seat": move.seat,
            "pass": bool(move.passed), "cards": [] if move.passed else texts(move.cards),
            "offer": move.offer or None, "card_counts": list(move.card_counts),
            "to_move": move.to_move, "finished": list(move.finished), "table": public_table}


def casual_replay_for(replay: dict[str, Any], *, user: Any, game: CasualGame,
                      owned_bot_seats: frozenset[int]) -> dict[str, Any]:
    """A finished casual game's replay as `user` may see it: move notes only of the seats
    whose bot `user` owns (`owned_bot_seats`: seats of this game)."""
    if not has_notes(replay):
        return replay
    return without_notes(replay, keep_seats=owned_bot_seats if user is not None and user.is_authenticated else frozenset())


def casual_bot_allowed(*, bot: Bot, user: Any) -> bool:
    """May `user` seat `bot` at a casual table? House bots, their own bots, and others'
    bots whose owner consents (`Bot.casual_games`, off by default); never a retired bot,
    nor a hosted one that cannot run (no ready version, or its hosting stopped: a runner
    starts a hosted bot's session for the casual table, as for a tournament table)."""
    if bot.revoked_at is not None:
        return False
    if bot.house_bot:
        return True
    if bot.hosting == Hosting.HOSTED and (bot.active_submission_id is None or bot.hosting_stopped):
        return False
    return bot.owner_id == user.pk or bot.casual_games


def casual_opponents_q(*, user: Any) -> Q:
    """The bots `user` may seat (as a filter; `casual_bot_allowed` for one bot)."""
    runnable = Q(hosting=Hosting.REMOTE) | Q(hosting=Hosting.HOSTED, active_submission__isnull=False,
                                             hosting_stopped="")
    return Q(revoked_at__isnull=True) & (
        ~Q(house_bot="") | (runnable & (Q(owner_id=user.pk) | Q(casual_games=True))))
