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

The same margin argument lets the bit-for-bit gensim mode (:mod:`es_scm.similarity.gensim_compat`,
opt-in) score only a small pool of candidates per word: see :func:`cosine_error_bound`.
"""

from __future__ import annotations

import numpy as np

from es_scm.progress import Progress

__all__ = ["cosine_error_bound", "top_candidates", "unit_rows"]

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
    progress: Progress | None = None,
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
    progress : Progress, optional
        Counts the queries scanned (closed at the end).

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
    slack = np.float32(margin)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    missed: list[np.ndarray] = []
    if k >= 1 and n_queries:
        sample = _Sample(base, k)
        for start in range(0, n_queries, block_size):
            block = queries[start : start + block_size]
            guess = sample.guess(block)
            rows, cols, scores, kth = _scan(block, base, k, slack, tile, guess)
            # a guess is not a bound: where it exceeded the final k-th best − margin, rows
            # scoring between the two may be missing, so those queries are scanned again
            wrong = np.flatnonzero(guess > kth - slack)
            if wrong.size:
                keep = ~np.isin(rows, wrong)
                rows, cols, scores = rows[keep], cols[keep], scores[keep]
                missed.append(wrong + start)
            found.append((rows + start, cols, scores))
            if progress is not None:
                progress.update(len(block))
        if missed:
            again = np.concatenate(missed)
            for start in range(0, len(again), block_size):
                chosen = again[start : start + block_size]
                rows, cols, scores, _ = _scan(queries[chosen], base, k, slack, tile, None)
                found.append((chosen[rows], cols, scores))
    if progress is not None:
        progress.close()
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
