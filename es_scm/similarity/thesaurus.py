"""A thesaurus as a source of term similarities for S: explicit (term, term, similarity) pairs."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from scipy import sparse

from es_scm.options.validation import check_dtype, check_terms
from es_scm.similarity.builder import assemble

__all__ = ["pairs_matrix"]


def pairs_matrix(
    terms: Sequence[str],
    pairs: Iterable[tuple[str, str, float]],
    *,
    symmetric: bool = True,
    ignore_missing: bool = True,
    dtype: Any = np.float32,
) -> tuple[sparse.csc_matrix, dict[str, Any]]:
    """S over ``terms`` from a thesaurus, and the record of how it was built.

    See :meth:`es_scm.similarity.TermSimilarityMatrix.from_pairs` for the parameters.
    """
    terms = check_terms(terms)
    dtype = check_dtype(dtype)
    index = {term: i for i, term in enumerate(terms)}
    cells: dict[tuple[int, int], float] = {}
    for pair in pairs:
        try:
            a, b, similarity = pair
        except (TypeError, ValueError) as error:
            raise ValueError(f"expected (term, term, similarity), got {pair!r}") from error
        similarity = float(similarity)
        if not math.isfinite(similarity):
            raise ValueError(f"the similarity of ({a!r}, {b!r}) is {similarity}, not finite")
        if a == b:
            raise ValueError(f"the pair ({a!r}, {b!r}) is on the diagonal, which is always 1")
        if a not in index or b not in index:
            if ignore_missing:
                continue
            missing = a if a not in index else b
            raise ValueError(f"the term {missing!r} is not one of the terms")
        i, j = index[a], index[b]
        cells[(j, i)] = similarity
        if symmetric:
            cells[(i, j)] = similarity
    n = len(terms)
    rows = np.fromiter((r for r, _ in cells), dtype=np.int64, count=len(cells))
    cols = np.fromiter((c for _, c in cells), dtype=np.int64, count=len(cells))
    values = np.fromiter(cells.values(), dtype=np.float64, count=len(cells))
    keep = values != 0
    matrix = assemble(n, rows[keep], cols[keep], values[keep], dtype)
    return matrix, {"source": "pairs", "pairs": int(keep.sum()), "symmetric": symmetric}
