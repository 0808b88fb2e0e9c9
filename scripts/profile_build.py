#!/usr/bin/env python
"""Where the time of ``SoftCosineModel.build`` goes, on the first N Wikipedia paragraphs.

Runs the build twice: once plain (the wall time a user sees) and once under ``cProfile``, whose
cumulative seconds (inflated by the profiler, so compare them with each other) are reported for
the phases: tokenizing, fitting the vocabulary (which includes tokenizing), building S, and the
nearest-neighbour scan inside it. GloVe 6B 50d, ``min_df`` 2, es-scm's defaults. Tokenizing in
worker processes (``n_jobs``, :mod:`es_scm.model.parallel`) is outside the profile: the
tokenizing phases then read 0 and the vocabulary fit is the wall time of the parent's wait.

Usage::

    python scripts/profile_build.py --docs 850000

Writes ``results/profile_build.json``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import provenance  # noqa: E402  (scripts/benchlib.py)

from es_scm.evaluation.collections import read_wikipedia_paragraphs  # noqa: E402
from es_scm.model import SoftCosineModel  # noqa: E402
from es_scm.similarity import WordEmbeddings  # noqa: E402

DATA = Path(os.environ.get("ES_SCM_SHARED_DATA", REPO.parent / "shared" / "data"))
PHASES = {  # (file suffix, function name) → phase
    ("model/text.py", "tokenize"): "tokenize",
    ("model/text.py", "split"): "tokenizer regex (split)",
    ("model/parallel.py", "count_texts"): "vocabulary fit (tokenizing included)",
    ("model/vocabulary.py", "fit_counts"): "vocabulary fit (tokenizing included)",
    ("similarity/factory.py", "build_similarity"): "S",
    ("similarity/neighbors.py", "top_candidates"): "nearest-neighbour scan",
}


def phase_seconds(profile: cProfile.Profile) -> dict[str, float]:
    stats = pstats.Stats(profile).stats  # (file, line, name) → (cc, nc, tt, ct, callers)
    seconds = dict.fromkeys(PHASES.values(), 0.0)
    for (filename, _, name), (_, _, _, cumulative, _) in stats.items():
        for (suffix, function), phase in PHASES.items():
            if name == function and filename.endswith(suffix):
                seconds[phase] += cumulative
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=850_000)
    parser.add_argument("--json", default=str(REPO / "results" / "profile_build.json"))
    args = parser.parse_args()

    extract = DATA / "wikipedia-2015" / "text.tar.xz"
    texts = [p["text"] for p in read_wikipedia_paragraphs(extract, limit=args.docs)]
    glove = WordEmbeddings.glove_6b_50d()
    started = time.perf_counter()
    model = SoftCosineModel.build(texts, glove, min_df=2)
    wall = time.perf_counter() - started
    profile = cProfile.Profile()
    profile.runcall(SoftCosineModel.build, texts, glove, min_df=2)
    phases = phase_seconds(profile)
    summary = {
        "provenance": provenance(sys.argv),
        "documents": len(texts),
        "terms": len(model.terms),
        "build_seconds": wall,
        "profiled_phase_seconds": phases,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print(f"{len(texts)} paragraphs, {len(model.terms)} terms: build {wall:.1f} s")
    for phase, seconds in phases.items():
        print(f"  {phase}: {seconds:.1f} s (profiled)")
    Path(args.json).write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
