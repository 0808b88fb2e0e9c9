"""``es-scm tune`` and ``eval collection`` without a server: option errors, the topic and qrels
readers, cross-validation (on a real Elasticsearch: tests/integration/test_tune_es.py)."""

from __future__ import annotations

import pytest

from es_scm.cli import main
from es_scm.evaluation.topics import read_qrels, read_topics
from es_scm.evaluation.tuning import cross_validate, folds_of
from tests.support import collection_files


def test_a_bad_metric_or_fusion_is_a_one_line_error(collection, capsys):
    assert main(["tune", *collection_files(collection), "--metric", "bogus@10"]) != 0
    assert "--metric: measure 'bogus@10'" in capsys.readouterr().err
    assert main(["tune", *collection_files(collection), "--fusions", "average"]) != 0
    assert "--fusions: unknown fusion 'average'" in capsys.readouterr().err


def test_a_bad_grid_option_is_a_one_line_error(collection, capsys):
    status = main(["tune", *collection_files(collection), "--grid", "colour=red"])
    assert status != 0
    assert "colour is not a model option" in capsys.readouterr().err


def test_topics_and_qrels_readers(tmp_path):
    trec = tmp_path / "topics.trec"
    trec.write_text(
        "<top>\n<num> Number: 301\n<title> International Organized Crime\n"
        "<desc> Description:\nIdentify organizations.\n</top>\n"
        "<top>\n<num> Number: 302\n<title> Poliomyelitis\n<desc> Description:\nCases.\n</top>\n"
    )
    assert read_topics(trec) == {"301": "International Organized Crime", "302": "Poliomyelitis"}
    both = read_topics(trec, ("title", "desc"))
    assert both["301"] == "International Organized Crime Identify organizations."
    jsonl = tmp_path / "topics.jsonl"
    jsonl.write_text('{"qid": 7, "query": "soft cosine"}\n')
    assert read_topics(jsonl) == {"7": "soft cosine"}
    qrels = tmp_path / "qrels"
    qrels.write_text("301 0 FBIS-1 2\n301 0 FBIS-2 0\n302 FT-9 1\n")
    assert read_qrels(qrels) == {"301": {"FBIS-1": 2, "FBIS-2": 0}, "302": {"FT-9": 1}}


def test_cross_validation_picks_by_the_other_folds():
    folds = folds_of(["1", "2", "3", "4"], 2)
    assert folds == [["1", "3"], ["2", "4"]]
    per_query = {
        "a": {"1": 1.0, "3": 1.0, "2": 0.0, "4": 0.0},  # best on fold 1 only
        "b": {"1": 0.5, "3": 0.5, "2": 0.5, "4": 0.5},
    }
    held_out, selected = cross_validate(per_query, folds)
    assert held_out == {"a": pytest.approx(0.5), "b": pytest.approx(0.5)}
    # fold 1 is scored by the best on fold 2 (b: 0.5), fold 2 by the best on fold 1 (a: 0.0)
    assert selected["rows"] == ["b", "a"]
    assert selected["score"] == pytest.approx(0.25)


def test_the_evaluation_names_combined_embeddings():
    from es_scm.cli.evaluate import _embeddings_name

    glove = {"source": "embeddings", "embeddings": {"name": "GloVe"}}
    trained = {"source": "embeddings", "embeddings": {"name": "fasttext trained"}}
    combined = {"source": "combination", "parts": [glove, trained, {"source": "levenshtein"}]}
    assert _embeddings_name(combined) == "GloVe + fasttext trained"
    assert _embeddings_name({"source": "identity"}) == "none"
