#!/usr/bin/env python
"""The es-scm code a warm search runs through, and the requests it sends: exact and hybrid.

Indexes four short documents (S = I), searches once with each method to warm the searcher, then
profiles a second search of each — exact (``index.searcher.search``) and hybrid with the defaults
(``index.searcher.hybrid``) — with ``cProfile`` and counts the es_scm functions it ran (named
functions apart from comprehensions and lambdas), their calls and their files, and the HTTP
requests the client sent for it. The numbers are counts, not times: they do not depend on the
machine's load. Run it on two commits to compare them.

Usage::

    ES_URL=http://127.0.0.1:9200 python scripts/profile_search.py

Writes ``results/profile_search.json`` (``--json ''``: nothing, e.g. from an older checkout
whose scripts/benchlib.py has no provenance).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from es_scm import SoftCosineModel  # noqa: E402
from es_scm.elastic import SCMIndex, client_from_env  # noqa: E402

TEXTS = [
    "supersonic flow over a swept wing",
    "boundary layer transition on a flat plate",
    "heat transfer in a hypersonic boundary layer",
    "lift and drag of a delta wing",
]
QUERY = "boundary layer wing"
INDEX = "es-scm-profile-search"


def profiled_search(index: SCMIndex, method: str) -> tuple[pstats.Stats, int]:
    """The profile of one warm search by ``method``, and the requests it sent."""
    sent = []
    transport = index.client.transport
    perform = transport.perform_request

    def counting(*args, **kwargs):
        sent.append(args[:2])
        return perform(*args, **kwargs)

    transport.perform_request = counting
    profile = cProfile.Profile()
    try:
        profile.enable()
        getattr(index.searcher, method)(QUERY)
        profile.disable()
    finally:
        transport.perform_request = perform
    return pstats.Stats(profile), len(sent)


def counts(stats: pstats.Stats) -> dict[str, object]:
    """es_scm's functions in ``stats``: all of them, and the named ones."""
    ours = {key: stats.stats[key][1] for key in stats.stats if "/es_scm/" in key[0]}
    named = {key: calls for key, calls in ours.items() if not key[2].startswith("<")}
    return {
        "functions": len(ours),
        "calls": sum(ours.values()),
        "files": len({key[0] for key in ours}),
        "named_functions": len(named),
        "named_calls": sum(named.values()),
        "named_files": len({key[0] for key in named}),
        "files_run": sorted({key[0].split("/es_scm/")[1] for key in named}),
        "per_function": sorted(
            f"{key[0].split('/es_scm/')[1]}:{key[2]} {calls}" for key, calls in ours.items()
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", default=str(REPO / "results" / "profile_search.json"))
    args = parser.parse_args()
    client = client_from_env()
    index = SCMIndex(client, INDEX, SoftCosineModel.build(TEXTS))
    index.index_documents([{"id": str(i), "text": text} for i, text in enumerate(TEXTS)])
    results = {}
    try:
        for method in ("search", "hybrid"):
            getattr(index.searcher, method)(QUERY)  # warm: the index checked, the limit read
            stats, requests = profiled_search(index, method)
            results[method] = {"requests": requests, **counts(stats)}
    finally:
        index.delete()
    for method, result in results.items():
        print(
            f"a warm {method}: {result['requests']} request(s); {result['named_functions']} named "
            f"es_scm functions, {result['named_calls']} calls, {result['named_files']} files "
            f"(with comprehensions: {result['functions']}, {result['calls']}, {result['files']})"
        )
        print("  files: " + ", ".join(result["files_run"]))
    if args.json:
        from benchlib import provenance  # scripts/benchlib.py

        document = {"provenance": provenance(sys.argv, client), **results}
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
