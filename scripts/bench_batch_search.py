#!/usr/bin/env python
"""Benchmark ``Searcher.batch_search`` against a loop of single calls, method by method.

Cranfield's 1,400 abstracts are indexed with a GloVe model (the tests' ``cranfield_model``:
100 neighbours a term); the first ``--queries`` of its 225 queries are searched with each
method (``search``: exact, ``native``, ``hybrid``, ``bm25``, k = 10) two ways: a loop of single
calls, and one ``batch_search`` (``threads`` workers after one ``_msearch`` of the first
requests). Each way runs ``--repeats`` times, interleaved so that machine noise hits both alike;
the medians and their ratio are reported, with the requests each way sent. The two ways'
results are checked equal (every field but the time taken) before anything is timed.

Usage::

    ES_URL=http://127.0.0.1:9200 python scripts/bench_batch_search.py

Writes ``results/bench_batch_search.json`` (``--json ''``: nothing).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import provenance  # noqa: E402  (scripts/benchlib.py)

from es_scm.elastic import SCMIndex, client_from_env  # noqa: E402
from es_scm.evaluation.collections import read_cranfield  # noqa: E402
from es_scm.model import SoftCosineModel  # noqa: E402
from es_scm.similarity import WordEmbeddings  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
INDEX = "es-scm-bench-batch-search"
K = 10
METHODS = ("search", "native", "hybrid", "bm25")


class Counter:
    """The requests a client's transport sends."""

    def __init__(self, client: Any) -> None:
        self.sent = 0
        transport = client.transport
        perform = transport.perform_request

        def counting(*args: Any, **kwargs: Any) -> Any:
            self.sent += 1
            return perform(*args, **kwargs)

        transport.perform_request = counting


def comparable(result: Any) -> dict[str, Any]:
    """Everything a result says but how long it took (each hit as its scores and source)."""
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    fields.pop("took_ms")
    fields["hits"] = [
        (hit.id, hit.score, hit.native_score, hit.components, hit.source) for hit in result.hits
    ]
    return fields


def timed(action: Any, counter: Counter) -> tuple[float, int, Any]:
    before = counter.sent
    started = time.perf_counter()
    value = action()
    return time.perf_counter() - started, counter.sent - before, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100, help="Cranfield queries (of 225)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=4, help="batch_search's workers")
    parser.add_argument("--json", default=str(REPO / "results" / "bench_batch_search.json"))
    args = parser.parse_args()

    collection = read_cranfield(DATA / "ir-collections" / "cranfield")
    queries = dict(list(collection.queries.items())[: args.queries])
    model = SoftCosineModel.build(
        collection.documents.values(), WordEmbeddings.glove_6b_50d(), nonzero_limit=100
    )
    client = client_from_env()
    counter = Counter(client)
    index = SCMIndex(client, INDEX, model)
    index.delete()
    documents = ({"id": i, "text": t} for i, t in collection.documents.items())
    report = index.index_documents(documents)
    assert report.ok, report.failures[:3]
    index.optimize()
    searcher = index.searcher
    results: dict[str, Any] = {}
    try:
        for method in METHODS:
            search = getattr(searcher, method)

            def loop(search: Any = search) -> dict[str, Any]:
                return {qid: search(text, K) for qid, text in queries.items()}

            def batch(method: str = method) -> dict[str, Any]:
                return searcher.batch_search(queries, K, method=method, threads=args.threads)

            single, batched = loop(), batch()  # warm, and the same results both ways
            assert all(comparable(single[q]) == comparable(batched[q]) for q in queries), method
            times: dict[str, list[float]] = {"loop": [], "batch": []}
            requests = {}
            for _ in range(args.repeats):
                for way, action in (("loop", loop), ("batch", batch)):
                    seconds, sent, _ = timed(action, counter)
                    times[way].append(seconds)
                    requests[way] = sent
            loop_s, batch_s = (statistics.median(times[way]) for way in ("loop", "batch"))
            results[method] = {
                "loop_seconds": times["loop"],
                "batch_seconds": times["batch"],
                "loop_median_s": loop_s,
                "batch_median_s": batch_s,
                "speedup": loop_s / batch_s,
                "loop_requests": requests["loop"],
                "batch_requests": requests["batch"],
            }
            print(
                f"{method:>6}: {len(queries)} queries, loop {loop_s:.3f} s "
                f"({requests['loop']} requests), batch {batch_s:.3f} s "
                f"({requests['batch']} requests): {loop_s / batch_s:.2f}x",
                flush=True,
            )
    finally:
        index.delete()
    if args.json:
        document = {
            "provenance": provenance(sys.argv, client),
            "collection": "cranfield",
            "documents": len(collection.documents),
            "queries": len(queries),
            "k": K,
            "repeats": args.repeats,
            "threads": args.threads,
            "methods": results,
        }
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
