"""The collusion report: did two bots gain together at the tables they shared?

Two accounts that meet at one table can share their hands and help each other (pass
instead of beating the partner, feed the partner the plays it can beat): nothing at the
table can stop it, so the organiser needs to see it. For every pair of entrants that
shared tables of three or four, the report compares what each did at those tables with
what it was expected to do there, and tests whether the pair's **joint gain** is larger
than chance, correcting for the number of pairs tested.

**Scores.** Each seat's luck-adjusted score (tournaments.scoring.adjusted: points minus
the mean result of the same cards), so the cards a pair happened to hold together do not
count as a gain.

**Expectation.** A bot's adjusted score depends on who else sits at the table: in a
zero-sum game a bot gains what its opponents lose. So the expectation is a model fitted to
every game: each entrant has a strength θ, and a seat's expected adjusted score is
k/(k−1) · (θ_bot − mean θ of the table's k bots) (the adjusted scores of a game sum to
zero, as the model's do). The pair's own shared games are **left out of the fit** (every
seat of them), so the expectation of i and j at those tables comes from their games apart
and from the others' games. Without the model a weak pair would look like colluders: at
their shared tables each faces one weak opponent (the other) instead of a field-average
one, a gain of about a third of their weakness, with honest play.

**The test.** For the n shared games g of i and j, at tables of k ≥ 3 seats: the gain of
i is the mean of (adjusted − expected), the same for j, and the joint gain their sum. A
game's seat errors are zero-sum and exchangeable, covariance τ²·(I − J/k) (so ordinary
least squares is the efficient fit); τ² is estimated from all residuals (RSS / degrees of
freedom). The joint gain's variance is τ²·[Σ_g 2(k_g−2)/k_g] / n² (the two seats' errors
in one game) plus the fitted expectation's own variance, τ² · vᵀ(XᵀX)⁺v. Its z-score
gives a one-sided p-value (only a gain is suspicious; a pair that lost together harmed
only itself). At a table of two the pair are the only players and their joint score is
always zero: such games are left out of the test.

**Many pairs.** A field of N bots has up to N(N−1)/2 pairs. The p-values are corrected by
**Holm's step-down procedure**, which bounds the probability of flagging *any* honest pair
(the family-wise error) by α (default 0.01), whatever the dependence between the tests (pairs share
bots and games, so they are dependent). Benjamini–Hochberg would bound only the expected
share of false flags among the flags, and only under positive dependence; a flag accuses
two accounts of cheating, and a field rarely holds more than one or two colluding pairs,
where BH's extra power is small. Only pairs that could communicate are tested (both
remote bots: house bots are the platform's own code); the others are listed, untested.
The false-positive rate and the power are measured in benchmarks/collusion_bench.py.

Pure functions over numbers (numpy), no Django: tournaments/selectors/collusion.py reads
the games.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tournaments.scoring.adjusted import GameRow, adjusted_scores

#: The default family-wise error rate. 0.01, not 0.05: the model's z-scores of honest pairs
#: spread a little wider than a normal's (who sits after whom, and two weak bots together,
#: are not quite additive), so in simulated honest round robins a nominal 0.05 flagged some
#: honest pair in 7-10 % of tournaments and 0.01 in 2 % (benchmarks/README.md).
DEFAULT_ALPHA = 0.01
#: Pairs with fewer shared games (at tables of 3 or more) are listed but not tested: a
#: mean of a handful of games is too far from normal for a p-value to mean much.
MIN_GAMES = 4

#: Eigenvalues below this share of the largest count as zero: removing a pair's games
#: from XᵀX by subtraction leaves rounding noise (~1e-15) in the directions the games do
#: not determine, which the pseudo-inverse must not invert.
RCOND = 1e-10

METHOD = (
    "For each pair: the mean over their shared games (tables of 3 or 4) of each bot's "
    "luck-adjusted score minus its expectation there (a strength model fitted to every "
    "other game), summed; one-sided z-test of that joint gain, Holm-corrected over the "
    "pairs of remote bots tested."
)


@dataclass(frozen=True)
class PairRow:
    a: int  # entrant ids, a < b
    b: int
    games: int  # shared games at tables of three or more
    gain_a: float  # mean of a's adjusted score minus its expectation, over those games
    gain_b: float
    joint_gain: float  # gain_a + gain_b, points a game
    se: float  # standard error of joint_gain (inf: cannot be tested)
    z: float
    p_value: float  # one-sided: the chance of a joint gain this large with honest play
    p_adjusted: float | None  # Holm over the tested pairs; None when not tested
    tested: bool
    flagged: bool
    note: str = ""  # why a pair is not tested


@dataclass(frozen=True)
class CollusionReport:
    pairs: list[PairRow]  # most suspicious first
    tested: int
    flagged: int
    alpha: float
    games: int  # games counted
    residual_sd: float  # the fitted τ: spread of a seat's adjusted score around expectation
    method: str = METHOD


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _upper_tail(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


@dataclass
class _Game:
    bots: np.ndarray  # entrant index per seat
    scores: np.ndarray  # adjusted score per seat
    k: int


def collusion_report(
    games: Sequence[GameRow],
    *,
    can_collude: Callable[[int], bool] = lambda entrant: True,
    alpha: float = DEFAULT_ALPHA,
    min_games: int = MIN_GAMES,
) -> CollusionReport:
    """The report over `games` (each with its deal key and baseline, as the standings
    take them); `can_collude(entrant)` says whether an entrant is a remote bot (only pairs
    of two such are tested)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, not {alpha}")
    # Uncorrected for the counterparts' strength: the report fits every bot's strength
    # itself (below), and its false-positive rates and power were measured with these
    # scores (benchmarks/collusion_bench.py).
    scores = adjusted_scores(games, correct_counterparts=False)
    ids = sorted({e for g in games for e in g.entrants})
    index = {e: i for i, e in enumerate(ids)}
    n_bots = len(ids)
    played: list[_Game] = []
    shared: dict[tuple[int, int], list[int]] = defaultdict(list)
    xtx = np.zeros((n_bots, n_bots))
    xty = np.zeros(n_bots)
    for g, row in zip(games, scores, strict=True):
        k = len(g.entrants)
        if k < 2:
            continue
        bots = np.array([index[e] for e in g.entrants])
        a = np.array(row, dtype=float)
        played.append(_Game(bots, a, k))
        _add(xtx, xty, bots, a, k, 1.0)
        gi = len(played) - 1
        for x in range(k):
            for y in range(x + 1, k):
                p, q = sorted((int(bots[x]), int(bots[y])))
                shared[(p, q)].append(gi)
    if not played:
        return CollusionReport([], 0, 0, alpha, 0, 0.0)
    theta = np.linalg.pinv(xtx, rcond=RCOND, hermitian=True) @ xty
    rss = 0.0
    dof = 0
    for pg in played:
        rss += float(np.sum((pg.scores - _expected(theta, pg)) ** 2))
        dof += pg.k - 1
    dof -= int(np.linalg.matrix_rank(xtx, tol=RCOND * float(np.abs(xtx).max()), hermitian=True))
    tau2 = rss / dof if dof > 0 else math.inf

    rows: list[PairRow] = []
    for (p, q), game_ids in shared.items():
        rows.append(_pair(p, q, game_ids, played, xtx, xty, tau2, ids, can_collude, min_games))
    tested = [r for r in rows if r.tested]
    adjusted = holm([r.p_value for r in tested])
    final: list[PairRow] = []
    by_pair = {(r.a, r.b): adj for r, adj in zip(tested, adjusted, strict=True)}
    for r in rows:
        adj = by_pair.get((r.a, r.b))
        final.append(PairRow(
            r.a, r.b, r.games, r.gain_a, r.gain_b, r.joint_gain, r.se, r.z, r.p_value, adj,
            r.tested, adj is not None and adj <= alpha, r.note,
        ))
    final.sort(key=lambda r: (not r.tested, r.p_value, -r.joint_gain, r.a, r.b))
    return CollusionReport(
        pairs=final, tested=len(tested), flagged=sum(r.flagged for r in final), alpha=alpha,
        games=len(played), residual_sd=math.sqrt(tau2) if math.isfinite(tau2) else math.inf,
    )



