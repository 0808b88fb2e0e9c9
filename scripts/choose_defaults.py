#!/usr/bin/env python
"""Choose the defaults of S, W and hybrid search on the training collections only.

Every configuration (how S and W are built: :data:`CONFIGS`) is built on each collection's own
corpus with :meth:`SoftCosineModel.build`, every judged query is ranked with the exact SCM in
memory (:class:`BruteForceSearch`: the ranking ``exact`` search returns), and fused with
Elasticsearch's BM25 (``match`` on an index of the texts; the ``standard`` and the ``english``
analyzer) by the fusions of :mod:`es_scm.fusion`, over each side's top 100 (SemEval: the
question's 10 candidates), exactly as hybrid search and ``es-scm tune`` fuse. A default is good
when it beats BM25 on *every* collection: the tables give each collection's gain, the mean and
the worst.

Collections (``../shared/data``): SemEval-2016 train-part2 (official MAP), Cranfield, CISI, CACM
(AP over the top 100), BEIR SciFact train (nDCG@10, and R@100); ``--samples`` adds random shares
of them as small corpora (1–20 % of the documents, the judgments restricted to them). SemEval dev
and the test splits are not read.

Usage::

    python scripts/choose_defaults.py --json results/choose_defaults.json
    python scripts/choose_defaults.py --samples --configs glove auto "auto, 20 epochs" \\
        --json results/choose_defaults_small.json
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import provenance  # noqa: E402

from es_scm.elastic import client_from_env  # noqa: E402
from es_scm.evaluation import semeval, semeval_data  # noqa: E402
from es_scm.evaluation.collections import read_collection  # noqa: E402
from es_scm.evaluation.metrics import average_precision  # noqa: E402
from es_scm.evaluation.topics import read_test_collection  # noqa: E402
from es_scm.evaluation.trec import evaluate_runs  # noqa: E402
from es_scm.evaluation.tuning import fusion_row, hybrid_run  # noqa: E402
from es_scm.fusion import fusion_from  # noqa: E402
from es_scm.model import BruteForceSearch, SoftCosineModel  # noqa: E402
from es_scm.model.auto import AutoEmbeddings  # noqa: E402
from es_scm.search.query import bm25_query  # noqa: E402
from es_scm.similarity import WordEmbeddings  # noqa: E402
from es_scm.similarity.training import EmbeddingTraining  # noqa: E402

DATA = REPO.parent / "shared" / "data"
logger = logging.getLogger("choose_defaults")

#: name -> (embeddings factory, build options)
CONFIGS: dict[str, tuple[Callable[[], Any], dict[str, Any]]] = {
    "tfidf": (lambda: None, {}),
    "glove": (WordEmbeddings.glove_6b_50d, {}),
    "fasttext": (lambda: EmbeddingTraining(method="fasttext"), {}),
    "auto": (lambda: "auto", {}),
    "auto, raw-natural": (lambda: "auto", {"document_weighting": "raw-natural"}),
    "auto, 20 epochs": (lambda: AutoEmbeddings(EmbeddingTraining(epochs=20)), {}),
    "auto, word2vec": (lambda: AutoEmbeddings(EmbeddingTraining(method="word2vec")), {}),
    "auto, no unseen words": (lambda: "auto", {"unseen_limit": 0}),
}
FUSIONS = [fusion_from("max", alpha=a) for a in (0.3, 0.4, 0.5, 0.6, 0.7)] + [
    fusion_from("linear", alpha=0.5),
    fusion_from("zscore", alpha=0.5),
    fusion_from("rrf"),
]
ANALYZERS = ("standard", "english")
SAMPLES = {
    "cranfield": (0.03, 0.1, 0.2),
    "cisi": (0.03, 0.1, 0.2),
    "cacm": (0.03, 0.1, 0.2),
    "scifact": (0.01, 0.03, 0.05),
}


@dataclass
class Collection:
    """Documents, judged queries and qrels; for SemEval, each question's 10 candidates."""

    name: str
    documents: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    corpus: list[str]
    measure: str
    questions: list[Any] = field(default_factory=list)

    @property
    def depth(self) -> int:
        return 10 if self.questions else 100


