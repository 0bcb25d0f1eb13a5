"""Every rule that differs by region, as option values of one rule set (docs/rules.md §9).

The engine has no per-region branches: a preset is only a named ``Options`` value, and a
replay records every option so a game can be re-simulated even if a preset changes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

# Bomb / chop-target categories used by the chop tables (see combos.category).
CHOP_CATEGORIES = ("2", "22", "ps3", "quad", "ps4")

SOUTH_CHOPS = (
    "2>ps3", "2>quad", "2>ps4",
    "22>quad", "22>ps4",
    "ps3>ps3", "ps3>quad", "ps3>ps4",
    "quad>quad", "quad>ps4",
    "ps4>ps4",
)  # fmt: skip
HUE_CHOPS = (
    "2>quad", "2>ps4",
    "22>ps4",
    "ps3>quad", "ps3>ps4",
    "quad>quad", "quad>ps4",
    "ps4>ps4",
)  # fmt: skip
DANANG_CHOPS = ("2>quad", "22>ps4")
NORTH_CHOPS = ("2>quad", "22>quad", "quad>quad")

SOUTH_STARTING_WINS = ("four_threes", "three_pairs_with_start")
SOUTH_OTHER_WINS = ("dragon", "five_pair_sequence", "six_pairs", "four_twos", "twelve_one_colour")
INSTANT_WIN_NAMES = (
    "four_threes", "three_pairs_with_start", "dragon", "five_pair_sequence", "six_pairs",
    "four_twos", "twelve_one_colour", "four_triples", "two_fours",
)  # fmt: skip


@dataclass(frozen=True)
class Options:
    """All rule options. Field docs name the docs/rules.md section they implement."""

    # §4 / §9 hue: the card that must open a starting game (0 = 3S, 1 = 3C).
    start_card: int = 0
    # §3 / §9 north: pair sequences exist at all.
    pair_sequences: bool = True
    # §9 north: like beats like (suit for singles and straights, colours for sets);
    # straights must be of one suit.
    like_beats_like: bool = False
    # §5: chop table, "target>bomb" over categories 2, 22, ps3, quad, ps4. A same-category
    # entry means a higher one (for ps4: a higher one of as many pairs, or a longer one).
    chops: tuple[str, ...] = SOUTH_CHOPS
    # §5 / §9 south_extended: after any play a pair sequence of 4+ pairs may chop, players
    # holding one that chops it are offered the chop out of turn.
    free_four_pair_chop: bool = False
    # §9 danang: the same offer, only after plays of these categories (e.g. "22").
    out_of_turn_chop_targets: tuple[str, ...] = ()
    # §7 instant wins, by game kind.
    starting_instant_wins: tuple[str, ...] = SOUTH_STARTING_WINS
    other_instant_wins: tuple[str, ...] = SOUTH_OTHER_WINS
    count_stuck_on_instant_win: bool = False
    instant_win_points: int = 4
    # §6.2 freezing: "standard", or "single_only" (danang: two or more unplayed -> nobody).
    freeze_mode: str = "standard"
    frozen_points: int = 4
    # §9 north: frozen players pay no stuck penalties (only a non-frozen last player does).
    frozen_pays_stuck: bool = True
    # §6.3 paying for the table when two or more are frozen.
    den_bai: bool = True
    # §6.1 places.
    last_pays_first: int = 2
    third_pays_second: int = 1
    thua_nhi_points: int = 1
    # §6.4 stuck values (also the values of chopped things in a chain, §6.5).
    value_black_two: int = 1
    value_red_two: int = 2
    value_three_pairs: int = 2
    value_four_of_a_kind: int = 3
    value_four_pairs: int = 4
    # §9 hue/danang: 3S stuck is worth this much (0 = not a stuck card).
    stuck_three_spades: int = 0
    # §6.5: a chop of a player's last play is not paid.
    went_out_exception: bool = True
    # §9 hue/danang.
    steal_lead: bool = False
    blind_three: bool = False
    blind_three_points: int = 2
    split_bombs: bool = False
    # §9 danang: every other player pays this to a player dealt a pair sequence of 4+ pairs.
    four_pair_bonus: int = 0
    # §9 north.
    no_finish_on_two: bool = False
    den_ca_lang: bool = False
    den_ca_lang_points: int = 2

    # Derived once in __post_init__ (the engine reads these on every move).
    _chop_pairs: frozenset[tuple[int, int]] = field(init=False, compare=False, repr=False)
    _chop_bits: int = field(init=False, compare=False, repr=False)
    _ootc: frozenset[int] = field(init=False, compare=False, repr=False)
    _hash: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("chops", "out_of_turn_chop_targets", "starting_instant_wins",
                     "other_instant_wins"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"option {name} must be a list of strings, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        pairs = set()
        for entry in self.chops:
            target, sep, bomb = entry.partition(">")
            if not sep or target not in CHOP_CATEGORIES or bomb not in ("ps3", "quad", "ps4"):
                raise ValueError(f"option chops: bad entry {entry!r} (want e.g. '2>quad')")
            pairs.add((CHOP_CATEGORIES.index(target) + 1, CHOP_CATEGORIES.index(bomb) + 1))
        for t in self.out_of_turn_chop_targets:
            if t not in CHOP_CATEGORIES:
                raise ValueError(f"option out_of_turn_chop_targets: unknown category {t!r}")
        for name in self.starting_instant_wins + self.other_instant_wins:
            if name not in INSTANT_WIN_NAMES:
                raise ValueError(f"unknown instant win {name!r}")
        if self.freeze_mode not in ("standard", "single_only"):
            raise ValueError(f"option freeze_mode must be 'standard' or 'single_only', "
                             f"got {self.freeze_mode!r}")
        if self.start_card not in range(52):
            raise ValueError(f"option start_card must be a card index 0..51, "
                             f"got {self.start_card!r}")
        for f in dataclasses.fields(self):
            if not f.name.startswith("_"):
                kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
                _checked(f.name, kind, getattr(self, f.name))
        object.__setattr__(self, "_chop_pairs", frozenset(pairs))
        object.__setattr__(self, "_chop_bits", sum(1 << (8 * t + b) for t, b in pairs))
        targets = CHOP_CATEGORIES if self.free_four_pair_chop else self.out_of_turn_chop_targets
        object.__setattr__(self, "_ootc",
                           frozenset(CHOP_CATEGORIES.index(t) + 1 for t in targets))
        object.__setattr__(self, "_hash", hash(tuple(
            getattr(self, f.name) for f in dataclasses.fields(self) if not f.name.startswith("_")
        )))

    def __hash__(self) -> int:  # computed once: options key the engine's caches
        return self._hash

    @property
    def chop_pairs(self) -> frozenset[tuple[int, int]]:
        """The chop table as (target category, bomb category) integer pairs."""
        return self._chop_pairs

    @property
    def chop_bits(self) -> int:
        """The chop table as a bit set: bit ``8 * target + bomb`` for each pair of
        ``chop_pairs`` (one shift and mask per lookup in the move generator)."""
        return self._chop_bits

    @property
    def out_of_turn_categories(self) -> frozenset[int]:
        return self._ootc

    def to_dict(self) -> dict[str, Any]:
        """Every option value, JSON-ready (lists for tuples)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name.startswith("_"):
                continue
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], base: Options | None = None) -> Options:
        """Options from a dict (missing keys from ``base``); an unknown key raises ValueError."""
        if not isinstance(data, dict):
            raise ValueError(f"options must be a mapping, got {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown option {unknown[0]!r}")
        base = base or Options()
        values = {n: getattr(base, n) for n in names}
        for name, value in data.items():
            values[name] = _checked(name, _FIELD_TYPES[name], value)
        return cls(**values)

    def replace(self, **changes: Any) -> Options:
        return Options.from_dict(changes, base=self)


