"""The ranking metrics of the SemEval-2016/2017 Task 3 official scorer, and tie-stable ranking.

The official scorer (``MAP_scripts/ev.py`` and ``metrics.py`` of the SemEval-2016 Task 3
distribution) reads, for every original question q, its candidates in the order of the gold file,
sorts them by the system's score with Python's *stable* sort (so ties keep the gold file's order,
which is the IR baseline's order), and takes the relevance labels of the first ``th = 10``:
``rel_q(i) ∈ {0, 1}`` at rank i = 1 … n_q, with ``R_q = Σ_i rel_q(i)``. Then

MAP (``metrics.map``)
    AP(q) = (1 / R_q) · Σ_{i: rel_q(i) = 1} P_q(i),  P_q(i) = (Σ_{j ≤ i} rel_q(j)) / i,
    with **AP(q) = 0 when R_q = 0**, and MAP = (1/|Q|) Σ_q AP(q). (Only the top ``th`` count;
    R_q counts the relevant candidates within them.)
AvgRec (``metrics.avg_acc1``)
    A micro-averaged recall at k, averaged over k = 1 … th:
    AvgRec = (1/th) Σ_k [Σ_q Σ_{i ≤ k} rel_q(i)] / [Σ_q min(k, R_q)].
MRR (``metrics.mrr``)
    MRR = (1/|Q|) Σ_q 1 / rank of the first relevant candidate (0 when there is none).

All three are returned as fractions; tables multiply them by 100, as the task's papers do.
General IR metrics (TREC collections) come from ``ir_measures`` instead: see
:mod:`es_scm.evaluation.trec`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = [
    "OFFICIAL_CUTOFF",
    "average_precision",
    "average_recall",
    "mean_average_precision",
    "mean_reciprocal_rank",
    "rank_candidates",
    "reciprocal_rank",
    "semeval_scores",
]

OFFICIAL_CUTOFF = 10
"""The scorer's ``th``: only the top 10 candidates of every question count."""

TIE_DECIMALS = 12
"""Scores are rounded to this many decimals before ranking, so that floating-point noise between
two arithmetic paths of the same formula (e.g. local and Elasticsearch SCM) cannot reorder equal
scores."""

Ranking = Sequence[bool]


def rank_candidates(
    candidate_ids: Sequence[str],
    scores: Sequence[float] | Mapping[str, float],
    *,
    decimals: int | None = TIE_DECIMALS,
) -> list[str]:
    """Order candidates by decreasing score, ties kept in the given order (as the scorer does).

    The official scorer sorts with Python's stable ``sorted(..., reverse=True)`` over the gold
    file's order; pass ``candidate_ids`` in that order (the IR baseline's rank) to get the same
    tie-breaking.

    Parameters
    ----------
    candidate_ids : sequence of str
        The candidates, in the tie-breaking order.
    scores : sequence of float or mapping of str to float
        One score per candidate (positional), or by id; an id missing from a mapping scores 0.
    decimals : int or None, default=TIE_DECIMALS
        Round scores to this many decimals before comparing; ``None`` compares them as they are.

    Returns
    -------
    list of str
    """
    if isinstance(scores, Mapping):
        values = [float(scores.get(c, 0.0)) for c in candidate_ids]
    else:
        values = [float(s) for s in scores]
        if len(values) != len(candidate_ids):
            raise ValueError(f"{len(values)} scores for {len(candidate_ids)} candidates")
    if decimals is not None:
        values = [round(v, decimals) for v in values]
    order = sorted(range(len(candidate_ids)), key=lambda i: -values[i])  # stable
    return [candidate_ids[i] for i in order]


def average_precision(ranking: Ranking, cutoff: int = OFFICIAL_CUTOFF) -> float:
    """Official SemEval average precision of one ranked list of relevance labels.

    AP = (1 / R) Σ_{i ≤ cutoff, rel(i)} P(i) with P(i) = #relevant in the top i / i and R the
    number of relevant labels in the top ``cutoff``; AP = 0 when R = 0.

    Parameters
    ----------
    ranking : sequence of bool
        Relevance of the candidates, best-ranked first.
    cutoff : int, default=10
        The scorer's ``th``.

    Returns
    -------
    float in [0, 1]

    Examples
    --------
    >>> round(average_precision([True, False, True]), 6)  # (1/1 + 2/3) / 2
    0.833333
    >>> average_precision([False, False])
    0.0
    """
    hits = 0
    total = 0.0
    for i, relevant in enumerate(ranking[:cutoff], start=1):
        if relevant:
            hits += 1
            total += hits / i
    return total / hits if hits else 0.0


def reciprocal_rank(ranking: Ranking, cutoff: int = OFFICIAL_CUTOFF) -> float:
    """1 / rank of the first relevant candidate within ``cutoff``; 0 when there is none."""
    for i, relevant in enumerate(ranking[:cutoff], start=1):
        if relevant:
            return 1.0 / i
    return 0.0


def mean_average_precision(rankings: Mapping[str, Ranking], cutoff: int = OFFICIAL_CUTOFF) -> float:
    """MAP = (1/|Q|) Σ_q AP(q) over every question, AP = 0 for one without relevant candidates."""
    _check_nonempty(rankings)
    return sum(average_precision(r, cutoff) for r in rankings.values()) / len(rankings)


def mean_reciprocal_rank(rankings: Mapping[str, Ranking], cutoff: int = OFFICIAL_CUTOFF) -> float:
    """MRR = (1/|Q|) Σ_q 1/rank_q of the first relevant candidate (0 without one)."""
    _check_nonempty(rankings)
    return sum(reciprocal_rank(r, cutoff) for r in rankings.values()) / len(rankings)


def average_recall(rankings: Mapping[str, Ranking], cutoff: int = OFFICIAL_CUTOFF) -> float:
    """The scorer's AvgRec (``avg_acc1``): micro-averaged recall at k, averaged over k ≤ cutoff.

    AvgRec = (1/cutoff) Σ_{k=1}^{cutoff} [Σ_q #relevant in the top k of q] / [Σ_q min(k, R_q)],
    with R_q the number of relevant candidates of q. Like the scorer, a k whose denominator is 0
    (no relevant candidate in any question) raises ``ZeroDivisionError``.
    """
    _check_nonempty(rankings)
    found = [0.0] * cutoff
    possible = [0.0] * cutoff
    for ranking in rankings.values():
        labels = list(ranking)
        num_relevant = sum(1 for x in labels if x)
        running = 0
        for k in range(cutoff):
            if k < len(labels) and labels[k]:
                running += 1
            found[k] += running
            possible[k] += min(k + 1, num_relevant)
    return sum(f / p for f, p in zip(found, possible, strict=True)) / cutoff


def semeval_scores(
    rankings: Mapping[str, Ranking], cutoff: int = OFFICIAL_CUTOFF
) -> dict[str, float]:
    """MAP, AvgRec and MRR of the official scorer, in percent.

    Parameters
    ----------
    rankings : mapping of str to sequence of bool
        For every question, the relevance labels of its candidates in ranked order.
    cutoff : int, default=10

    Returns
    -------
    dict
        ``{"MAP": …, "AvgRec": …, "MRR": …}``, each × 100.
    """
    return {
        "MAP": 100.0 * mean_average_precision(rankings, cutoff),
        "AvgRec": 100.0 * average_recall(rankings, cutoff),
        "MRR": 100.0 * mean_reciprocal_rank(rankings, cutoff),
    }


def _check_nonempty(rankings: Mapping[str, Ranking]) -> None:
    if not rankings:
        raise ValueError("no questions to evaluate")
