#!/usr/bin/env python
"""How long ``es-scm model build`` takes with the defaults, its peak memory, and its cache.

Each corpus is built by the command line with no option but ``--corpus`` and ``--out`` (so with
``--embeddings auto``), in a process of its own and with an empty embeddings cache, as a new user
would run it. Reported per corpus: wall seconds, peak resident memory of the process (``VmHWM``,
threads included), what ``auto`` chose, the model's size, and the embeddings cache left behind
against the size of the vectors the model's terms have (its terms × the trained dimension ×
4 bytes).

Corpora: BEIR SciFact (5,183 abstracts, title and text), and the first N paragraphs of the
Wikipedia extract (``--wiki 100000 850000``). Goals (issue 21): SciFact ≤ 60 s; 100,000
paragraphs ≤ 3 min; the whole extract ≤ 15 min and ≤ 3 GB; the cache ≤ 10× the vectors.

With ``--baseline``, each corpus is also built with the command line's default without the
``encoder`` extra (``--embeddings 0.3*glove-6b-50d+0.7*train``: GloVe 6B 50d with vectors trained
on the corpus, the default before issue 27), in the same run, and the ratio of the two walls is
reported (issue 27's goal: a model with the encoder's S within 2× of it).

Usage::

    python scripts/bench_build.py --wiki 100000 850000 --json results/bench_build.json
    python scripts/bench_build.py --wiki 100000 --baseline --json results/bench_build_encoder.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import provenance  # noqa: E402

DATA = REPO.parent / "shared" / "data"
SCIFACT = DATA / "beir-scifact-train" / "corpus.jsonl"
EXTRACT = DATA / "wikipedia-2015" / "text.tar.xz"
#: Run in the child: the CLI, then its own peak memory (VmHWM covers every thread).
CHILD = """
import sys
from es_scm.cli import main
code = main(sys.argv[1:])
status = open('/proc/self/status').read()
peak = next(line.split()[1] for line in status.splitlines() if line.startswith('VmHWM'))
print(f'PEAK_KIB {peak}', file=sys.stderr)
sys.exit(code)
"""


def write_wikipedia(path: Path, limit: int) -> None:
    """The first ``limit`` paragraphs of the extract as JSONL (id, text)."""
    from es_scm.evaluation.collections import read_wikipedia_paragraphs

    with open(path, "w", encoding="utf-8") as out:
        for paragraph in read_wikipedia_paragraphs(EXTRACT, limit=limit):
            out.write(json.dumps({"id": paragraph["id"], "text": paragraph["text"]}) + "\n")


def directory_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


#: The command line's default S without the ``encoder`` extra (and before issue 27).
BASELINE_EMBEDDINGS = "0.3*glove-6b-50d+0.7*train"


def build(corpus: Path, scratch: Path, name: str, *options: str) -> dict[str, Any]:
    """``es-scm model build --corpus … --out …`` with an empty cache; what it cost."""
    out, cache = scratch / f"model-{name}", scratch / f"cache-{name}"
    env = {**os.environ, "ES_SCM_CACHE": str(cache)}
    command = [sys.executable, "-c", CHILD, "model", "build", "--corpus", str(corpus)]
    command += ["--out", str(out), "--no-progress", *options]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{name}: model build failed:\n{done.stderr[-2000:]}")
    peak = next(int(line.split()[1]) for line in done.stderr.splitlines() if "PEAK_KIB" in line)
    config = json.loads((out / "model.json").read_text())
    similarity = config["similarity"]
    terms = json.loads((out / "vocabulary.json").read_text())["terms"]
    trained = _trained(similarity)
    kept = len(terms) * int(trained.get("vector_size", 0)) * 4
    cache_bytes = directory_bytes(cache / "embeddings") if (cache / "embeddings").exists() else 0
    return {
        "seconds": round(seconds, 1),
        "peak_rss_mib": round(peak / 1024),
        "terms": len(terms),
        "auto": similarity.get("auto"),
        "training": trained,
        "model_mib": round(directory_bytes(out) / 2**20, 1),
        "cache_mib": round(cache_bytes / 2**20, 1),
        "trained_vectors_of_the_terms_mib": round(kept / 2**20, 1),
        "cache_over_vectors": round(cache_bytes / kept, 2) if kept else None,
        "output": done.stdout.strip().splitlines(),
    }


def _trained(similarity: dict[str, Any]) -> dict[str, Any]:
    """The training record in S's build record (of a combination's trained part)."""
    for part in [similarity, *similarity.get("parts", [])]:
        training = part.get("embeddings", {}).get("training")
        if training:
            return training
    return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wiki", nargs="*", type=int, default=[100_000])
    parser.add_argument("--no-scifact", action="store_true")
    parser.add_argument(
        "--baseline",
        action="store_true",
        help=f"also build each corpus with --embeddings {BASELINE_EMBEDDINGS}, and the ratio",
    )
    parser.add_argument("--json", default=str(REPO / "results" / "bench_build.json"))
    args = parser.parse_args()
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-build-") as folder:
        scratch = Path(folder)
        corpora = [] if args.no_scifact else [("scifact", SCIFACT)]
        for size in args.wiki:
            path = scratch / f"wiki-{size}.jsonl"
            write_wikipedia(path, size)
            corpora.append((f"wikipedia {size:,}", path))
        for name, path in corpora:
            slug = name.replace(" ", "-").replace(",", "")
            rows[name] = build(path, scratch, slug)
            print(name, json.dumps({k: v for k, v in rows[name].items() if k != "output"}))
            if args.baseline:
                baseline = build(
                    path, scratch, f"{slug}-baseline", "--embeddings", BASELINE_EMBEDDINGS
                )
                rows[name]["baseline"] = baseline
                rows[name]["over_baseline"] = round(rows[name]["seconds"] / baseline["seconds"], 2)
                print(
                    f"{name}, {BASELINE_EMBEDDINGS}: {baseline['seconds']} s; default / baseline "
                    f"{rows[name]['over_baseline']}"
                )
            sys.stdout.flush()
    report = {"provenance": provenance(sys.argv), "builds": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