def _add(xtx: np.ndarray, xty: np.ndarray, bots: np.ndarray, a: np.ndarray, k: int, sign: float) -> None:
    """Add (sign 1) or remove (−1) a game's rows: c·(e_bot − 1_T/k) per seat, c = k/(k−1);
    their XᵀX is c²·(I − J/k) on the table's bots, Xᵀy is c·(a − mean a)."""
    c = k / (k - 1)
    block = c * c * (np.eye(k) - 1.0 / k)
    xtx[np.ix_(bots, bots)] += sign * block
    xty[bots] += sign * c * (a - a.mean())


def _estimable(xtx: np.ndarray, v: np.ndarray) -> bool:
    """vᵀθ is determined by the games: v is orthogonal to every direction of θ the games
    leave free (the null space of XᵀX; always the common shift of all strengths)."""
    values, vectors = np.linalg.eigh(xtx)
    free = vectors[:, values <= 1e-9 * max(1.0, float(values.max(initial=0.0)))]
    return bool(np.all(np.abs(free.T @ v) <= 1e-9 * max(1.0, float(np.linalg.norm(v)))))


def _expected(theta: np.ndarray, pg: _Game) -> np.ndarray:
    t = theta[pg.bots]
    return pg.k / (pg.k - 1) * (t - t.mean())