def load(name: str) -> Collection:
    if name == "semeval-train":
        path = DATA / "semeval2016-task3" / "SemEval2016-Task3-CQA-QL-train-part2.xml"
        qs = semeval_data.read_semeval([path])
        documents = {r.id: semeval_data.clean_text(r.text) for q in qs for r in q.related}
        queries = {q.id: semeval_data.clean_text(q.text) for q in qs}
        qrels = {q.id: {r.id: int(r.relevant) for r in q.related} for q in qs}
        return Collection(name, documents, queries, qrels, semeval.corpus_texts(qs), "MAP", qs)
    if name == "scifact":
        folder = DATA / "beir-scifact-train"
        files = [folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / "train.tsv"]
        full = read_test_collection(*files, name=name)
        measure = "nDCG@10"
    else:
        full = read_collection(name, DATA / "ir-collections" / name)
        measure = "AP@100"
    queries = full.judged_queries()
    return Collection(
        name, full.documents, queries, full.qrels, list(full.documents.values()), measure
    )


def sample(collection: Collection, share: float, seed: int = 7) -> Collection:
    """A random ``share`` of the documents, as a small corpus, with the judgments that remain."""
    rng = np.random.default_rng(seed)
    documents = {d: t for d, t in collection.documents.items() if rng.random() < share}
    qrels = {q: {d: g for d, g in r.items() if d in documents} for q, r in collection.qrels.items()}
    qrels = {q: r for q, r in qrels.items() if any(g > 0 for g in r.values())}
    queries = {q: t for q, t in collection.queries.items() if q in qrels}
    name = f"{collection.name}@{share:g}"
    return Collection(name, documents, queries, qrels, list(documents.values()), collection.measure)


def bm25_runs(client: Any, collection: Collection, analyzer: str) -> dict[str, dict[str, float]]:
    """Elasticsearch's BM25 (``match`` on the text) of every query: its top 1,000."""
    index = f"es-scm-choose-{uuid.uuid4().hex[:10]}"
    text = {"type": "text", "analyzer": analyzer}
    client.indices.create(index=index, mappings={"properties": {"text": text}})
    try:
        from elasticsearch.helpers import bulk

        actions = ({"_index": index, "_id": d, "text": t} for d, t in collection.documents.items())
        bulk(client, actions, chunk_size=1000, refresh="wait_for")
        runs = {}
        for question in collection.questions or [None]:
            for qid, query_text in _queries(collection, question):
                ids = question.candidate_ids if question is not None else None
                query = bm25_query(query_text, ids=ids)
                hits = client.search(index=index, query=query, size=1000, source=False)
                runs[qid] = {h["_id"]: float(h["_score"]) for h in hits["hits"]["hits"]}
        return runs
    finally:
        client.indices.delete(index=index)


def _queries(collection: Collection, question: Any) -> list[tuple[str, str]]:
    if question is None:
        return list(collection.queries.items())
    return [(question.id, collection.queries[question.id])]


def scm_runs(model: Any, collection: Collection) -> dict[str, dict[str, float]]:
    """The exact SCM of every query with every document (its top 1,000 positive scores)."""
    if collection.questions:
        return semeval.local_scm_scores(model, collection.questions)
    ids = list(collection.documents)
    brute = BruteForceSearch(model, ids, collection.documents.values())
    runs = {}
    for qid, text in collection.queries.items():
        scores = brute.scores(text)
        positive = np.flatnonzero(scores > 0)
        best = positive[np.argsort(-scores[positive], kind="stable")[:1000]]
        runs[qid] = {ids[i]: float(scores[i]) for i in best}
    return runs


def measure(collection: Collection, runs: dict[str, dict[str, dict[str, float]]]) -> dict:
    """Row -> measure -> mean, × 100 (SemEval: the official MAP; else ir_measures)."""
    if collection.questions:
        out = {}
        for row, run in runs.items():
            ranked = semeval.rankings_from_scores(collection.questions, run)
            ap = [average_precision(q.labels(ranked[q.id])) for q in collection.questions]
            out[row] = {"MAP": 100 * statistics.fmean(ap)}
        return out
    measures = (collection.measure, "R@100", "nDCG@10", "AP@100")
    measures = tuple(dict.fromkeys(measures))
    qrels = {q: collection.qrels[q] for q in collection.queries}
    nonempty = {m: {q: r.get(q) or {"__none__": 0.0} for q in qrels} for m, r in runs.items()}
    aggregate, _ = evaluate_runs(qrels, nonempty, measures)
    return {row: {m: 100 * v for m, v in values.items()} for row, values in aggregate.items()}


