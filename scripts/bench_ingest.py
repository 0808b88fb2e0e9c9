#!/usr/bin/env python
"""Where es-scm's ingestion time goes, against a plain bulk of the same texts, in one run.

On the first ``--docs`` paragraphs of the Wikipedia extract (or on Cranfield):

1. Python, per document: tokenizing, counting known and unknown tokens, and weighting
   (``vectorize_many``, as the ingester calls it), the normalization
   y' = Wy/√(yᵀSy) (``TermSimilarityMatrix.normalize``), and building the ``_source`` documents
   (``encode_documents``).
2. Elasticsearch's own time per document (the sum of the bulk responses' ``took``) to index
   ready-made sources: the text only; es-scm's documents (text + ``sparse_vector``); and
   es-scm's documents with Elasticsearch's default ``index.mapping.exclude_source_vectors``
   (9.2+), which es-scm turns off (``es_scm.index.schema.index_settings``).
3. End to end, documents per second, alternated ``--repeats`` times: a plain
   ``helpers.streaming_bulk`` of the texts (the baseline), the same with two bulk requests in
   flight (``helpers.parallel_bulk``), and ``SCMIndex.index_documents`` with one and with two
   requests in flight (the default), with how busy the machine's CPUs were meanwhile
   (``/proc/stat``).

Usage::

    python scripts/bench_ingest.py --docs 20000 --repeats 3     # → results/bench_ingest.json

Timings on a shared 2-core machine are noisy: compare medians and ratios from the same run.
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

from es_scm import SoftCosineModel  # noqa: E402
from es_scm.elastic import SCMIndex  # noqa: E402
from es_scm.elastic.connection import client_from_env  # noqa: E402
from es_scm.evaluation.collections import read_cranfield, read_wikipedia_paragraphs  # noqa: E402
from es_scm.index.schema import encode_documents, index_mapping, index_settings  # noqa: E402
from es_scm.model import TokenCounts  # noqa: E402
from es_scm.similarity import WordEmbeddings  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
INDEX = "es-scm-bench-ingest"


def load(dataset: str, n_docs: int) -> list[dict]:
    if dataset == "cranfield":
        collection = read_cranfield(DATA / "ir-collections" / "cranfield")
        return [{"id": str(i), "text": t} for i, t in collection.documents.items()]
    path = DATA / "wikipedia-2015" / "text.tar.xz"
    return list(read_wikipedia_paragraphs(path, limit=n_docs))


def per_document_us(seconds: float, n: int) -> float:
    return 1e6 * seconds / n


def python_phases(model: SoftCosineModel, docs: list[dict]) -> dict[str, float]:
    """Seconds of each Python phase for all documents, in batches of 500 as the ingester."""
    keys = np.array([str(i) for i in range(len(model.terms))], dtype=object)
    phases = {"vectorize": 0.0, "normalize": 0.0, "sources": 0.0}
    for start in range(0, len(docs), 500):
        texts = [d["text"] for d in docs[start : start + 500]]
        started = time.perf_counter()
        weights = model.vectorize_many(texts, role="document", tokens=TokenCounts())
        vectorized = time.perf_counter()
        normalized = model.similarity_matrix.normalize(weights)
        normed = time.perf_counter()
        encode_documents(texts, normalized, [None] * len(texts), keys)
        phases["vectorize"] += vectorized - started
        phases["normalize"] += normed - vectorized
        phases["sources"] += time.perf_counter() - normed
    return phases


def elasticsearch_took(client, model, sources: list[dict], settings: dict) -> float:
    """Elasticsearch's own seconds (Σ took) to index ``sources`` into a fresh index."""
    client.options(ignore_status=404).indices.delete(index=INDEX)
    client.indices.create(index=INDEX, settings=settings, mappings=index_mapping(model))
    took = 0
    for start in range(0, len(sources), 500):
        operations = []
        for i, source in enumerate(sources[start : start + 500], start=start):
            operations += [{"index": {"_index": INDEX, "_id": str(i)}}, source]
        response = client.bulk(operations=operations)
        if response["errors"]:
            raise RuntimeError("bulk errors while measuring took")
        took += response["took"]
    client.indices.delete(index=INDEX)
    return took / 1000


