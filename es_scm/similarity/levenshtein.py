r"""Edit distance as a source of term similarities for S: typos and inflections.

Implements the Levenshtein similarity of Charlet and Damnati (SimBow, SemEval 2017),
:math:`s_{ij} = \alpha\,(1 - d(t_i, t_j) / \max(|t_i|, |t_j|))^{\beta}` for edit distances
:math:`1 \le d \le` ``max_distance`` (positive values only), as gensim 4.4's
``LevenshteinSimilarityIndex``, whose neighbour selection is reproduced: a column with a budget
of k takes the terms at distance 1, then 2, …, stopping at the first distance that yields more
than k candidates, and keeps the k most similar (ties by the term's string). Distances come from
``rapidfuzz`` (``process.cdist``, ``pip install es-scm[levenshtein]``), in blocks of
``batch_size`` terms; the columns go to the one greedy builder
(:func:`es_scm.similarity.builder.greedy_matrix`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from es_scm.extras import require
from es_scm.options import LevenshteinOptions, SimilarityOptions
from es_scm.options.validation import check_terms
from es_scm.similarity.builder import column_order, greedy_matrix
from es_scm.similarity.sources import DTYPE

__all__ = ["BATCH_SIZE", "levenshtein_matrix"]

#: Terms per block of distances.
BATCH_SIZE = 1024


def levenshtein_matrix(
    terms: Sequence[str],
    edit: LevenshteinOptions,
    options: SimilarityOptions,
    *,
    document_frequencies: Sequence[float] | np.ndarray | None,
    dtype: np.dtype = DTYPE,
    batch_size: int = BATCH_SIZE,
) -> tuple[sparse.csc_matrix, dict[str, Any]]:
    """S over ``terms`` from edit distances, and the record of how it was built.

    The arguments are checked already (the public form is
    :meth:`es_scm.similarity.TermSimilarityMatrix.from_levenshtein`); of ``options``,
    ``nonzero_limit``, ``symmetric`` and ``dominant`` apply.

    Raises
    ------
    ImportError
        Without rapidfuzz: ``pip install es-scm[levenshtein]``.
    """
    process = require("rapidfuzz.process", "Levenshtein similarities")
    distance = require("rapidfuzz.distance", "Levenshtein similarities").Levenshtein.distance
    terms = check_terms(terms)
    limit = options.budget(len(terms))
    order, rank = column_order(len(terms), document_frequencies)
    pairs = _EMPTY
    if edit.max_distance > 0 and limit > 0 and len(terms) > 1:
        pairs = _pairs_within(process, distance, terms, edit.max_distance, batch_size)
    neighbours = _ranked_neighbours(terms, pairs, edit, rank, dtype)
    matrix = greedy_matrix(
        len(terms),
        order,
        limit,
        neighbours.candidates,
        options.symmetric,
        options.dominant,
        dtype,
    )
    info = {
        "source": "levenshtein",
        "alpha": edit.alpha,
        "beta": edit.beta,
        "max_distance": edit.max_distance,
        "nonzero_limit": options.nonzero_limit,
        "symmetric": options.symmetric,
        "dominant": options.dominant,
        "column_order": "id" if document_frequencies is None else "rarest",
    }
    return matrix, info


#: No pairs: (term, neighbour, distance) columns of length 0.
_EMPTY = (np.zeros(0, dtype=np.int64),) * 3


def _pairs_within(
    process: Any, distance: Any, terms: list[str], max_distance: int, batch_size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of distinct terms within ``max_distance`` edits, as int64 columns (term,
    neighbour, distance); rapidfuzz returns ``max_distance + 1`` for anything farther."""
    rows_parts = []
    cols_parts = []
    dist_parts = []
    for start in range(0, len(terms), batch_size):
        block = process.cdist(
            terms[start : start + batch_size],
            terms,
            scorer=distance,
            score_cutoff=max_distance,
            dtype=np.int32,
            workers=-1,
        )
        r, c = np.nonzero((block >= 1) & (block <= max_distance))
        rows_parts.append(r + start)
        cols_parts.append(c)
        dist_parts.append(block[r, c])
    if not rows_parts:
        return _EMPTY
    rows, cols, distances = (
        np.concatenate(parts).astype(np.int64) for parts in (rows_parts, cols_parts, dist_parts)
    )
    return rows, cols, distances


@dataclass(frozen=True)
class _Neighbours:
    """Every term's neighbours with a positive similarity, most similar first (ties by the
    neighbour's string): term t's are ``neighbours[starts[t]:starts[t + 1]]``."""

    starts: np.ndarray
    neighbours: np.ndarray
    distances: np.ndarray
    values: np.ndarray
    rank: np.ndarray
    max_distance: int

    def candidates(self, t1: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
        """Column ``t1``'s candidates for a budget of ``budget``, as gensim 4.4 selects them:
        distance 1, then 2, …, up to the first distance with more than the budget."""
        span = slice(self.starts[t1], self.starts[t1 + 1])
        if span.start == span.stop:
            return self.neighbours[span], self.values[span]
        d = self.distances[span]
        wanted = min(len(self.rank), budget + 1)  # gensim gathers one more: the term itself
        cutoff = self.max_distance
        for level in range(1, self.max_distance + 1):
            if np.count_nonzero(d <= level) >= wanted:
                cutoff = level
                break
        keep = np.flatnonzero(d <= cutoff)[:budget]
        row = self.neighbours[span][keep]
        values = self.values[span][keep]
        sort = np.argsort(self.rank[row], kind="stable")
        return row[sort], values[sort]


def _ranked_neighbours(
    terms: list[str],
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray],
    edit: LevenshteinOptions,
    rank: np.ndarray,
    dtype: np.dtype,
) -> _Neighbours:
    """The pairs' similarities α(1 − d / max(|t_i|, |t_j|))^β (float64, as gensim's Python
    floats), the positive ones ranked per term."""
    n = len(terms)
    qry, nbr, dist = pairs
    lengths = np.fromiter((len(t) for t in terms), dtype=np.int64, count=n)
    longest = np.maximum(np.maximum(lengths[qry], lengths[nbr]), 1)
    sims = edit.alpha * np.power(1.0 - dist / longest, edit.beta)
    string_rank = np.empty(n, dtype=np.int64)
    string_rank[sorted(range(n), key=terms.__getitem__)] = np.arange(n)
    positive = np.flatnonzero(sims > 0)
    # per term: most similar first, ties by the neighbour's string
    sort = positive[np.lexsort((string_rank[nbr[positive]], -sims[positive], qry[positive]))]
    return _Neighbours(
        starts=np.searchsorted(qry[sort], np.arange(n + 1)),
        neighbours=nbr[sort],
        distances=dist[sort],
        values=sims[sort].astype(dtype),
        rank=rank,
        max_distance=edit.max_distance,
    )
