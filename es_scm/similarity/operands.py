"""Vectors and corpora as float64 CSR rows: the input coercion of :mod:`es_scm.similarity.scm`.

A *vector* is a 1-D numpy array (or a list of numbers), a 1-D scipy sparse array, a scipy sparse
matrix with exactly one row, or a gensim-style bag of words ``[(term_id, weight), ...]``. A
*corpus* is a 2-D numpy array, a scipy sparse matrix with any other number of rows, or a list of
bags of words; **its rows are documents**. (A 2-D *dense* array is always a corpus, even with a
single row; a *sparse* matrix with a single row is always a vector.)
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, TypeAlias

import numpy as np
from scipy import sparse

__all__ = [
    "Matrix",
    "Normalization",
    "Operand",
    "VectorOrCorpus",
    "as_similarity_matrix",
    "canonical",
    "coerce",
]

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
