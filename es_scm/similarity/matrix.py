r"""The term similarity matrix S of the soft vector space model.

For weighted term vectors x and y (Novotný, *Implementation Notes for the Soft Cosine Measure*,
CIKM '18, Definition 3.1 and Lemma 3.3)

.. math:: \operatorname{SCM}(x, y) = \frac{x^T S y}{\sqrt{x^T S x}\,\sqrt{y^T S y}},

where :math:`s_{ij} \in [-1, 1]` is the similarity of terms i and j and :math:`s_{ii} = 1`.
:class:`TermSimilarityMatrix` holds S as a scipy CSC matrix (float32 by default) with a **unit
diagonal**, together with its ``terms`` (row/column i is ``terms[i]``) and a record of how it was
built (:attr:`TermSimilarityMatrix.build_info`, saved with it and in a model's ``model.json``).

It is the term-similarity layer of es-scm: the math of the search path
(:mod:`es_scm.similarity.scm` — :meth:`~TermSimilarityMatrix.expand`,
:meth:`~TermSimilarityMatrix.soft_norm`, :meth:`~TermSimilarityMatrix.normalize`,
:meth:`~TermSimilarityMatrix.inner_product`, :meth:`~TermSimilarityMatrix.contributions`) runs on
its cached float64 CSR copy (:attr:`~TermSimilarityMatrix.rows`), made once and shared by
indexing, search and evaluation. The class holds the terms, the checks, the files and the
restriction; it inherits the math from :class:`es_scm.similarity.matrix_math.MatrixMath` and
its builders from :class:`es_scm.similarity.matrix_builders.MatrixBuilders`.

Sources of similarities feed one greedy builder that bounds every column to ``nonzero_limit``
off-diagonal non-zeros (Theorem 3.4; :mod:`es_scm.similarity.builder`): word embeddings
(:mod:`es_scm.similarity.sources`, with gensim's bit-for-bit mode in
:mod:`es_scm.similarity.gensim_compat`), edit distance (:mod:`es_scm.similarity.levenshtein`) and
a thesaurus of pairs (:mod:`es_scm.similarity.thesaurus`); :meth:`TermSimilarityMatrix.combine`
mixes them.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import sparse

from es_scm.similarity.matrix_builders import MatrixBuilders, canonical_matrix, principal_block
from es_scm.similarity.matrix_files import read_matrix, write_matrix
from es_scm.similarity.matrix_math import MatrixMath
from es_scm.validation import NON_NEGATIVE_INT, check, check_terms

__all__ = ["TermSimilarityMatrix"]

PathLike = str | os.PathLike


class TermSimilarityMatrix(MatrixMath, MatrixBuilders):
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

    __slots__ = ("_index", "build_info", "matrix", "terms")

    def __init__(
        self,
        matrix: Any,
        terms: Sequence[str],
        *,
        dtype: np.dtype | type | None = None,
        build_info: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        terms = check_terms(terms)
        matrix = canonical_matrix(matrix, terms, dtype)
        self.matrix: sparse.csc_matrix = matrix
        self.terms: list[str] = terms
        self.build_info: dict[str, Any] = dict(build_info or {})
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
