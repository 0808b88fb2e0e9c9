r"""The greedy construction of S with at most C non-zeros per column (remark to Theorem 3.4).

Every source of similarities (:mod:`es_scm.similarity.sources`,
:mod:`es_scm.similarity.levenshtein`) feeds the same builder: :func:`greedy_matrix` starts from
the identity and visits the columns in turn (rarest term first when document frequencies are
given — the order the paper found best — else by term id), inserting the column's candidates in
their order until the column holds ``limit`` off-diagonal non-zeros. With ``symmetric`` the
element :math:`s_{ij}` is inserted together with :math:`s_{ji}`, and only if neither column would
exceed its budget; this is greedy, since earlier columns fill later ones.

*Dominance → positive definiteness.* With ``dominant`` an element is inserted only if it keeps the
sum of the absolute off-diagonal values of its column(s) below one:
:math:`\sum_{i\neq j}|s_{ij}| < 1 = s_{jj}`. A symmetric, strictly diagonally dominant matrix with
a positive diagonal is positive definite (Gershgorin: every eigenvalue lies in a disc centred at 1
of radius < 1), so S then has the Cholesky factor E, :math:`S=EE^T`, of Theorem 3.2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
from scipy import sparse

from es_scm.progress import Progress

__all__ = ["Candidates", "assemble", "column_order", "greedy_matrix"]

#: Candidate generator of a column: (column, budget) → (row ids, values), in insertion order.
Candidates = Callable[[int, int], tuple[np.ndarray, np.ndarray]]


def greedy_matrix(
    n: int,
    order: np.ndarray,
    limit: int,
    candidates: Candidates,
    symmetric: bool,
    dominant: bool,
    dtype: np.dtype,
    progress: Progress | None = None,
) -> sparse.csc_matrix:
    """The greedy column-budget construction of the remark to Theorem 3.4.

    Columns are visited in ``order``; column ``t`` asks ``candidates(t, budget)`` for its
    candidates (budget = ``limit`` minus the non-zeros it already has) and inserts them in the
    returned order. An element is skipped when its column is full, when it is already present,
    with ``dominant`` when it would bring a column's absolute off-diagonal sum to 1 or more
    (computed in ``dtype``), and with ``symmetric`` when the mirrored element fails any of these
    in its own column. Without ``symmetric`` the columns are independent: each takes its
    candidates for the full budget. ``progress``, if given, counts the columns visited (the
    neighbour searches are what takes time) and is closed at the end.
    """
    width = min(limit, max(n - 1, 0))  # a column has at most n − 1 off-diagonal elements
    rows_buf = np.zeros((n, width), dtype=np.int64)
    vals_buf = np.zeros((n, width), dtype=dtype)
    if width == 0:
        counts = np.zeros(n, dtype=np.int64)
    elif not symmetric:
        for t in range(n):
            row, values = candidates(t, limit)
            if progress is not None:
                progress.update()
            rows_buf[t, : len(row)] = row
            rows_buf[t, len(row) :] = -1
            vals_buf[t, : len(row)] = values
        valid = rows_buf >= 0
        if dominant:
            column_sum = np.zeros(n, dtype=dtype)
            for j in range(rows_buf.shape[1]):  # sequential in a column, vectorized across columns
                value = np.abs(vals_buf[:, j])
                fits = valid[:, j] & (column_sum + value < dtype.type(1.0))
                column_sum[fits] += value[fits]
                valid[:, j] = fits
        # compact the kept entries of each row of the buffers to the front
        counts = valid.sum(axis=1)
        sort = np.argsort(~valid, axis=1, kind="stable")[:, :width]
        rows_buf = np.take_along_axis(rows_buf, sort, 1)
        vals_buf = np.take_along_axis(vals_buf, sort, 1)
    elif not dominant:
        counts = _greedy_symmetric(order, limit, candidates, rows_buf, vals_buf, progress)
    else:
        counts = _greedy_dominant(order, limit, candidates, rows_buf, vals_buf, progress)
    if progress is not None:
        progress.close()
    # buffer row t holds the matrix rows of column t
    mask = np.arange(rows_buf.shape[1])[None, :] < counts[:, None]
    rows = rows_buf[mask]
    cols = np.repeat(np.arange(n, dtype=np.int64), counts)
    return assemble(n, rows, cols, vals_buf[mask], dtype)


def _open_columns(
    order: np.ndarray,
    limit: int,
    candidates: Candidates,
    counts: np.ndarray,
    progress: Progress | None,
) -> Iterator[tuple[int, int, int, np.ndarray, np.ndarray]]:
    """Columns in visiting order that have room: (column, non-zeros, room, candidates, values)."""
    for t1 in order.tolist():
        if progress is not None:
            progress.update()
        have = int(counts[t1])
        budget = limit - have
        if budget > 0:
            row, vals = candidates(t1, budget)
            if len(row):
                yield t1, have, budget, row, vals


def _greedy_symmetric(
    order: np.ndarray,
    limit: int,
    candidates: Candidates,
    rows_buf: np.ndarray,
    vals_buf: np.ndarray,
    progress: Progress | None,
) -> np.ndarray:
    """The symmetric greedy construction without dominance, one vectorized step per column.

    Without the dominance sums, whether candidate t2 fits column t1 does not depend on the
    candidates before it (each t2 occurs once per column): it fits unless its own column is full
    or the cell is already set. So the column takes the first ``budget`` candidates that fit, in
    their order — what the element-by-element loop of gensim does. Returns the column counts.
    """
    counts = np.zeros(len(rows_buf), dtype=np.int64)
    assigned = np.zeros(len(rows_buf), dtype=bool)  # scratch: the rows already in column t1
    for t1, have, budget, row, vals in _open_columns(order, limit, candidates, counts, progress):
        fits = counts[row] < limit
        if have:
            present = rows_buf[t1, :have]
            assigned[present] = True
            fits &= ~assigned[row]
            assigned[present] = False
        chosen = np.flatnonzero(fits)[:budget]
        t2, value = row[chosen], vals[chosen]
        rows_buf[t1, have : have + len(t2)] = t2
        vals_buf[t1, have : have + len(t2)] = value
        counts[t1] = have + len(t2)
        at = counts[t2]
        rows_buf[t2, at] = t1
        vals_buf[t2, at] = value
        counts[t2] = at + 1
    return counts


def _greedy_dominant(
    order: np.ndarray,
    limit: int,
    candidates: Candidates,
    rows_buf: np.ndarray,
    vals_buf: np.ndarray,
    progress: Progress | None,
) -> np.ndarray:
    """The symmetric greedy construction with dominance, element by element as gensim's.

    An element that would bring its column's absolute off-diagonal sum to 1 is skipped and a
    later, smaller one may still fit, so the insertions of a column depend on each other.
    Returns the column counts.
    """
    counts = np.zeros(len(rows_buf), dtype=np.int64)
    column_sum = np.zeros(len(rows_buf), dtype=vals_buf.dtype)
    for t1, have, _, row, vals in _open_columns(order, limit, candidates, counts, progress):
        present = set(rows_buf[t1, :have].tolist())
        magnitudes = np.abs(vals)
        for k, t2 in enumerate(row.tolist()):
            if counts[t1] >= limit:
                break
            if counts[t2] >= limit or t2 in present:
                continue
            m = magnitudes[k]  # dtype scalar: the sums below round like gensim's
            if column_sum[t1] + m >= 1.0 or column_sum[t2] + m >= 1.0:
                continue
            column_sum[t1] += m
            column_sum[t2] += m
            for column, other in ((t1, t2), (t2, t1)):
                rows_buf[column, counts[column]] = other
                vals_buf[column, counts[column]] = vals[k]
                counts[column] += 1
    return counts


def assemble(
    n: int, rows: np.ndarray, cols: np.ndarray, values: np.ndarray, dtype: np.dtype
) -> sparse.csc_matrix:
    """A CSC matrix with the given off-diagonal entries and a unit diagonal."""
    diagonal = np.arange(n, dtype=np.int64)
    matrix = sparse.csc_matrix(
        (
            np.concatenate([np.ones(n, dtype=dtype), np.asarray(values, dtype=dtype)]),
            (np.concatenate([diagonal, rows]), np.concatenate([diagonal, cols])),
        ),
        shape=(n, n),
        dtype=dtype,
    )
    matrix.sort_indices()
    return matrix


_Search = Callable[[int, int], tuple[np.ndarray, np.ndarray]]


def column_order(
    n: int, document_frequencies: Sequence[float] | np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The column visiting order (rarest term first, ties by id; else by id) and its rank."""
    if document_frequencies is None:
        order = np.arange(n, dtype=np.int64)
    else:
        df = np.asarray(document_frequencies, dtype=np.float64)
        if df.shape != (n,):
            raise ValueError(
                f"document_frequencies must have one value per term ({n}), got shape {df.shape}"
            )
        if not np.isfinite(df).all() or (df < 0).any():
            raise ValueError("document_frequencies must be finite and non-negative")
        order = np.argsort(df, kind="stable").astype(np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return order, rank
