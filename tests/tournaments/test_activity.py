"""What a tournament is doing now (tournaments.selectors.tournaments.Activity): "Running" is
shown only for what runs. A ladder nothing ticks says so, with what to start; one whose
last tick started no table says why; a scheduled start whose time passed long ago says
nothing started it — on its page, in the lists, in progress.json and in the API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from tournaments.models import Table, Tournament
from tournaments.selectors.tournaments import (
    ACTIVITY_STATES,
    tick_overdue_s,
    tournament_activity,
)
from tournaments.services.accounts import bot_create, house_bot_for
from tournaments.services.ladder import ladder_tick
from tournaments.services.tournaments import tournament_create, tournament_entrant_add

pytestmark = pytest.mark.django_db


@pytest.fixture
def organiser():
    return User.objects.create_user("ladder-boss", password="pw-for-tests-123", is_staff=True)


def ladder(organiser, *, bots=(), name="Ladder", **row) -> Tournament:
    t = tournament_create(organiser=organiser, name=name, format="ladder", seats_per_table=4)
    for bot in bots:
        tournament_entrant_add(tournament=t, bot=bot)
    Tournament.objects.filter(pk=t.pk).update(status=Tournament.Status.RUNNING, **row)
    return Tournament.objects.get(pk=t.pk)


def house_four():
    return [house_bot_for(kind=k) for k in ("random", "greedy", "heuristic", "search")]


def seen_everywhere(client, t: Tournament) -> dict[str, str]:
    """The activity as the page, the Organise list, progress.json and the API show it."""
    client.force_login(t.organiser)
    page = client.get(f"/tournaments/{t.slug}/").content.decode()
    listing = client.get("/organise/").content.decode()
    progress = client.get(f"/tournaments/{t.slug}/progress.json").json()
    api = client.get(f"/api/v1/tournaments/{t.slug}/").json()
    api_progress = client.get(f"/api/v1/tournaments/{t.slug}/progress/").json()
    assert progress == api_progress
    assert api["activity"] == progress["activity"] and api["status_reason"] == progress["reason"]
    return {"page": page, "list": listing, "state": progress["activity"], "label": progress["activity_label"],
            "reason": progress["reason"]}


def test_a_ladder_nothing_ticks_says_so_instead_of_running(organiser, client, settings) -> None:
    settings.TIENLEN_TICK_SECONDS = 30
    long_ago = timezone.now() - timedelta(minutes=5)
    t = ladder(organiser, bots=house_four(), started_at=long_ago)
    seen = seen_everywhere(client, t)
    assert (seen["state"], seen["label"]) == ("not_ticking", "Not ticking")
    assert seen["reason"].startswith("Nobody ticks this ladder: no scheduler tick (every 30 s) has looked at it since it started, 5 min ago.")
    assert "celery -A tienlen_site beat" in seen["reason"]
    assert ">Not ticking</span>" in seen["page"] and "Nobody ticks this ladder" in seen["page"]
    assert ">Running</span>" not in seen["page"] and ">Running</span>" not in seen["list"]
    assert ">Not ticking</span>" in seen["list"] and "not scheduled" not in seen["list"]
    assert "0 of 0 tables" not in seen["page"] and "Ladder: <span" in seen["page"]
    # A tick (what beat runs) looks at it and starts a table of the four house bots.
    assert len(ladder_tick(tournament=t, connected={})) == 1
    seen = seen_everywhere(client, t)
    assert (seen["state"], seen["reason"]) == ("running", "")
    assert ">Running</span>" in seen["page"]
    # Beat stops: two ticks and the margin later, the page says so again.
    Tournament.objects.filter(pk=t.pk).update(ticked_at=timezone.now() - timedelta(seconds=95))
    Table.objects.filter(tournament=t).update(status=Table.Status.DONE)
    seen = seen_everywhere(client, t)
    assert seen["state"] == "not_ticking" and "(95 s ago" in seen["reason"]
    assert "No new table will start." in seen["reason"]


def test_a_ladder_that_cannot_start_a_table_waits_and_says_why(organiser, client) -> None:
    owners = [User.objects.create_user(f"owner-{i}") for i in range(6)]
    bots = [bot_create(owner=o, name=f"lad-{i}")[0] for i, o in enumerate(owners)]
    t = ladder(organiser, bots=bots, started_at=timezone.now())
    assert seen_everywhere(client, t)["state"] == "starting"
    assert ladder_tick(tournament=t, connected={str(b.pk): "1" for b in bots[:2]}) == []
    seen = seen_everywhere(client, t)
    assert (seen["state"], seen["label"]) == ("waiting", "Waiting")
    assert seen["reason"] == (
        "Waiting for bots: 2 of 6 active entrants are connected and free (0 playing, 4 not connected); "
        "a table needs 4."
    )
    assert ">Waiting</span>" in seen["page"] and ">Waiting</span>" in seen["list"]
    assert "2 of 6 active entrants are connected" in seen["list"]
    assert ">Running</span>" not in seen["page"] + seen["list"]


def test_a_scheduled_start_says_when_and_says_when_nothing_started_it(organiser, client, settings) -> None:
    settings.TIENLEN_TICK_SECONDS = 30
    t = tournament_create(organiser=organiser, name="Later", format="round_robin", seats_per_table=4)
    at = timezone.now() + timedelta(hours=1)
    Tournament.objects.filter(pk=t.pk).update(status=Tournament.Status.SCHEDULED, starts_at=at)
    seen = seen_everywhere(client, Tournament.objects.get(pk=t.pk))
    assert (seen["state"], seen["reason"]) == ("scheduled", f"Starts at {at:%Y-%m-%d %H:%M:%S} UTC.")
    Tournament.objects.filter(pk=t.pk).update(starts_at=timezone.now() - timedelta(seconds=20))
    assert seen_everywhere(client, t)["state"] == "starting"  # the next tick starts it
    late = timezone.now() - timedelta(minutes=10)
    Tournament.objects.filter(pk=t.pk).update(starts_at=late)
    seen = seen_everywhere(client, t)
    assert (seen["state"], seen["label"]) == ("not_started", "Not started")
    assert seen["reason"].startswith(f"Its start time, {late:%Y-%m-%d %H:%M:%S} UTC, passed 10 min ago and nothing has started it")
    assert "celery -A tienlen_site beat" in seen["page"]


def test_the_lists_keep_their_query_count(organiser, client, django_assert_num_queries) -> None:
    for i in range(3):
        ladder(organiser, name=f"L{i}", started_at=timezone.now() - timedelta(hours=1))
    client.force_login(organiser)
    client.get("/organise/")
    with django_assert_num_queries(3):  # session, user, the tournaments with their counts
        html = client.get("/organise/").content.decode()
    assert html.count(">Not ticking</span>") == 3


NOW = timezone.now()


@given(
    status=st.sampled_from(Tournament.Status.values),
    fmt=st.sampled_from(Tournament.Format.values),
    ticked_ago=st.one_of(st.none(), st.floats(0, 10_000)),
    started_ago=st.one_of(st.none(), st.floats(0, 10_000)),
    starts_in=st.one_of(st.none(), st.floats(-10_000, 10_000)),
    open_tables=st.integers(0, 5),
    reason=st.sampled_from(["", "Waiting for bots: 1 of 4 ..."]),
)
def test_running_is_shown_only_for_what_runs(status, fmt, ticked_ago, started_ago, starts_in, open_tables, reason) -> None:
    """Whatever the row: "Running" only for a running tournament; for a ladder only when a
    tick looked at it recently and either a table is open or the tick found no reason to
    wait; a ladder nothing ticked for two ticks and the margin is never "Running"."""
    def ago(s):
        return None if s is None else NOW - timedelta(seconds=s)

    t = Tournament(
        status=status, format=fmt, ticked_at=ago(ticked_ago), started_at=ago(started_ago),
        starts_at=None if starts_in is None else NOW + timedelta(seconds=starts_in), status_reason=reason,
    )
    activity = tournament_activity(tournament=t, open_tables=open_tables, now=NOW)
    assert activity.state in ACTIVITY_STATES and activity.label
    overdue = tick_overdue_s()
    if activity.label == "Running":
        assert activity.state == "running" and status == Tournament.Status.RUNNING
        if fmt == Tournament.Format.LADDER:
            assert ticked_ago is not None and ticked_ago <= overdue
            assert open_tables or not reason
    last = ticked_ago if ticked_ago is not None else started_ago
    if status == Tournament.Status.RUNNING and fmt == Tournament.Format.LADDER and last is not None and last > overdue:
        assert activity.state == "not_ticking" and "Nobody ticks this ladder" in activity.reason
    if status == Tournament.Status.SCHEDULED and starts_in is not None and -starts_in > overdue:
        assert activity.state == "not_started" and "nothing has started it" in activity.reason
