r"""How a term similarity matrix is made: its public builders, and its arrays checked, combined
and restricted.

:class:`MatrixBuilders` holds the builders of :class:`es_scm.similarity.TermSimilarityMatrix`
(which inherits them: ``TermSimilarityMatrix.from_embeddings``, ``from_levenshtein``,
``from_pairs``, ``identity``, ``combine``): each checks its arguments into typed options where
they enter and calls the builder of its source — word embeddings
(:func:`es_scm.similarity.sources.embedding_matrix`), edit distance
(:func:`es_scm.similarity.levenshtein.levenshtein_matrix`), a thesaurus
(:func:`es_scm.similarity.thesaurus.pairs_matrix`) or a combination (:func:`combined_matrix`).
Every matrix's arrays pass :func:`canonical_matrix`; ``restrict`` is :func:`principal_block`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from scipy import sparse

from es_scm.defaults import LEVENSHTEIN_DEFAULTS, SIMILARITY_DEFAULTS
from es_scm.options import SimilarityOptions
from es_scm.similarity.embeddings import WordEmbeddings
from es_scm.similarity.levenshtein import BATCH_SIZE, levenshtein_matrix
from es_scm.similarity.sources import as_embeddings, embedding_matrix
from es_scm.similarity.thesaurus import pairs_matrix
from es_scm.validation import (
    FLOAT_DTYPES,
    POSITIVE_INT,
    OrNone,
    check,
    check_dtype,
    check_terms,
)

if TYPE_CHECKING:  # pragma: no cover
    from gensim.models import KeyedVectors

__all__ = ["MatrixBuilders", "canonical_matrix", "combined_matrix", "principal_block"]

_Matrix = TypeVar("_Matrix", bound="MatrixBuilders")


class MatrixBuilders:
    """The builders of :class:`~es_scm.similarity.TermSimilarityMatrix`, which inherits them.

    Each makes a matrix with ``cls(matrix, terms, build_info=...)``.
    """

    __slots__ = ()

    @classmethod
    def identity(
        cls: type[_Matrix], terms: Sequence[str], *, dtype: np.dtype | type = np.float32
    ) -> _Matrix:
        """S = I: no two distinct terms are similar, and the SCM is the plain cosine."""
        terms = check_terms(terms)
        identity = sparse.identity(len(terms), dtype=check_dtype(dtype), format="csc")
        return cls(identity, terms, build_info={"source": "identity"})

    @classmethod
    def from_pairs(
        cls: type[_Matrix],
        terms: Sequence[str],
        pairs: Iterable[tuple[str, str, float]],
        *,
        symmetric: bool = True,
        ignore_missing: bool = True,
        dtype: np.dtype | type = np.float32,
    ) -> _Matrix:
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
    def combine(cls: type[_Matrix], weighted: Iterable[tuple[float, _Matrix]]) -> _Matrix:
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
        cls: type[_Matrix],
        terms: Sequence[str],
        embeddings: WordEmbeddings | KeyedVectors,
        *,
        nonzero_limit: int | None = SIMILARITY_DEFAULTS.nonzero_limit,
        threshold: float = SIMILARITY_DEFAULTS.threshold,
        exponent: float = SIMILARITY_DEFAULTS.exponent,
        symmetric: bool = SIMILARITY_DEFAULTS.symmetric,
        dominant: bool = SIMILARITY_DEFAULTS.dominant,
        document_frequencies: Sequence[float] | np.ndarray | None = None,
        neighbors: str = SIMILARITY_DEFAULTS.neighbors,
        dtype: np.dtype | type = np.float32,
        batch_size: int | None = None,
    ) -> _Matrix:
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
            S positive definite. These five and ``neighbors`` default to
            :data:`es_scm.defaults.SIMILARITY_DEFAULTS` (:class:`es_scm.options.SimilarityOptions`).
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
        cls: type[_Matrix],
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
    ) -> _Matrix:
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
        if not isinstance(matrix, MatrixBuilders):
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
