"""Word embeddings trained for a model: on its own corpus, or on a background corpus.

:meth:`es_scm.model.SoftCosineModel.build` reads its corpus once; when the embeddings are to be
trained on it, :func:`own_corpus_sink` gives the :class:`~es_scm.similarity.training.SentenceFile`
that the tokens pass through on their way to the vocabulary, and :func:`train_for_model` trains on
it (or on the background corpus, tokenized by the model's tokenizer) with the one trainer,
:mod:`es_scm.similarity.training`.
"""

from __future__ import annotations

from collections.abc import Sequence

from es_scm.model.text import Tokenizer
from es_scm.similarity import WordEmbeddings
from es_scm.similarity.training import (
    EmbeddingTraining,
    SentenceFile,
    train_embeddings,
    train_on_file,
)

__all__ = ["own_corpus_sink", "train_for_model"]


def own_corpus_sink(training: EmbeddingTraining | None) -> SentenceFile | None:
    """A sentence file for training on the model's own corpus; None otherwise."""
    if training is None or training.corpus is not None:
        return None
    return SentenceFile(training.cache_dir)


def train_for_model(
    training: EmbeddingTraining,
    tokenizer: Tokenizer,
    terms: Sequence[str],
    sink: SentenceFile | None,
) -> WordEmbeddings:
    """Train as ``training`` says: on ``sink`` (the model's corpus) or on ``training.corpus``.

    Parameters
    ----------
    training : EmbeddingTraining
    tokenizer : Tokenizer
        The model's: a background corpus is tokenized as the model's texts are.
    terms : sequence of str
        The model's terms (fastText gives each a subword vector).
    sink : SentenceFile, optional
        The model's corpus, written while the vocabulary was fitted.
    """
    if sink is not None:
        path, digest = sink.close()
        return train_on_file(path, training, terms=terms, name="the model's corpus", digest=digest)
    assert training.corpus is not None
    sentences = tokenizer.tokenize_many(training.corpus)
    return train_embeddings(sentences, training, terms=terms, name="a background corpus")
