"""Casual tables: a person plays one seat against bots in the browser (docs/web.md, "Play").

Writes only; the live table is played by tournaments/play/casual.py (the seat gateway) and
read through tournaments/sealing.py (`casual_state_for`) by tournaments/selectors/casual.py.

Out of competition by construction: the referee draws every deal of a casual table with
`secrets` for that table alone (no deal seed is sent), no rating pool is ever touched, and
the games count only in each bot's "people vs bots" record.

Who may sit which bot: house bots and the person's own bots always; another person's bot
only while its owner consents (`Bot.casual_games`, off by default; checked again when the
table starts, so a bot whose owner withdrew consent in between is never seated).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from bots_sdk.cards import DECK
from bots_sdk.rules.options import PRESETS
from tournaments import jobs
from tournaments.jobs import Job
from tournaments.models import Bot, CasualGame, CasualSeat, CasualTable, Hosting
from tournaments.sealing import casual_bot_allowed, casual_public_move

#: The clocks a person may choose on the play page (ms): a move's time, and a bank spent
#: once a move overruns it (docs/rules.md's clock, as for bots).
MOVE_TIME_MS_RANGE = (3_000, 120_000)
TIME_BANK_MS_RANGE = (0, 600_000)
#: The bots' clock at a casual table (the person's is their own): a tournament's default.
BOT_MOVE_TIME_MS = 1_000
BOT_TIME_BANK_MS = 10_000
GAMES_RANGE = (1, 20)
#: At most this many open tables per person (each holds a gateway and a referee table).
MAX_OPEN_TABLES = 2
#: A hosted bot plays at most this many open casual tables at once (each one a sandbox on a
#: runner: people must not take the runners' slots from the tournaments).
MAX_HOSTED_CASUAL_TABLES = 2
#: The referee-side id of the person's seat: never a registered bot's id (those are digits).
PERSON_PREFIX = "person-"
SEAT_TOKEN_PREFIX = "tlseat."


class CasualError(ValueError):
    """A request about a casual table that cannot be done; the message says why."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def casual_table_create(*, user: Any, preset: str, bot_ids: Sequence[int], games: int | None,
                        move_time_ms: int | None, time_bank_ms: int | None, seat: int = 0) -> CasualTable:
    """A new casual table: the person at `seat` (0-based), the bots at the others in
    order. The person's clock is `move_time_ms` a move + `time_bank_ms` of bank (within
    MOVE_TIME_MS_RANGE and TIME_BANK_MS_RANGE; None: not a number was given), the bots'
    the table's bot clock (BOT_MOVE_TIME_MS + BOT_TIME_BANK_MS). Queued for a worker after
    the commit."""
    if not user.is_authenticated:
        raise CasualError("sign in to play", 403)
    if preset not in PRESETS:
        raise CasualError(f"unknown preset {preset!r} (known: {', '.join(PRESETS)})")
    players = len(bot_ids) + 1
    if not 2 <= players <= 4:
        raise CasualError("choose 1 to 3 opponents (a table has 2 to 4 seats)")
    if not 0 <= seat < players:
        raise CasualError(f"seat must be 1 to {players}")
    for value, (low, high), what, scale in ((games, GAMES_RANGE, "games", 1),
                                            (move_time_ms, MOVE_TIME_MS_RANGE, "move time", 1000),
                                            (time_bank_ms, TIME_BANK_MS_RANGE, "time bank", 1000)):
        unit = "" if scale == 1 else " seconds"
        if value is None:
            raise CasualError(f"{what} must be a whole number{unit}, {low // scale} to {high // scale}")
        if not low <= value <= high:
            raise CasualError(f"{what} must be {low // scale} to {high // scale}{unit}"
                              + ("" if scale == 1 else f" (got {value / scale:g})"))
    bots = {b.pk: b for b in Bot.objects.filter(pk__in=list(bot_ids))}
    chosen = []
    for bot_id in bot_ids:
        bot = bots.get(bot_id)
        if bot is None or not casual_bot_allowed(bot=bot, user=user):
            # the same answer for a bot that does not exist and one that declined
            raise CasualError(f"bot {bot_id} does not accept casual games")
        chosen.append(bot)
    with transaction.atomic():
        open_tables = CasualTable.objects.select_for_update().filter(
            owner_id=user.pk, status__in=[CasualTable.Status.PENDING, CasualTable.Status.RUNNING])
        if len(list(open_tables)) >= MAX_OPEN_TABLES:
            raise CasualError(f"you have {MAX_OPEN_TABLES} tables playing already: "
                              "finish or leave one first", 409)
        for bot in chosen:
            if bot.hosting == Hosting.HOSTED and CasualSeat.objects.filter(
                    bot=bot, table__status__in=[CasualTable.Status.PENDING, CasualTable.Status.RUNNING]
            ).values("table").distinct().count() >= MAX_HOSTED_CASUAL_TABLES:
                raise CasualError(f"{bot.name} is playing {MAX_HOSTED_CASUAL_TABLES} casual tables already "
                                  "(a hosted bot's limit): try again when one has finished", 409)
        table = CasualTable.objects.create(
            owner=user, preset=preset, players=players, games=games,
            move_time_ms=move_time_ms, time_bank_ms=time_bank_ms, bot_move_time_ms=BOT_MOVE_TIME_MS,
            bot_time_bank_ms=BOT_TIME_BANK_MS, totals=[0] * players)
        others = iter(chosen)
        for index in range(players):
            bot = None if index == seat else next(others)
            CasualSeat.objects.create(table=table, index=index, bot=bot,
                                      name=user.username if bot is None else bot.name)
        jobs.enqueue_on_commit(Job.PLAY_CASUAL_TABLE, table.pk)
    return table