def evaluate(client: Any, collection: Collection, configs: list[str]) -> dict[str, Any]:
    """Every row (BM25, TF-IDF, each config's SCM and fusions) of one collection."""
    bm25 = {analyzer: bm25_runs(client, collection, analyzer) for analyzer in ANALYZERS}
    runs = {
        f"bm25 {a}": {q: _top(r.get(q, {}), collection.depth) for q in r} for a, r in bm25.items()
    }
    seconds, choices = {}, {}
    for name in configs:
        embeddings, options = CONFIGS[name]
        started = time.perf_counter()
        model = SoftCosineModel.build(collection.corpus, embeddings(), n_jobs=1, **options)
        seconds[name] = time.perf_counter() - started
        choices[name] = model.similarity_matrix.build_info.get("auto")
        scm = scm_runs(model, collection)
        runs[f"{name} | scm"] = {
            q: _top(scm.get(q, {}), collection.depth) for q in collection.queries
        }
        for analyzer in ANALYZERS:
            for fusion in FUSIONS:
                row = f"{name} | {fusion_row(fusion)} {analyzer}"
                runs[row] = {
                    q: hybrid_run(
                        bm25[analyzer].get(q, {}), scm.get(q, {}), fusion, collection.depth
                    )
                    for q in collection.queries
                }
        logger.info("%s: %s built in %.1fs", collection.name, name, seconds[name])
    return {
        "queries": len(collection.queries),
        "documents": len(collection.documents),
        "measure": collection.measure if not collection.questions else "MAP",
        "rows": measure(collection, runs),
        "build_seconds": seconds,
        "auto": choices,
    }


def _top(scores: dict[str, float], n: int) -> dict[str, float]:
    return dict(sorted(scores.items(), key=lambda i: (-i[1], i[0]))[:n])


def table(results: dict[str, Any], analyzer: str) -> str:
    """Gain of every row over BM25 (``analyzer``) in each collection's measure: mean, worst."""
    names = list(results)
    rows = [r for r in results[names[0]]["rows"] if not r.startswith("bm25")]
    rows = [r for r in rows if r.endswith("| scm") or r.endswith(" " + analyzer)]
    head = "| row | " + " | ".join(names) + " | mean | worst |"
    lines = [head, "|:---|" + "---:|" * (len(names) + 2)]
    base = [results[n]["rows"][f"bm25 {analyzer}"][results[n]["measure"]] for n in names]
    lines.append("| BM25 " + analyzer + " | " + " | ".join(f"{b:.2f}" for b in base) + " | | |")
    for row in rows:
        gains = [
            results[n]["rows"][row][results[n]["measure"]] - b
            for n, b in zip(names, base, strict=True)
        ]
        cells = " | ".join(f"{g:+.2f}" for g in gains)
        lines.append(
            f"| {row.removesuffix(' ' + analyzer)} | {cells} | "
            f"{statistics.fmean(gains):+.2f} | {min(gains):+.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--datasets", nargs="+", default=["semeval-train", "cranfield", "cisi", "cacm", "scifact"]
    )
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--samples", action="store_true", help="small random shares instead")
    parser.add_argument("--json", default=str(REPO / "results" / "choose_defaults.json"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    for noisy in ("es_scm", "gensim", "elastic_transport"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    client = client_from_env(request_timeout=300)
    collections = [load(name) for name in args.datasets]
    if args.samples:
        collections = [sample(c, share) for c in collections for share in SAMPLES.get(c.name, ())]
    started = time.perf_counter()
    results = {c.name: evaluate(client, c, args.configs) for c in collections}
    report = {
        "provenance": provenance(sys.argv, client),
        "fusions": [f.describe() for f in FUSIONS],
        "collections": results,
        "seconds": round(time.perf_counter() - started),
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    for analyzer in ANALYZERS:
        print(f"\nGain over BM25 ({analyzer} analyzer), each collection's measure:\n")
        print(table(results, analyzer))


if __name__ == "__main__":
    main()
