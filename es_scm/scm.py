r"""The mathematics of the soft vector space model: Novotný (CIKM '18), §3–4.

Reference: Vít Novotný, "Implementation Notes for the Soft Cosine Measure", CIKM '18,
https://doi.org/10.1145/3269206.3269317 (``../shared/seeds/000_…`` and ``001_…``).

Notation and conventions
------------------------
``S`` is the ``n × n`` term similarity matrix, :math:`s_{ij} = \langle\beta_i, \beta_j\rangle`
(Definition 3.1); it is passed to every function here as a raw scipy sparse matrix (CSC or CSR,
``spmatrix`` or ``sparray``) or a dense numpy array. The term weighting ``W`` of the paper is
assumed to be applied already: a "vector" here is the weighted vector :math:`\mathbf{W}(x)_\alpha`.

**Rows are documents** (scikit-learn's convention, unlike the paper and gensim, whose corpus
matrices hold documents as columns). A *vector* is a 1-D numpy array (or a list of numbers), a
1-D scipy sparse array, a scipy sparse matrix with exactly one row, or a gensim-style bag of words
``[(term_id, weight), ...]``. A *corpus* is a 2-D numpy array, a scipy sparse matrix with any
other number of rows, or a list of bags of words; its rows are documents. (A 2-D *dense* array is
always a corpus, even with a single row; a *sparse* matrix with a single row is always a vector.)

The results implemented here:

* **Lemma 3.3** — the inner product in the soft VSM is :math:`\langle x, y\rangle = x^T S y`;
  its remark gives the soft cosine measure (SCM)

  .. math:: \operatorname{SCM}(x, y) = \frac{x^T S y}{\sqrt{x^T S x}\,\sqrt{y^T S y}},

  whose square roots are real when ``S`` is positive semi-definite, or when ``S`` and the
  vectors are non-negative.
* **Theorem 3.4 / Algorithm 1** — with at most ``C`` non-zeros per column of ``S``, the inner
  product of a vector with ``m`` non-zeros costs ``O(m·C)``: only the columns (or rows) of ``S``
  indexed by the non-zero coordinates are touched. The **corpus matrix form** that follows it,
  :math:`X S Y^T` with every row divided by its soft norm
  :math:`\sqrt{\operatorname{diag}(X S X^T)}`, is :func:`inner_product` for corpora.
* **Theorem 3.2** — a symmetric positive definite ``S`` factors as :math:`S = E E^T`; with a
  fill-reducing permutation ``P`` (here reverse Cuthill–McKee), :math:`P^T S P = F F^T` and
  :math:`E = P F`. Then :math:`(x E)\cdot(y E) = x^T S y`: :func:`orthonormal_basis`,
  :func:`to_orthonormal`.
* **Theorem 4.1** — the query transform :math:`x' = S^T x` turns the soft inner product into a
  plain dot product with untransformed documents (:func:`expand`, :func:`dot_product_transform`).
* **Theorem 4.2** — additionally dividing documents by their soft norm makes the plain dot product
  rank documents by SCM (:func:`scm_dot_product_transform`).
* **Theorem 4.3** — for non-negative ``S``, adding one coordinate makes plain *cosine* similarity
  rank documents by SCM (:func:`scm_cosine_transform`).

The ``normalized`` argument of :func:`inner_product` follows gensim 4.4's
``SparseTermSimilarityMatrix.inner_product`` exactly: ``False`` keeps a vector as it is (query
expansion), ``True`` divides it by its soft norm :math:`\sqrt{x^T S x}` (the SCM), and
``'maintain'`` rescales it so that its soft norm equals its Euclidean norm, i.e. multiplies it by
:math:`\lVert x\rVert_2 / \sqrt{x^T S x}` (query expansion with partial membership). As in gensim,
results are clipped to ``[-1, 1]`` only when both sides are ``True``.

All arithmetic is in float64, whatever the dtype of ``S``. A sparse ``S`` in CSC or CSR format is
never densified nor copied as a whole: only the block of rows/columns selected by the non-zero
coordinates is sliced out (other sparse formats are converted to CSC on every call, and
:func:`orthonormal_basis` works on a float64 copy).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, TypeAlias

import numpy as np
import scipy.linalg
from scipy import sparse
from scipy.sparse.csgraph import reverse_cuthill_mckee

__all__ = [
    "DEFAULT_MAX_BAND_ENTRIES",
    "Normalization",
    "OrthonormalBasis",
    "dot_product_transform",
    "expand",
    "inner_product",
    "normalize",
    "orthonormal_basis",
    "scm_cosine_transform",
    "scm_dot_product_transform",
    "soft_norm",
    "to_orthonormal",
]

Normalization: TypeAlias = bool | Literal["maintain"]
#: Anything accepted as a vector or a corpus (see the module docstring).
VectorOrCorpus: TypeAlias = Any
#: Anything accepted as a term similarity matrix: a scipy sparse matrix/array or a dense array.
Matrix: TypeAlias = Any

#: Default limit on the ``(bandwidth + 1) × n`` band stored by :func:`orthonormal_basis`
#: (25 million float64 entries, i.e. 200 MB).
DEFAULT_MAX_BAND_ENTRIES = 25_000_000

# Relative tolerance under which a computed xᵀSx is treated as a rounding-level zero.
_ROUNDING_TOLERANCE = 1e-10


# --------------------------------------------------------------------------------------------
# Input coercion
# --------------------------------------------------------------------------------------------


class _Operand(NamedTuple):
    """A vector or corpus coerced to a float64 CSR array with rows as documents."""

    rows: sparse.csr_array  # (m, n_terms), explicit zeros removed
    is_corpus: bool
    kind: Literal["dense", "sparse", "bow"]


def _as_similarity_matrix(S: Matrix) -> sparse.csc_array | sparse.csr_array:
    """Return ``S`` as a square CSC or CSR sparse array (sparse data is not copied)."""
    if sparse.issparse(S):
        if S.ndim != 2 or S.shape[0] != S.shape[1]:
            raise ValueError(f"the term similarity matrix S must be square, got shape {S.shape}")
        if S.format == "csr":
            return sparse.csr_array(S, copy=False)
        if S.format == "csc":
            return sparse.csc_array(S, copy=False)
        return sparse.csc_array(S)
    dense = np.asarray(S)
    if dense.ndim != 2 or dense.shape[0] != dense.shape[1]:
        raise ValueError(f"the term similarity matrix S must be square, got shape {dense.shape}")
    return sparse.csc_array(dense)


def _is_bow_pair(item: object) -> bool:
    return (
        isinstance(item, tuple | list)
        and len(item) == 2
        and isinstance(item[0], numbers.Integral)
        and not isinstance(item[0], bool)
    )


def _bow_to_rows(documents: Sequence[Sequence[Any]], n_terms: int, name: str) -> sparse.csr_array:
    indptr = [0]
    indices: list[int] = []
    data: list[float] = []
    for document in documents:
        for pair in document:
            if not _is_bow_pair(pair):
                raise TypeError(f"{name}: expected (term_id, weight) pairs, got {pair!r}")
            term_id, weight = pair
            if not 0 <= term_id < n_terms:
                raise ValueError(f"{name}: term id {term_id} out of range for {n_terms} terms")
            indices.append(int(term_id))
            data.append(float(weight))
        indptr.append(len(indices))
    rows = sparse.csr_array(
        (np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int64), indptr),
        shape=(len(documents), n_terms),
    )
    rows.sum_duplicates()
    return rows


def _coerce(X: VectorOrCorpus, n_terms: int, name: str) -> _Operand:
    """Coerce a vector or corpus to rows; see the module docstring for what counts as which."""
    if sparse.issparse(X):
        if X.ndim == 1:
            rows = sparse.csr_array(X.reshape((1, -1)), dtype=np.float64, copy=True)
            is_corpus = False
        else:
            rows = sparse.csr_array(X, dtype=np.float64, copy=True)
            is_corpus = X.shape[0] != 1
        kind: Literal["dense", "sparse", "bow"] = "sparse"
    elif (
        isinstance(X, list | tuple)
        and len(X) > 0
        and all(isinstance(item, numbers.Real) for item in X)
    ):  # a plain list of numbers is a dense vector
        rows = sparse.csr_array(np.asarray(X, dtype=np.float64).reshape(1, -1))
        is_corpus, kind = False, "dense"
    elif isinstance(X, list | tuple):
        if all(_is_bow_pair(item) for item in X):  # includes the empty bag of words
            rows, is_corpus = _bow_to_rows([X], n_terms, name), False
        elif all(isinstance(item, list | tuple) for item in X):
            rows, is_corpus = _bow_to_rows(X, n_terms, name), True
        else:
            raise TypeError(
                f"{name}: a list must be a bag of words [(term_id, weight), ...], a list of them,"
                " or a list of numbers; pass numpy arrays for dense corpora"
            )
        kind = "bow"
    else:
        dense = np.asarray(X, dtype=np.float64)
        if dense.ndim == 1:
            rows, is_corpus = sparse.csr_array(dense.reshape(1, -1)), False
        elif dense.ndim == 2:
            rows, is_corpus = sparse.csr_array(dense), True
        else:
            raise ValueError(f"{name}: expected a 1-D vector or a 2-D corpus, got {dense.ndim}-D")
        kind = "dense"
    if rows.shape[1] != n_terms:
        raise ValueError(
            f"{name} has {rows.shape[1]} term columns but S is {n_terms} × {n_terms}"
            " (rows of a corpus are documents, columns are terms)"
        )
    rows.eliminate_zeros()
    return _Operand(rows, is_corpus, kind)


def _check_normalization(value: object, side: str) -> Normalization:
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, str) and value == "maintain":
        return "maintain"
    raise ValueError(
        f"{value!r} is not a valid value of normalized ({side}): use True, False or 'maintain'"
    )


# --------------------------------------------------------------------------------------------
# Sparse kernels (Algorithm 1 and the corpus matrix form)
# --------------------------------------------------------------------------------------------


def _support(rows: sparse.csr_array) -> np.ndarray:
    return np.unique(rows.indices)


def _left_product(
    rows: sparse.csr_array, S: sparse.csc_array | sparse.csr_array
) -> sparse.csr_array:
    """``rows @ S`` (each row x becomes xᵀS = (Sᵀx)ᵀ), reading only the rows of S in the support.

    For a CSR ``S`` the row slice costs ``O(m·C)``; for a CSC ``S`` scipy's row slice makes one
    vectorized pass over the index array of ``S`` (``O(nnz(S))`` integer work, no data copy).
    """
    support = _support(rows)
    block = sparse.csr_array(S[support, :], dtype=np.float64)
    return sparse.csr_array(rows[:, support] @ block)


def _submatrix(
    S: sparse.csc_array | sparse.csr_array, rows: np.ndarray, columns: np.ndarray
) -> sparse.csr_array:
    """``S[rows][:, columns]`` in float64, slicing the major axis of ``S`` first.

    The major slice (columns of a CSC ``S``, rows of a CSR one) copies only the selected lines;
    the minor slice then runs on that small block, so ``S`` is never copied or scanned whole.
    """
    block = S[:, columns][rows, :] if S.format == "csc" else S[rows, :][:, columns]
    return sparse.csr_array(block, dtype=np.float64)


def _bilinear(
    S: sparse.csc_array | sparse.csr_array, X: sparse.csr_array, Y: sparse.csr_array
) -> np.ndarray:
    """The corpus matrix form ``X S Yᵀ`` of §3 (rows are documents) as a dense ``(m, n)`` array.

    Algorithm 1 vectorized: xᵀSy = Σ x_i s_ij y_j over i in the support of x and j in the
    support of y, so only the block of ``S`` with rows in the support of ``X`` and columns in
    the support of ``Y`` is read: ``O(m·C)`` for a vector with ``m`` non-zeros as in Theorem
    3.4; a corpus pair is a product of sparse matrices.
    """
    rows, columns = _support(X), _support(Y)
    block = _submatrix(S, rows, columns)
    product = sparse.csr_array(X[:, rows] @ block) @ Y[:, columns].T
    return np.asarray(product.toarray(), dtype=np.float64).reshape(X.shape[0], Y.shape[0])


def _squared_soft_norms(
    S: sparse.csc_array | sparse.csr_array, X: sparse.csr_array, *, absolute: bool = False
) -> np.ndarray:
    """``diag(X S Xᵀ)``, the squared soft norms of the rows, as ``rowsum(X ∘ (X S))``.

    Only the block of ``S`` on the support of ``X`` (rows and columns) is read. With
    ``absolute``, ``diag(|X| |S| |X|ᵀ)`` instead: the magnitude against which rounding is judged.
    """
    support = _support(X)
    restricted = X[:, support]
    block = _submatrix(S, support, support)
    if absolute:
        restricted, block = abs(restricted), abs(block)
    product = restricted @ block
    return np.asarray(restricted.multiply(product).sum(axis=1), dtype=np.float64).reshape(-1)


def _checked_squared_norms(
    S: sparse.csc_array | sparse.csr_array, X: sparse.csr_array, name: str, *, allow_zero: bool
) -> np.ndarray:
    """Squared soft norms; raise ``ValueError`` when xᵀSx is not positive for a non-zero x.

    A value within rounding error of zero is set to zero. When ``allow_zero`` is true (the soft
    norm itself), a zero xᵀSx is accepted; when false (normalization), it is an error too.
    """
    squared = _squared_soft_norms(S, X)
    nonzero_rows = np.diff(X.indptr) > 0
    suspicious = np.flatnonzero(nonzero_rows & (squared <= 0.0))
    if suspicious.size == 0:
        return squared
    scale = _squared_soft_norms(S, X[suspicious], absolute=True)
    rounding = squared[suspicious] >= -_ROUNDING_TOLERANCE * scale
    squared[suspicious[rounding]] = 0.0
    negative = suspicious[~rounding]
    if negative.size:
        row = int(negative[0])
        raise ValueError(
            f"xᵀSx = {squared[row]:.6g} < 0 for the non-zero vector in row {row} of {name}: the"
            " term similarity matrix S is not positive semi-definite (it has negative entries,"
            " or the vector has negative weights), so the soft norm √(xᵀSx) and the SCM are"
            " undefined"
        )
    if not allow_zero:
        row = int(suspicious[0])
        raise ValueError(
            f"xᵀSx = 0 for the non-zero vector in row {row} of {name}: the term similarity matrix"
            " S is not positive definite on it (a zero diagonal entry, or negative entries in S or"
            " the vector cancelling out), so the vector cannot be normalized by its soft norm"
        )
    return squared


def _row_magnitudes(X: sparse.csr_array) -> np.ndarray:
    """``max_i |x_i|`` per row (0 for zero rows); dividing by it avoids under/overflow in xᵀSx."""
    magnitudes = np.zeros(X.shape[0], dtype=np.float64)
    nonempty = np.diff(X.indptr) > 0
    if X.nnz:
        magnitudes[nonempty] = np.maximum.reduceat(np.abs(X.data), X.indptr[:-1][nonempty])
    return magnitudes


def _unit_rows(X: sparse.csr_array) -> tuple[sparse.csr_array, np.ndarray]:
    """Rows divided by their largest absolute weight, and those weights (soft norms scale)."""
    magnitudes = _row_magnitudes(X)
    # divide (rather than multiply by 1/m, which overflows for subnormal m)
    data = X.data / np.repeat(magnitudes, np.diff(X.indptr))
    unit = sparse.csr_array((data, X.indices.copy(), X.indptr.copy()), shape=X.shape)
    return unit, magnitudes


def _normalized_rows(
    S: sparse.csc_array | sparse.csr_array, X: sparse.csr_array, mode: Normalization, name: str
) -> sparse.csr_array:
    """Rows normalized as gensim does: ``True`` → x/√(xᵀSx), ``'maintain'`` → x·‖x‖₂/√(xᵀSx),
    ``False`` → x unchanged; zero rows stay zero.

    The soft cosine measure is scale invariant, so rows are first divided by their largest
    absolute weight: tiny or huge weights neither underflow nor overflow in xᵀSx.
    """
    if mode is False:
        return X
    unit, magnitudes = _unit_rows(X)
    squared = _checked_squared_norms(S, unit, name, allow_zero=False)
    factors = np.zeros_like(squared)
    positive = squared > 0.0
    if mode == "maintain":
        euclidean = np.asarray(unit.multiply(unit).sum(axis=1), dtype=np.float64).reshape(-1)
        factors[positive] = magnitudes[positive] * np.sqrt(euclidean[positive] / squared[positive])
    else:
        factors[positive] = 1.0 / np.sqrt(squared[positive])
    return _scale_rows(unit, factors)


def _scale_rows(rows: sparse.csr_array, factors: np.ndarray) -> sparse.csr_array:
    scaled = sparse.csr_array(sparse.diags_array(factors) @ rows)
    scaled.eliminate_zeros()
    return scaled


def _like_input(rows: sparse.csr_array, operand: _Operand) -> Any:
    """Return ``rows`` in the same kind as the input: dense → numpy (1-D for a vector), else CSR."""
    if operand.kind == "dense":
        dense = rows.toarray()
        return dense if operand.is_corpus else dense.reshape(-1)
    return rows


# --------------------------------------------------------------------------------------------
# Lemma 3.3, Theorem 3.4 / Algorithm 1, the corpus matrix form
# --------------------------------------------------------------------------------------------


def inner_product(
    S: Matrix,
    X: VectorOrCorpus,
    Y: VectorOrCorpus,
    normalized: tuple[Normalization, Normalization] | Normalization = (False, False),
) -> float | np.ndarray:
    r"""Inner products :math:`x^T S y` (Lemma 3.3) or soft cosine measures between X and Y.

    Implements Algorithm 1 (Theorem 3.4) for vectors and the corpus matrix form of §3,
    :math:`X S Y^T` with each row divided by its soft norm, for corpora (rows are documents),
    with the ``normalized`` semantics of gensim 4.4's ``SparseTermSimilarityMatrix.inner_product``.

    Parameters
    ----------
    S : scipy sparse matrix or array, or numpy.ndarray, shape (n_terms, n_terms)
        The term similarity matrix, CSC (as in :class:`es_scm.TermSimilarityMatrix`) or CSR.
        Only the block ``S[supp(X)][:, supp(Y)]`` (and, for normalized sides, the blocks on each
        side's own support) is sliced out, major axis first.
    X, Y : vector or corpus
        A vector (1-D array, 1-D sparse array, 1-row sparse matrix, or ``[(term_id, weight), ...]``)
        or a corpus (2-D array, sparse matrix, or list of bags of words) whose rows are documents.
    normalized : tuple of {False, True, 'maintain'}, optional
        Per side: ``False`` keeps the vectors as they are (query expansion), ``True`` divides them
        by their soft norm :math:`\sqrt{x^T S x}` (``(True, True)`` gives the SCM), ``'maintain'``
        multiplies them by :math:`\lVert x\rVert_2 / \sqrt{x^T S x}` (query expansion with partial
        membership). A single value applies to both sides. With ``(True, True)`` the result is
        clipped to ``[-1, 1]``, as in gensim.

    Returns
    -------
    float or numpy.ndarray
        vector × vector: a float; vector × corpus of n documents: shape ``(n,)``; corpus of m
        documents × vector: shape ``(m,)``; corpus × corpus: shape ``(m, n)``. Zero vectors give 0.

    Raises
    ------
    ValueError
        If a normalized side has a non-zero vector with :math:`x^T S x \le 0` (S not positive
        semi-definite on it, e.g. negative entries), if shapes disagree, or if ``normalized`` is
        invalid.

    Notes
    -----
    gensim's own vector × corpus path restricts the corpus to the terms of the query expansion
    :math:`S^T x` *before* normalizing it, so a document's soft norm there ignores its other
    terms; this function (like gensim's corpus × corpus path) always normalizes a document over
    all of its terms, as the SCM requires.

    Normalizing a corpus side costs a sparse product over the union of its documents' terms.
    When ranking many documents against one query, store normalized documents
    (:func:`normalize`) and use ``normalized=(True, False)``.
    """
    S = _as_similarity_matrix(S)
    if isinstance(normalized, tuple | list):
        if len(normalized) != 2:
            raise ValueError(f"normalized must be a pair, got {normalized!r}")
        normalized_X, normalized_Y = normalized
    else:
        normalized_X = normalized_Y = normalized
    normalized_X = _check_normalization(normalized_X, "X")
    normalized_Y = _check_normalization(normalized_Y, "Y")

    n_terms = S.shape[0]
    x = _coerce(X, n_terms, "X")
    y = _coerce(Y, n_terms, "Y")

    rows_X = _normalized_rows(S, x.rows, normalized_X, "X")
    rows_Y = _normalized_rows(S, y.rows, normalized_Y, "Y")
    result = _bilinear(S, rows_X, rows_Y)
    if normalized_X is True and normalized_Y is True:
        np.clip(result, -1.0, 1.0, out=result)

    if not x.is_corpus and not y.is_corpus:
        return float(result[0, 0])
    if not x.is_corpus:
        return result[0, :]
    if not y.is_corpus:
        return result[:, 0]
    return result


def soft_norm(S: Matrix, X: VectorOrCorpus) -> float | np.ndarray:
    r"""The soft norm :math:`\sqrt{x^T S x}` (the divisor of the SCM in the remark to Lemma 3.3).

    Parameters
    ----------
    S : scipy sparse matrix or array, or numpy.ndarray, shape (n_terms, n_terms)
        The term similarity matrix.
    X : vector or corpus
        See :func:`inner_product`.

    Returns
    -------
    float or numpy.ndarray
        A float for a vector; shape ``(m,)`` for a corpus of m documents. Zero vectors give 0.

    Raises
    ------
    ValueError
        If :math:`x^T S x < 0` (beyond rounding) for some row: S is not positive semi-definite.
    """
    S = _as_similarity_matrix(S)
    x = _coerce(X, S.shape[0], "X")
    unit, magnitudes = _unit_rows(x.rows)
    norms = magnitudes * np.sqrt(_checked_squared_norms(S, unit, "X", allow_zero=True))
    return norms if x.is_corpus else float(norms[0])


def normalize(S: Matrix, X: VectorOrCorpus, *, maintain: bool = False) -> Any:
    r"""Divide every vector by its soft norm: :math:`y' = y / \sqrt{y^T S y}`.

    This is the document transform :math:`(y')_\beta` of Theorems 4.2 and 4.3 (``y`` is the
    weighted vector :math:`\mathbf{W}(y)_\alpha`). After it, :math:`y'^T S y' = 1`, so
    :func:`inner_product` of normalized vectors with ``normalized=(False, False)`` is the SCM.

    Parameters
    ----------
    S : scipy sparse matrix or array, or numpy.ndarray, shape (n_terms, n_terms)
        The term similarity matrix.
    X : vector or corpus
        See :func:`inner_product`.
    maintain : bool, optional
        Use gensim's ``'maintain'`` normalization instead: multiply by
        :math:`\lVert y\rVert_2 / \sqrt{y^T S y}`, so the soft norm becomes the Euclidean norm.

    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_array
        Same kind as the input: a dense input gives a dense array of the same shape; a sparse or
        bag-of-words input gives a CSR array of shape ``(m, n_terms)`` (``(1, n_terms)`` for a
        vector). Zero rows stay zero.

    Raises
    ------
    ValueError
        If a non-zero row has :math:`y^T S y \le 0`.
    """
    S = _as_similarity_matrix(S)
    x = _coerce(X, S.shape[0], "X")
    normalized = _normalized_rows(S, x.rows, "maintain" if maintain else True, "X")
    return _like_input(normalized, x)


def expand(S: Matrix, X: VectorOrCorpus) -> sparse.csr_array:
    r"""Query expansion :math:`x' = S^T x` (Theorem 4.1 and the inverted-index remark of §4).

    Theorem 4.1: if :math:`x' = S^T x`, then the plain dot product :math:`x'^T y` equals the soft
    inner product :math:`x^T S y` for every document ``y``, which is left untouched (so S can
    change without reindexing, and S may be arbitrary). The non-zero coordinates of ``x'`` are the
    terms whose postings an inverted index must retrieve, with ``x'`` as their boosts; there are
    at most ``m·C`` of them for ``m`` query terms and ``C`` non-zeros per row of S.

    Parameters
    ----------
    S : scipy sparse matrix or array, or numpy.ndarray, shape (n_terms, n_terms)
        The term similarity matrix. Only the rows of S indexed by the query's non-zero terms are
        read: ``O(m·C)`` for a CSR S; for a CSC S, scipy's row slice scans the index array once.
        (For a *symmetric* CSC S, pass ``S.T``, a free CSR view of the same matrix, for
        ``O(m·C)``.)
    X : vector or corpus
        Query vector(s), see :func:`inner_product`.

    Returns
    -------
    scipy.sparse.csr_array
        Shape ``(1, n_terms)`` for a vector, ``(m, n_terms)`` for a corpus; row i is
        :math:`(S^T x_i)^T`, with explicit zeros removed.
    """
    S = _as_similarity_matrix(S)
    x = _coerce(X, S.shape[0], "X")
    expanded = _left_product(x.rows, S)
    expanded.eliminate_zeros()
    expanded.sort_indices()
    return expanded


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
    S = sparse.csr_array(_as_similarity_matrix(S), dtype=np.float64)
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
            row, values = column + offset, factor_band[offset, column]
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
    x = _coerce(X, factor.shape[0], "X")
    transformed = sparse.csr_array(x.rows[:, perm] @ factor)
    if not x.is_corpus:
        return transformed.toarray().reshape(-1)
    return _like_input(transformed, x)


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
    S = _as_similarity_matrix(S)
    transformed_queries = None if queries is None else expand(S, queries)
    transformed_documents = (
        None if documents is None else _coerce(documents, S.shape[0], "documents").rows
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
    S = _as_similarity_matrix(S)
    transformed_queries = None if queries is None else expand(S, queries)
    transformed_documents = None
    if documents is not None:
        rows = _coerce(documents, S.shape[0], "documents").rows
        transformed_documents = _normalized_rows(S, rows, True, "documents")
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
    S = _as_similarity_matrix(S)
    n_terms = S.shape[0]
    transformed_queries = None
    if queries is not None:
        expanded, _ = _unit_rows(expand(S, queries))  # scale invariant: avoid underflow
        lengths = np.sqrt(np.asarray(expanded.multiply(expanded).sum(axis=1)).reshape(-1))
        factors = np.divide(1.0, lengths, out=np.zeros_like(lengths), where=lengths > 0.0)
        unit = _scale_rows(expanded, factors)
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
