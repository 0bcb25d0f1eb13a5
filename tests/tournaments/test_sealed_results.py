"""A game's result is sealed until its deal is revealed (docs/fair-play.md).

In the default format (field duplicates) the tables of a deal group play the same deals.
A table that is ahead records games whose deals the other tables have still to play; their
results (places, points, strikes, forfeits, payments, rating changes, a table's totals and
who advances) would tell those tables something about the hands they are about to be
dealt: a stuck-card penalty says a seat held 2s or a bomb. So nothing public may depend on
the play of an unrevealed deal.

The test here records one more game on a sealed deal and has an anonymous crawler read
the whole public site — every API route and page, the downloads (CSV exports, the replay
archive, read member by member), the progress document and the live stream — before and
after. Nothing may differ except counts of games played; the sealed
game's own addresses answer 403 exactly as another sealed game's do. Then the same with a
knockout table that plays its last game ahead of its group and closes (its advancement
must stay sealed). Finally the other tables play the deals: the results appear and the
games are rated in plan order, as `recompute_ratings` reproduces.

A second walk checks the site against tournaments.sealing itself: every address that
serves one game answers as `sealing.game_revealed` says (the revealed game's result,
replay, seed and rating change show; the sealed one's do not, and no other page links to
it or counts it), and the standings sum exactly the games `sealing.revealed` lets through.
"""

from __future__ import annotations

import io
import json
import re
import zlib
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.test import AsyncClient, Client

from bots_sdk.rules.notes import with_notes, without_notes
from tests.tournaments.conftest import running_round_robin
from tests.tournaments.crawler import crawl, game_routes
from tests.tournaments.local_play import table_play_locally
from tournaments import sealing
from tournaments.models import Bot, Entrant, Game, GameSeat, RatingChange, Replay, Table, Tournament
from tournaments.services.tables import table_complete
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
)

pytestmark = pytest.mark.django_db

# JSON keys that count games played (and what follows from the count alone).
COUNT_KEYS = {"games_done", "games_recorded", "fraction", "percent", "games_withheld", "tables_running",
              "attempts"}  # (how often a worker started the table: here, once per local play)
# When the table ahead closes: that it is done, and when.
CLOSE_KEYS = {"tables_done"}
TABLE_CLOSE_KEYS = {"status", "finished_at"}

# The same in the pages: each pattern is a count of games played (or, on close, a table's
# status), nothing else.
COUNT_PATTERNS = [
    r'aria-valuenow="[^"]*"', r'style="width: [^"]*%"',
    r'<span id="games-done">\d+</span>', r' · <span id="tables-running">\d+</span> playing now',
    r'title="\d+ of \d+ games"', r"\d+ / \d+ games",
    r'<td class="num">\d+/\d+</td>',  # a table's games recorded / planned
    r"(</span>|<count>) \d+/\d+",  # the same in the bracket, after its status badge
    r' <span id="games-sealed">[^<]*</span> \(<a href="/fair-play/">why</a>\)\.',
    r"; \d+ more once their deals are revealed",
]
CLOSE_PATTERNS = [
    r'<span id="tables-done">\d+</span>',
    r'(?<=<td>)<span class="badge \w+">[^<]*</span>( <span class="small muted" title="[^"]*">result sealed</span>)?',
    r'(?<=Table \d · )<span class="badge \w+">[^<]*</span>',
    r' · <span title="[^"]*">result sealed</span>',
]
ALWAYS = [  # neither results nor counts: the clock and per-request tokens
    (r"\d+\xa0(minute|hour|day)s?", "<when>"),
    (r'name="csrfmiddlewaretoken" value="[^"]*"', "<csrf>"),
]


def _masked_json(doc: Any, closing: bool, in_table: bool = False) -> Any:
    if isinstance(doc, dict):
        table = "games_planned" in doc and "games_recorded" in doc
        masked = {}
        for key, value in doc.items():
            if key in COUNT_KEYS or (closing and key in CLOSE_KEYS) or (closing and table and key in TABLE_CLOSE_KEYS):
                masked[key] = "<count>"
            else:
                masked[key] = _masked_json(value, closing, table)
        return masked
    if isinstance(doc, list):
        return [_masked_json(item, closing, in_table) for item in doc]
    return doc


