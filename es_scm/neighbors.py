r"""Exact nearest-neighbour search over word embeddings, for building the term similarity matrix S.

Two pieces:

:func:`top_candidates`
    For every query vector, the rows of a base matrix whose dot product with it is at least its
    k-th largest dot product minus a ``margin``. The dot products come from BLAS matrix
    products, a block of queries × a tile of the base at a time. Each query's threshold starts
    from a guess (from a strided sample of the base) and rises to the k-th best score found so
    far; the scores of a tile are compared with it at memory speed and only the few above it
    are kept. A guess that turns out too high is detected and the query scanned again, so the
    result is exact. No Python loop runs over the base or over the queries.

:class:`GensimMostSimilar`
    gensim 4.4's ``KeyedVectors.most_similar(word, topn)`` — the neighbour search behind
    ``WordEmbeddingSimilarityIndex`` — reproduced bit for bit, but evaluated only on a small
    pool of candidates per word instead of the whole vocabulary.

Why a pool suffices (the margin)
--------------------------------
gensim scores word j against query word i as :math:`g_j = \mathrm{fl}(v_j \cdot m) / \lVert
v_j\rVert`, a float32 matrix–vector product (``sgemv``) with the unit mean vector m of word i.
:func:`top_candidates` computes :math:`a_j = \mathrm{fl}(\hat v_j \cdot m)` with the unit rows
:math:`\hat v_j` in a float32 matrix–matrix product (``sgemm``), which sums in another order.
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

import numpy as np
from scipy.linalg import blas

__all__ = [
    "GensimMostSimilar",
    "cosine_error_bound",
    "pool_margin",
    "top_candidates",
    "unit_rows",
]

UNIT_ROUNDOFF = 2.0**-24  # float32
# A block of 2048 queries × a tile of 512 base rows: the fastest shape measured for OpenBLAS's sgemm
# with 50-dimensional vectors on 2 cores, and the 4 MiB of scores stay in the caches.
_BLOCK = 2048
_TILE = 512
_GROUPS = 32  # threshold groups of a block's queries (see _scan)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norms (cosine normalization) in float32; zero rows stay zero."""
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1
    return np.ascontiguousarray(vectors / norms[:, None], dtype=np.float32)


def cosine_error_bound(dim: int) -> float:
    r"""A bound on the difference of two float32 evaluations of the cosine of unit vectors.

    Implements :math:`2\gamma_d + 4u` with :math:`\gamma_d = du/(1 - du)` and u = 2⁻²⁴: each
    evaluation is within :math:`\gamma_d` of the exact dot product whatever its summation order
    (Higham, Theorem 3.1 and §3.1), plus rounding of the normalizations (see the module
    docstring).
    """
    gamma = dim * UNIT_ROUNDOFF / (1.0 - dim * UNIT_ROUNDOFF)
    return 2.0 * gamma + 4.0 * UNIT_ROUNDOFF


