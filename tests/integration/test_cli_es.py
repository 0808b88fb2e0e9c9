"""The ``es-scm`` command line, in process: build → index → search against real Elasticsearch
(the options and user errors without a server: tests/unit/test_cli.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from es_scm.cli import main
from es_scm.cli.errors import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE
from tests.support import NEWS, assert_one_line_error

# -- end to end against Elasticsearch ----------------------------------------------------------


def test_build_index_search_matches_the_python_api(
    cli,
    es_client,
    es_url: str,
    index_name: str,
    news_model_dir: Path,
    news_corpus: Path,
) -> None:
    from es_scm.elastic import SCMIndex
    from es_scm.model import BruteForceSearch, SoftCosineModel

    code, out, err = cli(
        "index", "--model", news_model_dir, "--index", index_name, "--corpus", news_corpus,
        "--es-url", es_url, "--batch-size", "2", "--concurrency", "3", "--optimize",
    )  # fmt: skip
    assert code == EXIT_OK, err
    assert "indexed 6 (created 6, updated 0), failed 0, skipped 0, duplicates 0, empty 0" in out
    assert "the index holds 6 documents" in out
    assert f"merged {index_name} into one segment" in out
    assert len(es_client.cat.segments(index=index_name, format="json")) == 1

    query = "Obama speaks to reporters"
    model = SoftCosineModel.load(news_model_dir)
    index = SCMIndex(es_client, index_name, model)
    for mode in ("exact", "native"):
        code, out, err = cli(
            "search", "--model", news_model_dir, "--index", index_name, "--es-url", es_url,
            "--k", "4", "--mode", mode, "--json", *query.split(),
        )  # fmt: skip
        assert code == EXIT_OK, err
        hits = [json.loads(line) for line in out.splitlines()]
        expected = getattr(index.searcher, {"exact": "search"}.get(mode, mode))(query, k=4)
        assert [h["id"] for h in hits] == expected.ids()
        assert [h["score"] for h in hits] == [hit.score for hit in expected.hits]
        assert [h["rank"] for h in hits] == [1, 2, 3, 4]
        assert {"text", "native_score"} <= set(hits[0])
    brute = BruteForceSearch(model, [d["id"] for d in NEWS], [d["text"] for d in NEWS])
    reference = brute.search(query, k=4)
    code, out, _ = cli(
        "search", "--model", news_model_dir, "--index", index_name, "--es-url", es_url,
        "--mode", "exact", "--k", "2", "--json", query,
    )  # fmt: skip
    assert [json.loads(line)["id"] for line in out.splitlines()] == [i for i, _ in reference[:2]]
    scores = [json.loads(line)["score"] for line in out.splitlines()]
    np.testing.assert_allclose(scores, [score for _, score in reference[:2]], rtol=1e-12)

    # --from pages, and the table shows rank, id, score and text
    code, out, _ = cli(
        "search", "--model", news_model_dir, "--index", index_name, "--es-url", es_url,
        "--mode", "exact", "--k", "1", "--from", "1", query,
    )  # fmt: skip
    assert code == EXIT_OK
    header, row = out.splitlines()
    assert header.split() == ["rank", "id", "score", "text"]
    assert row.split()[:2] == ["2", reference[1][0]]

    # a rerun overwrites (ids are idempotent)
    code, out, _ = cli(
        "index", "--model", news_model_dir, "--index", index_name, "--corpus", news_corpus,
        "--es-url", es_url,
    )  # fmt: skip
    assert code == EXIT_OK
    assert "existing index" in out
    assert es_client.count(index=index_name)["count"] == len(NEWS)


def test_an_index_run_without_a_terminal_or_tqdm_says_nothing_of_bars(
    es_client, es_url: str, index_name: str, news_model_dir: Path, news_corpus: Path
) -> None:
    """An `es-scm index` whose stderr is no terminal, without the cli extra (tqdm), indexes and
    reports as always and never says that progress bars need tqdm: there was no bar to draw
    (issue 41: it said so on every run)."""
    without_tqdm = (
        "import sys; sys.modules['tqdm'] = None; "  # as if the cli extra were not installed
        "from es_scm.cli.main import run; run()"
    )
    argv = ["index", "--model", news_model_dir, "--index", index_name, "--corpus", news_corpus]
    done = subprocess.run(
        [sys.executable, "-c", without_tqdm, *map(str, argv), "--es-url", es_url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == EXIT_OK, done.stderr
    assert f"indexed {len(NEWS)} (created {len(NEWS)}," in done.stdout
    assert "tqdm" not in done.stderr
    assert "progress bars" not in done.stderr
    assert es_client.count(index=index_name)["count"] == len(NEWS)


#: What an es-scm index or search that encodes nothing never imports: an encoder, the evaluation,
#: the asyncio and optional transports (es_scm.cli.startup), OpenSearch's client against
#: Elasticsearch, the frameworks, the runner (the URL is given). They need the client, numpy
#: and scipy, and es_scm.encoder's own light module (the model's sources name it).
NOT_IMPORTED_BY_INDEX_OR_SEARCH = (
    "torch",
    "sentence_transformers",
    "transformers",
    "tokenizers",
    "safetensors",
    "gensim",
    "ir_measures",
    "matplotlib",
    "aiohttp",
    "httpx",
    "requests",
    "pyarrow",
    "pandas",
    "opensearchpy",
    "langchain_core",
    "llama_index",
    "es_scm.tools.node",
    "es_scm.evaluation.significance",
)
#: Runs the es-scm script's entry point with argv[1:], and writes the modules above that were
#: imported to $ES_SCM_TEST_IMPORTED as it exits.
RUN_AND_LIST = """
import atexit, json, os, sys
unwanted = json.loads(os.environ["ES_SCM_TEST_UNWANTED"])
def listed():
    found = sorted(m for m in sys.modules if m in unwanted or m.split(".")[0] in unwanted)
    with open(os.environ["ES_SCM_TEST_IMPORTED"], "w") as out:
        json.dump(found, out)