def casual_bot_consent(*, user: Any, bot: Bot, accept: bool) -> Bot:
    """The owner's consent to casual tables of other people (`Bot.casual_games`)."""
    if bot.owner_id != user.pk:
        raise CasualError("only the bot's owner can change this", 403)
    Bot.objects.filter(pk=bot.pk).update(casual_games=accept)
    bot.casual_games = accept
    return bot


# --- the person's answers ----------------------------------------------------------------


def _card_index(name: Any) -> int:
    if isinstance(name, int) and not isinstance(name, bool) and 0 <= name < 52:
        return name
    if isinstance(name, str):
        for card in DECK:
            if str(card) == name:
                return card.index
    raise CasualError(f"unknown card {name!r}")


def casual_answer(*, user: Any, table_id: int, move_id: Any, cards: Any, pass_: bool) -> None:
    """The person's answer to the move they are asked for. Checked against what the seat
    gateway wrote from the engine's view: the move asked now (`move_id`), and one of the
    engine's legal plays (or a pass where the engine allows one). Anything else is refused
    with the reason, and the seat keeps waiting for a proper answer until its clock runs out."""
    with transaction.atomic():
        table = CasualTable.objects.select_for_update().filter(pk=table_id).first()
        if table is None or table.owner_id != user.pk:
            raise CasualError("no such table of yours", 404)
        if not table.is_open:
            raise CasualError("this table has finished", 409)
        if table.left_at is not None:
            raise CasualError("you left this table", 409)
        state = table.seat_state or {}
        asked = state.get("move_id")
        if asked is None or move_id != asked:
            raise CasualError("it is not your move (that move was already played, or its time ran out)", 409)
        if table.answer is not None and table.answer.get("move_id") == asked:
            raise CasualError("you have answered this move already", 409)
        if pass_:
            if cards:
                raise CasualError("a pass carries no cards")
            if not state.get("can_pass"):
                raise CasualError("you cannot pass now: you lead (or must play)")
            table.answer = {"move_id": asked, "pass": True, "cards": []}
        else:
            if not isinstance(cards, list) or not cards:
                raise CasualError("choose the cards to play, or pass")
            indices = sorted(_card_index(c) for c in cards)
            if len(set(indices)) != len(indices):
                raise CasualError("a card is named twice")
            legal = [sorted(_card_index(c) for c in play) for play in state.get("legal_plays", [])]
            if indices not in legal:
                shown = " ".join(str(DECK[i]) for i in indices)
                raise CasualError(f"{shown} is not a legal play now"
                                  + (" (you may only pass or play what beats the table)" if legal else
                                     " (you have no play that beats the table: pass)"))
            table.answer = {"move_id": asked, "pass": False, "cards": indices}
        # Asked no more: the page shows the move as answered at once, before the gateway
        # takes the answer to the referee.
        table.seat_state = {**state, "move_id": None, "legal_plays": [], "offer": None,
                            "can_pass": False, "answered": asked}
        table.version += 1
        table.save(update_fields=["answer", "seat_state", "version"])


