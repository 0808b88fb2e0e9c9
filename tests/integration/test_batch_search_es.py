"""``batch_search``: what as many single calls return, in fewer requests (issue 30, item 2).

100 Cranfield queries through each method, sync and asyncio, against the same single calls; the
requests a batch sends, and hybrid search's scores of the candidates outside a leg's list.
"""

from __future__ import annotations

import dataclasses

import pytest

from es_scm import SoftCosineModel
from es_scm.elastic import BatchSearchError, NotProvenError, QueryTooLongError, SCMIndex, Searcher
from es_scm.elastic.aio import AsyncSearcher
from es_scm.fusion import fusion_from
from tests.integration.test_requests_es import Requests
from tests.support import with_async_client

METHODS = {
    "search": {},
    "native": {},
    "hybrid": {},
    "bm25": {},
    "search filtered, paged, explained": {
        "method": "search",
        "filter": {"ids": {"values": [str(i) for i in range(1, 700)]}},
        "from_": 5,
        "explain": True,
    },
    "hybrid rrf": {"method": "hybrid", "fusion": fusion_from("rrf", rrf_k=30), "depth": 40},
}


def comparable(result) -> dict:
    """Everything a result says but how long it took."""
    fields = {field.name: getattr(result, field.name) for field in dataclasses.fields(result)}
    fields.pop("took_ms")
    fields["hits"] = [
        (hit.id, hit.score, hit.native_score, hit.components, hit.explanation, hit.source)
        for hit in result.hits
    ]
    return fields


@pytest.fixture(scope="module")
def hundred(cranfield) -> dict[str, str]:
    return dict(list(cranfield.queries.items())[:100])


@pytest.mark.parametrize("name", list(METHODS))
def test_a_batch_returns_what_single_calls_return(cranfield_index, hundred, name):
    options = dict(METHODS[name])
    method = options.pop("method", name)
    searcher = cranfield_index.searcher
    single = {qid: getattr(searcher, method)(text, 10, **options) for qid, text in hundred.items()}
    batch = searcher.batch_search(hundred, 10, method=method, threads=4, **options)
    assert list(batch) == list(hundred)  # a mapping in, a mapping out, in order
    for qid in hundred:
        assert comparable(batch[qid]) == comparable(single[qid]), (name, qid)
    as_list = searcher.batch_search(list(hundred.values()), 10, method=method, **options)
    assert [comparable(r) for r in as_list] == [comparable(single[q]) for q in hundred]


def test_a_batch_sends_the_first_requests_together(es_client, cranfield_index, hundred):
    searcher = Searcher(es_client, cranfield_index.name, cranfield_index.model)
    searcher.check()
    searcher.max_clauses()
    requests = Requests(es_client)
    for method in ("native", "bm25", "search"):
        sent = requests.during(lambda m=method: searcher.batch_search(hundred, 10, method=m))
        # each round trip of the 100 queries in 4 _msearch requests (4 threads: one is read
        # while the others are searched); a second round only for the queries a first window
        # left unproven
        assert set(sent) == {("POST", "/_msearch")}, method
        assert len(sent) <= (4 if method != "search" else 8), (method, len(sent))
        one = requests.during(
            lambda m=method: searcher.batch_search(hundred, 10, method=m, threads=1)
        )
        assert len(one) <= (1 if method != "search" else 2), (method, len(one))


def test_a_batch_raises_what_a_single_call_raises_unless_asked_to_keep(cranfield_index, hundred):
    deep = Searcher(
        cranfield_index.client, cranfield_index.name, cranfield_index.model, max_window=20
    )
    texts = list(hundred.values())[:5]
    with pytest.raises(NotProvenError) as single:
        deep.search(texts[0], 20)
    with pytest.raises(NotProvenError) as batched:
        deep.batch_search(texts, 20)
    kept = deep.batch_search(texts, 20, unproven="keep")
    unprovable = [n for n, result in enumerate(kept) if result.unproven]
    assert unprovable
    assert unprovable[0] == 0
    # the error names every query it could not prove, and keeps every query's result
    assert str(batched.value).startswith(f"{len(unprovable)} of 5 queries could not be proven")
    assert ", ".join(map(repr, unprovable[:5])) in str(batched.value)
    assert comparable(batched.value.result) == comparable(single.value.result)
    assert [comparable(batched.value.results[n]) for n in range(5)] == list(map(comparable, kept))
    assert comparable(kept[0]) == comparable(single.value.result)
    with pytest.raises(ValueError, match="fusion is not an option of method='search'"):
        deep.batch_search(texts, 10, fusion="max")
    with pytest.raises(ValueError, match="method must be one of"):
        deep.batch_search(texts, 10, method="exact")


