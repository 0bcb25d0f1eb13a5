"""A newcomer's first tournament from the web: house bots any
organiser may enter, the demo's bots usable by a newcomer's bot, the owner rule checked by
the form before the draft is saved (naming the conflict and the ways out), and
`allow_same_owner` for comparing one's own v1 and v2. Hostile cases: a bot named like a
house bot, the house account, a hand-made form post."""

from __future__ import annotations

import pytest

from tests.web.factories import make_user
from tournaments.models import Bot, Tournament
from tournaments.services.accounts import HOUSE_ACCOUNT, bot_create, house_bot_for

pytestmark = pytest.mark.django_db

FORM = {
    "format": "round_robin", "preset": "south", "options": "", "deal_format": "field",
    "seats_per_table": 4, "duplicate_sets": 1, "cycles": 1, "advance_per_table": 2,
    "move_time_ms": 500, "time_bank_ms": 5000,
}


@pytest.fixture
def anyone_organises(settings):
    settings.TIENLEN_ANYONE_ORGANISES = True


@pytest.fixture
def demo_bots():
    """The demo's own bots, registered as `make demo` registers them."""
    from demo.run import DemoConfig, demo_bots_register

    bots, _ = demo_bots_register(config=DemoConfig(bots=("heuristic", "greedy", "random", "random")))
    return [Bot.objects.get(pk=b.bot_id) for b in bots]


def newcomer(client, name: str = "newbie", bots: tuple[str, ...] = ("newbie-bot",)):
    user = make_user(name)
    client.force_login(user)
    return user, [bot_create(owner=user, name=b)[0] for b in bots]


def test_a_signed_up_user_organises_only_where_the_site_lets_everyone(client, settings) -> None:
    newcomer(client)
    assert client.get("/organise/new/").status_code == 403
    assert 'href="/organise/"' not in client.get("/").content.decode()
    assert client.post("/api/v1/tournaments/", {"name": "x", "format": "ladder"}).status_code == 403
    settings.TIENLEN_ANYONE_ORGANISES = True
    assert client.get("/organise/new/").status_code == 200
    assert 'href="/organise/"' in client.get("/").content.decode()


def test_every_demo_bot_has_an_owner_of_its_own(demo_bots) -> None:
    owners = [b.owner.username for b in demo_bots]
    assert len(set(owners)) == len(demo_bots)
    assert owners[0] == f"{demo_bots[0].name}-author"
    # Nobody signs in as a demo bot's author.
    assert not any(b.owner.has_usable_password() for b in demo_bots)


def test_my_bot_with_three_demo_bots_and_house_bots_passes_the_owner_rule(
    client, anyone_organises, demo_bots,
) -> None:
    _, (mine,) = newcomer(client)
    page = client.get("/organise/new/").content.decode()
    assert "house_bots" in page and "heuristic: plans its hand" in page
    assert f"{demo_bots[0].name} ({demo_bots[0].owner.username})" in page  # entrants show owners
    response = client.post("/organise/new/", {
        **FORM, "name": "First cup", "entrants": [mine.pk, *[b.pk for b in demo_bots[:3]]],
        "house_bots": ["greedy", "heuristic"],
    })
    t = Tournament.objects.get(name="First cup")
    assert response.status_code == 302
    names = set(t.entrants.values_list("bot__name", flat=True))
    assert names == {mine.name, *(b.name for b in demo_bots[:3]), "house-greedy", "house-heuristic"}
    # The demo's bots are other owners', whose owners let every organiser enter them
    # (`accepts_invitations`, as `make demo` sets it): entered at once, no invitation waits.
    assert all(b.accepts_invitations for b in demo_bots)
    assert not t.entrants.filter(status="invited").exists()
    html = client.post(f"/organise/{t.slug}/start/", follow=True).content.decode()
    assert "Tournament started" in html
    t.refresh_from_db()
    assert t.status == Tournament.Status.RUNNING and t.fair_play_notices == []


def test_the_house_bots_are_the_platforms_and_made_once(client, anyone_organises) -> None:
    first = house_bot_for(kind="search")
    assert (first.name, first.house_bot, first.token_hash) == ("house-search", "search", None)
    account = first.owner
    assert account.username == HOUSE_ACCOUNT and not account.is_active and not account.has_usable_password()
    assert house_bot_for(kind="search") == first
    # A house bot staff registered earlier is the one offered (not a second of its kind).
    staff = make_user("staffer", staff=True)
    theirs = bot_create(owner=staff, name="house-greedy-staff", house_bot="greedy")[0]
    assert house_bot_for(kind="greedy") == theirs
    # A revoked house bot is not entered; a fresh one is made.
    Bot.objects.filter(pk=theirs.pk).update(revoked_at="2026-01-01T00:00:00Z")
    assert house_bot_for(kind="greedy").name == "house-greedy"


def test_nobody_can_register_a_bot_that_passes_for_a_house_bot(client) -> None:
    user, _ = newcomer(client, bots=())
    html = client.post("/me/bots/new/", {"name": "House-Greedy", "description": ""}).content.decode()
    assert "kept for the platform&#x27;s house bots" in html or "kept for the platform's house bots" in html
    answer = client.post("/api/v1/bots/", {"name": "house-random"}, content_type="application/json")
    assert answer.status_code == 400 and "house bots" in str(answer.json())
    assert not Bot.objects.filter(owner=user).exists()