def masked(body: str, closing: bool) -> Any:
    try:
        return _masked_json(json.loads(body), closing)
    except ValueError:
        pass
    for pattern in (CLOSE_PATTERNS if closing else []) + COUNT_PATTERNS:
        body = re.sub(pattern, "<count>", body)
    for pattern, repl in ALWAYS:
        body = re.sub(pattern, repl, body)
    return re.sub(r"(<count>)+", "<count>", body)


def live_first_event(slug: str) -> dict:
    """The first progress document of the live (server-sent events) stream."""

    async def first() -> dict:
        response = await AsyncClient().get(f"/tournaments/{slug}/live/")
        assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
        stream = response.streaming_content
        try:
            async for chunk in stream:
                if chunk.decode().startswith("data: "):
                    return json.loads(chunk.decode().removeprefix("data: "))
        finally:
            await stream.aclose()
        raise AssertionError("the stream sent no progress")

    return async_to_sync(first)()


def public_view() -> dict[str, tuple[int, str]]:
    """Everything an anonymous client can read: url -> (status, body); the live streams too."""
    cache.clear()  # the home page's notable games are cached for 30 s
    pages = {url: (status, body) for url, (status, body, _headers) in crawl(Client()).items()}
    for slug in Tournament.objects.values_list("slug", flat=True):
        pages[f"/tournaments/{slug}/live/"] = (200, json.dumps(live_first_event(slug)))
    return pages


def game_urls(game: Game) -> list[str]:
    return [f"/api/v1/games/{game.pk}/", f"/api/v1/games/{game.pk}/replay/", f"/api/v1/games/{game.pk}/proof/",
            f"/games/{game.pk}/", f"/games/{game.pk}/replay.json"]


