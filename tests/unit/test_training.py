"""Embeddings trained on a corpus (``embeddings="train:…"``): neighbours, determinism, cache."""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

pytest.importorskip("gensim")

from es_scm.cli import main
from es_scm.model import SoftCosineModel
from es_scm.similarity.training import (
    EmbeddingTraining,
    as_training,
    train_embeddings,
)

SMALL = {"vector_size": 16, "epochs": 30, "min_count": 2, "sg": 1, "method": "word2vec"}


def _corpus(n: int = 200, seed: int = 0) -> list[str]:
    """Two topics; within each, two interchangeable words in the same contexts."""
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        car, road = rng.choice(["car", "automobile"]), rng.choice(["road", "highway"])
        texts.append(f"the {car} drove fast on the {road} towards the distant city")
        cat = rng.choice(["cat", "kitten"])
        texts.append(f"a small {cat} sleeps on the warm sofa purring softly at home")
    return texts


def _cosine(embeddings, a: str, b: str) -> float:
    x, y = embeddings[a], embeddings[b]
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def _sentences(texts: list[str]) -> list[list[str]]:
    return [text.split() for text in texts]


@pytest.mark.parametrize("method", ["word2vec", "fasttext"])
def test_words_in_the_same_contexts_become_neighbours(tmp_path, method):
    training = EmbeddingTraining(**{**SMALL, "method": method}, cache_dir=tmp_path)
    embeddings = train_embeddings(_sentences(_corpus()), training)
    assert _cosine(embeddings, "car", "automobile") > _cosine(embeddings, "car", "kitten")
    assert _cosine(embeddings, "cat", "kitten") > _cosine(embeddings, "cat", "highway")


def test_the_model_gets_similarities_between_its_own_words(tmp_path):
    training = EmbeddingTraining(cache_dir=tmp_path, **SMALL)
    model = SoftCosineModel.build(_corpus(), training)
    similar = dict(model.similarity_matrix.similar_terms("car", topn=100))
    assert similar["automobile"] > similar.get("kitten", 0.0)
    assert model.similarity("car", "automobile") > model.similarity("car", "kitten")


@pytest.mark.parametrize("method", ["word2vec", "fasttext"])
def test_training_is_deterministic(tmp_path, method):
    options = {**SMALL, "method": method, "deterministic": True}
    first = train_embeddings(
        _sentences(_corpus()), EmbeddingTraining(**options, cache_dir=tmp_path / "a")
    )
    second = train_embeddings(
        _sentences(_corpus()), EmbeddingTraining(**options, cache_dir=tmp_path / "b")
    )
    assert first.words == second.words
    assert np.array_equal(first.vectors, second.vectors)


def test_a_second_run_on_the_same_content_loads_the_cache(tmp_path):
    calls: list[tuple[int, int]] = []
    training = EmbeddingTraining(
        cache_dir=tmp_path, progress=lambda done, total: calls.append((done, total)), **SMALL
    )
    sentences = len(_corpus())  # 400 sentences, 30 epochs: 12,000 sentences trained on
    first = train_embeddings(_sentences(_corpus()), training)
    total = sentences * SMALL["epochs"]
    # trained: a call every 1,000 sentences and one at the end, all out of the same total
    assert calls == [(done, total) for done in range(1000, total + 1, 1000)] + [(total, total)]
    trained = len(calls)
    second = train_embeddings(_sentences(_corpus()), training)
    assert calls[trained:] == [(1, 1)]  # loaded: done at once, nothing trained
    assert np.array_equal(first.vectors, second.vectors)
    assert len(list(tmp_path.glob("word2vec-*.npy"))) == 1
    assert not list(tmp_path.glob("*.kv*"))  # no pickle in the cache
    other = train_embeddings(_sentences(_corpus(seed=1)), training)  # other content: trains
    assert calls[trained + 1 :][-1] == (total, total)
    assert other.training["corpus_sha256"] != first.training["corpus_sha256"]


def test_fasttext_gives_a_rare_misspelling_a_vector_near_the_word(tmp_path):
    texts = [*_corpus(), "an automobil was parked"]  # once: below min_count
    training = EmbeddingTraining(**{**SMALL, "method": "fasttext"}, cache_dir=tmp_path)
    model = SoftCosineModel.build(texts, training)
    assert "automobil" in model.terms
    similar = dict(model.similarity_matrix.similar_terms("automobil", topn=100))
    assert similar["automobile"] > similar.get("kitten", 0.0)
    word2vec = SoftCosineModel.build(texts, EmbeddingTraining(cache_dir=tmp_path, **SMALL))
    assert word2vec.similarity_matrix.similar_terms("automobil") == []  # no vector, no neighbour


