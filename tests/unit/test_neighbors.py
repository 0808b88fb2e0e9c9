"""es_scm.similarity: exact top-k candidates by BLAS products, and gensim's most_similar.

Most tests use small integer vectors: their dot products are exact in float32 whatever the
summation order, so the expected candidates (ties included) follow from float64 arithmetic.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from es_scm.similarity import neighbors
from es_scm.similarity.gensim_compat import GensimMostSimilar, pool_margin
from es_scm.similarity.neighbors import top_candidates


def integer_vectors(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    return rng.integers(-2, 3, size=(n, dim)).astype(np.float32)


def expected_candidates(queries, base, k, margin=0.0) -> list[list[int]]:
    """Brute force: the rows scoring ≥ the k-th best − margin, in increasing order."""
    scores = queries.astype(np.float64) @ base.T.astype(np.float64)
    k = min(k, len(base))
    return [np.flatnonzero(row >= np.sort(row)[-k] - margin).tolist() for row in scores]


def as_lists(indptr, rows) -> list[list[int]]:
    return [rows[indptr[i] : indptr[i + 1]].tolist() for i in range(len(indptr) - 1)]


@pytest.mark.parametrize(("block_size", "tile"), [(7, 64), (64, 1000), (None, 512)])
def test_top_candidates_equal_brute_force_with_sample_guesses(block_size, tile) -> None:
    rng = np.random.default_rng(1)
    base = integer_vectors(rng, 20_000, 6)  # large enough for the sampled threshold guesses
    queries = integer_vectors(rng, 150, 6)
    indptr, rows, scores = top_candidates(queries, base, 5, block_size=block_size, tile=tile)
    assert as_lists(indptr, rows) == expected_candidates(queries, base, 5)
    expected_scores = (queries.astype(np.float64) @ base.T.astype(np.float64))[
        np.repeat(np.arange(len(queries)), np.diff(indptr)), rows
    ]
    np.testing.assert_array_equal(scores, expected_scores)


def test_wrong_guesses_are_detected_and_rescanned(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    base = integer_vectors(rng, 20_000, 6)
    queries = integer_vectors(rng, 40, 6)

    def too_high(self, block):  # a guess above every score: nothing passes the first scan
        return np.full(len(block), np.inf, dtype=np.float32)

    monkeypatch.setattr(neighbors._Sample, "guess", too_high)
    indptr, rows, _ = top_candidates(queries, base, 9, block_size=16, tile=256)
    assert as_lists(indptr, rows) == expected_candidates(queries, base, 9)


def test_margin_keeps_everything_close_to_the_kth_score() -> None:
    rng = np.random.default_rng(3)
    base = integer_vectors(rng, 3000, 5)
    queries = integer_vectors(rng, 30, 5)
    indptr, rows, _ = top_candidates(queries, base, 4, margin=1.0, tile=128)
    assert as_lists(indptr, rows) == expected_candidates(queries, base, 4, margin=1.0)


@settings(max_examples=60, deadline=None)
@given(
    n_base=st.integers(1, 300),
    n_queries=st.integers(0, 40),
    dim=st.integers(1, 6),
    k=st.integers(1, 40),
    block_size=st.integers(1, 50),
    tile=st.integers(1, 120),
    seed=st.integers(0, 2**16),
)
def test_top_candidates_property(n_base, n_queries, dim, k, block_size, tile, seed) -> None:
    rng = np.random.default_rng(seed)
    base = integer_vectors(rng, n_base, dim)
    queries = integer_vectors(rng, n_queries, dim)
    indptr, rows, _ = top_candidates(queries, base, k, block_size=block_size, tile=tile)
    assert as_lists(indptr, rows) == expected_candidates(queries, base, k)


@pytest.mark.parametrize("seed", range(20))
def test_real_valued_scores_keep_at_least_k_candidates(seed: int) -> None:
    """Thresholds from one product must not drop rows whose tile product rounds lower.

    Real-valued vectors make the float32 sums depend on the summation order; a subset of the
    base as queries (in another row order) once left a query with k − 1 candidates.
    """
    rng = np.random.default_rng(seed)
    base = neighbors.unit_rows(rng.standard_normal((100, 20)).astype(np.float32))
    chosen = np.sort(rng.choice(len(base), size=17, replace=False))
    indptr, rows, _ = top_candidates(base[chosen], base, 5)
    assert (np.diff(indptr) >= 5).all()
    exact = base[chosen].astype(np.float64) @ base.T.astype(np.float64)
    bound = neighbors.cosine_error_bound(20)
    for i, row in enumerate(exact):
        kth = np.sort(row)[-5]
        clearly_in = set(np.flatnonzero(row > kth + 2 * bound).tolist())
        assert clearly_in <= set(rows[indptr[i] : indptr[i + 1]].tolist())


def test_cosine_error_bound_covers_gemm_against_gemv() -> None:
    rng = np.random.default_rng(4)
    vectors = neighbors.unit_rows(rng.standard_normal((4000, 50)).astype(np.float32))
    queries = vectors[:64]
    by_gemm = queries @ vectors.T
    by_gemv = np.stack([vectors @ q for q in queries])
    exact = queries.astype(np.float64) @ vectors.T.astype(np.float64)
    bound = neighbors.cosine_error_bound(50)
    assert np.abs(by_gemm - by_gemv).max() <= bound
    assert np.abs(by_gemm - exact).max() <= bound / 2


# ---------------------------------------------------------------------- gensim's most_similar
@pytest.fixture(scope="module", params=[1000, 1001], ids=["aligned", "with-remainder"])
def keyed(request):
    pytest.importorskip("gensim")
    from gensim.models import KeyedVectors

    rng = np.random.default_rng(request.param)
    vectors = rng.standard_normal((request.param, 30)).astype(np.float32)
    vectors[7] = vectors[3]  # duplicates tie exactly: gensim's argpartition decides
    vectors[11] = 2 * vectors[3]
    kv = KeyedVectors(vector_size=30)
    kv.add_vectors([f"w{i}" for i in range(len(vectors))], vectors)
    kv.fill_norms()
    return kv


def test_mean_vector_is_gensims(keyed) -> None:
    ours = GensimMostSimilar(keyed.vectors)
    np.testing.assert_array_equal(ours.norms, keyed.norms)
    for row in (0, 3, 500, len(keyed) - 1):
        theirs = keyed.get_mean_vector(
            [keyed.index_to_key[row]], np.ones(1), pre_normalize=True, post_normalize=True
        )
        np.testing.assert_array_equal(ours.mean(row), theirs)


@pytest.mark.parametrize(("n", "dim"), [(3, 30), (999, 30), (1001, 30), (10_007, 30), (40_001, 50)])
def test_scores_reproduce_the_whole_vocabulary_product_bit_for_bit(n: int, dim: int) -> None:
    # the big products are split between BLAS threads; the remainders land mid-vocabulary
    rng = np.random.default_rng(n)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    ours = GensimMostSimilar(vectors)
    for row in rng.integers(0, n, 5):
        mean = ours.mean(int(row))
        expected = np.dot(vectors, mean) / np.linalg.norm(vectors, axis=1)
        scrambled = rng.permutation(n)
        np.testing.assert_array_equal(ours.scores(mean, scrambled), expected[scrambled])


@pytest.mark.parametrize("topn", [1, 2, 3, 9, 40])
def test_search_equals_gensim_bit_for_bit(keyed, topn) -> None:
    ours = GensimMostSimilar(keyed.vectors)
    unit = neighbors.unit_rows(keyed.vectors)
    rows = np.array([0, 3, 7, 11, 250, 998, len(keyed) - 1])
    indptr, pools, _ = top_candidates(unit[rows], unit, 41, margin=pool_margin(keyed.vector_size))
    for i, row in enumerate(rows):
        found, sims = ours.search(int(row), topn, pools[indptr[i] : indptr[i + 1]])
        expected = keyed.most_similar(keyed.index_to_key[row], topn=topn)
        # the same words with the same float32 similarities; the order of exact ties inside
        # the result is gensim's argsort's (it does not change which words are chosen)
        pairs = zip(found, sims, strict=True)
        ours_sorted = sorted((-float(s), keyed.index_to_key[j]) for j, s in pairs)
        assert ours_sorted == sorted((-s, word) for word, s in expected)
        assert list(sims) == sorted(sims, reverse=True)


def test_full_search_is_used_for_exact_ties(keyed, monkeypatch: pytest.MonkeyPatch) -> None:
    # w3, w7 = w3 and w11 = 2·w3 score bit-identically against any query (scaling by 2 is exact)
    ours = GensimMostSimilar(keyed.vectors)
    calls = []
    original = ours.full_search
    monkeypatch.setattr(ours, "full_search", lambda *a: calls.append(a) or original(*a))
    pool = np.array([3, 7, 11, 0, 1, 2])
    found, sims = ours.search(3, 1, pool)  # the top 2 of {w3, w7, w11}: gensim's partition decides
    expected = keyed.most_similar("w3", topn=1)
    assert [(keyed.index_to_key[j], float(s)) for j, s in zip(found, sims, strict=True)] == expected
    assert calls == [(3, 1)]


@pytest.mark.parametrize(("n", "dim"), [(1001, 30), (40_001, 50), (3001, 300)])
def test_rank_pools_equals_one_word_at_a_time(n: int, dim: int) -> None:
    rng = np.random.default_rng(n + dim)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    ours = GensimMostSimilar(vectors)
    remainder = np.flatnonzero(ours._remainder)
    words = rng.integers(0, n, 40)
    sizes = rng.integers(1, 120, len(words))
    sizes[3] = min(n, 5000)  # a degenerate pool (many ties) is ranked on its own
    pools = [rng.choice(n, size, replace=False) for size in sizes]
    pools[0] = np.concatenate([pools[0], remainder])  # rows the big product leaves to remainders
    indptr = np.concatenate([[0], np.cumsum([len(p) for p in pools])])
    ranked, values = ours.rank_pools(words, indptr, np.concatenate(pools), chunk=16)
    for i, (word, pool) in enumerate(zip(words, pools, strict=True)):
        expected_rows, expected_values = ours.rank(int(word), pool)
        span = slice(indptr[i], indptr[i + 1])
        np.testing.assert_array_equal(values[span], expected_values)
        np.testing.assert_array_equal(ranked[span], expected_rows)
