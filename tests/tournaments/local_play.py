"""Play a table's games in this process, from the deal seeds the worker would send.

The referee's flow is tested with a real referee and worker (test_worker.py); tests that
need many tables in precise states (a knockout between rounds, half-played tables) play
them here instead: real engine games dealt from the committed seeds (`table_plan`), turned
into the FinishedGames the worker reads from what the referee streams, recorded by the real services.
"""

from __future__ import annotations

from bots_sdk.rules import Game
from tests.tournaments.conftest import finished_game
from tournaments.play.referee import FinishedGame
from tournaments.services.recording import table_games_record
from tournaments.services.tables import table_plan


def play_game(seed: str, players: int, *, preset: str = "south", starting: bool = True,
              leader: int | None = None) -> Game:
    """A whole game between simple players (the lowest legal play, else a pass)."""
    game = Game.from_seed(seed, players, preset=preset, starting=starting, leader=leader)
    while not game.is_over:
        plays = list(game.legal_plays())
        if plays:
            game.play(plays[0])
        else:
            game.pass_turn()
    return game


def table_play_locally(*, table_id: int, games: int | None = None) -> list[FinishedGame]:
    """Record the table's next `games` games (all that remain: None), as the worker does."""
    plan = table_plan(table_id=table_id)
    assert plan is not None, "nothing to play at this table"
    n = len(plan.participants)
    todo = len(plan.deal_seeds) if games is None else min(games, len(plan.deal_seeds))
    rotation = plan.duplicate_sets > 0
    leader, starting = plan.resume_leader, plan.resume_starting if plan.resume_starting is not None else True
    results = []
    for offset in range(todo):
        index = plan.first_game_index + offset
        if rotation or plan.starting_games:
            starting, leader = True, None
        game = play_game(plan.deal_seeds[offset], n, preset=plan.preset, starting=starting,
                         leader=None if starting else leader)
        replay = game.replay()
        seating = [(s + index % n) % n for s in range(n)] if rotation else list(range(n))
        results.append(finished_game(index, replay, seat_participants=seating, seed=plan.deal_seeds[offset]))
        leader, starting = game.next_leader, bool(game.next_starting)
    table_games_record(table_id=table_id, results=results)
    return results
