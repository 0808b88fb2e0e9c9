"""Tune the SCM for SemEval-2016 Task 3 subtask B on train-part2 (local exact SCM).

Every configuration of a small grid (embeddings × weighting × nonzero_limit × threshold ×
exponent) is scored by the official MAP on the given XML file(s); the table is printed best
first and written as JSON. Only train-part2 and dev may be used (the test sets are held out).

Usage::

    .venv/bin/python scripts/eval_semeval.py \
        --xml ../shared/data/semeval2016-task3/SemEval2016-Task3-CQA-QL-train-part2.xml \
        --json results/semeval-tuning-train-part2.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

from benchlib import provenance  # scripts/benchlib.py

from es_scm.evaluation import semeval, semeval_data
from es_scm.evaluation.word2vec import train_word2vec
from es_scm.model.text import TermWeighting
from es_scm.similarity import WordEmbeddings

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xml", nargs="+", required=True)
    parser.add_argument("--json", required=True)
    parser.add_argument(
        "--embeddings", nargs="+", default=["glove"], help="glove, or w2v:<corpus path>[|max_texts]"
    )
    parser.add_argument(
        "--weighting",
        nargs="+",
        default=["raw-natural", "log-smooth", "bm25"],
        help="weighting specs (TermWeighting.from_spec); queries get the default query weighting",
    )
    parser.add_argument("--nonzero-limit", nargs="+", type=int, default=[10, 100])
    parser.add_argument("--threshold", nargs="+", type=float, default=[0.0, 0.5])
    parser.add_argument("--exponent", nargs="+", type=float, default=[2.0, 4.0])
    parser.add_argument(
        "--tune-alpha",
        action="store_true",
        help="instead: tune the BM25 + SCM weight α through Elasticsearch ($ES_URL)"
        " with the first value of every model option",
    )
    args = parser.parse_args()

    questions = semeval_data.read_semeval(args.xml)
    if args.tune_alpha:
        _tune_alpha(args, questions)
        return
    baseline = semeval.evaluate(questions, {"ir-baseline": semeval.ir_baseline_scores(questions)})
    rows = [{"method": "ir-baseline", **baseline.methods["ir-baseline"]}]
    for embedding_spec in args.embeddings:
        embeddings = _embeddings(embedding_spec)
        for weighting in args.weighting:
            document = TermWeighting.from_spec(weighting)
            tfidf_done = False
            grid = itertools.product(args.nonzero_limit, args.threshold, args.exponent)
            for limit, threshold, exponent in grid:
                started = time.perf_counter()
                model = semeval.build_model(
                    questions,
                    embeddings,
                    document_weighting=document,
                    nonzero_limit=limit,
                    threshold=threshold,
                    exponent=exponent,
                )
                runs = {"scm": semeval.local_scm_scores(model, questions)}
                if not tfidf_done:
                    runs["tfidf"] = semeval.cosine_scores(model, questions)
                report = semeval.evaluate(questions, runs)
                if not tfidf_done:
                    rows.append(
                        {"method": "tfidf", "weighting": weighting, **report.methods["tfidf"]}
                    )
                    tfidf_done = True
                rows.append(
                    {
                        "method": "scm",
                        "embeddings": embedding_spec,
                        "weighting": weighting,
                        "nonzero_limit": limit,
                        "threshold": threshold,
                        "exponent": exponent,
                        **report.methods["scm"],
                        "seconds": round(time.perf_counter() - started, 2),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    rows.sort(key=lambda row: -row["MAP"])
    report = {"provenance": provenance(sys.argv), "xml": args.xml, "rows": rows}
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    for row in rows[:15]:
        print(
            f"{row['MAP']:6.2f} {row['AvgRec']:6.2f} {row['MRR']:6.2f}  "
            + " ".join(
                f"{k}={v}" for k, v in row.items() if k not in ("MAP", "AvgRec", "MRR", "seconds")
            )
        )


def _tune_alpha(args: argparse.Namespace, questions: list) -> None:
    from es_scm.elastic.connection import client_from_env
    from es_scm.fusion import interpolate_scores

    model = semeval.build_model(
        questions,
        _embeddings(args.embeddings[0]),
        document_weighting=TermWeighting.from_spec(args.weighting[0]),
        nonzero_limit=args.nonzero_limit[0],
        threshold=args.threshold[0],
        exponent=args.exponent[0],
    )
    client = client_from_env()
    es_runs = semeval.elasticsearch_scores(client, model, questions)
    rows = []
    for step in range(11):
        alpha = step / 10
        fused = {
            q.id: interpolate_scores(
                es_runs["es-bm25"][q.id], es_runs["es-scm"][q.id], alpha, q.candidate_ids
            )
            for q in questions
        }
        scores = semeval.evaluate(questions, {"bm25+scm": fused}).methods["bm25+scm"]
        rows.append({"alpha": alpha, **scores})
        print(
            f"alpha={alpha:.1f} MAP={scores['MAP']:.2f} AvgRec={scores['AvgRec']:.2f} "
            f"MRR={scores['MRR']:.2f}"
        )
    settings = {
        "embeddings": args.embeddings[0],
        "weighting": args.weighting[0],
        "nonzero_limit": args.nonzero_limit[0],
        "threshold": args.threshold[0],
        "exponent": args.exponent[0],
    }
    report = {"provenance": provenance(sys.argv, client), "xml": args.xml}
    report.update(settings=settings, rows=rows)
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


def _embeddings(spec: str):
    if spec == "glove":
        return WordEmbeddings.glove_6b_50d()
    if spec.startswith("w2v:"):
        parts = spec[4:].split("|")
        max_texts = int(parts[1]) if len(parts) > 1 else None
        return train_word2vec(parts[0], max_texts=max_texts)
    raise SystemExit(f"unknown embeddings {spec!r}")


if __name__ == "__main__":
    main()
