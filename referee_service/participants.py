"""Participant keys: how a seat of a table is named in text, `bot:<id>` for a registered
bot or `house:<name>` for a house bot (the referee's TableStarted.participants, the
worker's table plans, the `tienlen-referee play --seats` option).

Written and read here only, so no caller slices the prefix off by hand. A bare `<id>` is
read as a registered bot (what people type on the command line)."""

from __future__ import annotations

from dataclasses import dataclass

BOT_PREFIX = "bot:"
HOUSE_PREFIX = "house:"


@dataclass(frozen=True, slots=True)
class ParticipantKey:
    """A parsed key: exactly one of `bot_id` (a registered bot) and `house_bot` is set."""

    bot_id: str = ""
    house_bot: str = ""

    @property
    def house(self) -> bool:
        return bool(self.house_bot)

    def __str__(self) -> str:
        return participant_key(bot_id=self.bot_id, house_bot=self.house_bot)


def participant_key(*, bot_id: int | str = "", house_bot: str = "") -> str:
    """The key of a house bot (when `house_bot` is given) or of the registered bot `bot_id`."""
    return f"{HOUSE_PREFIX}{house_bot}" if house_bot else f"{BOT_PREFIX}{bot_id}"


def participant_parse(key: str) -> ParticipantKey:
    """`house:<name>` -> a house bot; `bot:<id>` or a bare `<id>` -> a registered bot."""
    if key.startswith(HOUSE_PREFIX):
        return ParticipantKey(house_bot=key[len(HOUSE_PREFIX):])
    return ParticipantKey(bot_id=key.removeprefix(BOT_PREFIX))


def participant_bot_id(key: str) -> str | None:
    """The registered bot's id of a key, None for a house bot."""
    parsed = participant_parse(key)
    return None if parsed.house else parsed.bot_id
