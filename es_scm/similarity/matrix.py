r"""The term similarity matrix S of the soft vector space model.

For weighted term vectors x and y (Novotný, *Implementation Notes for the Soft Cosine Measure*,
CIKM '18, Definition 3.1 and Lemma 3.3)

.. math:: \operatorname{SCM}(x, y) = \frac{x^T S y}{\sqrt{x^T S x}\,\sqrt{y^T S y}},

where :math:`s_{ij} \in [-1, 1]` is the similarity of terms i and j and :math:`s_{ii} = 1`.
:class:`TermSimilarityMatrix` holds S as a scipy CSC matrix (float32 by default) with a **unit
diagonal**, together with its ``terms`` (row/column i is ``terms[i]``) and a record of how it was
built (:attr:`TermSimilarityMatrix.build_info`, saved with it and in a model's ``model.json``).

It is the term-similarity layer of es-scm, one class as gensim's ``SparseTermSimilarityMatrix``:
the terms and their lookups, the builders (``from_embeddings``, ``from_levenshtein``,
``from_pairs``, ``from_synonyms``, ``identity``, ``combine``: each checks its arguments into typed
options where they enter), the files, the restriction, and the math of the search path
(:mod:`es_scm.similarity.scm` — :meth:`~TermSimilarityMatrix.expand`,
:meth:`~TermSimilarityMatrix.soft_norm`, :meth:`~TermSimilarityMatrix.normalize`,
:meth:`~TermSimilarityMatrix.inner_product`, :meth:`~TermSimilarityMatrix.contributions`), which
runs on its cached float64 CSR copy (:attr:`~TermSimilarityMatrix.rows`), made once and shared
by indexing, search and evaluation.

Sources of similarities feed one greedy builder that bounds every column to ``nonzero_limit``
off-diagonal non-zeros (Theorem 3.4; :mod:`es_scm.similarity.builder`): word embeddings
(:mod:`es_scm.similarity.sources`, with gensim's bit-for-bit mode in
:mod:`es_scm.similarity.gensim_compat`; a sentence encoder's term vectors,
:mod:`es_scm.similarity.encoded`), edit distance (:mod:`es_scm.similarity.levenshtein`), a
thesaurus of pairs (:mod:`es_scm.similarity.thesaurus`) and synonym files
(:mod:`es_scm.similarity.synonyms`); :meth:`TermSimilarityMatrix.combine` mixes them.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import sparse

from es_scm.options import SimilarityOptions
from es_scm.options.defaults import (
    EMBEDDING_SOURCE,
    LEVENSHTEIN_DEFAULTS,
    SIMILARITY_DEFAULTS,
    SYNONYM_DEFAULTS,
)
from es_scm.options.validation import (
    FLOAT_DTYPES,
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    OrNone,
    check,
    check_dtype,
    check_terms,
)
from es_scm.similarity import scm
from es_scm.similarity.embeddings import WordEmbeddings, as_embeddings
from es_scm.similarity.levenshtein import BATCH_SIZE, levenshtein_matrix
from es_scm.similarity.matrix_files import read_matrix, write_matrix
from es_scm.similarity.sources import embedding_matrix
from es_scm.similarity.synonyms import Synonyms, synonym_matrix
from es_scm.similarity.thesaurus import pairs_matrix

if TYPE_CHECKING:  # pragma: no cover
    from gensim.models import KeyedVectors

    from es_scm.similarity.unseen import UnseenWord

__all__ = ["TermSimilarityMatrix", "canonical_matrix", "combined_matrix", "principal_block"]

PathLike = str | os.PathLike


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
    build_info : dict, optional
        How the matrix was built (source, embeddings, options); the builders fill it in.

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

    __slots__ = ("_index", "_norm_bound", "_rows", "build_info", "matrix", "terms")

    def __init__(
        self,
        matrix: Any,
        terms: Sequence[str],
        *,
        dtype: np.dtype | type | None = None,
        build_info: Mapping[str, Any] | None = None,
    ) -> None:
        terms = check_terms(terms)
        matrix = canonical_matrix(matrix, terms, dtype)
        self.matrix: sparse.csc_matrix = matrix
        self.terms: list[str] = terms
        self.build_info: dict[str, Any] = dict(build_info or {})
        self._index: dict[str, int] | None = None
        self._rows: sparse.csr_array | None = None  # S as float64 CSR, made on first use
        self._norm_bound: float | None = None

    # ------------------------------------------------------------------ builders
    @classmethod
    def identity(
        cls, terms: Sequence[str], *, dtype: np.dtype | type = np.float32
    ) -> TermSimilarityMatrix:
        """S = I: no two distinct terms are similar, and the SCM is the plain cosine."""
        terms = check_terms(terms)
        identity = sparse.identity(len(terms), dtype=check_dtype(dtype), format="csc")
        return cls(identity, terms, build_info={"source": "identity"})

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
        matrix, info = pairs_matrix(
            terms, pairs, symmetric=symmetric, ignore_missing=ignore_missing, dtype=dtype
        )
        return cls(matrix, terms, build_info=info)

    @classmethod
    def from_synonyms(
        cls,
        terms: Sequence[str],
        files: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        tokenize: Callable[[str], list[str]],
        *,
        similarity: float = SYNONYM_DEFAULTS.similarity,
        threshold: float = SYNONYM_DEFAULTS.threshold,
        exponent: float = SYNONYM_DEFAULTS.exponent,
        symmetric: bool = SIMILARITY_DEFAULTS.symmetric,
        dtype: np.dtype | type = np.float32,
        nonzero_limit: int | None = SIMILARITY_DEFAULTS.nonzero_limit,
    ) -> TermSimilarityMatrix:
        """S from synonym files: Solr/Elasticsearch rules or a weighted TSV of pairs.

        See :mod:`es_scm.similarity.synonyms` for the formats and how entries become terms.

        Parameters
        ----------
        terms : sequence of str
            The terms of the rows and columns; pairs with another term are left out (counted).
        files : path or sequence of paths
            ``.tsv`` files are weighted pairs, other files Solr-format rules.
        tokenize : callable
            Maps an entry to its terms, e.g. a model's :class:`~es_scm.model.Tokenizer`.
        similarity, threshold, exponent
            See :class:`~es_scm.options.SynonymOptions`
            (defaults :data:`es_scm.options.defaults.SYNONYM_DEFAULTS`).
        symmetric : bool, optional
            Relate the terms of a pair both ways (the default).
        nonzero_limit : int or None, optional
            The most terms one rule relates a term to (a larger group is cut to the terms
            written nearest each term, with a warning naming the line: see
            :meth:`es_scm.similarity.synonyms.Relation.pairs`); None: no limit, and a rule of
            more than :data:`~es_scm.similarity.synonyms.MAX_RULE_PAIRS` pairs is refused.

        Raises
        ------
        ValueError
            ``"FILE:LINE: …"`` for a malformed line, a byte that is not UTF-8, or (without a
            limit) a rule of too many pairs; for a file that is not found.
        """
        chosen = Synonyms(files, similarity=similarity, threshold=threshold, exponent=exponent)
        if nonzero_limit is not None:
            nonzero_limit = check(nonzero_limit, "nonzero_limit", NON_NEGATIVE_INT)
        matrix, info = synonym_matrix(
            terms,
            chosen,
            tokenize,
            symmetric=symmetric,
            dtype=check_dtype(dtype),
            nonzero_limit=nonzero_limit,
        )
        return cls(matrix, terms, build_info=info)

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
        parts = _checked_parts(weighted)
        matrix, info = combined_matrix(parts)
        return cls(matrix, parts[0][1].terms, build_info=info)

    @classmethod
    def from_embeddings(
        cls,
        terms: Sequence[str],
        embeddings: WordEmbeddings | KeyedVectors,
        *,
        nonzero_limit: int | None = SIMILARITY_DEFAULTS.nonzero_limit,
        threshold: float = EMBEDDING_SOURCE.threshold,  # type: ignore[assignment]
        exponent: float = EMBEDDING_SOURCE.exponent,  # type: ignore[assignment]
        symmetric: bool = SIMILARITY_DEFAULTS.symmetric,
        dominant: bool = SIMILARITY_DEFAULTS.dominant,
        document_frequencies: Sequence[float] | np.ndarray | None = None,
        neighbors: str = SIMILARITY_DEFAULTS.neighbors,
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
            The most off-diagonal non-zeros in a column; ``None`` for no limit.
        threshold : float, optional
            Only cosine similarities strictly above it count; in [−1, 1).
        exponent : float, optional
            Similarities are raised to this positive power.
        symmetric : bool, optional
            Insert :math:`s_{ij}` together with :math:`s_{ji}`, making S symmetric.
        dominant : bool, optional
            Keep every column's absolute off-diagonal sum below 1; with ``symmetric`` this makes
            S positive definite. These and ``neighbors`` default to
            :data:`es_scm.options.defaults.SIMILARITY_DEFAULTS`
            (:class:`es_scm.options.SimilarityOptions`), the threshold and exponent to word vectors'
            own (:data:`es_scm.options.defaults.EMBEDDING_SOURCE`).
        document_frequencies : sequence of numbers or None, optional
            One per term: the columns are visited rarest term first (ties by term id), and each
            column's candidates are inserted in the same order; by term id when None. This is
            gensim's order for ``tfidf=TfidfModel(dictionary=...)``.
        neighbors : {'terms', 'vocabulary', 'gensim'}, optional
            ``'terms'``: a column's candidates are the term's ``k`` most similar words
            among ``terms`` (k = the column's remaining budget). ``'vocabulary'``: its ``k`` most
            similar words in the whole embedding vocabulary, of which those among ``terms`` are
            kept (gensim 4.4's ``WordEmbeddingSimilarityIndex`` semantics). ``'gensim'``: the
            same, computed with gensim's arithmetic, so that S equals gensim's bit for bit
            (:mod:`es_scm.similarity.gensim_compat`).
        dtype : numpy dtype, optional
            float32 (default), float64 or float16.
        batch_size : int or None, optional
            Terms per matrix product (default 2048).

        Returns
        -------
        TermSimilarityMatrix

        Notes
        -----
        In the ``'gensim'`` mode the matrix equals gensim's bit for bit on the same machine and
        BLAS (see :mod:`es_scm.similarity.gensim_compat` for why); in the other modes
        similarities are float32 BLAS products (:mod:`es_scm.similarity.sources`).
        """
        order = "id" if document_frequencies is None else "rarest"
        options = SimilarityOptions(
            nonzero_limit, threshold, exponent, symmetric, dominant, neighbors, order
        )
        matrix, info = embedding_matrix(
            terms,
            as_embeddings(embeddings),
            options,
            document_frequencies=document_frequencies,
            dtype=check_dtype(dtype),
            batch_size=check(batch_size, "batch_size", OrNone(POSITIVE_INT)),
        )
        return cls(matrix, terms, build_info=info)

    @classmethod
    def from_levenshtein(
        cls,
        terms: Sequence[str],
        *,
        alpha: float = LEVENSHTEIN_DEFAULTS.alpha,
        beta: float = LEVENSHTEIN_DEFAULTS.beta,
        max_distance: int = LEVENSHTEIN_DEFAULTS.max_distance,
        nonzero_limit: int | None = SIMILARITY_DEFAULTS.nonzero_limit,
        symmetric: bool = SIMILARITY_DEFAULTS.symmetric,
        dominant: bool = SIMILARITY_DEFAULTS.dominant,
        document_frequencies: Sequence[float] | np.ndarray | None = None,
        dtype: np.dtype | type = np.float32,
        batch_size: int = BATCH_SIZE,
    ) -> TermSimilarityMatrix:
        r"""S from the Levenshtein similarity of Charlet and Damnati (SimBow, SemEval 2017).

        :math:`s_{ij} = \alpha\,(1 - d(t_i, t_j) / \max(|t_i|, |t_j|))^{\beta}` for edit
        distances :math:`1 \le d \le` ``max_distance``, with gensim 4.4's neighbour selection
        (:mod:`es_scm.similarity.levenshtein`); the remaining parameters are as in
        :meth:`from_embeddings`.

        Raises
        ------
        ImportError
            Without rapidfuzz: ``pip install es-scm[levenshtein]``.
        """
        edit = replace(LEVENSHTEIN_DEFAULTS, alpha=alpha, beta=beta, max_distance=max_distance)
        options = replace(
            SIMILARITY_DEFAULTS, nonzero_limit=nonzero_limit, symmetric=symmetric, dominant=dominant
        )
        matrix, info = levenshtein_matrix(
            terms,
            edit,
            options,
            document_frequencies=document_frequencies,
            dtype=check_dtype(dtype),
            batch_size=check(batch_size, "batch_size", POSITIVE_INT),
        )
        return cls(matrix, terms, build_info=info)

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
        topn = check(topn, "topn", NON_NEGATIVE_INT)
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

    # ------------------------------------------------------------------ persistence
    def save(self, path: PathLike | io.IOBase) -> None:
        """Save as ``.npz`` (exactly at ``path``, no suffix added): the CSC arrays and the terms
        (:mod:`es_scm.similarity.matrix_files`)."""
        write_matrix(path, self.matrix, self.terms, self.build_info)

    @classmethod
    def load(cls, path: PathLike | io.IOBase) -> TermSimilarityMatrix:
        """Load a matrix saved by :meth:`save`."""
        matrix, terms, info = read_matrix(path)
        return cls(matrix, terms, build_info=info)

    # ------------------------------------------------------------------ restriction
    def restrict(self, terms: Sequence[str]) -> TermSimilarityMatrix:
        """S over ``terms`` (a subset of :attr:`terms`, in any order): the matching block.

        Raises
        ------
        ValueError
            If some of ``terms`` are not terms of this matrix.
        """
        terms = check_terms(terms)
        if terms == self.terms:
            return self
        block = principal_block(self.matrix, self.terms, terms)
        info = {**self.build_info, "restricted_to": len(terms)}
        return TermSimilarityMatrix(block, terms, build_info=info)

    # ------------------------------------------------------------------ the SCM math on S
    @property
    def rows(self) -> sparse.csr_array:
        """S as float64 CSR, made once per matrix and shared by every user of it.

        Expanding a query (x'ᵀ = xᵀS) reads only the rows of its m terms, O(m·C), and no
        operation casts S again. Indexing and search of one model share this one copy.
        """
        if self._rows is None:
            self._rows = sparse.csr_array(self.matrix, dtype=np.float64)
        return self._rows

    def inner_product(
        self,
        X: Any,
        Y: Any,
        normalized: tuple[Any, Any] | Any = (False, False),
    ) -> float | np.ndarray:
        """Inner products xᵀSy (Lemma 3.3) or SCMs: :func:`es_scm.similarity.scm.inner_product`.

        ``X`` and ``Y`` are each a vector or a corpus (rows are documents); ``normalized`` per
        side is ``False``, ``True`` (the SCM) or ``'maintain'``, as in gensim.
        """
        return scm.inner_product(self.rows, X, Y, normalized=normalized)

    def soft_norm(self, X: Any) -> float | np.ndarray:
        """The soft norm √(xᵀSx): :func:`es_scm.similarity.scm.soft_norm`."""
        return scm.soft_norm(self.rows, X)

    def normalize(self, X: Any) -> Any:
        """Vectors divided by their soft norm, y/√(yᵀSy) (Theorem 4.2's documents):
        :func:`es_scm.similarity.scm.normalize`."""
        return scm.normalize(self.rows, X)

    def expand(self, X: Any) -> sparse.csr_array:
        """Query expansion x′ = Sᵀx (Theorem 4.1): :func:`es_scm.similarity.scm.expand`."""
        return scm.expand(self.rows, X)

    def expand_documents(self, Y: Any) -> sparse.csr_array:
        """Document-side expansion, rows (Sy)ᵀ, so that xᵀ(Sy) = xᵀSy: :func:`scm.expand` of Sᵀ."""
        return scm.expand(self.matrix.T, Y)

    def query_vector(self, weights: Any, unseen: Sequence[UnseenWord] = ()) -> scm.QueryVector:
        """The value of a query x = ``weights`` over S's terms, and of its ``unseen`` words
        (:mod:`es_scm.similarity.unseen`): x, x' = Sᵀx + Eᵀx_W and the soft norm
        ‖x‖² = xᵀSx + 2x_WᵀEx + x_Wᵀx_W, computed once (:class:`~es_scm.similarity.scm.QueryVector`,
        the one score path).

        The soft norm is x'ᵀx, read off the expansion: no second product with S. Where that is
        not a positive finite number, the checked kernel of :meth:`soft_norm` decides instead:
        it rescales weights whose squares overflow, and names an S that is not positive
        semi-definite.
        """
        weights = sparse.csr_matrix(weights)
        if weights.shape[0] == 1 and weights.has_canonical_format:  # a query: S's rows, directly
            expansion = scm.expand_vector(self.rows, sparse.csr_array(weights))
        else:
            expansion = self.expand(weights)
        squared = 0.0
        if weights.nnz:
            squared = float(scm.dot(expansion, weights)[0, 0])
            if not 0.0 < squared < math.inf:
                squared = float(self.soft_norm(weights)) ** 2
        extra = None
        if unseen:
            rows = scm.stored_rows([(u.terms, u.similarities) for u in unseen], len(self.terms))
            x_w = np.array([u.weight for u in unseen], dtype=np.float64)
            extra = sparse.csr_array(sparse.csr_matrix(x_w @ rows))
            expansion = sparse.csr_array(expansion + extra)
            expansion.sort_indices()
            cross = float(x_w @ (rows @ weights.T).toarray().ravel()) if weights.nnz else 0.0
            squared += 2.0 * cross + float(x_w @ x_w)
        norm = math.sqrt(squared) if squared > 0.0 else 0.0
        return scm.QueryVector(weights, expansion, norm, tuple(unseen), extra)

    def spectral_norm_bound(self) -> float:
        """An upper bound of ‖S‖₂, √(‖S‖₁‖S‖_∞) (Hölder): ‖Sy‖₂ ≤ this · ‖y‖₂ for every y."""
        if self._norm_bound is None:  # searches ask for it; S does not change
            absolute = abs(self.matrix)
            column_sums = np.asarray(absolute.sum(axis=0)).max(initial=0.0)
            row_sums = np.asarray(absolute.sum(axis=1)).max(initial=0.0)
            self._norm_bound = float(np.sqrt(column_sums * row_sums))
        return self._norm_bound

    def contributions(self, x: Any, y: Any) -> scm.Contributions:
        """The summands x_i·s_ij·y_j of xᵀSy, one per similar pair of their terms (s_ij ≠ 0):
        :func:`es_scm.similarity.scm.contributions`."""
        return scm.contributions(self.rows, x, y)


