r"""The mathematics of the soft vector space model on the search path: Novotný (CIKM '18), §3–4.

Reference: Vít Novotný, "Implementation Notes for the Soft Cosine Measure", CIKM '18,
https://doi.org/10.1145/3269206.3269317 (``../shared/seeds/000_…`` and ``001_…``).

Every score es-scm computes goes through the kernels here, called through the term similarity
layer (:class:`es_scm.similarity.TermSimilarityMatrix`, which caches S as float64 CSR): indexing
normalizes documents with :func:`normalize`; a query is expanded once with :func:`expand` and
every score is then a :func:`dot` of its expansion with documents
(:mod:`es_scm.similarity.scm`, the one score path of search, the brute force, explanations and
:func:`inner_product`). The theorems that the search path relies on but does not run (the Cholesky
basis of Theorem 3.2 and the coordinate transforms of Theorems 4.1–4.3) are implemented as
reference code beside the tests that check them (``tests/unit/theorems.py``).

Notation and conventions
------------------------
``S`` is the ``n × n`` term similarity matrix, :math:`s_{ij} = \langle\beta_i, \beta_j\rangle`
(Definition 3.1); it is passed to every function here as a raw scipy sparse matrix (CSC or CSR,
``spmatrix`` or ``sparray``) or a dense numpy array. The term weighting ``W`` of the paper is
assumed to be applied already: a "vector" here is the weighted vector :math:`\mathbf{W}(x)_\alpha`.
**Rows are documents** (scikit-learn's convention, unlike the paper and gensim); what counts as a
vector and as a corpus is said in :mod:`es_scm.similarity.scm`.

* **Lemma 3.3** — the inner product in the soft VSM is :math:`\langle x, y\rangle = x^T S y`;
  its remark gives the soft cosine measure (SCM)

  .. math:: \operatorname{SCM}(x, y) = \frac{x^T S y}{\sqrt{x^T S x}\,\sqrt{y^T S y}},

  whose square roots are real when ``S`` is positive semi-definite, or when ``S`` and the
  vectors are non-negative.
* **Theorem 3.4 / Algorithm 1** — with at most ``C`` non-zeros per column of ``S``, the inner
  product of a vector with ``m`` non-zeros costs ``O(m·C)``: only the columns (or rows) of ``S``
  indexed by the non-zero coordinates are touched. The **corpus matrix form** that follows it,
  :math:`X S Y^T` with every row divided by its soft norm
  :math:`\sqrt{\operatorname{diag}(X S X^T)}`, is :func:`inner_product` for corpora, computed
  as :math:`(X S) Y^T`: the expansions of X's rows (:func:`expand`), then their :func:`dot`.
* **Lemma 3.3, term by term** — :func:`contributions` lists the non-zero summands
  :math:`x_i s_{ij} y_j` of :math:`x^T S y`: what explains a score.
* **Theorem 4.1** — the query transform :math:`x' = S^T x` (:func:`expand`) turns the soft inner
  product into a plain dot product with untransformed documents; **Theorem 4.2** — dividing
  documents by their soft norm (:func:`normalize`) makes that dot product rank by the SCM.

The ``normalized`` argument of :func:`inner_product` follows gensim 4.4's
``SparseTermSimilarityMatrix.inner_product`` exactly: ``False`` keeps a vector as it is (query
expansion), ``True`` divides it by its soft norm :math:`\sqrt{x^T S x}` (the SCM), and
``'maintain'`` rescales it so that its soft norm equals its Euclidean norm, i.e. multiplies it by
:math:`\lVert x\rVert_2 / \sqrt{x^T S x}` (query expansion with partial membership). As in gensim,
results are clipped to ``[-1, 1]`` only when both sides are ``True``.

All arithmetic is in float64, whatever the dtype of ``S``. A sparse ``S`` in CSC or CSR format is
never densified nor copied as a whole: only the block of rows/columns selected by the non-zero
coordinates is sliced out (other sparse formats are converted to CSC on every call).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeAlias

import numpy as np
from scipy import sparse

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.similarity.unseen import UnseenWord


__all__ = [
    "Contributions",
    "Matrix",
    "Normalization",
    "Operand",
    "QueryVector",
    "VectorOrCorpus",
    "as_similarity_matrix",
    "canonical",
    "coerce",
    "contributions",
    "expand",
    "expand_vector",
    "inner_product",
    "normalize",
    "rank",
    "soft_norm",
    "stored_rows",
]

# Relative tolerance under which a computed xᵀSx is treated as a rounding-level zero.
_ROUNDING_TOLERANCE = 1e-10


# --------------------------------------------------------------------------------------------
# Operands: vectors and corpora as float64 CSR rows
# --------------------------------------------------------------------------------------------
#
# A *vector* is a 1-D numpy array (or a list of numbers), a 1-D scipy sparse array, a scipy
# sparse matrix with exactly one row, or a gensim-style bag of words ``[(term_id, weight), ...]``.
# A *corpus* is a 2-D numpy array, a scipy sparse matrix with any other number of rows, or a list
# of bags of words; **its rows are documents**. (A 2-D *dense* array is always a corpus, even
# with a single row; a *sparse* matrix with a single row is always a vector.)

Normalization: TypeAlias = bool | Literal["maintain"]
#: Anything accepted as a vector or a corpus (see the module docstring).
VectorOrCorpus: TypeAlias = Any
#: Anything accepted as a term similarity matrix: a scipy sparse matrix/array or a dense array.
Matrix: TypeAlias = Any


class Operand(NamedTuple):
    """A vector or corpus coerced to a float64 CSR array with rows as documents."""

    rows: sparse.csr_array  # (m, n_terms), explicit zeros removed
    is_corpus: bool
    kind: Literal["dense", "sparse", "bow"]


def as_similarity_matrix(S: Matrix) -> sparse.csc_array | sparse.csr_array:
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


def coerce(X: VectorOrCorpus, n_terms: int, name: str) -> Operand:
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
        is_corpus = False
        kind = "dense"
    elif isinstance(X, list | tuple):
        if all(_is_bow_pair(item) for item in X):  # includes the empty bag of words
            rows = _bow_to_rows([X], n_terms, name)
            is_corpus = False
        elif all(isinstance(item, list | tuple) for item in X):
            rows = _bow_to_rows(X, n_terms, name)
            is_corpus = True
        else:
            raise TypeError(
                f"{name}: a list must be a bag of words [(term_id, weight), ...], a list of them,"
                " or a list of numbers; pass numpy arrays for dense corpora"
            )
        kind = "bow"
    else:
        dense = np.asarray(X, dtype=np.float64)
        if dense.ndim == 1:
            rows = sparse.csr_array(dense.reshape(1, -1))
            is_corpus = False
        elif dense.ndim == 2:
            rows = sparse.csr_array(dense)
            is_corpus = True
        else:
            raise ValueError(f"{name}: expected a 1-D vector or a 2-D corpus, got {dense.ndim}-D")
        kind = "dense"
    if rows.shape[1] != n_terms:
        raise ValueError(
            f"{name} has {rows.shape[1]} term columns but S is {n_terms} × {n_terms}"
            " (rows of a corpus are documents, columns are terms)"
        )
    rows.eliminate_zeros()
    return Operand(rows, is_corpus, kind)


def canonical(rows: sparse.csr_array) -> sparse.csr_array:
    """``rows`` with sorted, distinct indices (a copy only when they are not)."""
    if rows.has_canonical_format:
        return rows
    rows = rows.copy()
    rows.sum_duplicates()
    return rows


def check_normalization(value: object, side: str) -> Normalization:
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, str) and value == "maintain":
        return "maintain"
    raise ValueError(
        f"{value!r} is not a valid value of normalized ({side}): use True, False or 'maintain'"
    )


def like_input(rows: sparse.csr_array, operand: Operand) -> Any:
    """Return ``rows`` in the same kind as the input: dense → numpy (1-D for a vector), else CSR."""
    if operand.kind == "dense":
        dense = rows.toarray()
        return dense if operand.is_corpus else dense.reshape(-1)
    return rows


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
    if rows.shape[0] == 1 and S.format == "csr" and rows.has_canonical_format:
        return _vector_left_product(rows, S)
    support = _support(rows)
    block = sparse.csr_array(S[support, :], dtype=np.float64)
    return sparse.csr_array(rows[:, support] @ block)


def _vector_left_product(x: sparse.csr_array, S: sparse.csr_array) -> sparse.csr_array:
    """:func:`_left_product` of one row x (sorted, distinct indices): the query's path.

    The same sum Σ_i x_i S[i, :] over the m rows of x's support, gathered from the CSR arrays
    of S directly, so that a query pays no per-call sparse-matrix construction but one.
    """
    starts, ends = S.indptr[x.indices], S.indptr[x.indices + 1]
    lengths = ends - starts
    if not lengths.sum():
        return sparse.csr_array(x.shape, dtype=np.float64)
    positions = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    columns = S.indices[positions]
    values = S.data[positions].astype(np.float64, copy=False) * np.repeat(x.data, lengths)
    unique, inverse = np.unique(columns, return_inverse=True)
    summed = np.bincount(inverse, weights=values, minlength=len(unique))
    return sparse.csr_array((summed, unique, np.array([0, len(unique)])), shape=x.shape)


def expand_vector(S: sparse.csr_array, x: sparse.csr_array) -> sparse.csr_array:
    """x' = Sᵀx of one row x (canonical: sorted, distinct indices) over S's float64 CSR rows:
    :func:`expand`'s own arithmetic (:func:`_vector_left_product`), without its checks and
    conversions of arbitrary operands: a query's path, where both are known to be in shape."""
    expanded = _vector_left_product(x, S)
    if expanded.nnz and not expanded.data.all():  # a sum that cancelled (negative similarities)
        expanded.eliminate_zeros()
    return expanded


