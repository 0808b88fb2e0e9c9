r"""The term similarity matrix S of the soft vector space model and its builders.

The math
--------
Novotný, *Implementation Notes for the Soft Cosine Measure* (CIKM '18, ``../shared/seeds/000_…``):
for weighted term vectors x and y (Definition 3.1, Lemma 3.3)

.. math:: \operatorname{SCM}(x, y) = \frac{x^T S y}{\sqrt{x^T S x}\,\sqrt{y^T S y}},

where :math:`s_{ij} = \langle\beta_i, \beta_j\rangle \in [-1, 1]` is the similarity of terms i and
j and :math:`s_{ii} = 1`. :class:`TermSimilarityMatrix` holds S as a scipy CSC matrix (float32 by
default) with a **unit diagonal**, together with its ``terms`` (row/column i is ``terms[i]``).

*Sparsity: at most C non-zeros per column* (Theorem 3.4). When no column of S has more than C
non-zero elements, the inner product of a vector with m non-zeros costs O(m) (Algorithm 1), and a
query expanded by :math:`S^T x` (Theorem 4.1) has O(mC) terms. The builders bound S so: every
column gets at most ``nonzero_limit`` off-diagonal non-zeros (so C = ``nonzero_limit`` + 1).
Following the remark to Theorem 3.4, :meth:`TermSimilarityMatrix.from_embeddings` starts from an
empty matrix and visits the columns in turn (rarest term first when document frequencies are
given — the order the paper found best — else by term id), inserting the column's most similar
terms. With ``symmetric=True`` the element :math:`s_{ij}` is inserted together with
:math:`s_{ji}`, and only if neither column would exceed its budget; this is greedy, since earlier
columns fill later ones.

*Dominance → positive definiteness* (remark to Theorem 3.4). With ``dominant=True`` an element is
inserted only if it keeps the sum of the absolute off-diagonal values of its column(s) below one:
:math:`\sum_{i\neq j}|s_{ij}| < 1 = s_{jj}`. A symmetric, strictly diagonally dominant matrix
with a positive diagonal is positive definite (Gershgorin: every eigenvalue lies in a disc
centred at 1 of radius < 1), so S is then Gramian and has the Cholesky factor E, :math:`S=EE^T`,
of Theorem 3.2; without it, the SCM still has real square roots for non-negative S and
non-negative vectors (remark to Lemma 3.3).

Neighbour search
----------------
Embedding builders search neighbours by cosine similarity with :mod:`es_scm.neighbors`: blocked
BLAS matrix products (2,048 terms × 512 words at a time) filtered against per-term thresholds
at memory speed — no Python loop over the vocabulary. There is no approximate (ANN) index: the
exact search is fast enough for vocabularies of 10⁵–10⁶ words.

``neighbors='vocabulary'`` reproduces gensim 4.4's
``SparseTermSimilarityMatrix(WordEmbeddingSimilarityIndex(kv, threshold, exponent), dictionary,
tfidf, symmetric, dominant, nonzero_limit)`` (the notebook's mode) bit for bit: the neighbours of
a term are its most similar words in the *whole* embedding vocabulary, of which only those in
``terms`` are kept. The matrix products find, for every term, a pool of candidates that provably
holds gensim's choice (a margin covers float32 rounding), and
:class:`es_scm.neighbors.GensimMostSimilar` scores the pool with gensim's own arithmetic.
``neighbors='terms'`` searches only among ``terms``: cheaper, and every one of the
``nonzero_limit`` neighbours is usable.

Conventions: rows are documents in every corpus passed to :meth:`TermSimilarityMatrix.inner_product`
and friends, which delegate to :mod:`es_scm.scm`.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from scipy import sparse

from . import neighbors, scm
from .embeddings import WordEmbeddings

if TYPE_CHECKING:  # pragma: no cover
    from gensim.models import KeyedVectors

__all__ = ["TermSimilarityMatrix"]

PathLike = str | os.PathLike
Neighbors = Literal["vocabulary", "terms"]
_FORMAT = "es-scm-term-similarity-matrix/1"
_DTYPES = (np.float16, np.float32, np.float64)
# Candidate generator of the greedy construction: (column, budget) → (row ids, values), ordered.
_Candidates = Callable[[int, int], tuple[np.ndarray, np.ndarray]]


class TermSimilarityMatrix:
    """A sparse term similarity matrix S (CSC, unit diagonal) and the terms of its rows/columns.

    Parameters
    ----------
    matrix : scipy.sparse matrix or array
        The square ``len(terms) × len(terms)`` matrix; stored as a CSC matrix with sorted indices.
        Entry ``(i, j)`` is the similarity of ``terms[i]`` to ``terms[j]``.
    terms : sequence of str
        The distinct terms; ``terms[i]`` is row and column ``i``.
    dtype : numpy dtype or None, optional
        Cast the matrix to this float dtype (default: keep the matrix's float dtype).

    Raises
    ------
    ValueError
        If the matrix is not square, does not match the terms, has a non-unit diagonal or
        non-finite values, or a term repeats.

    Notes
    -----
    Build one with :meth:`from_embeddings`, :meth:`from_levenshtein`, :meth:`from_pairs`,
    :meth:`identity` or :meth:`combine`; keep it with :meth:`save` and :meth:`load`.
    """

    __slots__ = ("_index", "matrix", "terms")

    def __init__(
        self,
        matrix: Any,
        terms: Sequence[str],
        *,
        dtype: np.dtype | type | None = None,
    ) -> None:
        terms = _check_terms(terms)
        if not sparse.issparse(matrix):
            raise ValueError(f"matrix must be a scipy sparse matrix, got {type(matrix).__name__}")
        matrix = sparse.csc_matrix(matrix)
        if dtype is None:
            if matrix.dtype not in [np.dtype(d) for d in _DTYPES]:
                matrix = matrix.astype(np.float32)
        else:
            matrix = matrix.astype(_check_dtype(dtype))
        if matrix.shape != (len(terms), len(terms)):
            raise ValueError(
                f"matrix has shape {matrix.shape} but there are {len(terms)} terms: "
                f"expected ({len(terms)}, {len(terms)})"
            )
        matrix.sum_duplicates()
        matrix.sort_indices()
        if not np.isfinite(matrix.data).all():
            raise ValueError("the matrix has non-finite values")
        diagonal = matrix.diagonal()
        if len(diagonal) and not np.all(diagonal == 1):
            bad = int(np.flatnonzero(diagonal != 1)[0])
            raise ValueError(
                f"the diagonal must be 1 (a term is identical to itself), but "
                f"S[{bad}, {bad}] = {diagonal[bad]} for {terms[bad]!r}"
            )
        self.matrix: sparse.csc_matrix = matrix
        self.terms: list[str] = terms
        self._index: dict[str, int] | None = None

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> tuple[int, int]:
        """``(n_terms, n_terms)``."""
        return self.matrix.shape

    @property
    def nnz(self) -> int:
        """The number of stored non-zeros, diagonal included."""
        return int(self.matrix.nnz)

    @property
    def dtype(self) -> np.dtype:
        """The float dtype of the values."""
        return self.matrix.dtype

    def __len__(self) -> int:
        return len(self.terms)

    def __repr__(self) -> str:
        return (
            f"TermSimilarityMatrix({len(self.terms)} terms, nnz={self.nnz}, "
            f"dtype={self.dtype.name})"
        )

    def term_id(self, term: str) -> int:
        """The row/column of ``term``; ``KeyError`` if it is not one of :attr:`terms`."""
        if self._index is None:
            self._index = {term: i for i, term in enumerate(self.terms)}
        return self._index[term]

    def column_nonzeros(self) -> np.ndarray:
        """The number of off-diagonal non-zeros of every column (the C − 1 of Theorem 3.4)."""
        counts = np.diff(self.matrix.indptr)
        return counts - (self.matrix.diagonal() != 0)

    def similar_terms(self, term: str, topn: int = 10) -> list[tuple[str, float]]:
        """The terms most similar to ``term`` by column ``term`` of S, most similar first."""
        topn = _check_nonneg_int(topn, "topn")
        j = self.term_id(term)
        start, end = self.matrix.indptr[j], self.matrix.indptr[j + 1]
        rows, values = self.matrix.indices[start:end], self.matrix.data[start:end]
        keep = rows != j
        rows, values = rows[keep], values[keep]
        order = np.lexsort((rows, -values.astype(np.float64)))[:topn]
        return [
            (self.terms[int(i)], float(values[k])) for k, i in zip(order, rows[order], strict=True)
        ]

    def allclose(self, other: TermSimilarityMatrix, rtol: float = 1e-5, atol: float = 1e-7) -> bool:
        """Whether ``other`` has the same terms and the same values within ``rtol``/``atol``.

        Implements ``|A − B| ≤ atol + rtol·|B|`` element-wise (``numpy.allclose``'s formula) on
        the union of both sparsity patterns; missing entries count as zeros.
        """
        if not isinstance(other, TermSimilarityMatrix):
            raise TypeError(f"expected a TermSimilarityMatrix, got {type(other).__name__}")
        if self.terms != other.terms:
            return False
        a = self.matrix.astype(np.float64)
        b = other.matrix.astype(np.float64)
        excess = abs(a - b) - rtol * abs(b)
        return bool(excess.nnz == 0 or excess.max() <= atol)

    # ------------------------------------------------------------------ the math (es_scm.scm)
    def inner_product(
        self,
        X: Any,
        Y: Any,
        normalized: tuple[Any, Any] | Any = (False, False),
    ) -> float | np.ndarray:
        """Inner products xᵀSy (Lemma 3.3) or SCMs; delegates to :func:`es_scm.scm.inner_product`.

        ``X`` and ``Y`` are each a vector or a corpus (rows are documents); ``normalized`` per
        side is ``False``, ``True`` (the SCM) or ``'maintain'``, as in gensim.
        """
        return scm.inner_product(self.matrix, X, Y, normalized=normalized)

    def soft_norm(self, X: Any) -> float | np.ndarray:
        """The soft norm √(xᵀSx); delegates to :func:`es_scm.scm.soft_norm`."""
        return scm.soft_norm(self.matrix, X)

    def expand(self, x: Any) -> sparse.csr_array:
        """Query expansion x′ = Sᵀx (Theorem 4.1); delegates to :func:`es_scm.scm.expand`."""
        return scm.expand(self.matrix, x)

    # ------------------------------------------------------------------ persistence
    def save(self, path: PathLike | io.IOBase) -> None:
        """Save as ``.npz`` (exactly at ``path``, no suffix added): the CSC arrays and the terms."""
        encoded = [term.encode("utf-8") for term in self.terms]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        arrays = {
            "format": np.array(_FORMAT),
            "data": self.matrix.data,
            "indices": self.matrix.indices,
            "indptr": self.matrix.indptr,
            "shape": np.array(self.matrix.shape, dtype=np.int64),
            "terms_utf8": np.frombuffer(b"".join(encoded), dtype=np.uint8),
            "terms_offsets": offsets,
        }
        if isinstance(path, io.IOBase):
            np.savez_compressed(path, **arrays)
        else:
            with open(path, "wb") as stream:
                np.savez_compressed(stream, **arrays)

    @classmethod
    def load(cls, path: PathLike | io.IOBase) -> TermSimilarityMatrix:
        """Load a matrix saved by :meth:`save`."""
        with np.load(path, allow_pickle=False) as archive:
            if "format" not in archive or str(archive["format"]) != _FORMAT:
                raise ValueError(f"{path!r} is not a saved es-scm TermSimilarityMatrix")
            blob = archive["terms_utf8"].tobytes()
            offsets = archive["terms_offsets"]
            terms = [
                blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(len(offsets) - 1)
            ]
            shape = tuple(int(n) for n in archive["shape"])
            matrix = sparse.csc_matrix(
                (archive["data"], archive["indices"], archive["indptr"]), shape=shape
            )
        return cls(matrix, terms)

    # ------------------------------------------------------------------ simple builders
    @classmethod
    def identity(
        cls, terms: Sequence[str], *, dtype: np.dtype | type = np.float32
    ) -> TermSimilarityMatrix:
        """S = I: no two distinct terms are similar, and the SCM is the plain cosine."""
        terms = _check_terms(terms)
        dtype = _check_dtype(dtype)
        return cls(sparse.identity(len(terms), dtype=dtype, format="csc"), terms)

    @classmethod
    def from_pairs(
        cls,
        terms: Sequence[str],
        pairs: Iterable[tuple[str, str, float]],
        *,
        symmetric: bool = True,
        ignore_missing: bool = True,
        dtype: np.dtype | type = np.float32,
    ) -> TermSimilarityMatrix:
        """S from a thesaurus: ``(a, b, similarity)`` triples, a unit diagonal, zeros elsewhere.

        Parameters
        ----------
        terms : sequence of str
            The terms of the rows and columns.
        pairs : iterable of (str, str, float)
            Sets ``S[b, a]`` (column ``a``, row ``b``) to ``similarity``; later pairs overwrite
            earlier ones.
        symmetric : bool, optional
            Also set ``S[a, b]`` (the default).
        ignore_missing : bool, optional
            Skip pairs whose terms are not in ``terms`` (the default) instead of raising.
        dtype : numpy dtype, optional
            float32 by default.

        Raises
        ------
        ValueError
            For a pair of a term with itself, a non-finite similarity, or (unless
            ``ignore_missing``) an unknown term.
        """
        terms = _check_terms(terms)
        dtype = _check_dtype(dtype)
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
        return cls(_assemble(n, rows[keep], cols[keep], values[keep], dtype), terms)

    @classmethod
    def combine(
        cls, weighted: Iterable[tuple[float, TermSimilarityMatrix]]
    ) -> TermSimilarityMatrix:
        r"""The weighted combination :math:`I + \sum_k w_k (S_k - I)` of matrices over equal terms.

        The off-diagonal parts are combined linearly and the diagonal stays 1, e.g.
        ``combine([(0.7, S_embeddings), (0.3, S_levenshtein)])``. With non-negative weights
        summing to at most 1, entries stay in [−1, 1] and a combination of strictly diagonally
        dominant matrices is strictly diagonally dominant (each column's absolute off-diagonal sum
        is at most :math:`\sum_k w_k \cdot 1`), hence positive definite when symmetric. Column
        sparsity is not re-bounded: C of the result is at most the sum of the inputs' Cs.

        Parameters
        ----------
        weighted : iterable of (float, TermSimilarityMatrix)
            Finite weights and matrices with identical ``terms``.

        Returns
        -------
        TermSimilarityMatrix
            In the widest dtype of the inputs.
        """
        items = list(weighted)
        if not items:
            raise ValueError("combine needs at least one (weight, matrix) pair")
        terms = None
        total = None
        dtype = np.dtype(np.float16)
        for item in items:
            try:
                weight, matrix = item
            except (TypeError, ValueError) as error:
                raise ValueError(
                    f"expected (weight, TermSimilarityMatrix), got {item!r}"
                ) from error
            if not isinstance(matrix, TermSimilarityMatrix):
                raise ValueError(f"expected a TermSimilarityMatrix, got {type(matrix).__name__}")
            weight = float(weight)
            if not math.isfinite(weight):
                raise ValueError(f"weight must be finite, got {weight}")
            if terms is None:
                terms = matrix.terms
            elif matrix.terms != terms:
                raise ValueError("all combined matrices must have the same terms in the same order")
            dtype = np.promote_types(dtype, matrix.dtype)
            off_diagonal = matrix.matrix.astype(np.float64)
            off_diagonal.setdiag(0)
            part = weight * off_diagonal
            total = part if total is None else total + part
        assert terms is not None
        assert total is not None
        total = sparse.csc_matrix(total)
        total.setdiag(1.0)
        total.eliminate_zeros()
        return cls(total.astype(dtype), terms)

    # ------------------------------------------------------------------ embeddings
    @classmethod
    def from_embeddings(
        cls,
        terms: Sequence[str],
        embeddings: WordEmbeddings | KeyedVectors,
        *,
        nonzero_limit: int | None = 100,
        threshold: float = 0.0,
        exponent: float = 2.0,
        symmetric: bool = True,
        dominant: bool = False,
        document_frequencies: Sequence[float] | np.ndarray | None = None,
        neighbors: Neighbors = "vocabulary",
        dtype: np.dtype | type = np.float32,
        batch_size: int | None = None,
    ) -> TermSimilarityMatrix:
        r"""S from the cosine similarities of word embeddings.

        Implements :math:`s_{ij} = \cos(e_i, e_j)^{\text{exponent}}` for
        :math:`\cos(e_i, e_j) > \text{threshold}` (the word-embedding similarity of Charlet and
        Damnati), bounded to ``nonzero_limit`` off-diagonal non-zeros per column by the greedy
        strategy of the remark to Theorem 3.4 (see the module docstring).

        Parameters
        ----------
        terms : sequence of str
            The distinct terms; ``terms[i]`` is row and column ``i``. Terms without an embedding
            get only their diagonal 1.
        embeddings : WordEmbeddings or gensim KeyedVectors
            The word vectors.
        nonzero_limit : int or None, optional
            The most off-diagonal non-zeros in a column (100); ``None`` for no limit.
        threshold : float, optional
            Only cosine similarities strictly above it count (0.0); in [−1, 1).
        exponent : float, optional
            Similarities are raised to this positive power (2.0).
        symmetric : bool, optional
            Insert :math:`s_{ij}` together with :math:`s_{ji}` (True), making S symmetric.
        dominant : bool, optional
            Keep every column's absolute off-diagonal sum below 1 (False); with ``symmetric``
            this makes S positive definite.
        document_frequencies : sequence of numbers or None, optional
            One per term: the columns are visited rarest term first (ties by term id), and each
            column's candidates are inserted in the same order; by term id when None. This is
            gensim's order for ``tfidf=TfidfModel(dictionary=...)``.
        neighbors : {'vocabulary', 'terms'}, optional
            ``'vocabulary'`` (default): a column's candidates are the term's ``k`` most similar
            words in the whole embedding vocabulary (k = the column's remaining budget), of which
            those among ``terms`` are kept — gensim 4.4's ``WordEmbeddingSimilarityIndex`` mode,
            giving the same matrix. ``'terms'``: the ``k`` most similar words among ``terms``.
        dtype : numpy dtype, optional
            float32 (default), float64 or float16.
        batch_size : int or None, optional
            Terms per matrix product (default 2048).

        Returns
        -------
        TermSimilarityMatrix

        Notes
        -----
        In the ``'vocabulary'`` mode the matrix equals gensim's bit for bit on the same machine
        and BLAS (see :mod:`es_scm.neighbors` for why); in the ``'terms'`` mode similarities are
        float32 BLAS products, and ties are broken by term order.
        """
        terms = _check_terms(terms)
        limit = _check_limit(nonzero_limit, len(terms))
        threshold = _check_real(threshold, "threshold")
        if not -1.0 <= threshold < 1.0:
            raise ValueError(f"threshold must be in [-1, 1), got {threshold}")
        exponent = _check_real(exponent, "exponent")
        if exponent <= 0:
            raise ValueError(f"exponent must be positive, got {exponent}")
        if threshold < 0 and not float(exponent).is_integer():
            raise ValueError(
                f"a negative threshold ({threshold}) needs an integer exponent, got {exponent}: "
                "a negative similarity has no real non-integer power"
            )
        if neighbors not in ("vocabulary", "terms"):
            raise ValueError(f"neighbors must be 'vocabulary' or 'terms', got {neighbors!r}")
        dtype = _check_dtype(dtype)
        if batch_size is not None:
            batch_size = _check_positive_int(batch_size, "batch_size")
        embeddings = _as_embeddings(embeddings)
        order, rank = _column_order(len(terms), document_frequencies)

        n_terms = len(terms)
        term_rows = embeddings.indices(terms)  # embedding row of each term, -1 if none
        if neighbors == "vocabulary":
            search = _vocabulary_neighbours(embeddings.vectors, term_rows, limit, batch_size)
        else:
            search = _terms_neighbours(embeddings.vectors, term_rows, limit, batch_size)

        def candidates(t1: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
            row, sims = search(t1, budget)  # term ids (-1: not a term), float32 cosines
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

        matrix = _greedy(n_terms, order, limit, candidates, symmetric, dominant, dtype)
        return cls(matrix, terms)

    # ------------------------------------------------------------------ Levenshtein
    @classmethod
    def from_levenshtein(
        cls,
        terms: Sequence[str],
        *,
        alpha: float = 1.8,
        beta: float = 5.0,
        max_distance: int = 2,
        nonzero_limit: int | None = 100,
        symmetric: bool = True,
        dominant: bool = False,
        document_frequencies: Sequence[float] | np.ndarray | None = None,
        dtype: np.dtype | type = np.float32,
        batch_size: int = 1024,
    ) -> TermSimilarityMatrix:
        r"""S from the Levenshtein similarity of Charlet and Damnati (SimBow, SemEval 2017).

        Implements :math:`s_{ij} = \alpha\,(1 - d(t_i, t_j) / \max(|t_i|, |t_j|))^{\beta}` for
        edit distances :math:`1 \le d \le` ``max_distance`` (positive values only), as gensim 4.4's
        ``LevenshteinSimilarityIndex``, whose neighbour selection is reproduced: a column with
        a budget of k takes the terms at distance 1, then 2, …, stopping at the first distance
        that yields more than k candidates, and keeps the k most similar (ties by the term's
        string). Distances come from ``rapidfuzz`` (``process.cdist``), in blocks of
        ``batch_size`` terms; the remaining parameters are as in :meth:`from_embeddings`.

        Raises
        ------
        ImportError
            Without rapidfuzz: ``pip install es-scm[levenshtein]``.
        """
        try:
            from rapidfuzz import process
            from rapidfuzz.distance import Levenshtein
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise ImportError(
                "TermSimilarityMatrix.from_levenshtein needs rapidfuzz: "
                "pip install es-scm[levenshtein]"
            ) from error
        terms = _check_terms(terms)
        limit = _check_limit(nonzero_limit, len(terms))
        alpha = _check_real(alpha, "alpha")
        beta = _check_real(beta, "beta")
        if alpha <= 0:
            raise ValueError(f"alpha must be positive, got {alpha}")
        if beta < 0:
            raise ValueError(f"beta must be non-negative, got {beta}")
        max_distance = _check_nonneg_int(max_distance, "max_distance")
        batch_size = _check_positive_int(batch_size, "batch_size")
        dtype = _check_dtype(dtype)
        order, rank = _column_order(len(terms), document_frequencies)
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

        matrix = _greedy(n, order, limit, candidates, symmetric, dominant, dtype)
        return cls(matrix, terms)


# ---------------------------------------------------------------------- construction helpers
def _greedy(
    n: int,
    order: np.ndarray,
    limit: int,
    candidates: _Candidates,
    symmetric: bool,
    dominant: bool,
    dtype: np.dtype,
) -> sparse.csc_matrix:
    """The greedy column-budget construction of the remark to Theorem 3.4.

    Columns are visited in ``order``; column ``t`` asks ``candidates(t, budget)`` for its
    candidates (budget = ``limit`` minus the non-zeros it already has) and inserts them in the
    returned order. An element is skipped when its column is full, when it is already present,
    with ``dominant`` when it would bring a column's absolute off-diagonal sum to 1 or more
    (computed in ``dtype``), and with ``symmetric`` when the mirrored element fails any of these
    in its own column. Without ``symmetric`` the columns are independent: each takes its
    candidates for the full budget.
    """
    width = min(limit, max(n - 1, 0))  # a column has at most n − 1 off-diagonal elements
    rows_buf = np.zeros((n, width), dtype=np.int64)
    vals_buf = np.zeros((n, width), dtype=dtype)
    if width == 0:
        counts = np.zeros(n, dtype=np.int64)
    elif not symmetric:
        for t in range(n):
            row, values = candidates(t, limit)
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
        counts = _greedy_symmetric(order, limit, candidates, rows_buf, vals_buf)
    else:
        counts = _greedy_dominant(order, limit, candidates, rows_buf, vals_buf)
    # buffer row t holds the matrix rows of column t
    mask = np.arange(rows_buf.shape[1])[None, :] < counts[:, None]
    rows = rows_buf[mask]
    cols = np.repeat(np.arange(n, dtype=np.int64), counts)
    return _assemble(n, rows, cols, vals_buf[mask], dtype)


def _open_columns(
    order: np.ndarray, limit: int, candidates: _Candidates, counts: np.ndarray
) -> Iterator[tuple[int, int, int, np.ndarray, np.ndarray]]:
    """Columns in visiting order that have room: (column, non-zeros, room, candidates, values)."""
    for t1 in order.tolist():
        have = int(counts[t1])
        budget = limit - have
        if budget > 0:
            row, vals = candidates(t1, budget)
            if len(row):
                yield t1, have, budget, row, vals


def _greedy_symmetric(
    order: np.ndarray,
    limit: int,
    candidates: _Candidates,
    rows_buf: np.ndarray,
    vals_buf: np.ndarray,
) -> np.ndarray:
    """The symmetric greedy construction without dominance, one vectorized step per column.

    Without the dominance sums, whether candidate t2 fits column t1 does not depend on the
    candidates before it (each t2 occurs once per column): it fits unless its own column is full
    or the cell is already set. So the column takes the first ``budget`` candidates that fit, in
    their order — what the element-by-element loop of gensim does. Returns the column counts.
    """
    counts = np.zeros(len(rows_buf), dtype=np.int64)
    assigned = np.zeros(len(rows_buf), dtype=bool)  # scratch: the rows already in column t1
    for t1, have, budget, row, vals in _open_columns(order, limit, candidates, counts):
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
    candidates: _Candidates,
    rows_buf: np.ndarray,
    vals_buf: np.ndarray,
) -> np.ndarray:
    """The symmetric greedy construction with dominance, element by element as gensim's.

    An element that would bring its column's absolute off-diagonal sum to 1 is skipped and a
    later, smaller one may still fit, so the insertions of a column depend on each other.
    Returns the column counts.
    """
    counts = np.zeros(len(rows_buf), dtype=np.int64)
    column_sum = np.zeros(len(rows_buf), dtype=vals_buf.dtype)
    for t1, have, _, row, vals in _open_columns(order, limit, candidates, counts):
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


def _assemble(
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


def _vocabulary_neighbours(
    vectors: np.ndarray, term_rows: np.ndarray, limit: int, batch_size: int | None
) -> _Search:
    """gensim's mode: ``search(t, k)`` is term t's k most similar words in the whole vocabulary.

    It returns their term ids (-1 for words that are not terms) and float32 cosines, exactly as
    gensim 4.4's ``WordEmbeddingSimilarityIndex(kv).most_similar(term, topn=k)`` before its
    threshold: the candidate pools come from :func:`es_scm.neighbors.top_candidates` with the
    margin that makes them hold gensim's top k, and :class:`es_scm.neighbors.GensimMostSimilar`
    scores them as gensim does.
    """
    has_vector = np.flatnonzero(term_rows >= 0)
    to_term = np.full(len(vectors), -1, dtype=np.int64)
    to_term[term_rows[has_vector]] = has_vector
    position = np.full(len(term_rows), -1, dtype=np.int64)
    position[has_vector] = np.arange(len(has_vector))
    empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    if limit == 0 or not len(has_vector) or len(vectors) < 2:
        return lambda t1, budget: empty
    unit = neighbors.unit_rows(vectors)
    indptr, pools, _ = neighbors.top_candidates(
        unit[term_rows[has_vector]],
        unit,
        min(limit + 1, len(vectors)),  # + 1: the word itself is among its most similar
        margin=neighbors.pool_margin(vectors.shape[1]),
        block_size=batch_size,
    )
    most_similar = neighbors.GensimMostSimilar(vectors)
    ranked, scores = most_similar.rank_pools(term_rows[has_vector], indptr, pools)

    def search(t1: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
        p = position[t1]
        if p < 0:
            return empty
        span = slice(indptr[p], indptr[p + 1])
        rows, sims = most_similar.select(int(term_rows[t1]), budget, ranked[span], scores[span])
        return to_term[rows], sims

    return search


def _terms_neighbours(
    vectors: np.ndarray, term_rows: np.ndarray, limit: int, batch_size: int | None
) -> _Search:
    """The terms mode: ``search(t, k)`` is term t's k most similar terms (ties by term order)."""
    has_vector = np.flatnonzero(term_rows >= 0)
    position = np.full(len(term_rows), -1, dtype=np.int64)
    position[has_vector] = np.arange(len(has_vector))
    empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    if limit == 0 or len(has_vector) < 2:
        return lambda t1, budget: empty
    unit = neighbors.unit_rows(vectors[term_rows[has_vector]])
    k = min(limit + 1, len(has_vector))  # + 1: the term itself is among its most similar
    indptr, found, sims = neighbors.top_candidates(unit, unit, k, block_size=batch_size)

    def search(t1: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
        p = position[t1]
        if p < 0:
            return empty
        rows, values = found[indptr[p] : indptr[p + 1]], sims[indptr[p] : indptr[p + 1]]
        best = np.lexsort((rows, -values))  # most similar first, ties by term order
        best = best[rows[best] != p][:budget]
        return has_vector[rows[best]], values[best]

    return search


def _column_order(
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


def _as_embeddings(embeddings: Any) -> WordEmbeddings:
    if isinstance(embeddings, WordEmbeddings):
        return embeddings
    if hasattr(embeddings, "index_to_key") and hasattr(embeddings, "vectors"):
        return WordEmbeddings.from_gensim(embeddings)
    raise ValueError(
        f"embeddings must be WordEmbeddings or gensim KeyedVectors, got {type(embeddings).__name__}"
    )


def _check_terms(terms: Sequence[str]) -> list[str]:
    if isinstance(terms, str):
        raise ValueError("terms must be a sequence of strings, not a single string")
    terms = list(terms)
    for term in terms:
        if not isinstance(term, str):
            raise ValueError(f"terms must be strings, got {term!r}")
    if len(set(terms)) != len(terms):
        seen: set[str] = set()
        duplicate = next(t for t in terms if t in seen or seen.add(t))
        raise ValueError(f"the term {duplicate!r} occurs more than once")
    return terms


def _check_dtype(dtype: Any) -> np.dtype:
    result = np.dtype(dtype)
    if result not in [np.dtype(d) for d in _DTYPES]:
        raise ValueError(f"dtype must be float16, float32 or float64, got {result}")
    return result


def _check_real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def _check_nonneg_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def _check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_limit(nonzero_limit: Any, n_terms: int) -> int:
    """The per-column budget; None means unlimited (n_terms, as gensim)."""
    if nonzero_limit is None:
        return n_terms
    return _check_nonneg_int(nonzero_limit, "nonzero_limit")
