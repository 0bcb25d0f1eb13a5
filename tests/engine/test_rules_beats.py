"""docs/rules.md §3 (normal beats), §5 (the southern chop table) and the chop tables and beat
restrictions of the presets in §9, all through `beats(play, table, preset)`."""

from __future__ import annotations

import pytest

from bots_sdk.rules import beats
from tests.engine.conftest import C

TWO = "2D"
TWO_PAIR = "2S 2C"
TWO_TRIPLE = "2S 2C 2D"
PS3_LOW = "4S 4C 5S 5C 6S 6C"
PS3_HIGH = "9D 9H 10D 10H JD JH"
QUAD_LOW = "7S 7C 7D 7H"
QUAD_HIGH = "KS KC KD KH"
PS4_LOW = "3S 3C 4D 4H 5D 5H 6D 6H"
PS4_HIGH = "8S 8C 9S 9C 10S 10C JS JC"
PS5 = "3D 3H 4S 4C 5S 5C 6S 6C 7S 7C"


@pytest.mark.parametrize(
    ("play", "table"),
    [
        ("5S 5D 5H", "4S 4D 4H"),
        ("JH QH KS", "6H 7H 8H"),
        ("10H 10D", "10C 10S"),
        ("10H 10C", "10D 10S"),
        ("2D", "QH"),
        ("QH", "QS"),
        ("4S 5S 6S 7S", "3H 4H 5H 6H"),
        ("2H", "2D"),
        ("2D 2H", "2S 2C"),
        ("QD QH KS KC AS AC", "JS JC QS QC KD KH"),
    ],
)
def test_normal_beats(play: str, table: str) -> None:
    assert beats(C(play), C(table))
    assert not beats(C(table), C(play))


@pytest.mark.parametrize(
    ("play", "table"),
    [
        ("4S 5S 6S 7S", "3H 4H 5H"),  # straights of different lengths
        ("4S 5S 6S", "3H 4H 5H 6H"),
        ("4S 5S 6S 7S", "3H 4H 5H 6H 7H"),
        ("9S 9C", "8H"),  # different kinds
        ("9S 9C 9D", "8S 8C"),
        ("KS", "KS 5S"),  # not a combination on the table
        ("KS 5S", "4S"),  # the play is not a combination
        ("AH", "2S"),
    ],
)
def test_not_beats(play: str, table: str) -> None:
    assert not beats(C(play), C(table))


def test_beats_compares_combinations_that_share_cards() -> None:
    assert beats(C("9H"), C("9H 9S")) is False
    assert beats(C("9S 9H"), C("9S 9C"))


SOUTH_CHOPS = [
    (PS3_LOW, TWO, True),
    (QUAD_LOW, TWO, True),
    (PS4_LOW, TWO, True),
    (PS3_LOW, TWO_PAIR, False),
    (QUAD_LOW, TWO_PAIR, True),
    (PS4_LOW, TWO_PAIR, True),
    (PS3_HIGH, PS3_LOW, True),
    (PS3_LOW, PS3_HIGH, False),
    (QUAD_LOW, PS3_HIGH, True),
    (PS4_LOW, PS3_HIGH, True),
    (QUAD_HIGH, QUAD_LOW, True),
    (QUAD_LOW, QUAD_HIGH, False),
    (PS4_LOW, QUAD_HIGH, True),
    (PS3_HIGH, QUAD_LOW, False),
    (PS4_HIGH, PS4_LOW, True),
    (PS4_LOW, PS4_HIGH, False),
    (QUAD_HIGH, PS4_LOW, False),
    (PS5, PS4_HIGH, True),  # Gap: a longer pair sequence chops a shorter one
    (PS4_HIGH, PS5, False),
    (QUAD_HIGH, TWO_TRIPLE, False),  # three 2s: nothing chops them
    (PS5, TWO_TRIPLE, False),
    (QUAD_HIGH, "KH", False),  # bombs beat nothing else
    (PS3_HIGH, "AH AD", False),
    (QUAD_LOW, "3S 4S 5S 6S", False),
]


