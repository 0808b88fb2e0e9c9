"""Fusion of two rankings' scores: what hybrid BM25 + SCM search computes.

Pure functions over ``{document id: score}`` mappings, shared by search and evaluation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["interpolate_scores", "min_max"]


def min_max(
    scores: Mapping[str, float], candidates: Iterable[str] | None = None
) -> dict[str, float]:
    """Min-max normalization (s − min) / (max − min) over ``candidates`` (missing ones score 0).

    When every score is equal, every normalized score is 0.
    """
    ids = list(scores) if candidates is None else list(candidates)
    values = {c: float(scores.get(c, 0.0)) for c in ids}
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    if high <= low:
        return dict.fromkeys(values, 0.0)
    return {c: (v - low) / (high - low) for c, v in values.items()}


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
