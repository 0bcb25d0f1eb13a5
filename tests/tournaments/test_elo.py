"""Elo maths against hand-computed values, and its invariants."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tournaments.ratings.elo import elo_deltas, elo_expected


def test_expected_score_is_the_standard_logistic() -> None:
    assert elo_expected(1500, 1500) == 0.5
    assert elo_expected(1900, 1500) == pytest.approx(10 / 11)  # 400 points: odds 10 to 1
    assert elo_expected(1500, 1900) == pytest.approx(1 / 11)


def test_two_player_game_is_classic_elo() -> None:
    # Equal ratings, K=12: the winner gains 6, the loser loses 6.
    assert elo_deltas([1500, 1500], [1, 2], 12) == pytest.approx([6.0, -6.0])


def test_four_player_game_by_hand() -> None:
    # Equal ratings, K=12, n=4: every pair expects 0.5; scale K/(n-1) = 4.
    # 1st: 3 wins -> 4 * (3 - 1.5) = 6; 2nd: 4 * (2 - 1.5) = 2; 3rd: -2; 4th: -6.
    assert elo_deltas([1500] * 4, [1, 2, 3, 4], 12) == pytest.approx([6, 2, -2, -6])


def test_four_player_unequal_ratings_by_hand() -> None:
    ratings = [1600.0, 1500.0, 1500.0, 1400.0]
    e_hi = 1 / (1 + 10 ** (-100 / 400))  # 0.6400649998...
    e_2 = 1 / (1 + 10 ** (-200 / 400))  # 0.7597469266...
    # The 1400 bot wins, the 1600 bot is last.
    places = [4, 2, 3, 1]
    k = 16
    top = k / 3 * ((0 - e_hi) + (0 - e_hi) + (0 - e_2))
    low = k / 3 * ((1 - (1 - e_2)) + (1 - (1 - e_hi)) + (1 - (1 - e_hi)))
    deltas = elo_deltas(ratings, places, k)
    assert deltas[0] == pytest.approx(top)
    assert deltas[3] == pytest.approx(low)
    assert deltas[1] == pytest.approx(k / 3 * ((1 - (1 - e_hi)) + 1 - 0.5 + 0 - e_hi))


def test_shared_last_place_counts_as_half() -> None:
    # Instant win: seat 2 wins, the others share last place.
    deltas = elo_deltas([1500] * 4, [4, 4, 1, 4], 12)
    assert deltas == pytest.approx([-2, -2, 6, -2])


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ValueError):
        elo_deltas([1500], [1], 12)
    with pytest.raises(ValueError):
        elo_deltas([1500, 1500], [1], 12)


ratings_strategy = st.lists(st.floats(min_value=500, max_value=3000), min_size=2, max_size=4)


@given(ratings_strategy, st.data(), st.floats(min_value=1, max_value=64))
def test_rating_is_conserved_and_better_places_gain_more(ratings, data, k) -> None:
    n = len(ratings)
    places = data.draw(st.permutations(list(range(1, n + 1))))
    deltas = elo_deltas(ratings, places, k)
    assert math.fsum(deltas) == pytest.approx(0.0, abs=1e-9)
    assert all(abs(d) <= k for d in deltas)
    winner = places.index(1)
    loser = places.index(n)
    assert deltas[winner] > 0 > deltas[loser]


@given(ratings_strategy, st.floats(min_value=1, max_value=64))
def test_same_inputs_give_identical_floats(ratings, k) -> None:
    places = list(range(1, len(ratings) + 1))
    assert elo_deltas(ratings, places, k) == elo_deltas(list(ratings), list(places), k)


def test_plackett_luce_recovers_the_order_and_ignores_game_order() -> None:
    import random

    from tournaments.ratings.k_simulation import TRUE_RATINGS, sample_order
    from tournaments.ratings.plackett_luce import plackett_luce_fit

    rng = random.Random(4)
    games = [sample_order(rng.sample(range(8), 4), rng) for _ in range(1500)]
    fit = plackett_luce_fit(games)
    assert sorted(range(8), key=lambda p: fit[p].rating) == list(range(8))
    # The 95% intervals cover the true ratings (centred like the fit) for most bots.
    centre = sum(fit[p].rating for p in range(8)) / 8
    covered = sum(fit[p].low <= TRUE_RATINGS[p] - 1500 + centre <= fit[p].high for p in range(8))
    assert covered >= 6
    shuffled = games[:]
    rng.shuffle(shuffled)
    again = plackett_luce_fit(shuffled)
    assert all(abs(again[p].rating - fit[p].rating) < 1e-6 for p in range(8))


def test_plackett_luce_handles_a_tied_tail_and_tiny_inputs() -> None:
    from tournaments.ratings.plackett_luce import plackett_luce_fit

    fit = plackett_luce_fit([["a", "b", "c", "d"], ["b", "a", "c", "d"]], [2, None])
    assert fit["a"].rating > fit["d"].rating
    assert plackett_luce_fit([["solo"]])["solo"].rating == 1500.0
