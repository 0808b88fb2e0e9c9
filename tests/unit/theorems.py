r"""Reference implementations of the theorems that es-scm's search relies on but does not run,
beside the tests that check them (``test_scm.py``, ``test_scm_properties.py``).

Novotný, *Implementation Notes for the Soft Cosine Measure* (CIKM '18), §3.2 and §4. The search
path (:mod:`es_scm.similarity.scm`) applies Theorems 4.1 and 4.2 as two separate steps — queries
expanded with ``expand``, documents divided by their soft norm with ``normalize`` — so nothing
here is on it. These functions state the theorems as code, so that the tests can check them
against the search path (e.g. that ``scm_dot_product_transform`` ranks exactly as the SCM), and
so that users of vector databases (which rank by dot product or cosine) can apply them:

* **Theorem 3.2** — a symmetric positive definite ``S`` factors as :math:`S = E E^T`; with a
  fill-reducing permutation ``P`` (here reverse Cuthill–McKee), :math:`P^T S P = F F^T` and
  :math:`E = P F`. Then :math:`(x E)\cdot(y E) = x^T S y`: :func:`orthonormal_basis`,
  :func:`to_orthonormal`.
* **Theorem 4.1** — the query transform :math:`x' = S^T x` turns the soft inner product into a
  plain dot product with untransformed documents (:func:`dot_product_transform`).
* **Theorem 4.2** — additionally dividing documents by their soft norm makes the plain dot product
  rank documents by SCM (:func:`scm_dot_product_transform`).
* **Theorem 4.3** — for non-negative ``S``, adding one coordinate makes plain *cosine* similarity
  rank documents by SCM (:func:`scm_cosine_transform`).

Conventions (rows are documents, float64 arithmetic) are those of :mod:`es_scm.similarity.scm`;
:func:`orthonormal_basis` works on a float64 copy of S.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
from scipy import sparse
from scipy.sparse.csgraph import reverse_cuthill_mckee

from es_scm.similarity.scm import (
    Matrix,
    VectorOrCorpus,
    as_similarity_matrix,
    coerce,
    expand,
    like_input,
    normalized_rows,
    scale_rows,
    unit_rows,
)

__all__ = [
    "DEFAULT_MAX_BAND_ENTRIES",
    "OrthonormalBasis",
    "dot_product_transform",
    "orthonormal_basis",
    "scm_cosine_transform",
    "scm_dot_product_transform",
    "to_orthonormal",
]

#: Default limit on the ``(bandwidth + 1) × n`` band stored by :func:`orthonormal_basis`
#: (25 million float64 entries, i.e. 200 MB).
DEFAULT_MAX_BAND_ENTRIES = 25_000_000


# --------------------------------------------------------------------------------------------
# Theorem 3.2: the Cholesky orthonormalization
# --------------------------------------------------------------------------------------------


class OrthonormalBasis(NamedTuple):
    r"""A change of basis to an orthonormal basis (Theorem 3.2), in permuted Cholesky form.

    ``S[perm][:, perm] = factor @ factor.T`` with ``factor`` lower triangular, so
    :math:`S = E E^T` for :math:`E = P F` (``E = factor[argsort(perm)]``, see :attr:`E`), and a
    row vector ``x`` has orthonormal coordinates ``x @ E = x[perm] @ factor``
    (:func:`to_orthonormal`), in which the plain dot product is :math:`x^T S y`.
    """

    factor: sparse.csc_array
    """F: the lower-triangular Cholesky factor of the permuted matrix PᵀSP, shape (n, n)."""
    perm: np.ndarray
    """The fill-reducing (reverse Cuthill–McKee) order: position k holds original term perm[k]."""

    @property
    def E(self) -> sparse.csr_array:
        """The change-of-basis matrix E = P F with S = E Eᵀ (rows indexed by original term ids)."""
        return sparse.csr_array(self.factor.tocsr()[np.argsort(self.perm), :])

    @property
    def bandwidth(self) -> int:
        """The bandwidth of the permuted matrix, which bounds the fill of ``factor``."""
        coo = self.factor.tocoo()
        return int((coo.row - coo.col).max(initial=0))


def orthonormal_basis(
    S: Matrix,
    *,
    max_band_entries: int = DEFAULT_MAX_BAND_ENTRIES,
    symmetry_tolerance: float = 1e-6,
) -> OrthonormalBasis:
    r"""Cholesky orthonormalization of Theorem 3.2 with a fill-reducing permutation.

    Theorem 3.2: for a soft VSM, a change-of-basis matrix E from β to an orthonormal basis, i.e.
    :math:`S = E E^T`, can be computed in :math:`O(n^3)`; since S is symmetric positive definite,
    a lower-triangular E is the Cholesky factor of S. Following the remark to Theorem 3.2, we
    factor :math:`P^T S P = F F^T` for a permutation P chosen to limit fill-in and set
    :math:`E = P F`.

    Algorithm: P is reverse Cuthill–McKee
    (:func:`scipy.sparse.csgraph.reverse_cuthill_mckee`), a heuristic that reduces the
    bandwidth ``b`` of :math:`P^T S P`. A Cholesky factor has no fill outside the band, so
    the factorization is LAPACK's banded Cholesky (:func:`scipy.linalg.cholesky_banded`,
    ``pbtrf``) on the ``(b + 1) × n`` band: :math:`O(n b^2)` time and :math:`O(n b)` memory
    (``b = n - 1`` is the dense :math:`O(n^3)` worst case of the theorem). When the band is
    wider than ``n / 8`` and ``n²`` fits, the blocked dense Cholesky (``potrf``) of the
    permuted matrix is used instead, being faster there. The band is limited to
    ``max_band_entries`` float64 numbers (default 25 million, 200 MB): e.g. every n ≤ 5000, or
    n = 1,000,000 terms when RCM reaches a bandwidth ≤ 24.

    Parameters
    ----------
    S : scipy sparse matrix or array, or numpy.ndarray, shape (n, n)
        A symmetric positive definite term similarity matrix (e.g. built with ``symmetric=True``
        and ``dominant=True``).
    max_band_entries : int, optional
        Refuse (``ValueError``) when ``(b + 1) · n`` exceeds this.
    symmetry_tolerance : float, optional
        Largest accepted :math:`\max|S - S^T|` relative to :math:`\max|S|`.

    Returns
    -------
    OrthonormalBasis
        ``(factor, perm)`` with ``S[perm][:, perm] == factor @ factor.T``.

    Raises
    ------
    ValueError
        If S is not square, not symmetric, not positive definite, or the band is too large.
    """
    S = sparse.csr_array(as_similarity_matrix(S), dtype=np.float64)
    n = S.shape[0]
    if n == 0:
        return OrthonormalBasis(sparse.csc_array((0, 0), dtype=np.float64), np.zeros(0, np.intp))
    magnitude = float(abs(S).max())
    asymmetry = float(abs(S - S.T).max()) if S.nnz else 0.0
    if asymmetry > symmetry_tolerance * magnitude:
        raise ValueError(
            f"S is not symmetric (max |S - Sᵀ| = {asymmetry:.3g}): Theorem 3.2 needs a symmetric"
            " positive definite S (build it with symmetric=True)"
        )
    S = sparse.csr_array((S + S.T) / 2.0)  # exact symmetry for RCM and for the band
    diagonal = S.diagonal()
    if np.any(diagonal <= 0.0):
        term = int(np.flatnonzero(diagonal <= 0.0)[0])
        raise ValueError(
            f"S is not positive definite: diagonal entry {term} is {diagonal[term]:.6g} ≤ 0"
        )

    perm = np.asarray(reverse_cuthill_mckee(S, symmetric_mode=True), dtype=np.intp)
    permuted = sparse.coo_array(sparse.tril(S[perm, :][:, perm]))
    offsets = permuted.row - permuted.col
    bandwidth = int(offsets.max(initial=0))
    if (bandwidth + 1) * n > max_band_entries:
        raise ValueError(
            f"the Cholesky band of S after reverse Cuthill–McKee has bandwidth {bandwidth} for"
            f" n = {n} terms, i.e. {(bandwidth + 1) * n} entries > max_band_entries ="
            f" {max_band_entries}; use a sparser S (a lower nonzero_limit) or raise"
            " max_band_entries"
        )
    try:
        if bandwidth > n // 8 and n * n <= max_band_entries:
            # a wide band: LAPACK's blocked dense Cholesky (potrf) is faster than pbtrf
            dense = np.zeros((n, n), dtype=np.float64)
            dense[permuted.row, permuted.col] = permuted.data
            lower = scipy.linalg.cholesky(dense, lower=True, check_finite=True)
            row, column = np.nonzero(lower)
            values = lower[row, column]
        else:
            band = np.zeros((bandwidth + 1, n), dtype=np.float64)
            band[offsets, permuted.col] = permuted.data  # lower form: band[i - j, j] = a[i, j]
            factor_band = scipy.linalg.cholesky_banded(band, lower=True, check_finite=True)
            offset, column = np.nonzero(factor_band)
            keep = column + offset < n
            offset, column = offset[keep], column[keep]
            row = column + offset
            values = factor_band[offset, column]
    except np.linalg.LinAlgError as error:
        raise ValueError(
            "S is not positive definite (the Cholesky factorization of Theorem 3.2 failed:"
            f" {error}); a symmetric S with Σ|off-diagonal| < diagonal per column (dominant=True)"
            " is positive definite"
        ) from error
    factor = sparse.csc_array((values, (row, column)), shape=(n, n), dtype=np.float64)
    factor.sum_duplicates()
    return OrthonormalBasis(factor, perm)


def to_orthonormal(basis: OrthonormalBasis, X: VectorOrCorpus) -> Any:
    r"""Coordinates in the orthonormal basis γ of Theorem 3.2: each row x becomes ``x @ E``.

    With :math:`S = E E^T`, :math:`(x E)(y E)^T = x^T S y` (the proof of Lemma 3.3): a plain dot
    product of transformed vectors is the soft inner product, and their plain cosine is the SCM
    (the first remark of §4, for vector databases). Computed as ``x[perm] @ factor``.

    Parameters
    ----------
    basis : OrthonormalBasis
        From :func:`orthonormal_basis`.
    X : vector or corpus
        See :func:`inner_product`.

    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_array
        A 1-D array for a vector; for a corpus, a dense 2-D array for a dense input, else a CSR
        array, of shape ``(m, n)``.
    """
    factor, perm = basis
    x = coerce(X, factor.shape[0], "X")
    transformed = sparse.csr_array(x.rows[:, perm] @ factor)
    if not x.is_corpus:
        return transformed.toarray().reshape(-1)
    return like_input(transformed, x)


# --------------------------------------------------------------------------------------------
# §4: coordinate transforms for vector databases and inverted indices
# --------------------------------------------------------------------------------------------


def dot_product_transform(
    S: Matrix, queries: VectorOrCorpus | None = None, documents: VectorOrCorpus | None = None
) -> tuple[sparse.csr_array | None, sparse.csr_array | None]:
    r"""Theorem 4.1: a plain dot product that equals the soft inner product.

    Statement (Theorem 4.1): if the query is transformed to :math:`x' = S^T x`, then
    :math:`\langle x, y\rangle = x'^T y`: the plain dot product of the transformed query with the
    *untransformed* document equals the inner product :math:`x^T S y` of Lemma 3.3. Documents in
    a vector database or inverted index stay as they are, and S may be arbitrary.

    Parameters
    ----------
    S : scipy sparse matrix or array, or numpy.ndarray, shape (n_terms, n_terms)
        The term similarity matrix.
    queries, documents : vector or corpus, optional
        Either side may be omitted (``None``), e.g. documents at indexing time and queries at
        query time.

    Returns
    -------
    (queries', documents') : tuple of scipy.sparse.csr_array or None
        Rows are transformed vectors, shape ``(m, n_terms)`` (``m = 1`` for a vector):
        ``queries' = expand(S, queries)``, ``documents'`` = the documents unchanged.
    """
    S = as_similarity_matrix(S)
    transformed_queries = None if queries is None else expand(S, queries)
    transformed_documents = (
        None if documents is None else coerce(documents, S.shape[0], "documents").rows
    )
    return transformed_queries, transformed_documents


def scm_dot_product_transform(
    S: Matrix, queries: VectorOrCorpus | None = None, documents: VectorOrCorpus | None = None
) -> tuple[sparse.csr_array | None, sparse.csr_array | None]:
    r"""Theorem 4.2: a plain dot product that ranks documents by the SCM.

    Statement (Theorem 4.2): let the query be transformed to :math:`x' = S^T x` and each document
    to :math:`y' = y / \sqrt{y^T S y}` (x, y, z non-zero). Then
    :math:`\operatorname{SCM}(x, y) \le \operatorname{SCM}(x, z)` iff :math:`x'^T y' \le x'^T z'`,
    because :math:`x'^T y' = \sqrt{x^T S x}\cdot\operatorname{SCM}(x, y)`: only the query's soft
    norm, constant for a query, is missing. A vector database or inverted index that ranks by dot
    product therefore ranks by SCM.

    Parameters
    ----------
    S : scipy sparse matrix or array, or numpy.ndarray, shape (n_terms, n_terms)
        The term similarity matrix (positive semi-definite, or non-negative with non-negative
        document weights, so that the soft norms are real).
    queries, documents : vector or corpus, optional
        Either side may be omitted (``None``).

    Returns
    -------
    (queries', documents') : tuple of scipy.sparse.csr_array or None
        ``queries' = expand(S, queries)`` and ``documents' = normalize(S, documents)`` as CSR
        arrays of shape ``(m, n_terms)``; zero documents stay zero.

    Raises
    ------
    ValueError
        If a non-zero document has :math:`y^T S y \le 0`.
    """
    S = as_similarity_matrix(S)
    transformed_queries = None if queries is None else expand(S, queries)
    transformed_documents = None
    if documents is not None:
        rows = coerce(documents, S.shape[0], "documents").rows
        transformed_documents = normalized_rows(S, rows, True, "documents")
    return transformed_queries, transformed_documents


def scm_cosine_transform(
    S: Matrix, queries: VectorOrCorpus | None = None, documents: VectorOrCorpus | None = None
) -> tuple[sparse.csr_array | None, sparse.csr_array | None]:
    r"""Theorem 4.3: a plain cosine similarity that ranks documents by the SCM (non-negative S).

    Statement (Theorem 4.3): let S be non-negative, the query x non-zero and the documents y, z
    positive. Transform the query to the unit vector
    :math:`x' = [S^T x / \lVert S^T x\rVert_2,\ 0] \in \mathbb{R}^{n+1}`, each document first to
    :math:`y' = y / \sqrt{y^T S y}` (Theorem 4.2) and then to the unit vector
    :math:`y'' = [y',\ \sqrt{1 - \lVert y'\rVert_2^2}] \in \mathbb{R}^{n+1}` (the extra basis
    vector is :math:`[0 \dots 0\ 1]^T`). Then :math:`\operatorname{SCM}(x, y) \le
    \operatorname{SCM}(x, z)` iff :math:`\cos(x', y'') \le \cos(x', z'')`, because
    :math:`\cos(x', y'') = x'^T y'' = \operatorname{SCM}(x, y)\cdot\sqrt{x^T S x} /
    \lVert S^T x\rVert_2`, a positive constant per query. The extra coordinate is real because
    non-negative S with a unit diagonal and non-negative y give :math:`y^T S y \ge y^T y`, i.e.
    :math:`\lVert y'\rVert_2 \le 1`. A vector database that ranks by cosine similarity therefore
    ranks by SCM.

    Parameters
    ----------
    S : scipy sparse matrix or array, or numpy.ndarray, shape (n_terms, n_terms)
        A non-negative term similarity matrix (with a unit diagonal for the guarantee above).
    queries, documents : vector or corpus, optional
        Either side may be omitted (``None``).

    Returns
    -------
    (queries', documents') : tuple of scipy.sparse.csr_array or None
        CSR arrays of shape ``(m, n_terms + 1)``; every non-zero row is a unit vector (the last
        column of the queries is 0); zero inputs give zero rows.

    Raises
    ------
    ValueError
        If a non-zero document has :math:`y^T S y \le 0`, or :math:`\lVert y'\rVert_2 > 1` beyond
        rounding (S or the weights are not non-negative, or the diagonal of S is below 1).
    """
    S = as_similarity_matrix(S)
    n_terms = S.shape[0]
    transformed_queries = None
    if queries is not None:
        expanded, _ = unit_rows(expand(S, queries))  # scale invariant: avoid underflow
        lengths = np.sqrt(np.asarray(expanded.multiply(expanded).sum(axis=1)).reshape(-1))
        factors = np.divide(1.0, lengths, out=np.zeros_like(lengths), where=lengths > 0.0)
        unit = scale_rows(expanded, factors)
        transformed_queries = sparse.csr_array(
            (unit.data, unit.indices, unit.indptr), shape=(unit.shape[0], n_terms + 1)
        )
    transformed_documents = None
    if documents is not None:
        _, normalized = scm_dot_product_transform(S, None, documents)
        assert normalized is not None
        squared_lengths = np.asarray(normalized.multiply(normalized).sum(axis=1)).reshape(-1)
        nonzero_rows = np.diff(normalized.indptr) > 0
        excess = np.flatnonzero(nonzero_rows & (squared_lengths > 1.0 + 1e-9))
        if excess.size:
            row = int(excess[0])
            raise ValueError(
                f"document {row}: ‖y/√(yᵀSy)‖₂² = {squared_lengths[row]:.6g} > 1, so the extra"
                " coordinate √(1 - ‖y′‖²) of Theorem 4.3 is not real; the theorem needs a"
                " non-negative S with a unit diagonal and non-negative document weights"
            )
        extra = np.where(nonzero_rows, np.sqrt(np.clip(1.0 - squared_lengths, 0.0, None)), 0.0)
        padded = sparse.hstack([normalized, sparse.csr_array(extra.reshape(-1, 1))], format="csr")
        transformed_documents = sparse.csr_array(padded)
        transformed_documents.eliminate_zeros()
    return transformed_queries, transformed_documents