@pytest.mark.parametrize(("play", "table", "expected"), SOUTH_CHOPS)
@pytest.mark.parametrize("preset", ["south", "south_extended"])
def test_south_chop_table(preset: str, play: str, table: str, expected: bool) -> None:
    assert beats(C(play), C(table), preset=preset) is expected


HUE_CHOPS = [
    (PS3_LOW, TWO, False),  # a three-pair sequence never chops in hue
    (QUAD_LOW, TWO, True),
    (PS4_LOW, TWO, True),
    (PS3_LOW, TWO_PAIR, False),
    (QUAD_LOW, TWO_PAIR, False),
    (PS4_LOW, TWO_PAIR, True),
    (PS3_HIGH, PS3_LOW, True),  # still a normal beat
    (QUAD_LOW, PS3_HIGH, True),
    (PS4_LOW, PS3_HIGH, True),
    (QUAD_HIGH, QUAD_LOW, True),
    (PS4_LOW, QUAD_HIGH, True),
    (PS4_HIGH, PS4_LOW, True),
    (PS5, PS4_HIGH, True),
    (PS4_HIGH, PS5, False),
    (QUAD_HIGH, TWO_TRIPLE, False),
    (QUAD_HIGH, "KH", False),
]


@pytest.mark.parametrize(("play", "table", "expected"), HUE_CHOPS)
def test_hue_chop_table(play: str, table: str, expected: bool) -> None:
    assert beats(C(play), C(table), preset="hue") is expected


DANANG_CHOPS = [
    (QUAD_LOW, TWO, True),
    (PS3_LOW, TWO, False),
    (PS4_LOW, TWO, False),
    (PS4_LOW, TWO_PAIR, True),
    (QUAD_LOW, TWO_PAIR, False),
    (PS3_HIGH, PS3_LOW, True),  # same-type higher bombs: normal beats
    (QUAD_HIGH, QUAD_LOW, True),
    (PS4_HIGH, PS4_LOW, True),
    (QUAD_LOW, PS3_HIGH, False),  # nothing else is ever chopped
    (PS4_LOW, PS3_HIGH, False),
    (PS4_LOW, QUAD_HIGH, False),
    (PS5, PS4_HIGH, False),
    (QUAD_HIGH, TWO_TRIPLE, False),
]


@pytest.mark.parametrize(("play", "table", "expected"), DANANG_CHOPS)
def test_danang_chop_table(play: str, table: str, expected: bool) -> None:
    assert beats(C(play), C(table), preset="danang") is expected


NORTH_BEATS = [
    ("7S", "5S", True),  # same suit
    ("7H", "5S", False),
    ("2H", "2S", False),  # a 2 only by a higher 2 of the same suit: none exists
    ("2S", "AS", True),
    ("2H", "AS", False),
    ("7S 7C", "5S 5C", True),  # black pair on black pair
    ("7D 7H", "5S 5C", False),
    ("7S 7H", "5S 5C", False),
    ("7C 7D", "5S 5H", True),  # the same mix
    ("7D 7H", "5S 5H", False),
    ("8S 8C 8D", "6S 6C 6H", True),
    ("8S 8D 8H", "6S 6C 6H", False),
    ("4H 5H 6H", "3H 4H 5H", True),
    ("4S 5S 6S", "3H 4H 5H", False),
    (QUAD_LOW, TWO, True),  # four of a kind is the only bomb
    (QUAD_LOW, TWO_PAIR, True),
    (QUAD_HIGH, QUAD_LOW, True),
    (QUAD_LOW, QUAD_HIGH, False),
    (QUAD_HIGH, "KH", False),
]


@pytest.mark.parametrize(("play", "table", "expected"), NORTH_BEATS)
def test_north_like_beats_like(play: str, table: str, expected: bool) -> None:
    assert beats(C(play), C(table), preset="north") is expected


def test_north_has_no_pair_sequence_bombs() -> None:
    assert not beats(C(PS4_LOW), C(TWO_PAIR), preset="north")
    assert not beats(C(PS3_LOW), C(TWO), preset="north")