def test_an_async_batch_returns_what_single_calls_return(es_url, cranfield_index, hundred):
    async def work(client):
        searcher = AsyncSearcher(client, cranfield_index.name, cranfield_index.model)
        batch = await searcher.batch_search(hundred, 10, method="hybrid", threads=3)
        single = {qid: await searcher.hybrid(text, 10) for qid, text in hundred.items()}
        return batch, single

    batch, single = with_async_client(es_url, work)
    for qid in hundred:
        assert comparable(batch[qid]) == comparable(single[qid]), qid
    sync = cranfield_index.searcher.batch_search(hundred, 10, method="hybrid")
    assert [comparable(sync[q]) for q in hundred] == [comparable(batch[q]) for q in hundred]


def test_hybrid_search_is_one_round_trip_and_a_batch_of_them_two_requests(
    es_client, engine, cranfield_index, hundred
):
    """A score fusion needs BM25's score of every candidate: BM25's list and the SCM's first
    window go in one ``_msearch``, BM25's scores of the SCM's candidates reported beside the
    SCM's search. A batch sends every query's round trip together.

    OpenSearch's ``_msearch`` reports no named query's score: there BM25's scores of the SCM's
    candidates that its own list lacks are a round trip of their own (one more request, for a
    batch one more ``_msearch``)."""
    searcher = Searcher(es_client, cranfield_index.name, cranfield_index.model)
    searcher.check()
    searcher.max_clauses()
    requests = Requests(es_client)
    single = [
        requests.during(lambda text=text: searcher.hybrid(text, 10)) for text in hundred.values()
    ]
    msearch = ("POST", "/_msearch")
    if engine.named_scores_in_msearch:
        # each: BM25's list and the SCM's first window (which proves its list), in one request
        assert {tuple(sent) for sent in single} == {(msearch,)}
    else:  # and BM25's scores of the SCM's other candidates, if any
        owed = ("POST", f"/{cranfield_index.name}/_search")
        assert {tuple(sent) for sent in single} <= {(msearch,), (msearch, owed)}
        assert (msearch, owed) in {tuple(sent) for sent in single}
    sent = requests.during(lambda: searcher.batch_search(hundred, 10, method="hybrid"))
    # 200 searches in 4 _msearch requests (4 threads, 25 queries each), nothing owed after them
    # (or, on OpenSearch, BM25's scores owed in more _msearch requests of a second round)
    assert sent[:4] == [msearch] * 4
    if engine.named_scores_in_msearch:
        assert sent == [msearch] * 4
    else:
        assert len(sent) > 4
        assert set(sent) == {msearch}


def test_a_hybrid_batch_sends_each_round_trip_of_every_query_together(
    es_client, engine, index_name
):
    """Fifty identical documents tie in every score: the SCM's top 5 (by id among ties) is
    proven only once its windows reach past the first two (20, 40, then 80 documents, which
    exhausts the 53 matches), and holds documents that no first answer found (indexed last,
    they come last among ties). Their BM25 scores come beside the SCM's windows; the batch
    sends each round trip of both queries in one ``_msearch`` and returns what single calls
    return."""
    ties = [{"id": f"d{n:02d}", "text": "alpha beta"} for n in reversed(range(50))]
    others = ["gamma delta", "alpha gamma", "beta delta epsilon"] * 5
    documents = ties + [{"id": f"o{n}", "text": text} for n, text in enumerate(others)]
    model = SoftCosineModel.build([document["text"] for document in documents])
    index = SCMIndex(es_client, index_name, model)
    assert index.index_documents(documents).ok
    searcher = index.searcher
    searcher.check()
    searcher.max_clauses()
    queries = ["alpha", "alpha beta"]
    options = {"depth": 5, "fusion": "linear"}
    single = [searcher.hybrid(query, 5, **options) for query in queries]
    assert [hit.id for hit in single[0].hits] == ["d00", "d01", "d02", "d03", "d04"]
    requests = Requests(es_client)
    sent = requests.during(lambda: searcher.batch_search(queries, 5, method="hybrid", **options))
    assert [comparable(result) for result in requests.result] == [comparable(r) for r in single]
    # three windows, both queries at once (OpenSearch: and BM25's scores owed, in one more)
    windows = 3 if engine.named_scores_in_msearch else 4
    assert sent == [("POST", "/_msearch")] * windows


def test_a_batch_names_the_queries_it_could_not_answer_and_keeps_the_others(cranfield_index):
    """Issue 34, item 7: one query that cannot be answered (here, too long) sinks nothing: the
    error names it by id, with its reason, and carries the answers to the others."""
    searcher = Searcher(
        cranfield_index.client, cranfield_index.name, cranfield_index.model, max_query_words=8
    )
    queries = {
        "short": "boundary layer flow",
        "long": "heat transfer in the boundary layer of a hypersonic flow over a cone",
        "other": "supersonic wing",
    }
    with pytest.raises(BatchSearchError) as refused:
        searcher.batch_search(queries, 5, method="hybrid")
    error = refused.value
    assert list(error.failed) == ["long"]
    assert isinstance(error.failed["long"], QueryTooLongError)
    assert "1 of 3 queries could not be answered ('long': the query has 13 words" in str(error)
    assert set(error.results) == {"short", "other"}
    for qid in ("short", "other"):
        alone = searcher.hybrid(queries[qid], 5)
        assert comparable(error.results[qid]) == comparable(alone)
