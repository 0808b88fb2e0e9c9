"""The ``es-scm`` command line: the parser of every command, and ``main``.

Commands (one module each in :mod:`es_scm.cli`)::

    es-scm es start|stop|status|install   the local single-node Elasticsearch (no Docker)
    es-scm model build                     build a soft cosine model from a corpus
    es-scm model info                      describe a saved model
    es-scm index                           index a corpus into Elasticsearch with a model
                                           (--alias: into a new index, then move the alias)
    es-scm delete                          delete documents from an index by id
    es-scm search                          search an index (hybrid by default, exact SCM, ...)
    es-scm similarity                      the exact SCM of two texts
    es-scm demo                            the whole pipeline on embedded defaults, vs BM25
    es-scm eval semeval|trec               evaluation

Exit codes: 0 success; 1 error (bad input, missing file, unreachable Elasticsearch, model/index
mismatch, index not found, empty query, ...), printed as one line ``es-scm: error: ...``
(``--verbose`` adds the traceback); 2 usage error (bad options); 3 some documents failed to index
(``es-scm index``) or to be deleted (``es-scm delete``), or no local Elasticsearch runs
(``es-scm es status``); 130 interrupted by SIGINT (Ctrl-C), 143 by SIGTERM: both end a command
the same way (:mod:`es_scm.cli.signals`). The command modules are imported once the signal
handlers are in place, so that a signal that comes even while Python loads them ends the command
with a line, not a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import signal
import sys
import traceback
from collections.abc import Iterator
from types import ModuleType
from typing import Any, NoReturn

from es_scm._version import __version__
from es_scm.cli.errors import EXIT_ERROR, EXIT_USAGE, describe
from es_scm.cli.signals import HANDLED, Interrupted, Signals, handled_signals

__all__ = ["build_parser", "main"]


def command_modules() -> tuple[ModuleType, ...]:
    """The module of every command, in the order of ``es-scm --help``."""
    from es_scm.cli import (
        delete,
        demo,
        es,
        evaluate,
        index,
        model,
        search,
        similarity,
        tune,
        vectors,
    )

    return (es, model, index, delete, search, similarity, demo, evaluate, tune, vectors)


def build_parser() -> argparse.ArgumentParser:
    """The ``es-scm`` argument parser with every command."""
    from es_scm.cli.options import Parents, register

    parser = argparse.ArgumentParser(
        prog="es-scm",
        description="Soft Cosine Measure (SCM) search on Elasticsearch.\n\n"
        "exit codes: 0 ok, 1 error, 2 usage, 3 some documents failed to index or delete "
        "(or `es status`: not running), 130 interrupted (SIGINT), 143 terminated (SIGTERM)",
        epilog="example:\n  es-scm demo\n"
        "  es-scm model build --corpus news.jsonl --out news-model\n"
        "  es-scm index --model news-model --index news --corpus news.jsonl\n"
        '  es-scm search --model news-model --index news "president greets the press"\n\n'
        "run `es-scm COMMAND --help` for a command's options",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"es-scm {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show tracebacks and progress messages"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parents = Parents()
    for module in command_modules():
        register(commands, module.COMMAND, parents)
    return parser


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("es-scm: %(message)s"))

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:  # StreamHandler.__init__ sets it
        pass


@contextlib.contextmanager
def _logging_to_stderr(verbose: bool) -> Iterator[None]:
    """es-scm's messages on stderr while a command runs: warnings, and progress with
    ``--verbose``; the logger is left as it was afterwards (``main`` may run in a process that
    goes on, such as a test session or a notebook)."""
    logger = logging.getLogger("es_scm")
    saved = logger.level, logger.propagate
    handler = _StderrHandler()
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    # progress: bars on a terminal (with the cli extra), else a line every few seconds
    from es_scm.cli.progress import bar_display
    from es_scm.progress import displayed_with

    bars = sys.stderr.isatty() and importlib.util.find_spec("tqdm") is not None
    try:
        with displayed_with(bar_display if bars else None):
            yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def main(argv: list[str] | None = None) -> int:
    """Run ``es-scm`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    with handled_signals() as signals:
        try:
            return _parsed_and_run(argv, signals)
        except KeyboardInterrupt as interrupted:  # while Python loaded the commands
            return _interrupted(interrupted, signals, " before the command began: nothing was done")


def _parsed_and_run(argv: list[str] | None, signals: Signals) -> int:
    from es_scm.cli.connection import secrets
    from es_scm.cli.redaction import redacted_stderr

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version, usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    args.command_line = ["es-scm", *(sys.argv[1:] if argv is None else argv)]  # for provenance
    args.signals = signals
    verbose = bool(getattr(args, "verbose", False))
    with _logging_to_stderr(verbose), redacted_stderr(secrets(args)):
        return _run(args, verbose)


def _interrupted(interrupted: KeyboardInterrupt, signals: Signals, when: str = "") -> int:
    """The line and the exit code of a command ended by a signal (130: SIGINT, 143: SIGTERM)."""
    if not isinstance(interrupted, Interrupted):
        interrupted = signals.interruption() or Interrupted(2)
    print(f"es-scm: interrupted ({interrupted}){when}", file=sys.stderr)
    return interrupted.exit_code


def _run(args: argparse.Namespace, verbose: bool) -> int:
    """Run the command of ``args``; an error is one line on stderr (and the traceback if
    ``verbose``)."""
    from es_scm.cli.connection import es_url
    from es_scm.elastic.credentials import redact_url

    try:
        return int(args.handler(args))
    except KeyboardInterrupt as interrupted:  # an ingestion printed its report before
        return _interrupted(interrupted, args.signals)
    except Exception as error:
        url = redact_url(es_url(args)) if hasattr(args, "es_url") else "the cluster"
        # the engine of the client the command made (client_from_args), else Elasticsearch's,
        # the one a client without an answer is made for
        message, code = describe(error, url, getattr(args, "engine_title", "Elasticsearch"))
        if verbose:
            traceback.print_exc()
        elif code == EXIT_ERROR and message.startswith("unexpected"):
            message += " (rerun with --verbose for the traceback)"
        print(f"es-scm: error: {message}", file=sys.stderr)
        return code


def run() -> NoReturn:
    """The process's entry point (the ``es-scm`` script, ``python -m es_scm.cli``): :func:`main`,
    then exit with its code. After a command that a signal ended (130, 143), a further signal is
    ignored while the process exits: otherwise one arriving after ``main`` put the default
    handlers back would kill it during shutdown, after its summary, with another exit status.
    The process skips the imports that its client never uses (:mod:`es_scm.cli.startup`)."""
    from es_scm.cli.startup import skip_unused_transports

    skip_unused_transports()
    code = main()
    if code in (128 + handled for handled in HANDLED):
        for handled in HANDLED:
            signal.signal(handled, signal.SIG_IGN)
    sys.exit(code)


if __name__ == "__main__":
    run()