def top_candidates(
    queries: np.ndarray,
    base: np.ndarray,
    k: int,
    *,
    margin: float = 0.0,
    block_size: int | None = None,
    tile: int = _TILE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every query, the base rows scoring at least its k-th best score minus ``margin``.

    Scores are the float32 dot products ``queries @ base.T`` (cosines for unit rows). With
    ``margin=0`` the result is the top k with ties at the k-th place included.

    Parameters
    ----------
    queries, base : numpy.ndarray
        float32 arrays of shapes ``(n_queries, dim)`` and ``(n_base, dim)``.
    k : int
        At least 1; when ``k >= n_base`` every base row is a candidate.
    margin : float
        Non-negative slack below the k-th best score.
    block_size : int or None
        Queries per matrix product (default 2048).
    tile : int
        Base rows per matrix product.

    Returns
    -------
    indptr, rows, scores : numpy.ndarray
        CSR-style: the candidates of query i are ``rows[indptr[i]:indptr[i + 1]]`` (int64, in
        increasing order) with their float32 ``scores``.
    """
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    base = np.ascontiguousarray(base, dtype=np.float32)
    n_queries, n_base = len(queries), len(base)
    k = min(int(k), n_base)
    block_size = block_size or _BLOCK
    margin = np.float32(margin)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    missed: list[np.ndarray] = []
    if k >= 1 and n_queries:
        sample = _Sample(base, k)
        for start in range(0, n_queries, block_size):
            block = queries[start : start + block_size]
            guess = sample.guess(block)
            rows, cols, scores, kth = _scan(block, base, k, margin, tile, guess)
            # a guess is not a bound: where it exceeded the final k-th best − margin, rows
            # scoring between the two may be missing, so those queries are scanned again
            wrong = np.flatnonzero(guess > kth - margin)
            if wrong.size:
                keep = ~np.isin(rows, wrong)
                rows, cols, scores = rows[keep], cols[keep], scores[keep]
                missed.append(wrong + start)
            found.append((rows + start, cols, scores))
        if missed:
            again = np.concatenate(missed)
            for start in range(0, len(again), block_size):
                chosen = again[start : start + block_size]
                rows, cols, scores, _ = _scan(queries[chosen], base, k, margin, tile, None)
                found.append((chosen[rows], cols, scores))
    rows, cols, scores = _concatenate(found)
    if missed:  # rescanned queries come last: group by query again (stable: rows stay sorted)
        order = np.argsort(rows, kind="stable")
        rows, cols, scores = rows[order], cols[order], scores[order]
    indptr = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_queries), out=indptr[1:])
    return indptr, cols, scores


def _concatenate(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    return tuple(np.concatenate([part[i] for part in parts]) for i in range(3))  # type: ignore[return-value]


class _Sample:
    """Every s-th base row, to guess each query's threshold before the scan.

    The guess is the r-th largest of the maxima of interleaved groups of sample scores, with
    r ≈ 3k/s: a group maximum is a sample score, so about 3k base rows score above the guess —
    few enough to keep the scan cheap, and rarely fewer than k (then the query is rescanned).
    Group maxima cost a pass at memory speed, where a partition over the sample would not;
    groups are small enough that there are at least 16r of them, so that the r-th largest
    maximum stays close to the r-th largest score.
    """

    STRIDE = 32
    MAX_GROUP = 64

    def __init__(self, base: np.ndarray, k: int) -> None:
        self.rank = -(-3 * k // self.STRIDE)
        sample = base[:: self.STRIDE]
        self.group = int(np.clip(len(sample) // (16 * self.rank), 1, self.MAX_GROUP))
        usable = len(sample) // self.group * self.group
        self.rows_t: np.ndarray | None = sample[:usable].T.copy()
        if usable // self.group < 4 * self.rank:
            self.rows_t = None  # too small a base to sample: no guess

    def guess(self, block: np.ndarray) -> np.ndarray:
        guess = np.full(len(block), -np.inf, dtype=np.float32)
        if self.rows_t is None:
            return guess
        for start in range(0, len(block), 256):  # bounded memory for the sample's scores
            scores = block[start : start + 256] @ self.rows_t
            maxima = scores.reshape(len(scores), self.group, -1).max(axis=1)
            at = maxima.shape[1] - self.rank
            guess[start : start + 256] = np.partition(maxima, at, axis=1)[:, at]
        return guess


def _scan(
    block: np.ndarray,
    base: np.ndarray,
    k: int,
    margin: np.float32,
    tile: int,
    guess: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One pass over the base: every (query, row, score) at or above the running threshold.

    The threshold of a query is the larger of its ``guess`` and its k-th best score so far −
    margin. Returns the candidates at or above the final k-th best − margin, and that k-th best
    (−inf where fewer than k rows passed the threshold).

    The scores of a tile are filtered at memory speed: the queries are sorted by threshold and
    cut into groups, each tile is compared with each group's lowest threshold in one ``numpy``
    call (a per-row threshold would make numpy loop row by row, four times slower), the hits
    are found 64 mask bytes at a time, and only they are checked against their own threshold.
    """
    b, n_base = len(block), len(base)
    base_t = base.T  # (dim, n_base), Fortran-ordered: a tile is a contiguous slice
    if guess is None:
        threshold = np.full(b, -np.inf, dtype=np.float32)
        first = min(n_base, max(tile, k + 1))
        if first > k:
            scores = block @ base_t[:, :first]
            kth = np.partition(scores, first - k, axis=1)[:, first - k]
            # this product sums in another order than the tiles' products below, so a score
            # may differ from its tile value in the last bits: lower the threshold by a bound
            threshold = kth - margin - _rounding_slack(block, base)
    else:
        threshold = guess.astype(np.float32)
    order = np.argsort(threshold, kind="stable")
    groups = min(_GROUPS, b)
    padded = -(-b // groups) * groups
    queries = np.zeros((padded, block.shape[1]), dtype=np.float32)
    queries[:b] = block[order]
    threshold = np.concatenate([threshold[order], np.full(padded - b, np.inf, np.float32)])
    lowest = threshold.reshape(groups, -1).min(axis=1)[:, None, None]
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    pending = 0
    buffer = np.empty((padded, tile), dtype=np.float32)
    mask = np.empty((padded, tile), dtype=bool)
    for number, lo in enumerate(range(0, n_base, tile)):
        width = min(tile, n_base - lo)
        if width < tile:  # the last tile: contiguous buffers of its own width
            buffer, mask = buffer[:, :width].copy(), mask[:, :width].copy()
        np.matmul(queries, base_t[:, lo : lo + width], out=buffer)
        np.greater_equal(
            buffer.reshape(groups, -1, width), lowest, out=mask.reshape(groups, -1, width)
        )
        flat = _flat_hits(mask)
        if flat.size:
            r, c = np.divmod(flat, width)
            values = buffer.ravel()[flat]
            keep = values >= threshold[r]
            parts.append((r[keep], c[keep] + lo, values[keep]))
            pending += int(keep.sum())
        # raise the thresholds to the k-th best so far after tiles 1, 3, 7, … (from 31 on with
        # a guess, which starts higher), and whenever the candidates pile up
        early = ((number + 1) & (number + 2)) == 0 and (guess is None or number >= 30)
        if pending > 4 * b * k or early:
            parts, threshold, _ = _prune(parts, padded, k, margin, threshold)
            lowest = threshold.reshape(groups, -1).min(axis=1)[:, None, None]
            pending = len(parts[0][0])
    rows, cols, scores = _concatenate(parts)
    parts, _, kth = _prune([(order[rows], cols, scores)], b, k, margin, np.full(b, -np.inf))
    rows, cols, scores = parts[0]
    return rows, cols, scores, kth


def _rounding_slack(block: np.ndarray, base: np.ndarray) -> np.ndarray:
    """A bound on |fl(q·v) − fl'(q·v)| for two float32 summation orders, per query q."""
    largest = float(np.linalg.norm(base, axis=1).max(initial=0.0))
    scale = np.linalg.norm(block, axis=1) * largest
    return (cosine_error_bound(block.shape[1]) * scale).astype(np.float32)


def _flat_hits(mask: np.ndarray) -> np.ndarray:
    """``numpy.flatnonzero`` of a sparse boolean mask, via its non-zero 8-byte words first."""
    flat = mask.reshape(-1)
    if flat.size % 8:
        return np.flatnonzero(flat)
    words = np.flatnonzero(flat.view(np.uint64) != 0)  # bool from a SIMD compare: fast
    if not words.size:
        return words
    positions = (words[:, None] * 8 + np.arange(8)).ravel()
    return positions[flat[positions]]


def _prune(
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    b: int,
    k: int,
    margin: np.float32,
    threshold: np.ndarray,
) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray]], np.ndarray, np.ndarray]:
    """Merge candidate parts, raise each query's threshold to its k-th best − margin, and prune.

    Returns the kept candidates as one part grouped by query (a stable grouping: the base rows
    of a query stay in increasing order), the new thresholds and every query's k-th best score
    (−inf where it has fewer than k candidates).
    """
    rows, cols, scores = _concatenate(parts)
    counts = np.bincount(rows, minlength=b)
    order = np.argsort(rows.astype(np.uint16) if b <= 2**16 else rows, kind="stable")  # radix
    rows = np.repeat(np.arange(b), counts)
    cols, scores = cols[order], scores[order]
    kth = _kth_largest(scores, counts, k)
    threshold = np.maximum(threshold, kth - margin)
    keep = scores >= threshold[rows]
    return [(rows[keep], cols[keep], scores[keep])], threshold, kth


def _kth_largest(grouped: np.ndarray, counts: np.ndarray, k: int) -> np.ndarray:
    """The k-th largest value of every group of ``grouped`` (−inf for groups smaller than k).

    Groups of ordinary size are laid out as the rows of a padded matrix for one
    ``numpy.partition``; the rare huge groups (ties of a degenerate query) are partitioned alone.
    """
    b = len(counts)
    kth = np.full(b, -np.inf, dtype=np.float32)
    starts = np.zeros(b, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    large = counts > max(4 * k, 1024)
    for row in np.flatnonzero(large):
        group = grouped[starts[row] : starts[row] + counts[row]]
        kth[row] = np.partition(group, len(group) - k)[len(group) - k]
    small = np.flatnonzero(~large & (counts >= k))
    if small.size:
        width = int(counts[small].max())
        padded = np.full((small.size, width), -np.inf, dtype=np.float32)
        lengths = counts[small]
        position = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        within = np.repeat(starts[small], lengths) + position
        padded[np.repeat(np.arange(small.size), lengths), position] = grouped[within]
        kth[small] = np.partition(padded, width - k, axis=1)[:, width - k]
    return kth


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