def _checked_parts(weighted: Iterable[tuple[float, Any]]) -> list[tuple[float, Any]]:
    """The ``(weight, matrix)`` pairs of :meth:`TermSimilarityMatrix.combine`, checked: at least
    one, finite weights, matrices over the same terms in the same order."""
    items = list(weighted)
    if not items:
        raise ValueError("combine needs at least one (weight, matrix) pair")
    parts: list[tuple[float, Any]] = []
    for item in items:
        try:
            weight, matrix = item
        except (TypeError, ValueError) as error:
            raise ValueError(f"expected (weight, TermSimilarityMatrix), got {item!r}") from error
        if not isinstance(matrix, TermSimilarityMatrix):
            raise ValueError(f"expected a TermSimilarityMatrix, got {type(matrix).__name__}")
        weight = float(weight)
        if not math.isfinite(weight):
            raise ValueError(f"weight must be finite, got {weight}")
        if parts and matrix.terms != parts[0][1].terms:
            raise ValueError("all combined matrices must have the same terms in the same order")
        parts.append((weight, matrix))
    return parts


def canonical_matrix(
    matrix: Any, terms: list[str], dtype: np.dtype | type | None = None
) -> sparse.csc_matrix:
    """``matrix`` as S over ``terms`` (checked already): CSC, float, summed and sorted indices.

    ``dtype`` None keeps a float dtype (and makes any other float32).

    Raises
    ------
    ValueError
        If the matrix is not sparse, not square over the terms, has non-finite values or a
        diagonal entry other than 1.
    """
    if not sparse.issparse(matrix):
        raise ValueError(f"matrix must be a scipy sparse matrix, got {type(matrix).__name__}")
    matrix = sparse.csc_matrix(matrix)
    if dtype is None:
        if matrix.dtype not in [np.dtype(d) for d in FLOAT_DTYPES]:
            matrix = matrix.astype(np.float32)
    else:
        matrix = matrix.astype(check_dtype(dtype))
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
    return matrix


