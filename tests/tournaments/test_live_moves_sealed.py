"""Tournament tables stay sealed exactly as before live watching came (docs/web.md, "Play"):
only a casual table asks the referee for its moves as they are played. A tournament table
played by a real worker on a real referee streams no LiveMove; a plan that did not ask for
them never yields one even if a referee sent it; the public form of a move refuses any
table but a casual one."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import User

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from tests.tournaments.test_referee_contract import plan
from tournaments.models import Table, Tournament
from tournaments.play import referee as play_referee
from tournaments.services.accounts import bot_create
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_start,
)


def test_only_a_plan_that_asks_streams_moves() -> None:
    assert plan().live_moves is False and plan().request().live_moves is False
    assert plan(live_moves=True).request().live_moves is True


class _Client:
    def __init__(self, events):
        self.events = events

    def play_table(self, request):
        yield from self.events


def test_a_plan_without_live_moves_drops_any_move_the_referee_sends(monkeypatch) -> None:
    events = [org.LiveMove(game_index=0, number=1, seat=0, cards=[5], card_counts=[12, 13]),
              org.TableResult(status=org.TABLE_STATUS_COMPLETED)]
    monkeypatch.setattr(play_referee, "_client", lambda target=None: _Client(events))
    got = list(play_referee.referee_play_table(plan()))
    assert [type(e).__name__ for e in got] == ["TableOutcome"]
    got = list(play_referee.referee_play_table(plan(live_moves=True)))
    assert [type(e).__name__ for e in got] == ["LiveMove", "TableOutcome"]
    assert got[0].cards == [5] and got[0].to_move is None


@pytest.mark.django_db
def test_the_public_form_of_a_move_is_for_casual_tables_only() -> None:
    from tournaments import sealing

    move = play_referee.LiveMove.from_event(org.LiveMove(game_index=0, number=1, seat=0, cards=[5]))
    with pytest.raises(TypeError, match="only a casual table"):
        sealing.casual_public_move(table=Table(), move=move)


@pytest.mark.django_db(transaction=True)
def test_a_tournament_table_on_a_real_referee_streams_no_live_move(settings, monkeypatch) -> None:
    from referee_service import table as referee_table
    from tests.celery_helpers import isolated_celery_worker
    from tests.platform_referee import platform_referee

    streamed: list[tuple[bool, str]] = []  # (the spec's live_moves, each event's kind)
    original = referee_table.TableRunner.__init__

    def recording_init(self, spec, registry):
        original(self, spec, registry)
        put = self.events.put_nowait

        def put_nowait(event):
            kind = event.WhichOneof("event") if isinstance(event, org.TableEvent) else "failure"
            streamed.append((spec.live_moves, kind))
            put(event)

        self.events.put_nowait = put_nowait

    monkeypatch.setattr(referee_table.TableRunner, "__init__", recording_init)
    staff = User.objects.create_user("house", is_staff=True)
    organiser = User.objects.create_user("organiser", is_staff=True)
    bots = [bot_create(owner=staff, name=f"house-{p}", house_bot=p)[0] for p in ("random", "greedy")]
    tournament = tournament_create(organiser=organiser, name="Sealed cup", format="round_robin",
                                   seats_per_table=2, duplicate_sets=1, move_time_ms=500,
                                   time_bank_ms=2000, connect_deadline_s=30)
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    with platform_referee(settings), isolated_celery_worker():
        tournament_start(tournament=tournament)
        deadline = time.monotonic() + 120
        while Tournament.objects.get(pk=tournament.pk).status != "finished":
            assert time.monotonic() < deadline, "the tournament did not finish"
            time.sleep(0.2)
    kinds = [kind for _, kind in streamed]
    assert kinds.count("game") >= 2 and "result" in kinds
    assert "move" not in kinds and not any(live for live, _ in streamed)
