"""Every results file says how it was made: the provenance block and the files under results/."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from elastic_transport import ConnectionError as TransportConnectionError

from es_scm.cli import main
from es_scm.evaluation import provenance as provenance_module
from es_scm.evaluation.provenance import (
    KEY,
    KEYED_FILE_KEY,
    LIBRARIES,
    REQUIRED,
    git_state,
    provenance,
)
from es_scm.evaluation.semeval import SemEvalReport

REPO = Path(__file__).resolve().parents[2]
RESULTS = sorted((REPO / "results").rglob("*.json"))
COMMIT = re.compile(r"[0-9a-f]{40}")
DEV = "semeval2016-task3/SemEval2016-Task3-CQA-QL-dev.xml"


def block_of(report: Any) -> dict[str, Any] | None:
    """The provenance block of a results file's content, wherever the file keeps it."""
    if not isinstance(report, dict):
        return None
    return report.get(KEY, report.get(KEYED_FILE_KEY))


def assert_complete(block: dict[str, Any] | None) -> None:
    """The block has every required key, with values of the right kind."""
    assert isinstance(block, dict)
    assert set(REQUIRED) <= set(block)
    assert isinstance(block["command"], str)
    assert block["command"]
    assert block["git_commit"] is None or COMMIT.fullmatch(block["git_commit"])
    assert isinstance(block["date"], str)
    assert {"es-scm", "python"} <= set(block["versions"])
    assert block["machine"] is None or isinstance(block["machine"], dict)


# -- the block ---------------------------------------------------------------------------------


def test_the_block_has_every_field():
    block = provenance(["es-scm", "eval", "trec", "--collection", "cranfield"])
    assert_complete(block)
    assert block["command"] == "es-scm eval trec --collection cranfield"
    assert set(block["versions"]) == {"python", "elasticsearch", *LIBRARIES}
    assert block["versions"]["es-scm"] is not None
    assert block["versions"]["elasticsearch"] is None  # no client, no server version
    assert {"cpus", "platform", "memory_gib", "load_average"} <= set(block["machine"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", block["date"])
    assert isinstance(block["uncommitted_changes"], bool)  # the tests run in a checkout
    assert COMMIT.fullmatch(block["git_commit"])


def test_the_command_is_quoted_and_credentials_are_hidden():
    command = ["es-scm", "eval", "--xml", "my file.xml", "--es-url", "https://me:s3cret@host"]
    block = provenance(command, secrets=["s3cret", None])
    assert block["command"] == "es-scm eval --xml 'my file.xml' --es-url https://me:***@host"


def test_the_server_version_when_a_client_answers(monkeypatch):
    monkeypatch.setattr(provenance_module, "cluster_version", lambda client: "9.5.4")
    assert provenance(["x"], client=object())["versions"]["elasticsearch"] == "9.5.4"


def test_a_cluster_gone_away_does_not_lose_the_results(monkeypatch):
    def unreachable(client: Any) -> str:
        raise TransportConnectionError("refused")

    monkeypatch.setattr(provenance_module, "cluster_version", unreachable)
    assert provenance(["x"], client=object())["versions"]["elasticsearch"] is None


def test_no_commit_outside_a_checkout_of_es_scm(tmp_path):
    assert git_state(tmp_path) == (None, None)


def test_the_scripts_record_the_same_block(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    benchlib = importlib.import_module("benchlib")
    block = benchlib.provenance(["scripts/bench_search.py", "--dataset", "cranfield"])
    assert_complete(block)
    assert block["command"] == "python scripts/bench_search.py --dataset cranfield"
    assert set(block["versions"]) == set(provenance(["x"])["versions"])


# -- the package's writers ---------------------------------------------------------------------


def test_semeval_files_carry_the_block(tmp_path):
    report = SemEvalReport({"scm": {"MAP": 1.0}}, {"Q1": {"methods": {}}})
    block = provenance(["es-scm", "eval", "semeval"])
    report.write_json(tmp_path / "dev.json", block)
    report.write_per_question(tmp_path / "per-question.json", block)
    summary = json.loads((tmp_path / "dev.json").read_text())
    assert summary[KEY] == block
    assert summary["methods"] == {"scm": {"MAP": 1.0}}
    details = json.loads((tmp_path / "per-question.json").read_text())
    assert details.pop(KEYED_FILE_KEY) == block
    assert details == {"Q1": {"methods": {}}}


@pytest.mark.data
def test_es_scm_eval_records_its_command_line(shared_data, tmp_path, capsys):
    summary, details = tmp_path / "dev.json", tmp_path / "per-question.json"
    argv = ["eval", "semeval", "--xml", str(shared_data / DEV), "--embeddings", "none"]
    argv += ["--no-es", "--json", str(summary), "--per-question", str(details), "--quiet"]
    assert main(argv) == 0
    capsys.readouterr()
    for written in (json.loads(summary.read_text()), json.loads(details.read_text())):
        block = block_of(written)
        assert_complete(block)
        assert block["command"].startswith("es-scm eval semeval --xml ")
        assert block["command"].endswith(" --quiet")
        assert block["versions"]["elasticsearch"] is None  # --no-es


# -- the files under results/ ------------------------------------------------------------------


def test_results_are_there():
    assert len(RESULTS) >= 40


@pytest.mark.parametrize("path", RESULTS, ids=[str(p.relative_to(REPO)) for p in RESULTS])
def test_every_results_file_says_how_it_was_made(path):
    assert_complete(block_of(json.loads(path.read_text(encoding="utf-8"))))


def test_blocks_of_files_keyed_by_id_stay_out_of_the_ids():
    for path in RESULTS:
        report = json.loads(path.read_text(encoding="utf-8"))
        assert not (KEY in report and KEYED_FILE_KEY in report), path