def test_the_house_account_cannot_be_signed_up_or_signed_in(client) -> None:
    from django.contrib.auth import get_user_model

    signup = {"username": HOUSE_ACCOUNT, "password1": "Sturdy-pass-9931", "password2": "Sturdy-pass-9931"}
    # Before the platform made it: the name is not one sign-up accepts, so nobody owns it first.
    response = client.post("/accounts/signup/", signup)
    assert response.status_code == 200 and "Enter a valid username" in response.content.decode()
    assert not get_user_model().objects.filter(username=HOUSE_ACCOUNT).exists()
    house_bot_for(kind="random")
    assert client.post("/accounts/signup/", signup).status_code == 200  # refused again
    assert get_user_model().objects.filter(username=HOUSE_ACCOUNT).count() == 1
    for password in ("", "Sturdy-pass-9931", "!"):
        client.post("/accounts/login/", {"username": HOUSE_ACCOUNT, "password": password})
        assert "_auth_user_id" not in client.session


def test_the_form_names_the_owner_conflict_and_the_way_out_before_saving(
    client, anyone_organises, demo_bots,
) -> None:
    """Comparing one's own v1 and v2 next to other owners' bots: 3 owners for tables of 4.
    Refused by the form, with who is in conflict and what to change; nothing saved."""
    _, (v1, v2) = newcomer(client, bots=("newbie-v1", "newbie-v2"))
    post = {**FORM, "name": "V1 against V2", "entrants": [v1.pk, v2.pk, demo_bots[0].pk, demo_bots[1].pk]}
    html = client.post("/organise/new/", post).content.decode()
    assert "tables of 4 need entrants of at least 4 different owners" in html
    assert "newbie enters 2 (newbie-v1, newbie-v2)" in html
    assert "add house bots" in html and "allow one owner" in html
    assert 'value="V1 against V2"' in html  # what was typed is kept
    assert not Tournament.objects.exists()
    # Two house bots give owners enough, but v1 and v2 need a table each in every round.
    html = client.post("/organise/new/", {**post, "name": "Too few", "house_bots": ["random", "greedy"]}).content.decode()
    assert "one owner has 2 of the 6 entrants; at tables of 4 an owner can have at most 1" in html
    # Way out 1: house bots fill the field (v1 and v2 stay apart).
    house = ["random", "greedy", "heuristic", "search"]
    client.post("/organise/new/", {**post, "name": "With house bots", "house_bots": house})
    assert Tournament.objects.get(name="With house bots").allow_same_owner is False
    # Way out 2: a private comparison with allow_same_owner, labelled.
    response = client.post("/organise/new/", {**post, "name": "Private", "allow_same_owner": "on", "rated": ""})
    t = Tournament.objects.get(name="Private")
    assert response.status_code == 302 and t.allow_same_owner and not t.rated
    assert "one owner's bots may share a table" in t.fair_play_notices
    assert "Tournament started" in client.post(f"/organise/{t.slug}/start/", follow=True).content.decode()


def test_my_v1_and_v2_with_house_bots_alone_need_no_exemption(client, anyone_organises) -> None:
    _, (v1, v2) = newcomer(client, bots=("solo-v1", "solo-v2"))
    response = client.post("/organise/new/", {
        **FORM, "name": "Solo", "entrants": [v1.pk, v2.pk], "house_bots": ["random", "greedy"],
    })
    assert response.status_code == 302
    t = Tournament.objects.get(name="Solo")
    assert not t.allow_same_owner
    assert "Tournament started" in client.post(f"/organise/{t.slug}/start/", follow=True).content.decode()


def test_a_knockout_conflict_is_refused_by_the_form_too(client, anyone_organises, demo_bots) -> None:
    # Two first-round tables of 4 cannot keep five bots of one owner apart.
    _, mine = newcomer(client, bots=("ko-a", "ko-b", "ko-c", "ko-d", "ko-e"))
    html = client.post("/organise/new/", {
        **FORM, "name": "KO", "format": "knockout", "entrants": [b.pk for b in [*mine, *demo_bots[:3]]],
    }).content.decode()
    assert "newbie enters 5 (ko-a, ko-b, ko-c, ko-d, ko-e)" in html and "Ways out" in html
    assert not Tournament.objects.exists()


def test_start_gives_the_same_explanation_for_a_draft_made_through_the_api(
    client, anyone_organises, demo_bots,
) -> None:
    user, (v1, v2) = newcomer(client, bots=("api-v1", "api-v2"))
    t = client.post("/api/v1/tournaments/", {"name": "Api draft", "format": "round_robin", "slug": "api-draft"},
                    content_type="application/json")
    assert t.status_code == 201
    for bot in (v1, v2, demo_bots[0], demo_bots[1]):
        assert client.post("/api/v1/tournaments/api-draft/entrants/", {"bot": bot.name},
                           content_type="application/json").status_code == 201
    html = client.post("/organise/api-draft/start/", follow=True).content.decode()
    assert "Could not start" in html and "newbie enters 2 (api-v1, api-v2)" in html and "Ways out" in html


def test_a_hand_made_post_cannot_enter_an_unknown_house_bot_or_a_revoked_bot(
    client, anyone_organises, demo_bots,
) -> None:
    _, (mine,) = newcomer(client)
    html = client.post("/organise/new/", {
        **FORM, "name": "Forged", "entrants": [mine.pk, *[b.pk for b in demo_bots[:2]]],
        "house_bots": ["random", "oracle"],
    }).content.decode()
    assert "Select a valid choice. oracle is not one of the available choices." in html
    Bot.objects.filter(pk=demo_bots[0].pk).update(revoked_at="2026-01-01T00:00:00Z")
    house = house_bot_for(kind="heuristic")
    html = client.post("/organise/new/", {
        **FORM, "name": "Forged", "entrants": [mine.pk, demo_bots[0].pk, house.pk],
        "house_bots": ["random", "greedy"],
    }).content.decode()
    assert "Select a valid choice" in html  # revoked bots and house-bot rows are not entrants
    assert not Tournament.objects.exists()
