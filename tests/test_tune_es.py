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
from es_scm.evaluation.topics import read_qrels, read_topics
from es_scm.evaluation.tuning import cross_validate, folds_of

DOCS = {
    "d1": "car repair shop fixes engines",
    "d2": "automobile dealer sells new models",
    "d3": "kitten food bowl",
    "d4": "cat toys and scratching posts",
    "d5": "stock market prices rise",
    "d6": "weather forecast rain tomorrow",
    "d7": "football match ends in a draw",
    "d8": "new recipe for bread baking",
}
TOPICS = {"q1": "automobile", "q2": "kitten", "q3": "car", "q4": "cat"}
RELEVANT = {"q1": ("d1", "d2"), "q2": ("d3", "d4"), "q3": ("d1", "d2"), "q4": ("d3", "d4")}
VECTORS = "4 3\ncar 1 0 0\nautomobile 0.9 0.1 0\ncat 0 1 0\nkitten 0.1 0.9 0\n"


@pytest.fixture
def collection(tmp_path):
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in DOCS.items()))
    topics = tmp_path / "topics.tsv"
    topics.write_text("".join(f"{q}\t{t}\n" for q, t in TOPICS.items()))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} 1\n" for q, ds in RELEVANT.items() for d in ds))
    vectors = tmp_path / "vectors.txt"
    vectors.write_text(VECTORS)
    return {"docs": docs, "topics": topics, "qrels": qrels, "vectors": vectors}


def _files(collection) -> list[str]:
    return [
        "--corpus", str(collection["docs"]), "--topics", str(collection["topics"]),
        "--qrels", str(collection["qrels"]),
    ]  # fmt: skip


@pytest.mark.integration
def test_eval_collection_scores_bm25_and_the_scm_and_writes_a_run(
    collection, es_url, tmp_path, capsys
):
    run, summary = tmp_path / "scm.run", tmp_path / "eval.json"
    status = main([
        "eval", "collection", *_files(collection), "--embeddings", str(collection["vectors"]),
        "--es-url", es_url, "--run", str(run), "--json", str(summary), "--quiet",
    ])  # fmt: skip
    assert status == 0
    methods = json.loads(summary.read_text())["collections"][0]["methods"]
    assert methods["bm25"]["AP"] == pytest.approx(0.5)
    assert methods["scm"]["AP"] == pytest.approx(1.0)
    lines = [line.split() for line in run.read_text().splitlines()]
    top2 = {(row[0], row[2]) for row in lines if row[3] in ("1", "2")}
    assert top2 == {(q, d) for q, ds in RELEVANT.items() for d in ds}
    assert all(row[1] == "Q0" and row[5] == "scm" for row in lines)
    assert "BM25 (Elasticsearch) | 50.00" in capsys.readouterr().out


@pytest.mark.integration
def test_tune_finds_the_setting_that_beats_bm25_and_saves_its_model(
    collection, es_url, tmp_path, capsys
):
    out, summary = tmp_path / "best", tmp_path / "tune.json"
    status = main([
        "tune", *_files(collection), "--es-url", es_url, "--folds", "2", "--alphas", "0.5",
        "--grid", f"embeddings=none,{collection['vectors']}", "--grid", "nonzero_limit=0,10",
        "--out", str(out), "--json", str(summary),
    ])  # fmt: skip
    assert status == 0
    report = json.loads(summary.read_text())
    assert report["provenance"]["command"].startswith("es-scm tune --corpus ")
    assert report["provenance"]["versions"]["elasticsearch"] is not None
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


@pytest.mark.integration
def test_tune_scores_rows_by_any_measure_and_compares_fusions(collection, es_url, tmp_path):
    summary = tmp_path / "tune.json"
    status = main([
        "tune", *_files(collection), "--es-url", es_url, "--folds", "2", "--quiet",
        "--grid", f"embeddings={collection['vectors']}", "--metric", "R@2",
        "--fusions", "max,rrf", "--alphas", "0.2,0.8", "--json", str(summary),
    ])  # fmt: skip
    assert status == 0
    report = json.loads(summary.read_text())
    assert report["measure"] == "R@2"
    assert report["bm25"] == pytest.approx(0.5)  # BM25 finds one of the two relevant documents
    rows = {row.split()[0] for row in report["held_out"]}
    assert rows == {"scm", "max@0.2", "max@0.8", "rrf"}


def test_a_bad_metric_or_fusion_is_a_one_line_error(collection, capsys):
    assert main(["tune", *_files(collection), "--metric", "bogus@10"]) != 0
    assert "--metric: measure 'bogus@10'" in capsys.readouterr().err
    assert main(["tune", *_files(collection), "--fusions", "average"]) != 0
    assert "--fusions: unknown fusion 'average'" in capsys.readouterr().err


def test_a_bad_grid_option_is_a_one_line_error(collection, capsys):
    status = main(["tune", *_files(collection), "--grid", "colour=red"])
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


@pytest.mark.integration
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
