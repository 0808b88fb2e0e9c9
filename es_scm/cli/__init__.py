"""The ``es-scm`` command line: one module per command, shared option groups in
:mod:`es_scm.cli.options`, errors and exit codes in :mod:`es_scm.cli.errors`."""

from es_scm.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