def _submatrix(
    S: sparse.csc_array | sparse.csr_array, rows: np.ndarray, columns: np.ndarray
) -> sparse.csr_array:
    """``S[rows][:, columns]`` in float64, slicing the major axis of ``S`` first.

    The major slice (columns of a CSC ``S``, rows of a CSR one) copies only the selected lines;
    the minor slice then runs on that small block, so ``S`` is never copied or scanned whole.
    """
    block = S[:, columns][rows, :] if S.format == "csc" else S[rows, :][:, columns]
    return sparse.csr_array(block, dtype=np.float64)


def dot(expanded: sparse.csr_array, Y: sparse.csr_array | sparse.csc_array) -> np.ndarray:
    """x'ᵀy for every row x' of ``expanded`` and every row y of ``Y``: shape ``(m, n)``.

    The dot product that Theorem 4.1 leaves once x' = Sᵀx is known (no S). Each x'ᵀy is summed
    from 0, y_j·x'_j term by term in increasing term order: for a CSR ``Y`` by reading every
    stored value of its rows, for a CSC ``Y`` only its columns of the expansion's terms (the
    postings an inverted index reads). The order is the same, so a document's value has the
    same bits alone, in a window or in a whole collection, in either layout.
    """
    expanded = canonical(sparse.csr_array(expanded))
    if Y.format != "csc":
        Y = canonical(sparse.csr_array(Y))
    if expanded.shape[0] > 1:  # a corpus of expansions: the same sums, pair by pair
        return np.asarray((Y @ expanded.T).toarray(), dtype=np.float64).T
    if Y.format == "csc":
        products = Y[:, expanded.indices] @ expanded.data
    else:
        dense = np.zeros(expanded.shape[1], dtype=np.float64)
        dense[expanded.indices] = expanded.data
        products = Y @ dense
    return np.asarray(products, dtype=np.float64).reshape(1, Y.shape[0])


