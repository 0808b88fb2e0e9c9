"""``eval collection`` with BEIR files, a saved model, an existing index and chosen measures;
``search --queries`` (``--run FILE``, ``--run -``, ``--json``); ``tune``'s progress lines. A tiny
collection, a real Elasticsearch.

The answers are known by hand, as in ``test_tune_es.py`` (tests/support.py): each topic is one
word, its two relevant documents are one with the word and one with only its synonym, and the
embeddings make the synonyms similar. Here the files are in BEIR's format (``_id``, ``title``,
``text``; qrels with a header and CRLF), and some query words are in a document's title only:
BM25 finds the document with the word (AP 0.5, P@1 1.0 on every topic) only because titles are
searched, and the SCM finds both first (AP 1.0).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from es_scm.cli import main
from es_scm.cli.errors import EXIT_OK
from tests.support import (
    SYNONYM_BEIR_DOCS,
    SYNONYM_RELEVANT,
    SYNONYM_TOPICS,
    beir_judgements,
    one_error_line,
)


def test_eval_collection_on_beir_files_with_a_saved_model_and_chosen_metrics(
    cli, beir, es_url: str, es_client, tmp_path: Path
) -> None:
    summary, name = tmp_path / "eval.json", "es-scm-test-beir-saved"
    code, out, err = cli(
        "eval", "collection", "--corpus", beir["corpus"], *beir_judgements(beir),
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
        assert set(per_query[method]) == set(SYNONYM_TOPICS)
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
    folder = Path(beir["corpus"]).parent.name  # BEIR's corpus.jsonl: named after its folder
    assert report["collection"] == folder
    assert lines[0] == "| collection | method | MAP | P@1 | nDCG@10 |"
    assert f"| {folder} | BM25 (Elasticsearch) | 50.00 | 100.00 |" in lines[2]
    # every method against BM25, topic by topic: the SCM wins on each of the four (AP 1 vs 0.5)
    (scm,) = [c for c in report["comparisons"]["AP"] if c["method"] == "scm"]
    assert (scm["wins"], scm["ties"], scm["losses"]) == (len(SYNONYM_TOPICS), 0, 0)
    assert scm["delta"] == pytest.approx(0.5)
    # four positive differences: only they and their mirror reach the mean, 2 of 16 assignments
    assert scm["p_randomization"] == pytest.approx(2 / 16, abs=0.02)
    assert f"| {folder} | SCM (Elasticsearch, exact) vs BM25 (Elasticsearch) | AP |" in out
    assert "| 4/0/0 |" in out


def test_eval_collection_evaluates_a_run_file_beside_its_methods(
    cli, beir, es_url: str, tmp_path: Path
) -> None:
    perfect = tmp_path / "oracle.run"  # each topic's two relevant documents first: AP 1
    perfect.write_text(
        "".join(
            f"{q} Q0 {d} {rank} {3 - rank} oracle\n"
            for q, ds in SYNONYM_RELEVANT.items()
            for rank, d in enumerate(ds, start=1)
        )
    )
    summary = tmp_path / "eval.json"
    code, out, err = cli(
        "eval", "collection", "--corpus", beir["corpus"], *beir_judgements(beir),
        "--model", beir["model"], "--metrics", "AP", "--runs", f"best={perfect}",
        "--es-url", es_url, "--json", summary, "--quiet",
    )  # fmt: skip
    assert code == EXIT_OK, err
    report = json.loads(summary.read_text())["collections"][0]
    assert report["methods"]["best"]["AP"] == pytest.approx(1.0)
    (best,) = [c for c in report["comparisons"]["AP"] if c["method"] == "best"]
    assert (best["wins"], best["losses"]) == (len(SYNONYM_TOPICS), 0)
    assert "| best vs BM25 (Elasticsearch) | AP |" in out
    code, _, err = cli(
        "eval", "collection", "--corpus", beir["corpus"], *beir_judgements(beir),
        "--model", beir["model"], "--runs", str(tmp_path / "missing.run"), "--es-url", es_url,
    )  # fmt: skip
    assert code != EXIT_OK
    assert one_error_line(err).endswith(f"no such run file: {tmp_path / 'missing.run'}")


def test_eval_collection_on_an_existing_index(
    cli, beir, es_url: str, es_client, index_name: str, tmp_path: Path
) -> None:
    _index_beir(cli, beir, es_url, index_name)
    summary = tmp_path / "eval.json"
    code, out, err = cli(
        "eval", "collection", *beir_judgements(beir), "--model", beir["model"],
        "--index", index_name, "--es-url", es_url, "--json", summary,
    )  # fmt: skip
    assert code == EXIT_OK, err
    assert es_client.indices.exists(index=index_name)  # not deleted
    assert es_client.count(index=index_name)["count"] == len(SYNONYM_BEIR_DOCS)  # nor indexed again
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
    code, _, err = cli(
        "eval", "collection", *beir_judgements(beir), "--model", other, "--index", index_name,
        "--es-url", es_url, "--quiet",
    )  # fmt: skip
    assert code == 1
    assert "was built with model" in one_error_line(err)
    code, _, err = cli(
        "eval", "collection", *beir_judgements(beir), "--model", beir["model"],
        "--index", f"{index_name}-missing", "--es-url", es_url, "--quiet",
    )  # fmt: skip
    assert code == 1
    assert "does not exist" in one_error_line(err)


def test_search_a_batch_of_queries_into_a_trec_run(
    cli, beir, es_url: str, es_client, index_name: str, tmp_path: Path
) -> None:
    from es_scm.elastic import SCMIndex
    from es_scm.model import SoftCosineModel

    _index_beir(cli, beir, es_url, index_name)
    out_run = tmp_path / "scm.run"
    search = ["search", "--model", beir["model"], "--index", index_name, "--es-url", es_url]
    code, out, err = cli(
        *search, "--mode", "exact", "--queries", beir["queries"], "--run", out_run, "--k", 3
    )
    assert code == EXIT_OK, err
    assert out == ""
    # only the two documents with a query word or its synonym match: 2 hits of 3 a query
    assert f"-- 4 queries, 8 hits (0 queries without any) written to {out_run}" in err
    rows = [line.split() for line in out_run.read_text().splitlines()]
    assert len(rows) == 8
    assert all(row[1] == "Q0" and row[5] == "exact" for row in rows)
    top2 = {(row[0], row[2]) for row in rows if row[3] in ("1", "2")}
    assert top2 == {(q, d) for q, ds in SYNONYM_RELEVANT.items() for d in ds}
    index = SCMIndex(es_client, index_name, SoftCosineModel.load(beir["model"]))
    for qid, text in SYNONYM_TOPICS.items():
        expected = {hit.id: hit.score for hit in index.searcher.search(text, k=3).hits}
        mine = [row for row in rows if row[0] == qid]
        assert {row[2]: float(row[4]) for row in mine} == pytest.approx(expected, rel=1e-9)
        assert [int(row[3]) for row in mine] == [1, 2]
        scores = [float(row[4]) for row in mine]
        assert scores == sorted(scores, reverse=True)

    tsv = tmp_path / "topics.tsv"
    tsv.write_text("a\tcar\nb\tzzz unknown words\n")
    hybrid_run = tmp_path / "hybrid.run"
    code, _, err = cli(
        *search, "--queries", tsv, "--run", hybrid_run, "--mode", "hybrid",
        "--tag", "my-run", "--k", 2,
    )  # fmt: skip
    assert code == EXIT_OK, err
    rows = [line.split() for line in hybrid_run.read_text().splitlines()]
    assert {row[0] for row in rows} == {"a"}
    assert {row[5] for row in rows} == {"my-run"}
    assert "(1 queries without any)" in err


def test_search_a_batch_of_queries_to_standard_output_as_json_or_a_run(
    cli, beir, es_url: str, es_client, index_name: str, tmp_path: Path
) -> None:
    """``--queries FILE --json``: one object a query, its hits as ``search --json`` prints
    them; ``--run -``: the TREC run on standard output, as ``--run FILE`` writes it."""
    from es_scm.elastic import SCMIndex
    from es_scm.model import SoftCosineModel

    _index_beir(cli, beir, es_url, index_name)
    search = ["search", "--model", beir["model"], "--index", index_name, "--es-url", es_url]
    exact = [*search, "--mode", "exact"]
    code, out, err = cli(*exact, "--queries", beir["queries"], "--json", "--k", 3)
    assert code == EXIT_OK, err
    assert "-- 4 queries, 8 hits (0 queries without any), mode exact, " in err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["qid"] for line in lines] == list(SYNONYM_TOPICS)
    for line in lines:
        code, single, err = cli(*exact, "--json", "--k", 3, SYNONYM_TOPICS[line["qid"]])
        assert code == EXIT_OK, err
        assert line["hits"] == [json.loads(hit) for hit in single.splitlines()]
        assert [hit["rank"] for hit in line["hits"]] == [1, 2]

    index = SCMIndex(es_client, index_name, SoftCosineModel.load(beir["model"]))
    qid, text = next(iter(SYNONYM_TOPICS.items()))
    code, out, err = cli(
        *search, "--queries", beir["queries"], "--json", "--explain", "--explain-top", 1,
        "--from", 1, "--k", 1, "--mode", "hybrid",
    )  # fmt: skip
    assert code == EXIT_OK, err
    first = json.loads(out.splitlines()[0])
    expected = index.searcher.hybrid(text, 1, from_=1, explain=True).hits[0]
    assert first["qid"] == qid
    assert first["hits"][0]["rank"] == 2
    assert first["hits"][0]["id"] == expected.id
    assert first["hits"][0]["score"] == expected.score
    assert first["hits"][0]["explanation"] == expected.explanation.top(1).to_dict()

    on_disk = tmp_path / "bm25.run"
    code, _, err = cli(*search, "--queries", beir["queries"], "--mode", "bm25", "--run", on_disk)
    assert code == EXIT_OK, err
    code, out, err = cli(*search, "--queries", beir["queries"], "--mode", "bm25", "--run", "-")
    assert code == EXIT_OK, err
    assert out == on_disk.read_text()
    assert out.split()[5] == "bm25"
    assert not Path("-").exists()
    assert "written to standard output, mode bm25, tag bm25" in err


def test_a_repeated_topic_id_is_an_error_naming_the_file_and_both_lines(
    cli, beir, es_url: str, index_name: str, tmp_path: Path, monkeypatch
) -> None:
    """Two topics under one id: the batch answered the last one only and exited 0 (issue 34,
    item 2). A run and qrels match topics by id, so it is an error, before any search: the
    file, the line, the id and where it was first, for TSV, JSONL and standard input."""
    _index_beir(cli, beir, es_url, index_name)
    search = ["search", "--model", beir["model"], "--index", index_name, "--es-url", es_url]
    tsv = tmp_path / "q.tsv"
    tsv.write_text("a\tcancer\nb\tcar\na\tbrain\n")
    code, out, err = cli(*search, "--queries", tsv, "--run", "-")
    assert (code, out) == (1, "")
    assert one_error_line(err) == (
        f"es-scm: error: {tsv}:3: the topic id 'a' is repeated (first on line 1): runs and qrels "
        "match topics by id, so each topic needs an id of its own"
    )
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text('{"_id": "7", "text": "car"}\n\n{"_id": 7, "text": "cat"}\n')
    code, out, err = cli(*search, "--queries", jsonl, "--json")
    assert (code, out) == (1, "")
    assert f"{jsonl}:3: the topic id '7' is repeated (first on line 1)" in one_error_line(err)
    monkeypatch.setattr("sys.stdin", io.StringIO("x\tcar\nx\tcar\n"))
    code, out, err = cli(*search, "--queries", "-", "--json")
    assert (code, out) == (1, "")
    assert "<stdin>:2: the topic id 'x' is repeated (first on line 1)" in one_error_line(err)


def test_tune_shows_a_line_per_setting_unless_quiet(cli, beir, es_url: str) -> None:
    tune = [
        "tune", "--corpus", beir["corpus"], *beir_judgements(beir), "--es-url", es_url,
        "--folds", "2", "--grid", "nonzero_limit=0,10", "--embeddings", beir["vectors"],
    ]  # fmt: skip
    code, _, err = cli(*tune)
    assert code == EXIT_OK, err
    progress = [line for line in err.splitlines() if line.startswith("es-scm: ")]
    folder = Path(beir["corpus"]).parent.name  # the collection: BEIR's corpus.jsonl's folder
    assert progress == [
        f"es-scm: {folder}: setting 1/2: nonzero_limit=0",
        f"es-scm: {folder}: setting 2/2: nonzero_limit=10",
    ]
    code, _, err = cli(*tune, "--quiet")
    assert code == EXIT_OK, err
    assert err == ""


def _index_beir(cli, beir, es_url: str, index_name: str) -> None:
    """``es-scm index`` of the BEIR fixture's corpus with its model."""
    code, _, err = cli(
        "index", "--model", beir["model"], "--index", index_name, "--corpus",
        beir["corpus"], "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == EXIT_OK, err
