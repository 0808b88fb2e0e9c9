"""The LangChain and LlamaIndex retrievers against a real Elasticsearch, with the real packages.

Each retriever must return es-scm's own answer, hit for hit: what the searcher's ``hybrid``
returns by default (the default that README names, issue 41), the exact top k of the brute force
(ids, scores, order) with ``mode="exact"``, and what the searcher's ``native`` and ``bm25`` return
in those modes, sync and async. A document's text and metadata are compared with the
corpus the index was built from, not with what the retriever computes.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
pytest.importorskip("llama_index.core", reason="the llamaindex extra is not installed")

from es_scm.elastic import SCMIndex
from es_scm.elastic.aio import AsyncSCMIndex
from es_scm.fusion import LinearFusion
from es_scm.integrations import langchain, llamaindex
from es_scm.model import BruteForceSearch
from es_scm.search.results import Hit, SearchResult
from tests.support import with_async_client

QUERIES = ("1", "7", "50", "225")  # Cranfield query ids
FRAMEWORKS = ("langchain", "llamaindex")
K = 10

#: (id, score, text, metadata) of one retrieved document, in every framework's terms.
Row = tuple[str, float, str, dict[str, Any]]


def make(framework: str, source: Any, **options: Any) -> Any:
    """The framework's retriever of ``source`` (an index or searcher)."""
    if framework == "langchain":
        return langchain.SCMRetriever(searcher=source, **options)
    return llamaindex.SCMRetriever(source, **options)


def rows(framework: str, retrieved: list[Any]) -> list[Row]:
    """What a framework's documents (LangChain) or scored nodes (LlamaIndex) say, checked to
    agree with themselves (the framework's id and score fields against the metadata's)."""
    found = []
    for item in retrieved:
        if framework == "langchain":
            row = (item.id, item.metadata["score"], item.page_content, item.metadata)
        else:
            row = (item.node.node_id, item.score, item.node.text, item.node.metadata)
        assert row[3]["id"] == row[0]
        assert row[3]["score"] == row[1]
        found.append(row)
    return found


def retrieve(framework: str, retriever: Any, query: str) -> list[Row]:
    if framework == "langchain":
        return rows(framework, retriever.invoke(query))
    return rows(framework, retriever.retrieve(query))


async def aretrieve(framework: str, retriever: Any, query: str) -> list[Row]:
    if framework == "langchain":
        return rows(framework, await retriever.ainvoke(query))
    return rows(framework, await retriever.aretrieve(query))


def expected(result: SearchResult, corpus: dict[str, dict[str, Any]]) -> list[Row]:
    """The rows a retriever must give for ``result``: its hits' ids and scores, the corpus's text
    and metadata, and the hit's scores by leg and explanation when it has them."""

    def metadata(hit: Hit) -> dict[str, Any]:
        document = corpus[hit.id]
        found = {"group": document["group"], "id": hit.id, "score": hit.score}
        if hit.components is not None:
            found["components"] = hit.components
        if hit.explanation is not None:
            found["explanation"] = hit.explanation.to_dict()
        return found

    return [(hit.id, hit.score, corpus[hit.id]["text"], metadata(hit)) for hit in result.hits]


@pytest.fixture(scope="module")
def corpus(cranfield_sample) -> dict[str, dict[str, Any]]:
    return {document["id"]: document for document in cranfield_sample}


@pytest.fixture(scope="module")
def sample_index(es_client, cranfield_sample, cranfield_sample_model):
    """``cranfield_sample`` (400 documents with a ``group``) in an index of this module."""
    index = SCMIndex(
        es_client, f"es-scm-test-retrievers-{uuid.uuid4().hex[:12]}", cranfield_sample_model
    )
    report = index.index_documents(cranfield_sample, batch_size=100)
    assert report.ok
    assert report.indexed == len(cranfield_sample)
    yield index
    index.delete()


