"""docs/rules.md §8: what a table carries from one game to the next (who leads, whether the next
game is a starting game) and the running totals."""

from __future__ import annotations

from bots_sdk.rules import Table
from tests.engine.conftest import C, full_deal, run


def _hands(*texts: str):
    return [C(t) for t in texts]


def test_first_game_is_a_starting_game_then_the_winner_leads() -> None:
    t = Table(3)
    g1 = t.new_game(hands=_hands("4S 9S", "3S 5S", "6S 7S"))
    assert g1.to_move == 1  # the 3S holder opens the starting game
    run(g1, "B 3S; C 6S; A 9S; B pass; C pass; A 4S; B 5S")
    assert g1.finishing_order == [0, 1, 2]
    t.finish_game(g1)
    assert t.games_played == 1
    assert list(t.totals) == list(g1.points)
    g2 = t.new_game(hands=_hands("3S 4S", "5S 6S", "7S 8S"))
    # not a starting game: the previous winner (A) leads, with anything
    assert g2.to_move == 0
    assert len(g2.legal_plays()) == 2
    run(g2, "A 4S; B 5S; C 7S; A pass; B pass; C 8S; A pass; B pass; A 3S")
    assert g2.finishing_order == [2, 0, 1]
    t.finish_game(g2)
    assert t.games_played == 2
    assert list(t.totals) == [a + b for a, b in zip(g1.points, g2.points, strict=True)]
    assert sum(t.totals) == 0


def test_after_an_instant_win_the_next_game_is_a_starting_game() -> None:
    t2 = Table(4)
    t2_first = t2.new_game(hands=full_deal({2: "3S 3C 3D 3H 5C 6D 8S 9H 10C JD QS KH AC"}))
    assert t2_first.instant_winner == 2
    t2.finish_game(t2_first)
    assert t2_first.next_starting is True
    g = t2.new_game(hands=full_deal({1: "3S"}, seed=3))
    assert g.to_move == 1  # starting again: the 3S holder leads
    assert all(C("3S")[0] in p for p in g.legal_plays())


def test_den_bai_player_leads_the_next_game() -> None:
    t = Table(4)
    g = t.new_game(hands=_hands("3S 2S 7H", "9S 6C", "10S 5C", "2H 4D"))
    run(g, "A 3S; B 9S; C pass; D pass; A 2S; B pass; A 7H")
    assert g.next_leader == 2
    t.finish_game(g)
    nxt = t.new_game(hands=_hands("3S 4S", "5S 6S", "7S 8S", "9S 10S"))
    assert nxt.to_move == 2
    assert not nxt.can_pass


def test_table_with_seeds_deals_reproducibly() -> None:
    a = Table(4).new_game(seed="t-1")
    b = Table(4).new_game(seed="t-1")
    assert [list(h) for h in a.hands] == [list(h) for h in b.hands]
    assert a.seed == "t-1"
