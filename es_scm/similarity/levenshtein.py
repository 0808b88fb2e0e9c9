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
from typing import Any

import numpy as np
from scipy import sparse

from es_scm.extras import require
from es_scm.options import LevenshteinOptions, SimilarityOptions
from es_scm.similarity.builder import column_order, greedy_matrix
from es_scm.similarity.sources import DTYPE
from es_scm.validation import check_terms

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
    Levenshtein = require("rapidfuzz.distance", "Levenshtein similarities").Levenshtein
    terms = check_terms(terms)
    alpha, beta, max_distance = edit.alpha, edit.beta, edit.max_distance
    limit = options.budget(len(terms))
    order, rank = column_order(len(terms), document_frequencies)
    n = len(terms)

    # All pairs within max_distance, as (row, col, distance); rapidfuzz returns
    # max_distance + 1 for anything farther.
    rows_parts, cols_parts, dist_parts = [], [], []
    if max_distance > 0 and limit > 0 and n > 1:
        for start in range(0, n, batch_size):
            block = process.cdist(
                terms[start : start + batch_size],
                terms,
                scorer=Levenshtein.distance,
                score_cutoff=max_distance,
                dtype=np.int32,
                workers=-1,
            )
            r, c = np.nonzero((block >= 1) & (block <= max_distance))
            rows_parts.append(r + start)
            cols_parts.append(c)
            dist_parts.append(block[r, c])
    if rows_parts:
        qry = np.concatenate(rows_parts).astype(np.int64)
        nbr = np.concatenate(cols_parts).astype(np.int64)
        dist = np.concatenate(dist_parts).astype(np.int64)
    else:
        qry = nbr = dist = np.zeros(0, dtype=np.int64)
    lengths = np.fromiter((len(t) for t in terms), dtype=np.int64, count=n)
    longest = np.maximum(np.maximum(lengths[qry], lengths[nbr]), 1)
    sims = alpha * np.power(1.0 - dist / longest, beta)  # float64, as gensim's Python floats
    positive = sims > 0
    qry, nbr, dist, sims = qry[positive], nbr[positive], dist[positive], sims[positive]
    # per query: most similar first, ties by the neighbour's string
    string_rank = np.empty(n, dtype=np.int64)
    string_rank[sorted(range(n), key=terms.__getitem__)] = np.arange(n)
    sort = np.lexsort((string_rank[nbr], -sims, qry))
    qry, nbr, dist, sims = qry[sort], nbr[sort], dist[sort], sims[sort]
    starts = np.searchsorted(qry, np.arange(n + 1))
    values = sims.astype(dtype)

    def candidates(t1: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = starts[t1], starts[t1 + 1]
        if lo == hi:
            return nbr[lo:hi], values[lo:hi]
        d = dist[lo:hi]
        wanted = min(n, budget + 1)  # gensim gathers one extra candidate for the term itself
        cutoff = max_distance
        for level in range(1, max_distance + 1):
            if np.count_nonzero(d <= level) >= wanted:
                cutoff = level
                break
        keep = np.flatnonzero(d <= cutoff)[:budget]
        row, vals = nbr[lo:hi][keep], values[lo:hi][keep]
        sort = np.argsort(rank[row], kind="stable")
        return row[sort], vals[sort]

    matrix = greedy_matrix(n, order, limit, candidates, options.symmetric, options.dominant, dtype)
    info = {
        "source": "levenshtein",
        "alpha": alpha,
        "beta": beta,
        "max_distance": max_distance,
        "nonzero_limit": options.nonzero_limit,
        "symmetric": options.symmetric,
        "dominant": options.dominant,
        "column_order": "id" if document_frequencies is None else "rarest",
    }
    return matrix, info
