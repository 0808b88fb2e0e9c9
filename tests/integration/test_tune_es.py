"""``es-scm eval collection`` and ``es-scm tune`` on a tiny collection, on a real Elasticsearch.

The collection is made so that the answers are known by hand: each topic is one word, and its two
relevant documents are one that contains the word and one that contains only its synonym. BM25
finds the first only (AP 0.5 on every topic); the SCM with embeddings that make the synonyms
similar finds both first (AP 1.0); without them (or with ``nonzero_limit=0``) it is the cosine,
which finds the first only (AP 0.5).
"""

from __future__ import annotations

import json

import pytest

from es_scm.cli import main
from tests.support import SYNONYM_RELEVANT, collection_files


def test_eval_collection_scores_bm25_and_the_scm_and_writes_a_run(
    collection, es_url, tmp_path, capsys
):
    run, summary = tmp_path / "scm.run", tmp_path / "eval.json"
    status = main([
        "eval", "collection", *collection_files(collection),
        "--embeddings", str(collection["vectors"]), "--es-url", es_url, "--run", str(run),
        "--json", str(summary), "--quiet",
    ])  # fmt: skip
    assert status == 0
    methods = json.loads(summary.read_text())["collections"][0]["methods"]
    assert methods["bm25"]["AP"] == pytest.approx(0.5)
    assert methods["scm"]["AP"] == pytest.approx(1.0)
    lines = [line.split() for line in run.read_text().splitlines()]
    top2 = {(row[0], row[2]) for row in lines if row[3] in ("1", "2")}
    assert top2 == {(q, d) for q, ds in SYNONYM_RELEVANT.items() for d in ds}
    assert all(row[1] == "Q0" and row[5] == "scm" for row in lines)
    assert "BM25 (Elasticsearch) | 50.00" in capsys.readouterr().out


def test_tune_finds_the_setting_that_beats_bm25_and_saves_its_model(
    collection, es_url, engine, tmp_path, capsys
):
    out, summary = tmp_path / "best", tmp_path / "tune.json"
    status = main([
        "tune", *collection_files(collection), "--es-url", es_url, "--folds", "2",
        "--alphas", "0.5", "--grid", f"embeddings=none,{collection['vectors']}",
        "--grid", "nonzero_limit=0,10", "--out", str(out), "--json", str(summary),
    ])  # fmt: skip
    assert status == 0
    report = json.loads(summary.read_text())
    assert report["provenance"]["command"].startswith("es-scm tune --corpus ")
    assert report["provenance"]["versions"][engine.name] is not None
    assert report["bm25"] == pytest.approx(0.5)
    best = f"scm embeddings={collection['vectors']},nonzero_limit=10"
    assert report["best"] == best
    assert report["held_out"][best] == pytest.approx(1.0)
    assert report["held_out"]["scm embeddings=none,nonzero_limit=10"] == pytest.approx(0.5)
    assert report["selected"]["score"] == pytest.approx(1.0)
    assert report["settings"][f"max@0.5 embeddings={collection['vectors']},nonzero_limit=10"][
        "fusion"
    ] == {"fusion": "max", "alpha": 0.5}
    assert (out / "model.json").is_file()
    # the saved model carries its setting's best fusion, which hybrid search then uses
    assert json.loads((out / "model.json").read_text())["hybrid"] == {"fusion": "max", "alpha": 0.5}
    assert "+50.00" in capsys.readouterr().out


def test_tune_scores_rows_by_any_measure_and_compares_fusions(collection, es_url, tmp_path):
    summary = tmp_path / "tune.json"
    status = main([
        "tune", *collection_files(collection), "--es-url", es_url, "--folds", "2", "--quiet",
        "--grid", f"embeddings={collection['vectors']}", "--metric", "R@2",
        "--fusions", "max,rrf", "--alphas", "0.2,0.8", "--json", str(summary),
    ])  # fmt: skip
    assert status == 0
    report = json.loads(summary.read_text())
    assert report["measure"] == "R@2"
    assert report["bm25"] == pytest.approx(0.5)  # BM25 finds one of the two relevant documents
    rows = {row.split()[0] for row in report["held_out"]}
    assert rows == {"scm", "max@0.2", "max@0.8", "rrf"}


def test_bm25_can_stem_english_words(tmp_path, es_url, capsys):
    docs = tmp_path / "docs.jsonl"
    texts = {"a": "studies of turbulent flows", "b": "a recipe for bread", "c": "stock prices"}
    docs.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in texts.items()))
    topics, qrels = tmp_path / "topics.tsv", tmp_path / "qrels.txt"
    topics.write_text("q1\tstudying the flow\n")
    qrels.write_text("q1 0 a 1\n")
    results = {}
    for analyzer in ("standard", "english"):
        summary = tmp_path / f"{analyzer}.json"
        status = main([
            "eval", "collection", "--corpus", str(docs), "--topics", str(topics),
            "--qrels", str(qrels), "--embeddings", "none", "--bm25-analyzer", analyzer,
            "--es-url", es_url, "--json", str(summary), "--quiet",
        ])  # fmt: skip
        assert status == 0
        results[analyzer] = json.loads(summary.read_text())["collections"][0]["methods"]
    # "studying the flow" shares no word with "studies of turbulent flows"; their stems do
    assert results["standard"]["bm25"]["AP"] == 0.0
    assert results["english"]["bm25"]["AP"] == pytest.approx(1.0)
    capsys.readouterr()


def test_tune_fits_the_adaptive_fusion_and_eval_compares_it_with_the_fixed_one(
    collection, es_url, tmp_path, capsys
):
    out, summary = tmp_path / "best", tmp_path / "tune.json"
    status = main([
        "tune", *collection_files(collection), "--es-url", es_url, "--folds", "2", "--quiet",
        "--grid", f"embeddings={collection['vectors']}", "--fusions", "max,adaptive",
        "--alphas", "0.5", "--objective", "hybrid", "--out", str(out), "--json", str(summary),
    ])  # fmt: skip
    assert status == 0
    report = json.loads(summary.read_text())
    (row,) = [r for r in report["held_out"] if r.startswith("adaptive@0.5")]
    fitted = report["settings"][row]["fusion"]
    assert fitted["fusion"] == "adaptive"
    assert fitted["alpha"] == 0.5
    assert fitted["model"]["legs"] == ["bm25", "scm"]
    summary = tmp_path / "eval.json"
    status = main([
        "eval", "collection", *collection_files(collection), "--model", str(out),
        "--es-url", es_url, "--adaptive", "--json", str(summary), "--quiet",
    ])  # fmt: skip
    assert status == 0
    result = json.loads(summary.read_text())["collections"][0]
    assert {"bm25+scm", "bm25+scm adaptive"} <= set(result["methods"])
    (pair,) = result["pair_comparisons"]["AP"]
    assert (pair["method"], pair["baseline"]) == ("bm25+scm adaptive", "bm25+scm")
    assert "BM25 + SCM (adaptive fusion) vs BM25 + SCM (hybrid search)" in capsys.readouterr().out
