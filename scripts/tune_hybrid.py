#!/usr/bin/env python
"""Choose hybrid search's defaults (fusion, alpha, RRF's k) on training data only.

Training data: SemEval-2016 Task 3 train-part2 (subtask B, MAP of the official scorer) and the
judged queries of Cranfield, CISI and CACM (MAP@100 by ir_measures), with k-fold
cross-validation over the TREC queries: for every fold, the configuration with the best mean MAP
on the training data (SemEval train-part2 and the other folds' queries of the three collections)
is evaluated on the fold's held-out queries. The default is then the configuration that is best
on all the training data. SemEval dev and the test sets are not read.

Every configuration runs through es-scm's own hybrid search (``Searcher.hybrid``),
the code path that users get; the models use the current defaults (``es_scm.options.defaults``).

Usage::

    python scripts/tune_hybrid.py --folds 5      # → results/tune_hybrid.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import provenance  # noqa: E402  (scripts/benchlib.py)

from es_scm.elastic import client_from_env  # noqa: E402
from es_scm.evaluation import semeval, semeval_data  # noqa: E402
from es_scm.evaluation.collections import read_collection  # noqa: E402
from es_scm.evaluation.trec import run_collection  # noqa: E402
from es_scm.model import SoftCosineModel  # noqa: E402
from es_scm.similarity import WordEmbeddings  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
TRAIN = DATA / "semeval2016-task3" / "SemEval2016-Task3-CQA-QL-train-part2.xml"


def configurations() -> dict[str, dict]:
    configs = {f"rrf-k{k}": {"fusion": "rrf", "rrf_k": k} for k in (10, 30, 60, 100)}
    for step in range(11):
        alpha = step / 10
        configs[f"linear-a{alpha:.1f}"] = {"fusion": "linear", "alpha": alpha}
    return configs


def folds_of(queries: list[str], folds: int) -> list[list[str]]:
    ordered = sorted(queries, key=lambda q: (len(q), q))
    return [ordered[i::folds] for i in range(folds)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--es-url", default=os.environ.get("ES_URL", "http://127.0.0.1:9200"))
    parser.add_argument("--json", default=str(REPO / "results" / "tune_hybrid.json"))
    args = parser.parse_args()
    client = client_from_env(args.es_url, request_timeout=300)
    glove = WordEmbeddings.glove_6b_50d()
    configs = configurations()

    questions = semeval_data.read_semeval([TRAIN])
    model = semeval.build_model(questions, glove)
    report = semeval.run_all(questions, model, client=client, hybrids=configs)
    semeval_map = {name: report.methods[name]["MAP"] / 100 for name in configs}
    semeval_baselines = {m: report.methods[m]["MAP"] / 100 for m in ("es-bm25", "es-scm")}
    print("semeval train-part2 MAP:", {k: round(v, 4) for k, v in semeval_map.items()})

    per_query: dict[str, dict[str, dict[str, float]]] = {}  # collection → method → query → AP
    for name in ("cranfield", "cisi", "cacm"):
        collection = read_collection(name, DATA / "ir-collections" / name)
        model = SoftCosineModel.build(collection.documents.values(), glove)
        trec_report, _ = run_collection(client, model, collection, hybrids=configs)
        per_query[name] = {
            method: {q: values["AP"] for q, values in queries.items()}
            for method, queries in trec_report.per_query.items()
        }
        print(name, {m: round(v["AP"], 4) for m, v in trec_report.methods.items()}, flush=True)

    def trec_map(method: str, collection: str, queries: list[str]) -> float:
        return statistics.fmean(per_query[collection][method][q] for q in queries)

    def objective(method: str, held_out: dict[str, set[str]]) -> float:
        maps = [semeval_map[method]]
        for collection, values in per_query.items():
            train = [q for q in values[method] if q not in held_out.get(collection, set())]
            maps.append(trec_map(method, collection, train))
        return statistics.fmean(maps)

    cross_validation = []
    fold_lists = {c: folds_of(list(per_query[c]["bm25"]), args.folds) for c in per_query}
    for fold in range(args.folds):
        held_out = {c: set(fold_lists[c][fold]) for c in per_query}
        best = max(configs, key=lambda m: objective(m, held_out))
        test = {
            c: {
                "chosen": trec_map(best, c, sorted(held_out[c])),
                "bm25": trec_map("bm25", c, sorted(held_out[c])),
                "scm": trec_map("scm", c, sorted(held_out[c])),
            }
            for c in per_query
        }
        cross_validation.append({"fold": fold, "chosen": best, "held_out_map": test})
        print(f"fold {fold}: {best} {test}", flush=True)
    overall = {m: objective(m, {}) for m in configs}
    default = max(overall, key=overall.get)
    summary = {
        "provenance": provenance(sys.argv, client),
        "configurations": configs,
        "semeval_train_part2_map": semeval_map,
        "semeval_train_part2_baselines": semeval_baselines,
        "trec_map": {
            c: {m: statistics.fmean(v.values()) for m, v in per_query[c].items()} for c in per_query
        },
        "objective_all_training_data": overall,
        "cross_validation": cross_validation,
        "cross_validated_map": {
            c: {
                side: statistics.fmean(f["held_out_map"][c][side] for f in cross_validation)
                for side in ("chosen", "bm25", "scm")
            }
            for c in per_query
        },
        "default": {"name": default, **configs[default]},
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: summary[k] for k in ("default", "cross_validated_map")}, indent=2))


if __name__ == "__main__":
    main()
