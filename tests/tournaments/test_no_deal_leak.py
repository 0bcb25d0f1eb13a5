"""An anonymous client cannot compute any unplayed deal from anything public.

The audit computed every hand of pending tables from the API (the tournament seed and
`<seed>/r1/t1` table seeds were published, game seeds were `<table seed>/game/i`). Here a
crawler walks every API route and page — every URL pattern instantiated with every
tournament, game, bot and pool, then every link found in the answers — while a round
robin has played and pending tables, a field-duplicate round robin has recorded games
whose deals another table has yet to play, a knockout waits for its final, a ladder has a table still to play, and a
reproducible run is under way. Then, for every deal not yet
revealed:

* its seed, and each of its hands (as a JSON list or as text), appear in no answer;
* no string in any answer deals it, neither as a seed nor through the old derivations
  (`<s>/game/<i>`, `<s>/set/<i>`, `<s>/r<r>/t<t>/game/<i>`);
and the organiser's seed of the reproducible run appears nowhere.

A second test does the same against a round robin played by a real Celery worker through
a real referee, with four tables waiting for an absent bot.
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from bots_sdk.rules.deal import shuffled_deck
from tests.tournaments.conftest import running_round_robin
from tests.tournaments.crawler import crawl
from tests.tournaments.local_play import table_play_locally
from tournaments.models import Deal, Game, Table, Tournament
from tournaments.services.accounts import bot_create
from tournaments.services.ladder import ladder_tick
from tournaments.services.tables import table_complete
from tournaments.services.tournaments import (
    tournament_cancel,
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
    tournament_start,
)

CARD_RANKS = ["3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A", "2"]


def card(c: int) -> str:
    return CARD_RANKS[c // 4] + "SCDH"[c % 4]


def hands_of(seed: str, players: int) -> list[list[int]]:
    deck = shuffled_deck(seed)
    return [sorted(deck[13 * s: 13 * s + 13]) for s in range(players)]


# --- the checks ------------------------------------------------------------------------------------


def sealed_deals() -> list[tuple[Deal, int, list[list[int]]]]:
    """Every deal not revealed, with its table size and its hands."""
    players = {}
    for table in Table.objects.all().prefetch_related("seats"):
        players[(table.tournament_id, table.deal_group)] = table.seats.count()
    out = []
    for deal in Deal.objects.filter(revealed_at__isnull=True):
        n = players.get((deal.tournament_id, deal.group), 4)
        out.append((deal, n, hands_of(deal.seed, n)))
    return out


def candidates(bodies: list[str]) -> set[str]:
    """Every string an attacker could try as a seed."""
    found: set[str] = set()
    for body in bodies:
        found.update(re.findall(r"[A-Za-z0-9][A-Za-z0-9_.:/+-]{3,127}", body))
        try:
            doc = json.loads(body)
        except ValueError:
            continue
        stack = [doc]
        while stack:  # every JSON string value, whole
            item = stack.pop()
            if isinstance(item, dict):
                stack += item.values()
            elif isinstance(item, list):
                stack += item
            elif isinstance(item, str) and item:
                found.add(item)
    return found


def derivations(token: str, games: int) -> list[str]:
    """The token, and the seeds the old scheme derived from a tournament or table seed."""
    out = [token]
    out += [f"{token}/game/{i}" for i in range(games)] + [f"{token}/set/{i}" for i in range(games)]
    if len(token) >= 8 and "/" not in token:  # a tournament seed: its tables' game seeds
        out += [f"{token}/r{r}/t{t}/game/{i}" for r in (1, 2) for t in (1, 2, 3) for i in range(games)]
    return out


def assert_no_sealed_deal_is_computable(pages: dict[str, tuple[int, str, dict]], secrets_: list[str]) -> None:
    sealed = sealed_deals()
    assert sealed, "the scenario must leave deals unplayed"
    bodies = [body for _, body, _ in pages.values()]
    everything = "\n".join(bodies)
    for deal, _n, hands in sealed:
        assert deal.seed not in everything, f"the seed of sealed {deal} is published"
        for hand in hands:
            names = [card(c) for c in hand]
            for text in (json.dumps(names), json.dumps(names, separators=(",", ":")), " ".join(names)):
                assert text not in everything, f"a hand of sealed {deal} is published"
    for secret in secrets_:
        assert secret not in everything, "the organiser's seed is published"
    targets: dict[tuple[int, ...], Deal] = {}
    for deal, n, hands in sealed:
        targets[tuple(c for hand in hands for c in hand) + (n,)] = deal
    sizes = {n for _, n, _ in sealed}
    games = max(t.games_planned for t in Table.objects.all())
    for token in candidates(bodies):
        for seed in derivations(token, games):
            deck = shuffled_deck(seed)
            for n in sizes:
                key = tuple(c for s in range(n) for c in sorted(deck[13 * s: 13 * s + 13])) + (n,)
                assert key not in targets, f"{seed!r} (from a public answer) deals sealed {targets[key]}"


# --- scenario 1: every format, in precise states ---------------------------------------------------


@pytest.mark.django_db
def test_no_public_answer_lets_anyone_compute_an_unplayed_deal(organiser, bots, house_bots) -> None:
    # A round robin of independent deals with one table played, one half played and three
    # pending.
    rr = running_round_robin(organiser, bots[:5], name="Round robin", seats_per_table=4, duplicate_sets=1,
                             deal_format="independent")
    first, second = rr.tables.order_by("number")[:2]
    table_play_locally(table_id=first.pk)
    table_complete(table_id=first.pk)
    table_play_locally(table_id=second.pk, games=2)
    # One in the default format (field duplicates): a table has played half the deals its
    # group's other table has yet to play, so its recorded games are sealed too (house bots:
    # remote bots never share a deal across tables).
    field = running_round_robin(organiser, house_bots, name="Field", seats_per_table=4, duplicate_sets=1)
    assert field.deal_format == "field"
    ahead = field.tables.order_by("number").first()
    assert field.tables.filter(deal_group=ahead.deal_group).count() == 2
    table_play_locally(table_id=ahead.pk, games=2)
    # A knockout whose first round is over: the final exists and waits.
    ko = tournament_create(organiser=organiser, name="Knockout", format="knockout",
                                    seats_per_table=4, advance_per_table=2, duplicate_sets=1)
    for bot in bots:
        tournament_entrant_add(tournament=ko, bot=bot)
    Tournament.objects.filter(pk=ko.pk).update(status="scheduled")
    tournament_schedule(tournament_id=ko.pk)
    for table in ko.tables.filter(round=1):
        table_play_locally(table_id=table.pk)
        table_complete(table_id=table.pk)
    final = ko.tables.get(round=2)
    assert final.status == Table.Status.PENDING
    # A ladder with one table played and one to play.
    ladder = tournament_create(organiser=organiser, name="Ladder", format="ladder",
                                        seats_per_table=2, ladder_tables_per_tick=2, duplicate_sets=1)
    for bot in bots[:4]:
        tournament_entrant_add(tournament=ladder, bot=bot)
    tournament_start(tournament=ladder)
    tournament_schedule(tournament_id=ladder.pk)
    import random

    played, waiting = ladder_tick(tournament=ladder, connected={str(b.pk): "1" for b in bots[:4]},
                                           rng=random.Random(3))
    table_play_locally(table_id=played)
    table_complete(table_id=played)
    # A reproducible run (the organiser knows its deals; nobody else may), half played.
    repro = running_round_robin(organiser, bots[4:8], name="Repro", seats_per_table=4, duplicate_sets=2,
                                seed="the organiser's secret")
    table_play_locally(table_id=repro.tables.get().pk, games=3)
    assert Table.objects.get(pk=waiting).status == Table.Status.PENDING

    pages = crawl(Client())
    # The walk reached every kind of answer, including the sealed ones.
    assert any(u.startswith("/api/v1/tournaments/") and u.endswith("/deals/") for u in pages)
    assert any(status == 403 for status, _, _ in pages.values())
    assert f"/tournaments/{ko.slug}/" in pages and f"/api/v1/tournaments/{ladder.slug}/tables/" in pages
    assert_no_sealed_deal_is_computable(pages, ["the organiser's secret"])
    # Every API answer about the reproducible run says so.
    repro_games = {str(g) for g in Game.objects.filter(table__tournament=repro).values_list("id", flat=True)}
    for url, (status, _body, headers) in pages.items():
        about = f"/{repro.slug}/" in url or any(f"/games/{g}/" in url for g in repro_games)
        if not about or status not in (200, 403):
            continue
        if headers.get("Content-Type", "").startswith("text/html"):  # a page: in its text
            assert "reproducible: deals known to the organiser" in _body, url
        else:  # an API response, a JSON document, a download: in the header
            assert headers.get("Tienlen-Fair-Play") == "reproducible: deals known to the organiser", url


# --- scenario 2: a real worker and referee ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_pending_tables_of_a_worker_played_round_robin_leak_nothing(django_user_model, settings, caplog) -> None:
    """House bots play through a real referee and Celery worker; an absent remote bot keeps
    four of the five tables waiting. Nothing public computes their deals, and no log line
    at INFO (referee, worker, services) shows a deal seed, played or not."""
    import logging

    from tests.needs import need_postgresql

    need_postgresql("the worker and the test write the tables at once; SQLite's shared "
                    "in-memory test database locks them ('database table is locked')")

    caplog.set_level(logging.INFO)
    referee_log = logging.getLogger("referee_service")  # it may not propagate (logs.configure)
    referee_level = referee_log.level
    referee_log.addHandler(caplog.handler)
    referee_log.setLevel(logging.INFO)
    from referee_service.server import RefereeThread
    from tests.celery_helpers import isolated_celery_worker
    from tests.tournaments.test_worker import ORGANIZER_TOKEN, wait_for
    from tournaments.token_store import DjangoTokenStore

    thread = RefereeThread(DjangoTokenStore(), organizer_token=ORGANIZER_TOKEN).start()
    settings.REFEREE_TARGET = thread.target
    settings.REFEREE_ORGANIZER_TOKEN = ORGANIZER_TOKEN
    stopped = False
    try:
        # One worker thread per table: the four tables of the absent bot wait for it at
        # the referee while the house table plays.
        with isolated_celery_worker(concurrency=5):
            staff = django_user_model.objects.create_user("house", is_staff=True)
            organiser = django_user_model.objects.create_user("organiser", is_staff=True)
            author = django_user_model.objects.create_user("author")
            entrants = [bot_create(owner=staff, name=f"h{i}", house_bot=p)[0]
                        for i, p in enumerate(["random", "greedy", "heuristic", "greedy"])]
            absent, _ = bot_create(owner=author, name="absent")
            t = tournament_create(organiser=organiser, name="Worker cup", format="round_robin",
                                           seats_per_table=4, duplicate_sets=1, connect_deadline_s=600)
            for bot in [*entrants, absent]:
                tournament_entrant_add(tournament=t, bot=bot)
            tournament_start(tournament=t)
            wait_for(lambda: Table.objects.filter(tournament=t, status="done").count() == 1, what="the house table")
            done = Table.objects.get(tournament=t, status="done")
            waiting = Table.objects.filter(tournament=t).exclude(pk=done.pk)
            assert waiting.count() == 4 and not Game.objects.filter(table__in=waiting).exists()
            # The played table's deals are revealed, and verify.
            assert not Deal.objects.filter(tournament=t, group=done.deal_group, revealed_at__isnull=True).exists()
            pages = crawl(Client())
            assert_no_sealed_deal_is_computable(pages, [])
            from bots_sdk.fairplay import verify

            for game in Game.objects.filter(table=done):
                assert verify(json.loads(pages[f"/api/v1/games/{game.pk}/proof/"][1])).ok
            logged = caplog.text
            assert "table_finished" in logged or "game_finished" in logged  # the referee's INFO lines are here
            assert not [d.seed for d in Deal.objects.filter(tournament=t) if d.seed in logged]
            tournament_cancel(tournament=t, reason="end of test")
            thread.stop()  # ends the tables' waits at once, so the worker stops quickly
            stopped = True
    finally:
        referee_log.removeHandler(caplog.handler)
        referee_log.setLevel(referee_level)
        if not stopped:
            thread.stop()