def combined_matrix(
    weighted: Sequence[tuple[float, Any]],
) -> tuple[sparse.csc_matrix, dict[str, Any]]:
    r""":math:`I + \sum_k w_k (S_k - I)` of checked ``(weight, TermSimilarityMatrix)`` pairs
    over equal terms, in their widest dtype, and the record of how it was built."""
    dtype = np.dtype(np.float16)
    total = None
    for weight, matrix in weighted:
        dtype = np.promote_types(dtype, matrix.dtype)
        off_diagonal = matrix.matrix.astype(np.float64)
        off_diagonal.setdiag(0)
        part = weight * off_diagonal
        total = part if total is None else total + part
    total = sparse.csc_matrix(total)
    total.setdiag(1.0)
    total.eliminate_zeros()
    parts = [{"weight": weight, **matrix.build_info} for weight, matrix in weighted]
    return total.astype(dtype), {"source": "combination", "parts": parts}


def principal_block(
    matrix: sparse.csc_matrix, terms: Sequence[str], kept: Sequence[str]
) -> sparse.csc_matrix:
    """The rows and columns of ``kept`` (some of ``terms``, in any order) of ``matrix``.

    Raises
    ------
    ValueError
        If some of ``kept`` are not among ``terms``.
    """
    position = {term: index for index, term in enumerate(terms)}
    missing = [term for term in kept if term not in position]
    if missing:
        raise ValueError(
            f"the term similarity matrix lacks {len(missing)} of the terms, e.g. {missing[0]!r}"
        )
    rows = np.fromiter((position[term] for term in kept), dtype=np.int64, count=len(kept))
    return sparse.csc_matrix(sparse.csc_matrix(matrix)[rows][:, rows])
