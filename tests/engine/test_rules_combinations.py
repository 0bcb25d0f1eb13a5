"""docs/rules.md §3: which card sets are combinations, their kind and their key."""

from __future__ import annotations

import pytest

from bots_sdk.rules import classify
from tests.engine.conftest import C


@pytest.mark.parametrize(
    ("text", "kind", "key"),
    [
        ("7D", "single", "7D"),
        ("2H", "single", "2H"),
        ("9C 9H", "pair", "9H"),
        ("2S 2D", "pair", "2D"),
        ("KS KD KH", "triple", "KH"),
        ("2S 2C 2D", "triple", "2D"),
        ("JH QH KS", "straight", "KS"),
        ("3S 4C 5D 6H 7S", "straight", "7S"),
        ("QD KD AD", "straight", "AD"),
        ("10S 10C JH JC QS QD", "pair_sequence", "QD"),
        ("3S 3C 4D 4H 5S 5C 6D 6H", "pair_sequence", "6H"),
        ("8S 8C 8D 8H", "four_of_a_kind", "8H"),
        ("2S 2C 2D 2H", "four_of_a_kind", "2H"),
    ],
)
def test_kind_and_key(text: str, kind: str, key: str) -> None:
    combo = classify(C(text))
    assert combo is not None
    assert combo.kind == kind
    assert combo.key == C(key)[0]
    assert sorted(combo.cards) == sorted(C(text))


def test_key_does_not_depend_on_the_order_given() -> None:
    assert classify(C("KS QH JH")).key == C("KS")[0]
    assert classify(C("QD JH 10C QS 10S JC")).key == C("QD")[0]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "3S 4S",  # two different ranks
        "3S 3C 4S",  # pair plus one
        "3S 4S 6S",  # gap in a straight
        "KS AS 2S",  # a 2 can never be in a straight
        "AS 2S 3S",  # no wrap-around
        "QS KS AS 2S",
        "JS JC QS QC",  # two pairs are not a pair sequence
        "3S 3C 4S 4C 6S 6C",  # gap in a pair sequence
        "KS KC AS AC 2S 2C",  # no 2s in a pair sequence
        "3S 3C 3D 4S 4C 4D",  # consecutive triples are not a combination
        "3S 3C 4S 4C 5S",  # pairs with a loose card
        "3S 3S",  # one card named twice is not a pair
    ],
)
def test_not_combinations(text: str) -> None:
    assert classify(C(text)) is None


def test_straights_of_every_length_from_3_to_12() -> None:
    ranks = ["3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A"]
    suits = "SCDH"
    for length in range(3, 13):
        text = " ".join(ranks[i] + suits[i % 4] for i in range(length))
        combo = classify(C(text))
        assert combo is not None and combo.kind == "straight", text
        assert len(combo.cards) == length


def test_the_dragon_is_a_twelve_card_straight_but_13_cards_are_not() -> None:
    dragon = C("3S 4C 5D 6H 7S 8C 9D 10H JS QC KD AH")
    assert classify(dragon).kind == "straight"
    assert classify(dragon + C("2S")) is None


def test_pair_sequences_up_to_six_pairs() -> None:
    text = "3S 3C 4S 4C 5S 5C 6S 6C 7S 7C 8S 8C"
    for pairs in range(3, 7):
        combo = classify(C(text)[: 2 * pairs])
        assert combo.kind == "pair_sequence" and len(combo.cards) == 2 * pairs


def test_north_has_no_pair_sequences_and_only_same_suit_straights() -> None:
    assert classify(C("3S 3C 4S 4C 5S 5C"), preset="north") is None
    assert classify(C("3S 3C 4S 4C 5S 5C 6S 6C"), preset="north") is None
    assert classify(C("3S 4C 5S"), preset="north") is None
    assert classify(C("3H 4H 5H 6H"), preset="north").kind == "straight"
    assert classify(C("8S 8C 8D 8H"), preset="north").kind == "four_of_a_kind"
    assert classify(C("9C 9H"), preset="north").kind == "pair"
