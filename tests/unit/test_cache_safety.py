"""The embeddings caches: nothing in them can run code, and nobody else may read or plant in them.

Trained vectors are cached as a float32 ``.npy`` and a JSON word list (read with
``allow_pickle=False``), in folders of the user's (0700) with files of the user's (0600); the
tokenized corpus is deleted after training (the evaluations' word2vec keeps its own, private).
A pickle planted under any cached name never runs; a cached file that another account could
have written (another owner, group- or world-writable, a symbolic link) is ignored and trained
again; planted links are never written through.
"""

from __future__ import annotations

import json
import os
import pickle
import stat
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("gensim")

from es_scm.cli import main
from es_scm.evaluation.word2vec import train_word2vec
from es_scm.similarity.training import EmbeddingTraining, train_embeddings
from tests.support import REPO_ROOT

SMALL = {"vector_size": 8, "epochs": 5, "min_count": 1, "method": "word2vec"}
SENTENCES = [
    ["the", "car", "drove", "on", "the", "road"],
    ["a", "cat", "sleeps", "on", "the", "warm", "sofa"],
] * 50
NOBODY = 65534


class CreatesFile:
    """A pickle payload: unpickling it creates ``path`` (as a command run by a loader would)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def train(cache):
    return train_embeddings(SENTENCES, EmbeddingTraining(**SMALL, cache_dir=cache))


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_pickle_planted_in_the_cache_never_runs(tmp_path):
    cache = tmp_path / "cache"
    first = train(cache)
    cached = sorted(cache.iterdir())
    assert {path.suffix for path in cached} == {".npy", ".json"}
    marker = tmp_path / "code-ran"
    payload = pickle.dumps(CreatesFile(str(marker)))
    pickle.loads(payload)  # the payload works: any loader that unpickles it runs it
    assert marker.exists()
    marker.unlink()
    for path in cached:
        if path.suffix == ".npy":
            array = np.array([CreatesFile(str(marker))], dtype=object)
            np.save(path, array, allow_pickle=True)
        else:
            path.write_bytes(payload)
        path.with_suffix(".kv").write_bytes(payload)  # the former gensim cache's name
    second = train(cache)
    assert not marker.exists()
    assert second.words == first.words
    assert np.array_equal(second.vectors, first.vectors)  # trained again, cached again
    (npy,) = cache.glob("*.npy")
    assert np.array_equal(np.load(npy, allow_pickle=False), first.vectors)


def test_the_cache_is_private_and_keeps_no_corpus(tmp_path, capsys):
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    previous = os.umask(0o022)
    try:
        train(loose)
        corpus = tmp_path / "docs.txt"
        corpus.write_text("".join(" ".join(s) + "\n" for s in SENTENCES))
        out, cli_cache = tmp_path / "vectors.txt", tmp_path / "cli-cache"
        code = main(
            [
                "embeddings", "train", "--corpus", str(corpus), "--out", str(out),
                "--method", "word2vec", "--train-epochs", "2", "--train-size", "8",
                "--train-cache", str(cli_cache), "--no-progress",
            ]
        )  # fmt: skip
    finally:
        os.umask(previous)
    assert code == 0
    count, dimensions = out.read_text().splitlines()[0].split()  # word2vec's text format
    assert count.isdigit()
    assert dimensions == "8"
    for cache in (loose, cli_cache):
        assert mode(cache) == 0o700
        assert sorted(path.suffix for path in cache.iterdir()) == [".json", ".npy"]  # no corpus
        assert {mode(path) for path in cache.iterdir()} == {0o600}


def test_the_evaluations_word2vec_cache_is_private(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(" ".join(s) + "\n" for s in SENTENCES))
    cache = tmp_path / "word2vec"
    previous = os.umask(0o022)
    try:
        train_word2vec(corpus, cache_dir=cache, vector_size=8, min_count=1, epochs=1)
    finally:
        os.umask(previous)
    assert mode(cache) == 0o700
    kept = list(cache.iterdir())
    assert any(path.name.startswith("corpus-") for path in kept)  # kept: read once, reused
    assert {mode(path) for path in kept} == {0o600}


def test_cached_files_that_another_account_could_have_written_are_ignored(tmp_path):
    cache = tmp_path / "cache"
    first = train(cache)
    (vectors,) = cache.glob("*.npy")
    np.save(vectors, np.zeros_like(first.vectors), allow_pickle=False)
    vectors.chmod(0o666)  # anyone could have written these
    assert np.array_equal(train(cache).vectors, first.vectors)
    assert mode(vectors) == 0o600

    (words,) = cache.glob("*.json")
    elsewhere = tmp_path / "elsewhere.json"
    meta = json.loads(words.read_text())
    elsewhere.write_text(json.dumps({**meta, "words": meta["words"][::-1]}))
    elsewhere.chmod(0o600)
    words.unlink()
    words.symlink_to(elsewhere)  # a link planted in place of the word list
    again = train(cache)
    assert again.words == first.words
    assert not words.is_symlink()


def test_planted_links_are_never_written_through(tmp_path):
    cache = tmp_path / "cache"
    first = train(cache)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    for path in list(cache.iterdir()):
        path.unlink()
        for name in (path.name, path.name + ".partial"):  # final and former partial names
            (cache / name).symlink_to(victim)
    assert np.array_equal(train(cache).vectors, first.vectors)
    assert victim.read_text() == "precious"
    assert not any(path.is_symlink() for path in cache.glob("*.np[y]"))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_a_cache_of_another_user_is_refused_and_their_files_ignored(tmp_path, capsys):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o777)
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(PermissionError, match="belongs to another user"):
        train(theirs)
    assert list(theirs.iterdir()) == []
    corpus = tmp_path / "docs.txt"
    corpus.write_text("car road\n")
    argv = ["embeddings", "train", "--corpus", str(corpus), "--out", str(tmp_path / "v.txt")]
    assert main([*argv, "--train-cache", str(theirs), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "belongs to another user" in err

    cache = tmp_path / "cache"
    first = train(cache)
    (vectors,) = cache.glob("*.npy")
    np.save(vectors, np.zeros_like(first.vectors), allow_pickle=False)
    os.chown(vectors, NOBODY, NOBODY)  # private (0600), but another account's
    assert np.array_equal(train(cache).vectors, first.vectors)
    assert os.stat(vectors).st_uid == os.getuid()


def test_a_named_pipe_planted_in_the_cache_is_ignored_at_once(tmp_path):
    cache = tmp_path / "cache"
    first = train(cache)
    (vectors,) = cache.glob("*.npy")
    vectors.unlink()
    os.mkfifo(vectors, 0o600)  # opening it for reading would wait for a writer for ever
    script = (
        "import sys; import numpy as np; from tests.unit.test_cache_safety import train;"
        "np.save(sys.argv[2], train(sys.argv[1]).vectors)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(cache), str(tmp_path / "again.npy")],
        capture_output=True,
        text=True,
        timeout=120,  # before the fix the child blocked in the open until killed
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "named pipe" in done.stderr  # the warning says what was there
    assert np.array_equal(np.load(tmp_path / "again.npy"), first.vectors)
    assert stat.S_ISREG(os.lstat(vectors).st_mode)  # trained again and cached anew


def test_a_cached_word_list_nested_too_deeply_is_ignored(tmp_path, caplog):
    cache = tmp_path / "cache"
    first = train(cache)
    (words,) = cache.glob("*.json")
    words.write_text("[" * 100_000 + "]" * 100_000)
    words.chmod(0o600)
    assert train(cache).words == first.words  # trained again, not a RecursionError
    assert "nested too deeply" in caplog.text