def cpu_ticks() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from /proc/stat; None where there is none."""
    try:
        with open("/proc/stat") as stream:
            fields = [int(value) for value in stream.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def busy_fraction(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """How busy the machine's CPUs were between two :func:`cpu_ticks` readings (0 to 1)."""
    if before is None or after is None or after[1] == before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def es_scm_bulk(client, model, docs: list[dict], concurrency: int) -> float:
    index = SCMIndex(client, INDEX, model)
    index.delete()
    index.create()
    started = time.perf_counter()
    report = index.index_documents(docs, batch_size=500, concurrency=concurrency)
    seconds = time.perf_counter() - started
    if not report.ok:
        raise RuntimeError(f"es-scm ingestion failed: {report.failures[:3]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=["wikipedia", "cranfield"], default="wikipedia")
    parser.add_argument("--docs", type=int, default=20_000, help="Wikipedia paragraphs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--es-url", default=os.environ.get("ES_URL", "http://127.0.0.1:9200"))
    parser.add_argument("--json", default=str(REPO / "results" / "bench_ingest.json"))
    args = parser.parse_args()

    client = client_from_env(args.es_url, request_timeout=300)
    docs = load(args.dataset, args.docs)
    n = len(docs)
    model = SoftCosineModel.build(
        (d["text"] for d in docs), WordEmbeddings.glove_6b_50d(), min_df=2
    )
    print(f"{args.dataset}: {n} documents, {model}", flush=True)

    runs = [python_phases(model, docs) for _ in range(args.repeats)]
    python_us = {
        phase: per_document_us(statistics.median(r[phase] for r in runs), n) for phase in runs[0]
    }
    print("python µs/doc:", {k: round(v, 1) for k, v in python_us.items()}, flush=True)

    keys = np.array([str(i) for i in range(len(model.terms))], dtype=object)
    weights = model.vectorize_many([d["text"] for d in docs], role="document")
    normalized = model.similarity_matrix.normalize(weights)
    sources = encode_documents([d["text"] for d in docs], normalized, [None] * n, keys)
    text_only = [{"text": s["text"], "scm": {"empty": s["scm"]["empty"]}} for s in sources]
    es_scm_settings = index_settings(client)
    default_settings = {k: v for k, v in es_scm_settings.items() if "exclude_source" not in k}
    variants = {
        "text": (text_only, es_scm_settings),
        "es_scm": (sources, es_scm_settings),
        "es_scm_excluding_vectors_from_source": (sources, default_settings),
    }
    took_us = {
        name: per_document_us(
            statistics.median(
                elasticsearch_took(client, model, s, settings) for _ in range(args.repeats)
            ),
            n,
        )
        for name, (s, settings) in variants.items()
    }
    print("elasticsearch took µs/doc:", {k: round(v, 1) for k, v in took_us.items()}, flush=True)

    methods = {
        "plain_bulk": lambda: plain_bulk(client, INDEX, docs),
        "plain_bulk_2_threads": lambda: plain_bulk(client, INDEX, docs, threads=2),
        "es_scm_1_in_flight": lambda: es_scm_bulk(client, model, docs, 1),
        "es_scm_2_in_flight": lambda: es_scm_bulk(client, model, docs, 2),
    }
    rates: dict[str, list[float]] = {name: [] for name in methods}
    busy: dict[str, list[float]] = {name: [] for name in methods}
    for _ in range(args.repeats):
        for name, method in methods.items():
            before = cpu_ticks()
            rates[name].append(n / method())
            fraction = busy_fraction(before, cpu_ticks())
            if fraction is not None:
                busy[name].append(fraction)
    client.options(ignore_status=404).indices.delete(index=INDEX)
    docs_per_s = {name: statistics.median(values) for name, values in rates.items()}

    summary = {
        "provenance": provenance(sys.argv, client),
        "dataset": args.dataset,
        "documents": n,
        "repeats": args.repeats,
        "terms": len(model.terms),
        "python_us_per_doc": python_us,
        "elasticsearch_took_us_per_doc": took_us,
        "docs_per_second_median": docs_per_s,
        "docs_per_second_runs": rates,
        "cpu_busy_fraction_median": {
            name: statistics.median(values) for name, values in busy.items() if values
        },
        "ratios": {
            "es_scm_over_plain_bulk": docs_per_s["es_scm_2_in_flight"] / docs_per_s["plain_bulk"],
            "es_scm_over_plain_bulk_2_threads": docs_per_s["es_scm_2_in_flight"]
            / docs_per_s["plain_bulk_2_threads"],
            "elasticsearch_took_es_scm_over_text": took_us["es_scm"] / took_us["text"],
        },
        "bytes_per_document": float(np.mean([len(json.dumps(s)) for s in sources[:2000]])),
    }
    report = {
        "docs_per_second": docs_per_s,
        "cpu_busy": summary["cpu_busy_fraction_median"],
        "ratios": summary["ratios"],
    }
    print(json.dumps(report, indent=2))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    print(f"saved {args.json}")


if __name__ == "__main__":
    main()
