"""The local arena: reproducible, duplicate-dealt, multi-process, robust to bad bots."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bots_sdk.arena import ArenaConfig, Lineup, run_arena
from bots_sdk.rules import replay_game
from bots_sdk.stats import pairwise, summarize


def _run(specs, **kw):
    players = kw.pop("players", 4)
    return run_arena(ArenaConfig(lineup=Lineup.build(specs, players), players=players, **kw))


def test_same_seed_same_results_and_a_new_seed_new_deals():
    a = _run(["random", "greedy"], games=12, seed="s1")
    b = _run(["random", "greedy"], games=12, seed="s1")
    c = _run(["random", "greedy"], games=12, seed="s2")
    assert [r.points for r in a.records] == [r.points for r in b.records]
    assert [r.points for r in a.records] != [r.points for r in c.records]
    assert not a.errors


def test_two_processes_give_the_same_games_as_one():
    one = _run(["random", "greedy", "heuristic"], games=16, seed="jobs", jobs=1)
    two = _run(["random", "greedy", "heuristic"], games=16, seed="jobs", jobs=2)
    assert [(r.unit, r.entrants, r.points) for r in one.records] == [
        (r.unit, r.entrants, r.points) for r in two.records
    ]


def test_duplicate_sets_replay_each_deal_in_every_seating(tmp_path):
    result = _run(
        ["random", "greedy", "heuristic"],
        players=3,
        games=9,
        duplicate=True,
        seed="dup",
        replays_dir=tmp_path,
    )
    assert len(result.records) == 9
    index = json.loads((tmp_path / "index.json").read_text())
    by_set: dict[int, list[dict]] = {}
    for g in index["games"]:
        by_set.setdefault(g["unit"], []).append(g)
    assert sorted(by_set) == [0, 1, 2]
    for games in by_set.values():
        hands = {json.dumps(json.loads((tmp_path / g["file"]).read_text())["hands"]) for g in games}
        assert len(hands) == 1  # one deal per set
        for seat in range(3):  # every bot plays every hand once
            assert sorted(g["seats"][seat] for g in games) == ["greedy", "heuristic", "random"]


def test_two_bots_at_four_seats_play_only_distinct_rotations():
    lineup = Lineup.build(["heuristic", "greedy"], 4)
    assert lineup.seats == (0, 1, 0, 1)
    assert lineup.rotations() == [0, 1]
    result = _run(["heuristic", "greedy"], games=8, duplicate=True)
    assert len(result.records) == 8 and len({r.unit for r in result.records}) == 4


def test_replays_are_the_platforms_format_and_re_simulate(tmp_path):
    result = _run(["random", "greedy"], games=3, replays_dir=tmp_path, seed="rp")
    files = sorted(tmp_path.glob("game-*.json"))
    assert len(files) == 3
    for f, record in zip(files, result.records, strict=True):
        doc = json.loads(f.read_text())
        assert doc["schema"] == "tienlen.replay/1"
        game = replay_game(doc)  # raises if the stored result differs
        assert tuple(game.points) == record.points


def test_bad_bots_get_fallbacks_not_strikes_and_the_games_still_finish(bot_file):
    """The referee's words: a bot that raises or answers an illegal move gets the
    fallback move, as the SDK client sends it on the referee, where no strike is recorded."""
    path = bot_file(
        """
        from bots_sdk import Bot

        class Flaky(Bot):
            calls = 0

            def play(self, view):
                Flaky.calls += 1
                if Flaky.calls % 3 == 0:
                    raise RuntimeError("my bug")
                if Flaky.calls % 3 == 1:
                    return "2H 2D 2C"
                return view.legal_plays()[0]
        """
    )
    result = _run([str(path), "greedy"], games=4, seed="bad")
    assert len(result.records) == 4
    flaky, greedy = summarize(result.records, ["Flaky", "greedy"])
    assert flaky.strikes == greedy.strikes == 0
    assert any("play() raised RuntimeError: my bug; fallback played" in e for e in result.errors)
    raised = sum("play() raised " in e and e.endswith("; fallback played") for e in result.errors)
    illegal = sum("illegal move 2H 2D 2C (the referee rejects it: " in e and "not in your hand" in e
                  for e in result.errors)
    assert raised > 0 and illegal > 0
    assert flaky.rejected == illegal and flaky.fallbacks == raised + illegal == len(result.errors)
    assert 0 < flaky.own_moves < flaky.moves
    assert greedy.fallbacks == greedy.rejected == 0 and greedy.own_moves == greedy.moves


def test_async_bots_and_hooks(bot_file):
    path = bot_file(
        """
        import asyncio
        from bots_sdk import Bot

        LOG = []

        class Patient(Bot):
            async def on_game_start(self, game):
                LOG.append(("start", len(game.hand)))

            async def play(self, view):
                await asyncio.sleep(0)
                plays = view.legal_plays()
                return plays[-1] if plays else view.pass_turn()

            def on_game_end(self, result):
                assert result.replay["schema"] == "tienlen.replay/1"
                LOG.append(("end", result.my_place))
        """
    )
    result = _run([str(path), "random"], games=2, seed="async")
    assert result.errors == []
    from bots_sdk.loader import load_bot_class

    log = __import__(load_bot_class(str(path)).__module__).LOG
    assert log.count(("start", 13)) == 4
    assert sorted(e[1] for e in log if e[0] == "end")[:1][0] >= 1


def test_a_bot_that_keeps_its_views_sees_each_as_it_was(bot_file):
    path = bot_file(
        """
        from bots_sdk import Bot

        class Keeper(Bot):
            def __init__(self):
                self.seen = []

            def play(self, view):
                self.seen.append((view, len(view.plays)))
                plays = view.legal_plays()
                return plays[0] if plays else view.pass_turn()

            def on_game_end(self, result):
                for view, n in self.seen:
                    assert view.to_move == view.seat
                    assert len(view.legal_plays()) == n
                    assert len(view.hand) == view.card_counts[view.seat]
        """
    )
    assert _run([str(path), "random"], games=3, seed="keep").errors == []


def test_lineup_errors():
    with pytest.raises(ValueError, match="3 bots for 2 seats"):
        Lineup.build(["a", "b", "c"], 2)
    with pytest.raises(ValueError, match="--players must be 2, 3 or 4"):
        run_arena(ArenaConfig(lineup=Lineup.build(["random"], 5), players=5))


def test_strength_order_on_a_small_fixed_sample():
    """Each example beats the one below it; the 2,000-game measurement is in
    benchmarks/example_bots_strength.py, this is a smoke check on a fixed seed."""
    hg = _run(["heuristic", "greedy"], games=64, duplicate=True, seed="order")
    gr = _run(["greedy", "random"], games=64, duplicate=True, seed="order")
    (h_g,) = pairwise(hg.records, ["heuristic", "greedy"])
    (g_r,) = pairwise(gr.records, ["greedy", "random"])
    assert h_g.diff.mean > 0 and g_r.diff.mean > 0


def test_progress_bar_draws_on_a_terminal_only():
    import io

    from bots_sdk.arena import ProgressBar

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        bar = ProgressBar(stream, width=10)
        bar(0, 4)
        bar(4, 4)
    assert "[##########] 4/4 games" in tty.getvalue() and tty.getvalue().endswith("\n")
    assert pipe.getvalue() == ""


@settings(max_examples=15, deadline=None)
@given(
    specs=st.lists(st.sampled_from(["random", "greedy"]), min_size=1, max_size=4),
    players=st.sampled_from([2, 3, 4]),
    duplicate=st.booleans(),
    games=st.integers(1, 9),
    seed=st.text(min_size=1, max_size=6),
)
def test_arena_invariants(specs, players, duplicate, games, seed):
    """Whatever the lineup: whole duplicate sets, zero-sum games, balanced seats."""
    if len(specs) > players:
        specs = specs[:players]
    lineup = Lineup.build(specs, players)
    result = run_arena(
        ArenaConfig(lineup=lineup, players=players, games=games, duplicate=duplicate, seed=seed)
    )
    k = len(lineup.rotations()) if duplicate else 1
    assert len(result.records) == -(-games // k) * k
    assert all(sum(r.points) == 0 and sorted(r.finishing_order) == list(range(players)) for r in result.records)
    if duplicate:
        for unit in {r.unit for r in result.records}:
            seatings = [r.entrants for r in result.records if r.unit == unit]
            assert len(set(seatings)) == k  # each distinct seating once per set
    rows = summarize(result.records, lineup.names)
    assert sum(r.games for r in rows) == players * len(result.records)
    assert sum(r.firsts for r in rows) == len(result.records)
