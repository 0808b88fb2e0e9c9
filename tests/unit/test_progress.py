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
