"""The dense leg's pure code (es_scm.index.dense, hybrid.DenseLeg, the options of a three-way
hybrid search): requests built, mappings read, identities compared — no Elasticsearch."""

from __future__ import annotations

import re

import numpy as np
import pytest

from es_scm.fusion import MaxFusion, ReciprocalRankFusion, ZScoreFusion, fusion_from
from es_scm.index.dense import (
    MAX_KNN,
    DenseField,
    DenseQuery,
    EncoderMismatchError,
    check_encoder,
    common_fields,
    dense_fields,
    field_for,
    knn_score,
)
from es_scm.index.layout import IndexLayout
from es_scm.options import DenseOptions
from es_scm.options.defaults import DENSE_DEFAULTS, HYBRID_DEFAULTS, HYBRID_DENSE_DEFAULTS
from es_scm.search.dense import dense_per_query
from es_scm.search.hybrid.config import hybrid_legs, hybrid_options, make_fusion
from es_scm.search.hybrid.legs import DenseLeg, LegList, fuse
from es_scm.search.methods import METHODS
from es_scm.search.plan import RequestContext

VECTOR = (0.1, -0.2, 0.3)
FLAT = DenseField("metadata.embedding", 3, "cosine", True, "flat")
HNSW = DenseField("metadata.embedding", 3, "cosine", True, "bbq_hnsw")


def test_a_dense_query_checks_its_field_vector_and_candidates():
    query = DenseQuery("metadata.embedding", np.array(VECTOR, dtype=np.float32))
    assert query.vector == tuple(float(v) for v in np.array(VECTOR, dtype=np.float32))
    assert all(type(v) is float for v in query.vector)
    with pytest.raises(ValueError, match="vector must be a non-empty sequence of numbers"):
        DenseQuery("metadata.embedding", [])
    with pytest.raises(ValueError, match="vector must be a non-empty sequence of numbers"):
        DenseQuery("metadata.embedding", [[0.1, 0.2]])
    with pytest.raises(ValueError, match="vector must be a non-empty sequence of numbers"):
        DenseQuery("metadata.embedding", "0.1, 0.2")
    with pytest.raises(ValueError, match="vector must hold finite numbers"):
        DenseQuery("metadata.embedding", [0.1, float("nan")])
    with pytest.raises(ValueError, match="field must be a field name"):
        DenseQuery("two words", VECTOR)
    with pytest.raises(
        ValueError, match=re.escape(f"num_candidates must be None or an integer in [1, {MAX_KNN}]")
    ):
        DenseQuery("metadata.embedding", VECTOR, num_candidates=MAX_KNN + 1)


def test_the_knn_of_given_ids_asks_exactly_those_documents():
    query = DenseQuery("f", VECTOR, num_candidates=50)
    assert query.knn(10, [{"term": {"metadata.lang": "en"}}]) == {
        "field": "f",
        "query_vector": list(VECTOR),
        "k": 10,
        "num_candidates": 50,
        "filter": [{"term": {"metadata.lang": "en"}}],
    }
    assert query.knn(100)["num_candidates"] == 100  # never fewer candidates than k
    assert "num_candidates" not in DenseQuery("f", VECTOR).knn(10)  # Elasticsearch's default
    assert query.knn_of_ids(["a", "b"]) == {
        "field": "f",
        "query_vector": list(VECTOR),
        "k": 2,
        "num_candidates": 2,
        "filter": [{"ids": {"values": ["a", "b"]}}],
    }


def test_a_dense_legs_list_is_proven_only_on_a_flat_field():
    hits = [{"_id": "a", "_score": 0.9}, {"_id": "b", "_score": 0.7}]
    exact = DenseLeg(DenseQuery("f", VECTOR), FLAT).read(hits, depth=2)
    assert exact == LegList("dense", {"a": 0.9, "b": 0.7}, full=False, proven=True)
    approximate = DenseLeg(DenseQuery("f", VECTOR), HNSW).read(hits, depth=3)
    assert approximate.full
    assert not approximate.proven
    assert "bbq_hnsw, not flat" in HNSW.approximate_note()
    top = DenseLeg(DenseQuery("f", VECTOR), FLAT).top(5, [{"term": {"x": 1}}])
    assert top["knn"]["k"] == 5
    assert top["size"] == 5
    assert top["source"] is True


