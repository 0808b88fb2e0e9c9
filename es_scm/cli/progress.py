"""Progress on stderr: bars (tqdm, from the ``cli`` extra) and the messages of long commands.

The library reports the progress of its long loops (:mod:`es_scm.progress`); here it is shown:
on a terminal as tqdm bars with the time left (:func:`bar_display`), otherwise as a line every
few seconds, so that a command whose output is piped still says what it does.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from es_scm.extras import require

__all__ = ["bar_display", "progress_bar", "progress_messages"]


def progress_messages(args: argparse.Namespace, logger: str = "es_scm") -> None:
    """Show the progress messages of ``logger`` (INFO) unless ``--quiet``; ``-v`` shows them all.

    Long commands (``eval``, ``tune``) report progress by default; ``-v`` has set every es-scm
    logger to INFO already.
    """
    target = logging.getLogger(logger)
    if getattr(args, "verbose", False):
        target.setLevel(logging.INFO if logger == "es_scm" else logging.NOTSET)
    else:
        target.setLevel(logging.WARNING if getattr(args, "quiet", False) else logging.INFO)


#: Whether this process said already that a bar needs the ``cli`` extra (said once at most).
_bar_hint_given = False


def progress_bar(total: int | None, disable: bool, unit: str = "doc") -> Any:
    """A tqdm progress bar on stderr when stderr is a terminal, else None (nothing to draw on:
    a piped command's progress is its log lines). On a terminal without the ``cli`` extra, one
    line saying which extra draws the bar, once a process, and None."""
    global _bar_hint_given
    if disable or not sys.stderr.isatty():
        return None
    try:
        tqdm = require("tqdm", "progress bars").tqdm
    except ImportError as error:
        if not _bar_hint_given:
            _bar_hint_given = True
            print(f"es-scm: {error} (--no-progress silences this)", file=sys.stderr)
        return None
    return tqdm(total=total, unit=unit, file=sys.stderr)


class _Silent:
    """The display of a progress nobody asked to see."""

    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def bar_display(what: str, total: int | None, unit: str) -> Any:
    """A :mod:`es_scm.progress` display: a tqdm bar on stderr named ``what``, with the time left
    when ``total`` is known; nothing when es-scm's progress messages are off (``--quiet``)."""
    if not logging.getLogger("es_scm").isEnabledFor(logging.INFO):
        return _Silent()
    tqdm = require("tqdm", "progress bars").tqdm
    return tqdm(total=total, desc=what, unit=f" {unit}" if unit else "it", file=sys.stderr)
