"""Typed options (es_scm.options): checked once when made, with the messages the API always gave;
the defaults are instances of them; ``embeddings=`` is read into a named source in one place."""

from __future__ import annotations

import inspect
import re
from dataclasses import fields, replace

import numpy as np
import pytest

from es_scm.fusion import MaxFusion, ReciprocalRankFusion
from es_scm.model import SoftCosineModel
from es_scm.model.auto import AutoEmbeddings
from es_scm.model.similarity_source import similarity_source
from es_scm.options import (
    AutoOptions,
    EncoderOptions,
    HybridOptions,
    LevenshteinOptions,
    SimilarityOptions,
    SourceOptions,
    SynonymOptions,
    TrainingOptions,
    TrainingScale,
)
from es_scm.options.defaults import (
    AUTO_EMBEDDINGS,
    EMBEDDING_SOURCE,
    ENCODER_DEFAULTS,
    HYBRID_DEFAULTS,
    LEVENSHTEIN_DEFAULTS,
    SIMILARITY_DEFAULTS,
    SYNONYM_DEFAULTS,
    TRAINING_DEFAULTS,
    TRAINING_SCALE,
)
from es_scm.options.validation import Interval
from es_scm.search.hybrid.config import hybrid_options
from es_scm.similarity import TermSimilarityMatrix, WordEmbeddings
from es_scm.similarity.encoded import EncoderVectors
from es_scm.similarity.factory import CombinedSources, levenshtein_options
from es_scm.similarity.synonyms import Synonyms
from es_scm.similarity.training import EmbeddingTraining

TEXTS = ["caesar dead", "caesar killed", "the capitol", "antony dead"]
EMBEDDINGS = WordEmbeddings(
    ["dead", "killed", "caesar", "capitol", "antony"],
    np.array(
        [[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0], [0.3, 0.2, 0.9]]
    ),
)

# (default instance, option, bad value, the message es-scm gave before the options were typed)
BAD_VALUES = [
    (SIMILARITY_DEFAULTS, "nonzero_limit", -1, "nonzero_limit must be None or an integer >= 0"),
    (SIMILARITY_DEFAULTS, "threshold", 1.0, "threshold must be a real number in [-1, 1), got 1.0"),
    (SIMILARITY_DEFAULTS, "exponent", 0, "exponent must be a real number in (0, inf), got 0"),
    (SIMILARITY_DEFAULTS, "symmetric", 1, "symmetric must be True or False, got 1"),
    (SIMILARITY_DEFAULTS, "dominant", "no", "dominant must be True or False, got 'no'"),
    (
        SIMILARITY_DEFAULTS,
        "neighbors",
        "all",
        "neighbors must be one of 'terms', 'vocabulary', 'gensim', got 'all'",
    ),
    (SIMILARITY_DEFAULTS, "column_order", "df", "column_order must be one of 'rarest', 'id'"),
    (LEVENSHTEIN_DEFAULTS, "weight", 1.0, "weight must be a real number in (0, 1), got 1.0"),
    (LEVENSHTEIN_DEFAULTS, "alpha", 0, "alpha must be a real number in (0, inf), got 0"),
    (LEVENSHTEIN_DEFAULTS, "beta", -1, "beta must be a real number in [0, inf), got -1"),
    (LEVENSHTEIN_DEFAULTS, "max_distance", -1, "max_distance must be an integer >= 0, got -1"),
    (
        TRAINING_DEFAULTS,
        "method",
        "glove",
        "method must be one of ('auto', 'word2vec', 'fasttext'), got 'glove'",
    ),
    (TRAINING_DEFAULTS, "vector_size", True, "vector_size must be a positive integer, got True"),
    (TRAINING_DEFAULTS, "window", 2.5, "window must be a positive integer, got 2.5"),
    (TRAINING_DEFAULTS, "epochs", 0, "epochs must be a positive integer, got 0"),
    (TRAINING_DEFAULTS, "bucket", -1, "bucket must be a positive integer, got -1"),
    (TRAINING_DEFAULTS, "sg", 2, "sg must be 0 (CBOW) or 1 (skip-gram), got 2"),
    (TRAINING_DEFAULTS, "sample", 1.0, "sample must be a number in [0, 1), got 1.0"),
    (TRAINING_DEFAULTS, "workers", 0, "workers must be a positive integer or None, got 0"),
    (TRAINING_DEFAULTS, "deterministic", 1, "deterministic must be a bool, got 1"),
    (TRAINING_DEFAULTS, "max_n", 2, "min_n (3) must not exceed max_n (2)"),
    (TRAINING_SCALE, "max_epochs", 0, "max_epochs must be an integer >= 1, got 0"),
    (TRAINING_SCALE, "max_bucket", 10, "min_bucket (50000) must not exceed max_bucket (10)"),
    (AUTO_EMBEDDINGS, "glove_weight", 1.0, "glove_weight must be in (0, 1), got 1.0"),
    (AUTO_EMBEDDINGS, "min_training_tokens", -1, "min_training_tokens must be >= 0, got -1"),
    (AUTO_EMBEDDINGS, "encoder_weight", 1.5, "encoder_weight must be in [0, 1], got 1.5"),
    (EMBEDDING_SOURCE, "exponent", 0, "exponent must be a real number in (0, inf), got 0"),
    (ENCODER_DEFAULTS, "mode", "letters", "mode must be one of 'word', 'pieces', got 'letters'"),
    (ENCODER_DEFAULTS, "batch_size", 0, "batch_size must be an integer >= 1, got 0"),
    (ENCODER_DEFAULTS, "threshold", -2, "threshold must be a real number in [-1, 1), got -2"),
    (ENCODER_DEFAULTS, "model", "", "model must be a model name or a folder, got ''"),
    (SYNONYM_DEFAULTS, "weight", 0, "weight must be a real number in (0, 1), got 0"),
    (SYNONYM_DEFAULTS, "similarity", 0, "similarity must be a real number in (0, 1], got 0"),
    (
        HYBRID_DEFAULTS,
        "fusion",
        "mean",
        "fusion must be one of 'max', 'linear', 'zscore', 'rrf', 'adaptive', got 'mean'",
    ),
    (HYBRID_DEFAULTS, "alpha", 2, "alpha must be a real number in [0, 1], got 2"),
    (HYBRID_DEFAULTS, "rrf_k", -1, "rrf_k must be an integer >= 0, got -1"),
    (HYBRID_DEFAULTS, "depth", 0, "depth must be an integer >= 1, got 0"),
]


