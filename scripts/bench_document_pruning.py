#!/usr/bin/env python
"""Could document-side expansion store fewer values of Sy' and stay provably exact? In memory.

An index with ``expansion="documents"`` stores each document's Sy' (about 1,200 values for a
paragraph's 36 terms). Dropping, in every document, its smallest values whose Euclidean norm
stays within ε would shrink the index and speed ingestion, and the proof would survive: a query
x then loses at most ‖x‖₂·ε of any document's score (Cauchy–Schwarz), a bound that exact mode
can add to the window's lowest score. This script asks how many values each ε removes and, for
every query, whether a window of the top W documents by the pruned score proves the exact top k
(the k-th exact score in the window above the window's lowest pruned score plus the bound) —
ignoring Lucene's 9-bit rounding, so in the best case for the pruning.

Usage::

    python scripts/bench_document_pruning.py --docs 30000 --queries 100

Writes ``results/bench_document_pruning.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import provenance  # noqa: E402  (scripts/benchlib.py)

from es_scm.evaluation.collections import read_wikipedia_paragraphs  # noqa: E402
from es_scm.model import SoftCosineModel  # noqa: E402
from es_scm.similarity import WordEmbeddings  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
K = 10
WINDOWS = (20, 40, 80, 160)


def prune_rows(matrix: sp.csr_array, epsilon: float) -> sp.csr_array:
    """Each row without its smallest values whose Euclidean norm is at most ``epsilon``."""
    rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
    order = np.lexsort((np.abs(matrix.data), rows))  # row by row, smallest first
    squares = np.cumsum(matrix.data[order] ** 2)
    before_row = np.concatenate([[0.0], squares])[matrix.indptr[:-1]][rows[order]]
    keep = np.ones(matrix.nnz, dtype=bool)
    keep[order[squares - before_row <= epsilon**2]] = False
    data = np.where(keep, matrix.data, 0.0)
    pruned = sp.csr_array((data, matrix.indices.copy(), matrix.indptr.copy()), shape=matrix.shape)
    pruned.eliminate_zeros()
    return pruned


def proven_windows(exact: np.ndarray, pruned: np.ndarray, bound: float) -> dict[int, bool]:
    """For each window size W: does the top W by ``pruned`` prove the exact top k?"""
    order = np.argsort(-pruned, kind="stable")
    result = {}
    for window in WINDOWS:
        members = order[:window]
        kth = np.sort(exact[members])[-K]
        result[window] = bool(kth > pruned[members[-1]] + bound)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=30_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.01, 0.02, 0.05, 0.1, 0.2])
    parser.add_argument("--min-df", type=int, default=2)
    parser.add_argument("--json", default=str(REPO / "results" / "bench_document_pruning.json"))
    args = parser.parse_args()

    paragraphs = list(read_wikipedia_paragraphs(DATA / "wikipedia-2015" / "text.tar.xz"))
    documents = paragraphs[: args.docs]
    queries = [" ".join(p["text"].split()[:12]) for p in paragraphs[-args.queries :]]
    texts = [d["text"] for d in documents]
    model = SoftCosineModel.build(texts, WordEmbeddings.glove_6b_50d(), min_df=args.min_df)
    matrix = model.similarity_matrix
    weighted = sp.csr_array(model.vectorize_many(texts, role="document"))
    normalized = sp.csr_array(matrix.normalize(weighted))
    expanded = sp.csr_array(matrix.expand_documents(normalized))
    by_term = normalized.T.tocsr()
    vectors = [model.vectorize(q, role="query") for q in queries]
    vectors = [x for x in vectors if x.nnz]
    print(f"{len(documents)} documents, Sy' has {expanded.nnz / len(documents):.0f} values each")

    rows = []
    for epsilon in args.epsilons:
        stored = prune_rows(expanded, epsilon).T.tocsr()
        proven = dict.fromkeys(WINDOWS, 0)
        for x in vectors:
            norm = float(matrix.soft_norm(x))
            exact = (sp.csr_array(matrix.expand(x)) @ by_term).toarray().ravel() / norm
            pruned = (sp.csr_array(x) @ stored).toarray().ravel() / norm
            bound = epsilon * float(np.linalg.norm(x.data)) / norm
            for window, ok in proven_windows(exact, pruned, bound).items():
                proven[window] += ok
        row = {
            "epsilon": epsilon,
            "values_per_document": stored.nnz / len(documents),
            "kept": stored.nnz / expanded.nnz,
            "proven": {str(w): n for w, n in proven.items()},
            "queries": len(vectors),
        }
        rows.append(row)
        print(
            f"ε = {epsilon}: {row['values_per_document']:.0f} values per document "
            f"({100 * row['kept']:.0f} %), proven by a window of "
            + ", ".join(f"{w}: {n}/{len(vectors)}" for w, n in proven.items()),
            flush=True,
        )
    summary = {
        "provenance": provenance(sys.argv),
        "documents": len(documents),
        "values_per_document": expanded.nnz / len(documents),
        "rows": rows,
    }
    Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
