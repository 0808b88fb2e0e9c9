#!/usr/bin/env python
"""Benchmark soft cosine search on Elasticsearch against its baselines, in one run.

Per-query latency (p50 / p95, client-side wall time, k = 10) of:

- ``bm25``       a BM25 ``match`` query on the same index's ``text`` field (whole ``_source``);
- ``native``     es-scm native mode (expanded query, Elasticsearch's sparse dot product);
- ``exact``      es-scm exact mode (native window + exact rescoring, provably the exact top 10),
                 the expansion sent as a ``sparse_vector`` query (the default);
- ``exact_bool`` the same with the expansion sent as a ``bool`` of boosted ``term`` queries;
- ``scipy``      brute-force exact SCM in Python over the whole corpus: the library's
                 ``BruteForceSearch`` (documents normalized once, then one sparse product over the
                 columns of the query's expansion per query);
- ``gensim``     gensim's ``SoftCosineSimilarity(corpus, SparseTermSimilarityMatrix(S))`` with
                 the same weighted vectors and the same S (on a subset of the queries: it is slow).

Latency is measured twice in the same run: on the index as ingested (several segments), and
after ``SCMIndex.optimize()`` merged it into one segment (Elasticsearch methods only; BM25 runs
on the same index, so it is merged too). Methods are interleaved query by query so that machine
noise hits them alike; report medians and ratios, not absolute times.

Indexing throughput: es-scm's ingestion against a plain ``helpers.streaming_bulk`` of the same
texts into a text-only index (the baseline), and for context against ``helpers.parallel_bulk``
with two threads, es-scm's default number of requests in flight.

Usage::

    python scripts/bench_search.py --dataset cranfield
    python scripts/bench_search.py --dataset wikipedia --docs 100000 --queries 200

Writes ``results/bench_search_<dataset>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import plain_bulk, provenance  # noqa: E402  (scripts/benchlib.py)

from es_scm.elastic import SCMIndex, client_from_env  # noqa: E402
from es_scm.evaluation.collections import read_cranfield, read_wikipedia_paragraphs  # noqa: E402
from es_scm.model import BruteForceSearch, SoftCosineModel  # noqa: E402
from es_scm.search.query import bm25_query  # noqa: E402
from es_scm.similarity import WordEmbeddings  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
K = 10


def load_dataset(name: str, n_docs: int, n_queries: int) -> tuple[list[dict], list[str]]:
    if name == "cranfield":
        collection = read_cranfield(DATA / "ir-collections" / "cranfield")
        docs = [{"id": i, "text": t} for i, t in collection.documents.items()]
        return docs, list(collection.queries.values())[:n_queries]
    paragraphs = read_wikipedia_paragraphs(
        DATA / "wikipedia-2015" / "text.tar.xz", limit=n_docs + n_queries
    )
    paragraphs = list(paragraphs)
    # Queries: the first 12 words of paragraphs that are not indexed.
    queries = [" ".join(p["text"].split()[:12]) for p in paragraphs[n_docs:]]
    return paragraphs[:n_docs], queries


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
        "n": len(ordered),
    }


def timed(function, *args, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, result


def expansion_pruning(brute: BruteForceSearch, queries: list[str]) -> dict[str, float]:
    """How much of an expansion a rigorous bound would let exact mode leave out (docs/SEARCH.md).

    Leaving out terms D costs the bound ‖x'_D‖₂ (Cauchy–Schwarz, with x' normalized so that
    x'ᵀy' is the SCM); the slack it has to fit in is the gap between the 10th-best exact score
    and the scores just below. Reports medians over the queries.
    """
    terms, ratio, droppable = [], [], []
    matrix = brute.model.similarity_matrix
    for query in queries:
        x = brute.model.vectorize(query, role="query")
        if x.nnz == 0:
            continue
        expanded = matrix.expand(x).toarray().ravel() / float(matrix.soft_norm(x))
        scores = np.sort(brute.documents @ expanded)[::-1]
        if scores[9] <= 0:
            continue
        weights = np.sort(expanded[expanded > 0])  # ascending: the cheapest to leave out first
        tail = np.sqrt(np.cumsum(weights**2))
        terms.append(len(weights))
        ratio.append(scores[19] / scores[9])
        droppable.append(int(np.searchsorted(tail, 0.1 * scores[9], side="right")))
    return {
        "expansion_terms": float(np.median(terms)),
        "score20_over_score10": float(np.median(ratio)),
        "terms_droppable_within_10_percent_of_score10": float(np.median(droppable)),
    }


def run_queries(methods: dict, queries: list[str], repeats: int, brute: BruteForceSearch):
    """Time every method on every query, interleaved; and how often exact equals brute force."""
    for query in queries[:10]:  # warm-up: caches, JIT, connection pool
        for method in methods.values():
            method(query)
    samples: dict[str, list[float]] = {name: [] for name in methods}
    agreement = []
    for _ in range(repeats):
        for query in queries:
            results = {}
            for name, method in methods.items():
                seconds, results[name] = timed(method, query)
                samples[name].append(seconds)
            reference = results["scipy"] if "scipy" in results else brute.search(query, K)
            agreement.append(results["exact"].ids() == [doc_id for doc_id, _ in reference])
    return samples, agreement


def gensim_searcher(model: SoftCosineModel, docs: list[dict]):
    from gensim.similarities import SoftCosineSimilarity, SparseTermSimilarityMatrix

    matrix = SparseTermSimilarityMatrix(model.similarity_matrix.matrix)
    rows = model.vectorize_many([d["text"] for d in docs], role="document")
    corpus = [
        list(zip(rows.indices[a:b].tolist(), rows.data[a:b].tolist(), strict=True))
        for a, b in zip(rows.indptr[:-1], rows.indptr[1:], strict=True)
    ]
    index = SoftCosineSimilarity(corpus, matrix, num_best=K)

    def search(query: str) -> list:
        x = model.vectorize(query, role="query")
        return index[list(zip(x.indices.tolist(), x.data.tolist(), strict=True))]

    return search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=["cranfield", "wikipedia"], default="cranfield")
    parser.add_argument("--docs", type=int, default=100_000, help="wikipedia paragraphs")
    parser.add_argument("--queries", type=int, default=225)
    parser.add_argument("--gensim-queries", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3, help="passes over the queries")
    parser.add_argument("--ingest-repeats", type=int, default=2, help="ingestions of each kind")
    parser.add_argument("--min-df", type=int, default=1)
    parser.add_argument("--es-url", default=os.environ.get("ES_URL", "http://127.0.0.1:9200"))
    parser.add_argument("--json", help="default: results/bench_search_<dataset>.json")
    args = parser.parse_args()

    client = client_from_env(args.es_url, request_timeout=300)
    docs, queries = load_dataset(args.dataset, args.docs, args.queries)
    print(f"{args.dataset}: {len(docs)} documents, {len(queries)} queries", flush=True)

    glove = WordEmbeddings.glove_6b_50d()
    build_s, model = timed(
        SoftCosineModel.build, (d["text"] for d in docs), glove, min_df=args.min_df
    )
    print(f"model: {model} built in {build_s:.1f}s", flush=True)

    # ingestion, alternated --ingest-repeats times; the last es-scm index is the one searched
    plain_index = f"es-scm-bench-plain-{args.dataset}"
    index = SCMIndex(client, f"es-scm-bench-scm-{args.dataset}", model)
    plain_runs, plain_2_runs, scm_runs = [], [], []
    for _ in range(args.ingest_repeats):
        plain_runs.append(plain_bulk(client, plain_index, docs))
        plain_2_runs.append(plain_bulk(client, plain_index, docs, threads=2))
        index.delete()
        index.create()
        seconds, report = timed(index.index_documents, docs, batch_size=500)
        assert report.ok, report.failures[:3]
        scm_runs.append(seconds)
    plain_s, plain_2_s = statistics.median(plain_runs), statistics.median(plain_2_runs)
    scm_s = statistics.median(scm_runs)
    print(
        f"ingestion: plain {len(docs) / plain_s:.0f} docs/s (2 threads: "
        f"{len(docs) / plain_2_s:.0f}), es-scm {len(docs) / scm_s:.0f} docs/s (medians)",
        flush=True,
    )

    bool_index = SCMIndex(client, index.name, model, query_type="bool")
    brute = BruteForceSearch(model, [d["id"] for d in docs], [d["text"] for d in docs])
    pruning = expansion_pruning(brute, queries)
    print(f"expansion pruning: {pruning}", flush=True)
    elasticsearch_methods = {
        # the whole _source, as es-scm fetches it: filtering would cost BM25 more, not less
        "bm25": lambda q: client.search(index=index.name, query=bm25_query(q), size=K, source=True),
        "native": lambda q: index.searcher.native(q, K),
        "exact": lambda q: index.searcher.search(q, K),
        "exact_bool": lambda q: bool_index.searcher.search(q, K),
    }
    segments = {"as_ingested": len(client.cat.segments(index=index.name, format="json"))}
    samples, agreement = run_queries(
        {**elasticsearch_methods, "scipy": lambda q: brute.search(q, K)},
        queries,
        args.repeats,
        brute,
    )
    gensim_search = gensim_searcher(model, docs)
    samples["gensim"] = [timed(gensim_search, q)[0] for q in queries[: args.gensim_queries]]

    optimize_s, _ = timed(index.optimize)
    segments["optimized"] = len(client.cat.segments(index=index.name, format="json"))
    print(f"force-merged into {segments['optimized']} segment(s) in {optimize_s:.1f}s", flush=True)
    optimized_samples, optimized_agreement = run_queries(
        elasticsearch_methods, queries, args.repeats, brute
    )

    latency = {name: percentiles(values) for name, values in samples.items()}
    optimized_latency = {name: percentiles(values) for name, values in optimized_samples.items()}
    p50 = {name: stats["p50_ms"] for name, stats in latency.items()}
    p50_optimized = {name: stats["p50_ms"] for name, stats in optimized_latency.items()}
    summary = {
        "provenance": provenance(sys.argv, client),
        "dataset": args.dataset,
        "documents": len(docs),
        "queries": len(queries),
        "repeats": args.repeats,
        "terms": len(model.terms),
        "similarity_nnz": int(model.similarity_matrix.nnz),
        "model_build_s": build_s,
        "ingest_docs_per_s": {
            "plain_bulk": len(docs) / plain_s,
            "plain_bulk_2_threads": len(docs) / plain_2_s,
            "es_scm": len(docs) / scm_s,
        },
        "ingest_seconds_runs": {
            "plain_bulk": plain_runs,
            "plain_bulk_2_threads": plain_2_runs,
            "es_scm": scm_runs,
        },
        "ingest_ratio": plain_s / scm_s,
        "ingest_ratio_vs_2_threads": plain_2_s / scm_s,
        "expansion_pruning": pruning,
        "segments": segments,
        "optimize_s": optimize_s,
        "latency": latency,
        "latency_optimized": optimized_latency,
        "ratios": {
            "exact_over_bm25_p50": p50["exact"] / p50["bm25"],
            "exact_bool_over_bm25_p50": p50["exact_bool"] / p50["bm25"],
            "native_over_bm25_p50": p50["native"] / p50["bm25"],
            "gensim_over_exact_p50": p50["gensim"] / p50["exact"],
            "scipy_over_exact_p50": p50["scipy"] / p50["exact"],
        },
        "ratios_optimized": {
            "exact_over_bm25_p50": p50_optimized["exact"] / p50_optimized["bm25"],
            "exact_bool_over_bm25_p50": p50_optimized["exact_bool"] / p50_optimized["bm25"],
            "native_over_bm25_p50": p50_optimized["native"] / p50_optimized["bm25"],
            "gensim_over_exact_p50": p50["gensim"] / p50_optimized["exact"],
        },
        "exact_equals_scipy_top10": float(np.mean(agreement)),
        "exact_equals_scipy_top10_optimized": float(np.mean(optimized_agreement)),
    }
    for title, table in (("as ingested", latency), ("one segment", optimized_latency)):
        print(f"\n{title}\n{'method':10} {'p50 ms':>9} {'p95 ms':>9} {'n':>6}")
        for name, stats in table.items():
            print(f"{name:10} {stats['p50_ms']:9.2f} {stats['p95_ms']:9.2f} {stats['n']:6d}")
    print(
        json.dumps(
            {
                "ratios": summary["ratios"],
                "ratios_optimized": summary["ratios_optimized"],
                "ingest_ratio": summary["ingest_ratio"],
            },
            indent=2,
        )
    )
    print(
        f"exact top-10 equal to brute force on {100 * summary['exact_equals_scipy_top10']:.1f}% "
        f"(one segment: {100 * summary['exact_equals_scipy_top10_optimized']:.1f}%)"
    )
    output = Path(args.json or REPO / "results" / f"bench_search_{args.dataset}.json")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(summary, indent=2) + "\n")
    index.delete()
    client.indices.delete(index=plain_index)


if __name__ == "__main__":
    main()
