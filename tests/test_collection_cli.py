"""``eval collection`` with BEIR files, a saved model, an existing index and chosen measures;
``search --queries --run``; ``tune``'s progress lines. A tiny collection, a real Elasticsearch.

The answers are known by hand, as in ``test_tune_es.py``: each topic is one word, its two
relevant documents are one with the word and one with only its synonym, and the embeddings make
the synonyms similar. Here the files are in BEIR's format (``_id``, ``title``, ``text``; qrels
with a header and CRLF), and some query words are in a document's title only: BM25 finds the
document with the word (AP 0.5, P@1 1.0 on every topic) only because titles are searched, and
the SCM finds both first (AP 1.0).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from es_scm.cli import main
from es_scm.cli.errors import EXIT_OK, EXIT_USAGE

DOCS = [
    {"_id": "d1", "title": "Car repair", "text": "the shop fixes engines"},
    {"_id": "d2", "title": "", "text": "automobile dealer sells new models"},
    {"_id": "d3", "title": "Kitten food", "text": "a bowl for small pets"},
    {"_id": "d4", "title": "", "text": "cat toys and scratching posts"},
    {"_id": "d5", "title": "Markets", "text": "stock prices rise"},
    {"_id": "d6", "title": "", "text": "weather forecast rain tomorrow"},
    {"_id": "d7", "title": "Sports", "text": "football match ends in a draw"},
    {"_id": "d8", "title": "", "text": "new recipe for bread baking"},
]
TOPICS = {"q1": "automobile", "q2": "kitten", "q3": "car", "q4": "cat"}
RELEVANT = {"q1": ("d1", "d2"), "q2": ("d3", "d4"), "q3": ("d1", "d2"), "q4": ("d3", "d4")}
VECTORS = "4 3\ncar 1 0 0\nautomobile 0.9 0.1 0\ncat 0 1 0\nkitten 0.1 0.9 0\n"


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("es-scm: error: ")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture(scope="module")
def beir(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("beir")
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({**d, "metadata": {}}) + "\n" for d in DOCS))
    queries = folder / "queries.jsonl"
    queries.write_text(
        "".join(json.dumps({"_id": q, "text": t, "metadata": {}}) + "\n" for q, t in TOPICS.items())
    )
    qrels = folder / "test.tsv"
    rows = [f"{q}\t{d}\t1" for q, ds in RELEVANT.items() for d in ds]
    qrels.write_bytes("\r\n".join(["query-id\tcorpus-id\tscore", *rows, ""]).encode())
    vectors = folder / "vectors.txt"
    vectors.write_text(VECTORS)
    model = folder / "model"
    assert main(["model", "build", "--corpus", str(corpus), "--out", str(model),
                 "--embeddings", str(vectors)]) == EXIT_OK  # fmt: skip
    return {
        "corpus": corpus,
        "queries": queries,
        "qrels": qrels,
        "vectors": vectors,
        "model": model,
    }


def _judged(beir: dict[str, Path]) -> list[object]:
    return ["--topics", beir["queries"], "--qrels", beir["qrels"]]


@pytest.mark.integration
def test_eval_collection_on_beir_files_with_a_saved_model_and_chosen_metrics(
    capsys, beir, es_url: str, es_client, tmp_path: Path
) -> None:
    summary, name = tmp_path / "eval.json", "es-scm-test-beir-saved"
    code, out, err = run(
        capsys, "eval", "collection", "--corpus", beir["corpus"], *_judged(beir),
        "--model", beir["model"], "--metrics", "AP", "P@1", "nDCG@10", "--index-name", name,
        "--es-url", es_url, "--json", summary, "--quiet",
    )  # fmt: skip
    assert code == EXIT_OK, err
    assert not es_client.indices.exists(index=name)
    report = json.loads(summary.read_text())["collections"][0]
    assert report["measures"] == ["AP", "P@1", "nDCG@10"]
    assert report["settings"]["model"] == str(beir["model"])
    methods = report["methods"]
    assert methods["bm25"]["AP"] == pytest.approx(0.5)
    assert methods["bm25"]["P@1"] == pytest.approx(1.0)
    assert methods["scm"]["AP"] == pytest.approx(1.0)
    assert methods["scm"]["nDCG@10"] == pytest.approx(1.0)
    per_query = report["per_query"]
    assert set(per_query) == {"bm25", "scm", "bm25+scm"}
    for method in per_query:
        assert set(per_query[method]) == set(TOPICS)
        for values in per_query[method].values():
            assert set(values) == {"AP", "P@1", "nDCG@10"}
    # "car" is in d1's title only: BM25 finds d1 because titles are searched
    assert per_query["bm25"]["q3"] == {
        "AP": 0.5,
        "P@1": 1.0,
        "nDCG@10": pytest.approx(0.6131, 1e-3),
    }
    assert per_query["scm"]["q3"]["AP"] == pytest.approx(1.0)
    lines = out.splitlines()
    assert lines[0] == "| collection | method | MAP | P@1 | nDCG@10 |"
    assert "| corpus | BM25 (Elasticsearch) | 50.00 | 100.00 |" in lines[2]


@pytest.mark.integration
def test_eval_collection_on_an_existing_index(
    capsys, beir, es_url: str, es_client, index_name: str, tmp_path: Path
) -> None:
    _index_beir(capsys, beir, es_url, index_name)
    summary = tmp_path / "eval.json"
    code, out, err = run(
        capsys, "eval", "collection", *_judged(beir), "--model", beir["model"],
        "--index", index_name, "--es-url", es_url, "--json", summary,
    )  # fmt: skip
    assert code == EXIT_OK, err
    assert es_client.indices.exists(index=index_name)  # not deleted
    assert es_client.count(index=index_name)["count"] == len(DOCS)  # nor indexed again
    report = json.loads(summary.read_text())["collections"][0]
    assert report["collection"] == index_name
    assert report["measures"] == ["AP", "nDCG@10", "R@100"]
    assert report["methods"]["bm25"]["AP"] == pytest.approx(0.5)
    assert report["methods"]["scm"]["AP"] == pytest.approx(1.0)
    assert "index" not in report["seconds"]
    assert out.splitlines()[0] == "| collection | method | MAP | nDCG@10 | R@100 |"
    assert f"es-scm: {index_name}: index {index_name}, 4 judged queries" in err  # progress

    other = tmp_path / "other"
    assert main(["model", "build", "--corpus", str(beir["corpus"]), "--out", str(other),
                 "--embeddings", "none"]) == EXIT_OK  # fmt: skip
    code, _, err = run(
        capsys, "eval", "collection", *_judged(beir), "--model", other, "--index", index_name,
        "--es-url", es_url, "--quiet",
    )  # fmt: skip
    assert code == 1
    assert "was built with model" in one_line_error(err)
    code, _, err = run(
        capsys, "eval", "collection", *_judged(beir), "--model", beir["model"],
        "--index", f"{index_name}-missing", "--es-url", es_url, "--quiet",
    )  # fmt: skip
    assert code == 1
    assert "does not exist" in one_line_error(err)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--index", "news"], "--index NAME needs --model DIR"),
        ([], "give --corpus PATH (or --index NAME and --model DIR)"),
        (["--model", "m", "--index", "news", "--index-name", "x"],
         "--index-name names a new one: give one"),
        (["--model", "m", "--index", "news", "--nonzero-limit", "10", "--no-symmetric"],
         "--model m is a saved model: drop --nonzero-limit, --[no-]symmetric"),
        (["--model", "m", "--index", "news", "--metrics", "AP", "bogus@10"],
         "--metrics: measure 'bogus@10': unknown measure"),
        (["--model", "m", "--index", "news", "--metrics", "R@0"],
         "--metrics: measure 'R@0': the cutoff must be"),
    ],
)  # fmt: skip
def test_eval_collection_option_errors_are_one_line(
    capsys, beir, options: list[str], message: str
) -> None:
    code, _, err = run(capsys, "eval", "collection", *_judged(beir), *options, "--quiet")
    assert code == EXIT_USAGE
    assert message in one_line_error(err)


@pytest.mark.integration
def test_search_a_batch_of_queries_into_a_trec_run(
    capsys, beir, es_url: str, es_client, index_name: str, tmp_path: Path
) -> None:
    from es_scm.elastic import SCMIndex
    from es_scm.model import SoftCosineModel

    _index_beir(capsys, beir, es_url, index_name)
    out_run = tmp_path / "scm.run"
    search = ["search", "--model", beir["model"], "--index", index_name, "--es-url", es_url]
    code, out, err = run(capsys, *search, "--queries", beir["queries"], "--run", out_run, "--k", 3)
    assert code == EXIT_OK, err
    assert out == ""
    # only the two documents with a query word or its synonym match: 2 hits of 3 a query
    assert f"-- 4 queries, 8 hits (0 queries without any) written to {out_run}" in err
    rows = [line.split() for line in out_run.read_text().splitlines()]
    assert len(rows) == 8
    assert all(row[1] == "Q0" and row[5] == "exact" for row in rows)
    top2 = {(row[0], row[2]) for row in rows if row[3] in ("1", "2")}
    assert top2 == {(q, d) for q, ds in RELEVANT.items() for d in ds}
    index = SCMIndex(es_client, index_name, SoftCosineModel.load(beir["model"]))
    for qid, text in TOPICS.items():
        expected = {hit.id: hit.score for hit in index.search(text, k=3).hits}
        mine = [row for row in rows if row[0] == qid]
        assert {row[2]: float(row[4]) for row in mine} == pytest.approx(expected, rel=1e-9)
        assert [int(row[3]) for row in mine] == [1, 2]
        scores = [float(row[4]) for row in mine]
        assert scores == sorted(scores, reverse=True)

    tsv = tmp_path / "topics.tsv"
    tsv.write_text("a\tcar\nb\tzzz unknown words\n")
    hybrid_run = tmp_path / "hybrid.run"
    code, _, err = run(
        capsys, *search, "--queries", tsv, "--run", hybrid_run, "--mode", "hybrid",
        "--tag", "my-run", "--k", 2,
    )  # fmt: skip
    assert code == EXIT_OK, err
    rows = [line.split() for line in hybrid_run.read_text().splitlines()]
    assert {row[0] for row in rows} == {"a"}
    assert {row[5] for row in rows} == {"my-run"}
    assert "(1 queries without any)" in err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--queries", "q.tsv", "obama"], "give one QUERY or --queries FILE, not both"),
        ([], "give one QUERY or --queries FILE"),
        (["--run", "x.run", "obama"], "--run and --tag go with --queries FILE"),
        (["--queries", "q.tsv"], "--queries needs --run OUT"),
        (["--queries", "q.tsv", "--run", "x.run", "--json"], "--json is for one QUERY"),
        (["--queries", "q.tsv", "--run", "x.run", "--tag", "two words"], "--tag must be one word"),
    ],
)
def test_search_batch_option_errors_are_one_line(
    capsys, beir, options: list[str], message: str
) -> None:
    code, _, err = run(capsys, "search", "--model", beir["model"], "--index", "x", *options)
    assert code in (1, EXIT_USAGE)
    assert message in one_line_error(err)


@pytest.mark.integration
def test_tune_shows_a_line_per_setting_unless_quiet(capsys, beir, es_url: str) -> None:
    tune = [
        "tune", "--corpus", beir["corpus"], *_judged(beir), "--es-url", es_url, "--folds", "2",
        "--grid", "nonzero_limit=0,10", "--embeddings", beir["vectors"],
    ]  # fmt: skip
    code, _, err = run(capsys, *tune)
    assert code == EXIT_OK, err
    progress = [line for line in err.splitlines() if line.startswith("es-scm: ")]
    assert progress == [
        "es-scm: corpus: setting 1/2: nonzero_limit=0",
        "es-scm: corpus: setting 2/2: nonzero_limit=10",
    ]
    code, _, err = run(capsys, *tune, "--quiet")
    assert code == EXIT_OK, err
    assert err == ""


def _index_beir(capsys, beir, es_url: str, index_name: str) -> None:
    """``es-scm index`` of the BEIR fixture's corpus with its model."""
    code, _, err = run(
        capsys, "index", "--model", beir["model"], "--index", index_name, "--corpus",
        beir["corpus"], "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == EXIT_OK, err
