"""The demo's terminal output: steps, a live progress bar and plain-text tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from bots_sdk.decimals import format_decimal
from demo.run import DemoResult


class Printer:
    """The demo's terminal output: steps, a progress line, and the final tables."""

    def __init__(self, out: object, style: object, *, interactive: bool) -> None:
        self.out = out
        self.style = style
        self.interactive = interactive
        self._last_progress = ""

    def write(self, text: str = "", ending: str = "\n") -> None:
        self.out.write(text, ending=ending)  # type: ignore[attr-defined]
        self.out.flush()  # type: ignore[attr-defined]

    def step(self, text: str) -> None:
        self._end_progress()
        self.write(self.style.MIGRATE_HEADING(f"==> {text}"))  # type: ignore[attr-defined]

    def detail(self, text: str) -> None:
        self._end_progress()
        self.write(f"    {text}")

    def progress(self, *, tables_done: int, tables_total: int, games_done: int,
                 games_total: int, elapsed: float) -> None:
        """The live bar: one line redrawn in place on a terminal; in a log (not a terminal)
        a line only when the counts change, so CI logs stay short."""
        if not tables_total:
            return  # not scheduled yet
        line = progress_line(
            tables_done=tables_done, tables_total=tables_total, games_done=games_done,
            games_total=games_total, elapsed=elapsed,
        )
        counts = line.split("  ", 1)[0]  # the bar and counts, without the clock
        if self.interactive:
            # \r and clear-to-end-of-line: a shorter line leaves nothing of the longer one.
            self.write(f"\r    {line}\x1b[K", ending="")
        elif counts != self._last_progress:
            self.write(f"    {line}")
        self._last_progress = counts

    def _end_progress(self) -> None:
        if self.interactive and self._last_progress:
            self.write()
        self._last_progress = ""

    def report(self, result: DemoResult) -> None:
        self._end_progress()
        self.step(
            f"{result.tournament_name}: {result.status} — {result.games} games "
            f"in {result.seconds:.0f}s"
        )
        if result.status_reason:
            self.detail(result.status_reason)
        self.write()
        self.write(format_table("Final standings", result.standings))
        if result.versions:
            self.write()
            self.write(f"Two versions of one bot: {result.versions}")
        self.write()
        self.write(format_table("Ratings", result.ratings))
        if result.hosted:
            self.write()
            self.write(f"Hosted: {result.hosted}")

    def serving(self, url: str, log_dir: Path) -> None:
        self.write()
        self.step(f"Browse the replays at {url}   (Ctrl-C to stop)")
        self.detail(f"process logs: {log_dir}")

    def organiser(self, *, login_url: str, username: str, password: str) -> None:
        self.step(f"Sign in as the organiser at {login_url}")
        self.detail(f"user {username}   password {password}   (a new password every run)")
        self.detail("then: Organise (/organise/new/) to create and start tournaments and "
                    "ladders (Celery beat ticks them), API tokens (/me/tokens/) for scripts")
        self.detail("or sign up (/accounts/signup/) as yourself: on the demo's site anyone may "
                    "organise; register your bot and enter it with the demo's bots and house bots")


def progress_line(*, tables_done: int, tables_total: int, games_done: int, games_total: int,
                  elapsed: float, width: int = 30) -> str:
    """`[#########.....]  47%  games 131/280  tables 6/14  4.1 games/s  ~36s left  32s`."""
    fraction = min(1.0, games_done / games_total) if games_total else 0.0
    filled = int(width * fraction)
    rate = games_done / elapsed if elapsed > 0 else 0.0
    eta = (
        f"  ~{(games_total - games_done) / rate:.0f}s left"
        if rate > 0 and games_done < games_total else ""
    )
    return (
        f"[{'#' * filled}{'.' * (width - filled)}] {100 * fraction:3.0f}%"
        f"  games {games_done}/{games_total}  tables {tables_done}/{tables_total}"
        f"  {rate:.1f} games/s{eta}  {elapsed:.0f}s"
    )


def format_table(title: str, rows: Sequence[Mapping[str, object]]) -> str:
    """A plain text table of dict rows (keys are the columns, in order)."""
    if not rows:
        return f"{title}: (none)"
    columns = list(rows[0])
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    numeric = [all(_is_number(row.get(c)) for row in rows) for c in columns]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [title, line(columns), line(["-" * w for w in widths])]
    out.extend(line(r) for r in cells)
    return "\n".join(out)


def _is_number(value: object) -> bool:
    """Numbers, and text that starts like one ("+2.00 ±0.82"), are right-aligned."""
    if isinstance(value, str):
        return value[:1].isdigit() or (value[:1] in "+-" and value[1:2].isdigit())
    return isinstance(value, int | float) and not isinstance(value, bool)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return format_decimal(value, 2 if abs(value) < 100 else 1)
    return str(value)