_ROWS_PER_SLICE = 4096  # X S has ~C non-zeros per non-zero of X: slice a whole collection


def _squared_soft_norms(
    S: sparse.csc_array | sparse.csr_array, X: sparse.csr_array, *, absolute: bool = False
) -> np.ndarray:
    """``diag(X S Xᵀ)``, the squared soft norms of the rows, as ``rowsum(X ∘ (X S))``.

    Only the block of ``S`` on the support of ``X`` (rows and columns) is read. With
    ``absolute``, ``diag(|X| |S| |X|ᵀ)`` instead: the magnitude against which rounding is judged.
    """
    if X.shape[0] > _ROWS_PER_SLICE:
        parts = (X[i : i + _ROWS_PER_SLICE] for i in range(0, X.shape[0], _ROWS_PER_SLICE))
        return np.concatenate([_squared_soft_norms(S, p, absolute=absolute) for p in parts])
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


def unit_rows(X: sparse.csr_array) -> tuple[sparse.csr_array, np.ndarray]:
    """Rows divided by their largest absolute weight, and those weights (soft norms scale)."""
    magnitudes = _row_magnitudes(X)
    # divide (rather than multiply by 1/m, which overflows for subnormal m)
    data = X.data / np.repeat(magnitudes, np.diff(X.indptr))
    unit = sparse.csr_array((data, X.indices.copy(), X.indptr.copy()), shape=X.shape)
    return unit, magnitudes


