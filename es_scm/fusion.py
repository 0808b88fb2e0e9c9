"""Fusion of two rankings: what hybrid BM25 + SCM search computes.

Pure functions over ``{document id: score}`` mappings and ranked id lists, shared by search
(:mod:`es_scm.elastic.hybrid`) and evaluation:

linear
    ``α · minmax(BM25) + (1 − α) · minmax(SCM)`` over the candidates, where
    minmax(s) = (s − min) / (max − min) over the same candidates (:func:`interpolate_scores`).
reciprocal rank fusion (RRF)
    ``Σ_lists 1 / (k + rank)`` over the lists in which a document appears, ranks from 1
    (Cormack, Clarke and Büttcher, SIGIR 2009; :func:`reciprocal_rank_fusion`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "interpolate_scores",
    "min_max",
    "min_max_range",
    "reciprocal_rank_fusion",
    "scale",
]


def min_max_range(
    scores: Mapping[str, float], candidates: Iterable[str] | None = None
) -> tuple[float, float]:
    """``(min, max)`` of the scores of ``candidates`` (missing ones score 0); (0, 0) for none."""
    ids = list(scores) if candidates is None else list(candidates)
    values = [float(scores.get(c, 0.0)) for c in ids]
    return (min(values), max(values)) if values else (0.0, 0.0)


def scale(value: float, low: float, high: float) -> float:
    """(value − low) / (high − low), 0 when every score is equal."""
    return (value - low) / (high - low) if high > low else 0.0


def min_max(
    scores: Mapping[str, float], candidates: Iterable[str] | None = None
) -> dict[str, float]:
    """Min-max normalization (s − min) / (max − min) over ``candidates`` (missing ones score 0).

    When every score is equal, every normalized score is 0.
    """
    ids = list(scores) if candidates is None else list(candidates)
    low, high = min_max_range(scores, ids)
    return {c: scale(float(scores.get(c, 0.0)), low, high) for c in ids}


def interpolate_scores(
    first: Mapping[str, float],
    second: Mapping[str, float],
    alpha: float,
    candidates: Iterable[str] | None = None,
) -> dict[str, float]:
    """Linear interpolation α · minmax(first) + (1 − α) · minmax(second).

    Parameters
    ----------
    first, second : mapping of str to float
        Two scorings of (some of) the candidates; a missing candidate scores 0 before
        normalization.
    alpha : float in [0, 1]
        The weight of ``first``.
    candidates : iterable of str, optional
        The candidates to fuse; by default the union of both mappings' keys.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    ids = list(dict.fromkeys([*first, *second])) if candidates is None else list(candidates)
    a, b = min_max(first, ids), min_max(second, ids)
    return {c: alpha * a[c] + (1.0 - alpha) * b[c] for c in ids}


def reciprocal_rank_fusion(rankings: Iterable[Sequence[str]], k: int = 60) -> dict[str, float]:
    """RRF: Σ over the ranked lists of 1 / (k + rank of the document), ranks from 1.

    Parameters
    ----------
    rankings : iterable of sequences of str
        Ranked document ids, best first (e.g. BM25's and the SCM's top depth).
    k : int, default=60
        The constant of Cormack et al.: a larger k flattens the weight of the top ranks.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be an integer >= 0, got {k!r}")
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + 1.0 / (k + rank)
    return fused