def casual_leave(*, user: Any, table_id: int) -> CasualTable:
    """The person leaves: their seat stops answering and forfeits as a bot's does when it
    disconnects (the referee plays its fallback moves for the rest of the table)."""
    with transaction.atomic():
        table = CasualTable.objects.select_for_update().filter(pk=table_id).first()
        if table is None or table.owner_id != user.pk:
            raise CasualError("no such table of yours", 404)
        if table.left_at is None and table.is_open:
            table.left_at = timezone.now()
            table.version += 1
            table.save(update_fields=["left_at", "version"])
    return table


# --- the seat gateway's writes (tournaments/play/casual.py) ------------------------------


def seat_token(table_id: int) -> str:
    """The bot token the seat gateway of table `table_id` connects to the referee with:
    derived from the site's secret, so no row holds it and it opens that one seat only."""
    mac = hmac.new(settings.SECRET_KEY.encode(), f"casual-seat:{table_id}".encode(),
                   hashlib.sha256).hexdigest()[:40]
    return f"{SEAT_TOKEN_PREFIX}{table_id}.{mac}"


def seat_token_table(token: str) -> int | None:
    """The running casual table a seat token opens, or None (tournaments.token_store)."""
    if not token.startswith(SEAT_TOKEN_PREFIX):
        return None
    raw = token[len(SEAT_TOKEN_PREFIX):].split(".", 1)[0]
    if not raw.isdigit() or len(raw) > 18:
        return None
    table_id = int(raw)
    if not hmac.compare_digest(token, seat_token(table_id)):
        return None
    if not CasualTable.objects.filter(pk=table_id, status=CasualTable.Status.RUNNING).exists():
        return None
    return table_id


def casual_start(*, table_id: int) -> CasualTable | None:
    """Claim a pending table for this worker (None: another took it, or it closed).
    Every seated bot's consent is checked again here."""
    with transaction.atomic():
        table = CasualTable.objects.select_for_update().filter(
            pk=table_id, status=CasualTable.Status.PENDING).first()
        if table is None:
            return None
        for seat in CasualSeat.objects.filter(table=table, bot__isnull=False).select_related("bot"):
            assert seat.bot is not None
            if not casual_bot_allowed(bot=seat.bot, user=table.owner):
                table.status = CasualTable.Status.FAILED
                table.detail = f"{seat.bot.name} no longer accepts casual games"
                table.finished_at = timezone.now()
                table.version += 1
                table.save(update_fields=["status", "detail", "finished_at", "version"])
                return None
        table.status = CasualTable.Status.RUNNING
        table.started_at = table.touched_at = timezone.now()
        table.version += 1
        table.save(update_fields=["status", "started_at", "touched_at", "version"])
    return table


def casual_state_write(*, table_id: int, public: dict[str, Any] | None = None,
                       seat: dict[str, Any] | None = None, clear_answer: bool = False) -> None:
    """The gateway's record of the live table (what the streams send)."""
    with transaction.atomic():
        table = CasualTable.objects.select_for_update().get(pk=table_id)
        table.touched_at = timezone.now()
        fields = ["version", "touched_at"]
        if public is not None:
            table.public_state = public
            fields.append("public_state")
        if seat is not None:
            table.seat_state = seat
            fields.append("seat_state")
        if clear_answer:
            table.answer = None
            fields.append("answer")
        table.version += 1
        table.save(update_fields=fields)


def casual_live_move(*, table_id: int, move: Any) -> None:
    """One public move as the referee streamed it (tournaments.play.referee.LiveMove),
    added to the table's live state in the form sealing.casual_public_move gives (what the
    watchers' streams send); a move of a new game starts its list afresh."""
    with transaction.atomic():
        table = CasualTable.objects.select_for_update().get(pk=table_id)
        public = casual_public_move(table=table, move=move)
        live = dict(table.live_state or {})
        previous = live.get("previous")
        if live.get("game_index") == public["game_index"]:
            moves = list(live.get("moves") or [])
        else:  # a new game: the last one's moves stay one game longer (a watcher whose
            # stream missed its last play between two reads still gets it)
            moves = []
            if live.get("moves"):
                previous = {"game_index": live.get("game_index"), "moves": live["moves"]}
        if moves and moves[-1]["n"] >= public["n"]:
            return  # already stored
        moves.append(public)
        table.live_state = {"game_index": public["game_index"], "moves": moves,
                            "card_counts": public["card_counts"], "to_move": public["to_move"],
                            "finished": public["finished"], "table": public["table"],
                            "previous": previous}
        table.touched_at = timezone.now()
        table.version += 1
        table.save(update_fields=["live_state", "touched_at", "version"])


