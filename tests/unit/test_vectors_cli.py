"""``es-scm embeddings train``: vectors trained once, saved in word2vec's format, used by models."""

from __future__ import annotations

import json
import random

import pytest

pytest.importorskip("gensim")

from es_scm.cli import main
from es_scm.model import SoftCosineModel
from es_scm.similarity import WordEmbeddings


def _corpus(tmp_path, n: int = 300):
    rng = random.Random(1)
    lines = []
    for i in range(n):
        car = rng.choice(["car", "automobile"])
        lines.append({"id": str(i), "text": f"the {car} drove fast on the road to the city"})
        cat = rng.choice(["cat", "kitten"])
        lines.append({"id": f"k{i}", "text": f"a small {cat} sleeps on the warm sofa at home"})
    path = tmp_path / "background.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_vectors_trained_once_serve_a_model(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ES_SCM_CACHE", str(tmp_path / "cache"))
    background, vectors = _corpus(tmp_path), tmp_path / "vectors.bin"
    code = main(
        ["embeddings", "train", "--corpus", str(background), "--out", str(vectors),
         "--method", "word2vec", "--train-epochs", "30", "--train-size", "16", "--no-progress"]
    )  # fmt: skip
    assert code == 0
    assert "vectors × 16 (word2vec, 30 epochs" in capsys.readouterr().out
    loaded = WordEmbeddings.load_word2vec(vectors, binary=True)
    assert {"car", "automobile", "kitten"} <= set(loaded.words)
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "1", "text": "car parked"}\n{"id": "2", "text": "kitten asleep"}\n')
    code = main(
        ["model", "build", "--corpus", str(docs), "--out", str(tmp_path / "m"),
         "--embeddings", str(vectors), "--threshold", "0", "--exponent", "1"]
    )  # fmt: skip
    assert code == 0
    model = SoftCosineModel.load(tmp_path / "m")
    # automobile is not in the model's corpus: the vectors give it a column of S
    assert model.similarity("automobile", "car parked") > model.similarity("automobile", "kitten")


def test_the_text_format_round_trips(tmp_path):
    embeddings = WordEmbeddings(["a", "b"], [[1.0, 0.5], [-0.25, 2.0]])
    embeddings.save_word2vec(tmp_path / "v.txt")
    loaded = WordEmbeddings.load_word2vec(tmp_path / "v.txt")
    assert loaded.words == ["a", "b"]
    assert loaded.vectors.tolist() == [[1.0, 0.5], [-0.25, 2.0]]
    with pytest.raises(ValueError, match="cannot hold the word 'a b'"):
        WordEmbeddings(["a b"], [[1.0]]).save_word2vec(tmp_path / "w.txt")


def test_mistakes_are_one_line_errors(tmp_path, capsys):
    background, vectors = _corpus(tmp_path, 5), tmp_path / "v.bin"
    vectors.write_text("taken")
    assert main(["embeddings", "train", "--corpus", str(background), "--out", str(vectors)]) != 0
    assert "exists; pass --force" in capsys.readouterr().err
    argv = ["embeddings", "train", "--corpus", str(background), "--out", str(tmp_path / "x.bin")]
    assert main([*argv, "--train-corpus", str(background)]) != 0
    assert "--train-corpus does not apply here" in capsys.readouterr().err
