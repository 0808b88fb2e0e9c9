#!/usr/bin/env python
"""Where es-scm's ingestion time goes, against a plain bulk of the same texts, in one run.

On Cranfield repeated ``--copies`` times (distinct ids):

1. Python phases of a batch, per document set: tokenizing and weighting (``vectorize_many``), the
   soft norms √(yᵀSy), and building the ``_source`` documents.
2. Elasticsearch's own time (the sum of the bulk responses' ``took``) for the same documents
   with growing parts of es-scm's schema: text only; text + the exact vector; text + the
   ``sparse_vector``; everything. Sent with the standard-library JSON encoder.
3. End-to-end ``SCMIndex.index_documents`` throughput with the standard-library JSON encoder and
   with orjson (when installed), alternated ``--repeats`` times, and a plain bulk of the texts.

Usage::

    python scripts/bench_ingest.py --copies 3 --repeats 3     # → results/bench_ingest.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from elasticsearch import helpers

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from es_scm import SoftCosineModel  # noqa: E402
from es_scm.connection import client_from_env, fast_serializers  # noqa: E402
from es_scm.embeddings import WordEmbeddings  # noqa: E402
from es_scm.evaluation.collections import read_cranfield  # noqa: E402
from es_scm.index import SCMIndex, document_source, index_mapping  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
INDEX = "es-scm-bench-ingest"


def timed(function, *args):
    started = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - started, result


def schema_part(source: dict, parts: tuple[str, ...]) -> dict:
    scm = {"empty": source["scm"]["empty"]}
    scm.update({part: source["scm"][part] for part in parts if part in source["scm"]})
    return {"text": source["text"], "scm": scm}


def bulk_took(client, model, sources: list[dict]) -> float:
    """Elasticsearch's own seconds (Σ took) to index ``sources`` into a fresh es-scm index."""
    client.options(ignore_status=404).indices.delete(index=INDEX)
    client.indices.create(index=INDEX, mappings=index_mapping(model))
    took = 0
    for start in range(0, len(sources), 500):
        operations = []
        for i, source in enumerate(sources[start : start + 500], start=start):
            operations += [{"index": {"_index": INDEX, "_id": str(i)}}, source]
        response = client.bulk(operations=operations)
        assert not response["errors"]
        took += response["took"]
    return took / 1000


def plain_bulk(client, docs: list[dict]) -> float:
    client.options(ignore_status=404).indices.delete(index=INDEX)
    client.indices.create(index=INDEX, mappings={"properties": {"text": {"type": "text"}}})
    actions = ({"_index": INDEX, "_id": d["id"], "_source": {"text": d["text"]}} for d in docs)
    started = time.perf_counter()
    for ok, item in helpers.streaming_bulk(client, actions, chunk_size=500, raise_on_error=False):
        assert ok, item
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--es-url", default=os.environ.get("ES_URL", "http://127.0.0.1:9200"))
    parser.add_argument("--json", default=str(REPO / "results" / "bench_ingest.json"))
    args = parser.parse_args()

    collection = read_cranfield(DATA / "ir-collections" / "cranfield")
    docs = [
        {"id": f"{doc_id}-{copy}", "text": text}
        for copy in range(args.copies)
        for doc_id, text in collection.documents.items()
    ]
    model = SoftCosineModel.build(collection.documents.values(), WordEmbeddings.glove_6b_50d())
    texts = [d["text"] for d in docs]

    phases: dict[str, list[float]] = {"vectorize": [], "soft_norms": [], "sources": []}
    for _ in range(args.repeats):
        seconds, weights = timed(model.vectorize_many, texts)
        phases["vectorize"].append(seconds)
        seconds, norms = timed(model.similarity_matrix.soft_norm, weights)
        phases["soft_norms"].append(seconds)
        started = time.perf_counter()
        sources = [document_source(t, weights[i], norms[i], None) for i, t in enumerate(texts)]
        phases["sources"].append(time.perf_counter() - started)

    standard = client_from_env(args.es_url, serializers={}, request_timeout=120)
    variants = {
        "text": (),
        "text+exact": ("exact",),
        "text+vector": ("vector",),
        "text+exact+vector": ("exact", "vector"),
    }
    es_took = {
        name: statistics.median(
            bulk_took(standard, model, [schema_part(s, parts) for s in sources])
            for _ in range(args.repeats)
        )
        for name, parts in variants.items()
    }

    clients = {"json": standard}
    if fast_serializers():
        clients["orjson"] = client_from_env(args.es_url, request_timeout=120)
    rates: dict[str, list[float]] = {f"es_scm_{name}": [] for name in clients}
    rates.update({f"plain_{name}": [] for name in clients})
    for _ in range(args.repeats):
        for name, client in clients.items():
            rates[f"plain_{name}"].append(len(docs) / plain_bulk(client, docs))
            index = SCMIndex(client, INDEX, model)
            index.delete()
            index.create()
            report = index.index_documents(docs)
            assert report.ok
            rates[f"es_scm_{name}"].append(len(docs) / report.seconds)
    standard.indices.delete(index=INDEX)

    summary = {
        "documents": len(docs),
        "repeats": args.repeats,
        "python_seconds_median": {k: statistics.median(v) for k, v in phases.items()},
        "elasticsearch_took_seconds_median": es_took,
        "docs_per_second_median": {k: statistics.median(v) for k, v in rates.items()},
        "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "date": dt.date.today().isoformat(),
    }
    summary["bytes_per_document"] = float(np.mean([len(json.dumps(s)) for s in sources]))
    print(json.dumps(summary, indent=2))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
