"""docs/rules.md §1: the deck, card strength, colours and the two card encodings."""

from __future__ import annotations

import pytest

from bots_sdk.cards import DECK, Card, format_cards, parse_cards

RANKS = ["3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A", "2"]
SUITS = ["S", "C", "D", "H"]


def test_deck_is_52_distinct_cards_in_strength_order() -> None:
    assert len(DECK) == 52 and len(set(DECK)) == 52
    assert list(DECK) == sorted(DECK)
    assert str(DECK[0]) == "3S" and str(DECK[-1]) == "2H"


def test_integer_encoding_is_rank_times_four_plus_suit() -> None:
    for r, rank in enumerate(RANKS):
        for s, suit in enumerate(SUITS):
            card = parse_cards(rank + suit)[0]
            assert card.index == r * 4 + s
            assert (card.rank, card.suit) == (r, s)
            assert Card.from_index(r * 4 + s) == card
            assert str(card) == rank + suit


def test_strength_is_rank_first_then_suit() -> None:
    ten_s, nine_h, ten_h, ten_d = parse_cards("10S 9H 10H 10D")
    assert ten_s > nine_h  # rank first
    assert ten_h > ten_d  # then suit
    assert parse_cards("3S")[0] == min(DECK)
    assert parse_cards("2H")[0] == max(DECK)
    spade, club, diamond, heart = parse_cards("QS QC QD QH")
    assert spade < club < diamond < heart


@pytest.mark.parametrize(
    "text",
    ["10H", "TH", "th", "10h", "10♥", "T♥", "t♥"],
)
def test_text_forms_for_ten_of_hearts(text: str) -> None:
    assert parse_cards(text) == parse_cards("10H")


def test_unicode_suits_and_lower_case() -> None:
    assert parse_cards("3♠ 3♣ 3♦ 3♥") == parse_cards("3S 3C 3D 3H")
    assert parse_cards("as kd 2c") == parse_cards("AS KD 2C")


def test_unknown_card_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="1H"):
        parse_cards("3S 1H")
    with pytest.raises(ValueError, match="ZZ"):
        parse_cards("ZZ")


def test_a_card_named_twice_stays_twice() -> None:
    assert len(parse_cards("3S 3S")) == 2


def test_cards_are_hashable_and_parse_from_ints_and_cards() -> None:
    cards = parse_cards("3S 2H")
    assert len({*cards, *parse_cards("3S")}) == 2
    assert parse_cards([0, 51]) == cards
    assert parse_cards(cards) == cards
    assert parse_cards(["3S", "2H"]) == cards


def test_format_round_trips() -> None:
    text = "3S 10D JC 2H"
    assert format_cards(parse_cards(text)) == text
    assert parse_cards(format_cards(DECK)) == list(DECK)
