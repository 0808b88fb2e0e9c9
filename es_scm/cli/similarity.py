"""``es-scm similarity``: the exact SCM of two texts under a model."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from es_scm.cli.errors import EXIT_OK
from es_scm.cli.explain import add_explain_options, explain_top, explanation_lines
from es_scm.cli.options import Command, load_model

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model.text import Role


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", required=True, metavar="DIR", help="a model from `es-scm model build`"
    )
    parser.add_argument("text_a", metavar="TEXT_A", help="weighted as a query")
    parser.add_argument("text_b", metavar="TEXT_B", help="weighted as a document")
    add_explain_options(parser)


def run(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    sides: tuple[tuple[str, str, Role], ...] = (
        ("TEXT_A", args.text_a, "query"),
        ("TEXT_B", args.text_b, "document"),
    )
    for name, text, role in sides:
        if model.vectorize(text, role=role).nnz == 0:
            print(f"note: {name} has no vocabulary term; its SCM is 0", file=sys.stderr)
    print(repr(model.similarity(args.text_a, args.text_b)))
    if args.explain:
        explanation = model.explain(args.text_a, args.text_b, top=explain_top(args))
        print("\n".join(explanation_lines(explanation)))
    return EXIT_OK


COMMAND = Command(
    "similarity",
    "print the exact SCM of two texts under a model",
    'es-scm similarity --model news-model "Obama speaks to the media in Illinois" '
    '"The president greets the press in Chicago"\n'
    'es-scm similarity --model news-model --explain "Obama speaks to the media" '
    '"The president greets the press"',
    add_arguments,
    run,
)