def normalized_rows(
    S: sparse.csc_array | sparse.csr_array, X: sparse.csr_array, mode: Normalization, name: str
) -> sparse.csr_array:
    """Rows normalized as gensim does: ``True`` → x/√(xᵀSx), ``'maintain'`` → x·‖x‖₂/√(xᵀSx),
    ``False`` → x unchanged; zero rows stay zero.

    The soft cosine measure is scale invariant, so rows are first divided by their largest
    absolute weight: tiny or huge weights neither underflow nor overflow in xᵀSx.
    """
    if mode is False:
        return X
    unit, magnitudes = unit_rows(X)
    squared = _checked_squared_norms(S, unit, name, allow_zero=False)
    factors = np.zeros_like(squared)
    positive = squared > 0.0
    if mode == "maintain":
        euclidean = np.asarray(unit.multiply(unit).sum(axis=1), dtype=np.float64).reshape(-1)
        factors[positive] = magnitudes[positive] * np.sqrt(euclidean[positive] / squared[positive])
    else:
        factors[positive] = 1.0 / np.sqrt(squared[positive])
    return scale_rows(unit, factors)


def scale_rows(rows: sparse.csr_array, factors: np.ndarray) -> sparse.csr_array:
    scaled = sparse.csr_array(sparse.diags_array(factors) @ rows)
    scaled.eliminate_zeros()
    return scaled


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
    It runs the kernels of the search path: the expansion :math:`x' = S^T x` of each (normalized)
    row of X (:func:`expand`), then its :func:`dot` with the (normalized) rows of Y.

    Parameters
    ----------
    S : scipy sparse matrix or array, or numpy.ndarray, shape (n_terms, n_terms)
        The term similarity matrix, CSC (as in :class:`es_scm.TermSimilarityMatrix`) or CSR.
        Only the rows ``S[supp(X)]`` (and, for normalized sides, the blocks on each side's own
        support) are read.
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
    S = as_similarity_matrix(S)
    if isinstance(normalized, tuple | list):
        if len(normalized) != 2:
            raise ValueError(f"normalized must be a pair, got {normalized!r}")
        normalized_X, normalized_Y = normalized
    else:
        normalized_X = normalized_Y = normalized
    normalized_X = check_normalization(normalized_X, "X")
    normalized_Y = check_normalization(normalized_Y, "Y")

    n_terms = S.shape[0]
    x = coerce(X, n_terms, "X")
    y = coerce(Y, n_terms, "Y")

    rows_X = normalized_rows(S, x.rows, normalized_X, "X")
    rows_Y = normalized_rows(S, y.rows, normalized_Y, "Y")
    result = dot(_left_product(rows_X, S), rows_Y)
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
    S = as_similarity_matrix(S)
    x = coerce(X, S.shape[0], "X")
    if not x.is_corpus and S.format == "csr" and x.rows.nnz:  # a query: x'ᵀx, x' = Sᵀx
        squared = float(dot(_left_product(x.rows, S), x.rows)[0, 0])
        if 0.0 < squared < np.inf:  # else: rescaled and checked below
            return float(np.sqrt(squared))
    unit, magnitudes = unit_rows(x.rows)
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
    S = as_similarity_matrix(S)
    x = coerce(X, S.shape[0], "X")
    normalized = normalized_rows(S, x.rows, "maintain" if maintain else True, "X")
    return like_input(normalized, x)


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
    S = as_similarity_matrix(S)
    x = coerce(X, S.shape[0], "X")
    expanded = _left_product(x.rows, S)
    expanded.eliminate_zeros()
    expanded.sort_indices()
    return expanded