def test_the_training_is_recorded_in_the_saved_model(tmp_path):
    training = EmbeddingTraining(cache_dir=tmp_path / "cache", seed=7, **SMALL)
    SoftCosineModel.build(_corpus(), training).save(tmp_path / "model")
    saved = json.loads((tmp_path / "model" / "model.json").read_text())
    record = json.dumps(saved)
    loaded = SoftCosineModel.load(tmp_path / "model").describe()["similarity"]["embeddings"]
    assert loaded["training"]["seed"] == 7
    assert loaded["training"]["method"] == "word2vec"
    assert loaded["training"]["workers"] == 1
    assert '"corpus_sha256"' in record


def test_a_background_corpus_is_trained_on_instead_of_the_models(tmp_path):
    background = _corpus()
    training = EmbeddingTraining(corpus=background, cache_dir=tmp_path, **SMALL)
    model = SoftCosineModel.build(["car parked", "automobile parked", "kitten asleep"], training)
    assert "background" in model.describe()["similarity"]["embeddings"]["name"]
    assert model.similarity("car", "automobile") > model.similarity("car", "kitten")


def test_training_specs():
    assert as_training("train").method == "auto"
    assert as_training("train:fasttext").method == "fasttext"
    assert as_training("glove-6b-50d") is None
    with pytest.raises(ValueError, match="method must be one of"):
        as_training("train:glove")
    with pytest.raises(ValueError, match="epochs must be a positive integer"):
        EmbeddingTraining(epochs=0)


def test_model_build_trains_from_the_command_line(tmp_path, capsys):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(_corpus()))
    )
    code = main(
        [
            "model", "build", "--corpus", str(corpus), "--out", str(tmp_path / "m"),
            "--embeddings", "train:fasttext", "--train-epochs", "3", "--train-size", "8",
            "--train-cache", str(tmp_path / "cache"),
        ]
    )  # fmt: skip
    assert code == 0
    capsys.readouterr()
    assert main(["model", "info", str(tmp_path / "m")]) == 0
    info = capsys.readouterr().out
    assert "fasttext trained on the model's corpus" in info
    assert re.search(r"^S embeddings\.training\.epochs +3$", info, re.MULTILINE)


def test_trained_and_given_embeddings_combine_with_weights(tmp_path):
    from es_scm.similarity import WordEmbeddings

    given = WordEmbeddings(["car", "kitten"], np.array([[1.0, 0.0], [0.6, 0.8]]))  # cos 0.6
    training = EmbeddingTraining(cache_dir=tmp_path, **SMALL)
    shape = {"threshold": 0.0, "exponent": 2.0}
    model = SoftCosineModel.build(_corpus(), [(0.25, given), (0.75, training)], **shape)
    info = model.describe()["similarity"]
    assert info["source"] == "combination"
    assert [part["weight"] for part in info["parts"]] == [0.25, 0.75]
    trained = SoftCosineModel.build(_corpus(), training, **shape)
    alone = dict(trained.similarity_matrix.similar_terms("car", topn=100)).get("kitten", 0.0)
    combined = dict(model.similarity_matrix.similar_terms("car", topn=100))["kitten"]
    assert combined == pytest.approx(0.25 * 0.6**2 + 0.75 * alone, rel=1e-6)


def test_the_command_line_combines_sources(tmp_path, capsys):
    corpus = tmp_path / "docs.txt"
    corpus.write_text("".join(text + "\n" for text in _corpus()))
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("2 2\ncar 1 0\nkitten 0.6 0.8\n")
    code = main(
        [
            "model", "build", "--corpus", str(corpus), "--out", str(tmp_path / "m"),
            "--embeddings", f"0.3*{vectors}+0.7*train:word2vec", "--train-epochs", "2",
            "--train-cache", str(tmp_path / "cache"),
        ]
    )  # fmt: skip
    assert code == 0
    capsys.readouterr()
    assert main(["model", "info", str(tmp_path / "m")]) == 0
    info = capsys.readouterr().out
    assert "S parts[1].weight" in info
    assert "0.3" in info
    assert "S parts[2].embeddings.name" in info
    assert "word2vec trained" in info


def test_training_on_a_tiny_corpus_warns_that_similarities_will_be_weak(tmp_path, caplog):
    tiny = _corpus(n=20)  # 40 texts of ~10 tokens: far below SMALL_CORPUS_TOKENS
    with caplog.at_level("WARNING", logger="es_scm.similarity.training"):
        train_embeddings(_sentences(tiny), EmbeddingTraining(cache_dir=tmp_path, **SMALL))
    assert any("trained on only" in record.getMessage() for record in caplog.records)
    caplog.clear()
    with caplog.at_level("WARNING", logger="es_scm.similarity.training"):
        big = _corpus(n=1200)  # 2,400 texts, ~28,000 tokens
        train_embeddings(_sentences(big), EmbeddingTraining(cache_dir=tmp_path, **SMALL))
    assert not any("trained on only" in record.getMessage() for record in caplog.records)