def as_any_game(body: str, game: Game) -> str:
    """A sealed game's answer with what names the game replaced: two sealed games' answers
    are then equal only if neither shows anything of its result."""
    pk, deal = game.pk, game.deal
    for old, new in ((deal.commitment, "<commitment>"), (f"Game {pk} ·", "Game <id> ·"), (f"Game #{pk} ", "Game #<id> "),
                     (f"game {pk} is", "game <id> is"), (f"/games/{pk}/", "/games/<id>/"),
                     (f"· game {game.index + 1}</p>", "· game <n></p>"),
                     (f"(group {deal.group}, deal {deal.index})", "(group <g>, deal <d>)")):
        body = body.replace(old, new)
    return body


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two masked answers first differ (a JSON path, or the text around it)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            found = first_difference(a.get(key), b.get(key), f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    if a == b:
        return None
    if isinstance(a, str) and isinstance(b, str):
        at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        return f"{path}: {a[max(0, at - 80):at + 80]!r} became {b[max(0, at - 80):at + 80]!r}"
    return f"{path}: {a!r} became {b!r}"


def assert_only_counts_differ(before: dict, after: dict, *, new: Game, like: Game, closing: bool = False) -> None:
    new_urls = set(game_urls(new))
    assert set(after) - set(before) == new_urls, "the walk found different pages (a link to a sealed result?)"
    for url in new_urls:  # the new game answers as another sealed game of its table does
        status, body = after[url]
        ref_status, ref_body = after[url.replace(f"/{new.pk}/", f"/{like.pk}/")]
        assert status == ref_status == 403, url
        assert as_any_game(body, new) == as_any_game(ref_body, like), url
    for url in sorted(before):
        status, body = before[url]
        assert after[url][0] == status, url
        difference = first_difference(masked(body, closing), masked(after[url][1], closing))
        assert difference is None, f"{url} shows something of a sealed game: {difference}"


def test_a_game_on_a_sealed_deal_changes_nothing_public_but_the_count_of_games_played(organiser, house_bots) -> None:
    # A rated round robin in the default format: round 1's two tables form a deal group
    # (house bots: isolated, so they may share deals across tables).
    # Table a has played deals 0 and 1, table b deal 0 only: deal 0 is revealed, and a's
    # game on deal 1 is sealed.
    bots = house_bots
    rr = running_round_robin(organiser, bots, name="Field cup", seats_per_table=4, duplicate_sets=1)
    assert rr.deal_format == "field" and rr.rated
    a = rr.tables.order_by("round", "number").first()
    b = rr.tables.exclude(pk=a.pk).get(deal_group=a.deal_group)
    table_play_locally(table_id=a.pk, games=2)
    table_play_locally(table_id=b.pk, games=1)
    # A knockout whose first round is one deal group of two tables: ka ahead by one deal.
    ko = tournament_create(organiser=organiser, name="Field knockout", format="knockout",
                                    seats_per_table=4, advance_per_table=2, duplicate_sets=1)
    for bot in bots:
        tournament_entrant_add(tournament=ko, bot=bot)
    Tournament.objects.filter(pk=ko.pk).update(status="scheduled")
    tournament_schedule(tournament_id=ko.pk)
    ka, kb = ko.tables.order_by("number")
    assert ka.deal_group == kb.deal_group and ka.games_planned == 4
    table_play_locally(table_id=ka.pk, games=3)
    table_play_locally(table_id=kb.pk, games=2)

    # 1. Table a plays deal 2, which b has not played: only counts of games change.
    before = public_view()
    table_play_locally(table_id=a.pk, games=1)
    new, like = Game.objects.get(table=a, index=2), Game.objects.get(table=a, index=1)
    after = public_view()
    assert_only_counts_differ(before, after, new=new, like=like)

    # 2. Knockout table ka plays its last deal ahead of kb and closes: who advances (and
    # its points, places, forfeits, why it closed) stays sealed; that it is done does not.
    before = after
    table_play_locally(table_id=ka.pk, games=1)
    table_complete(table_id=ka.pk)
    assert Table.objects.get(pk=ka.pk).status == Table.Status.DONE
    assert ka.seats.filter(advanced=True).count() == 2  # decided, not shown
    after = public_view()
    assert_only_counts_differ(before, after, new=Game.objects.get(table=ka, index=3),
                              like=Game.objects.get(table=ka, index=2), closing=True)
    bracket = json.loads(after[f"/api/v1/tournaments/{ko.slug}/bracket/"][1])
    seats = bracket["rounds"][0]["tables"][0]["seats"]
    assert bracket["rounds"][0]["tables"][0]["results_public"] is False
    assert all(s["points"] is s["place"] is s["advanced"] is s["forfeited"] is None for s in seats)

    # The sealed games were not rated either: the games rated are those on revealed deals,
    # in plan order.
    def rated(t: Tournament) -> list[tuple[int, int, int]]:
        return list(Game.objects.filter(table__tournament=t, rating_seq__isnull=False)
                    .order_by("rating_seq").values_list("table__round", "table__number", "index"))

    assert rated(rr) == [(1, a.number, 0)]
    assert rated(ko) == [(1, ka.number, 0), (1, ka.number, 1)]

    # 3. The other tables play the deals: the results, advancement and ratings appear.
    table_play_locally(table_id=b.pk, games=2)
    table_play_locally(table_id=kb.pk)
    table_complete(table_id=kb.pk)
    client = Client()
    detail = client.get(f"/api/v1/games/{new.pk}/")
    assert detail.status_code == 200 and detail.json()["points"] == new.points
    bracket = client.get(f"/api/v1/tournaments/{ko.slug}/bracket/").json()
    first_round = bracket["rounds"][0]["tables"]
    assert all(t["results_public"] for t in first_round)
    assert sorted(s["bot_name"] for t in first_round for s in t["seats"] if s["advanced"]) == sorted(
        bracket["rounds"][1]["tables"][0]["seats"][i]["bot_name"] for i in range(4))
    assert rated(rr) == [(1, a.number, i) for i in range(3)]  # b's games wait for a's last
    assert rated(ko) == [(1, ka.number, i) for i in range(4)] + [(1, kb.number, i) for i in range(4)]
    sequence = list(RatingChange.objects.order_by("seq").values_list("game_id", flat=True))
    assert len(sequence) == 4 * (3 + 8)
    out = io.StringIO()
    call_command("recompute_ratings", "--pool", rr.pool.slug, stdout=out)
    assert "changed 0 ratings, max difference 0" in out.getvalue()


def _json(body: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _game_ids_in(doc: Any) -> set[int]:
    """Every game id a JSON answer mentions (keys "game" and "game_id", and the ids of
    game lists)."""
    found: set[int] = set()
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key in ("game", "game_id") and isinstance(value, int):
                found.add(value)
            found |= _game_ids_in(value)
        if "finishing_order" in doc and isinstance(doc.get("id"), int):
            found.add(doc["id"])
    elif isinstance(doc, list):
        for item in doc:
            found |= _game_ids_in(item)
    return found


def test_every_address_of_a_game_answers_as_the_sealing_module_says(organiser, house_bots) -> None:
    # Table a plays deals 0 and 1, table b (the same deal group) deal 0: a's first game is
    # revealed and rated, its second sealed.
    rr = running_round_robin(organiser, house_bots, name="Sealing cup", seats_per_table=4, duplicate_sets=1)
    a = rr.tables.order_by("round", "number").first()
    b = rr.tables.exclude(pk=a.pk).get(deal_group=a.deal_group)
    table_play_locally(table_id=a.pk, games=2)
    table_play_locally(table_id=b.pk, games=1)
    games = list(Game.objects.select_related("deal").order_by("id"))
    shown = Game.objects.select_related("deal").get(table=a, index=0)
    hidden = Game.objects.select_related("deal").get(table=a, index=1)
    assert sealing.game_revealed(shown) and not sealing.game_revealed(hidden)
    assert RatingChange.objects.filter(game=shown).exists() and not RatingChange.objects.filter(game=hidden).exists()

    pages = public_view()
    routes = game_routes()
    assert {"/games/<game_id>/", "/games/<game_id>/replay.json", "/api/v1/games/<game_id>/",
            "/api/v1/games/<game_id>/replay/", "/api/v1/games/<game_id>/proof/"} <= set(routes)

    # 1. Each game's own addresses: 200 with its result if revealed, 403 with none of it if not.
    own: dict[int, set[str]] = {}
    for game in games:
        seats = list(game.seats.order_by("seat"))
        replay_text = Replay.objects.get(game=game).decoded_text()
        own[game.pk] = {route.replace("<game_id>", str(game.pk)) for route in routes}
        for url in own[game.pk]:
            status, body = pages[url]
            if sealing.game_revealed(game):
                assert status == 200, url
                doc = _json(body)
                if url.endswith("/replay.json"):
                    assert body == replay_text, url
                elif url.endswith("/replay/"):
                    assert doc == Replay.objects.get(game=game).read(), url
                elif url.endswith("/proof/"):
                    assert doc["deal"]["seed"] == game.deal.seed and doc["game"]["points"] == game.points, url
                elif doc is not None:
                    assert doc["points"] == game.points and doc["deal"]["seed"] == game.deal.seed, url
                else:  # the page: every seat's place and seat number in the result table
                    assert all(f"<td>{s.place}</td><td>{s.seat}</td>" in body for s in seats), url
            else:
                assert status == 403, url
                assert game.deal.seed not in body, url
                assert replay_text not in body and '"moves"' not in body and '"points"' not in body, url
                assert not any(f"<td>{s.place}</td><td>{s.seat}</td>" in body for s in seats), url

    # 2. Nothing else links to, lists or rates a sealed game, or shows its deal's seed;
    # the revealed game is listed and rated.
    for url, (_status, body) in pages.items():
        for game in games:
            if sealing.game_revealed(game) or url in own[game.pk]:
                continue
            assert f"/games/{game.pk}/" not in body, f"{url} links to sealed game {game.pk}"
            assert game.deal.seed not in body, f"{url} shows the seed of sealed game {game.pk}'s deal"
            assert game.pk not in _game_ids_in(_json(body)), f"{url} mentions sealed game {game.pk}"
    listed = f"/games/{shown.pk}/"
    assert listed in pages[f"/tournaments/{rr.slug}/games/"][1]
    assert shown.pk in _game_ids_in(_json(pages[f"/api/v1/tournaments/{rr.slug}/games/"][1]))
    bot = shown.seats.select_related("bot").first().bot
    history = pages[f"/api/v1/bots/{bot.name}/ratings/{rr.pool.slug}/"][1]
    assert _game_ids_in(_json(history)) == {shown.pk, *(g.pk for g in games if sealing.game_revealed(g)
                                                        and g.seats.filter(bot=bot).exists())}

    # The downloads (crawled like every route with a slug): the games CSV lists exactly the
    # revealed games; the replay archive holds each revealed replay as /games/<id>/replay.json
    # serves it, not the sealed one, and counts the sealed games without naming them.
    revealed_ids = {g.pk for g in games if sealing.game_revealed(g) and g.table.tournament_id == rr.pk}
    csv_ids = {int(line.split(",", 1)[0]) for line in pages[f"/api/v1/tournaments/{rr.slug}/games.csv"][1].splitlines()[1:]}
    assert csv_ids == revealed_ids
    archive = _json(pages[f"/api/v1/tournaments/{rr.slug}/replays.zip"][1])
    assert {name for name in archive if name != "manifest.json"} == {f"replays/tienlen-game-{i}.json" for i in revealed_ids}
    assert archive[f"replays/tienlen-game-{shown.pk}.json"] == json.loads(pages[f"/games/{shown.pk}/replay.json"][1])
    assert archive["manifest.json"]["games_withheld"] == sealing.sealed_game_count(tournament=rr) >= 1
    for export in ("standings.csv", "cross-table.csv"):
        assert pages[f"/api/v1/tournaments/{rr.slug}/{export}"][0] == 200, export

    # 3. The standings sum the games the module lets through, and only those.
    standings = {row["bot_name"]: row for row in _json(pages[f"/api/v1/tournaments/{rr.slug}/standings/"][1])}
    for entrant in Entrant.objects.filter(tournament=rr).select_related("bot"):
        seats = GameSeat.objects.filter(sealing.revealed("game__"), entrant=entrant)
        row = standings[entrant.bot.name]
        assert row["games"] == seats.count(), entrant.bot.name
        assert row["points"] == sum(seats.values_list("points", flat=True)), entrant.bot.name


def _note_every_move(game: Game) -> None:
    """Store the game's replay with a note on every move, as the referee records the notes
    its bots send (tests/referee/test_move_notes.py): `NOTE-<game>-seat<seat>`."""
    row = Replay.objects.get(game=game)
    doc = with_notes(row.read(), [f"NOTE-{game.pk}-seat{m['seat']}" for m in row.read()["moves"]])
    text = json.dumps(doc, separators=(",", ":"))
    row.data, row.raw_size = zlib.compress(text.encode()), len(text)
    row.save(update_fields=["data", "raw_size"])


def _seat_notes(game: Game, seat: int) -> set[str]:
    """The notes the stored replay holds for the seat's moves (none in an instant win,
    where nobody moves: the deals are random)."""
    return {m["note"] for m in Replay.objects.get(game=game).read()["moves"] if m["seat"] == seat}


def _notes_in(body: str) -> set[str]:
    return set(re.findall(r"NOTE-\d+-seat\d", body))


def _crawl_as(user: Any) -> dict[str, tuple[int, str]]:
    cache.clear()
    client = Client()
    if user is not None:
        client.force_login(user)
    return {url: (status, body) for url, (status, body, _headers) in crawl(client).items()}


def test_move_notes_are_their_bots_owners_only_before_and_after_the_reveal(
        organiser, house_bots, owner, other_owner) -> None:
    rr = running_round_robin(organiser, house_bots, name="Notes cup", seats_per_table=4, duplicate_sets=1)
    a = rr.tables.order_by("round", "number").first()
    b = rr.tables.exclude(pk=a.pk).get(deal_group=a.deal_group)
    table_play_locally(table_id=a.pk, games=2)
    table_play_locally(table_id=b.pk, games=1)
    shown = Game.objects.select_related("deal").get(table=a, index=0)
    hidden = Game.objects.select_related("deal").get(table=a, index=1)
    assert sealing.game_revealed(shown) and not sealing.game_revealed(hidden)
    for game in Game.objects.all():
        _note_every_move(game)
    seat_bots = {s.seat: s.bot for s in shown.seats.select_related("bot")}
    Bot.objects.filter(pk=seat_bots[0].pk).update(owner=owner)
    Bot.objects.filter(pk=seat_bots[1].pk).update(owner=other_owner)
    # where those two bots sit in each game (seats rotate between a table's games)
    seat_of = {game.pk: {s.bot_id: s.seat for s in game.seats.all()} for game in (shown, hidden)}

    def own_notes(game: Game, user: User) -> set[str]:
        bot = seat_bots[0] if user == owner else seat_bots[1]
        return _seat_notes(game, seat_of[game.pk][bot.pk])

    assert own_notes(shown, owner) or own_notes(hidden, owner)  # both instant wins: 1 in thousands

    # Anonymous, an organiser, a staff member: no note anywhere, before the reveal or after.
    staff = User.objects.create_user("staff", is_staff=True)
    for viewer in (None, organiser, staff):
        for url, (_status, body) in _crawl_as(viewer).items():
            assert not _notes_in(body), (viewer, url)
    # Each owner: their own bot's notes of the revealed game, on its page and API replay
    # only; no other seat's, nothing of the sealed game, nothing in the public download
    # or the proof.
    for user in (owner, other_owner):
        pages = _crawl_as(user)
        for url, (status, body) in pages.items():
            found = _notes_in(body)
            if url in (f"/games/{shown.pk}/", f"/api/v1/games/{shown.pk}/replay/"):
                assert found == own_notes(shown, user), (user, url, status, body[:300])
            else:
                assert not found, (user, url, found)
        replay = json.loads(pages[f"/api/v1/games/{shown.pk}/replay/"][1])
        mine = seat_of[shown.pk][(seat_bots[0] if user == owner else seat_bots[1]).pk]
        assert all(("note" in m) == (m["seat"] == mine) for m in replay["moves"])
        if own_notes(shown, user):
            assert 'id="show-notes"' in pages[f"/games/{shown.pk}/"][1]  # the viewer's toggle
        download = pages[f"/games/{shown.pk}/replay.json"][1]
        assert json.loads(download) == without_notes(Replay.objects.get(game=shown).read())
        assert pages[f"/games/{hidden.pk}/"][0] == 403
    # The reveal (table b plays deal 1) shows the sealed game's notes to the owners alone.
    table_play_locally(table_id=b.pk, games=1)
    hidden.refresh_from_db()
    assert sealing.game_revealed(Game.objects.select_related("deal").get(pk=hidden.pk))
    _note_every_move(Game.objects.get(table=b, index=1))
    urls = [url.replace("<game_id>", str(hidden.pk)) for url in game_routes()]
    for viewer in (None, organiser, staff, owner, other_owner):
        client = Client()
        if viewer is not None:
            client.force_login(viewer)
        for url in urls:
            response = client.get(url, HTTP_ACCEPT="application/json" if url.startswith("/api/") else "text/html")
            assert response.status_code == 200, url
            found = _notes_in(response.content.decode())
            expected = (own_notes(hidden, viewer) if viewer in (owner, other_owner)
                        and url in (f"/games/{hidden.pk}/", f"/api/v1/games/{hidden.pk}/replay/") else set())
            assert found == expected, (viewer, url, found, response.content[:400])


def test_an_owner_publishes_their_bots_notes_once_the_tournament_has_finished(
        organiser, house_bots, owner, other_owner) -> None:
    rr = running_round_robin(organiser, house_bots, name="Published cup", seats_per_table=4, duplicate_sets=1)
    a = rr.tables.order_by("round", "number").first()
    b = rr.tables.exclude(pk=a.pk).get(deal_group=a.deal_group)
    table_play_locally(table_id=a.pk, games=1)
    table_play_locally(table_id=b.pk, games=1)
    game = Game.objects.select_related("deal").get(table=a, index=0)
    assert sealing.game_revealed(game)
    _note_every_move(game)
    seats = {s.seat: s.bot for s in game.seats.select_related("bot")}
    Bot.objects.filter(pk=seats[0].pk).update(owner=owner)
    Bot.objects.filter(pk=seats[1].pk).update(owner=other_owner)
    url = f"/api/v1/tournaments/{rr.slug}/entrants/{seats[0].name}/publish-notes/"
    mine, client = Client(), Client()
    mine.force_login(owner)
    client.force_login(other_owner)
    # Not while the tournament plays (its entrants could read how the bot thinks), not by
    # anyone but the owner, not anonymously.
    answer = mine.post(url)
    assert answer.status_code == 400 and "once the tournament has finished" in answer.content.decode()
    Tournament.objects.filter(pk=rr.pk).update(status=Tournament.Status.FINISHED)
    assert client.post(url).status_code == 403
    assert Client().post(url).status_code in (401, 403)
    for url_of_game, (_status, body) in _crawl_as(None).items():
        assert not _notes_in(body), url_of_game
    answer = mine.post(url)
    assert answer.status_code == 200 and answer.json()["notes_published_at"]
    # Now everyone sees seat 0's notes wherever the replay is served, and still no other
    # seat's (the other owner: their own too).
    published = _seat_notes(game, 0)
    replay_urls = {f"/games/{game.pk}/", f"/games/{game.pk}/replay.json",
                   f"/api/v1/games/{game.pk}/replay/", f"/api/v1/games/{game.pk}/proof/",
                   f"/api/v1/tournaments/{rr.slug}/replays.zip"}
    for url_of_game, (_status, body) in _crawl_as(None).items():
        assert _notes_in(body) == (published if url_of_game in replay_urls else set()), url_of_game
    page = client.get(f"/games/{game.pk}/").content.decode()
    assert _notes_in(page) == published | _seat_notes(game, 1)
