r"""gensim's neighbour search, bit for bit: an opt-in compatibility mode (``neighbors="gensim"``).

gensim 4.4's ``SparseTermSimilarityMatrix(WordEmbeddingSimilarityIndex(kv, threshold,
exponent), dictionary, tfidf, symmetric, dominant, nonzero_limit)`` — the matrix of gensim's SCM
notebook — is reproduced bit for bit when S is built with ``neighbors="gensim"``. This is for
users who must get gensim's numbers exactly (and for the tests that prove es-scm computes what
gensim computes); the default modes (:mod:`es_scm.similarity.sources`) use plain BLAS products
and are faster. The bits depend on the BLAS build (OpenBLAS's kernels, probed at run time), which
is why this is not the default.

:class:`GensimMostSimilar` is gensim 4.4's ``KeyedVectors.most_similar(word, topn)`` — the
neighbour search behind ``WordEmbeddingSimilarityIndex`` — evaluated only on a small pool of
candidates per word instead of the whole vocabulary; :func:`gensim_neighbours` finds the pools
with :func:`es_scm.similarity.neighbors.top_candidates` and the margin of :func:`pool_margin`.

Why a pool suffices (the margin)
--------------------------------
gensim scores word j against query word i as :math:`g_j = \mathrm{fl}(v_j \cdot m) / \lVert
v_j\rVert`, a float32 matrix–vector product (``sgemv``) with the unit mean vector m of word i.
:func:`~es_scm.similarity.neighbors.top_candidates` computes
:math:`a_j = \mathrm{fl}(\hat v_j \cdot m)` with the unit rows :math:`\hat v_j` in a float32
matrix–matrix product (``sgemm``), which sums in another order.
For unit vectors in d dimensions, any float32 summation order is within
:math:`\gamma_d = d u / (1 - d u)` (u = 2⁻²⁴) of the exact dot product (Higham, *Accuracy and
Stability of Numerical Algorithms*, §3.1), and the normalizations add a few u, so
:math:`|a_j - g_j| \le \varepsilon = 2\gamma_d + 4u` (:func:`cosine_error_bound`). If
:math:`A_k` is the k-th largest :math:`a_j`, then the k-th largest :math:`g_j` is at least
:math:`A_k - \varepsilon`, and every word with :math:`a_j < A_k - 2\varepsilon` has
:math:`g_j < A_k - \varepsilon`: it is not among gensim's k best. So the pool
:math:`\{j : a_j \ge A_k - 2\varepsilon\}` holds gensim's top k for every k' ≤ k, and gensim's
own scores of the pool decide the order.

Bit for bit
-----------
gensim's scores come from one ``sgemv`` over the whole vocabulary. OpenBLAS's kernel computes
rows in groups of four, and a row's float32 result depends only on the kernel that handles it,
so a single-threaded ``sgemv`` over any subset whose size is a multiple of four gives the same
bits for every row of the subset. The few rows that the big product leaves to the remainder
kernel (the end of each thread's share when it is not a multiple of four) are found once by
comparing the two on random probe vectors, and are recomputed as remainders. When two pool
scores are exactly equal at the cut-off, gensim's choice depends on ``numpy.argpartition`` over
the whole vocabulary, so that word is recomputed exactly as gensim computes it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import blas

from es_scm.similarity.neighbors import cosine_error_bound, top_candidates, unit_rows

__all__ = ["GensimMostSimilar", "gensim_neighbours", "pool_margin"]

#: A neighbour search: (term id, k) → (term ids, float32 cosines), most similar first.
Search = Callable[[int, int], tuple[np.ndarray, np.ndarray]]


class GensimMostSimilar:
    """gensim 4.4's ``KeyedVectors.most_similar(word, topn)``, bit for bit, on a candidate pool.

    Parameters
    ----------
    vectors : numpy.ndarray
        The float32 ``(n_words, dim)`` embedding matrix (gensim's ``KeyedVectors.vectors``).

    Notes
    -----
    gensim computes, for the word in row i: the unit vector ``v_i / ‖v_i‖`` (float32), its mean
    over the one positive key divided by the float64 weight 1.0 (so float64), normalized by
    BLAS ``dnrm2``/``dscal`` and cast to float32 (:meth:`mean`); then
    ``dists = dot(vectors, mean) / norms`` over the whole vocabulary, the ``topn + 1`` largest by
    ``matutils.argsort`` (``argpartition``, then ``argsort`` of those) and the word itself
    dropped (:meth:`full_search`). :meth:`search` gives the same result from a pool that holds
    the ``topn + 1`` best (see the module docstring).
    """

    PROBES = 16  # random vectors that reveal which rows gensim's product computes as remainders

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.norms = np.linalg.norm(self.vectors, axis=1)  # gensim's fill_norms
        # Zero vectors make gensim divide 0 by 0; such words are left to the full search.
        self._zero = self.norms == 0
        self._any_zero = bool(self._zero.any())
        # Rows per sgemv call: a multiple of four, and small enough that OpenBLAS runs it on
        # one thread (it splits products of more than 9,216 elements between threads, and a
        # split that is not a multiple of four makes remainders).
        self._chunk = max(4, 8192 // max(1, self.vectors.shape[1]) // 4 * 4)
        self._gathered = np.empty((self._chunk, self.vectors.shape[1]), dtype=np.float32)
        self._run_start, self._run_end = self._remainder_runs()
        self._remainder = self._run_start >= 0

    def mean(self, row: int) -> np.ndarray:
        """gensim's unit mean vector of the key in ``row`` (float32; NaN for a zero vector)."""
        if self._zero[row]:
            return np.full(self.vectors.shape[1], np.nan, dtype=np.float32)
        # get_vector(norm=True) in float32, then (0 + 1.0 · unit) / 1.0 in float64
        mean = (self.vectors[row] / self.norms[row]).astype(np.float64)
        return blas.dscal(1.0 / blas.dnrm2(mean), mean).astype(np.float32)  # unitvec

    def scores(self, mean: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """gensim's float32 ``dot(vectors, mean) / norms`` at ``rows``, bit for bit."""
        rows = np.asarray(rows, dtype=np.int64)
        products = self._grouped_products(rows, mean)
        for i in np.flatnonzero(self._remainder[rows]):
            products[i] = self._remainder_product(int(rows[i]), mean)
        if self._any_zero:
            with np.errstate(invalid="ignore", divide="ignore"):
                return products / self.norms[rows]
        return products / self.norms[rows]

    def _grouped_products(self, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """``vectors[rows] @ vector`` by single-threaded sgemv calls on groups of four rows."""
        result = np.empty(len(rows), dtype=np.float32)
        for start in range(0, len(rows), self._chunk):
            chunk = rows[start : start + self._chunk]
            size = -(-len(chunk) // 4) * 4
            gathered = self._gathered[:size]
            np.take(self.vectors, chunk, axis=0, out=gathered[: len(chunk)])
            gathered[len(chunk) :] = 0  # padding rows to a group of four
            result[start : start + len(chunk)] = np.dot(gathered, vector)[: len(chunk)]
        return result

    def _remainder_runs(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows that gensim's one big sgemv computes outside groups of four.

        OpenBLAS's kernel takes rows four at a time and finishes a thread's share with a
        remainder kernel that sums in another order. Comparing the big product with
        :meth:`_grouped_products` for random probe vectors finds those rows; each is recorded
        with its run of consecutive remainder rows, which is recomputed as one call.
        """
        n = len(self.vectors)
        start = np.full(n, -1, dtype=np.int64)
        end = np.full(n, -1, dtype=np.int64)
        if n == 0:
            return start, end
        rng = np.random.default_rng(0)
        everything = np.arange(n)
        differs = np.zeros(n, dtype=bool)
        for probe in rng.standard_normal((self.PROBES, self.vectors.shape[1])).astype(np.float32):
            differs |= np.dot(self.vectors, probe) != self._grouped_products(everything, probe)
        flagged = np.flatnonzero(differs)
        if flagged.size:
            breaks = np.flatnonzero(np.diff(flagged) != 1) + 1
            for run in np.split(flagged, breaks):
                start[run] = run[0]
                end[run] = run[-1] + 1
        return start, end

    def full_search(self, row: int, topn: int) -> tuple[np.ndarray, np.ndarray]:
        """gensim's own computation over the whole vocabulary: (rows, float32 similarities)."""
        mean = self.mean(row)
        with np.errstate(invalid="ignore", divide="ignore"):  # 0 / 0 for zero vectors, as gensim
            dists = np.dot(self.vectors, mean) / self.norms
        best = _gensim_argsort(dists, topn + 1)
        best = best[best != row][:topn]
        return best, dists[best]

    def rank(self, row: int, pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``pool`` ranked by gensim's scores for the word in ``row``: (rows, float32 scores)."""
        values = self.scores(self.mean(row), pool)
        order = np.argsort(-values, kind="stable")
        return pool[order], values[order]

    def rank_pools(
        self, query_rows: np.ndarray, indptr: np.ndarray, pools: np.ndarray, chunk: int = 256
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`rank` for many words at once: the pool of ``query_rows[i]`` is
        ``pools[indptr[i]:indptr[i + 1]]``; returns the ranked rows and scores in the same layout.

        The pools of ``chunk`` words are gathered into one array and multiplied with their mean
        vectors by one stacked ``numpy.matmul``, which runs OpenBLAS's ``sgemv`` on every item —
        the same kernel, so the same bits, as :meth:`scores`, without a Python call per word.
        Items have at most ``self._chunk`` rows (single-threaded) and a multiple of four.
        """
        ranked_rows = np.empty_like(pools)
        ranked_values = np.empty(len(pools), dtype=np.float32)
        sizes = np.diff(indptr)
        ordinary = np.flatnonzero(sizes <= 4 * self._chunk)
        for i in np.flatnonzero(sizes > 4 * self._chunk):  # degenerate pools (ties): one by one
            span = slice(indptr[i], indptr[i + 1])
            ranked_rows[span], ranked_values[span] = self.rank(int(query_rows[i]), pools[span])
        for start in range(0, len(ordinary), chunk):
            words = ordinary[start : start + chunk]
            lengths = sizes[words]
            width = -(-int(lengths.max()) // 4) * 4 if len(words) else 4
            item = min(self._chunk, width)
            width = -(-width // item) * item
            position = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            word = np.repeat(np.arange(len(words)), lengths)
            flat = np.repeat(indptr[words], lengths) + position
            index = np.zeros((len(words), width), dtype=np.int64)
            index[word, position] = pools[flat]
            means = np.stack([self.mean(int(r)) for r in query_rows[words]])
            items = self.vectors[index].reshape(-1, item, self.vectors.shape[1])
            vectors = np.repeat(means, width // item, axis=0)[:, :, None]
            products = np.matmul(items, vectors).reshape(len(words), width)
            inside = _position_mask(lengths, width)
            for w, p in np.argwhere(self._remainder[index] & inside):
                products[w, p] = self._remainder_product(int(index[w, p]), means[w])
            with np.errstate(invalid="ignore", divide="ignore"):
                values = products / self.norms[index]
            values[~inside] = -np.inf
            order = np.argsort(-values, axis=1, kind="stable")
            ranked_rows[flat] = np.take_along_axis(index, order, 1)[word, position]
            ranked_values[flat] = np.take_along_axis(values, order, 1)[word, position]
        return ranked_rows, ranked_values

    def _remainder_product(self, row: int, mean: np.ndarray) -> np.float32:
        # the run after a group of four, as in the big product (a call of one row alone would
        # be a dot product, summed in yet another order)
        start, end = max(0, self._run_start[row] - 4), self._run_end[row]
        return np.dot(self.vectors[start:end], mean)[row - start]

    def select(
        self, row: int, topn: int, ranked_rows: np.ndarray, ranked_values: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """gensim's ``most_similar`` for the word in ``row``: (rows, float32 similarities).

        ``ranked_rows`` is a pool that holds every row that can be among the ``topn + 1`` most
        similar (see :func:`top_candidates` with the margin of :func:`cosine_error_bound`),
        ranked by gensim's scores ``ranked_values`` (:meth:`rank`). The result has gensim's words
        and similarities, most similar first; when the pool cannot decide which words gensim
        returns (an exact tie at the cut-off, a zero vector, or a request for the whole
        vocabulary) the search runs over the whole vocabulary as gensim's does.
        """
        if topn < 1:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        wanted = topn + 1
        if wanted >= len(self.vectors) or len(ranked_rows) < wanted or self._zero[row]:
            return self.full_search(row, topn)
        head = ranked_values[: wanted + 1]
        if self._any_zero and np.isnan(head).any():
            return self.full_search(row, topn)
        if len(head) > wanted and head[wanted - 1] == head[wanted]:
            return self.full_search(row, topn)
        chosen, chosen_values = ranked_rows[:wanted], ranked_values[:wanted]
        others = chosen != row
        if not others.all():
            return chosen[others], chosen_values[others]
        if chosen_values[topn - 1] == chosen_values[topn]:  # gensim's order decides [:topn]
            return self.full_search(row, topn)
        return chosen[:topn], chosen_values[:topn]

    def search(self, row: int, topn: int, pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`select` from a pool that is not ranked yet."""
        return self.select(row, topn, *self.rank(row, pool))


def _position_mask(lengths: np.ndarray, width: int) -> np.ndarray:
    """A ``(len(lengths), width)`` mask: True at the first ``lengths[i]`` places of row i."""
    return np.arange(width)[None, :] < lengths[:, None]


def _gensim_argsort(x: np.ndarray, topn: int) -> np.ndarray:
    """gensim's ``matutils.argsort(x, topn, reverse=True)``, step by step."""
    x = -x
    if topn >= x.size:
        return np.argsort(x)[:topn]
    most_extreme = np.argpartition(x, topn)[:topn]
    return most_extreme.take(np.argsort(x.take(most_extreme)))


def pool_margin(dim: int) -> float:
    """The margin of :func:`top_candidates` whose pools hold gensim's top k: 2ε (module docs)."""
    return 2.0 * cosine_error_bound(dim)


def gensim_neighbours(
    vectors: np.ndarray, term_rows: np.ndarray, limit: int, batch_size: int | None
) -> Search:
    """gensim's mode: ``search(t, k)`` is term t's k most similar words in the whole vocabulary.

    It returns their term ids (-1 for words that are not terms) and float32 cosines, exactly as
    gensim 4.4's ``WordEmbeddingSimilarityIndex(kv).most_similar(term, topn=k)`` before its
    threshold: the candidate pools come from
    :func:`~es_scm.similarity.neighbors.top_candidates` with the margin that makes them hold
    gensim's top k, and :class:`GensimMostSimilar` scores them as gensim does.
    """
    has_vector = np.flatnonzero(term_rows >= 0)
    to_term = np.full(len(vectors), -1, dtype=np.int64)
    to_term[term_rows[has_vector]] = has_vector
    position = np.full(len(term_rows), -1, dtype=np.int64)
    position[has_vector] = np.arange(len(has_vector))
    empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    if limit == 0 or not len(has_vector) or len(vectors) < 2:
        return lambda t1, budget: empty
    unit = unit_rows(vectors)
    indptr, pools, _ = top_candidates(
        unit[term_rows[has_vector]],
        unit,
        min(limit + 1, len(vectors)),  # + 1: the word itself is among its most similar
        margin=pool_margin(vectors.shape[1]),
        block_size=batch_size,
    )
    most_similar = GensimMostSimilar(vectors)
    ranked, scores = most_similar.rank_pools(term_rows[has_vector], indptr, pools)

    def search(t1: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
        p = position[t1]
        if p < 0:
            return empty
        span = slice(indptr[p], indptr[p + 1])
        rows, sims = most_similar.select(int(term_rows[t1]), budget, ranked[span], scores[span])
        return to_term[rows], sims

    return search
