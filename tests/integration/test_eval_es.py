"""``es-scm eval`` end to end against a real Elasticsearch."""

from __future__ import annotations

import json
import shlex
import uuid

import pytest

from es_scm.cli import main
from es_scm.elastic import cluster_version
from tests.support import minilm_reference

DEV = "semeval2016-task3/SemEval2016-Task3-CQA-QL-dev.xml"
GOLD = DEV + ".subtaskB.relevancy"


def _no_leftover(es_client, name: str) -> bool:
    return not es_client.indices.exists(index=name)


def cranfield_files(shared_data) -> list[str]:
    """``eval trec``'s options naming Cranfield's three files."""
    folder = shared_data / "ir-collections/cranfield"
    return [
        "--docs", str(folder / "cran.all.1400"),
        "--queries", str(folder / "cran.qry"),
        "--qrels", str(folder / "cranqrel"),
    ]  # fmt: skip


def test_semeval_command_on_dev(shared_data, es_url, es_client, engine, tmp_path, capsys):
    name = f"es-scm-test-eval-{uuid.uuid4().hex[:10]}"
    summary, details = tmp_path / "dev.json", tmp_path / "per-question.json"
    status = main([
        "eval", "semeval", "--xml", str(shared_data / DEV), "--gold", str(shared_data / GOLD),
        "--es-url", es_url, "--index-name", name, "--json", str(summary),
        "--per-question", str(details), "--quiet",
    ])  # fmt: skip
    assert status == 0
    assert _no_leftover(es_client, name)
    out = capsys.readouterr().out
    table, significance = out.split("\n\nEach method against BM25, question by question (AP):\n\n")
    assert len(table.strip().splitlines()) == 9  # header, rule and 7 methods
    assert len(significance.strip().splitlines()) == 8  # header, rule and 6 methods vs BM25
    methods = json.loads(summary.read_text())["methods"]
    comparisons = {c["method"]: c for c in json.loads(summary.read_text())["comparisons"]}
    assert set(comparisons) == set(methods) - {"es-bm25"}
    for method, c in comparisons.items():  # the mean of the questions' AP is the official MAP
        assert c["wins"] + c["ties"] + c["losses"] == 50
        assert 100 * c["mean"] == pytest.approx(methods[method]["MAP"])
        assert 100 * c["baseline_mean"] == pytest.approx(methods["es-bm25"]["MAP"])
    assert set(methods) == {
        "ir-baseline", "tfidf", "es-bm25", "scm", "es-scm", "es-scm-native", "bm25+scm"
    }  # fmt: skip
    assert round(methods["ir-baseline"]["MAP"], 2) == 71.35
    assert methods["es-scm"] == methods["scm"]
    per_question = json.loads(details.read_text())
    made = per_question.pop("_provenance")  # how the file was made, beside the question ids
    assert made == json.loads(summary.read_text())["provenance"]
    assert made["command"].startswith("es-scm eval semeval --xml ")
    assert made["versions"][engine.name] == cluster_version(es_client)
    assert len(per_question) == 50
    for qid, entry in per_question.items():
        local, remote = entry["methods"]["scm"], entry["methods"]["es-scm"]
        assert remote["ranking"] == local["ranking"], qid
        assert remote["scores"] == pytest.approx(local["scores"], abs=1e-9), qid
        assert sorted(entry["methods"]["es-bm25"]["ranking"]) == sorted(local["ranking"])
    for scores in methods.values():
        assert 0 < scores["MAP"] <= 100
        assert 0 < scores["MRR"] <= 100


