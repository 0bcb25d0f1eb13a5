"""Which bots cannot communicate out of band: the one predicate deal sharing rests on.

A deal played at several tables (field duplicates, docs/organiser-guide.md) is safe only
if no bot at one of those tables can tell a bot at another what it was dealt or saw. A
remote bot is a process the platform does not control: its author can connect it to
anything, and the owner rule sees accounts, not people (free sign-up: one person, many
accounts, one process pooling what every bot is sent). So **every bot that is
not isolated is presumed able to talk to every other one**, and the scheduler lets at most
one table of a deal group seat such bots (tournaments.scheduling.deal_groups).

Isolated: house bots (they run inside the referee, with its secret seed and nothing
else) and hosted bots (the platform runs their code sandboxed with no network and no
storage shared with another bot, docs/hosting.md; while a bot is hosted its own token does
not connect, so no author process can sit at its tables: tournaments.token_store). Every place that decides which tables may share a deal calls
`bot_isolated` and nothing else (the round robin's schedule, knockout rounds and ladder
ticks through `tournaments.services.tournaments`), so one change here changes them all;
tests/tournaments/test_isolation.py checks that no other test of "house" decides it.
"""

from __future__ import annotations

from typing import Protocol


class _BotLike(Protocol):
    house_bot: str
    hosting: str


def bot_isolated(bot: _BotLike) -> bool:
    """True when the bot cannot communicate out of band, so it may share a deal with bots
    at other tables: a house bot (run by the referee itself) or a hosted one (run by the
    platform in a sandbox without network). A remote bot — any process connecting with a
    token — is False: presumed to talk to every other one."""
    return bool(bot.house_bot) or bot.hosting == "hosted"
