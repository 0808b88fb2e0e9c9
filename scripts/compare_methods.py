#!/usr/bin/env python
"""Every method of a saved evaluation against any one of them, with significance tests.

``es-scm eval collection --json`` and ``es-scm eval trec --json`` save each method's per-query
values, ``es-scm eval semeval --per-question`` each question's AP, and each compares every method
with BM25. This reads such a file and compares every method with
another baseline — e.g. the three-way hybrid with BM25 + dense (``--baseline bm25+dense``) — by
the same paired randomization test and t-test (:mod:`es_scm.evaluation.significance`), printing
the markdown table that ``eval`` prints.

Usage::

    python scripts/compare_methods.py results/nfcorpus-dev.json --baseline bm25+dense \\
        --measure nDCG@10
    python scripts/compare_methods.py results/semeval-2016-dev-per-question.json \\
        --baseline bm25+dense
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from es_scm.evaluation.significance import compare, comparison_table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="JSON files of es-scm eval collection/trec")
    parser.add_argument("--baseline", required=True, help="the method compared against")
    parser.add_argument("--measure", help="the measure (default: each collection's first)")
    args = parser.parse_args()
    header = True
    for path in args.results:
        for collection in _collections(json.loads(Path(path).read_text(encoding="utf-8"))):
            measure = args.measure or collection["measures"][0]
            per_query = {
                method: {query: values[measure] for query, values in queries.items()}
                for method, queries in collection["per_query"].items()
            }
            if args.baseline not in per_query:
                raise SystemExit(
                    f"{path}: no method {args.baseline!r} in {collection['collection']} "
                    f"(its methods: {', '.join(per_query)})"
                )
            rows = compare(per_query, args.baseline, measure=measure)
            print(comparison_table(rows, collection["collection"], header=header))
            header = False


def _collections(saved: dict) -> list[dict]:
    """The collections of an ``eval collection``/``eval trec`` JSON, or a SemEval per-question
    file as one collection (its questions' AP)."""
    if "collections" in saved:
        return saved["collections"]
    questions = {qid: entry for qid, entry in saved.items() if not qid.startswith("_")}
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    for qid, entry in questions.items():
        for method, values in entry["methods"].items():
            per_query.setdefault(method, {})[qid] = {"AP": values["AP"]}
    return [{"collection": "SemEval", "measures": ["AP"], "per_query": per_query}]


if __name__ == "__main__":
    main()
