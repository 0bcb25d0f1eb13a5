"""What the client counts: its moves, fallbacks and strikes (`ClientStats`), and the bot's
own failures by where they happened (`ErrorTally`), so the log shows each distinct failure
once in full and only counts its repeats (at 2, 4, 8, ... times)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["ClientStats", "ErrorTally", "repeats", "worth_a_line"]


class ErrorTally:
    """Counts the bot's own failures by where they happened, so each distinct one is
    shown once in full (traceback: file and line) and its repeats are only counted."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}

    @staticmethod
    def site(exc: BaseException) -> str:
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is None:
            return "?"
        return f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"

    def add(self, kind: str, where: str) -> int:
        """Count one more; return how many so far."""
        key = (kind, where)
        self.counts[key] = self.counts.get(key, 0) + 1
        return self.counts[key]

    def summary(self) -> str:
        return ", ".join(f"{kind} at {where} x{n}" if where else f"{kind} x{n}"
                         for (kind, where), n in sorted(self.counts.items()))



def worth_a_line(count: int) -> bool:
    """Repeats are reported at 2, 4, 8, 16, ... times."""
    return count & (count - 1) == 0


def repeats(count: int) -> str:
    return f" ({count} times so far)" if count > 1 else ""


@dataclass
class ClientStats:
    moves: int = 0
    rejected: int = 0
    fallbacks: int = 0
    strikes: int = 0
    tables_done: int = 0
    games_done: int = 0
    reconnects: int = 0
