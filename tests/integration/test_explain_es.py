"""Explanations of search hits through a real Elasticsearch, and ``es-scm search --explain``.

Every hit's explanation is computed from the query's x and ‖x‖_S and the hit's stored y', so in
``exact`` mode its contributions sum to ``hit.score`` (the exact SCM) within 1e-9.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from es_scm import SoftCosineModel
from es_scm.cli.errors import EXIT_OK
from es_scm.elastic import SCMIndex
from es_scm.model import Explanation
from es_scm.similarity import TermSimilarityMatrix

K = 10
TOLERANCE = 1e-9
LINE = re.compile(
    r"^ *(?P<a>\S+) (?P<rel>[=≈]) (?P<b>\S+) +s=(?P<s>-?\d\.\d\d) +(?P<c>[+-]\d\.\d{3}) +"
    r"\((?P<share>-?\d+) %\)$"
)


def assert_sums_to(explanation: Explanation, score: float) -> None:
    contributions = [pair.contribution for pair in explanation]
    assert explanation.omitted == 0
    assert abs(math.fsum(contributions) - score) <= TOLERANCE
    assert abs(explanation.total - score) <= TOLERANCE
    assert contributions == sorted(contributions, reverse=True)


def test_exact_hits_are_explained_on_every_cranfield_query(cranfield, cranfield_index):
    explained = 0
    for query in cranfield.queries.values():
        result = cranfield_index.searcher.search(query, K, explain=True)
        assert len(result.hits) == K
        for hit in result:
            assert hit.explanation is not None
            assert hit.explanation.score == hit.score
            assert hit.explanation.document_norm == 1.0
            assert_sums_to(hit.explanation, hit.score)
            explained += 1
    assert explained == 225 * K


def test_a_hit_is_explained_like_the_model_explains_its_text(
    cranfield, cranfield_model, cranfield_index
):
    query = cranfield.queries["1"]
    for hit in cranfield_index.searcher.search(query, 5, explain=True):
        local = cranfield_model.explain(query, cranfield.documents[hit.id])
        assert local.score == pytest.approx(hit.score, abs=TOLERANCE)
        assert local.query_norm == hit.explanation.query_norm
        by_pair = {(p.query_term, p.document_term): p for p in local}
        assert set(by_pair) == {(p.query_term, p.document_term) for p in hit.explanation}
        for pair in hit.explanation:
            twin = by_pair[pair.query_term, pair.document_term]
            assert pair.contribution == pytest.approx(twin.contribution, abs=TOLERANCE)
            assert pair.similarity == twin.similarity
            assert pair.query_weight == twin.query_weight
            assert pair.document_weight == pytest.approx(
                twin.document_weight / local.document_norm, rel=1e-12
            )


def test_native_hits_explain_the_exact_scm(cranfield, cranfield_index):
    query = cranfield.queries["7"]
    exact = {hit.id: hit.score for hit in cranfield_index.searcher.search(query, 30)}
    for hit in cranfield_index.searcher.native(query, K, explain=True):
        assert hit.explanation.score == exact[hit.id]  # not Elasticsearch's 9-bit estimate
        assert_sums_to(hit.explanation, exact[hit.id])


def test_rescored_hits_are_explained(cranfield, cranfield_index):
    query = cranfield.queries["3"]
    ids = cranfield_index.searcher.search(query, K).ids()
    for hit in cranfield_index.searcher.rescore(query, ids=ids, explain=True):
        assert_sums_to(hit.explanation, hit.score)
    bm25 = cranfield_index.searcher.rescore(
        query, es_query={"match": {"text": query}}, explain=True
    )
    for hit in bm25:
        assert_sums_to(hit.explanation, hit.score)


def test_explanations_only_when_asked_and_in_to_dict(cranfield, cranfield_index):
    query = cranfield.queries["2"]
    plain = cranfield_index.searcher.search(query, 3)
    assert all(hit.explanation is None for hit in plain)
    assert "explanation" not in plain.hits[0].to_dict()
    explained = cranfield_index.searcher.search(query, 3, explain=True)
    assert plain.ids() == explained.ids()
    as_dict = json.loads(json.dumps(explained.hits[0].to_dict()))
    assert as_dict["explanation"]["score"] == explained.hits[0].score
    assert as_dict["explanation"]["pairs"][0] == explained.hits[0].explanation.pairs[0].to_dict()
    with pytest.raises(ValueError, match="explain must be True or False, got 'yes'"):
        cranfield_index.searcher.search(query, explain="yes")
    with pytest.raises(ValueError, match="explain must be True or False, got 1"):
        cranfield_index.searcher.rescore(query, ids=["1"], explain=1)


# -- a small index: a document without vocabulary terms, and the command line ---------------------

DOCUMENTS = [
    {"id": "d1", "text": "Julius Caesar was killed in Rome"},
    {"id": "d2", "text": "Antony found Caesar dead"},
    {"id": "d3", "text": "Brutus stabbed Caesar"},
    {"id": "empty", "text": "the of and"},
]
PAIRS = [("killed", "dead", 0.62), ("killed", "stabbed", 0.5), ("julius", "antony", 0.3)]


@pytest.fixture(scope="module")
def caesar_model() -> SoftCosineModel:
    texts = [document["text"] for document in DOCUMENTS]
    return SoftCosineModel.build(
        texts, similarity=lambda terms: TermSimilarityMatrix.from_pairs(terms, PAIRS)
    )


@pytest.fixture
def caesar_index(es_client, index_name, caesar_model) -> SCMIndex:
    index = SCMIndex(es_client, index_name, caesar_model)
    assert index.index_documents(DOCUMENTS).ok
    return index


def test_a_document_without_vocabulary_terms_has_an_empty_explanation(caesar_index):
    result = caesar_index.searcher.rescore("Caesar killed", ids=["empty", "d2"], explain=True)
    empty = result.hits[result.ids().index("empty")]
    assert empty.score == 0.0
    assert empty.explanation == Explanation(0.0, (), 0.0, 0.0, 0.0)
    d2 = result.hits[result.ids().index("d2")]
    assert [(p.query_term, p.document_term) for p in d2.explanation] == [
        ("killed", "dead"),
        ("caesar", "caesar"),
    ]


def test_search_explain_prints_the_pairs_under_each_hit(
    cli, es_url, caesar_index, caesar_model, tmp_path: Path
):
    model_dir = caesar_model.save(tmp_path / "model")
    search = ["search", "--model", model_dir, "--index", caesar_index.name, "--es-url", es_url]
    search += ["--mode", "exact"]  # compared with Searcher.search below
    code, out, err = cli(*search, "--k", "2", "--explain", "Caesar", "was", "killed")
    assert code == EXIT_OK, err
    expected = caesar_index.searcher.search("Caesar was killed", 2, explain=True)
    lines = out.splitlines()
    assert lines[0].split() == ["rank", "id", "score", "text"]
    rows = [line for line in lines[1:] if not line.startswith("      ")]
    assert [row.split()[1] for row in rows] == expected.ids()
    explanation_lines = [line for line in lines[1:] if line.startswith("      ")]
    pairs = [pair for hit in expected for pair in hit.explanation]
    assert len(explanation_lines) == len(pairs)
    for line, pair in zip(explanation_lines, pairs, strict=True):
        match = LINE.match(line)
        assert match, line
        assert match["rel"] == ("=" if pair.identical else "≈")
        assert (match["a"], match["b"]) == (pair.query_term, pair.document_term)
        assert float(match["s"]) == round(pair.similarity, 2)
        assert float(match["c"]) == round(pair.contribution, 3)
        assert int(match["share"]) == round(100 * pair.share)
    assert "      killed = killed   s=1.00  +0." in out

    code, out, err = cli(*search, "--json", "--explain", "--explain-top", "1", "killed")
    assert code == EXIT_OK, err
    hits = [json.loads(line) for line in out.splitlines()]
    expected = caesar_index.searcher.search("killed", 10, explain=True)
    assert [hit["id"] for hit in hits] == expected.ids()
    for got, hit in zip(hits, expected, strict=True):
        explanation = got["explanation"]
        assert isinstance(explanation["pairs"], list)
        assert explanation["pairs"] == [hit.explanation.pairs[0].to_dict()]
        assert explanation["omitted"] == len(hit.explanation) - 1
        listed = explanation["pairs"][0]["contribution"] + explanation["omitted_contribution"]
        assert abs(listed - got["score"]) <= TOLERANCE

    code, out, _ = cli(*search, "--json", "killed")
    assert all("explanation" not in json.loads(line) for line in out.splitlines())


# -- hybrid search: the SCM part of every hit, whichever leg found it (issue 28, item 7) ---------


def test_every_hybrid_hit_has_its_scm_part_explained(caesar_index):
    # "dead" and "stabbed" are only similar to "killed": d2 and d3 are found by the SCM alone
    for fusion in ("max", "rrf"):
        result = caesar_index.searcher.hybrid("killed", 3, fusion=fusion, explain=True)
        assert sorted(result.ids()) == ["d1", "d2", "d3"]
        for hit in result:
            scm = caesar_index.searcher.rescore("killed", ids=[hit.id]).hits[0].score
            assert scm > 0.0
            assert hit.explanation is not None, hit.id
            assert hit.explanation.score == scm  # the exact SCM, not the fused score
            assert_sums_to(hit.explanation, scm)
        synonym_only = result.hits[result.ids().index("d2")]
        assert [(p.query_term, p.document_term) for p in synonym_only.explanation] == [
            ("killed", "dead")
        ]
        if fusion == "max":  # every candidate has both scores; BM25 finds no "killed" in d2
            assert synonym_only.components == {"bm25": 0.0, "scm": synonym_only.explanation.score}


def test_search_explains_hybrid_hits_found_by_the_scm_alone(
    cli, es_url, caesar_index, caesar_model, tmp_path: Path
):
    model_dir = caesar_model.save(tmp_path / "model")
    search = ["search", "--model", model_dir, "--index", caesar_index.name, "--es-url", es_url]
    code, out, err = cli(*search, "--mode", "hybrid", "--k", "3", "--explain", "killed")
    assert code == EXIT_OK, err
    assert "no pair of similar terms" not in out
    assert "      killed ≈ dead " in out
    assert "      killed ≈ stabbed " in out
