"""``eval collection`` and ``search --queries`` option errors, each one line (no server; on a
real Elasticsearch: tests/integration/test_collection_cli_es.py)."""

from __future__ import annotations

import pytest

from es_scm.cli.errors import EXIT_USAGE
from tests.support import beir_judgements, one_error_line


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
    cli, beir, options: list[str], message: str
) -> None:
    code, _, err = cli("eval", "collection", *beir_judgements(beir), *options, "--quiet")
    assert code == EXIT_USAGE
    assert message in one_error_line(err)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--queries", "q.tsv", "obama"], "give one QUERY or --queries FILE, not both"),
        ([], "give one QUERY or --queries FILE"),
        (["--run", "x.run", "obama"], "--run and --tag go with --queries FILE"),
        (["--queries", "q.tsv"], "--queries needs --run OUT (a TREC run file; - for standard"),
        (["--queries", "q.tsv", "--run", "-", "--json"], "--run - and --json both write to"),
        (["--queries", "q.tsv", "--run", "x.run", "--from", "5"], "--from goes with --json"),
        (["--queries", "q.tsv", "--run", "x.run", "--explain"], "--explain goes with --json"),
        (
            ["--queries", "q.tsv", "--json", "--mode", "bm25", "--explain"],
            "--explain explains the SCM: not with --mode bm25",
        ),
        (["--queries", "q.tsv", "--json", "--tag", "mine"], "--tag names a run: it goes with"),
        (["--queries", "q.tsv", "--run", "x.run", "--tag", "two words"], "--tag must be one word"),
    ],
)
def test_search_batch_option_errors_are_one_line(
    cli, beir, options: list[str], message: str
) -> None:
    code, _, err = cli("search", "--model", beir["model"], "--index", "x", *options)
    assert code in (1, EXIT_USAGE)
    assert message in one_error_line(err)
