#!/usr/bin/env python
"""Search latency on Elasticsearch and on OpenSearch, in one run (issue 35).

The same model and the same paragraphs (the first N of the Wikipedia extract, N = 100,000 by
default: ``scripts/bench_search_cost.py`` makes them once under ``--cache``) are indexed by
es-scm into an Elasticsearch cluster (``--es-url``) and one or more OpenSearch ones (``--os-url``,
e.g. a 2.x and a 3.x), each index force-merged into one segment, and every method is timed on
the same 100 queries (the first 12 words of the extract's last 100 paragraphs, never indexed) on
every cluster, clusters and methods interleaved query by query so that all see the same load,
``--repeats`` times:

``bm25``
    The engine's ``match`` on the same index (k = 10, ``_source`` returned).
``exact``, ``native``, ``hybrid``
    ``Searcher.search``, ``.native`` and ``.hybrid`` with their defaults (on OpenSearch hybrid
    search asks BM25's scores of the SCM's candidates in a round trip of their own: its
    ``_msearch`` reports no named query's score).

Reported per cluster (``<engine>-<version>``) and method: the wall time's median and 95th
percentile, the median of what the node reports (``took``), the requests a search sends; per
OpenSearch cluster and method the ratios to Elasticsearch of the medians and 95th percentiles.
Exact search's results are compared with Elasticsearch's on every query (ids and scores: both
must be the brute force's, so the same bits), and native search's scores too (the same Lucene
query on the same 9-bit values). The ingestion into each cluster is timed too (documents per
second, one run).

Usage::

    python scripts/bench_engines.py --es-url http://127.0.0.1:9420 \\
        --os-url http://127.0.0.1:9440 http://127.0.0.1:9460 \\
        --cache ../bench-cache --json results/bench_engines.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from benchlib import peak_rss_mib, provenance  # noqa: E402

K = 10
QUERY_WORDS = 12
INDEX = "es-scm-engines-{size}"
METHODS = ("bm25", "exact", "native", "hybrid")


def queries_of(cache: Path, count: int) -> list[str]:
    """The first 12 words of the extract's last ``count`` paragraphs (never indexed: the corpora
    of ``bench_search_cost.py`` hold the paragraphs before them)."""
    with open(cache / "paragraphs.jsonl", encoding="utf-8") as lines:
        last = list(lines)[-count:]
    return [" ".join(json.loads(line)["text"].split()[:QUERY_WORDS]) for line in last]


class Counter:
    """The requests a client's transport sends and the node's ``took`` of their answers."""

    def __init__(self, client: Any) -> None:
        self.requests = 0
        self.took_s = 0.0
        transport = client.transport
        perform = transport.perform_request

        def counted(*args: Any, **kwargs: Any) -> Any:
            response = perform(*args, **kwargs)
            self.requests += 1
            body = response.body  # a search's and an _msearch's answer have their "took"
            if isinstance(body, dict) and isinstance(body.get("took"), int | float):
                self.took_s += body["took"] / 1000
            return response

        transport.perform_request = counted

    def reset(self) -> None:
        self.requests, self.took_s = 0, 0.0


def prepare(client: Any, name: str, model: Any, corpus: Path, reindex: bool) -> dict[str, Any]:
    """The index of the corpus on ``client``'s cluster, made by es-scm (unless it is there) and
    force-merged into one segment; its ingestion's documents per second."""
    from es_scm.corpus import read_corpus
    from es_scm.elastic import SCMIndex

    index = SCMIndex(client, name, model)
    made: dict[str, Any] = {}
    if reindex or not index.exists():
        if index.exists():
            index.delete()
        started = time.perf_counter()
        report = index.index_documents(read_corpus(corpus), batch_size=500, concurrency=2)
        seconds = time.perf_counter() - started
        if not report.ok:
            raise RuntimeError(f"{name}: {report.summary()}")
        made = {
            "documents": report.indexed,
            "seconds": seconds,
            "per_second": report.indexed / seconds,
        }
    started = time.perf_counter()
    index.optimize(1)
    made["optimize_s"] = time.perf_counter() - started
    made["count"] = index.count()
    return made


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
    }


