#!/usr/bin/env python
"""The numpy backend's vectors against sentence-transformers', on every test collection.

For each collection under ``../shared/data`` — SciFact and NFCorpus (BEIR, train), SemEval-2016
(train-part2 and dev), Cranfield, CISI, CACM — the vocabulary is fitted as a model build fits it
(``SoftCosineModel.build``), and both backends of all-MiniLM-L6-v2 encode

* the words a build encodes alone (:class:`~es_scm.similarity.encoded.EncoderVectors`,
  mode ``word``: the first ``max_terms`` terms of two or more pieces, none unknown), as the
  build encodes them (``encode_pieces``);
* every query text (``encode``, as the dense leg encodes queries);

and once, the pieces table (every piece of the tokenizer's vocabulary alone). Reported per set:
the largest cosine distance 1 − cos and the largest absolute difference of a coordinate (goal:
1 − cos ≤ 1e-5), and whether the tokenizers agree on every text's ids.

Then S itself: SciFact's model built with each backend (``EncoderVectors``, the default options,
each with an empty cache of its own), and the two matrices compared entry by entry: the same
non-zeros, and the largest difference of a value (``--no-s`` skips it).

Usage (``--collections`` picks some, ``--no-pieces`` skips the table; ``--s-only`` compares S
alone, and the pieces and SciFact words its two builds encoded, read from their caches)::

    HF_HUB_OFFLINE=1 python scripts/compare_encoders.py --json results/compare_encoders.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import provenance  # noqa: E402

DATA = REPO.parent / "shared" / "data"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def collections() -> dict[str, tuple[list[str], list[str]]]:
    """Each collection's documents (as a build reads them) and query texts."""
    from es_scm.corpus import read_texts
    from es_scm.evaluation.collections import read_cacm, read_cisi, read_cranfield
    from es_scm.evaluation.semeval import corpus_texts
    from es_scm.evaluation.semeval_data import read_semeval

    found: dict[str, tuple[list[str], list[str]]] = {}
    for name in ("beir-scifact-train", "beir-nfcorpus-train"):
        documents = list(read_texts(DATA / name / "corpus.jsonl"))
        queries = [q["text"] for q in _jsonl(DATA / name / "queries.jsonl")]
        found[name.removeprefix("beir-")] = (documents, queries)
    semeval = DATA / "semeval2016-task3"
    questions = read_semeval(
        [
            semeval / "SemEval2016-Task3-CQA-QL-train-part2.xml",
            semeval / "SemEval2016-Task3-CQA-QL-dev.xml",
        ]
    )
    found["semeval-2016"] = (corpus_texts(questions), [q.text for q in questions])
    ir = DATA / "ir-collections"
    for read, folder in ((read_cranfield, "cranfield"), (read_cisi, "cisi"), (read_cacm, "cacm")):
        collection = read(ir / folder)
        found[folder] = (list(collection.documents.values()), list(collection.queries.values()))
    return found


def encoded_alone(encoder: Any, documents: list[str]) -> tuple[list[str], list[list[int]]]:
    """The words a build of ``documents`` encodes alone, and their pieces (EncoderVectors.vectors:
    the first max_terms terms, usable, of two or more pieces)."""
    from es_scm.model import SoftCosineModel
    from es_scm.options.defaults import ENCODER_DEFAULTS

    terms = list(dict.fromkeys(SoftCosineModel.build(documents, None).terms))
    terms = terms[: ENCODER_DEFAULTS.max_terms]
    unknown = encoder.unknown_id
    chosen = [
        (t, p)
        for t, p in zip(terms, encoder.word_pieces(terms), strict=True)
        if len(p) > 1 and unknown not in p
    ]
    return [t for t, _ in chosen], [p for _, p in chosen]


