"""``--explain``: the term pairs behind a score, one per line (``similarity`` and ``search``).

Each line is a pair of a query term and a document term (:class:`es_scm.model.TermPair`)::

    killed ≈ dead     s=0.62  +0.118  (31 %)
    caesar = caesar   s=1.00  +0.104  (27 %)

``=`` joins a term with itself, ``≈`` two similar terms; then their similarity s_ij, the pair's
contribution x_i·s_ij·y_j / (‖x‖_S‖y‖_S) to the SCM, and its share of the SCM. The largest
contributions come first; the pairs left out by ``--explain-top`` are summed up on a last line.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from es_scm.cli.options import non_negative_int

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import Explanation

__all__ = ["EXPLAIN_TOP", "add_explain_options", "explain_top", "explanation_lines"]

EXPLAIN_TOP = 10


def add_explain_options(parser: argparse.ArgumentParser) -> None:
    """``--explain`` and ``--explain-top N``."""
    parser.add_argument(
        "--explain",
        action="store_true",
        help="also show the pairs of a query term and a document term that make up the score, "
        "largest first, e.g. `killed ≈ dead  s=0.62  +0.118  (31 %%)`: their similarity, the "
        "pair's contribution to the SCM and its share of it (`=` for a term with itself)",
    )
    parser.add_argument(
        "--explain-top",
        type=non_negative_int,
        default=EXPLAIN_TOP,
        metavar="N",
        help=f"with --explain, show the N largest contributions (default {EXPLAIN_TOP}; 0 for all)",
    )


def explain_top(args: argparse.Namespace) -> int | None:
    """``--explain-top`` as :meth:`Explanation.top` takes it (None for all)."""
    return args.explain_top or None


def explanation_lines(explanation: Explanation, indent: str = "") -> list[str]:
    """The pairs of ``explanation``, one line each, and a line for the omitted ones."""
    pairs = explanation.pairs
    if not pairs and not explanation.omitted:
        return [f"{indent}(no pair of similar terms: the score is 0)"]
    left = max((len(pair.query_term) for pair in pairs), default=0)
    right = max((len(pair.document_term) for pair in pairs), default=0)
    lines = [
        f"{indent}{pair.query_term:<{left}} {'=' if pair.identical else '≈'} "
        f"{pair.document_term:<{right}}   s={pair.similarity:.2f}  {pair.contribution:+.3f}  "
        f"({_percent(pair.share)})"
        for pair in pairs
    ]
    if explanation.omitted:
        rest = explanation.omitted_contribution
        share = rest / explanation.total if explanation.total else 0.0
        lines.append(
            f"{indent}… {explanation.omitted} more pair(s)   {rest:+.3f}  ({_percent(share)})"
        )
    return lines


def _percent(share: float) -> str:
    return f"{100 * share:.0f} %"
