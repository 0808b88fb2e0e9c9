#!/usr/bin/env python
"""BM25 on BEIR SciFact train: one field holding title and text, or the two as separate fields.

Each variant is an Elasticsearch query over an index with ``title``, ``text`` and ``all`` (title,
newline, text) analyzed alike (``standard`` or ``english``): ``match`` on ``all`` (what es-scm
does with ``--title-field``), and ``multi_match`` over ``title`` and ``text`` (best fields, with
a tie breaker, most fields, cross fields, a boosted title). nDCG@10 and R@100 by ir_measures.

Usage::

    python scripts/compare_bm25_fields.py --json results/bm25_fields_scifact.json
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import provenance  # noqa: E402
from elasticsearch.helpers import bulk  # noqa: E402

from es_scm.elastic import client_from_env  # noqa: E402
from es_scm.evaluation.topics import read_qrels, read_topics  # noqa: E402
from es_scm.evaluation.trec import evaluate_runs  # noqa: E402

FOLDER = REPO.parent / "shared" / "data" / "beir-scifact-train"
FIELDS = ["title", "text"]
QUERIES = {
    "match title + text as one field": lambda t: {"match": {"all": t}},
    "multi_match best_fields": lambda t: {"multi_match": {"query": t, "fields": FIELDS}},
    "multi_match best_fields, tie_breaker 0.3": lambda t: {
        "multi_match": {"query": t, "fields": FIELDS, "tie_breaker": 0.3}
    },
    "multi_match most_fields": lambda t: {
        "multi_match": {"query": t, "fields": FIELDS, "type": "most_fields"}
    },
    "multi_match most_fields, title^2": lambda t: {
        "multi_match": {"query": t, "fields": ["title^2", "text"], "type": "most_fields"}
    },
    "multi_match cross_fields": lambda t: {
        "multi_match": {"query": t, "fields": FIELDS, "type": "cross_fields"}
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default=str(REPO / "results" / "bm25_fields_scifact.json"))
    args = parser.parse_args()
    client = client_from_env(request_timeout=300)
    with open(FOLDER / "corpus.jsonl", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines]
    qrels = read_qrels(FOLDER / "qrels" / "train.tsv")
    topics = {q: t for q, t in read_topics(FOLDER / "queries.jsonl").items() if q in qrels}
    results: dict[str, dict[str, dict[str, float]]] = {}
    for analyzer in ("standard", "english"):
        index = f"es-scm-fields-{uuid.uuid4().hex[:8]}"
        text = {"type": "text", "analyzer": analyzer}
        mappings = {"properties": {name: text for name in ("title", "text", "all")}}
        client.indices.create(index=index, mappings=mappings)
        try:
            docs = (
                {"_index": index, "_id": r["_id"], "title": r["title"], "text": r["text"],
                 "all": f"{r['title']}\n{r['text']}"}
                for r in records
            )  # fmt: skip
            bulk(client, docs, refresh="wait_for")
            runs = {}
            for name, make in QUERIES.items():
                runs[name] = {}
                for qid, query in topics.items():
                    hits = client.search(index=index, query=make(query), size=100, source=False)
                    runs[name][qid] = {h["_id"]: h["_score"] for h in hits["hits"]["hits"]}
            aggregate, _ = evaluate_runs(qrels, runs, ("nDCG@10", "R@100"))
            results[analyzer] = {
                n: {m: 100 * v for m, v in a.items()} for n, a in aggregate.items()
            }
        finally:
            client.indices.delete(index=index)
        for name, values in results[analyzer].items():
            scores = f"nDCG@10 {values['nDCG@10']:.2f} R@100 {values['R@100']:.2f}"
            print(f"{analyzer:8} {name:42} {scores}")
    report = {"provenance": provenance(sys.argv, client), "results": results}
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
