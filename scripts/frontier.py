"""The quality side of issue 40's frontier: how many of each query word's neighbours the SCM's
retrieval must send, measured through Elasticsearch on the training collections.

For each collection (SciFact train, NFCorpus dev, SemEval-2016 dev, Cranfield, CISI, CACM) the
default model is built as ``es-scm eval`` builds it, its documents indexed once (BM25 with the
``english`` analyzer, as ``eval`` does), and evaluated:

* ``bm25``, ``scm`` (exact search) and ``bm25+scm`` (hybrid with the exact SCM leg: every
  neighbour sent) — today's methods, which docs/QUALITY.md reports;
* ``bm25+scm@N`` — hybrid with the two-phase SCM leg: its candidates fetched with each query
  word and its N strongest neighbours, every candidate scored with the exact SCM;
* ``fast@N/W`` — the two-phase SCM alone (window W), its top 10 against ``exact``'s (overlap)
  and its nDCG@10 beside the exact SCM's;

with the clauses the first phase sends (p50 over the queries). Every collection's measure is
the one docs/QUALITY.md uses (nDCG@10 on the BEIR collections, AP@100 on the TREC ones,
SemEval's MAP). The node's time of each setting is measured by
``scripts/bench_search_cost.py`` on Wikipedia paragraphs, not here (these collections are too
small for their times to mean anything).

Usage::

    python scripts/frontier.py --es-url http://127.0.0.1:9200 --json results/frontier.json
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch

from es_scm.cli.embeddings import load_embeddings
from es_scm.cli.main import build_parser
from es_scm.cli.options import judged_collection_from_args, model_options
from es_scm.evaluation import semeval, semeval_data
from es_scm.evaluation.collections import read_collection
from es_scm.evaluation.provenance import provenance
from es_scm.evaluation.trec import evaluate_runs, run_collection
from es_scm.model import SoftCosineModel
from es_scm.options.defaults import TEXT_ANALYZER

logger = logging.getLogger("frontier")

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: Collection → (kind, the measure docs/QUALITY.md reports).
COLLECTIONS = {
    "scifact-train": ("beir", "nDCG@10"),
    "nfcorpus-dev": ("beir", "nDCG@10"),
    "semeval-dev": ("semeval", "map"),
    "cranfield": ("trec", "AP@100"),
    "cisi": ("trec", "AP@100"),
    "cacm": ("trec", "AP@100"),
}
BEIR = {
    "scifact-train": ("beir-scifact-train", "qrels/train.tsv"),
    "nfcorpus-dev": ("beir-nfcorpus-train", "qrels/dev.tsv"),
}


def _args(argv: list[str]) -> argparse.Namespace:
    """The ``es-scm eval`` arguments of the defaults (so that the model is built as ``eval``
    builds it)."""
    return build_parser().parse_args(argv)


def _collection(name: str) -> Any:
    if name in BEIR:
        folder, qrels = BEIR[name]
        base = DATA / folder
        args = _args(
            [
                "eval",
                "collection",
                "--corpus",
                str(base / "corpus.jsonl"),
                "--topics",
                str(base / "queries.jsonl"),
                "--qrels",
                str(base / qrels),
            ]
        )
        return args, judged_collection_from_args(args, name=name)
    args = _args(["eval", "trec", "--collection", name, "--data", str(DATA / "ir-collections")])
    return args, read_collection(name, DATA / "ir-collections" / name)


def _p50(values: list[int]) -> float:
    return float(statistics.median(values)) if values else 0.0


def _hybrids(neighbours: list[int]) -> dict[str, dict[str, Any]]:
    methods: dict[str, dict[str, Any]] = {"bm25+scm": {"neighbours": "all"}}
    methods.update({f"bm25+scm@{n}": {"neighbours": n} for n in neighbours})
    return methods


def _clauses(searcher: Any, queries: dict[str, str], neighbours: list[int]) -> dict[str, float]:
    """p50 of the clauses the SCM's retrieval sends: every neighbour (``exact``'s first round)
    and each budget's first phase."""
    counts = {"all": [r.expansion_terms for r in searcher.batch_search(queries, 10).values()]}
    for n in neighbours:
        results = searcher.batch_search(queries, 10, method="fast", neighbours=n, window=10)
        counts[str(n)] = [r.expansion_terms - r.pruned_terms for r in results.values()]
    return {key: _p50(values) for key, values in counts.items()}


