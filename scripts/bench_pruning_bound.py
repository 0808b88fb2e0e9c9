#!/usr/bin/env python
"""Could a tighter bound make a pruned expansion provably exact? In memory, no Elasticsearch.

Exact mode keeps at most M terms of the expansion x' = SᵀWx and must bound what the others can add
to a document's score, Σ_{t∈D} x'_t·y'_t. Today's bound is Cauchy–Schwarz, ‖x'_D‖₂ (‖y'‖₂ ≤ 1).
Per-term maximum impacts m_t = max_d y'_{d,t}, kept with the index (MaxScore-style), would allow
the tighter max Σ x'_t·y_t over 0 ≤ y_t ≤ m_t, ‖y‖₂ ≤ 1. This script asks, for every query,
whether even in the best case for the proof (a window whose lowest score is 0) the exact k-th
score would beat either bound divided by ‖x‖_S — if not, no window can prove the pruned top k.

Usage::

    python scripts/bench_pruning_bound.py --docs 100000 --queries 100 --max-clauses 16 32 64 128

``--model DIR`` reads a model built on the same first ``--docs`` paragraphs (e.g. the default's,
S from the sentence encoder: ``es-scm model build``) instead of building one with GloVe 6B 50d.

Writes ``results/bench_pruning_bound.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import provenance  # noqa: E402  (scripts/benchlib.py)

from es_scm.evaluation.collections import read_wikipedia_paragraphs  # noqa: E402
from es_scm.model import BruteForceSearch, SoftCosineModel  # noqa: E402
from es_scm.similarity import WordEmbeddings  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
K = 10


def capped_bound(weights: np.ndarray, caps: np.ndarray) -> float:
    """max Σ w_t·y_t over 0 ≤ y_t ≤ caps_t and ‖y‖₂ ≤ 1 (w ≥ 0): y_t = min(caps_t, w_t/λ), with
    λ found by bisection so that ‖y‖₂ = 1 (or every y_t at its cap when that is inside the ball)."""
    if not weights.size or not weights.any():
        return 0.0
    if float(caps @ caps) <= 1.0:
        return float(weights @ caps)
    low, high = 1e-12, 1e12
    for _ in range(200):
        middle = np.sqrt(low * high)
        y = np.minimum(caps, weights / middle)
        low, high = (middle, high) if float(y @ y) > 1.0 else (low, middle)
    return float(weights @ np.minimum(caps, weights / high))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--max-clauses", nargs="+", type=int, default=[16, 32, 64, 128])
    parser.add_argument("--min-df", type=int, default=2)
    parser.add_argument("--model", help="a model of the same paragraphs (default: GloVe's)")
    parser.add_argument("--json", default=str(REPO / "results" / "bench_pruning_bound.json"))
    args = parser.parse_args()

    extract = DATA / "wikipedia-2015" / "text.tar.xz"
    paragraphs = list(read_wikipedia_paragraphs(extract))
    documents = paragraphs[: args.docs]
    queries = [" ".join(p["text"].split()[:12]) for p in paragraphs[-args.queries :]]
    texts = [d["text"] for d in documents]
    if args.model:
        model = SoftCosineModel.load(args.model)
    else:
        model = SoftCosineModel.build(texts, WordEmbeddings.glove_6b_50d(), min_df=args.min_df)
    brute = BruteForceSearch(model, [d["id"] for d in documents], texts)
    max_impacts = np.asarray(brute.documents.max(axis=0).toarray()).ravel()
    matrix = model.similarity_matrix

    rows, sizes = [], []
    per_limit = {m: {"euclidean": 0, "max_impact": 0, "queries": 0} for m in args.max_clauses}
    for query in queries:
        x = model.vectorize(query, role="query")
        top = brute.search(query, K)
        if x.nnz == 0 or len(top) < K:
            continue
        expansion, norm, kth = matrix.expand(x), float(matrix.soft_norm(x)), top[-1][1]
        sizes.append(len(expansion.data))
        order = np.argsort(-expansion.data, kind="stable")
        for limit, counts in per_limit.items():
            dropped = order[limit:]
            weights, terms = expansion.data[dropped], expansion.indices[dropped]
            euclidean = float(np.linalg.norm(weights))
            tighter = min(euclidean, capped_bound(weights, max_impacts[terms]))
            counts["queries"] += 1
            counts["euclidean"] += kth > euclidean / norm
            counts["max_impact"] += kth > tighter / norm
    for limit, counts in per_limit.items():
        rows.append({"max_clauses": limit, **counts})
        print(
            f"M = {limit:>4}: provable at best with the Euclidean bound {counts['euclidean']}"
            f"/{counts['queries']}, with per-term maximum impacts {counts['max_impact']}"
            f"/{counts['queries']}"
        )
    print(f"median expansion terms per query: {statistics.median(sizes):.0f}")
    summary = {
        "provenance": provenance(sys.argv),
        "model": args.model or "GloVe 6B 50d",
        "documents": len(documents),
        "median_expansion_terms": statistics.median(sizes),
        "rows": rows,
    }
    Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