# Field type names ("bool", "int", "str", "tuple[str, ...]"; the compiled class records the
# classes themselves, hence __name__).
_FIELD_TYPES: dict[str, str] = {
    f.name: f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    for f in dataclasses.fields(Options) if not f.name.startswith("_")}


def _checked(name: str, kind: str, value: object) -> object:
    """An option value from outside (JSON, a dict) checked against its field's type before
    it reaches the constructor: a bad value is a ValueError naming the option (the compiled
    constructor would raise a TypeError about C types instead)."""
    if kind.startswith("tuple"):
        if isinstance(value, str) or not isinstance(value, list | tuple) \
                or not all(isinstance(v, str) for v in value):
            raise ValueError(f"option {name} must be a list of strings, got {value!r}")
        return tuple(value)
    if kind == "bool" and type(value) is not bool:
        raise ValueError(f"option {name} must be true or false, got {value!r}")
    if kind == "int" and type(value) is not int:
        raise ValueError(f"option {name} must be an integer, got {value!r}")
    if kind == "str" and not isinstance(value, str):
        raise ValueError(f"option {name} must be a string, got {value!r}")
    return value


PRESETS: dict[str, Options] = {
    "south": Options(),
    "south_extended": Options(
        other_instant_wins=SOUTH_OTHER_WINS + ("four_triples", "two_fours"),
        free_four_pair_chop=True,
    ),
    "hue": Options(
        start_card=1,
        starting_instant_wins=(),
        chops=HUE_CHOPS,
        steal_lead=True,
        blind_three=True,
        stuck_three_spades=2,
        went_out_exception=False,
        split_bombs=True,
    ),
    "danang": Options(
        chops=DANANG_CHOPS,
        out_of_turn_chop_targets=("22",),
        steal_lead=True,
        blind_three=True,
        stuck_three_spades=2,
        four_pair_bonus=4,
        freeze_mode="single_only",
    ),
    "north": Options(
        pair_sequences=False,
        like_beats_like=True,
        chops=NORTH_CHOPS,
        starting_instant_wins=("four_threes",),
        other_instant_wins=("dragon", "six_pairs", "four_twos", "twelve_one_colour"),
        frozen_pays_stuck=False,
        no_finish_on_two=True,
        den_ca_lang=True,
    ),
}


def resolve_options(preset: str, options: Options | dict[str, Any] | None) -> Options:
    """The options of a preset with overrides applied; unknown preset raises ValueError."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r} (known: {', '.join(PRESETS)})")
    base = PRESETS[preset]
    if options is None:
        return base
    if isinstance(options, Options):
        return options
    return Options.from_dict(options, base=base)
