#!/usr/bin/env python
"""A bounded load test: exact search from many threads and processes for minutes, with drift checks.

The corpus (Wikipedia paragraphs or Cranfield) is indexed once; the exact top 10 of every query is
computed first, alone (the reference). Then ``--processes`` processes with ``--threads`` threads
each search the queries round-robin in ``exact`` mode for ``--duration`` seconds, each process with
its own client and its own copy of the model (loaded from disk, as an application server would).
With ``--writers``, as many threads re-index the same documents meanwhile (idempotent writes:
the results must not move).

Reported: searches per second, latency p50 / p99 (client-side wall time), errors by kind, and
*drift*: searches whose ids or scores differ from the reference (scores compared to 1e-9).

Usage::

    python scripts/bench_load.py --docs 30000 --duration 120 --processes 2 --threads 8
    python scripts/bench_load.py --dataset cranfield --duration 60 --writers 1

Writes ``results/bench_load.json``. On a shared 2-core machine, compare runs of the same day only.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import provenance  # noqa: E402  (scripts/benchlib.py)

from es_scm.elastic import SCMIndex, client_from_env  # noqa: E402
from es_scm.evaluation.collections import read_cranfield, read_wikipedia_paragraphs  # noqa: E402
from es_scm.model import SoftCosineModel  # noqa: E402
from es_scm.similarity import WordEmbeddings  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
INDEX = "es-scm-bench-load"
K = 10


def load_dataset(name: str, n_docs: int, n_queries: int) -> tuple[list[dict], list[str]]:
    if name == "cranfield":
        collection = read_cranfield(DATA / "ir-collections" / "cranfield")
        docs = [{"id": i, "text": t} for i, t in collection.documents.items()]
        return docs, list(collection.queries.values())[:n_queries]
    paragraphs = list(
        read_wikipedia_paragraphs(DATA / "wikipedia-2015" / "text.tar.xz", limit=n_docs + n_queries)
    )
    queries = [" ".join(p["text"].split()[:12]) for p in paragraphs[n_docs:]]
    return paragraphs[:n_docs], queries


def signature(result) -> tuple:
    return tuple((hit.id, round(hit.score, 9)) for hit in result.hits)


def worker(job: dict, output: multiprocessing.Queue) -> None:
    """One process: searching threads (and writing threads) until the end."""
    model = SoftCosineModel.load(job["model_dir"])
    client = client_from_env(job["es_url"], request_timeout=60, max_retries=0)
    index = SCMIndex(client, INDEX, model)
    queries, reference = job["queries"], job["reference"]
    stop_at = job["stop_at"]
    latencies: list[float] = []
    errors: Counter = Counter()
    drift = 0
    lock = threading.Lock()

    def search(offset: int) -> None:
        nonlocal drift
        number = offset
        while time.time() < stop_at:
            query = queries[number % len(queries)]
            started = time.perf_counter()
            try:
                result = index.searcher.search(query, K)
            except Exception as error:
                with lock:
                    errors[type(error).__name__] += 1
                continue
            finally:
                number += 1
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)
                if list(signature(result)) != [tuple(pair) for pair in reference[query]]:
                    drift += 1

    def write() -> None:
        documents = job["documents"]
        while time.time() < stop_at:
            try:
                report = index.index_documents(documents, create=False, refresh=False)
                with lock:
                    errors["write_failures"] += report.failed
            except Exception as error:
                with lock:
                    errors[f"write_{type(error).__name__}"] += 1

    searching_from = time.time()
    threads = [
        threading.Thread(target=search, args=(job["offset"] + t * 7,))
        for t in range(job["threads"])
    ]
    threads += [threading.Thread(target=write) for _ in range(job["writers"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    output.put(
        {
            "latencies": latencies,
            "errors": dict(errors),
            "drift": drift,
            "seconds": stop_at - searching_from,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=["wikipedia", "cranfield"], default="wikipedia")
    parser.add_argument("--docs", type=int, default=30_000, help="Wikipedia paragraphs")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--duration", type=float, default=120.0, help="seconds of load")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8, help="searching threads per process")
    parser.add_argument("--writers", type=int, default=0, help="re-indexing threads (process 0)")
    parser.add_argument("--es-url", default=os.environ.get("ES_URL", "http://127.0.0.1:9200"))
    parser.add_argument("--json", default=str(REPO / "results" / "bench_load.json"))
    args = parser.parse_args()

    client = client_from_env(args.es_url, request_timeout=300)
    docs, queries = load_dataset(args.dataset, args.docs, args.queries)
    model = SoftCosineModel.build(
        (d["text"] for d in docs), WordEmbeddings.glove_6b_50d(), min_df=2
    )
    index = SCMIndex(client, INDEX, model)
    index.delete()
    report = index.index_documents(docs)
    print(f"{args.dataset}: {report.summary()}", flush=True)
    reference = {
        q: [list(pair) for pair in signature(index.searcher.search(q, K))] for q in queries
    }
    with tempfile.TemporaryDirectory() as scratch:
        model_dir = model.save(Path(scratch) / "model")
        stop_at = time.time() + 15 + args.duration  # the processes load the model first
        output: multiprocessing.Queue = multiprocessing.get_context("spawn").Queue()
        jobs = [
            {
                "model_dir": str(model_dir),
                "es_url": args.es_url,
                "queries": queries,
                "reference": reference,
                "stop_at": stop_at,
                "threads": args.threads,
                "writers": args.writers if number == 0 else 0,
                "documents": docs if number == 0 and args.writers else [],
                "offset": number * 101,
            }
            for number in range(args.processes)
        ]
        context = multiprocessing.get_context("spawn")
        processes = [context.Process(target=worker, args=(job, output)) for job in jobs]
        for process in processes:
            process.start()
        results = [output.get() for _ in processes]
        for process in processes:
            process.join()
    latencies = sorted(value for r in results for value in r["latencies"])
    errors: Counter = Counter()
    for result in results:
        errors.update(result["errors"])
    drift = sum(r["drift"] for r in results)
    measured = max(r["seconds"] for r in results)  # from the first search to the end
    summary = {
        "provenance": provenance(sys.argv, client),
        "dataset": args.dataset,
        "documents": len(docs),
        "queries": len(queries),
        "duration_s": args.duration,
        "measured_s": measured,
        "processes": args.processes,
        "threads_per_process": args.threads,
        "writers": args.writers,
        "searches": len(latencies),
        "searches_per_s": len(latencies) / measured,
        "p50_ms": 1000 * statistics.median(latencies) if latencies else None,
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))] if latencies else None,
        "errors": dict(errors),
        "drift": drift,
    }
    print(json.dumps(summary, indent=2))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    index.delete()


if __name__ == "__main__":
    main()