def test_a_three_leg_fusion_is_unproven_when_the_dense_list_is_approximate():
    lists = [
        LegList("bm25", {"a": 3.0, "b": 1.0}, full=True),
        LegList("dense", {"b": 0.9, "c": 0.8}, full=False, proven=False),
        LegList("scm", {"a": 0.5}, full=True),
    ]
    others = {"bm25": {"c": 0.0}, "dense": {"a": 0.6}, "scm": {"b": 0.0, "c": 0.1}}
    fusion = MaxFusion(weights={"bm25": 0.4, "scm": 0.1, "dense": 0.5})
    fused = fuse(fusion, lists, others, need=1)
    assert fused.bounded
    assert not fused.proven
    assert fused.note(1) is None
    assert list(fused.components["a"]) == ["bm25", "scm", "dense"]  # the legs' order
    assert fused.components["c"] == {"bm25": 0.0, "scm": 0.1, "dense": 0.8}
    proven = fuse(
        fusion, [*lists[:1], LegList("dense", lists[1].scores, False), lists[2]], others, 1
    )
    assert proven.proven


def test_mappings_say_which_dense_fields_an_index_has_and_how_they_are_indexed():
    mappings = {
        "properties": {
            "scm": {
                "properties": {
                    "dense": {
                        "type": "dense_vector",
                        "dims": 384,
                        "index": True,
                        "similarity": "cosine",
                        "index_options": {"type": "flat"},
                    }
                }
            },
            "metadata": {
                "type": "object",
                "properties": {
                    "embedding": {
                        "type": "dense_vector",
                        "dims": 3,
                        "similarity": "dot_product",
                        "index_options": {"type": "int8_hnsw", "m": 16},
                    },
                    "raw": {"type": "dense_vector", "dims": 3, "index": False},
                },
            },
        }
    }
    fields = dense_fields(mappings)
    assert fields["scm.dense"] == DenseField("scm.dense", 384, "cosine", True, "flat")
    assert fields["scm.dense"].exact
    assert not fields["metadata.embedding"].exact
    assert not fields["metadata.raw"].indexed
    other = dense_fields(
        {
            "properties": {
                "scm": {
                    "properties": {
                        "dense": {
                            "type": "dense_vector",
                            "dims": 384,
                            "index_options": {"type": "bbq_hnsw"},
                        }
                    }
                }
            }
        }
    )
    common = common_fields([fields, other])
    assert set(common) == {"scm.dense"}  # only what every index has
    assert not common["scm.dense"].exact  # flat in one, HNSW in the other
    assert common_fields([fields, fields]) == fields


def test_a_dense_query_is_checked_against_the_fields_before_any_request():
    fields = {
        "metadata.embedding": FLAT,
        "metadata.raw": DenseField("metadata.raw", 3, None, False, None),
    }
    assert field_for("docs", fields, DenseQuery("metadata.embedding", VECTOR)) is FLAT
    with pytest.raises(ValueError, match=r"no dense_vector field 'embedding'.*metadata\.embedding"):
        field_for("docs", fields, DenseQuery("embedding", VECTOR))
    with pytest.raises(ValueError, match="not indexed for kNN"):
        field_for("docs", fields, DenseQuery("metadata.raw", VECTOR))
    with pytest.raises(ValueError, match="the query vector has 2 dimensions, the field"):
        field_for("docs", fields, DenseQuery("metadata.embedding", (0.1, 0.2)))


def test_an_encoder_of_other_weights_is_refused_in_one_line():
    meta = {"encoder": "all-MiniLM-L6-v2", "identity": {"weights": "sha256:" + "a" * 64}}
    check_encoder("docs", meta, {"weights": "sha256:" + "a" * 64}, "/models/minilm-copy")
    with pytest.raises(EncoderMismatchError) as error:
        check_encoder("docs", meta, {"weights": "sha256:" + "b" * 64}, "other-model")
    message = str(error.value)
    assert "\n" not in message
    assert "'all-MiniLM-L6-v2'" in message
    assert "'other-model'" in message
    assert "sha256:aaaaaaaaaaaa" in message
    assert "sha256:bbbbbbbbbbbb" in message
    assert "reindex" in message


def test_the_knn_score_of_a_cosine_is_elasticsearchs():
    np.testing.assert_allclose(knn_score([1.0, 0.0, -1.0]), [1.0, 0.5, 0.0])


# -- the options of a hybrid search with a dense leg ---------------------------------------------


