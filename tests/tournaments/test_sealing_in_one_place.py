"""The fair-play sealing rule is written out in one module (tournaments/sealing.py).

A page, API view, export or event stream that tests a deal's reveal itself can get it
wrong or forget it, and nothing else would notice until a sealed result leaked. So the
source of the platform (tournaments/, platform/: Python and templates) is scanned for the
reveal predicate in every spelling it has had: an ORM lookup on `revealed_at`, a
comparison of it with None, `deal.revealed`, the seed shown only once revealed, and the
SQL test. Only tournaments/sealing.py may write it; tournaments/deals.py decides *when*
a deal is revealed (it writes `revealed_at`), so its UPDATE tests it too. Migrations are
history. Everything else calls the module (`revealed`, `sealed`, `deals_revealed`,
`is_revealed`, `game_check`, `deal_seed`, `sealed_games`, `reveal_state`, ...).

The thin web views read game rows only through the selectors, so the game page and the
replay download cannot skip the rule either (test_web_and_api_views_read_no_game_rows).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("tournaments", "platform")
SEALING = "tournaments/sealing.py"
# Where the predicate may be written, and why.
ALLOWED = {
    SEALING: "the rule itself",
    "tournaments/deals.py": "decides when a deal is revealed (sets revealed_at)",
}
PREDICATES = [
    re.compile(r"revealed_at__\w+"),                 # an ORM lookup: revealed_at__isnull=...
    re.compile(r"deal__revealed_at"),                # the same through a game, or Max(...) of it
    re.compile(r"revealed_at\s+is\s+(not\s+)?None"),  # a Python test of a row's value
    re.compile(r"revealed_at\s*[!=]="),
    re.compile(r"\bdeal\.revealed\b(?!_at)"),        # the old Deal.revealed property
    re.compile(r"public_seed"),                      # the old Deal.public_seed property
    re.compile(r"revealed_at\}?\s+IS\s+(NOT\s+)?NULL", re.IGNORECASE),  # hand-written SQL
    re.compile(r"\{%\s*if[^%]*revealed_at"),          # a template deciding it
]


def _sources() -> list[Path]:
    files: list[Path] = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in (".py", ".html", ".txt", ".sql") and "migrations" not in path.parts:
                files.append(path)
    return files


def _hits(path: Path) -> list[str]:
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        code = line.split("#", 1)[0] if path.suffix == ".py" else line
        found += [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for p in PREDICATES if p.search(code)]
    return found


def test_the_reveal_predicate_is_written_only_in_the_sealing_module() -> None:
    sources = _sources()
    assert len(sources) > 100, "the scan found too few files: is ROOT right?"
    outside = [hit for path in sources if str(path.relative_to(ROOT)) not in ALLOWED for hit in _hits(path)]
    assert not outside, (
        "the reveal rule is written out outside tournaments/sealing.py; call the module instead:\n"
        + "\n".join(outside)
    )


def test_the_scan_recognises_the_rule_where_it_is_written() -> None:
    # Not vacuous: the patterns find the predicate in the module that owns it, and in
    # every spelling a reader might use.
    assert _hits(ROOT / SEALING)
    for spelling in ('Game.objects.filter(deal__revealed_at__isnull=False)', "if deal.revealed_at is None:",
                     'Q(revealed_at__isnull=True)', "return deal.public_seed", "if game.deal.revealed:",
                     "WHERE d.revealed_at IS NULL", "{% if d.revealed_at %}", 'Max("deal__revealed_at")'):
        assert any(p.search(spelling) for p in PREDICATES), spelling


def test_web_and_api_views_read_no_game_rows() -> None:
    # The game page, the replay download, the live stream and the API views read games,
    # seats, replays and ratings through tournaments.selectors (which ask
    # tournaments.sealing), never the models' managers.
    rows = re.compile(r"\b(Game|GameSeat|Replay|Deal|RatingChange|Rating|Tournament|Table)\.objects\b")
    views = [p for p in (ROOT / "platform/web").glob("*.py") if p.name.startswith("views") or p.name == "live.py"]
    views += list((ROOT / "tournaments/api").glob("views*.py"))
    assert len(views) >= 6
    found = [f"{p.name}:{n}: {line.strip()}" for p in views
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1) if rows.search(line)]
    assert not found, "\n".join(found)