def _pair(
    p: int, q: int, game_ids: list[int], played: list[_Game], xtx: np.ndarray, xty: np.ndarray,
    tau2: float, ids: list[int], can_collude: Callable[[int], bool], min_games: int,
) -> PairRow:
    a_id, b_id = ids[p], ids[q]
    remote = can_collude(a_id) and can_collude(b_id)
    xtx_out = xtx.copy()
    xty_out = xty.copy()
    for gi in game_ids:
        pg = played[gi]
        _add(xtx_out, xty_out, pg.bots, pg.scores, pg.k, -1.0)
    tests = [played[gi] for gi in game_ids if played[gi].k >= 3]
    n = len(tests)
    if n == 0:
        return PairRow(a_id, b_id, 0, 0.0, 0.0, 0.0, math.inf, 0.0, 1.0, None, False, False,
                       "only at tables of two, where the pair are the only players")
    pinv = np.linalg.pinv(xtx_out, rcond=RCOND, hermitian=True)
    theta = pinv @ xty_out
    gain_p = gain_q = 0.0
    v = np.zeros(len(ids))
    seat_var = 0.0
    for pg in tests:
        expected = _expected(theta, pg)
        sp = int(np.flatnonzero(pg.bots == p)[0])
        sq = int(np.flatnonzero(pg.bots == q)[0])
        gain_p += pg.scores[sp] - expected[sp]
        gain_q += pg.scores[sq] - expected[sq]
        c = pg.k / (pg.k - 1)
        v[pg.bots] -= 2 * c / pg.k
        v[p] += c
        v[q] += c
        seat_var += 2 * (pg.k - 2) / pg.k
    gain_p /= n
    gain_q /= n
    v /= n
    joint = gain_p + gain_q
    # The expectation is estimable only if v is orthogonal to what the other games leave
    # undetermined (e.g. a bot that played no game without its partner).
    estimable = _estimable(xtx_out, v)
    note = ""
    if not estimable:
        note = "no games apart to compare with"
    elif not remote:
        note = "a house bot: it cannot collude"
    elif n < min_games:
        note = f"fewer than {min_games} shared games"
    if not estimable or not math.isfinite(tau2):
        return PairRow(a_id, b_id, n, gain_p, gain_q, joint, math.inf, 0.0, 1.0, None, False, False, note)
    var = tau2 * (seat_var / (n * n) + float(v @ pinv @ v))
    se = math.sqrt(max(var, 0.0))
    z = joint / se if se > 0 else 0.0
    tested = remote and n >= min_games
    return PairRow(a_id, b_id, n, gain_p, gain_q, joint, se, z, _upper_tail(z), None, tested, False, note)