def test_semeval_command_with_dense_scores_knn_as_the_encoder_does(
    shared_data, es_url, es_client, tmp_path, capsys, encoder_cache, monkeypatch
):
    """``eval semeval --dense``: kNN alone, BM25 + kNN and the three-way hybrid beside the
    others; the kNN scores of each question's candidates are (1 + cos) / 2 of the packaged
    MiniLM's vectors, computed here by the reference encoder (``minilm_reference``)."""
    minilm = minilm_reference()
    from es_scm.evaluation.semeval_data import clean_text, read_semeval

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    name = f"es-scm-test-eval-{uuid.uuid4().hex[:10]}"
    summary, details = tmp_path / "dev.json", tmp_path / "per-question.json"
    status = main([
        "eval", "semeval", "--xml", str(shared_data / DEV), "--gold", str(shared_data / GOLD),
        "--es-url", es_url, "--index-name", name, "--embeddings", "none", "--dense",
        "--json", str(summary), "--per-question", str(details), "--quiet",
    ])  # fmt: skip
    assert status == 0
    assert _no_leftover(es_client, name)
    written = json.loads(summary.read_text())
    dense = {"es-dense", "bm25+dense", "bm25+scm+dense"}
    assert dense <= set(written["methods"])
    compared = {c["method"]: c for c in written["comparisons"]}
    for method in dense:
        c = compared[method]
        assert c["wins"] + c["ties"] + c["losses"] == 50
        assert 100 * c["mean"] == pytest.approx(written["methods"][method]["MAP"])
    assert "| dense (kNN) |" in capsys.readouterr().out
    per_question = json.loads(details.read_text())
    questions = read_semeval(shared_data / DEV, shared_data / GOLD)
    for question in questions[:10]:
        texts = [clean_text(question.text)] + [clean_text(r.text) for r in question.related]
        vectors = minilm.encode(texts, normalize_embeddings=True)
        cosines = vectors[1:] @ vectors[0]
        related = zip(question.related, cosines, strict=True)
        expected = {r.id: (1 + float(c)) / 2 for r, c in related}
        knn = per_question[question.id]["methods"]["es-dense"]
        found = dict(zip(knn["ranking"], knn["scores"], strict=True))
        assert found == pytest.approx(expected, abs=1e-4), question.id


def test_trec_command_on_a_few_cranfield_queries(
    shared_data, es_url, es_client, engine, tmp_path, capsys
):
    name = f"es-scm-test-eval-{uuid.uuid4().hex[:10]}"
    out = tmp_path / "trec.json"
    argv = [
        "eval", "trec", "--collection", "cranfield", *cranfield_files(shared_data),
        "--es-url", es_url, "--index-name", name, "--max-queries", "5", "--depth", "20",
        "--json", str(out), "--quiet",
    ]  # fmt: skip
    status = main(argv)
    assert status == 0
    assert _no_leftover(es_client, name)
    written = json.loads(out.read_text())
    assert written["provenance"]["command"] == shlex.join(["es-scm", *argv])
    assert written["provenance"]["versions"][engine.name] == cluster_version(es_client)
    report = written["collections"][0]
    assert report["queries"] == 5
    for method in ("bm25", "scm", "bm25+scm"):
        assert set(report["methods"][method]) == {"AP", "nDCG@10", "R@100"}
        assert 0 < report["methods"][method]["AP"] <= 1


def test_trec_command_with_dense_evaluates_the_dense_methods_too(
    shared_data, es_url, es_client, tmp_path, encoder_cache, monkeypatch
):
    """``eval trec --dense`` wires the dense leg as ``eval collection --dense`` does (whose
    numbers test_dense_cli_es.py checks by hand): kNN alone, BM25 + kNN and the three-way hybrid,
    each beside BM25 and compared with it, with the encoder in the settings."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    name = f"es-scm-test-eval-{uuid.uuid4().hex[:10]}"
    out = tmp_path / "trec.json"
    argv = [
        "eval", "trec", "--collection", "cranfield", *cranfield_files(shared_data),
        "--es-url", es_url, "--index-name", name, "--max-queries", "3", "--depth", "10",
        "--embeddings", "none", "--dense", "--json", str(out), "--quiet",
    ]  # fmt: skip
    assert main(argv) == 0
    assert _no_leftover(es_client, name)
    report = json.loads(out.read_text())["collections"][0]
    methods = {"bm25", "scm", "bm25+scm", "dense", "bm25+dense", "bm25+scm+dense"}
    assert set(report["methods"]) == methods
    assert set(report["per_query"]) == methods
    assert report["settings"]["dense"]["encoder"] == "all-MiniLM-L6-v2"
    compared = {c["method"] for rows in report["comparisons"].values() for c in rows}
    assert {"dense", "bm25+dense", "bm25+scm+dense"} <= compared
    for method in methods:
        assert 0 <= report["methods"][method]["AP"] <= 1
