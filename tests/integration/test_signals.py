"""SIGINT and SIGTERM end ``es-scm index`` the same way (issue 28, item 4), on a real node.

Each test runs ``es-scm index`` in a process of its own on a real corpus (BEIR SciFact's 5,183
abstracts, ``../shared/data``, three times over under other ids: enough work left after 3,000
documents that the run is still going when the signal comes) and signals it at one point: very
early (1.5 s after it started, while Python loads it), once the index exists, or once documents
are in it. The command must print the summary and a word on the index, exit with 128 + the
signal's number, and the index must hold, 3 s later, what the summary says it holds: nothing is
written after the command returned, and what its requests wrote is counted as indexed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import REPO_ROOT, SCIFACT_COPIES

DOCUMENTS = 5183 * SCIFACT_COPIES  # conftest.py's ``scifact``


def at_seconds(seconds: float) -> Callable[[object, str], bool]:
    started = time.monotonic()
    return lambda client, index: time.monotonic() - started >= seconds


def once_it_exists(client, index: str) -> bool:
    return bool(client.indices.exists(index=index))


def once_it_holds(documents: int) -> Callable[[object, str], bool]:
    def holds(client, index: str) -> bool:
        # a new index answers 503 until its shard is active: not yet
        found = client.options(ignore_status=(404, 503), max_retries=0).count(index=index)
        return found.meta.status == 200 and found["count"] >= documents

    return holds


WHEN = {
    "at 1.5 s": lambda: at_seconds(1.5),
    "once the index exists": lambda: once_it_exists,
    "once 1000 documents are in": lambda: once_it_holds(1000),
    "once 3000 documents are in": lambda: once_it_holds(3000),
}
CASES = [
    ("SIGTERM", "at 1.5 s"),
    ("SIGINT", "at 1.5 s"),
    ("SIGTERM", "once the index exists"),
    ("SIGINT", "once 1000 documents are in"),
    ("SIGTERM", "once 1000 documents are in"),
    ("SIGTERM", "once 3000 documents are in"),
]


def index_then_signal(
    client,
    url: str,
    index: str,
    model_dir: Path,
    corpus: Path,
    signum: int,
    when: str,
    again: float | None = None,
) -> tuple[int, str, str]:
    """``es-scm index`` on ``corpus``, sent ``signum`` when ``when`` says (and ``again`` seconds
    later, if it still runs); its exit code and output."""
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [
        sys.executable, "-m", "es_scm.cli", "index", "--model", str(model_dir), "--index", index,
        "--corpus", str(corpus), "--batch-size", "100", "--es-url", url, "--no-progress",
    ]  # fmt: skip
    ready = WHEN[when]()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment
    )
    try:
        deadline = time.monotonic() + 120
        while not ready(client, index):
            assert process.poll() is None, f"it ended before the signal: {process.communicate()}"
            assert time.monotonic() < deadline, "the signal's moment never came"
            time.sleep(0.05)
        process.send_signal(signum)
        if again is not None:
            time.sleep(again)
            if process.poll() is None:
                process.send_signal(signum)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, out, err


@pytest.mark.slow
@pytest.mark.parametrize(("name", "when"), CASES, ids=[f"{n} {w}" for n, w in CASES])
def test_a_signal_ends_the_run_with_its_summary_and_nothing_after(
    es_client, es_url, index_name, scifact, scifact_model_dir, name, when
):
    signum = getattr(signal, name)
    code, out, err = index_then_signal(
        es_client, es_url, index_name, scifact_model_dir, scifact, signum, when
    )
    assert code == 128 + signum, (out, err)
    assert f"es-scm: interrupted ({name})" in err
    assert "Traceback" not in err
    holds = re.search(r"the index holds (\d+) documents", out)
    time.sleep(3)  # anything written after the command returned would show now
    found = es_client.options(ignore_status=404).count(index=index_name)
    count = found["count"] if found.meta.status == 200 else None
    if holds is None:  # the signal came before any document was sent
        assert "nothing was" in out + err, (out, err)
        assert count in (None, 0)
        assert when in ("at 1.5 s", "once the index exists"), (out, err)
        return
    summary = re.search(r"indexed (\d+) \(created (\d+), updated 0\), failed 0, skipped \d+", out)
    assert summary is not None, out
    indexed = int(summary.group(1))
    assert int(summary.group(2)) == indexed  # a new index: every document written was created
    assert int(holds.group(1)) == indexed == count  # what its requests wrote is counted
    assert indexed < DOCUMENTS  # the run was stopped
    assert f"kept the index '{index_name}' that this run created" in err
    if when.startswith("once 1000"):
        assert indexed >= 1000


@pytest.mark.slow
def test_a_second_signal_stops_the_waiting_and_says_what_may_still_be_written(
    es_client, es_url, index_name, scifact, scifact_model_dir
):
    code, out, err = index_then_signal(
        es_client, es_url, index_name, scifact_model_dir, scifact, signal.SIGTERM,
        "once 1000 documents are in", again=0.05,
    )  # fmt: skip
    assert code == 143, (out, err)
    assert "es-scm: interrupted (SIGTERM)" in err
    summary = re.search(r"indexed (\d+) \(created \d+, updated 0\), failed 0, skipped (\d+)", out)
    assert summary is not None, (out, err)
    indexed = int(summary.group(1))
    time.sleep(3)
    count = es_client.count(index=index_name)["count"]
    abandoned = re.search(r"up to (\d+) document\(s\) counted as skipped may still be written", err)
    if abandoned is None:  # the requests had returned before the second signal
        assert count == indexed
    else:  # what the abandoned requests wrote came after, and no more than the summary warns
        assert indexed <= count <= indexed + int(abandoned.group(1))
        assert int(abandoned.group(1)) <= int(summary.group(2))