@pytest.mark.parametrize(("defaults", "name", "value", "message"), BAD_VALUES)
def test_every_option_type_refuses_a_bad_value_with_the_message_the_api_gave(
    defaults, name, value, message
):
    with pytest.raises(ValueError, match=re.escape(message)):
        replace(defaults, **{name: value})


@pytest.mark.parametrize(
    ("default", "kind"),
    [
        (SIMILARITY_DEFAULTS, SimilarityOptions),
        (LEVENSHTEIN_DEFAULTS, LevenshteinOptions),
        (TRAINING_DEFAULTS, TrainingOptions),
        (TRAINING_SCALE, TrainingScale),
        (AUTO_EMBEDDINGS, AutoOptions),
        (HYBRID_DEFAULTS, HybridOptions),
        (EMBEDDING_SOURCE, SourceOptions),
        (ENCODER_DEFAULTS, EncoderOptions),
        (SYNONYM_DEFAULTS, SynonymOptions),
    ],
)
def test_the_defaults_are_instances_of_the_option_types(default, kind):
    assert type(default) is kind
    assert replace(default) == default  # every default passes its own checks
    with pytest.raises(AttributeError):  # frozen: a default cannot be changed in place
        setattr(default, kind.names()[0], None)


def test_the_api_takes_its_defaults_from_the_default_instances():
    build = inspect.signature(SoftCosineModel.build).parameters
    from_embeddings = inspect.signature(TermSimilarityMatrix.from_embeddings).parameters
    for name in SimilarityOptions.names():
        assert build[name].default == getattr(SIMILARITY_DEFAULTS, name)
        if name in ("threshold", "exponent"):  # build: each source's own; word vectors' here
            assert build[name].default is None
            assert from_embeddings[name].default == getattr(EMBEDDING_SOURCE, name)
        elif name != "column_order":  # from_embeddings orders by its document_frequencies
            assert from_embeddings[name].default == getattr(SIMILARITY_DEFAULTS, name)
    from_levenshtein = inspect.signature(TermSimilarityMatrix.from_levenshtein).parameters
    for name in ("alpha", "beta", "max_distance"):
        assert from_levenshtein[name].default == getattr(LEVENSHTEIN_DEFAULTS, name)
    training = EmbeddingTraining()
    assert {f.name: getattr(training, f.name) for f in fields(TrainingOptions)} == (
        TRAINING_DEFAULTS.as_dict()
    )
    auto = AutoEmbeddings()
    assert (auto.glove_weight, auto.min_training_tokens, auto.encoder_weight) == (
        AUTO_EMBEDDINGS.glove_weight,
        AUTO_EMBEDDINGS.min_training_tokens,
        AUTO_EMBEDDINGS.encoder_weight,
    )
    encoder = EncoderVectors()
    assert (encoder.sentence_encoder.name, encoder.mode, encoder.batch_size) == (
        ENCODER_DEFAULTS.model,
        ENCODER_DEFAULTS.mode,
        ENCODER_DEFAULTS.batch_size,
    )
    synonyms = inspect.signature(Synonyms).parameters
    for name in SynonymOptions.names():
        assert synonyms[name].default == getattr(SYNONYM_DEFAULTS, name)
    assert MaxFusion().alpha == HYBRID_DEFAULTS.alpha
    assert ReciprocalRankFusion().rrf_k == HYBRID_DEFAULTS.rrf_k
    assert hybrid_options() == HYBRID_DEFAULTS