def _fast(
    searcher: Any,
    collection: Any,
    neighbours: list[int],
    windows: list[int],
) -> dict[str, Any]:
    """``fast``'s top 10 against ``exact``'s: overlap (mean, worst query, queries identical)
    and nDCG@10 of both."""
    queries = collection.judged_queries()
    exact = searcher.batch_search(queries, 10, unproven="keep")
    runs = {"scm": {q: {h.id: h.score for h in r.hits} for q, r in exact.items()}}
    overlap: dict[str, Any] = {}
    for n in neighbours:
        for w in windows:
            name = f"fast@{n}/{w}"
            results = searcher.batch_search(queries, 10, method="fast", neighbours=n, window=w)
            runs[name] = {q: {h.id: h.score for h in r.hits} for q, r in results.items()}
            shares = []
            for q, result in results.items():
                want = [h.id for h in exact[q].hits]
                if want:
                    shares.append(len(set(want) & {h.id for h in result.hits}) / len(want))
            overlap[name] = {
                "mean": statistics.fmean(shares),
                "worst": min(shares),
                "identical": sum(s == 1.0 for s in shares) / len(shares),
                "certified": sum(r.exact_guarantee for r in results.values()) / len(results),
            }
    qrels = {q: collection.qrels[q] for q in queries}
    aggregate, _ = evaluate_runs(qrels, {m: r for m, r in runs.items() if r}, ["nDCG@10"])
    return {
        "overlap": overlap,
        "nDCG@10": {m: values["nDCG@10"] for m, values in aggregate.items()},
    }


def run_trec_like(
    client: Any, name: str, neighbours: list[int], fast_neighbours: list[int], windows: list[int]
) -> dict[str, Any]:
    from es_scm.elastic import Searcher

    args, collection = _collection(name)
    measure = COLLECTIONS[name][1]
    started = time.perf_counter()
    model = SoftCosineModel.build(
        collection.documents.values(), load_embeddings(args), **model_options(args)
    )
    index_name = f"frontier-{name}-{uuid.uuid4().hex[:8]}"
    report, _ = run_collection(
        client,
        model,
        collection,
        depth=100,
        hybrids=_hybrids(neighbours),
        index_name=index_name,
        keep_index=True,
        measures=[measure],
        text_analyzer=TEXT_ANALYZER,
    )
    try:
        searcher = Searcher(client, index_name, model)
        queries = collection.judged_queries()
        clauses = _clauses(searcher, queries, neighbours)
        fast = _fast(searcher, collection, fast_neighbours, windows)
    finally:
        client.indices.delete(index=index_name)
    quality = {m: values[measure] for m, values in report.methods.items()}
    logger.info("%s done in %.0f s: %s", name, time.perf_counter() - started, quality)
    return {
        "measure": measure,
        "queries": len(collection.judged_queries()),
        "quality": quality,
        "clauses_p50": clauses,
        "fast": fast,
        "per_query": report.per_query,
    }


def run_semeval(client: Any, neighbours: list[int]) -> dict[str, Any]:
    folder = DATA / "semeval2016-task3"
    xml = folder / "SemEval2016-Task3-CQA-QL-dev.xml"
    gold = folder / "SemEval2016-Task3-CQA-QL-dev.xml.subtaskB.relevancy"
    args = _args(["eval", "semeval", "--xml", str(xml), "--gold", str(gold)])
    questions = semeval_data.read_semeval(str(xml), str(gold))
    model = semeval.build_model(questions, load_embeddings(args), **model_options(args))
    report = semeval.run_all(
        questions,
        model,
        client=client,
        hybrids=_hybrids(neighbours),
        text_analyzer=TEXT_ANALYZER,
    )
    quality = {m: values["MAP"] / 100 for m, values in report.methods.items()}
    logger.info("semeval-dev: %s", quality)
    return {"measure": "map", "queries": len(questions), "quality": quality}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--es-url", default="http://127.0.0.1:9200")
    parser.add_argument("--collections", nargs="+", default=list(COLLECTIONS))
    parser.add_argument("--neighbours", nargs="+", type=int, default=[1, 2, 3, 5, 10, 20])
    parser.add_argument("--windows", nargs="+", type=int, default=[50, 100])
    parser.add_argument(
        "--fast-neighbours", nargs="+", type=int, default=[3, 5, 10], help="fast's budgets"
    )
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if not DATA.is_dir():
        print(f"frontier: the data folder {DATA} is absent", file=sys.stderr)
        return 2
    client = Elasticsearch(args.es_url, request_timeout=120)
    out: dict[str, Any] = {"collections": {}}
    path = Path(args.json)
    for name in args.collections:
        if COLLECTIONS[name][0] == "semeval":
            out["collections"][name] = run_semeval(client, args.neighbours)
        else:
            out["collections"][name] = run_trec_like(
                client, name, args.neighbours, args.fast_neighbours, args.windows
            )
        out["provenance"] = provenance(sys.argv, client)
        path.write_text(json.dumps(out, indent=1, default=str))  # each collection kept as done
    print(summary(out))
    return 0


def summary(out: dict[str, Any]) -> str:
    """Hybrid's and the SCM's gain over BM25 per collection, worst and mean."""
    lines = []
    gains: dict[str, list[float]] = {}
    for name, entry in out["collections"].items():
        quality = entry["quality"]
        bm25 = quality.get("bm25", quality.get("es-bm25"))
        row = {m: 100 * (v - bm25) for m, v in quality.items() if m.startswith("bm25+scm")}
        for m, gain in row.items():
            gains.setdefault(m, []).append(gain)
        lines.append(f"{name}: " + ", ".join(f"{m} {g:+.2f}" for m, g in sorted(row.items())))
    for m, values in sorted(gains.items()):
        lines.append(f"{m}: worst {min(values):+.2f} mean {statistics.fmean(values):+.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
