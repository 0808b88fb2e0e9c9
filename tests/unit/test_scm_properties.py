"""Property-based tests (hypothesis) of es_scm.scm.

Symmetry, |SCM| ≤ 1 for positive semi-definite S, scale invariance, the ranking preservation of
Theorems 4.2 and 4.3, and the orthonormal-basis identity of Theorem 3.2.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import sparse

from es_scm.similarity import scm
from tests.unit import theorems

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)

TOLERANCE = 1e-9

unit_floats = st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False)
# Magnitudes below 1e-6 become 0: squares of tiny values underflow (1e-181² = 0), which says
# nothing about the SCM and breaks the reference cosines computed with numpy.
weights = st.floats(0.0, 10.0, allow_nan=False, allow_infinity=False).map(
    lambda v: v if v >= 1e-6 else 0.0
)
signed_weights = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False).map(
    lambda v: v if abs(v) >= 1e-6 else 0.0
)


@st.composite
def dominant_similarity(draw: st.DrawFn, n: int) -> np.ndarray:
    """Symmetric, non-negative, unit diagonal, strictly diagonally dominant, hence PD."""
    upper = draw(hnp.arrays(np.float64, (n, n), elements=unit_floats))
    mask = draw(hnp.arrays(np.bool_, (n, n)))
    off_diagonal = np.triu(upper * mask, k=1)
    off_diagonal = off_diagonal + off_diagonal.T
    largest_column_sum = off_diagonal.sum(axis=0).max(initial=0.0)
    if largest_column_sum >= 1.0:
        off_diagonal = off_diagonal / (largest_column_sum * 1.01)
    return off_diagonal + np.eye(n)


@st.composite
def gram_similarity(draw: st.DrawFn, n: int) -> np.ndarray:
    """The Gram matrix of n unit embeddings: PSD (possibly singular), unit diagonal, signed."""
    dimensions = draw(st.integers(1, 4))
    embeddings = draw(
        hnp.arrays(np.float64, (n, dimensions), elements=st.floats(-1.0, 1.0, width=32))
    )
    lengths = np.linalg.norm(embeddings, axis=1, keepdims=True)
    assume(np.all(lengths > 1e-3))
    unit = embeddings / lengths
    return unit @ unit.T


@st.composite
def problem(
    draw: st.DrawFn, *, psd: str = "dominant", signed: bool = False, documents: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(S, x, Y): a similarity matrix, a non-zero vector x and a corpus Y (or one vector y)."""
    n = draw(st.integers(1, 8))
    S = draw(dominant_similarity(n) if psd == "dominant" else gram_similarity(n))
    elements = signed_weights if signed else weights
    x = draw(hnp.arrays(np.float64, n, elements=elements))
    Y = draw(hnp.arrays(np.float64, (max(documents, 1), n), elements=elements))
    assume(np.any(x != 0.0) and np.all(np.any(Y != 0.0, axis=1)))
    return S, x, Y if documents else Y[0]


