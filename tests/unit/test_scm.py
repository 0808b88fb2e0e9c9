"""Unit tests of es_scm.scm: hand-computed values, shapes, input kinds and errors.

Expected values are computed by hand (in the comments) or with explicit dense numpy formulas,
never with the function under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import sparse

from es_scm.similarity import scm
from tests.unit import theorems

# Three terms; terms 0 and 1 are similar (0.5), term 2 is unrelated.
S3 = np.array(
    [
        [1.0, 0.5, 0.0],
        [0.5, 1.0, 0.0],
        [0.0, 0.0, 1.0],
    ]
)


def dense_scm(S: np.ndarray, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """SCM between the rows of X and Y with dense numpy, zero rows giving 0."""
    X, Y = np.atleast_2d(X), np.atleast_2d(Y)
    norms_X = np.sqrt(np.einsum("ij,jk,ik->i", X, S, X))
    norms_Y = np.sqrt(np.einsum("ij,jk,ik->i", Y, S, Y))
    denominator = np.outer(norms_X, norms_Y)
    numerator = X @ S @ Y.T
    return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)


def random_corpus(rng: np.random.Generator, m: int, n: int, density: float = 0.3) -> np.ndarray:
    corpus = rng.random((m, n)) * (rng.random((m, n)) < density)
    corpus[0, rng.integers(n)] += 1.0  # at least one non-zero document
    return corpus


def random_similarity(rng: np.random.Generator, n: int, density: float = 0.2) -> np.ndarray:
    """Symmetric, non-negative, unit diagonal, strictly diagonally dominant (so PD)."""
    A = rng.random((n, n)) * (rng.random((n, n)) < density)
    A = np.triu(A, 1)
    A = A + A.T
    column_sums = A.sum(axis=0)
    A = A / max(1.0, column_sums.max() * 1.25)
    return A + np.eye(n)


# ---------------------------------------------------------------------------------------------
# Hand-computed examples
# ---------------------------------------------------------------------------------------------


def test_hand_computed_inner_products():
    # x = [1, 1, 0], y = [1, 0, 1]: S y = [1, 0.5, 1], so xᵀSy = 1 + 0.5 = 1.5;
    # xᵀSx = 1 + 1 + 2·0.5 = 3, yᵀSy = 1 + 1 = 2.
    x, y = np.array([1.0, 1.0, 0.0]), np.array([1.0, 0.0, 1.0])
    assert scm.inner_product(S3, x, y) == pytest.approx(1.5)
    assert scm.inner_product(S3, x, y, (True, True)) == pytest.approx(1.5 / math.sqrt(6))
    assert scm.inner_product(S3, x, y, (True, False)) == pytest.approx(1.5 / math.sqrt(3))
    assert scm.inner_product(S3, x, y, (False, True)) == pytest.approx(1.5 / math.sqrt(2))
    # 'maintain' multiplies by ‖x‖₂/√(xᵀSx): √2/√3 for x and √2/√2 = 1 for y.
    assert scm.inner_product(S3, x, y, ("maintain", False)) == pytest.approx(1.5 * math.sqrt(2 / 3))
    assert scm.inner_product(S3, x, y, ("maintain", "maintain")) == pytest.approx(
        1.5 * math.sqrt(2 / 3)
    )
    assert scm.inner_product(S3, x, y, (True, "maintain")) == pytest.approx(1.5 / math.sqrt(3))
    # e0 and e1: SCM is s01 = 0.5; e0 and e2: 0.
    assert scm.inner_product(S3, [(0, 1.0)], [(1, 3.0)], (True, True)) == pytest.approx(0.5)
    assert scm.inner_product(S3, [(0, 1.0)], [(2, 3.0)], (True, True)) == 0.0


def test_single_normalized_value_applies_to_both_sides():
    x, y = np.array([1.0, 1.0, 0.0]), np.array([1.0, 0.0, 1.0])
    assert scm.inner_product(S3, x, y, True) == pytest.approx(1.5 / math.sqrt(6))


def test_paper_introduction_cosines():
    # The paper's introduction: d1 = "When Antony found Julius Caesar dead", d2 = "I did enact
    # Julius Caesar: I was killed i' the Capitol", terms in order of first appearance.
    v1 = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0], dtype=float)
    v2 = np.array([0, 0, 0, 1, 1, 0, 2, 1, 1, 1, 1, 1, 1, 1], dtype=float)
    identity = sparse.identity(14, format="csc")
    # v1·v2 = 2, ‖v1‖² = 6, ‖v2‖² = 13: 2/√78 ≈ 0.2265.
    assert scm.inner_product(identity, v1, v2, (True, True)) == pytest.approx(2 / math.sqrt(78))
    assert round(scm.inner_product(identity, v1, v2, (True, True)), 2) == 0.23
    # Julius (3) and Caesar (4) weighted 2: dot 8, ‖v1‖² = 12, ‖v2‖² = 19: 8/√228 ≈ 0.5298.
    w = np.ones(14)
    w[[3, 4]] = 2.0
    assert scm.inner_product(identity, w * v1, w * v2, (True, True)) == pytest.approx(
        8 / math.sqrt(228)
    )
    assert round(scm.inner_product(identity, w * v1, w * v2, (True, True)), 2) == 0.53
    # dead (5) ~ killed (10) with s = 0.8: the numerator gains 0.8·1·1 and the soft norms are
    # unchanged (neither document contains both terms): 8.8/√228 ≈ 0.5828.
    S = sparse.lil_matrix(identity)
    S[5, 10] = S[10, 5] = 0.8
    assert scm.inner_product(S.tocsc(), w * v1, w * v2, (True, True)) == pytest.approx(
        8.8 / math.sqrt(228)
    )


def test_soft_norm_hand_computed():
    # [1, 1, 0]: √3; [0, 0, 2]: 2; zero vector: 0.
    assert scm.soft_norm(S3, np.array([1.0, 1.0, 0.0])) == pytest.approx(math.sqrt(3))
    norms = scm.soft_norm(S3, np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]))
    assert isinstance(norms, np.ndarray)
    np.testing.assert_allclose(norms, [math.sqrt(3), 2.0, 0.0])
    assert isinstance(scm.soft_norm(S3, [(2, 2.0)]), float)


def test_expand_hand_computed():
    # Sᵀ[2, 0, 0] = [2, 1, 0]: the boosted terms are 0 and 1.
    expanded = scm.expand(S3, np.array([2.0, 0.0, 0.0]))
    assert sparse.issparse(expanded)
    assert expanded.shape == (1, 3)
    np.testing.assert_array_equal(expanded.indices, [0, 1])
    np.testing.assert_allclose(expanded.data, [2.0, 1.0])
    corpus = scm.expand(S3, np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 4.0, 0.0]]))
    assert corpus.shape == (3, 3)
    np.testing.assert_allclose(corpus.toarray(), [[0, 0, 1], [0, 0, 0], [2, 4, 0]])
    assert corpus.nnz == 3  # no explicit zeros


def test_expand_uses_transpose_for_asymmetric_S():
    # S = [[1, 0.7], [0, 1]]: Sᵀ[1, 0] = [1, 0.7] and Sᵀ[0, 1] = [0, 1].
    S = np.array([[1.0, 0.7], [0.0, 1.0]])
    np.testing.assert_allclose(scm.expand(S, [1.0, 0.0]).toarray(), [[1.0, 0.7]])
    np.testing.assert_allclose(scm.expand(S, [0.0, 1.0]).toarray(), [[0.0, 1.0]])
    for fmt in ("csc", "csr"):
        matrix = sparse.csc_matrix(S).asformat(fmt)
        np.testing.assert_allclose(scm.expand(matrix, [1.0, 0.0]).toarray(), [[1.0, 0.7]])
    # Theorem 4.1: x'·y = xᵀSy for the asymmetric S as well.
    x, y = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    expected = x @ S @ y  # 1·3 + 1·0.7·5 + 2·5 = 16.5
    assert expected == pytest.approx(16.5)
    assert (scm.expand(S, x) @ y).item() == pytest.approx(16.5)
    assert scm.inner_product(S, x, y) == pytest.approx(16.5)
    assert scm.inner_product(sparse.csr_matrix(S), x, y) == pytest.approx(16.5)


def test_normalize_hand_computed():
    # [1, 1, 0]/√3; zero rows stay zero; 'maintain' gives [1, 1, 0]·√2/√3.
    normalized = scm.normalize(S3, np.array([1.0, 1.0, 0.0]))
    assert isinstance(normalized, np.ndarray)
    np.testing.assert_allclose(normalized, np.array([1.0, 1.0, 0.0]) / math.sqrt(3))
    corpus = scm.normalize(S3, sparse.csr_matrix([[0.0, 0.0, 0.0], [0.0, 0.0, 5.0]]))
    assert sparse.issparse(corpus)
    np.testing.assert_allclose(corpus.toarray(), [[0, 0, 0], [0, 0, 1]])
    maintained = scm.normalize(S3, np.array([1.0, 1.0, 0.0]), maintain=True)
    np.testing.assert_allclose(maintained, np.array([1.0, 1.0, 0.0]) * math.sqrt(2 / 3))
    # after normalization, the unnormalized inner product is the SCM
    x, y = np.array([1.0, 1.0, 0.0]), np.array([1.0, 0.0, 1.0])
    assert scm.inner_product(
        S3, scm.normalize(S3, x), scm.normalize(S3, y), (False, False)
    ) == pytest.approx(1.5 / math.sqrt(6))


# ---------------------------------------------------------------------------------------------
# Zero vectors and errors
# ---------------------------------------------------------------------------------------------

NORMALIZATIONS = [False, True, "maintain"]


@pytest.mark.parametrize("normalized_X", NORMALIZATIONS)
@pytest.mark.parametrize("normalized_Y", NORMALIZATIONS)
def test_zero_vectors_give_zero_never_nan(normalized_X, normalized_Y):
    normalized = (normalized_X, normalized_Y)
    zero, other = np.zeros(3), np.array([1.0, 2.0, 0.0])
    assert scm.inner_product(S3, zero, other, normalized) == 0.0
    assert scm.inner_product(S3, other, zero, normalized) == 0.0
    assert scm.inner_product(S3, zero, zero, normalized) == 0.0
    assert scm.inner_product(S3, [], [(0, 1.0)], normalized) == 0.0
    corpus = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 1.0]])
    result = scm.inner_product(S3, corpus, corpus, normalized)
    assert not np.isnan(result).any()
    assert result[0].tolist() == [0.0, 0.0]
    assert result[:, 0].tolist() == [0.0, 0.0]
    explicit_zero = sparse.csr_matrix(([0.0], ([0], [1])), shape=(1, 3))  # stored 0
    assert scm.inner_product(S3, explicit_zero, other, normalized) == 0.0


def test_negative_soft_norm_raises_naming_the_cause():
    S = np.array([[1.0, -2.0], [-2.0, 1.0]])  # xᵀSx = 1 + 1 - 4 = -2 for x = [1, 1]
    x, y = np.array([1.0, 1.0]), np.array([1.0, 0.0])
    with pytest.raises(ValueError, match=r"not positive semi-definite.*negative entries"):
        scm.inner_product(S, x, y, (True, False))
    with pytest.raises(ValueError, match="not positive semi-definite"):
        scm.inner_product(S, y, x, (False, "maintain"))
    with pytest.raises(ValueError, match="not positive semi-definite"):
        scm.inner_product(S, np.array([[1.0, 0.0], [1.0, 1.0]]), y, (True, True))
    with pytest.raises(ValueError, match="not positive semi-definite"):
        scm.soft_norm(S, x)
    with pytest.raises(ValueError, match="not positive semi-definite"):
        scm.normalize(S, x)
    # the unnormalized inner product needs no positivity: 1 - 2 = -1
    assert scm.inner_product(S, x, y) == pytest.approx(-1.0)


def test_zero_soft_norm_of_nonzero_vector_raises():
    S = np.array([[1.0, -1.0], [-1.0, 1.0]])  # PSD but singular: xᵀSx = 0 for x = [1, 1]
    x = np.array([1.0, 1.0])
    with pytest.raises(ValueError, match="not positive definite"):
        scm.inner_product(S, x, np.array([1.0, 0.0]), (True, True))
    with pytest.raises(ValueError, match="xᵀSx = 0"):
        scm.normalize(S, x)
    assert scm.soft_norm(S, x) == 0.0  # the soft norm itself is well defined


def test_invalid_arguments():
    x = np.ones(3)
    with pytest.raises(ValueError, match="normalized"):
        scm.inner_product(S3, x, x, (True, "yes"))
    with pytest.raises(ValueError, match="pair"):
        scm.inner_product(S3, x, x, (True, True, True))
    with pytest.raises(ValueError, match="term columns"):
        scm.inner_product(S3, np.ones(4), x)
    with pytest.raises(ValueError, match="out of range"):
        scm.inner_product(S3, [(3, 1.0)], x)
    with pytest.raises(ValueError, match="square"):
        scm.inner_product(np.ones((2, 3)), np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match="bag of words"):
        scm.inner_product(S3, ["a", "b", "c"], x)


# ---------------------------------------------------------------------------------------------
# Identity S, shapes, input kinds
# ---------------------------------------------------------------------------------------------


def test_identity_equals_cosine_on_random_corpora():
    rng = np.random.default_rng(42)
    n = 40
    X, Y = random_corpus(rng, 7, n), random_corpus(rng, 9, n)
    X[3] = 0.0  # a zero document
    X_lengths = np.linalg.norm(X, axis=1, keepdims=True)
    Y_lengths = np.linalg.norm(Y, axis=1, keepdims=True)
    cosine = np.nan_to_num((X / np.where(X_lengths > 0, X_lengths, 1)) @ (Y / Y_lengths).T)
    for identity in (np.eye(n), sparse.identity(n, format="csc"), sparse.eye_array(n).tocsr()):
        result = scm.inner_product(identity, sparse.csr_matrix(X), Y, (True, True))
        np.testing.assert_allclose(result, cosine, atol=1e-12)
        np.testing.assert_allclose(scm.soft_norm(identity, X), X_lengths[:, 0])


def vector_kinds(x: np.ndarray) -> dict[str, object]:
    return {
        "dense": x,
        "list": x.tolist(),
        "sparse_1d": sparse.csr_array(x),
        "csr_matrix_row": sparse.csr_matrix(x.reshape(1, -1)),
        "csc_array_row": sparse.csc_array(x.reshape(1, -1)),
        "bow": [(int(i), float(x[i])) for i in np.flatnonzero(x)],
    }


def corpus_kinds(X: np.ndarray) -> dict[str, object]:
    return {
        "dense": X,
        "csr_matrix": sparse.csr_matrix(X),
        "csc_array": sparse.csc_array(X),
        "coo_matrix": sparse.coo_matrix(X),
        "bow": [[(int(i), float(row[i])) for i in np.flatnonzero(row)] for row in X],
    }


@pytest.mark.parametrize("normalized", [(False, False), (True, True), ("maintain", True)])
def test_shapes_and_input_kinds_agree(normalized):
    rng = np.random.default_rng(7)
    n = 12
    S = random_similarity(rng, n)
    X, Y = random_corpus(rng, 4, n, 0.5), random_corpus(rng, 5, n, 0.5)
    X[2] = 0.0
    x, y = X[0], Y[1]
    expected = X @ S @ Y.T
    if normalized == (True, True):
        expected = dense_scm(S, X, Y)
    elif normalized == ("maintain", True):
        # X rows times ‖x‖₂/√(xᵀSx), Y rows divided by √(yᵀSy)
        norms_X = np.sqrt(np.einsum("ij,jk,ik->i", X, S, X))
        norms_Y = np.sqrt(np.einsum("ij,jk,ik->i", Y, S, Y))
        factors_X = np.divide(
            np.linalg.norm(X, axis=1), norms_X, out=np.zeros(4), where=norms_X > 0
        )
        expected = factors_X[:, None] * expected / norms_Y[None, :]

    for S_kind in (S, sparse.csc_matrix(S), sparse.csr_array(S)):
        for x_name, x_kind in vector_kinds(x).items():
            for y_name, y_kind in vector_kinds(y).items():
                result = scm.inner_product(S_kind, x_kind, y_kind, normalized)
                assert isinstance(result, float), (x_name, y_name)
                assert result == pytest.approx(expected[0, 1]), (x_name, y_name)
            for Y_name, Y_kind in corpus_kinds(Y).items():
                result = scm.inner_product(S_kind, x_kind, Y_kind, normalized)
                assert isinstance(result, np.ndarray), (x_name, Y_name)
                assert result.shape == (5,), (x_name, Y_name)
                np.testing.assert_allclose(result, expected[0], err_msg=f"{x_name} {Y_name}")
        for X_name, X_kind in corpus_kinds(X).items():
            for y_name, y_kind in vector_kinds(y).items():
                result = scm.inner_product(S_kind, X_kind, y_kind, normalized)
                assert result.shape == (4,), (X_name, y_name)
                np.testing.assert_allclose(result, expected[:, 1], err_msg=f"{X_name} {y_name}")
            for Y_name, Y_kind in corpus_kinds(Y).items():
                result = scm.inner_product(S_kind, X_kind, Y_kind, normalized)
                assert result.shape == (4, 5), (X_name, Y_name)
                np.testing.assert_allclose(result, expected, err_msg=f"{X_name} {Y_name}")


def test_single_row_dense_is_a_corpus_and_single_row_sparse_is_a_vector():
    x = np.array([[1.0, 0.0, 1.0]])
    assert scm.inner_product(S3, x, x).shape == (1, 1)
    assert isinstance(scm.inner_product(S3, sparse.csr_matrix(x), sparse.csr_matrix(x)), float)
    assert scm.inner_product(S3, x, np.zeros((0, 3))).shape == (1, 0)


def test_inputs_are_not_modified():
    X = sparse.csr_matrix(([0.0, 2.0], ([0, 1], [1, 2])), shape=(2, 3))  # with an explicit zero
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    scm.normalize(S3, X)
    scm.inner_product(S3, X, X, (True, True))
    assert X.nnz == 2
    for array, saved in zip((X.data, X.indices, X.indptr), before, strict=True):
        np.testing.assert_array_equal(array, saved)


def test_float32_S_is_computed_in_float64():
    rng = np.random.default_rng(3)
    S = random_similarity(rng, 20).astype(np.float32)
    X = random_corpus(rng, 3, 20)
    result = scm.inner_product(sparse.csc_matrix(S), X, X)
    assert result.dtype == np.float64
    np.testing.assert_allclose(result, X @ S.astype(np.float64) @ X.T, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Theorem 3.2: the orthonormal basis
# ---------------------------------------------------------------------------------------------


def test_orthonormal_basis_factors_S():
    rng = np.random.default_rng(11)
    n = 60
    S = random_similarity(rng, n, density=0.05)
    basis = theorems.orthonormal_basis(sparse.csc_matrix(S))
    assert sorted(basis.perm.tolist()) == list(range(n))
    F = basis.factor.toarray()
    np.testing.assert_allclose(F, np.tril(F))  # lower triangular
    np.testing.assert_allclose(F @ F.T, S[np.ix_(basis.perm, basis.perm)], atol=1e-12)
    E = basis.E.toarray()
    np.testing.assert_allclose(E @ E.T, S, atol=1e-12)
    assert basis.bandwidth <= n - 1
    X, Y = random_corpus(rng, 5, n), random_corpus(rng, 6, n)
    transformed_X = theorems.to_orthonormal(basis, X)
    transformed_Y = theorems.to_orthonormal(basis, sparse.csr_matrix(Y))
    assert isinstance(transformed_X, np.ndarray)
    assert sparse.issparse(transformed_Y)
    np.testing.assert_allclose(transformed_X @ transformed_Y.T.toarray(), X @ S @ Y.T, atol=1e-12)
    vector = theorems.to_orthonormal(basis, X[0])
    assert vector.shape == (n,)
    assert vector @ vector == pytest.approx(X[0] @ S @ X[0])


def test_orthonormal_basis_of_a_banded_matrix_has_no_fill_outside_the_band():
    # A tridiagonal S in a scrambled order: RCM recovers bandwidth 1, and the factor is
    # bidiagonal (n diagonal entries plus n - 1 sub-diagonal ones).
    n = 50
    tridiagonal = np.eye(n) + 0.3 * (np.eye(n, k=1) + np.eye(n, k=-1))
    order = np.random.default_rng(5).permutation(n)
    S = tridiagonal[np.ix_(order, order)]
    basis = theorems.orthonormal_basis(sparse.csr_matrix(S))
    assert basis.bandwidth == 1
    assert basis.factor.nnz == 2 * n - 1
    E = basis.E.toarray()
    np.testing.assert_allclose(E @ E.T, S, atol=1e-12)


def test_orthonormal_basis_errors():
    with pytest.raises(ValueError, match="not symmetric"):
        theorems.orthonormal_basis(np.array([[1.0, 0.2], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="not positive definite"):
        theorems.orthonormal_basis(np.array([[1.0, 2.0], [2.0, 1.0]]))  # eigenvalues 3, -1
    with pytest.raises(ValueError, match="not positive definite"):
        theorems.orthonormal_basis(np.array([[1.0, 1.0], [1.0, 1.0]]))  # singular
    with pytest.raises(ValueError, match="not positive definite"):
        theorems.orthonormal_basis(np.diag([1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="max_band_entries"):
        theorems.orthonormal_basis(np.full((10, 10), 0.05) + np.eye(10), max_band_entries=50)


# ---------------------------------------------------------------------------------------------
# §4: Theorems 4.1–4.3
# ---------------------------------------------------------------------------------------------


def test_theorem_4_1_dot_product_equals_inner_product():
    rng = np.random.default_rng(21)
    n = 30
    S = rng.random((n, n)) * (rng.random((n, n)) < 0.2) + np.eye(n)  # asymmetric, arbitrary
    X, Y = random_corpus(rng, 3, n), random_corpus(rng, 8, n)
    queries, documents = theorems.dot_product_transform(sparse.csc_matrix(S), X, Y)
    np.testing.assert_allclose((queries @ documents.T).toarray(), X @ S @ Y.T, atol=1e-12)
    np.testing.assert_allclose(documents.toarray(), Y)
    assert theorems.dot_product_transform(S, None, Y)[0] is None
    assert theorems.dot_product_transform(S, X)[1] is None


def test_theorem_4_2_dot_product_is_scm_times_query_norm():
    rng = np.random.default_rng(22)
    n = 30
    S = random_similarity(rng, n)
    X, Y = random_corpus(rng, 3, n), random_corpus(rng, 8, n)
    queries, documents = theorems.scm_dot_product_transform(sparse.csc_matrix(S), X, Y)
    query_norms = np.sqrt(np.einsum("ij,jk,ik->i", X, S, X))
    np.testing.assert_allclose(
        (queries @ documents.T).toarray(), dense_scm(S, X, Y) * query_norms[:, None], atol=1e-12
    )


def test_theorem_4_3_cosine_is_scm_times_a_query_constant():
    rng = np.random.default_rng(23)
    n = 30
    S = random_similarity(rng, n)
    X, Y = random_corpus(rng, 3, n), random_corpus(rng, 8, n)
    Y[4] = 0.0
    queries, documents = theorems.scm_cosine_transform(sparse.csr_matrix(S), X, Y)
    assert queries.shape == (3, n + 1)
    assert documents.shape == (8, n + 1)
    q, d = queries.toarray(), documents.toarray()
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0)
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), [1, 1, 1, 1, 0, 1, 1, 1])
    assert np.all(q[:, -1] == 0.0)
    # cos(x', y'') = SCM(x, y) · √(xᵀSx) / ‖Sᵀx‖₂
    constant = np.sqrt(np.einsum("ij,jk,ik->i", X, S, X)) / np.linalg.norm(X @ S, axis=1)
    np.testing.assert_allclose(q @ d.T, dense_scm(S, X, Y) * constant[:, None], atol=1e-12)


def test_theorem_4_3_rejects_documents_outside_the_unit_ball():
    # S with a diagonal below one gives ‖y/√(yᵀSy)‖ > 1: no real extra coordinate.
    S = np.diag([0.5, 0.5])
    with pytest.raises(ValueError, match=r"Theorem 4\.3"):
        theorems.scm_cosine_transform(S, None, np.array([[1.0, 1.0]]))


def test_soft_norms_of_a_corpus_larger_than_one_slice():
    # More rows than the slice size: the norms are computed slice by slice and must equal the
    # dense formula on every row, in order.
    rng = np.random.default_rng(7)
    n = 30
    basis = rng.random((n, n))
    S = basis @ basis.T / n  # positive semi-definite
    X = random_corpus(rng, scm._ROWS_PER_SLICE + 1000, n, density=0.1)
    expected = np.sqrt(np.einsum("ij,jk,ik->i", X, S, X))
    np.testing.assert_allclose(scm.soft_norm(sparse.csr_array(S), sparse.csr_array(X)), expected)
    normalized = scm.normalize(sparse.csr_array(S), sparse.csr_array(X)).toarray()
    nonzero = expected > 0
    np.testing.assert_allclose(normalized[nonzero], X[nonzero] / expected[nonzero, None])