def casual_game_over(*, table_id: int, game_index: int) -> None:
    """The game has ended: nobody is to move in it any more (its result and replay follow
    from the referee's record)."""
    with transaction.atomic():
        table = CasualTable.objects.select_for_update().get(pk=table_id)
        public = dict(table.public_state or {})
        if public.get("game_index") == game_index:
            public.update(to_move=None, over=True)
            table.public_state = public
            table.version += 1
            table.save(update_fields=["public_state", "version"])


def casual_answer_take(*, table_id: int, move_id: int) -> dict[str, Any] | None | bool:
    """The person's answer to `move_id` if one came (the seat then waits for no other),
    None while none has, False once the person has left."""
    table = CasualTable.objects.filter(pk=table_id).only("answer", "left_at").first()
    if table is None or table.left_at is not None:
        return False
    answer = table.answer
    if answer is not None and answer.get("move_id") == move_id:
        return dict(answer)
    return None


def casual_game_record(*, table_id: int, index: int, seat_participants: list[int],
                       points: list[int], replay_text: str) -> None:
    """One finished game (idempotent by index), and the table's totals."""
    with transaction.atomic():
        table = CasualTable.objects.select_for_update().get(pk=table_id)
        _, created = CasualGame.objects.get_or_create(
            table=table, index=index,
            defaults={"seat_participants": seat_participants, "points": points,
                      "replay_text": replay_text})
        if created:
            totals = list(table.totals or [0] * table.players)
            for seat, participant in enumerate(seat_participants):
                totals[participant] += points[seat]
            table.totals = totals
            table.touched_at = timezone.now()
            table.version += 1
            table.save(update_fields=["totals", "touched_at", "version"])


def casual_finish(*, table_id: int, completed: bool, detail: str = "") -> None:
    """The table is over: done (every game played) or failed (with the reason shown)."""
    CasualTable.objects.filter(pk=table_id, status__in=[
        CasualTable.Status.PENDING, CasualTable.Status.RUNNING]).update(
        status=CasualTable.Status.DONE if completed else CasualTable.Status.FAILED,
        detail=detail[:300], finished_at=timezone.now(), seat_state={}, answer=None,
        version=F("version") + 1)


#: A pending table no worker took within this long is given up (its queue is down).
PENDING_GIVE_UP_S = 600
#: Slack on top of the clocks before a silent running table counts as abandoned.
SILENCE_SLACK_S = 120


def casual_tables_abandon(*, now: datetime) -> list[int]:
    """Close the tables whose worker is gone, so they no longer count against their
    person's open tables nor show as playing: a running table the gateway has not written
    for longer than every seat's whole clock (each seat's move time and bank, plus
    slack), and a pending one no worker took. Called by the tick."""
    closed: list[int] = []
    running = CasualTable.objects.filter(status=CasualTable.Status.RUNNING).only(
        "id", "players", "move_time_ms", "time_bank_ms", "bot_move_time_ms", "bot_time_bank_ms",
        "touched_at", "started_at")
    for table in running:
        clocks_ms = (table.move_time_ms + table.time_bank_ms
                     + (table.players - 1) * (table.bot_move_time_ms + table.bot_time_bank_ms))
        silent_s = clocks_ms / 1000 + SILENCE_SLACK_S
        last = table.touched_at or table.started_at
        if last is not None and (now - last).total_seconds() > silent_s:
            closed += _abandon(table.pk, f"stopped: nothing happened at this table for {silent_s:.0f} s "
                                         "(the worker playing it stopped); not counted")
    stale = CasualTable.objects.filter(status=CasualTable.Status.PENDING,
                                       created_at__lt=now - timedelta(seconds=PENDING_GIVE_UP_S))
    for table_id in stale.values_list("id", flat=True):
        closed += _abandon(table_id, "never started: no worker took it; start a new table")
    return closed


def _abandon(table_id: int, detail: str) -> list[int]:
    updated = CasualTable.objects.filter(pk=table_id, status__in=[
        CasualTable.Status.PENDING, CasualTable.Status.RUNNING]).update(
        status=CasualTable.Status.FAILED, detail=detail[:300], finished_at=timezone.now(), seat_state={},
        answer=None, version=F("version") + 1)
    return [table_id] if updated else []