atexit.register(listed)
from es_scm.cli.main import run
run()
"""


def test_index_and_search_import_only_what_they_use(
    es_url: str, index_name: str, news_model_dir: Path, news_corpus: Path, tmp_path: Path
) -> None:
    """A real `es-scm index` and `es-scm search` (hybrid, the default, and exact) as the console
    script runs them: none imports an encoder, the evaluation or an unused transport (issue
    41: every search took 11 to 15 s, 0.4 to 0.7 s of it the search)."""
    imported = tmp_path / "imported.json"
    env = {
        **os.environ,
        "ES_SCM_TEST_IMPORTED": str(imported),
        "ES_SCM_TEST_UNWANTED": json.dumps(NOT_IMPORTED_BY_INDEX_OR_SEARCH),
    }
    common = ["--model", str(news_model_dir), "--index", index_name, "--es-url", es_url]
    for argv in (
        ["index", *common, "--corpus", str(news_corpus)],
        ["search", *common, "--json", "president greets the press"],
        ["search", *common, "--mode", "exact", "president greets the press"],
    ):
        done = subprocess.run(
            [sys.executable, "-c", RUN_AND_LIST, *argv],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == EXIT_OK, done.stderr
        assert done.stdout
        assert json.loads(imported.read_text()) == [], argv


def test_index_not_found(cli, es_url: str, index_name: str, news_model_dir: Path) -> None:
    code, _, err = cli(
        "search", "--model", news_model_dir, "--index", index_name, "--es-url", es_url, "obama"
    )
    assert code == EXIT_ERROR
    assert_one_line_error(err, f"index '{index_name}' does not exist")


def test_model_index_mismatch(
    cli, es_url: str, index_name: str, news_model_dir: Path, news_corpus: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    assert main(["model", "build", "--corpus", str(news_corpus), "--out", str(other),
                 "--embeddings", "none"]) == EXIT_OK  # fmt: skip
    code, _, err = cli(
        "index", "--model", news_model_dir, "--index", index_name, "--corpus", news_corpus,
        "--es-url", es_url,
    )  # fmt: skip
    assert code == EXIT_OK, err
    for argv in (
        ["search", "--model", other, "--index", index_name, "--es-url", es_url, "obama"],
        [
            "index",
            "--model",
            other,
            "--index",
            index_name,
            "--corpus",
            news_corpus,
            "--es-url",
            es_url,
        ],
    ):
        code, _, err = cli(*argv)
        assert code == EXIT_ERROR
        assert_one_line_error(err, "was built with model")


def test_partial_failure_exits_3(
    cli, es_url: str, index_name: str, news_model_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "mixed.jsonl"
    rows = [
        {"id": "ok1", "text": "Obama speaks", "year": 2008},
        {"id": "bad", "text": "The press in Chicago", "year": "not a number"},
        {"id": "ok2", "text": "zzz qqq", "year": 2012},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    fields = tmp_path / "fields.json"  # default metadata takes any value: type "year" explicitly
    fields.write_text('{"year": {"type": "integer"}}', encoding="utf-8")
    code, out, err = cli(
        "index", "--model", news_model_dir, "--index", index_name, "--corpus", path,
        "--metadata-mapping", fields, "--es-url", es_url,
    )  # fmt: skip
    assert code == EXIT_PARTIAL
    assert "indexed 2 (created 2, updated 0), failed 1, skipped 0, duplicates 0, empty 1" in out
    assert "ok2" in out  # the empty document is named
    assert "bad: HTTP 400" in err
    assert "Traceback" not in err


def test_bad_corpus_midway_while_indexing(
    cli, es_url: str, index_name: str, news_model_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text('{"id": "1", "text": "Obama"}\n{"id": "2"}\n', encoding="utf-8")
    code, _, err = cli(
        "index", "--model", news_model_dir, "--index", index_name, "--corpus", path,
        "--es-url", es_url,
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert_one_line_error(err, "broken.jsonl, line 2: missing text field 'text'")


def test_search_filters_and_hybrid_mode(
    cli, es_url: str, index_name: str, news_model_dir: Path, news_corpus: Path
) -> None:
    code, _, err = cli(
        "index", "--model", news_model_dir, "--index", index_name, "--corpus", news_corpus,
        "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == EXIT_OK, err
    for option in ("topic=culture", '{"term": {"metadata.topic": "culture"}}'):
        code, out, err = cli(
            "search", "--model", news_model_dir, "--index", index_name, "--es-url", es_url,
            "--filter", option, "--json", "music",
        )  # fmt: skip
        assert code == EXIT_OK, err
        hits = [json.loads(line) for line in out.splitlines()]
        assert hits
        assert {hit["metadata"]["topic"] for hit in hits} == {"culture"}
    code, out, err = cli(
        "search", "--model", news_model_dir, "--index", index_name, "--es-url", es_url,
        "--mode", "hybrid", "--fusion", "linear", "--alpha", "0.3", "--json", "president press",
    )  # fmt: skip
    assert code == EXIT_OK, err
    hits = [json.loads(line) for line in out.splitlines()]
    assert set(hits[0]["components"]) == {"bm25", "scm"}
    code, _, err = cli(
        "search", "--model", news_model_dir, "--index", index_name, "--es-url", es_url,
        "--filter", "{not json", "music",
    )  # fmt: skip
    assert code == EXIT_USAGE
    assert "not valid JSON" in err


def test_search_is_hybrid_by_default_and_exact_one_option_away(
    cli, es_client, es_url: str, index_name: str, news_model_dir: Path, news_corpus: Path
) -> None:
    """Without --mode, `es-scm search` is the hybrid search that README calls the default: the
    hits and scores of ``Searcher.hybrid``, each with its BM25 and SCM legs; ``--mode exact`` is
    ``Searcher.search`` (issue 41)."""
    from es_scm.elastic import SCMIndex
    from es_scm.model import SoftCosineModel

    code, _, err = cli(
        "index", "--model", news_model_dir, "--index", index_name, "--corpus", news_corpus,
        "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == EXIT_OK, err
    index = SCMIndex(es_client, index_name, SoftCosineModel.load(news_model_dir))
    search = ["search", "--model", news_model_dir, "--index", index_name, "--es-url", es_url]
    query = "president speaks to the press"
    for mode, method in ((None, "hybrid"), ("hybrid", "hybrid"), ("exact", "search")):
        options = ["--mode", mode] if mode else []
        code, out, err = cli(*search, *options, "--k", "4", "--json", query)
        assert code == EXIT_OK, err
        hits = [json.loads(line) for line in out.splitlines()]
        expected = getattr(index.searcher, method)(query, 4)
        assert [h["id"] for h in hits] == expected.ids()
        assert [h["score"] for h in hits] == [hit.score for hit in expected.hits]
        if method == "hybrid":
            assert all(set(h["components"]) == {"bm25", "scm"} for h in hits)
        else:
            assert all(h.get("components") is None for h in hits)
    code, _, err = cli(*search, query)
    assert code == EXIT_OK, err
    assert ", mode hybrid, " in err
    code, _, err = cli(*search, "--fusion", "rrf", "--depth", "20", query)  # hybrid's options
    assert code == EXIT_OK, err
    code, _, err = cli(*search, "--mode", "exact", "--fusion", "rrf", query)
    assert code == EXIT_USAGE
    assert_one_line_error(err, "--fusion applies to --mode hybrid only")


def test_search_mode_bm25_is_elasticsearchs_match_query(
    cli, es_client, es_url: str, index_name: str, news_model_dir: Path, news_corpus: Path
) -> None:
    """``--mode bm25`` compares plain BM25 on the same index: the hits and scores of a ``match``
    query on ``text`` sent by hand, filters included; ``--explain`` explains the SCM only."""
    code, _, err = cli(
        "index", "--model", news_model_dir, "--index", index_name, "--corpus", news_corpus,
        "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == EXIT_OK, err
    search = ["search", "--model", news_model_dir, "--index", index_name, "--es-url", es_url]
    query = "president speaks to the press"
    for filters, clause in (
        ([], []),
        (["--filter", "topic=politics"], [{"term": {"metadata.topic": "politics"}}]),
    ):
        code, out, err = cli(*search, "--mode", "bm25", "--k", "3", "--json", *filters, query)
        assert code == EXIT_OK, err
        hits = [json.loads(line) for line in out.splitlines()]
        body = {"bool": {"must": [{"match": {"text": query}}], "filter": clause}}
        by_hand = es_client.search(index=index_name, query=body, size=3)["hits"]["hits"]
        assert by_hand  # the query's words are in the news
        assert [h["id"] for h in hits] == [h["_id"] for h in by_hand]
        assert [h["score"] for h in hits] == pytest.approx([h["_score"] for h in by_hand])
        assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    code, out, err = cli(*search, "--mode", "bm25", query)
    assert code == EXIT_OK, err
    assert "mode bm25" in err
    code, _, err = cli(*search, "--mode", "bm25", "--explain", query)
    assert code == EXIT_USAGE
    assert_one_line_error(err, "--explain explains the SCM: not with --mode bm25")