@pytest.fixture(scope="module")
def brute_force(cranfield_sample, cranfield_sample_model) -> BruteForceSearch:
    return BruteForceSearch(
        cranfield_sample_model,
        [d["id"] for d in cranfield_sample],
        [d["text"] for d in cranfield_sample],
    )


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_by_default_the_searchers_hybrid_search(framework, sample_index, corpus, cranfield):
    retriever = make(framework, sample_index, k=K)
    for query_id in QUERIES:
        query = cranfield.queries[query_id]
        got = retrieve(framework, retriever, query)
        assert got == expected(sample_index.searcher.hybrid(query, K), corpus), query_id
        assert len(got) == K
        assert all(set(row[3]["components"]) == {"bm25", "scm"} for row in got)
        assert all("explanation" not in row[3] for row in got)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_mode_exact_is_the_exact_top_k_of_the_brute_force(
    framework, sample_index, brute_force, corpus, cranfield
):
    retriever = make(framework, sample_index, k=K, mode="exact")
    for query_id in QUERIES:
        query = cranfield.queries[query_id]
        got = retrieve(framework, retriever, query)
        assert [(row[0], row[1]) for row in got] == brute_force.search(query, K), query_id
        assert got == expected(sample_index.searcher.search(query, K), corpus), query_id
        assert all("explanation" not in row[3] and "components" not in row[3] for row in got)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_async_calls_with_an_asyncio_index_or_a_sync_one(
    framework, es_url, sample_index, corpus, cranfield, cranfield_sample_model
):
    queries = [cranfield.queries[query_id] for query_id in QUERIES]

    async def both(client):
        asyncio_index = AsyncSCMIndex(client, sample_index.name, cranfield_sample_model)
        on_loop = make(framework, asyncio_index, k=K)
        in_thread = make(framework, sample_index.searcher, k=K)
        return [
            (await aretrieve(framework, on_loop, q), await aretrieve(framework, in_thread, q))
            for q in queries
        ]

    for query, (on_loop, in_thread) in zip(queries, with_async_client(es_url, both), strict=True):
        reference = expected(sample_index.searcher.hybrid(query, K), corpus)  # the default
        assert on_loop == reference
        assert in_thread == reference


ALL = {"g0", "g1", "g2"}
# a retriever's options → the searcher call that must give the same hits (its method and the
# options that differ), and the groups its hits may be of
MODES = [
    ({}, "hybrid", {}, ALL),  # the default
    ({"mode": "hybrid"}, "hybrid", {}, ALL),
    ({"fusion": "rrf", "depth": 50}, "hybrid", {"depth": 50}, ALL),  # no mode: hybrid's options
    ({"mode": "hybrid", "fusion": LinearFusion(0.3), "depth": 50}, "hybrid", {"depth": 50}, ALL),
    ({"mode": "hybrid", "fusion": "rrf"}, "hybrid", {}, ALL),
    ({"mode": "native"}, "native", {}, ALL),
    ({"mode": "bm25"}, "bm25", {}, ALL),
    ({"mode": "exact", "filter": {"term": {"metadata.group": "g1"}}}, "search", {}, {"g1"}),
    ({"filter": {"term": {"metadata.group": "g1"}}}, "hybrid", {}, {"g1"}),
    (
        {"mode": "hybrid", "filter": [{"terms": {"metadata.group": ["g0", "g2"]}}]},
        "hybrid",
        {},
        {"g0", "g2"},
    ),
    ({"mode": "bm25", "filter": {"term": {"metadata.group": "g2"}}}, "bm25", {}, {"g2"}),
    ({"mode": "exact", "explain": True}, "search", {}, ALL),
    ({"explain": True}, "hybrid", {}, ALL),
    ({"mode": "hybrid", "explain": True}, "hybrid", {}, ALL),
]


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize(("options", "method", "differ", "groups"), MODES)
def test_modes_filters_and_explanations_are_the_searchers(
    framework, options, method, differ, groups, sample_index, corpus, cranfield
):
    retriever = make(framework, sample_index, k=K, **options)
    same = {key: value for key, value in options.items() if key in ("filter", "explain", "fusion")}
    for query_id in QUERIES[:2]:
        query = cranfield.queries[query_id]
        got = retrieve(framework, retriever, query)
        result = getattr(sample_index.searcher, method)(query, K, **same, **differ)
        assert got == expected(result, corpus), (options, query_id)
        assert len(got) == K
        assert {row[3]["group"] for row in got} <= groups
        if method == "hybrid":
            assert all(set(row[3]["components"]) == {"bm25", "scm"} for row in got)
        if options.get("explain"):
            for row in got:
                explanation = row[3]["explanation"]
                # the explanation is of the exact SCM: the hit's score, or its SCM leg's
                scm = row[3]["components"]["scm"] if method == "hybrid" else row[1]
                assert explanation["score"] == pytest.approx(scm, abs=1e-12)
                listed = sum(pair["contribution"] for pair in explanation["pairs"])
                assert listed + explanation["omitted_contribution"] == pytest.approx(
                    explanation["total"], abs=1e-9
                )


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_sync_call_with_an_asyncio_searcher_says_what_to_do(framework, es_url, sample_index):
    async def sync_call(client):
        retriever = make(framework, AsyncSCMIndex(client, sample_index.name, sample_index.model))
        with pytest.raises(TypeError) as error:
            retrieve(framework, retriever, "boundary layer")
        return str(error.value)

    message = with_async_client(es_url, sync_call)
    assert "\n" not in message
    assert "AsyncSearcher" in message
    assert "ainvoke, aretrieve" in message


