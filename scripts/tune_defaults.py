#!/usr/bin/env python
"""Choose the defaults of S and W (and hybrid search's alpha) on training data only.

Training data: SemEval-2016 Task 3 train-part2 (subtask B, the official AP per question) and the
judged queries of Cranfield, CISI and CACM (AP@100 by ir_measures), with k-fold
cross-validation over the TREC queries: for every fold, the setting with the best mean MAP over
the four datasets (train-part2 and the other folds' queries) is scored on the held-out queries.
SemEval dev and the test sets are not read.

The SCM is computed in memory (the exact ranking that ``exact`` search returns); BM25 comes
from Elasticsearch (once per dataset) and hybrid search is its linear fusion with the SCM
(:func:`es_scm.evaluation.tuning.hybrid_run`). The SCM defaults are the setting with the best
mean SCM MAP; alpha is then the best hybrid fusion for that setting.

Usage::

    ES_SCM_CACHE=/tmp/es-scm-cache python scripts/tune_defaults.py --folds 5 \\
        --json results/tune_defaults.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from es_scm.defaults import HYBRID_DEFAULTS, SIMILARITY_DEFAULTS, TRAINING_DEFAULTS  # noqa: E402
from es_scm.elastic import SCMIndex, client_from_env  # noqa: E402
from es_scm.elastic.schema import TEXT_FIELD  # noqa: E402
from es_scm.evaluation import semeval, semeval_data  # noqa: E402
from es_scm.evaluation.collections import read_collection  # noqa: E402
from es_scm.evaluation.metrics import average_precision  # noqa: E402
from es_scm.evaluation.trec import evaluate_runs  # noqa: E402
from es_scm.evaluation.tuning import (  # noqa: E402
    bm25_scores,
    expand_grid,
    folds_of,
    hybrid_run,
    scm_scores,
    setting_name,
)
from es_scm.model import SoftCosineModel  # noqa: E402
from es_scm.similarity import WordEmbeddings  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
TRAIN = DATA / "semeval2016-task3" / "SemEval2016-Task3-CQA-QL-train-part2.xml"
GRIDS = {
    # the first search (training defaults then: CBOW, 10 epochs): results/tune_defaults_grid1.json
    "grid1": {
        "embeddings": ["glove", "train:word2vec", "train:fasttext"],
        "document_weighting": ["log-smooth", "raw-natural"],
        "nonzero_limit": [100, 200],
        "threshold,exponent": [(0.0, 2.0), (0.5, 4.0)],
    },
    # the second (skip-gram, 20 epochs): fewer, closer neighbours
    "grid2": {
        "embeddings": ["glove", "train:fasttext"],
        "document_weighting": ["log-smooth", "raw-natural"],
        "nonzero_limit": [10, 50, 100],
        "threshold,exponent": [(0.5, 4.0), (0.7, 4.0)],
    },
    # after the defaults (information only, defaults unchanged): GloVe and fastText combined,
    # and edit distance for typos, around the chosen setting
    "grid3": {
        "embeddings": [
            "0.3*glove+0.7*train:fasttext",
            "0.5*glove+0.5*train:fasttext",
            "0.7*glove+0.3*train:fasttext",
        ],
        "document_weighting": ["raw-natural"],
        "nonzero_limit": [50],
        "threshold,exponent": [(0.5, 4.0)],
        "levenshtein": [False, 0.2],
    },
}
ALPHAS = (0.3, 0.5, 0.7, 0.9)
logger = logging.getLogger("tune_defaults")


def options(setting: dict[str, Any], glove: WordEmbeddings) -> tuple[Any, dict[str, Any]]:
    """The embeddings and the keyword arguments of ``SoftCosineModel.build`` for a setting."""
    kwargs = {k: v for k, v in setting.items() if k not in ("embeddings", "threshold,exponent")}
    if "threshold,exponent" in setting:
        kwargs["threshold"], kwargs["exponent"] = setting["threshold,exponent"]
    return _embeddings(setting["embeddings"], glove), kwargs


def _embeddings(spec: str, glove: WordEmbeddings) -> Any:
    """``glove``, ``train:…``, or ``W*A+W*B`` combined (weights and sources)."""
    if "+" not in spec:
        return glove if spec == "glove" else spec
    parts = [part.split("*", 1) for part in spec.split("+")]
    return [(float(weight), _embeddings(source, glove)) for weight, source in parts]


def semeval_bm25(client: Any, questions: list[Any]) -> dict[str, dict[str, float]]:
    """Elasticsearch's BM25 of each original question's candidates."""
    name = f"es-scm-tune-semeval-{uuid.uuid4().hex[:10]}"
    index = SCMIndex(client, name, SoftCosineModel.build(semeval.corpus_texts(questions)))
    docs = [
        {"id": r.id, "text": semeval_data.clean_text(r.text)} for q in questions for r in q.related
    ]
    try:
        index.index_documents(docs, batch_size=500)
        client.indices.refresh(index=name)
        scores = {}
        for q in questions:
            query = {
                "bool": {
                    "must": {"match": {TEXT_FIELD: semeval_data.clean_text(q.text)}},
                    "filter": {"ids": {"values": q.candidate_ids}},
                }
            }
            hits = client.search(index=name, query=query, size=10, source=False)["hits"]["hits"]
            scores[q.id] = {h["_id"]: float(h["_score"]) for h in hits}
        return scores
    finally:
        index.delete()


def semeval_ap(questions: list[Any], scores: dict[str, dict[str, float]]) -> dict[str, float]:
    rankings = semeval.rankings_from_scores(questions, scores)
    return {q.id: average_precision(q.labels(rankings[q.id])) for q in questions}


def evaluate_semeval(client: Any, grid: list[dict], glove: Any) -> dict[str, dict[str, float]]:
    """Row → question → AP on train-part2."""
    questions = semeval_data.read_semeval([TRAIN])
    bm25 = semeval_bm25(client, questions)
    ap = {"bm25": semeval_ap(questions, bm25)}
    for setting in grid:
        embeddings, kwargs = options(setting, glove)
        model = semeval.build_model(questions, embeddings, **kwargs)
        scm = semeval.local_scm_scores(model, questions)
        name = setting_name(setting)
        ap[f"scm {name}"] = semeval_ap(questions, scm)
        for alpha in ALPHAS:
            fused = {q: hybrid_run(bm25[q], scm[q], alpha, 10) for q in scm}
            ap[f"hybrid@{alpha:g} {name}"] = semeval_ap(questions, fused)
        logger.info(
            "semeval %s: SCM MAP %.2f", name, 100 * statistics.fmean(ap[f"scm {name}"].values())
        )
    return ap


def evaluate_trec(
    client: Any, name: str, grid: list[dict], glove: Any
) -> dict[str, dict[str, float]]:
    """Row → query → AP@100 on one collection."""
    collection = read_collection(name, DATA / "ir-collections" / name)
    queries = list(collection.judged_queries())
    bm25 = bm25_scores(client, collection, size=1000)
    top = {q: dict(sorted(bm25[q].items(), key=lambda i: -i[1])[:100]) for q in queries}
    runs: dict[str, Any] = {"bm25": top}
    for setting in grid:
        embeddings, kwargs = options(setting, glove)
        model = SoftCosineModel.build(collection.documents.values(), embeddings, **kwargs)
        scm = scm_scores(model, collection, queries)
        row = setting_name(setting)
        runs[f"scm {row}"] = {
            q: dict(sorted(scm[q].items(), key=lambda i: -i[1])[:100]) for q in queries
        }
        for alpha in ALPHAS:
            runs[f"hybrid@{alpha:g} {row}"] = {
                q: hybrid_run(bm25[q], scm[q], alpha, 100) for q in queries
            }
        logger.info("%s %s done", name, row)
    runs = {m: {q: d or {"__none__": 0.0} for q, d in r.items()} for m, r in runs.items()}
    _, per_query = evaluate_runs({q: collection.qrels[q] for q in queries}, runs, ("AP",))
    return {m: {q: v["AP"] for q, v in per_query[m].items()} for m in runs}


def objective(
    ap: dict[str, dict[str, dict[str, float]]], row: str, held_out: dict[str, set]
) -> float:
    """Mean over the datasets of the row's MAP on their training queries."""
    maps = []
    for dataset, rows in ap.items():
        kept = [v for q, v in rows[row].items() if q not in held_out.get(dataset, set())]
        maps.append(statistics.fmean(kept))
    return statistics.fmean(maps)


