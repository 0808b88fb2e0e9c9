"""Word embeddings trained for a model: on its own corpus, or on a background corpus.

:meth:`es_scm.model.SoftCosineModel.build` reads its corpus once; when embeddings are to be trained
on it (or may be: ``"auto"``), :func:`own_corpus_sink` gives the
:class:`~es_scm.similarity.training.SentenceFile` that the tokens pass through on their way to the
vocabulary, and :func:`resolve_embeddings` chooses (``"auto"``, :mod:`es_scm.model.auto`) and
trains on it (or on a background corpus, tokenized by the model's tokenizer) with the one trainer,
:mod:`es_scm.similarity.training`. ``embeddings`` may also be a list of ``(weight, source)``
pairs, whose matrices :func:`es_scm.similarity.factory.build_similarity` combines; each training
among them is resolved the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from es_scm.model.auto import as_auto
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

    @property
    def counts(self) -> tuple[int, int]:
        """(tokens, distinct tokens) written."""
        return self.sink.tokens, self.sink.distinct

    def file(self) -> tuple[Path, str]:
        if self._closed is None:
            self._closed = self.sink.close()
        return self._closed

    def discard(self) -> None:
        """Delete the file: the vectors trained on it are cached, the corpus is not kept."""
        if self._closed is None:
            self.sink.discard()
        else:
            self._closed[0].unlink(missing_ok=True)


def _trainings(embeddings: Any) -> list[EmbeddingTraining]:
    sources = weighted_sources(embeddings)
    found = [as_training(source) for _, source in sources] if sources else [as_training(embeddings)]
    return [training for training in found if training is not None]


def own_corpus_sink(embeddings: Any) -> OwnCorpus | None:
    """A sentence file when embeddings are, or may be, trained on the model's own corpus."""
    auto = as_auto(embeddings)
    if auto is not None:
        return OwnCorpus(SentenceFile(auto.training.cache_dir))
    own = [t for t in _trainings(embeddings) if t.corpus is None]
    return OwnCorpus(SentenceFile(own[0].cache_dir)) if own else None


def resolve_embeddings(
    embeddings: Any, tokenizer: Tokenizer, terms: Sequence[str], own: OwnCorpus | None
) -> tuple[Any, dict[str, Any] | None]:
    """``embeddings`` with ``"auto"`` chosen and every training replaced by the vectors it trains.

    Parameters
    ----------
    embeddings : WordEmbeddings, KeyedVectors, EmbeddingTraining, AutoEmbeddings, str, list of
        pairs or None
    tokenizer : Tokenizer
        The model's: a background corpus is tokenized as the model's texts are.
    terms : sequence of str
        The model's terms (fastText gives each a subword vector).
    own : OwnCorpus, optional
        The model's corpus, written while the vocabulary was fitted.

    Returns
    -------
    (embeddings, choice)
        ``choice`` records what ``"auto"`` chose and why (None for any other ``embeddings``).
    """
    choice = None
    auto = as_auto(embeddings)
    if auto is not None:
        assert own is not None
        embeddings, choice = auto.choose(own.counts[0])
    try:
        sources = weighted_sources(embeddings)
        if sources:
            return [(w, _resolve(s, tokenizer, terms, own)) for w, s in sources], choice
        return _resolve(embeddings, tokenizer, terms, own), choice
    finally:
        if own is not None:
            own.discard()


def _resolve(source: Any, tokenizer: Tokenizer, terms: Sequence[str], own: OwnCorpus | None) -> Any:
    training = as_training(source)
    if training is None:
        return source
    if training.corpus is None:
        assert own is not None
        path, digest = own.file()
        return train_on_file(
            path,
            training,
            terms=terms,
            name="the model's corpus",
            digest=digest,
            counts=own.counts,
        )
    sentences = tokenizer.tokenize_many(training.corpus)
    return train_embeddings(sentences, training, terms=terms, name="a background corpus")