@pytest.mark.parametrize(
    ("k", "shown"), [(True, "True"), ("5", "'5'"), (2.0, "2.0")], ids=["True", "'5'", "2.0"]
)
def test_both_retrievers_refuse_a_k_that_is_not_an_integer_alike(sample_index, k, shown):
    """LangChain's retriever searched with ``k=True`` as 1 and ``k="5"`` as 5 (pydantic converted
    them), where LlamaIndex's refused them (issue 34, item 8): both now refuse, in the same line,
    before any search; a true integer searches as before."""
    for framework in FRAMEWORKS:
        with pytest.raises(ValueError, match=f"k must be an integer >= 1, got {re.escape(shown)}"):
            make(framework, sample_index, k=k)
        got = retrieve(framework, make(framework, sample_index, k=3), "boundary layer")
        assert len(got) == 3


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_from_url_with_a_saved_model(
    framework, es_url, sample_index, corpus, cranfield, cranfield_sample_model, tmp_path
):
    model_dir = cranfield_sample_model.save(tmp_path / "model")
    module = langchain if framework == "langchain" else llamaindex
    retriever = module.SCMRetriever.from_url(es_url, sample_index.name, model_dir, k=3)
    try:
        query = cranfield.queries["7"]
        got = retrieve(framework, retriever, query)
        assert got == expected(sample_index.searcher.hybrid(query, 3), corpus)
    finally:
        retriever.searcher.client.close()


def test_llamaindex_shows_a_prompt_the_text_and_the_document_s_metadata_only(
    sample_index, corpus, cranfield
):
    from llama_index.core.schema import MetadataMode

    retriever = llamaindex.SCMRetriever(sample_index, k=3, mode="hybrid", explain=True)
    for scored in retriever.retrieve(cranfield.queries["7"]):
        document = corpus[scored.node.node_id]
        for mode in (MetadataMode.LLM, MetadataMode.EMBED):
            content = scored.node.get_content(metadata_mode=mode)
            assert document["text"] in content
            assert f"group: {document['group']}" in content
            assert f"id: {document['id']}" in content
            assert "score" not in content
            assert "components" not in content
            assert "explanation" not in content
        assert "explanation" in scored.node.metadata  # kept for the application


def test_a_langchain_batch_keeps_every_answer_beside_a_query_it_could_not_answer(
    cranfield_index, cranfield
):
    """LangChain's ``batch(..., return_exceptions=True)`` gives each query its documents, and the
    queries that exact search could not prove (a window capped at 16 for the top 15) their
    errors, in place: nothing answered is lost (issue 34, item 7). A query of no vocabulary term
    has nothing to prove."""
    from es_scm.elastic import NotProvenError, Searcher

    capped = Searcher(
        cranfield_index.client, cranfield_index.name, cranfield_index.model, max_window=16
    )
    queries = [*list(cranfield.queries.values())[:4], "xylophone", "zither"]
    outcomes = [capped.batch_search([q], 15, unproven="keep")[0] for q in queries]
    unprovable = [n for n, result in enumerate(outcomes) if result.unproven]
    provable = [n for n, result in enumerate(outcomes) if not result.unproven]
    assert unprovable
    assert provable
    retriever = langchain.SCMRetriever(searcher=capped, k=15, mode="exact")
    answers = retriever.batch(queries, return_exceptions=True)
    for n, answer in enumerate(answers):
        if n in unprovable:
            assert isinstance(answer, NotProvenError), n
        else:
            assert [d.id for d in answer] == outcomes[n].ids(), n
