r"""Paired comparisons of a method with a baseline, query by query: what a reviewer asks for.

Two methods evaluated on the same queries give two paired samples of per-query values (AP,
nDCG@10, …). A mean difference says little without its spread, so every comparison reports:

wins / ties / losses
    The queries on which the method scores above, equal to (within 1e-12) and below the baseline.
the paired randomization test (Fisher's sign-flip test)
    Under the null hypothesis that the two methods are exchangeable on every query, each
    per-query difference dᵢ is as likely to be −dᵢ. The p-value is the share of the
    :data:`PERMUTATIONS` random sign assignments whose mean |Σ ±dᵢ| / n is at least the observed
    |Σ dᵢ| / n, counting the observed assignment itself (so p ≥ 1/(permutations + 1)); two-sided.
    It assumes nothing about the distribution of the differences, which for IR measures is far
    from normal (Smucker, Allan and Carterette, CIKM 2007, recommend it).
the paired t-test
    ``scipy.stats.ttest_rel`` on the same pairs, two-sided; 1.0 when every difference is 0.

Both tests are seeded, so a report is reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

__all__ = [
    "PERMUTATIONS",
    "Comparison",
    "compare",
    "comparison_table",
    "paired_t_test",
    "randomization_test",
]

#: Random sign assignments of the randomization test (p is resolved to about 1e-4).
PERMUTATIONS = 10_000
_TIE = 1e-12
_CHUNK = 1_000  # sign assignments drawn at once (memory: chunk × queries booleans)


@dataclass(frozen=True)
class Comparison:
    """A method against the baseline on one measure, over ``queries`` paired queries.

    ``mean`` and ``baseline_mean`` are the measure's means (as the measure gives them, e.g.
    0.6982 for nDCG@10); ``wins``, ``ties`` and ``losses`` count the queries on which the method
    is above, level with and below the baseline; ``p_randomization`` and ``p_t`` are the
    two-sided p-values of the paired randomization test and the paired t-test.
    """

    method: str
    baseline: str
    measure: str
    queries: int
    mean: float
    baseline_mean: float
    wins: int
    ties: int
    losses: int
    p_randomization: float
    p_t: float

    @property
    def delta(self) -> float:
        """``mean − baseline_mean``."""
        return self.mean - self.baseline_mean

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "delta": self.delta}


def randomization_test(
    values: Sequence[float] | np.ndarray,
    baseline: Sequence[float] | np.ndarray,
    *,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> float:
    """The two-sided p-value of the paired randomization (sign-flip) test of the mean difference.

    Parameters
    ----------
    values, baseline : sequence of float
        The two methods' values on the same queries, in the same order.
    permutations : int
        Random sign assignments drawn (default :data:`PERMUTATIONS`).
    seed : int
        Seed of the random signs.

    Returns
    -------
    float
        In (0, 1]: 1.0 when every difference is 0.

    Raises
    ------
    ValueError
        If the samples differ in length, are empty, or ``permutations`` is not positive.
    """
    differences = _differences(values, baseline)
    if permutations < 1:
        raise ValueError(f"permutations must be a positive integer, got {permutations}")
    observed = abs(differences.sum())
    if observed <= _TIE:
        return 1.0
    rng = np.random.default_rng(seed)
    at_least = 0
    left = permutations
    while left:
        chunk = min(left, _CHUNK)
        signs = rng.integers(0, 2, size=(chunk, len(differences)), dtype=np.int8) * 2 - 1
        sums = np.abs(signs @ differences)
        # the tolerance keeps an assignment equal to the observed one from losing to rounding
        at_least += int(np.count_nonzero(sums >= observed - 1e-12 * max(1.0, observed)))
        left -= chunk
    return (at_least + 1) / (permutations + 1)


def paired_t_test(
    values: Sequence[float] | np.ndarray, baseline: Sequence[float] | np.ndarray
) -> float:
    """The two-sided p-value of the paired t-test (1.0 when the differences are all equal)."""
    from scipy import stats

    differences = _differences(values, baseline)
    if len(differences) < 2 or np.ptp(differences) <= _TIE:
        return 1.0 if abs(differences.mean()) <= _TIE else 0.0
    result = stats.ttest_rel(np.asarray(values, float), np.asarray(baseline, float))
    p = float(result.pvalue)
    return 1.0 if math.isnan(p) else p


def compare(
    per_query: Mapping[str, Mapping[str, float]],
    baseline: str,
    *,
    measure: str = "",
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> list[Comparison]:
    """Every method of ``per_query`` (method → query → value) against ``baseline``.

    The queries compared are the baseline's; a query that a method has no value for counts 0
    (a run that returned nothing for it).

    Raises
    ------
    ValueError
        If ``baseline`` is not one of the methods, or it has no query.
    """
    if baseline not in per_query:
        raise ValueError(f"baseline {baseline!r} is not one of the methods {sorted(per_query)}")
    queries = sorted(per_query[baseline])
    if not queries:
        raise ValueError(f"the baseline {baseline!r} has no query to compare on")
    reference = np.array([per_query[baseline][q] for q in queries], dtype=np.float64)
    comparisons = []
    for method, values_by_query in per_query.items():
        if method == baseline:
            continue
        values = np.array([values_by_query.get(q, 0.0) for q in queries], dtype=np.float64)
        difference = values - reference
        comparisons.append(
            Comparison(
                method=method,
                baseline=baseline,
                measure=measure,
                queries=len(queries),
                mean=float(values.mean()),
                baseline_mean=float(reference.mean()),
                wins=int(np.count_nonzero(difference > _TIE)),
                ties=int(np.count_nonzero(np.abs(difference) <= _TIE)),
                losses=int(np.count_nonzero(difference < -_TIE)),
                p_randomization=randomization_test(
                    values, reference, permutations=permutations, seed=seed
                ),
                p_t=paired_t_test(values, reference),
            )
        )
    return comparisons


def comparison_table(
    comparisons: Sequence[Comparison],
    collection: str,
    *,
    labels: Mapping[str, str] | None = None,
    header: bool = True,
) -> str:
    """A markdown table: per method, its mean and the baseline's (× 100), the difference, the
    two p-values and wins/ties/losses."""
    labels = labels or {}
    lines = []
    if header:
        lines = [
            "| collection | comparison | measure | method | baseline | Δ | p (randomization) "
            "| p (t-test) | wins/ties/losses |",
            "|:---|:---|:---|---:|---:|---:|---:|---:|:---:|",
        ]
    for c in comparisons:
        baseline = labels.get(c.baseline, c.baseline)
        lines.append(
            f"| {collection} | {labels.get(c.method, c.method)} vs {baseline} | {c.measure} "
            f"| {100 * c.mean:.2f} | {100 * c.baseline_mean:.2f} | {100 * c.delta:+.2f} "
            f"| {_p(c.p_randomization)} | {_p(c.p_t)} | {c.wins}/{c.ties}/{c.losses} |"
        )
    return "\n".join(lines)


def _p(value: float) -> str:
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def _differences(
    values: Sequence[float] | np.ndarray, baseline: Sequence[float] | np.ndarray
) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"paired samples must be two sequences of one length, got {a.shape} and {b.shape}"
        )
    if not len(a):
        raise ValueError("paired samples must not be empty")
    return a - b
