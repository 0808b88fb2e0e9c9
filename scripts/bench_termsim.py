#!/usr/bin/env python
"""Benchmark: building S with ``nonzero_limit=100`` for the N most frequent GloVe 6B 50d words.

es-scm's :meth:`TermSimilarityMatrix.from_embeddings` (``neighbors="gensim"``, no tf-idf) against
gensim 4.4's ``SparseTermSimilarityMatrix(WordEmbeddingSimilarityIndex(kv), dictionary)`` on the
same input, in the same run. Every build runs in its own subprocess, so that peak memory
(``VmHWM``: ``benchlib.peak_rss_mib``) is per method; the embeddings are loaded before the clock
starts, and the reported memory is the peak minus the resident size after loading. GloVe's
order is frequency order, so the first N words are the N most frequent. The matrices are
compared entry by entry.

Usage::

    python scripts/bench_termsim.py --terms 10000 20000 --repeats 3 --gensim-repeats 1
    python scripts/bench_termsim.py --terms 100000 --skip-gensim-above 20000

Results: a table on stdout and JSON in ``results/bench_termsim.json``. Timings on a shared
2-core machine are noisy: compare medians and ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import peak_rss_mib, provenance  # noqa: E402  (scripts/benchlib.py)


def _current_rss_mib() -> float:
    with open("/proc/self/statm") as stream:
        return int(stream.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def worker(method: str, n_terms: int, nonzero_limit: int, output: str) -> None:
    """Build one matrix, save it to ``output`` (npz) and print timing JSON."""
    sys.path.insert(0, str(REPO))
    from scipy import sparse

    from es_scm.similarity import TermSimilarityMatrix, WordEmbeddings

    glove = WordEmbeddings.glove_6b_50d()
    terms = glove.words[:n_terms]
    if method == "gensim":
        os.environ["TQDM_DISABLE"] = "1"
        from gensim.corpora import Dictionary
        from gensim.similarities import SparseTermSimilarityMatrix, WordEmbeddingSimilarityIndex

        keyed_vectors = glove.to_gensim()
        dictionary = Dictionary([[term] for term in terms])  # term i gets id i
        assert all(dictionary[i] == term for i, term in enumerate(terms))
        keyed_vectors.fill_norms()
        baseline = _current_rss_mib()
        start = time.perf_counter()
        matrix = SparseTermSimilarityMatrix(
            WordEmbeddingSimilarityIndex(keyed_vectors), dictionary, nonzero_limit=nonzero_limit
        ).matrix
        seconds = time.perf_counter() - start
    else:
        baseline = _current_rss_mib()
        start = time.perf_counter()
        matrix = TermSimilarityMatrix.from_embeddings(
            terms, glove, nonzero_limit=nonzero_limit, neighbors="gensim"
        ).matrix
        seconds = time.perf_counter() - start
    peak = peak_rss_mib()
    matrix = sparse.csc_matrix(matrix)
    matrix.sort_indices()
    sparse.save_npz(output, matrix)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_rss_mib": peak,
                "baseline_rss_mib": baseline,
                "build_peak_mib": peak - baseline,
                "nnz": int(matrix.nnz),
            }
        )
    )


def run(method: str, n_terms: int, nonzero_limit: int, output: str) -> dict:
    command = [sys.executable, __file__, "--worker", method, "--terms", str(n_terms)]
    command += ["--nonzero-limit", str(nonzero_limit), "--output", output]
    env = dict(os.environ, TQDM_DISABLE="1")
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{method} worker failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(path_a: str, path_b: str) -> dict:
    from scipy import sparse

    a, b = sparse.load_npz(path_a).tocsc(), sparse.load_npz(path_b).tocsc()
    a.sort_indices()
    b.sort_indices()
    same_pattern = bool(
        a.shape == b.shape
        and np.array_equal(a.indptr, b.indptr)
        and np.array_equal(a.indices, b.indices)
    )
    pattern_a = a.copy()
    pattern_a.data[:] = 1
    pattern_b = b.copy()
    pattern_b.data[:] = 1
    differing_positions = int(abs(pattern_a - pattern_b).nnz)
    difference = abs(a.astype(np.float64) - b.astype(np.float64))
    return {
        "identical_pattern": same_pattern,
        "positions_in_only_one": differing_positions,
        "max_abs_difference": float(difference.max()) if difference.nnz else 0.0,
        "bitwise_identical": bool(same_pattern and np.array_equal(a.data, b.data)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--terms", type=int, nargs="+", default=[10000, 20000])
    parser.add_argument("--nonzero-limit", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="es-scm builds per size")
    parser.add_argument("--gensim-repeats", type=int, default=1, help="gensim builds per size")
    parser.add_argument(
        "--skip-gensim-above", type=int, default=None, help="no gensim run above this many terms"
    )
    parser.add_argument("--json", default=str(REPO / "results" / "bench_termsim.json"))
    parser.add_argument("--worker", choices=["es_scm", "gensim"], help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.terms[0], args.nonzero_limit, args.output)
        return

    results = []
    with tempfile.TemporaryDirectory() as scratch:
        for n_terms in args.terms:
            row: dict = {"terms": n_terms, "nonzero_limit": args.nonzero_limit}
            methods = {"es_scm": args.repeats, "gensim": args.gensim_repeats}
            if args.skip_gensim_above is not None and n_terms > args.skip_gensim_above:
                methods["gensim"] = 0
            for method, repeats in methods.items():
                runs = []
                for repeat in range(repeats):
                    path = os.path.join(scratch, f"{method}-{n_terms}.npz")
                    runs.append(run(method, n_terms, args.nonzero_limit, path))
                    print(f"  {method} {n_terms} #{repeat + 1}: {runs[-1]}", file=sys.stderr)
                if runs:
                    row[method] = {
                        "runs": runs,
                        "median_seconds": statistics.median(r["seconds"] for r in runs),
                        "median_build_peak_mib": statistics.median(
                            r["build_peak_mib"] for r in runs
                        ),
                        "median_peak_rss_mib": statistics.median(r["peak_rss_mib"] for r in runs),
                        "nnz": runs[-1]["nnz"],
                    }
            if "es_scm" in row and "gensim" in row:
                row["speedup"] = row["gensim"]["median_seconds"] / row["es_scm"]["median_seconds"]
                row["comparison"] = compare(
                    os.path.join(scratch, f"es_scm-{n_terms}.npz"),
                    os.path.join(scratch, f"gensim-{n_terms}.npz"),
                )
            results.append(row)

    header = f"{'terms':>8} {'method':>7} {'median s':>9} {'build MiB':>9} {'nnz':>10}  notes"
    print(header)
    print("-" * len(header))
    for row in results:
        for method in ("es_scm", "gensim"):
            if method not in row:
                continue
            data = row[method]
            notes = ""
            if method == "gensim" and "speedup" in row:
                notes = f"es_scm {row['speedup']:.1f}x faster; {row['comparison']}"
            print(
                f"{row['terms']:>8} {method:>7} {data['median_seconds']:>9.2f} "
                f"{data['median_build_peak_mib']:>9.0f} {data['nnz']:>10}  {notes}"
            )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    existing = {}
    if Path(args.json).exists():
        existing = json.loads(Path(args.json).read_text())
    merged = {r["terms"]: r for r in existing.get("results", [])}
    kept = set(merged) - {r["terms"] for r in results}
    merged.update({r["terms"]: r for r in results})
    report = {"provenance": provenance(sys.argv), "results": [merged[k] for k in sorted(merged)]}
    if kept:  # rows of an earlier run stay: say how that one was made
        report["earlier_provenance"] = existing.get("provenance")
    Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    print(f"saved {args.json}")


if __name__ == "__main__":
    main()
