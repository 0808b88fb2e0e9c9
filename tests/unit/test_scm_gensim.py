"""gensim 4.x as an oracle for es_scm.scm.inner_product.

gensim's ``SparseTermSimilarityMatrix.inner_product`` takes bags of words (corpora are lists of
them, i.e. documents are *columns* of its corpus matrices); ours takes rows. Its return types
differ too (``numpy.matrix`` for a vector × corpus, ``(m, 1)`` for a corpus × vector, a sparse
matrix for corpus × corpus), so results are flattened before comparing. gensim computes in the
dtype of its matrix (float32 here), hence the tolerances.

One gensim quirk is *not* reproduced: in its vector × corpus path, gensim restricts everything
to the terms of the query's expansion ``Sᵀx`` *before* normalizing the corpus, so a document's
soft norm there ignores the document's other terms (see
``test_gensim_mixed_path_normalizes_documents_over_the_query_terms_only``). For those cases the
oracle is gensim's corpus × corpus path with the vector wrapped as a one-document corpus, which
normalizes every document over all of its terms, as the paper's SCM requires.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import sparse

gensim_termsim = pytest.importorskip("gensim.similarities.termsim")
gensim_corpora = pytest.importorskip("gensim.corpora")
gensim_matutils = pytest.importorskip("gensim.matutils")

from es_scm.similarity import scm  # noqa: E402

SparseTermSimilarityMatrix = gensim_termsim.SparseTermSimilarityMatrix
UniformTermSimilarityIndex = gensim_termsim.UniformTermSimilarityIndex

# gensim divides 0 by 0 for empty documents (and masks the result afterwards)
pytestmark = pytest.mark.filterwarnings(
    "ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning"
)

NORMALIZATIONS = [False, True, "maintain"]
N_TERMS = 50
RTOL, ATOL = 2e-5, 2e-6


def random_symmetric_matrix(rng: np.random.Generator, n: int) -> sparse.csc_matrix:
    """A sparse, symmetric, non-negative S with a unit diagonal (positive definite)."""
    upper = sparse.random(n, n, density=0.08, random_state=rng, format="coo")
    upper = sparse.triu(upper, k=1)
    symmetric = (upper + upper.T).tocsc()
    column_sums = np.asarray(symmetric.sum(axis=0)).ravel()
    symmetric = symmetric / max(1.0, 1.1 * column_sums.max())
    return sparse.csc_matrix(symmetric + sparse.identity(n), dtype=np.float32)


def random_bow(rng: np.random.Generator, n: int, size: int) -> list[tuple[int, float]]:
    term_ids = sorted(rng.choice(n, size=size, replace=False).tolist())
    return [(term_id, float(rng.uniform(0.1, 3.0))) for term_id in term_ids]


def random_bow_corpus(rng: np.random.Generator, n: int, m: int) -> list[list[tuple[int, float]]]:
    corpus = [random_bow(rng, n, int(rng.integers(1, 8))) for _ in range(m)]
    corpus.insert(m // 2, [])  # an empty document (not first: gensim sniffs the first one)
    return corpus


def as_array(result: object) -> np.ndarray:
    if sparse.issparse(result):
        return result.toarray()
    return np.asarray(result, dtype=np.float64)


@pytest.fixture(scope="module")
def data() -> dict[str, object]:
    rng = np.random.default_rng(2024)
    S = random_symmetric_matrix(rng, N_TERMS)
    return {
        "S": S,
        "gensim": SparseTermSimilarityMatrix(S),
        "x": random_bow(rng, N_TERMS, 6),
        "y": random_bow(rng, N_TERMS, 9),
        "X": random_bow_corpus(rng, N_TERMS, 7),
        "Y": random_bow_corpus(rng, N_TERMS, 9),
    }


def our_argument(bow_or_corpus: list, kind: str, n: int) -> object:
    """The same data as a bag of words, or as our sparse/dense rows."""
    is_corpus = bool(bow_or_corpus) and isinstance(bow_or_corpus[0], list)
    rows = gensim_matutils.corpus2csc(
        bow_or_corpus if is_corpus else [bow_or_corpus], num_terms=n, dtype=np.float64
    ).T.tocsr()
    if kind == "bow":
        return bow_or_corpus
    if kind == "sparse":
        return rows
    return rows.toarray() if is_corpus else rows.toarray()[0]


@pytest.mark.parametrize(
    ("normalized_X", "normalized_Y"), list(itertools.product(NORMALIZATIONS, repeat=2))
)
@pytest.mark.parametrize(("X_name", "Y_name"), list(itertools.product("xX", "yY")))
@pytest.mark.parametrize("kind", ["bow", "sparse", "dense"])
def test_inner_product_matches_gensim(data, normalized_X, normalized_Y, X_name, Y_name, kind):
    normalized = (normalized_X, normalized_Y)
    X, Y = data[X_name], data[Y_name]
    X_is_corpus, Y_is_corpus = X_name == "X", Y_name == "Y"
    ours = scm.inner_product(
        data["S"], our_argument(X, kind, N_TERMS), our_argument(Y, kind, N_TERMS), normalized
    )

    gensim_matrix = data["gensim"]
    if X_is_corpus == Y_is_corpus:
        expected = as_array(gensim_matrix.inner_product(X, Y, normalized))
    else:
        # the corpus × corpus path, with the vector wrapped as a one-document corpus
        wrapped = gensim_matrix.inner_product(
            X if X_is_corpus else [X], Y if Y_is_corpus else [Y], normalized
        )
        expected = as_array(wrapped)
        corpus_side_normalized = normalized_Y if Y_is_corpus else normalized_X
        if corpus_side_normalized is False:
            # gensim's own vector × corpus path agrees here
            direct = as_array(gensim_matrix.inner_product(X, Y, normalized))
            np.testing.assert_allclose(direct.ravel(), expected.ravel(), rtol=RTOL, atol=ATOL)

    if not X_is_corpus and not Y_is_corpus:
        assert isinstance(ours, float)
        assert ours == pytest.approx(float(expected), rel=RTOL, abs=ATOL)
    elif X_is_corpus and Y_is_corpus:
        assert ours.shape == (len(X), len(Y))
        np.testing.assert_allclose(ours, expected, rtol=RTOL, atol=ATOL)
    else:
        assert ours.shape == ((len(Y),) if Y_is_corpus else (len(X),))
        np.testing.assert_allclose(ours, expected.ravel(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("normalized", list(itertools.product(NORMALIZATIONS, repeat=2)))
def test_matches_gensim_on_a_matrix_built_by_gensim(normalized):
    # S built by gensim itself from a uniform term similarity index with a non-zero limit
    # (greedy symmetric insertion), used through both libraries.
    rng = np.random.default_rng(99)
    texts = [[f"t{int(i)}" for i in rng.integers(0, 40, size=8)] for _ in range(30)]
    dictionary = gensim_corpora.Dictionary(texts)
    index = UniformTermSimilarityIndex(dictionary, term_similarity=0.3)
    gensim_matrix = SparseTermSimilarityMatrix(index, dictionary, nonzero_limit=3)
    S = gensim_matrix.matrix
    assert S.shape == (len(dictionary), len(dictionary))
    X = [dictionary.doc2bow(text) for text in texts[:6]]
    Y = [dictionary.doc2bow(text) for text in texts[6:15]]
    expected = as_array(gensim_matrix.inner_product(X, Y, normalized))
    np.testing.assert_allclose(scm.inner_product(S, X, Y, normalized), expected, rtol=RTOL)
    rows_X = gensim_matutils.corpus2csc(X, num_terms=len(dictionary)).T.tocsr()
    np.testing.assert_allclose(scm.inner_product(S, rows_X, Y, normalized), expected, rtol=RTOL)
    expected_pair = gensim_matrix.inner_product(X[0], Y[0], normalized)
    assert scm.inner_product(S, X[0], Y[0], normalized) == pytest.approx(
        float(expected_pair), rel=RTOL
    )


def test_zero_vectors_match_gensim(data):
    gensim_matrix = data["gensim"]
    for normalized in itertools.product(NORMALIZATIONS, repeat=2):
        assert float(gensim_matrix.inner_product([], data["y"], normalized)) == 0.0
        assert scm.inner_product(data["S"], [], data["y"], normalized) == 0.0
        assert scm.inner_product(data["S"], data["x"], [], normalized) == 0.0


def test_gensim_mixed_path_normalizes_documents_over_the_query_terms_only():
    # S: terms 0 ~ 1 (0.5), 2 ~ 3 (0.3). Query e0; document [1, 0, 1, 0] (terms 0 and 2).
    # SCM = s00 / √(yᵀSy) = 1/√2 ≈ 0.7071. gensim's vector × corpus path keeps only the
    # expansion terms {0, 1} of the query, so it sees the document as [1, 0] and returns 1.0.
    S = sparse.csc_matrix(
        np.array([[1, 0.5, 0, 0], [0.5, 1, 0, 0], [0, 0, 1, 0.3], [0, 0, 0.3, 1]], dtype=np.float32)
    )
    gensim_matrix = SparseTermSimilarityMatrix(S)
    query, documents = [(0, 1.0)], [[(0, 1.0), (2, 1.0)]]
    mixed = as_array(gensim_matrix.inner_product(query, documents, (True, True))).ravel()
    wrapped = as_array(gensim_matrix.inner_product([query], documents, (True, True))).ravel()
    ours = scm.inner_product(S, query, documents, (True, True))
    assert mixed[0] == pytest.approx(1.0)
    assert wrapped[0] == pytest.approx(1 / math.sqrt(2))
    assert ours[0] == pytest.approx(1 / math.sqrt(2))
