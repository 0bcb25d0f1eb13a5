"""Cards of the 52-card deck and their text and integer encodings (docs/rules.md §1).

A card is one of 52 interned singletons: ``Card("3S") is Card(0)``. Interning makes
equality an identity test and lets the engine index tables by ``card.index`` without
building objects in its hot loops. The integer encoding ``rank * 4 + suit`` makes
"stronger card" the same as "larger integer", so ordering cards is ordering integers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

RANK_TEXT: Final = ("3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A", "2")
SUIT_TEXT: Final = ("S", "C", "D", "H")
SUIT_SYMBOL: Final = ("♠", "♣", "♦", "♥")
SUIT_NAME: Final = ("spades", "clubs", "diamonds", "hearts")

#: The deck table, the one the whole platform uses: the text of card index i (docs/rules.md §1:
#: index = rank * 4 + suit, 3S = 0 ... 2H = 51) and back. The referee's wire conversions, the
#: view encoder and the web import these instead of keeping their own copies.
CARD_TEXT: Final[tuple[str, ...]] = tuple(r + s for r in RANK_TEXT for s in SUIT_TEXT)
CARD_INDEX: Final[dict[str, int]] = {text: i for i, text in enumerate(CARD_TEXT)}

_RANK_OF = {text: i for i, text in enumerate(RANK_TEXT)}
_RANK_OF["T"] = 7
_SUIT_OF = {"S": 0, "C": 1, "D": 2, "H": 3}
for _i, _sym in enumerate(SUIT_SYMBOL):
    _SUIT_OF[_sym] = _i
for _i, _sym in enumerate(("♤", "♧", "♢", "♡")):
    _SUIT_OF[_sym] = _i

_SUITS_RE = "SCDH♠♣♦♥♤♧♢♡"
_CARD_RE = re.compile(
    rf"(10|[2-9TJQKA])([{_SUITS_RE}])|([{_SUITS_RE}])(10|[2-9TJQKA])"
)
_SPLIT_RE = re.compile(r"[\s,;]+")


class Card:
    """One playing card; compare, hash and sort by strength (3S weakest, 2H strongest)."""

    __slots__ = ("index", "rank", "suit", "bit", "_text")

    index: int
    rank: int
    suit: int
    bit: int
    _text: str

    def __new__(cls, value: int | str | Card) -> Card:
        if isinstance(value, Card):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            if 0 <= value < 52:
                if len(_DECK_LIST) == 52:
                    return _DECK_LIST[value]
                # Building the deck (once, at import): the only place a Card is made.
                card = super().__new__(cls)
                card.index = value
                card.rank = value >> 2
                card.suit = value & 3
                card.bit = 1 << value
                card._text = CARD_TEXT[value]
                return card
            raise ValueError(f"card index {value} out of range 0..51")
        if isinstance(value, str):
            cards = parse_cards(value)
            if len(cards) != 1:
                raise ValueError(f"expected one card, got {value!r}")
            return cards[0]
        raise TypeError(f"cannot make a card from {value!r}")

    @classmethod
    def from_index(cls, index: int) -> Card:
        """The card with integer encoding ``index`` (0 = 3S … 51 = 2H)."""
        return cls(index)

    @property
    def symbol(self) -> str:
        """Display form with a suit symbol, e.g. "10♥"."""
        return RANK_TEXT[self.rank] + SUIT_SYMBOL[self.suit]

    @property
    def is_red(self) -> bool:
        return self.suit >= 2

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Card({self._text!r})"

    def __hash__(self) -> int:
        return self.index

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Card):
            return self.index == other.index
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, Card):
            return self.index != other.index
        return NotImplemented

    def __lt__(self, other: Card) -> bool:
        return self.index < other.index

    def __le__(self, other: Card) -> bool:
        return self.index <= other.index

    def __gt__(self, other: Card) -> bool:
        return self.index > other.index

    def __ge__(self, other: Card) -> bool:
        return self.index >= other.index

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (Card.from_index, (self.index,))


_DECK_LIST: list[Card] = []
for _index in range(52):
    _DECK_LIST.append(Card(_index))
_DECK: Final[tuple[Card, ...]] = tuple(_DECK_LIST)
DECK: Final[tuple[Card, ...]] = _DECK
"""All 52 cards, weakest (3S) to strongest (2H); ``DECK[i].index == i``."""


def _parse_token(token: str) -> list[Card]:
    text = token.upper()
    out: list[Card] = []
    pos = 0
    while pos < len(text):
        match = _CARD_RE.match(text, pos)
        if match is None:
            raise ValueError(f"unknown card {token!r}")
        if match.group(1) is not None:
            rank, suit = match.group(1), match.group(2)
        else:
            rank, suit = match.group(4), match.group(3)
        out.append(_DECK[_RANK_OF[rank] * 4 + _SUIT_OF[suit]])
        pos = match.end()
    return out


def parse_cards(cards: str | Iterable[str | int | Card]) -> list[Card]:
    """Cards from text ("3S 10H 2H", "TH", "10♥", "3♠3♦") or from cards, ints or texts.

    Order and repetitions are kept: "3S 3S" is two cards, so callers can detect a card
    named twice. An unknown card raises ``ValueError`` naming it.
    """
    if isinstance(cards, str):
        out: list[Card] = []
        for token in _SPLIT_RE.split(cards.strip()):
            if token:
                out.extend(_parse_token(token))
        return out
    out = []
    for item in cards:
        if isinstance(item, Card):
            out.append(item)
        elif isinstance(item, str):
            parsed = _parse_token(item.strip())
            if len(parsed) != 1:
                raise ValueError(f"unknown card {item!r}")
            out.append(parsed[0])
        elif isinstance(item, int) and not isinstance(item, bool):
            if not 0 <= item < 52:
                raise ValueError(f"unknown card {item!r}: index out of range 0..51")
            out.append(_DECK[item])
        else:
            raise ValueError(f"unknown card {item!r}")
    return out


def format_cards(cards: Iterable[Card], symbols: bool = False) -> str:
    """Space-separated text of cards in the given order ("3S 4H"); ``parse_cards`` reads it."""
    if symbols:
        return " ".join(c.symbol for c in cards)
    return " ".join(c._text for c in cards)


def cards_of_mask(mask: int) -> list[Card]:
    """The cards of a 52-bit set (bit i is card index i), ascending."""
    out: list[Card] = []
    deck = _DECK
    while mask:
        low = mask & -mask
        out.append(deck[low.bit_length() - 1])
        mask ^= low
    return out


def mask_of(cards: Iterable[Card]) -> int:
    """The 52-bit set of cards, bit i for card index i (duplicates collapse)."""
    m = 0
    for c in cards:
        m |= c.bit
    return m
