"""Word embeddings trained for a model: on its own corpus, or on a background corpus.

:meth:`es_scm.model.SoftCosineModel.build` reads its corpus once; when embeddings are to be trained
on it, :func:`own_corpus_sink` gives the :class:`~es_scm.similarity.training.SentenceFile` that the
tokens pass through on their way to the vocabulary, and :func:`resolve_embeddings` trains on it
(or on a background corpus, tokenized by the model's tokenizer) with the one trainer,
:mod:`es_scm.similarity.training`. ``embeddings`` may also be a list of ``(weight, source)``
pairs, whose matrices :func:`es_scm.similarity.factory.build_similarity` combines; each training
among them is resolved the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from es_scm.model.text import Tokenizer
from es_scm.similarity.factory import weighted_sources
from es_scm.similarity.training import (
    EmbeddingTraining,
    SentenceFile,
    as_training,
    train_embeddings,
    train_on_file,
)

__all__ = ["OwnCorpus", "own_corpus_sink", "resolve_embeddings"]


class OwnCorpus:
    """The model's corpus as a sentence file: written while read, closed once, then reused."""

    def __init__(self, sink: SentenceFile) -> None:
        self.sink = sink
        self._closed: tuple[Path, str] | None = None

    def tee(self, sentences: Any) -> Any:
        return self.sink.tee(sentences)

    def file(self) -> tuple[Path, str]:
        if self._closed is None:
            self._closed = self.sink.close()
        return self._closed


def _trainings(embeddings: Any) -> list[EmbeddingTraining]:
    sources = weighted_sources(embeddings)
    found = [as_training(source) for _, source in sources] if sources else [as_training(embeddings)]
    return [training for training in found if training is not None]


def own_corpus_sink(embeddings: Any) -> OwnCorpus | None:
    """A sentence file when some embeddings are to be trained on the model's own corpus."""
    own = [t for t in _trainings(embeddings) if t.corpus is None]
    return OwnCorpus(SentenceFile(own[0].cache_dir)) if own else None


def resolve_embeddings(
    embeddings: Any, tokenizer: Tokenizer, terms: Sequence[str], own: OwnCorpus | None
) -> Any:
    """``embeddings`` with every training replaced by the vectors it trains.

    Parameters
    ----------
    embeddings : WordEmbeddings, KeyedVectors, EmbeddingTraining, str, list of pairs or None
    tokenizer : Tokenizer
        The model's: a background corpus is tokenized as the model's texts are.
    terms : sequence of str
        The model's terms (fastText gives each a subword vector).
    own : OwnCorpus, optional
        The model's corpus, written while the vocabulary was fitted.
    """
    sources = weighted_sources(embeddings)
    if sources:
        return [(weight, _resolve(s, tokenizer, terms, own)) for weight, s in sources]
    return _resolve(embeddings, tokenizer, terms, own)


def _resolve(source: Any, tokenizer: Tokenizer, terms: Sequence[str], own: OwnCorpus | None) -> Any:
    training = as_training(source)
    if training is None:
        return source
    if training.corpus is None:
        assert own is not None
        path, digest = own.file()
        return train_on_file(path, training, terms=terms, name="the model's corpus", digest=digest)
    sentences = tokenizer.tokenize_many(training.corpus)
    return train_embeddings(sentences, training, terms=terms, name="a background corpus")