class Contributions(NamedTuple):
    """The summands x_i·s_ij·y_j of xᵀSy, one per pair (i, j) with s_ij ≠ 0, sorted by (i, j)."""

    rows: np.ndarray  # i, the term of x (int64)
    columns: np.ndarray  # j, the term of y (int64)
    similarities: np.ndarray  # s_ij (float64)
    x_weights: np.ndarray  # x_i (float64)
    y_weights: np.ndarray  # y_j (float64)
    values: np.ndarray  # x_i·s_ij·y_j (float64)


def contributions(S: Matrix, x: VectorOrCorpus, y: VectorOrCorpus) -> Contributions:
    r"""Decompose the inner product :math:`x^T S y` (Lemma 3.3) into its summands.

    .. math:: x^T S y = \sum_{i \in \operatorname{supp} x} \sum_{j \in \operatorname{supp} y}
              x_i\, s_{ij}\, y_j

    Every pair (i, j) of the two supports with :math:`s_{ij} \ne 0` is listed. As in Algorithm 1,
    only the block ``S[supp x][:, supp y]`` is read (major axis first): at most ``m·C`` pairs for
    ``m`` terms in x. The summands add up to :func:`inner_product` of ``(x, y)`` up to float64
    rounding; divided by :math:`\sqrt{x^T S x}\,\sqrt{y^T S y}`, they decompose the SCM.

    Parameters
    ----------
    S : scipy sparse matrix or array, or numpy.ndarray, shape (n_terms, n_terms)
        The term similarity matrix.
    x, y : vector
        One vector each (see :func:`inner_product`), taken as they are (not normalized).

    Returns
    -------
    Contributions
        One entry per pair, sorted by (i, j); empty if a vector is zero or no pair is similar.

    Raises
    ------
    ValueError
        If ``x`` or ``y`` is a corpus rather than one vector, or does not match S's shape.
    """
    S = as_similarity_matrix(S)
    x_row, y_row = _one_vector(S, x, "x"), _one_vector(S, y, "y")
    block = _submatrix(S, x_row.indices, y_row.indices).tocoo()
    keep = block.data != 0.0
    order = np.lexsort((block.col[keep], block.row[keep]))
    i, j, similarities = block.row[keep][order], block.col[keep][order], block.data[keep][order]
    x_weights, y_weights = x_row.data[i], y_row.data[j]
    rows, columns = x_row.indices[i].astype(np.int64), y_row.indices[j].astype(np.int64)
    values = x_weights * similarities * y_weights
    return Contributions(rows, columns, similarities, x_weights, y_weights, values)


def _one_vector(
    S: sparse.csc_array | sparse.csr_array, X: VectorOrCorpus, name: str
) -> sparse.csr_array:
    """One vector as a (1, n_terms) CSR row with sorted, distinct, non-zero entries."""
    operand = coerce(X, S.shape[0], name)
    if operand.is_corpus:
        raise ValueError(f"{name} must be one vector, got a corpus of {operand.rows.shape[0]} rows")
    operand.rows.sum_duplicates()
    operand.rows.eliminate_zeros()
    return operand.rows


# --------------------------------------------------------------------------------------------
# The one score path: a query's value, computed once, and its SCM with normalized documents
# --------------------------------------------------------------------------------------------
#
# A query (or the first text of any SCM) is used through its :class:`QueryVector`: the weighted
# vector x over S's terms, its expansion x' = Sᵀx (Theorem 4.1; with the query's words outside
# the vocabulary, x' = Sᵀx + Eᵀx_W, :mod:`es_scm.similarity.unseen`) and its soft norm, where
# ‖x‖²_S = xᵀSx = x'ᵀx is the expansion's dot product with x itself, so S is read once per query
# (:meth:`~es_scm.similarity.TermSimilarityMatrix.query_vector`). A document is used normalized
# as at indexing, y' = y / ‖y‖_S (Theorem 4.2), and SCM(x, y) = clip(x'ᵀy' / ‖x‖_S) (clipped as
# gensim does) is :meth:`QueryVector.scores`, for one document or many in one sparse product
# (:func:`dot`). Every SCM es-scm reports is computed there: exact search's windows, rescoring
# and hybrid search's SCM side (through :class:`~es_scm.search.query.ExpandedQuery`, a
# QueryVector with its clauses), explanations, the brute force and
# :meth:`~es_scm.model.SoftCosineModel.similarity`. The product sums each x'ᵀy' from 0 in
# increasing term order whatever the documents' layout, so a document's score has the same bits
# in exact search (a window of stored vectors) and in the brute force (a whole collection).
# Equal scores are therefore equal, with no rounding, and every ranking of es-scm — exact search,
# rescoring, hybrid search and the brute force — is :func:`rank`: by score, then by document id.


