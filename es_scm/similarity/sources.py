r"""Word embeddings as a source of term similarities for S.

Implements :math:`s_{ij} = \cos(e_i, e_j)^{\text{exponent}}` for
:math:`\cos(e_i, e_j) > \text{threshold}` (the word-embedding similarity of Charlet and Damnati),
with each column's candidates handed to the one greedy builder
(:func:`es_scm.similarity.builder.greedy_matrix`), which bounds S to ``nonzero_limit``
off-diagonal non-zeros per column.

Like gensim's ``most_similar(term, topn)``, a neighbour search (:data:`Search`) gives a term's
most similar words; three of them, chosen with ``neighbors``:

``"terms"`` (the default)
    The most similar among the model's own terms: every neighbour found is usable.
``"vocabulary"``
    The most similar words of the *whole* embedding vocabulary, of which those among the terms are
    kept (gensim's semantics, so fewer than ``nonzero_limit`` may remain).
``"gensim"``
    The ``"vocabulary"`` neighbours computed with gensim's own float32 arithmetic, so that S
    equals gensim's bit for bit: the opt-in compatibility module
    :mod:`es_scm.similarity.gensim_compat`.

The first two use exact blocked BLAS products (:func:`es_scm.similarity.neighbors.top_candidates`):
no approximate index, fast enough for vocabularies of 10⁵–10⁶ words; ties are broken by term id
(``"terms"``) or by embedding row (``"vocabulary"``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import sparse

from es_scm.options import SimilarityOptions
from es_scm.options.validation import check_terms
from es_scm.progress import Progress
from es_scm.similarity.builder import column_order, greedy_matrix
from es_scm.similarity.neighbors import top_candidates, unit_rows

__all__ = ["DTYPE", "Search", "embedding_matrix"]

logger = logging.getLogger(__name__)

#: A neighbour search: (term id, k) → (term ids, -1 for words that are not terms; float32
#: cosines), most similar first.
Search = Callable[[int, int], tuple[np.ndarray, np.ndarray]]

#: S's float dtype unless told otherwise.
DTYPE = np.dtype(np.float32)
_EMPTY = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)


def embedding_matrix(
    terms: Sequence[str],
    embeddings: Any,  # WordEmbeddings (which import this module)
    options: SimilarityOptions,
    *,
    document_frequencies: Sequence[float] | np.ndarray | None,
    dtype: np.dtype,
    batch_size: int | None,
) -> tuple[sparse.csc_matrix, dict[str, Any]]:
    """S over ``terms`` from word embeddings (:class:`~es_scm.similarity.WordEmbeddings`), and
    the record of how it was built.

    The arguments are checked already (the public form is
    :meth:`es_scm.similarity.TermSimilarityMatrix.from_embeddings`): ``options`` when they were
    made, ``dtype`` a float dtype, ``batch_size`` None or positive. Columns are filled rarest
    term first by ``document_frequencies``, by term id without them (``options.column_order`` is
    applied by the caller).
    """
    terms = check_terms(terms)
    threshold = options.threshold
    exponent = options.exponent
    if threshold is None or exponent is None:  # resolved per source: options.source_settings
        raise ValueError("S from word vectors needs a threshold and an exponent, got None")
    limit = options.budget(len(terms))
    if threshold < 0 and not float(exponent).is_integer():
        raise ValueError(
            f"a negative threshold ({threshold}) needs an integer exponent, got {exponent}: "
            "a negative similarity has no real non-integer power"
        )
    order, rank = column_order(len(terms), document_frequencies)

    term_rows = embeddings.indices(terms)  # embedding row of each term, -1 if none
    search = _searches()[options.neighbors](embeddings.vectors, term_rows, limit, batch_size)

    def candidates(t1: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
        row, sims = search(t1, budget)
        keep = (row >= 0) & (sims > threshold)
        row = row[keep]
        if exponent == 2.0:
            values = np.square(sims[keep], dtype=np.float64).astype(dtype)
        else:
            values = np.power(sims[keep].astype(np.float64), exponent).astype(dtype)
        if len(row) > 1:
            sort = np.argsort(rank[row])  # ranks are distinct
            row, values = row[sort], values[sort]
        return row, values

    progress = Progress(logger, f"S from {embeddings.name}", len(terms), "terms")
    matrix = greedy_matrix(
        len(terms), order, limit, candidates, options.symmetric, options.dominant, dtype, progress
    )
    info = {
        "source": "embeddings",
        "embeddings": embeddings.describe(),
        "terms_with_vectors": int((term_rows >= 0).sum()),
        "nonzero_limit": options.nonzero_limit,
        "threshold": threshold,
        "exponent": exponent,
        "symmetric": options.symmetric,
        "dominant": options.dominant,
        "neighbors": options.neighbors,
        "column_order": "id" if document_frequencies is None else "rarest",
    }
    logger.info("S from %s: %d terms, %d non-zeros", embeddings.name, len(terms), matrix.nnz)
    return matrix, info


def _searches() -> dict[str, Callable[..., Search]]:
    from es_scm.similarity.gensim_compat import gensim_neighbours  # opt-in: loaded on demand

    return {
        "terms": terms_neighbours,
        "vocabulary": vocabulary_neighbours,
        "gensim": gensim_neighbours,
    }


def terms_neighbours(
    vectors: np.ndarray, term_rows: np.ndarray, limit: int, batch_size: int | None
) -> Search:
    """``search(t, k)``: term t's k most similar terms (ties by term order)."""
    has_vector = np.flatnonzero(term_rows >= 0)
    if limit == 0 or len(has_vector) < 2:
        return lambda t1, budget: _EMPTY
    unit = unit_rows(vectors[term_rows[has_vector]])
    k = min(limit + 1, len(has_vector))  # + 1: the term itself is among its most similar
    progress = Progress(logger, "neighbours of the terms", len(unit), "terms")
    found = top_candidates(unit, unit, k, block_size=batch_size, progress=progress)
    return _ranked_search(found, term_rows, np.arange(len(has_vector)), has_vector)


