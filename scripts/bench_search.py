#!/usr/bin/env python
"""Benchmark soft cosine search on Elasticsearch against its baselines, in one run.

Per-query latency (p50 / p95, client-side wall time, k = 10) of:

- ``bm25``     a BM25 ``match`` query on the same index's ``text`` field;
- ``native``   es-scm native mode (expanded query, Elasticsearch's sparse dot product);
- ``exact``    es-scm exact mode (native window + exact rescoring, provably the exact top 10);
- ``exact_sv`` the same with the expansion sent as a ``sparse_vector`` query instead of a bool;
- ``scipy``    brute-force exact SCM in Python over the whole corpus (documents normalized once,
               then one sparse matrix-vector product per query);
- ``gensim``   gensim's ``SoftCosineSimilarity(corpus, SparseTermSimilarityMatrix(S))`` with the
               same weighted vectors and the same S (on a subset of the queries: it is slow).

and the indexing throughput of es-scm's ingestion against a plain ``_bulk`` of the same texts
into a text-only index. Methods are interleaved query by query so that machine noise hits them
alike; report medians and ratios, not absolute times.

Usage::

    python scripts/bench_search.py --dataset cranfield
    python scripts/bench_search.py --dataset wikipedia --docs 100000 --queries 200

Writes ``results/bench_search_<dataset>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from elasticsearch import helpers

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from es_scm import SoftCosineModel  # noqa: E402
from es_scm.connection import client_from_env, cluster_version  # noqa: E402
from es_scm.embeddings import WordEmbeddings  # noqa: E402
from es_scm.evaluation.collections import read_cranfield, read_wikipedia_paragraphs  # noqa: E402
from es_scm.index import SCMIndex  # noqa: E402

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


def plain_bulk(client, index: str, docs: list[dict]) -> float:
    client.options(ignore_status=404).indices.delete(index=index)
    client.indices.create(
        index=index,
        settings={"number_of_shards": 1, "number_of_replicas": 0},
        mappings={"properties": {"text": {"type": "text"}}},
    )
    actions = ({"_index": index, "_id": d["id"], "_source": {"text": d["text"]}} for d in docs)
    started = time.perf_counter()
    for ok, item in helpers.streaming_bulk(client, actions, chunk_size=500, raise_on_error=False):
        if not ok:
            raise RuntimeError(f"plain bulk failed: {item}")
    client.indices.refresh(index=index)
    return time.perf_counter() - started


class ScipyBruteForce:
    """Exact SCM over the whole corpus: y' = Wy/‖Wy‖_S once, then x'ᵀY' per query."""

    def __init__(self, model: SoftCosineModel, docs: list[dict]):
        self.model = model
        self.ids = np.array([d["id"] for d in docs])
        weights = model.vectorize_many([d["text"] for d in docs], role="document")
        norms = np.atleast_1d(model.similarity_matrix.soft_norm(weights))
        inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        self.normalized = sp.csr_matrix(sp.diags(inverse) @ weights)
        self.S = sp.csr_matrix(model.similarity_matrix.matrix, dtype=np.float64)
        self.weights = weights

    def search(self, query: str, k: int = K) -> list[str]:
        x = self.model.vectorize(query, role="query")
        if x.nnz == 0:
            return []
        expanded = x @ self.S
        norm = np.sqrt((expanded @ x.T).toarray()[0, 0])
        scores = (self.normalized @ expanded.T).toarray().ravel() / norm
        top = np.argpartition(-scores, min(k, len(scores) - 1))[:k]
        top = top[np.lexsort((self.ids[top], -np.round(scores[top], 12)))]
        return [str(self.ids[i]) for i in top if scores[i] > 0]


def gensim_searcher(model: SoftCosineModel, brute: ScipyBruteForce):
    from gensim.similarities import SoftCosineSimilarity, SparseTermSimilarityMatrix

    matrix = SparseTermSimilarityMatrix(model.similarity_matrix.matrix)
    rows = brute.weights
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
    parser.add_argument("--repeats", type=int, default=3)
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

    plain_s = plain_bulk(client, f"es-scm-bench-plain-{args.dataset}", docs)
    index = SCMIndex(client, f"es-scm-bench-scm-{args.dataset}", model)
    index.delete()
    index.create()
    scm_s, report = timed(index.index_documents, docs, batch_size=500)
    assert report.ok, report.failures[:3]
    print(f"ingestion: plain {len(docs) / plain_s:.0f} docs/s, es-scm {report.summary()}")

    sv_index = SCMIndex(client, index.name, model, query_type="sparse_vector")
    brute = ScipyBruteForce(model, docs)
    methods = {
        "bm25": lambda q: client.search(
            index=index.name, query={"match": {"text": q}}, size=K, source=["text"]
        ),
        "native": lambda q: index.search(q, K, mode="native"),
        "exact": lambda q: index.search(q, K, mode="exact"),
        "exact_sv": lambda q: sv_index.search(q, K, mode="exact"),
        "scipy": brute.search,
    }
    for query in queries[:10]:  # warm-up: caches, JIT, connection pool
        for method in methods.values():
            method(query)
    samples: dict[str, list[float]] = {name: [] for name in methods}
    agreement = []
    for _ in range(args.repeats):
        for query in queries:
            results = {}
            for name, method in methods.items():
                seconds, results[name] = timed(method, query)
                samples[name].append(seconds)
            agreement.append(results["exact"].ids() == results["scipy"])
    gensim_search = gensim_searcher(model, brute)
    samples["gensim"] = [timed(gensim_search, q)[0] for q in queries[: args.gensim_queries]]

    latency = {name: percentiles(values) for name, values in samples.items()}
    p50 = {name: stats["p50_ms"] for name, stats in latency.items()}
    summary = {
        "dataset": args.dataset,
        "documents": len(docs),
        "queries": len(queries),
        "repeats": args.repeats,
        "terms": len(model.terms),
        "similarity_nnz": int(model.similarity_matrix.nnz),
        "model_build_s": build_s,
        "ingest_docs_per_s": {"plain_bulk": len(docs) / plain_s, "es_scm": len(docs) / scm_s},
        "ingest_ratio": plain_s / scm_s,
        "latency": latency,
        "ratios": {
            "exact_over_bm25_p50": p50["exact"] / p50["bm25"],
            "exact_sv_over_bm25_p50": p50["exact_sv"] / p50["bm25"],
            "native_over_bm25_p50": p50["native"] / p50["bm25"],
            "gensim_over_exact_p50": p50["gensim"] / p50["exact"],
            "scipy_over_exact_p50": p50["scipy"] / p50["exact"],
        },
        "exact_equals_scipy_top10": float(np.mean(agreement)),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "elasticsearch": cluster_version(client),
        },
        "date": dt.date.today().isoformat(),
    }
    print(f"\n{'method':8} {'p50 ms':>9} {'p95 ms':>9} {'n':>6}")
    for name, stats in latency.items():
        print(f"{name:8} {stats['p50_ms']:9.2f} {stats['p95_ms']:9.2f} {stats['n']:6d}")
    print(json.dumps({"ratios": summary["ratios"], "ingest_ratio": summary["ingest_ratio"]}))
    print(f"exact top-10 equal to brute force on {100 * summary['exact_equals_scipy_top10']:.1f}%")
    output = Path(args.json or REPO / "results" / f"bench_search_{args.dataset}.json")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(summary, indent=2) + "\n")
    index.delete()
    client.indices.delete(index=f"es-scm-bench-plain-{args.dataset}")


if __name__ == "__main__":
    main()
