"""Progress of long loops (es_scm.progress): lines for a pipe, a display for a terminal."""

from __future__ import annotations

import logging

from es_scm.progress import Progress, displayed_with, tracked


def test_lines_say_how_far_and_how_long_is_left(caplog):
    logger = logging.getLogger("es_scm.test_progress")
    with caplog.at_level(logging.INFO, logger="es_scm.test_progress"):
        progress = Progress(logger, "S", total=4, unit="terms", interval=0.0)
        for _ in range(4):
            progress.update()
        progress.close()
        progress.close()  # once
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0].startswith("S: 1/4 terms (25%), ")
    assert lines[0].endswith("s left")
    assert lines[3].startswith("S: 4/4 terms (100%)")
    assert lines[-1].startswith("S: 4 terms in ")
    assert len(lines) == 5


def test_without_a_total_the_lines_give_the_rate(caplog):
    logger = logging.getLogger("es_scm.test_progress")
    with caplog.at_level(logging.INFO, logger="es_scm.test_progress"):
        items = list(
            tracked(range(3), Progress(logger, "vocabulary", unit="documents", interval=0))
        )
    assert items == [0, 1, 2]
    lines = [record.getMessage() for record in caplog.records]
    assert lines[0].startswith("vocabulary: 1 documents (")
    assert lines[0].endswith("/s)")
    assert lines[-1].startswith("vocabulary: 3 documents in ")


def test_a_short_loop_says_nothing(caplog):
    logger = logging.getLogger("es_scm.test_progress")
    with (
        caplog.at_level(logging.INFO, logger="es_scm.test_progress"),
        Progress(logger, "quick", total=2) as progress,
    ):
        progress.update(2)
    assert caplog.records == []


class _Recorder:
    def __init__(self, what: str, total: int | None, unit: str) -> None:
        self.opened = (what, total, unit)
        self.steps: list[int] = []
        self.closed = False

    def update(self, n: int) -> None:
        self.steps.append(n)

    def close(self) -> None:
        self.closed = True


def test_a_display_replaces_the_lines(caplog):
    made: list[_Recorder] = []

    def factory(what: str, total: int | None, unit: str) -> _Recorder:
        made.append(_Recorder(what, total, unit))
        return made[-1]

    logger = logging.getLogger("es_scm.test_progress")
    with caplog.at_level(logging.INFO, logger="es_scm.test_progress"), displayed_with(factory):
        list(tracked("abc", Progress(logger, "queries", total=3, unit="queries", interval=0)))
    assert caplog.records == []
    (display,) = made
    assert display.opened == ("queries", 3, "queries")
    assert display.steps == [1, 1, 1]
    assert display.closed
    # outside the block, lines again
    with caplog.at_level(logging.INFO, logger="es_scm.test_progress"):
        Progress(logger, "after", total=1, interval=0).update()
    assert caplog.records[0].getMessage().startswith("after: 1/1")


# -- the command line's bars without the cli extra (issue 41) -----------------------------------

#: Two progress bars asked for in one process without tqdm (None in sys.modules: not installed).
WITHOUT_TQDM = """
import sys
sys.modules["tqdm"] = None
from es_scm.cli.progress import progress_bar
assert [progress_bar(10, False), progress_bar(10, False, unit="query")] == [None, None]
print("done")
"""


def _stderr_of(script: str, terminal: bool) -> str:
    """What ``script`` writes to stderr: a pipe, or the terminal of a pseudo-terminal pair."""
    import os
    import pty
    import subprocess
    import sys

    if not terminal:
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        )
        assert done.stdout == "done\n"
        return done.stderr
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=follower, check=True
        )
        os.close(follower)
        follower = -1
        written = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's writer is gone: all was read
                break
            if not chunk:
                break
            written += chunk
        assert done.stdout == b"done\n"
        return written.decode()
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)


def test_without_a_terminal_no_bar_is_missed_and_nothing_is_said():
    assert _stderr_of(WITHOUT_TQDM, terminal=False) == ""


def test_on_a_terminal_without_tqdm_one_hint_names_the_extra():
    lines = _stderr_of(WITHOUT_TQDM, terminal=True).splitlines()
    assert lines == [
        "es-scm: progress bars needs tqdm: pip install 'es-scm[cli]' (--no-progress silences this)"
    ]
