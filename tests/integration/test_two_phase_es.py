"""Two-phase SCM search through a real Elasticsearch (or OpenSearch): ``fast`` and hybrid
search's two-phase SCM leg.

A pruned first phase retrieves the candidates and the exact SCM ranks them
(:mod:`es_scm.search.fast`): the references are the brute force's scores (every score exact,
bit for bit), its ranking of the candidates, and exact search wherever the first phase keeps the
whole expansion or its bound proves the top k.
"""

from __future__ import annotations

import pytest

from es_scm.model import BruteForceSearch
from es_scm.search.query import Pruning

K = 10
QUERIES = ("1", "7", "23", "100", "150", "225")


@pytest.fixture(scope="module")
def reference(cranfield, cranfield_model):
    return BruteForceSearch(
        cranfield_model, list(cranfield.documents), cranfield.documents.values()
    )


def scores_of(reference, query):
    position = {doc_id: n for n, doc_id in enumerate(reference.ids.tolist())}
    scores = reference.scores(query)
    return {doc_id: float(scores[n]) for doc_id, n in position.items()}


@pytest.mark.parametrize("neighbours", [0, 1, 3])
def test_every_fast_score_is_the_exact_scm_and_the_hits_are_ranked_by_it(
    cranfield, reference, cranfield_index, neighbours
):
    searcher = cranfield_index.searcher
    for query_id in QUERIES:
        query = cranfield.queries[query_id]
        exact = scores_of(reference, query)
        fast = searcher.fast(query, K, neighbours=neighbours)
        assert fast.mode == "fast"
        assert fast.rounds == 1
        assert [hit.score for hit in fast] == [exact[hit.id] for hit in fast]  # bit for bit
        ranked = sorted(fast.hits, key=lambda hit: (-hit.score, hit.id))
        assert [hit.id for hit in fast] == [hit.id for hit in ranked]
        assert fast.expansion_terms == searcher.search(query, K).expansion_terms
        assert fast.pruned_terms > 0 or fast.exact_guarantee


def test_fast_with_the_whole_expansion_is_exact_search(cranfield, reference, cranfield_index):
    searcher = cranfield_index.searcher
    for query_id in QUERIES:
        query = cranfield.queries[query_id]
        whole = searcher.fast(query, K, neighbours=10_000, window=200)
        exact = searcher.search(query, K)
        assert whole.pruned_terms == 0
        assert whole.ids() == exact.ids()
        assert [hit.score for hit in whole] == [hit.score for hit in exact]
        assert whole.exact_guarantee, whole.notes
        brute = [doc_id for doc_id, _ in reference.search(query, K)]
        assert whole.ids() == brute


def test_a_proven_fast_result_is_exact_searchs_and_an_unproven_one_says_so(
    cranfield, cranfield_index
):
    searcher = cranfield_index.searcher
    proven = unproven = 0
    for query in list(cranfield.queries.values())[:60]:
        fast = searcher.fast(query, K, neighbours=2)
        if fast.exact_guarantee:
            proven += 1
            assert fast.ids() == searcher.search(query, K).ids()
        else:
            unproven += 1
            assert any("first phase" in note for note in fast.notes), fast.notes
    assert proven + unproven == 60


def test_the_first_phase_sends_each_query_term_and_its_strongest_neighbours(
    cranfield, cranfield_model, cranfield_index
):
    query = cranfield.queries["7"]
    whole = cranfield_index.searcher.expand(query)
    x = cranfield_model.vectorize(query, role="query")
    rows = cranfield_model.similarity_matrix.rows
    for neighbours in (0, 2):
        kept = set(Pruning(neighbours).kept(cranfield_model, whole).tolist())
        expected = set(x.indices.tolist())
        for i in x.indices.tolist():
            row = rows[[i]]
            pairs = sorted(
                (
                    (-v, j)
                    for j, v in zip(row.indices.tolist(), row.data.tolist(), strict=True)
                    if j != i
                )
            )
            expected |= {j for _, j in pairs[:neighbours]}
        assert kept == expected
    assert len(kept) < whole.clause_count


def test_hybrid_with_a_two_phase_scm_leg_is_one_round_trip_with_exact_components(
    cranfield, reference, cranfield_index
):
    searcher = cranfield_index.searcher
    for query_id in QUERIES:
        query = cranfield.queries[query_id]
        exact = scores_of(reference, query)
        two_phase = searcher.hybrid(query, K, neighbours=3)
        assert two_phase.rounds == 1
        for hit in two_phase:
            assert hit.components is not None
            assert hit.components["scm"] == exact[hit.id]  # the exact SCM, from the vector
        assert not two_phase.exact_guarantee or not any(
            "first phase" in note for note in two_phase.notes
        )


def test_hybrid_with_the_whole_expansion_in_its_first_phase_is_the_exact_hybrid(
    cranfield, cranfield_index
):
    # with nothing pruned, the two-phase leg is exact search's first window: where the exact
    # hybrid needed no more (one round trip), the two are the same search
    searcher = cranfield_index.searcher
    compared = 0
    for query_id in QUERIES:
        query = cranfield.queries[query_id]
        exact = searcher.hybrid(query, K, neighbours="all")
        whole = searcher.hybrid(query, K, neighbours=10_000)
        assert whole.rounds == 1
        if exact.rounds == 1:
            compared += 1
            assert whole.ids() == exact.ids()
            assert [hit.components for hit in whole] == [hit.components for hit in exact]
            assert whole.exact_guarantee == exact.exact_guarantee
    assert compared >= 4


def test_fast_batches_as_single_searches(cranfield, cranfield_index):
    searcher = cranfield_index.searcher
    queries = {query_id: cranfield.queries[query_id] for query_id in QUERIES}
    batch = searcher.batch_search(queries, K, method="fast", neighbours=1)
    for query_id, query in queries.items():
        single = searcher.fast(query, K, neighbours=1)
        assert batch[query_id].ids() == single.ids()
        assert [hit.score for hit in batch[query_id]] == [hit.score for hit in single]


def test_fast_refuses_a_window_below_the_page(cranfield_index):
    with pytest.raises(ValueError, match="window must be at least from_ \\+ k = 30, got 20"):
        cranfield_index.searcher.fast("wing", 20, from_=10, window=20)
    with pytest.raises(ValueError, match="neighbours"):
        cranfield_index.searcher.fast("wing", neighbours=-1)
