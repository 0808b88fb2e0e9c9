"""The ``es-scm`` command line, in process: options, help, model building, and every user-error
path's exit code and one-line message (no server; against Elasticsearch: test_cli_es.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from es_scm.cli.errors import EXIT_ERROR, EXIT_OK, EXIT_USAGE
from tests.support import NEWS, assert_one_line_error

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
def test_help_has_an_example(cli, command: list[str]) -> None:
    code, out, _ = cli(*command, "--help")
    assert code == EXIT_OK
    assert "usage: es-scm" in out
    assert "example:" in out


def test_model_build_help_follows_the_defaults(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    import es_scm.cli.options as options
    from es_scm.options.defaults import SIMILARITY_DEFAULTS

    changed = {"neighbors": "vocabulary", "column_order": "id", "symmetric": False}
    monkeypatch.setattr(options, "DEFAULT_WEIGHTING", "raw-natural")
    monkeypatch.setattr(
        options, "SIMILARITY_DEFAULTS", dataclasses.replace(SIMILARITY_DEFAULTS, **changed)
    )
    code, out, _ = cli("model", "build", "--help")
    assert code == EXIT_OK
    text = " ".join(out.split())
    assert "weighting (default raw-natural)" in text
    assert "raw-natural (default)" not in text
    assert "(default vocabulary)" in text
    assert "(default id)" in text
    assert "make S symmetric (default: no)" in text


def test_version(cli) -> None:
    from es_scm import __version__

    code, out, _ = cli("--version")
    assert code == EXIT_OK
    assert __version__ in out


def test_model_build_and_info(cli, news_model_dir: Path) -> None:
    from es_scm.model import SoftCosineModel

    model = SoftCosineModel.load(news_model_dir)
    assert model.similarity("obama", "president") > 0.5  # from the embeddings file
    code, out, _ = cli("model", "info", news_model_dir)
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
    from es_scm.model.text import TermWeighting
    from es_scm.options.defaults import DEFAULT_WEIGHTING, SIMILARITY_DEFAULTS

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


def test_model_build_refuses_to_overwrite(cli, news_model_dir: Path, news_corpus: Path) -> None:
    code, _, err = cli(
        "model", "build", "--corpus", news_corpus, "--out", news_model_dir, "--embeddings", "none"
    )
    assert code == EXIT_ERROR
    assert_one_line_error(err, "--force")


def test_model_build_options(cli, news_corpus: Path, tmp_path: Path):
    from es_scm.model import SoftCosineModel
    from es_scm.model.text import TermWeighting

    code, _, err = cli(
        "model", "build", "--corpus", news_corpus, "--out", tmp_path / "m",
        "--embeddings", "none", "--levenshtein", "--weighting", "bm25:k1=0.9,b=0.4",
        "--query-weighting", "binary-none", "--max-terms", "10",
    )  # fmt: skip
    assert code == EXIT_OK, err
    model = SoftCosineModel.load(tmp_path / "m")
    assert len(model.terms) == 10
    assert model.document_weighting == TermWeighting.bm25(k1=0.9, b=0.4)
    assert model.query_weighting == TermWeighting(tf="binary", idf="none")
    code, _, err = cli(
        "model", "build", "--corpus", news_corpus, "--out", tmp_path / "n",
        "--weighting", "fancy-idf",
    )  # fmt: skip
    assert code == EXIT_USAGE
    assert "bad weighting" in err


def test_model_build_n_jobs(cli, news_corpus: Path, tmp_path: Path):
    from es_scm.model import SoftCosineModel

    ids = []
    for jobs in ("1", "2"):
        code, _, err = cli(
            "model", "build", "--corpus", news_corpus, "--out", tmp_path / jobs,
            "--embeddings", "none", "--levenshtein", "--n-jobs", jobs,
        )  # fmt: skip
        assert code == EXIT_OK, err
        ids.append(SoftCosineModel.load(tmp_path / jobs).model_id)
    assert ids[0] == ids[1]  # worker processes count the same vocabulary
    code, _, err = cli(
        "model", "build", "--corpus", news_corpus, "--out", tmp_path / "0", "--n-jobs", "0"
    )
    assert code == EXIT_USAGE
    assert "--n-jobs" in err
    assert "'0'" in err


def test_similarity(cli, news_model_dir: Path) -> None:
    from es_scm.model import SoftCosineModel

    a, b = NEWS[1]["text"], NEWS[0]["text"]
    code, out, _ = cli("similarity", "--model", news_model_dir, a, b)
    assert code == EXIT_OK
    assert float(out) == SoftCosineModel.load(news_model_dir).similarity(a, b)
    assert 0.0 < float(out) < 1.0
    code, out, err = cli("similarity", "--model", news_model_dir, "zzz", b)
    assert code == EXIT_OK
    assert float(out) == 0.0
    assert "TEXT_A has no vocabulary term" in err


# -- user errors without Elasticsearch ---------------------------------------------------------


def test_usage_error_exits_2(cli) -> None:
    code, _, err = cli("search", "--index", "x", "query")
    assert code == EXIT_USAGE
    assert "--model" in err


def test_missing_corpus(cli, tmp_path: Path) -> None:
    code, _, err = cli(
        "model", "build", "--corpus", tmp_path / "nope.jsonl", "--out", tmp_path / "m"
    )
    assert code == EXIT_ERROR
    assert_one_line_error(err, "nope.jsonl: no such file or directory")


def test_bad_corpus(cli, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "1", "text": "fine"}\n{oops\n', encoding="utf-8")
    code, _, err = cli(
        "model", "build", "--corpus", path, "--out", tmp_path / "m", "--embeddings", "none"
    )
    assert code == EXIT_ERROR
    assert_one_line_error(err, "bad.jsonl, line 2: invalid JSON")


def test_verbose_shows_the_traceback(cli, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "1"}\n', encoding="utf-8")
    code, _, err = cli(
        "model", "build", "--corpus", path, "--out", tmp_path / "m",
        "--embeddings", "none", "--verbose",
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert "Traceback" in err
    assert "es-scm: error: " in err
    assert "missing text field 'text'" in err


def test_missing_model(cli, tmp_path: Path) -> None:
    code, _, err = cli("similarity", "--model", tmp_path / "none", "a", "b")
    assert code == EXIT_ERROR
    assert_one_line_error(err, "model directory not found")


def test_missing_embeddings_file(cli, news_corpus: Path, tmp_path: Path):
    code, _, err = cli(
        "model", "build", "--corpus", news_corpus, "--out", tmp_path / "m",
        "--embeddings", tmp_path / "vectors.bin",
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert_one_line_error(err, "embeddings file not found")


def test_empty_query(cli, news_model_dir: Path) -> None:
    code, _, err = cli("search", "--model", news_model_dir, "--index", "x", "  ")
    assert code == EXIT_ERROR
    assert_one_line_error(err, "empty query")


def test_unreachable_elasticsearch(cli, news_model_dir: Path) -> None:
    code, _, err = cli(
        "search", "--model", news_model_dir, "--index", "x",
        "--es-url", "http://127.0.0.1:1", "obama",
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert_one_line_error(err, "cannot reach Elasticsearch at http://127.0.0.1:1")


def test_an_unreachable_cluster_is_named_by_the_engine_in_use(cli, news_model_dir: Path) -> None:
    """It said "cannot reach Elasticsearch" with --engine opensearch too (issue 42, item 4)."""
    for engine, title in (("opensearch", "OpenSearch"), ("elasticsearch", "Elasticsearch")):
        code, _, err = cli(
            "search", "--model", news_model_dir, "--index", "x",
            "--es-url", "http://127.0.0.1:1", "--engine", engine, "obama",
        )  # fmt: skip
        assert code == EXIT_ERROR
        assert_one_line_error(
            err, f"cannot reach {title} at http://127.0.0.1:1 (connection refused); start one"
        )


def test_bad_url(cli, news_model_dir: Path, news_corpus: Path) -> None:
    code, _, err = cli(
        "index", "--model", news_model_dir, "--index", "x", "--corpus", news_corpus,
        "--es-url", "localhost:9200",
    )  # fmt: skip
    assert code == EXIT_ERROR
    assert_one_line_error(err, "must start with http:// or https://")


def test_the_tls_error_line_has_balanced_parentheses():
    """The client nests OpenSSL's reason in its errors' representations; the line took the reason
    with their closing parentheses (``… (_ssl.c:1010)))``; issue 34)."""
    import ssl

    from elastic_transport import TlsError

    from es_scm.cli.errors import describe
    from es_scm.engines import balanced

    reason = (
        "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in "
        "certificate chain (_ssl.c:1010)"
    )
    cause = ssl.SSLCertVerificationError(1, reason)
    error = TlsError(f"TLS error caused by: SSLError({cause})", errors=(cause,))
    message, _ = describe(error, "https://localhost:9200")
    assert message.startswith(
        "TLS certificate verification failed for https://localhost:9200 (certificate verify "
        "failed: self-signed certificate in certificate chain); pass the cluster's CA"
    )
    assert balanced("a (b) c) d (e f") == "a (b) c d"


def test_json_output_is_strict_json_and_names_a_number_it_cannot_hold():
    """`search --json` printed `"score": NaN`, which no JSON reader parses (issue 42, item 1):
    each line is now strict JSON, and a number that is not finite is an error naming it."""
    import json
    import math

    from es_scm.cli.errors import CLIError
    from es_scm.cli.search import json_line

    line = json_line({"rank": 1, "id": "d1", "score": 0.5, "components": {"bm25": 2.0}})
    assert json.loads(line) == {"rank": 1, "id": "d1", "score": 0.5, "components": {"bm25": 2.0}}
    with pytest.raises(CLIError, match=r"score of the hit ranked 1 \('d1'\) is NaN"):
        json_line({"rank": 1, "id": "d1", "score": math.nan})
    batch = {"qid": "q7", "hits": [{"rank": 1, "score": 1.0}, {"score": -math.inf}]}
    with pytest.raises(CLIError, match=r"hits\[1\]\.score of query 'q7' is -Infinity"):
        json_line(batch)