def deviation(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """The largest cosine distance and absolute difference of two sets of unit vectors."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    cosine = np.divide((a * b).sum(axis=1), norms, out=np.ones(len(a)), where=norms > 0)
    distance = 1.0 - cosine
    worst = int(np.argmax(distance)) if len(a) else 0
    return {
        "n": len(a),
        "max_cosine_distance": float(distance.max()) if len(a) else 0.0,
        "max_abs_difference": float(np.abs(a - b).max()) if len(a) else 0.0,
        "mean_abs_difference": float(np.abs(a - b).mean()) if len(a) else 0.0,
        "worst_row": worst,
    }


def compare_s(documents: list[str]) -> dict[str, Any]:
    """SciFact's S built with each backend (empty caches), entry by entry."""
    from es_scm.encoder import SentenceEncoder
    from es_scm.model import SoftCosineModel
    from es_scm.similarity.encoded import EncoderVectors

    built: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    cached: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="compare-s-") as scratch:
        for backend in ("numpy", "sentence-transformers"):
            encoder = SentenceEncoder("all-MiniLM-L6-v2", backend=backend, device="cpu")
            source = EncoderVectors(encoder=encoder, cache_dir=Path(scratch) / backend)
            started = time.perf_counter()
            model = SoftCosineModel.build(documents, source)
            seconds[backend] = round(time.perf_counter() - started, 1)
            built[backend] = model
            cached[backend] = _cached(Path(scratch) / backend)
    # the vectors each build encoded (the caches: the pieces' table, the words alone), compared
    encoded = {
        kind: deviation(cached["numpy"][kind], cached["sentence-transformers"][kind])
        for kind in ("pieces", "words")
    }
    a, b = (built[k] for k in ("numpy", "sentence-transformers"))
    assert a.terms == b.terms
    sa = a.similarity_matrix.matrix.tocsr()
    sb = b.similarity_matrix.matrix.tocsr()
    pattern_a = {(int(i), int(j)) for i, j in zip(*sa.nonzero(), strict=True)}
    pattern_b = {(int(i), int(j)) for i, j in zip(*sb.nonzero(), strict=True)}
    common = sorted(pattern_a & pattern_b)
    rows = np.array([i for i, _ in common], dtype=np.int64)
    cols = np.array([j for _, j in common], dtype=np.int64)
    difference = np.abs(np.asarray(sa[rows, cols]).ravel() - np.asarray(sb[rows, cols]).ravel())
    only = sorted(pattern_a ^ pattern_b)
    shown = [
        {
            "terms": [a.terms[i], a.terms[j]],
            "numpy": float(sa[i, j]),
            "sentence_transformers": float(sb[i, j]),
        }
        for i, j in only[:20]
    ]
    return {
        "terms": len(a.terms),
        "nonzeros": {"numpy": int(sa.nnz), "sentence_transformers": int(sb.nnz)},
        "same_nonzeros": pattern_a == pattern_b,
        "entries_in_one_only": len(only),
        "entries_in_one_only_shown": shown,
        "max_abs_difference_of_common_entries": float(difference.max()) if len(common) else 0.0,
        "common_entries_differing_by_more_than_1e-6": int((difference > 1e-6).sum()),
        "build_seconds_with_an_empty_cache": seconds,
        "encoded_vectors": encoded,
    }


def _cached(folder: Path) -> dict[str, np.ndarray]:
    """The vectors an EncoderVectors cache holds: its pieces' table and its words alone."""
    found = {}
    for kind in ("pieces", "words"):
        (path,) = folder.rglob(f"encoder-{kind}-*.npy")
        found[kind] = np.load(path)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--no-s", action="store_true", help="skip the comparison of S")
    parser.add_argument(
        "--s-only", action="store_true", help="only S (and the vectors its builds encode)"
    )
    parser.add_argument("--no-pieces", action="store_true", help="skip the pieces' table")
    parser.add_argument("--collections", nargs="*", help="these collections only")
    parser.add_argument(
        "--queries-only", nargs="*", default=[], help="of these collections, the queries alone"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from es_scm.encoder import SentenceEncoder

    light = SentenceEncoder("all-MiniLM-L6-v2", backend="numpy")
    torch = SentenceEncoder("all-MiniLM-L6-v2", backend="sentence-transformers", device="cpu")
    results: dict[str, Any] = {"sets": {}, "tokenization_differs": {}}

    def both(name: str, encode: Any, inputs: Any) -> None:
        started = time.perf_counter()
        a = encode(light, inputs)
        b = encode(torch, inputs)
        results["sets"][name] = deviation(a, b)
        print(name, results["sets"][name], f"({time.perf_counter() - started:.0f}s)", flush=True)

    def pieces(encoder: Any, sequences: Any) -> np.ndarray:
        return encoder.encode_pieces(sequences, batch_size=256)

    def texts(encoder: Any, strings: Any) -> np.ndarray:
        return encoder.encode(strings, batch_size=64)

    def save() -> None:  # after every set: a long run's results are kept as they come
        sets = results["sets"].values()
        if sets:
            results["max_cosine_distance"] = max(s["max_cosine_distance"] for s in sets)
            results["max_abs_difference"] = max(s["max_abs_difference"] for s in sets)
            results["vectors_compared"] = sum(s["n"] for s in sets)
        results["provenance"] = provenance(sys.argv)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")

    results["identities"] = {"numpy": light.identity, "sentence_transformers": torch.identity}
    found = collections()
    if args.s_only:
        results["s_scifact"] = compare_s(found["scifact-train"][0])
        for kind, measured in results["s_scifact"]["encoded_vectors"].items():
            results["sets"][f"scifact-train {kind} (the builds' caches)"] = measured
        save()
        print("S", results["s_scifact"], flush=True)
        return 0
    if not args.no_pieces:
        table = [[i] for i in range(len(light.pieces()))]
        both("pieces table", pieces, table)
        save()
    for name, (documents, queries) in found.items():
        if args.collections and name not in args.collections:
            continue
        words, word_pieces = encoded_alone(light, documents)
        same = light.word_pieces(words) == torch.word_pieces(words)
        same_queries = light.word_pieces(queries) == torch.word_pieces(queries)
        results["tokenization_differs"][name] = not (same and same_queries)
        both(f"{name} queries", texts, queries)
        save()
        if name not in args.queries_only:
            both(f"{name} words", pieces, word_pieces)
            save()
    if not args.no_s:
        results["s_scifact"] = compare_s(found["scifact-train"][0])
        print("S", results["s_scifact"], flush=True)
    save()
    distance, difference = results["max_cosine_distance"], results["max_abs_difference"]
    print(
        f"{results['vectors_compared']:,} vectors: max 1 - cos {distance:.3g}, "
        f"max |difference| {difference:.3g}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