def dense_scm(S: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    return float(x @ S @ y / np.sqrt((x @ S @ x) * (y @ S @ y)))


def assert_same_order(reference: np.ndarray, candidate: np.ndarray, slack: float) -> None:
    """Every strict order of ``reference`` (beyond ``slack``) holds in ``candidate``."""
    for i in range(len(reference)):
        for j in range(len(reference)):
            if reference[i] < reference[j] - slack:
                assert candidate[i] < candidate[j], (i, j, reference, candidate)


@SETTINGS
@given(problem(signed=True), st.sampled_from([False, True, "maintain"]))
def test_symmetry_for_symmetric_S(case, normalization):
    S, x, y = case
    normalized = (normalization, normalization)
    forward = scm.inner_product(S, x, y, normalized)
    backward = scm.inner_product(sparse.csr_matrix(S), y, x, normalized)
    assert np.isclose(forward, backward, rtol=1e-9, atol=1e-9)


@SETTINGS
@given(st.one_of(problem(signed=True), problem(psd="gram", signed=True)))
def test_scm_is_at_most_one_for_psd_S(case):
    S, x, y = case
    assume(x @ S @ x > 1e-6 * (np.abs(x) @ np.abs(S) @ np.abs(x)))
    assume(y @ S @ y > 1e-6 * (np.abs(y) @ np.abs(S) @ np.abs(y)))
    # Normalize first and take the unnormalized inner product: (True, True) would clip.
    value = scm.inner_product(S, scm.normalize(S, x), scm.normalize(S, y), (False, False))
    assert abs(value) <= 1.0 + 1e-9
    assert np.isclose(value, dense_scm(S, x, y), rtol=1e-7, atol=1e-9)


@SETTINGS
@given(
    problem(signed=True),
    st.floats(1e-3, 1e3),
    st.floats(1e-3, 1e3),
    st.sampled_from([True, "maintain"]),
)
def test_scm_is_invariant_to_positive_scaling(case, a, b, other_side):
    S, x, y = case
    reference = scm.inner_product(S, x, y, (True, True))
    assert np.isclose(scm.inner_product(S, a * x, y, (True, True)), reference, atol=1e-9)
    assert np.isclose(scm.inner_product(S, x, b * y, (True, True)), reference, atol=1e-9)
    assert np.isclose(scm.inner_product(S, a * x, b * y, (True, True)), reference, atol=1e-9)
    # a side normalized with True is invariant whatever the other side does
    partial = scm.inner_product(S, x, y, (other_side, True))
    assert np.isclose(scm.inner_product(S, x, b * y, (other_side, True)), partial, atol=1e-9)


@SETTINGS
@given(problem(documents=6))
def test_theorem_4_2_preserves_the_ranking(case):
    S, x, Y = case
    scms = scm.inner_product(S, x, Y, (True, True))
    queries, documents = theorems.scm_dot_product_transform(S, x, Y)
    dots = (queries @ documents.T).toarray().ravel()
    # x'ᵀy' = √(xᵀSx) · SCM(x, y)
    assert np.allclose(dots, np.sqrt(x @ S @ x) * scms, rtol=1e-9, atol=1e-12)
    assert_same_order(scms, dots, slack=1e-9)


@SETTINGS
@given(problem(documents=6))
def test_theorem_4_3_preserves_the_ranking(case):
    S, x, Y = case  # non-negative S with a unit diagonal, non-negative documents
    scms = scm.inner_product(S, x, Y, (True, True))
    queries, documents = theorems.scm_cosine_transform(sparse.csc_matrix(S), x, Y)
    q, D = queries.toarray()[0], documents.toarray()
    assert np.isclose(np.linalg.norm(q), 1.0)
    assert np.allclose(np.linalg.norm(D, axis=1), 1.0)
    cosines = (D @ q) / (np.linalg.norm(D, axis=1) * np.linalg.norm(q))
    assert_same_order(scms, cosines, slack=1e-9)


@SETTINGS
@given(problem(signed=True, documents=3), st.integers(0, 2**32 - 1))
def test_theorem_3_2_orthonormal_basis_identity(case, seed):
    S, x, Y = case
    basis = theorems.orthonormal_basis(sparse.csc_matrix(S))
    E = basis.E.toarray()
    assert np.allclose(E @ E.T, S, atol=1e-10)
    transformed_x = theorems.to_orthonormal(basis, x)
    transformed_Y = theorems.to_orthonormal(basis, Y)
    # the dot product in the orthonormal basis is the soft inner product xᵀSy
    assert np.allclose(transformed_Y @ transformed_x, Y @ S @ x, atol=1e-9)
    assert np.allclose(transformed_Y @ transformed_x, scm.inner_product(S, Y, x), atol=1e-9)
    # and the plain cosine there is the SCM
    cosine = (transformed_Y @ transformed_x) / (
        np.linalg.norm(transformed_Y, axis=1) * np.linalg.norm(transformed_x)
    )
    assert np.allclose(cosine, scm.inner_product(S, Y, x, (True, True)), atol=1e-9)
    # a random symmetric relabelling of the terms gives the same inner products
    order = np.random.default_rng(seed).permutation(len(x))
    relabelled = theorems.orthonormal_basis(sparse.csr_matrix(S[np.ix_(order, order)]))
    assert np.allclose(
        theorems.to_orthonormal(relabelled, Y[:, order])
        @ theorems.to_orthonormal(relabelled, x[order]),
        Y @ S @ x,
        atol=1e-9,
    )
