"""The SCM math of a term similarity matrix, on S's float64 rows made once.

:class:`MatrixMath` is the computing half of :class:`es_scm.similarity.TermSimilarityMatrix`: it
keeps S as a float64 CSR copy (:attr:`MatrixMath.rows`), made on first use and shared by
indexing, search and evaluation, and runs the kernels of :mod:`es_scm.similarity.scm` on it
(expansion, soft norms, normalization, gensim's ``inner_product``, the summands of xᵀSy), plus a
cached bound of ‖S‖₂. The other half — the terms, the checks, the builders and the files — is in
:mod:`es_scm.similarity.matrix`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from es_scm.similarity import scm

__all__ = ["MatrixMath"]


class MatrixMath:
    """S's float64 rows and the SCM math on them; ``matrix`` (CSC) is set by the subclass."""

    __slots__ = ("_norm_bound", "_rows")

    matrix: sparse.csc_matrix

    def __init__(self) -> None:
        self._rows: sparse.csr_array | None = None
        self._norm_bound: float | None = None

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