def measure(args: argparse.Namespace, clients: dict[str, Any], model: Any) -> dict[str, Any]:
    from es_scm.elastic import Searcher
    from es_scm.search.query import bm25_query

    name = INDEX.format(size=args.size)
    queries = queries_of(args.cache, args.queries)
    searchers = {engine: Searcher(client, name, model) for engine, client in clients.items()}
    counters = {engine: Counter(client) for engine, client in clients.items()}

    def call(engine: str, method: str, query: str) -> Any:
        if method == "bm25":
            return clients[engine].search(
                index=name, query=bm25_query(query), size=K, source=True, track_total_hits=False
            )
        return getattr(searchers[engine], {"exact": "search"}.get(method, method))(query, K)

    for query in queries[:10]:  # warm: caches, JIT, the model check, the clause limit
        for engine in clients:
            for method in args.methods:
                call(engine, method, query)
    samples = {
        e: {m: {"wall": [], "took": [], "requests": []} for m in args.methods} for e in clients
    }
    order = list(clients)  # Elasticsearch first
    same = {
        other: {"exact_ids": 0, "exact_scores": 0, "native_scores": 0, "queries": 0}
        for other in order[1:]
    }
    for repeat in range(args.repeats):
        for n, query in enumerate(queries):
            answers: dict[str, dict[str, Any]] = {engine: {} for engine in clients}
            # rotate which cluster goes first, query by query
            turn = (n + repeat) % len(order)
            for engine in order[turn:] + order[:turn]:
                for method in args.methods:
                    counters[engine].reset()
                    started = time.perf_counter()
                    answers[engine][method] = call(engine, method, query)
                    wall = time.perf_counter() - started
                    row = samples[engine][method]
                    row["wall"].append(wall)
                    row["took"].append(counters[engine].took_s)
                    row["requests"].append(counters[engine].requests)
            if repeat == 0:
                reference = answers[order[0]]  # Elasticsearch's
                for other in order[1:]:
                    tally, mine = same[other], answers[other]
                    tally["queries"] += 1
                    if "exact" in args.methods:
                        tally["exact_ids"] += reference["exact"].ids() == mine["exact"].ids()
                        tally["exact_scores"] += scores(reference["exact"]) == scores(mine["exact"])
                    if "native" in args.methods:
                        tally["native_scores"] += scores(reference["native"]) == scores(
                            mine["native"]
                        )
    result: dict[str, Any] = {"index": name, "queries": len(queries), "repeats": args.repeats}
    engines: dict[str, Any] = {}
    for engine, methods in samples.items():
        engines[engine] = {}
        for method, row in methods.items():
            summary = percentiles(row["wall"])
            summary["took_p50_ms"] = 1000 * statistics.median(row["took"])
            summary["requests"] = statistics.mean(row["requests"])
            engines[engine][method] = summary
    result["engines"] = engines
    base = engines[order[0]]
    result["over_elasticsearch"] = {
        other: {
            method: {
                key: engines[other][method][key] / base[method][key]
                for key in ("p50_ms", "p95_ms", "took_p50_ms")
                if base[method][key] > 0
            }
            for method in args.methods
        }
        for other in order[1:]
    }
    result["same_results_as_elasticsearch"] = same
    return result


def scores(result: Any) -> list[float]:
    return [hit.score for hit in result]


def print_table(result: dict[str, Any]) -> None:
    print(f"\n{result['index']}: {result['queries']} queries × {result['repeats']} (ms)")
    print("method   cluster                 p50     p95   took p50  requests  p50/ES  p95/ES")
    methods = next(iter(result["engines"].values()))
    for method in methods:
        for engine, rows in result["engines"].items():
            m = rows[method]
            ratio = result["over_elasticsearch"].get(engine, {}).get(method)
            ratios = f"{ratio['p50_ms']:7.2f} {ratio['p95_ms']:7.2f}" if ratio else ""
            print(
                f"{method:<8} {engine:<21} {m['p50_ms']:7.1f} {m['p95_ms']:7.1f} "
                f"{m['took_p50_ms']:9.1f} {m['requests']:9.2f} {ratios}"
            )
    print(
        f"the same results as Elasticsearch: {json.dumps(result['same_results_as_elasticsearch'])}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--es-url", default=os.environ.get("ES_URL", "http://127.0.0.1:9200"))
    parser.add_argument(
        "--os-url", nargs="+", required=True, help="the URL of each OpenSearch cluster"
    )
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--reindex", action="store_true", help="index again where it exists")
    parser.add_argument(
        "--cache",
        type=Path,
        default=REPO.parent / "bench-cache",
        help="where bench_search_cost.py keeps the paragraphs, corpora and models (read only)",
    )
    parser.add_argument("--json", default="")
    args = parser.parse_args()

    from es_scm.elastic import client_from_env, cluster_version
    from es_scm.engines import engine_of
    from es_scm.model import SoftCosineModel

    corpus = args.cache / f"corpus-{args.size}.jsonl"
    model_dir = args.cache / f"model-{args.size}"
    if not corpus.is_file() or not (model_dir / "model.json").is_file():
        raise SystemExit(
            f"no corpus or model of {args.size} paragraphs in {args.cache}: make them with "
            f"python scripts/bench_search_cost.py prepare --sizes {args.size} --cache {args.cache}"
        )
    clients: dict[str, Any] = {}
    for expected, url in [("elasticsearch", args.es_url)] + [
        ("opensearch", u) for u in args.os_url
    ]:
        client = client_from_env(url, request_timeout=600)
        if engine_of(client).name != expected:
            raise SystemExit(f"{url} serves {engine_of(client).title}, not {expected}")
        clients[f"{expected}-{cluster_version(client)}"] = client
    model = SoftCosineModel.load(model_dir)
    from es_scm.evaluation.provenance import versions

    first = next(iter(clients.values()))  # Elasticsearch's; every cluster's versions beside
    summary: dict[str, Any] = {
        "provenance": provenance(sys.argv, first),
        "clusters": {label: versions(client) for label, client in clients.items()},
        "documents": args.size,
        "model": str(model_dir),
    }
    name = INDEX.format(size=args.size)
    summary["ingestion"] = {
        engine: prepare(client, name, model, corpus, args.reindex)
        for engine, client in clients.items()
    }
    print(f"ingestion: {json.dumps(summary['ingestion'])}", flush=True)
    result = measure(args, clients, model)
    print_table(result)
    summary["search"] = result
    summary["peak_rss_mib"] = peak_rss_mib()
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")


with contextlib.suppress(KeyboardInterrupt):
    if __name__ == "__main__":
        main()