def test_the_three_way_defaults_and_the_models_own_dense_fusion():
    assert hybrid_options(dense=True) == HYBRID_DENSE_DEFAULTS
    assert make_fusion(HYBRID_DENSE_DEFAULTS) == ZScoreFusion(weights=HYBRID_DENSE_DEFAULTS.weights)
    saved = {"fusion": "linear", "alpha": 0.7, "dense": {"fusion": "rrf", "rrf_k": 20}}
    assert hybrid_options(saved) == HYBRID_DEFAULTS.__class__("linear", 0.7, 60, 100)
    assert make_fusion(hybrid_options(saved, dense=True)) == ReciprocalRankFusion(20)
    # a score fusion named without weights takes the three-way defaults' weights
    named = make_fusion(hybrid_options(fusion="max", dense=True))
    assert named == MaxFusion(weights=HYBRID_DENSE_DEFAULTS.weights)
    with pytest.raises(ValueError, match="with a dense leg give weights"):
        hybrid_options(alpha=0.5, dense=True)
    with pytest.raises(ValueError, match="weights does not apply to fusion='rrf'"):
        hybrid_options(fusion="rrf", weights={"bm25": 0.5, "dense": 0.5}, dense=True)


def test_the_legs_of_a_search_are_those_its_fusion_weighs():
    three = fusion_from("zscore", weights={"bm25": 0.4, "scm": 0.1, "dense": 0.5})
    assert hybrid_legs(three, dense=True) == ("bm25", "scm", "dense")
    baseline = fusion_from("max", weights={"dense": 0.5, "bm25": 0.5})
    assert hybrid_legs(baseline, dense=True) == ("bm25", "dense")  # no SCM leg
    assert hybrid_legs(ReciprocalRankFusion(), dense=True) == ("bm25", "scm", "dense")
    assert hybrid_legs(MaxFusion(0.5), dense=False) == ("bm25", "scm")
    with pytest.raises(ValueError, match="give dense= for its dense leg"):
        hybrid_legs(three, dense=False)
    with pytest.raises(ValueError, match="weigh the dense leg too"):
        hybrid_legs(fusion_from("max", weights={"bm25": 0.5, "scm": 0.5}), dense=True)
    with pytest.raises(ValueError, match="max with alpha fuses two legs"):
        hybrid_legs(MaxFusion(0.5), dense=True)


def test_a_search_request_checks_its_dense_leg():
    def request(method: str, **options):
        return METHODS[method].request(RequestContext(100), "cats", 10, **options)

    three = request("hybrid", dense=True)
    assert three.dense is True
    assert three.legs == ("bm25", "scm", "dense")
    assert three.fusion == make_fusion(HYBRID_DENSE_DEFAULTS)
    two = request("hybrid")
    assert two.dense is None
    assert two.legs == ("bm25", "scm")
    dense = request("dense")
    assert dense.dense is True
    assert METHODS["dense"].mode == "dense"
    with pytest.raises(ValueError, match=r"dense must be None, True .* or a DenseQuery"):
        request("hybrid", dense="scm.dense")
    with pytest.raises(ValueError, match=f"depth must be at most {MAX_KNN} with a dense leg"):
        request("hybrid", dense=True, depth=MAX_KNN + 1)
    with pytest.raises(ValueError, match="with alpha fuses two legs"):
        request("hybrid", dense=True, fusion=MaxFusion(0.5))
    with pytest.raises(TypeError, match="explain"):
        request("dense", explain=True)


def test_a_batch_gives_each_query_its_dense_query():
    queries = {"q1": "cats", "q2": "dogs"}
    mine = {"q1": DenseQuery("f", VECTOR), "q2": DenseQuery("f", (0.3, 0.2, 0.1))}
    assert dense_per_query(queries, mine) == [mine["q1"], mine["q2"]]
    assert dense_per_query(["cats", "dogs"], list(mine.values())) == list(mine.values())
    assert dense_per_query(queries, True) == [True, True]
    with pytest.raises(ValueError, match="no DenseQuery for the query 'q2'"):
        dense_per_query(queries, {"q1": mine["q1"]})
    with pytest.raises(ValueError, match="holds 1 DenseQuery values for 2 queries"):
        dense_per_query(["cats", "dogs"], [mine["q1"]])


def test_index_dense_options():
    assert IndexLayout(dense=True).dense == DENSE_DEFAULTS
    assert DENSE_DEFAULTS.exact
    assert not DenseOptions("x", "default").exact
    with pytest.raises(ValueError, match="index_options must be one of"):
        DenseOptions("all-MiniLM-L6-v2", "exact")
    with pytest.raises(ValueError, match=r"dense must be None, True .* or a DenseOptions"):
        IndexLayout(dense="all-MiniLM-L6-v2")