def rank(scored: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """``(id, score)`` pairs best first: by score, then by id (equal scores).

    The one ranking rule of es-scm: search on Elasticsearch and the brute force rank alike.
    """
    return sorted(scored, key=lambda item: (-item[1], item[0]))


@dataclass(frozen=True)
class QueryVector:
    r"""A query as the SCM uses it, computed once: x, x' = Sᵀx + Eᵀx_W and :math:`\lVert x\rVert`.

    ``weights`` is x over the terms (``(1, n_terms)`` CSR), ``expansion`` x' over the terms,
    ``norm`` the soft norm (with the words outside the vocabulary), ``unseen`` those words and
    ``unseen_expansion`` their part of x', Eᵀx_W (None without them).
    """

    weights: sparse.csr_matrix
    expansion: sparse.csr_array
    norm: float
    unseen: tuple[UnseenWord, ...] = ()
    unseen_expansion: sparse.csr_array | None = None

    @property
    def empty(self) -> bool:
        return self.norm <= 0.0

    @cached_property
    def dense_expansion(self) -> np.ndarray:
        """x' as a dense float64 vector over the terms, made once: what each stored row's
        product reads (:func:`es_scm.similarity.scm.dot`'s arithmetic on a CSR side)."""
        dense = np.zeros(self.expansion.shape[1], dtype=np.float64)
        dense[self.expansion.indices] = self.expansion.data
        return dense

    def require_norm(self) -> QueryVector:
        """This value; ValueError if x is not zero but its soft norm is (no SCM is defined)."""
        if self.empty and (self.weights.nnz or self.unseen):
            raise ValueError(
                "the query's squared soft norm xᵀSx is not positive: S is not positive "
                "semi-definite on it (negative similarities?)"
            )
        return self

    def scores(self, documents: Any) -> np.ndarray:
        """SCM(x, y) = x'ᵀy' / ‖x‖_S, clipped to [−1, 1], of every normalized row y' of
        ``documents`` (a CSR or CSC matrix, rows are documents); 0 for an empty side.

        CSR rows are read whole (a window of hits); a CSC matrix only in its columns of the
        expansion's terms (an inverted index in memory). The bits are the same either way.
        """
        if self.norm <= 0.0:
            return np.zeros(documents.shape[0], dtype=np.float64)
        if documents.format == "csc":
            products = dot(self.expansion, documents)[0]
        else:  # dot's arithmetic on a CSR side, with x' made dense once per query
            rows = canonical(sparse.csr_array(documents))
            products = np.asarray(rows @ self.dense_expansion, dtype=np.float64)
        return np.clip(products / self.norm, -1.0, 1.0)


def stored_rows(vectors: Sequence[tuple[np.ndarray, np.ndarray]], n_terms: int) -> sparse.csr_array:
    """Vectors given as (term ids, float64 values), e.g. hits' stored y', as the rows of one CSR
    matrix of ``n_terms`` columns, each sorted by term."""
    lengths = [len(terms) for terms, _ in vectors]
    indptr = np.zeros(len(vectors) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    terms = np.concatenate([t for t, _ in vectors]) if vectors else np.zeros(0, np.int64)
    values = np.concatenate([v for _, v in vectors]) if vectors else np.zeros(0)
    rows = sparse.csr_array(
        (values.astype(np.float64, copy=False), terms.astype(np.int64, copy=False), indptr),
        shape=(len(vectors), n_terms),
    )
    rows.sort_indices()
    return rows
