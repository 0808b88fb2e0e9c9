"""The ``es-scm`` command line, in process: build → index → search against real Elasticsearch,
and every user-error path's exit code and one-line message."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from es_scm.cli import main
from es_scm.cli.errors import EXIT_ERROR, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE

DOCUMENTS = [
    {"id": "d1", "text": "The president greets the press in Chicago", "topic": "politics"},
    {"id": "d2", "text": "Obama speaks to the media in Illinois", "topic": "politics"},
    {"id": "d3", "text": "The band plays music at the festival", "topic": "culture"},
    {"id": "d4", "text": "Stocks fall sharply on the market", "topic": "business"},
    {"id": "d5", "text": "The orchestra performs a symphony", "topic": "culture"},
    {"id": "d6", "text": "Reporters question the president about the market"},
]
# Hand-made 4-d word vectors: politics, culture, money and place directions.
VECTORS = {
    "president": [1.0, 0.0, 0.1, 0.0],
    "obama": [0.9, 0.0, 0.0, 0.1],
    "press": [0.7, 0.2, 0.0, 0.0],
    "media": [0.7, 0.3, 0.0, 0.0],
    "reporters": [0.6, 0.2, 0.0, 0.0],
    "greets": [0.5, 0.1, 0.0, 0.0],
    "speaks": [0.5, 0.1, 0.1, 0.0],
    "chicago": [0.0, 0.0, 0.0, 1.0],
    "illinois": [0.1, 0.0, 0.0, 0.9],
    "band": [0.0, 1.0, 0.0, 0.0],
    "orchestra": [0.0, 0.9, 0.1, 0.0],
    "music": [0.0, 1.0, 0.0, 0.1],
    "symphony": [0.0, 0.9, 0.0, 0.0],
    "stocks": [0.0, 0.0, 1.0, 0.0],
    "market": [0.1, 0.0, 0.9, 0.0],
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(err: str, fragment: str) -> None:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("es-scm: error: ")]
    assert len(lines) == 1, err
    assert fragment in lines[0], err


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "news.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCUMENTS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def vectors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("vectors") / "vectors.txt"
    lines = [f"{len(VECTORS)} 4"] + [
        word + " " + " ".join(map(str, vector)) for word, vector in VECTORS.items()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def model_dir(corpus: Path, vectors: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model") / "model"
    code = main([
        "model", "build", "--corpus", str(corpus), "--out", str(out), "--embeddings", str(vectors),
        # a six-document corpus: IDF smoothed, every positive cosine kept (squared)
        "--weighting", "log-smooth", "--threshold", "0", "--exponent", "2",
    ])  # fmt: skip
    assert code == EXIT_OK
    return out


COMMANDS = [
    [],
    ["es"],
    ["model"],
    ["model", "build"],
    ["model", "info"],
    ["index"],
    ["search"],
    ["similarity"],
    ["demo"],
    ["eval"],
    ["eval", "collection"],
    ["tune"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "es-scm")
def test_help_has_an_example(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    code, out, _ = run(capsys, *command, "--help")
    assert code == EXIT_OK
    assert "usage: es-scm" in out
    assert "example:" in out


def test_model_build_help_follows_the_defaults(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import es_scm.cli.options as options
    from es_scm.defaults import SIMILARITY_DEFAULTS

    changed = {"neighbors": "vocabulary", "column_order": "id", "symmetric": False}
    monkeypatch.setattr(options, "DEFAULT_WEIGHTING", "raw-natural")
    monkeypatch.setattr(
        options, "SIMILARITY_DEFAULTS", dataclasses.replace(SIMILARITY_DEFAULTS, **changed)
    )
    code, out, _ = run(capsys, "model", "build", "--help")
    assert code == EXIT_OK
    text = " ".join(out.split())
    assert "weighting (default raw-natural)" in text
    assert "raw-natural (default)" not in text
    assert "(default vocabulary)" in text
    assert "(default id)" in text
    assert "make S symmetric (default: no)" in text


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from es_scm import __version__

    code, out, _ = run(capsys, "--version")
    assert code == EXIT_OK
    assert __version__ in out


def test_model_build_and_info(capsys: pytest.CaptureFixture[str], model_dir: Path) -> None:
    from es_scm.model import SoftCosineModel

    model = SoftCosineModel.load(model_dir)
    assert model.similarity("obama", "president") > 0.5  # from the embeddings file
    code, out, _ = run(capsys, "model", "info", model_dir)
    assert code == EXIT_OK
    assert model.model_id in out
    rows = {key: value.strip() for key, value in (line.split("  ", 1) for line in out.splitlines())}
    assert rows["document weighting"] == "log-smooth"
    assert rows["S source"] == "embeddings"
    assert rows["S embeddings.name"].endswith("vectors.txt")
    assert rows["S nonzero_limit"] == "50"  # the default
    assert rows["S exponent"] == "2.0"
    assert rows["S neighbors"] == "terms"
    assert rows["stop words"].startswith(f"{len(model.tokenizer.stop_word_set)} (")


@pytest.mark.parametrize("command", [["model", "build"], ["eval", "trec"], ["eval", "semeval"]])
def test_every_command_has_the_api_defaults(command: list[str]) -> None:
    from es_scm.cli import build_parser
    from es_scm.cli.options import model_options
    from es_scm.defaults import DEFAULT_WEIGHTING, SIMILARITY_DEFAULTS
    from es_scm.model.weighting import TermWeighting

    required = {
        ("model", "build"): ["--corpus", "c", "--out", "o"],
        ("eval", "trec"): ["--collection", "cisi"],
        ("eval", "semeval"): ["--xml", "x"],
    }[tuple(command)]
    args = build_parser().parse_args([*command, *required])
    options = model_options(args)
    defaults = SIMILARITY_DEFAULTS.as_dict()
    assert {key: options[key] for key in defaults} == defaults
    assert options["document_weighting"] == TermWeighting.from_spec(DEFAULT_WEIGHTING)
    assert options["query_weighting"] is None  # the model's rule: as the documents


def test_model_build_refuses_to_overwrite(
    capsys: pytest.CaptureFixture[str], model_dir: Path, corpus: Path
) -> None:
    code, _, err = run(
        capsys, "model", "build", "--corpus", corpus, "--out", model_dir, "--embeddings", "none"
    )
    assert code == EXIT_ERROR
    assert_one_line_error(err, "--force")


def test_model_build_options(capsys: pytest.CaptureFixture[str], corpus: Path, tmp_path: Path):
    from es_scm.model import SoftCosineModel
    from es_scm.model.weighting import TermWeighting

    code, _, err = run(
        capsys, "model", "build", "--corpus", corpus, "--out", tmp_path / "m",
        "--embeddings", "none", "--levenshtein", "--weighting", "bm25:k1=0.9,b=0.4",
        "--query-weighting", "binary-none", "--max-terms", "10",
    )  # fmt: skip
    assert code == EXIT_OK, err
    model = SoftCosineModel.load(tmp_path / "m")
    assert len(model.terms) == 10
    assert model.document_weighting == TermWeighting.bm25(k1=0.9, b=0.4)
    assert model.query_weighting == TermWeighting(tf="binary", idf="none")
    code, _, err = run(
        capsys, "model", "build", "--corpus", corpus, "--out", tmp_path / "n",
        "--weighting", "fancy-idf",
    )  # fmt: skip
    assert code == EXIT_USAGE
    assert "bad weighting" in err


def test_model_build_n_jobs(capsys: pytest.CaptureFixture[str], corpus: Path, tmp_path: Path):
    from es_scm.model import SoftCosineModel

    ids = []
    for jobs in ("1", "2"):
        code, _, err = run(
            capsys, "model", "build", "--corpus", corpus, "--out", tmp_path / jobs,
            "--embeddings", "none", "--levenshtein", "--n-jobs", jobs,
        )  # fmt: skip
        assert code == EXIT_OK, err
        ids.append(SoftCosineModel.load(tmp_path / jobs).model_id)
    assert ids[0] == ids[1]  # worker processes count the same vocabulary
    code, _, err = run(
        capsys, "model", "build", "--corpus", corpus, "--out", tmp_path / "0", "--n-jobs", "0"
    )
    assert code == EXIT_USAGE
    assert "--n-jobs" in err
    assert "'0'" in err


def test_similarity(capsys: pytest.CaptureFixture[str], model_dir: Path) -> None:
    from es_scm.model import SoftCosineModel

    a, b = DOCUMENTS[1]["text"], DOCUMENTS[0]["text"]
    code, out, _ = run(capsys, "similarity", "--model", model_dir, a, b)
    assert code == EXIT_OK
    assert float(out) == SoftCosineModel.load(model_dir).similarity(a, b)
    assert 0.0 < float(out) < 1.0
    code, out, err = run(capsys, "similarity", "--model", model_dir, "zzz", b)
    assert code == EXIT_OK
    assert float(out) == 0.0
    assert "TEXT_A has no vocabulary term" in err


# -- user errors without Elasticsearch ---------------------------------------------------------


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "search", "--index", "x", "query")
    assert code == EXIT_USAGE
    assert "--model" in err


def test_missing_corpus(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(
        capsys, "model", "build", "--corpus", tmp_path / "nope.jsonl", "--out", tmp_path / "m"
    )
    assert code == EXIT_ERROR
    assert_one_line_error(err, "nope.jsonl: no such file or directory")


def test_bad_corpus(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "1", "text": "fine"}\n{oops\n', encoding="utf-8")
    code, _, err = run(
        capsys, "model", "build", "--corpus", path, "--out", tmp_path / "m", "--embeddings", "none"
    )
    assert code == EXIT_ERROR
    assert_one_line_error(err, "bad.jsonl, line 2: invalid JSON")


def test_verbose_shows_the_traceback(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "1"}\n', encoding="utf-8")
    code, _, err = run(
        capsys, "model", "build", "--corpus", path, "--out", tmp_path / "m",
        "--embeddings", "none", "--verbose",
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert "Traceback" in err
    assert "es-scm: error: " in err
    assert "missing text field 'text'" in err


def test_missing_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "similarity", "--model", tmp_path / "none", "a", "b")
    assert code == EXIT_ERROR
    assert_one_line_error(err, "model directory not found")


def test_missing_embeddings_file(capsys: pytest.CaptureFixture[str], corpus: Path, tmp_path: Path):
    code, _, err = run(
        capsys, "model", "build", "--corpus", corpus, "--out", tmp_path / "m",
        "--embeddings", tmp_path / "vectors.bin",
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert_one_line_error(err, "embeddings file not found")


def test_empty_query(capsys: pytest.CaptureFixture[str], model_dir: Path) -> None:
    code, _, err = run(capsys, "search", "--model", model_dir, "--index", "x", "  ")
    assert code == EXIT_ERROR
    assert_one_line_error(err, "empty query")


def test_unreachable_elasticsearch(capsys: pytest.CaptureFixture[str], model_dir: Path) -> None:
    code, _, err = run(
        capsys, "search", "--model", model_dir, "--index", "x",
        "--es-url", "http://127.0.0.1:1", "obama",
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert_one_line_error(err, "cannot reach Elasticsearch at http://127.0.0.1:1")


def test_bad_url(capsys: pytest.CaptureFixture[str], model_dir: Path, corpus: Path) -> None:
    code, _, err = run(
        capsys, "index", "--model", model_dir, "--index", "x", "--corpus", corpus,
        "--es-url", "localhost:9200",
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert_one_line_error(err, "must start with http:// or https://")


# -- end to end against Elasticsearch ----------------------------------------------------------


@pytest.mark.integration
def test_build_index_search_matches_the_python_api(
    capsys: pytest.CaptureFixture[str],
    es_client,
    es_url: str,
    index_name: str,
    model_dir: Path,
    corpus: Path,
) -> None:
    from es_scm.elastic import SCMIndex
    from es_scm.model import BruteForceSearch, SoftCosineModel

    code, out, err = run(
        capsys, "index", "--model", model_dir, "--index", index_name, "--corpus", corpus,
        "--es-url", es_url, "--batch-size", "2", "--concurrency", "3", "--optimize",
    )  # fmt: skip
    assert code == EXIT_OK, err
    assert "indexed 6 (created 6, updated 0), failed 0, skipped 0, duplicates 0, empty 0" in out
    assert "the index holds 6 documents" in out
    assert f"merged {index_name} into one segment" in out
    assert len(es_client.cat.segments(index=index_name, format="json")) == 1

    query = "Obama speaks to reporters"
    model = SoftCosineModel.load(model_dir)
    index = SCMIndex(es_client, index_name, model)
    for mode in ("exact", "native"):
        code, out, err = run(
            capsys, "search", "--model", model_dir, "--index", index_name, "--es-url", es_url,
            "--k", "4", "--mode", mode, "--json", *query.split(),
        )  # fmt: skip
        assert code == EXIT_OK, err
        hits = [json.loads(line) for line in out.splitlines()]
        expected = index.search(query, k=4, mode=mode)
        assert [h["id"] for h in hits] == expected.ids()
        assert [h["score"] for h in hits] == [hit.score for hit in expected.hits]
        assert [h["rank"] for h in hits] == [1, 2, 3, 4]
        assert {"text", "native_score"} <= set(hits[0])
    brute = BruteForceSearch(model, [d["id"] for d in DOCUMENTS], [d["text"] for d in DOCUMENTS])
    reference = brute.search(query, k=4)
    code, out, _ = run(
        capsys, "search", "--model", model_dir, "--index", index_name, "--es-url", es_url,
        "--k", "2", "--json", query,
    )  # fmt: skip
    assert [json.loads(line)["id"] for line in out.splitlines()] == [i for i, _ in reference[:2]]
    scores = [json.loads(line)["score"] for line in out.splitlines()]
    np.testing.assert_allclose(scores, [score for _, score in reference[:2]], rtol=1e-12)

    # --from pages, and the table shows rank, id, score and text
    code, out, _ = run(
        capsys, "search", "--model", model_dir, "--index", index_name, "--es-url", es_url,
        "--k", "1", "--from", "1", query,
    )  # fmt: skip
    assert code == EXIT_OK
    header, row = out.splitlines()
    assert header.split() == ["rank", "id", "score", "text"]
    assert row.split()[:2] == ["2", reference[1][0]]

    # a rerun overwrites (ids are idempotent)
    code, out, _ = run(
        capsys, "index", "--model", model_dir, "--index", index_name, "--corpus", corpus,
        "--es-url", es_url,
    )  # fmt: skip
    assert code == EXIT_OK
    assert "existing index" in out
    assert es_client.count(index=index_name)["count"] == len(DOCUMENTS)


@pytest.mark.integration
def test_index_not_found(capsys, es_url: str, index_name: str, model_dir: Path) -> None:
    code, _, err = run(
        capsys, "search", "--model", model_dir, "--index", index_name, "--es-url", es_url, "obama"
    )
    assert code == EXIT_ERROR
    assert_one_line_error(err, f"index '{index_name}' does not exist")


@pytest.mark.integration
def test_model_index_mismatch(
    capsys, es_url: str, index_name: str, model_dir: Path, corpus: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    assert main(["model", "build", "--corpus", str(corpus), "--out", str(other),
                 "--embeddings", "none"]) == EXIT_OK  # fmt: skip
    code, _, err = run(
        capsys, "index", "--model", model_dir, "--index", index_name, "--corpus", corpus,
        "--es-url", es_url,
    )  # fmt: skip
    assert code == EXIT_OK, err
    for argv in (
        ["search", "--model", other, "--index", index_name, "--es-url", es_url, "obama"],
        ["index", "--model", other, "--index", index_name, "--corpus", corpus, "--es-url", es_url],
    ):
        code, _, err = run(capsys, *argv)
        assert code == EXIT_ERROR
        assert_one_line_error(err, "was built with model")


@pytest.mark.integration
def test_partial_failure_exits_3(
    capsys, es_url: str, index_name: str, model_dir: Path, tmp_path: Path
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
    code, out, err = run(
        capsys, "index", "--model", model_dir, "--index", index_name, "--corpus", path,
        "--metadata-mapping", fields, "--es-url", es_url,
    )  # fmt: skip
    assert code == EXIT_PARTIAL
    assert "indexed 2 (created 2, updated 0), failed 1, skipped 0, duplicates 0, empty 1" in out
    assert "ok2" in out  # the empty document is named
    assert "bad: HTTP 400" in err
    assert "Traceback" not in err


@pytest.mark.integration
def test_bad_corpus_midway_while_indexing(
    capsys, es_url: str, index_name: str, model_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text('{"id": "1", "text": "Obama"}\n{"id": "2"}\n', encoding="utf-8")
    code, _, err = run(
        capsys, "index", "--model", model_dir, "--index", index_name, "--corpus", path,
        "--es-url", es_url,
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert_one_line_error(err, "broken.jsonl, line 2: missing text field 'text'")


@pytest.mark.integration
def test_search_filters_and_hybrid_mode(
    capsys: pytest.CaptureFixture[str], es_url: str, index_name: str, model_dir: Path, corpus: Path
) -> None:
    code, _, err = run(
        capsys, "index", "--model", model_dir, "--index", index_name, "--corpus", corpus,
        "--es-url", es_url, "--no-progress",
    )  # fmt: skip
    assert code == EXIT_OK, err
    for option in ("topic=culture", '{"term": {"metadata.topic": "culture"}}'):
        code, out, err = run(
            capsys, "search", "--model", model_dir, "--index", index_name, "--es-url", es_url,
            "--filter", option, "--json", "music",
        )  # fmt: skip
        assert code == EXIT_OK, err
        hits = [json.loads(line) for line in out.splitlines()]
        assert hits
        assert {hit["metadata"]["topic"] for hit in hits} == {"culture"}
    code, out, err = run(
        capsys, "search", "--model", model_dir, "--index", index_name, "--es-url", es_url,
        "--mode", "hybrid", "--fusion", "linear", "--alpha", "0.3", "--json", "president press",
    )  # fmt: skip
    assert code == EXIT_OK, err
    hits = [json.loads(line) for line in out.splitlines()]
    assert set(hits[0]["components"]) == {"bm25", "scm"}
    code, _, err = run(
        capsys, "search", "--model", model_dir, "--index", index_name, "--es-url", es_url,
        "--filter", "{not json", "music",
    )  # fmt: skip
    assert code == EXIT_USAGE
    assert "not valid JSON" in err