def choose(ap: dict, held_out: dict[str, set]) -> tuple[str, str]:
    """The best SCM row, and the best hybrid row of the same setting."""
    rows = list(next(iter(ap.values())))
    scm_rows = [r for r in rows if r.startswith("scm ")]
    best = max(scm_rows, key=lambda r: objective(ap, r, held_out))
    setting = best.removeprefix("scm ")
    hybrids = [f"hybrid@{a:g} {setting}" for a in ALPHAS]
    return best, max(hybrids, key=lambda r: objective(ap, r, held_out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--es-url", default=os.environ.get("ES_URL", "http://127.0.0.1:9200"))
    parser.add_argument("--json", default=str(REPO / "results" / "tune_defaults.json"))
    parser.add_argument("--datasets", nargs="+", default=["semeval", "cranfield", "cisi", "cacm"])
    parser.add_argument("--grid", choices=GRIDS, default="grid2")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("es_scm").setLevel(logging.WARNING)
    logging.getLogger("gensim").setLevel(logging.WARNING)
    logging.getLogger("elastic_transport").setLevel(logging.WARNING)
    client = client_from_env(args.es_url, request_timeout=300)
    glove = WordEmbeddings.glove_6b_50d()
    grid = expand_grid(GRIDS[args.grid])
    started = time.perf_counter()
    ap: dict[str, dict[str, dict[str, float]]] = {}
    for dataset in args.datasets:
        if dataset == "semeval":
            ap[dataset] = evaluate_semeval(client, grid, glove)
        else:
            ap[dataset] = evaluate_trec(client, dataset, grid, glove)
    trec = [d for d in ap if d != "semeval"]
    fold_lists = {d: folds_of(list(ap[d]["bm25"]), args.folds) for d in trec}
    cross_validation = []
    for fold in range(args.folds):
        held_out = {d: set(fold_lists[d][fold]) for d in trec}
        scm_row, hybrid_row = choose(ap, held_out)
        scores = {
            d: {
                label: statistics.fmean(ap[d][row][q] for q in held_out[d])
                for label, row in (("bm25", "bm25"), ("scm", scm_row), ("hybrid", hybrid_row))
            }
            for d in trec
        }
        cross_validation.append(
            {"fold": fold, "scm": scm_row, "hybrid": hybrid_row, "held_out": scores}
        )
        logger.info("fold %d: %s / %s", fold, scm_row, hybrid_row)
    scm_row, hybrid_row = choose(ap, {})
    maps = {
        d: {row: statistics.fmean(v.values()) for row, v in rows.items()} for d, rows in ap.items()
    }
    summary = {
        "grid": {
            k: [list(v) if isinstance(v, tuple) else v for v in vs]
            for k, vs in GRIDS[args.grid].items()
        },
        "training_defaults": TRAINING_DEFAULTS,
        "alphas": ALPHAS,
        "previous_defaults": {**SIMILARITY_DEFAULTS, "alpha": HYBRID_DEFAULTS["alpha"]},
        "map": maps,
        "objective": {row: objective(ap, row, {}) for row in ap[next(iter(ap))]},
        "cross_validation": cross_validation,
        "cross_validated_map": {
            d: {
                side: statistics.fmean(f["held_out"][d][side] for f in cross_validation)
                for side in ("bm25", "scm", "hybrid")
            }
            for d in trec
        },
        "chosen": {"scm": scm_row, "hybrid": hybrid_row},
        "seconds": round(time.perf_counter() - started),
        "date": dt.date.today().isoformat(),
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: summary[k] for k in ("chosen", "cross_validated_map")}, indent=2))
    best = sorted(summary["objective"].items(), key=lambda item: -item[1])[:10]
    for row, value in best:
        print(
            f"{100 * value:6.2f}  {row}  "
            + "  ".join(f"{d} {100 * maps[d][row]:.2f}" for d in maps)
        )


if __name__ == "__main__":
    main()