def vocabulary_neighbours(
    vectors: np.ndarray, term_rows: np.ndarray, limit: int, batch_size: int | None
) -> Search:
    """``search(t, k)``: term t's k most similar words in the whole vocabulary, as term ids.

    Words that are not terms come back as -1 (and are dropped by the caller), as gensim's
    ``WordEmbeddingSimilarityIndex`` does; ties are broken by embedding row.
    """
    has_vector = np.flatnonzero(term_rows >= 0)
    if limit == 0 or not len(has_vector) or len(vectors) < 2:
        return lambda t1, budget: _EMPTY
    to_term = np.full(len(vectors), -1, dtype=np.int64)
    to_term[term_rows[has_vector]] = has_vector
    unit = unit_rows(vectors)
    k = min(limit + 1, len(vectors))  # + 1: the word itself is among its most similar
    progress = Progress(logger, "neighbours of the terms", len(has_vector), "terms")
    queries = unit[term_rows[has_vector]]
    found = top_candidates(queries, unit, k, block_size=batch_size, progress=progress)
    return _ranked_search(found, term_rows, term_rows[has_vector], to_term)


def _ranked_search(
    found: tuple[np.ndarray, np.ndarray, np.ndarray],
    term_rows: np.ndarray,
    own_rows: np.ndarray,
    to_term: np.ndarray,
) -> Search:
    """A search over :func:`top_candidates` results: most similar first, ties by base row.

    The candidates of the i-th term with a vector are base rows; ``own_rows[i]`` is the term's
    own row among them (left out), and ``to_term`` maps a base row to a term id (or -1).
    """
    indptr, rows, sims = found
    position = np.full(len(term_rows), -1, dtype=np.int64)
    position[term_rows >= 0] = np.arange(int((term_rows >= 0).sum()))

    def search(t1: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
        p = position[t1]
        if p < 0:
            return _EMPTY
        candidates, values = rows[indptr[p] : indptr[p + 1]], sims[indptr[p] : indptr[p + 1]]
        best = np.lexsort((candidates, -values))
        best = best[candidates[best] != own_rows[p]][:budget]
        return to_term[candidates[best]], values[best]

    return search