def test_options_are_coerced_once_when_made():
    options = replace(
        SIMILARITY_DEFAULTS, nonzero_limit=np.int64(3), threshold=0, symmetric=np.True_
    )
    assert (options.nonzero_limit, options.threshold, options.symmetric) == (3, 0.0, True)
    assert type(options.nonzero_limit) is int
    assert type(options.threshold) is float
    assert type(options.symmetric) is bool
    assert type(EmbeddingTraining(epochs=np.int64(5)).epochs) is int


def test_the_public_api_refuses_a_bad_option_with_the_same_message():
    message = re.escape("threshold must be a real number in [-1, 1), got 1.0")
    with pytest.raises(ValueError, match=message):
        SoftCosineModel.build(TEXTS, EMBEDDINGS, threshold=1.0)
    with pytest.raises(ValueError, match=message):
        TermSimilarityMatrix.from_embeddings(["dead"], EMBEDDINGS, threshold=1.0)
    with pytest.raises(ValueError, match=re.escape("alpha must be a real number in [0, 1]")):
        hybrid_options(alpha=2)
    with pytest.raises(ValueError, match="epochs must be a positive integer"):
        EmbeddingTraining(epochs=0)
    with pytest.raises(ValueError, match=re.escape("glove_weight must be in (0, 1)")):
        AutoEmbeddings(glove_weight=1.0)


def test_a_similarity_option_is_checked_once_per_build(monkeypatch):
    checked = []
    coerce = Interval.coerce

    def counting(self, value):
        checked.append(value)
        return coerce(self, value)

    monkeypatch.setattr(Interval, "coerce", counting)
    SoftCosineModel.build(TEXTS, EMBEDDINGS, threshold=0.123, nonzero_limit=37, levenshtein=0.25)
    # S from embeddings and edit distance, and the unseen words, all use them: checked once
    assert checked.count(0.123) == 1
    assert checked.count(37) == 1
    assert checked.count(0.25) == 1


def test_old_keyword_arguments_build_the_same_model_as_the_typed_options():
    by_keywords = SoftCosineModel.build(TEXTS, EMBEDDINGS, threshold=0.0, levenshtein=True)
    by_options = SoftCosineModel.build(
        TEXTS, EMBEDDINGS, threshold=0.0, levenshtein=LEVENSHTEIN_DEFAULTS
    )
    half = SoftCosineModel.build(TEXTS, EMBEDDINGS, threshold=0.0, levenshtein=0.5)
    assert by_keywords.model_id == by_options.model_id == half.model_id


def test_levenshtein_is_read_into_its_typed_option():
    assert levenshtein_options(False) is None
    assert levenshtein_options(True) is LEVENSHTEIN_DEFAULTS
    assert levenshtein_options(0.3) == replace(LEVENSHTEIN_DEFAULTS, weight=0.3)
    for bad in (1.5, 0, None, "yes"):
        with pytest.raises(ValueError, match="levenshtein must be a bool, a float in"):
            levenshtein_options(bad)


def test_embeddings_are_read_into_one_of_the_named_sources():
    assert similarity_source(None) is None
    assert similarity_source(EMBEDDINGS) is EMBEDDINGS
    assert isinstance(similarity_source("auto"), AutoEmbeddings)
    assert similarity_source("train:fasttext") == EmbeddingTraining(method="fasttext")
    combined = similarity_source([(0.3, EMBEDDINGS), (0.7, "train")])
    assert combined == CombinedSources(((0.3, EMBEDDINGS), (0.7, EmbeddingTraining())))
    with pytest.raises(ValueError, match="only word vectors, trainings and encoders can be"):
        similarity_source([(0.5, "auto")])
    with pytest.raises(ValueError, match="must be positive, summing to <= 1"):
        similarity_source([(0.7, EMBEDDINGS), (0.7, EMBEDDINGS)])


def test_gensim_keyed_vectors_are_read_as_word_embeddings():
    pytest.importorskip("gensim")
    source = similarity_source(EMBEDDINGS.to_gensim())
    assert isinstance(source, WordEmbeddings)
    assert source.words == EMBEDDINGS.words


def test_embeddings_that_name_no_source_are_refused_before_the_corpus_is_read():
    texts = iter(TEXTS)
    with pytest.raises(ValueError, match="embeddings must be WordEmbeddings or gensim"):
        SoftCosineModel.build(texts, "glove-6b-50d")
    assert next(texts) == TEXTS[0]  # not read


def test_word_embeddings_offer_their_most_similar_words_as_gensim_does():
    gensim = pytest.importorskip("gensim")
    assert gensim is not None
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(40)]
    embeddings = WordEmbeddings(words, rng.normal(size=(40, 8)))
    expected = embeddings.to_gensim().most_similar("w3", topn=5)
    found = embeddings.most_similar("w3", topn=5)
    assert [word for word, _ in found] == [word for word, _ in expected]
    np.testing.assert_allclose([s for _, s in found], [s for _, s in expected], rtol=1e-5)
    assert len(embeddings.most_similar("w3", topn=100)) == 39  # every other word, not itself
