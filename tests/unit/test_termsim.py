"""TermSimilarityMatrix: builders, gensim 4.4 as the oracle, persistence, validation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import sparse

from es_scm.similarity import TermSimilarityMatrix, WordEmbeddings, scm

N_WORDS, DIM = 300, 20


@pytest.fixture(scope="module")
def embeddings() -> WordEmbeddings:
    rng = np.random.default_rng(20181022)
    words = [f"w{i}" for i in range(N_WORDS)]
    return WordEmbeddings(words, rng.standard_normal((N_WORDS, DIM)).astype(np.float32))


@pytest.fixture(scope="module")
def documents(embeddings: WordEmbeddings) -> list[list[str]]:
    """Documents over 250 of the words plus two words without embeddings."""
    rng = np.random.default_rng(7)
    pool = [*embeddings.words[:250], "oov_a", "oov_b"]
    return [list(rng.choice(pool, size=int(rng.integers(1, 30)))) for _ in range(80)]


def _csc(matrix: sparse.spmatrix) -> sparse.csc_matrix:
    matrix = sparse.csc_matrix(matrix)
    matrix.sort_indices()
    return matrix


def _assert_same_matrix(ours: sparse.spmatrix, theirs: sparse.spmatrix) -> None:
    ours, theirs = _csc(ours), _csc(theirs)
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(ours.indptr, theirs.indptr)
    np.testing.assert_array_equal(ours.indices, theirs.indices)
    np.testing.assert_array_equal(ours.data, theirs.data)  # bit for bit


# ---------------------------------------------------------------------- gensim as the oracle
@pytest.mark.parametrize("use_tfidf", [False, True], ids=["id-order", "rarest-first"])
@pytest.mark.parametrize("nonzero_limit", [1, 3, 10, 100])
@pytest.mark.parametrize("dominant", [False, True], ids=["free", "dominant"])
@pytest.mark.parametrize("symmetric", [True, False], ids=["symmetric", "asymmetric"])
def test_from_embeddings_equals_gensim(
    embeddings: WordEmbeddings,
    documents: list[list[str]],
    symmetric: bool,
    dominant: bool,
    nonzero_limit: int,
    use_tfidf: bool,
) -> None:
    gensim = pytest.importorskip("gensim")
    from gensim.corpora import Dictionary
    from gensim.models import TfidfModel
    from gensim.similarities import SparseTermSimilarityMatrix, WordEmbeddingSimilarityIndex

    assert gensim.__version__.startswith("4.")
    dictionary = Dictionary(documents)
    tfidf = TfidfModel(dictionary=dictionary) if use_tfidf else None
    expected = SparseTermSimilarityMatrix(
        WordEmbeddingSimilarityIndex(embeddings.to_gensim()),
        dictionary,
        tfidf,
        symmetric=symmetric,
        dominant=dominant,
        nonzero_limit=nonzero_limit,
    ).matrix
    terms = [dictionary[i] for i in range(len(dictionary))]
    frequencies = [dictionary.dfs[i] for i in range(len(dictionary))] if use_tfidf else None
    ours = TermSimilarityMatrix.from_embeddings(
        terms,
        embeddings,
        nonzero_limit=nonzero_limit,
        symmetric=symmetric,
        dominant=dominant,
        document_frequencies=frequencies,
        neighbors="gensim",
        threshold=0.0,  # gensim's defaults
        exponent=2.0,
    )
    _assert_same_matrix(ours.matrix, expected)
    assert ours.matrix.dtype == np.float32
    assert (ours.column_nonzeros() <= nonzero_limit).all()
    if symmetric:
        assert abs(ours.matrix - ours.matrix.T).max() == 0
    if dominant:
        off = ours.matrix.copy()
        off.setdiag(0)
        assert (abs(off).sum(axis=0) < 1).all()


@pytest.mark.parametrize(("threshold", "exponent"), [(0.3, 1.0), (0.1, 3.0), (-0.5, 2.0)])
def test_threshold_and_exponent_equal_gensim(
    embeddings: WordEmbeddings, documents: list[list[str]], threshold: float, exponent: float
) -> None:
    pytest.importorskip("gensim")
    from gensim.corpora import Dictionary
    from gensim.similarities import SparseTermSimilarityMatrix, WordEmbeddingSimilarityIndex

    dictionary = Dictionary(documents)
    index = WordEmbeddingSimilarityIndex(embeddings.to_gensim(), threshold, exponent)
    expected = SparseTermSimilarityMatrix(index, dictionary, nonzero_limit=10).matrix
    terms = [dictionary[i] for i in range(len(dictionary))]
    ours = TermSimilarityMatrix.from_embeddings(
        terms,
        embeddings,
        nonzero_limit=10,
        threshold=threshold,
        exponent=exponent,
        neighbors="gensim",
    )
    _assert_same_matrix(ours.matrix, expected)
    plain = TermSimilarityMatrix.from_embeddings(
        terms,
        embeddings,
        nonzero_limit=10,
        threshold=threshold,
        exponent=exponent,
        neighbors="vocabulary",
    )
    assert plain.allclose(ours, rtol=1e-5, atol=1e-6)  # gensim's neighbours, BLAS arithmetic


def test_gensim_keyed_vectors_are_accepted(embeddings: WordEmbeddings) -> None:
    pytest.importorskip("gensim")
    terms = embeddings.words[:50]
    a = TermSimilarityMatrix.from_embeddings(terms, embeddings, nonzero_limit=5)
    b = TermSimilarityMatrix.from_embeddings(terms, embeddings.to_gensim(), nonzero_limit=5)
    assert a.allclose(b, rtol=0, atol=0)


def test_levenshtein_equals_gensim() -> None:
    pytest.importorskip("gensim")
    pytest.importorskip("rapidfuzz")
    from gensim.corpora import Dictionary
    from gensim.similarities import LevenshteinSimilarityIndex, SparseTermSimilarityMatrix

    words = [
        "cat",
        "cats",
        "hat",
        "hats",
        "bat",
        "chat",
        "chart",
        "charts",
        "mat",
        "math",
        "maths",
        "path",
        "paths",
        "bath",
        "heat",
        "heath",
        "hear",
        "heard",
        "beard",
        "bread",
        "bead",
        "head",
        "heads",
        "lead",
        "leads",
        "load",
        "loads",
        "road",
        "roads",
        "toad",
        "a",
        "at",
        "ate",
        "late",
        "later",
        "water",
        "waiter",
        "waiters",
    ]
    dictionary = Dictionary([words[i : i + 5] for i in range(0, len(words), 5)])
    terms = [dictionary[i] for i in range(len(dictionary))]
    for symmetric, limit, max_distance in itertools.product([True, False], [1, 3, 100], [1, 2]):
        index = LevenshteinSimilarityIndex(dictionary, max_distance=max_distance)
        expected = SparseTermSimilarityMatrix(
            index, dictionary, symmetric=symmetric, nonzero_limit=limit
        ).matrix
        ours = TermSimilarityMatrix.from_levenshtein(
            terms, max_distance=max_distance, nonzero_limit=limit, symmetric=symmetric
        )
        _assert_same_matrix(ours.matrix, expected)


def test_levenshtein_formula() -> None:
    pytest.importorskip("rapidfuzz")
    S = TermSimilarityMatrix.from_levenshtein(["cat", "cart", "dog"], alpha=1.0, beta=2.0)
    # d(cat, cart) = 1, max length 4: 1·(1 − 1/4)² = 0.5625; dog is 3 edits from cat
    assert S.matrix[1, 0] == pytest.approx(0.5625)
    assert S.matrix[0, 1] == pytest.approx(0.5625)
    assert S.matrix[2, 0] == 0
    with pytest.raises(ValueError, match="alpha"):
        TermSimilarityMatrix.from_levenshtein(["a"], alpha=0)


# ---------------------------------------------------------------------- the 'terms' mode
def test_terms_mode_is_brute_force_top_k(embeddings: WordEmbeddings) -> None:
    terms = [*embeddings.words[::3], "missing"]
    S = TermSimilarityMatrix.from_embeddings(
        terms,
        embeddings,
        nonzero_limit=4,
        symmetric=False,
        neighbors="terms",
        threshold=0.0,
        exponent=2.0,
    )
    vectors = np.array([embeddings[t] for t in terms[:-1]], dtype=np.float64)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit @ unit.T
    np.fill_diagonal(cosines, -np.inf)
    for j in range(len(terms) - 1):
        best = np.argsort(-cosines[:, j])[:4]
        best = best[cosines[best, j] > 0]
        column = S.matrix[:, [j]].toarray()[:, 0]
        assert set(np.flatnonzero(column)) == {j, *best.tolist()}
        np.testing.assert_allclose(column[best], cosines[best, j] ** 2, rtol=1e-5)
    assert S.matrix[:, [len(terms) - 1]].nnz == 1  # only the diagonal for "missing"
    assert (S.column_nonzeros() <= 4).all()


def test_terms_mode_fills_budgets_better_than_vocabulary_mode(embeddings: WordEmbeddings) -> None:
    terms = embeddings.words[::5]
    vocabulary = TermSimilarityMatrix.from_embeddings(
        terms, embeddings, nonzero_limit=5, neighbors="vocabulary", threshold=0.0
    )
    in_terms = TermSimilarityMatrix.from_embeddings(
        terms, embeddings, nonzero_limit=5, neighbors="terms", threshold=0.0
    )
    assert in_terms.nnz > vocabulary.nnz


# ---------------------------------------------------------------------- other builders
def test_identity_gives_plain_cosine() -> None:
    S = TermSimilarityMatrix.identity(["a", "b", "c"])
    assert S.shape == (3, 3)
    assert S.nnz == 3
    assert S.dtype == np.float32
    x, y = np.array([1.0, 2.0, 0.0]), np.array([0.0, 1.0, 3.0])
    cosine = x @ y / np.linalg.norm(x) / np.linalg.norm(y)
    assert S.inner_product(x, y, normalized=(True, True)) == pytest.approx(cosine)


def test_from_pairs() -> None:
    terms = ["car", "automobile", "vehicle", "tree"]
    pairs = [("car", "automobile", 0.9), ("car", "vehicle", 0.5), ("car", "unknown", 0.7)]
    S = TermSimilarityMatrix.from_pairs(terms, pairs)
    dense = S.matrix.toarray()
    assert dense[1, 0] == dense[0, 1] == pytest.approx(0.9)
    assert dense[2, 0] == dense[0, 2] == pytest.approx(0.5)
    np.testing.assert_array_equal(np.diag(dense), 1)
    asymmetric = TermSimilarityMatrix.from_pairs(terms, pairs, symmetric=False).matrix.toarray()
    assert asymmetric[1, 0] == pytest.approx(0.9)
    assert asymmetric[0, 1] == 0
    with pytest.raises(ValueError, match="unknown"):
        TermSimilarityMatrix.from_pairs(terms, pairs, ignore_missing=False)
    with pytest.raises(ValueError, match="diagonal"):
        TermSimilarityMatrix.from_pairs(terms, [("car", "car", 0.5)])


def test_combine_keeps_unit_diagonal_and_weights_off_diagonal() -> None:
    terms = ["a", "b", "c"]
    s1 = TermSimilarityMatrix.from_pairs(terms, [("a", "b", 0.8)])
    s2 = TermSimilarityMatrix.from_pairs(terms, [("a", "b", 0.4), ("b", "c", 0.6)])
    combined = TermSimilarityMatrix.combine([(0.7, s1), (0.3, s2)]).matrix.toarray()
    np.testing.assert_allclose(np.diag(combined), 1)
    assert combined[0, 1] == pytest.approx(0.7 * 0.8 + 0.3 * 0.4)
    assert combined[1, 2] == pytest.approx(0.3 * 0.6)
    with pytest.raises(ValueError, match="same terms"):
        TermSimilarityMatrix.combine([(1.0, s1), (1.0, TermSimilarityMatrix.identity(["x"]))])
    with pytest.raises(ValueError, match="at least one"):
        TermSimilarityMatrix.combine([])


def test_dominant_symmetric_matrix_is_positive_definite(embeddings: WordEmbeddings) -> None:
    S = TermSimilarityMatrix.from_embeddings(
        embeddings.words[:120], embeddings, nonzero_limit=30, dominant=True, exponent=1.0
    )
    eigenvalues = np.linalg.eigvalsh(S.matrix.toarray().astype(np.float64))
    assert eigenvalues.min() > 0


# ---------------------------------------------------------------------- delegation, persistence
def test_math_delegates_to_scm(embeddings: WordEmbeddings) -> None:
    S = TermSimilarityMatrix.from_embeddings(embeddings.words[:40], embeddings, nonzero_limit=5)
    rng = np.random.default_rng(1)
    X = sparse.csr_matrix(rng.poisson(0.3, (4, 40)).astype(float))
    Y = sparse.csr_matrix(rng.poisson(0.3, (3, 40)).astype(float))
    np.testing.assert_allclose(
        S.inner_product(X, Y, normalized=(True, True)),
        scm.inner_product(S.matrix, X, Y, normalized=(True, True)),
    )
    np.testing.assert_allclose(S.soft_norm(X), scm.soft_norm(S.matrix, X))
    x = X[0]
    assert (S.expand(x) != scm.expand(S.matrix, x)).nnz == 0


def test_save_and_load_round_trip(tmp_path, embeddings: WordEmbeddings) -> None:
    terms = [*embeddings.words[:30], "naïve", "日本"]
    S = TermSimilarityMatrix.from_embeddings(terms, embeddings, nonzero_limit=3)
    path = tmp_path / "S"  # no suffix is added
    S.save(path)
    assert path.exists()
    loaded = TermSimilarityMatrix.load(path)
    assert loaded.terms == terms
    assert loaded.allclose(S, rtol=0, atol=0)
    assert loaded.matrix.dtype == np.float32
    np.savez(tmp_path / "other.npz", x=np.zeros(2))
    with pytest.raises(ValueError, match="not a saved"):
        TermSimilarityMatrix.load(tmp_path / "other.npz")


def test_similar_terms(embeddings: WordEmbeddings) -> None:
    S = TermSimilarityMatrix.from_embeddings(
        embeddings.words[:50], embeddings, nonzero_limit=3, neighbors="terms"
    )
    similar = S.similar_terms("w0", topn=2)
    assert len(similar) <= 2
    assert all(term != "w0" for term, _ in similar)
    assert similar == sorted(similar, key=lambda pair: -pair[1])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nonzero_limit": -1}, "nonzero_limit"),
        ({"nonzero_limit": 2.5}, "nonzero_limit"),
        ({"threshold": 1.0}, "threshold"),
        ({"threshold": float("nan")}, "threshold"),
        ({"exponent": 0}, "exponent"),
        ({"threshold": -0.5, "exponent": 1.5}, "integer exponent"),
        ({"neighbors": "all"}, "neighbors"),
        ({"dtype": np.int32}, "dtype"),
        ({"batch_size": 0}, "batch_size"),
        ({"document_frequencies": [1, 2]}, "document_frequencies"),
    ],
)
def test_from_embeddings_validates(embeddings: WordEmbeddings, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TermSimilarityMatrix.from_embeddings(["w1", "w2", "w3"], embeddings, **kwargs)


def test_constructor_validates() -> None:
    with pytest.raises(ValueError, match="diagonal"):
        TermSimilarityMatrix(sparse.csc_matrix(np.zeros((2, 2))), ["a", "b"])
    with pytest.raises(ValueError, match="shape"):
        TermSimilarityMatrix(sparse.identity(3, format="csc"), ["a", "b"])
    with pytest.raises(ValueError, match="more than once"):
        TermSimilarityMatrix.identity(["a", "a"])
    with pytest.raises(ValueError, match="sparse"):
        TermSimilarityMatrix(np.eye(2), ["a", "b"])
