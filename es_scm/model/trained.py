"""Word vectors made for a model: trained on its own corpus or a background corpus, or encoded.

:meth:`es_scm.model.SoftCosineModel.build` reads its corpus once; when embeddings are to be trained
on it (or may be: ``"auto"``), :func:`own_corpus_sink` gives the
:class:`~es_scm.similarity.training.SentenceFile` that the tokens pass through on their way to the
vocabulary, and :func:`resolve_embeddings` chooses (``"auto"``, :mod:`es_scm.model.auto`) and
trains on it (or on a background corpus, tokenized by the model's tokenizer) with the one trainer,
:mod:`es_scm.similarity.training`. The source may also be
:class:`~es_scm.similarity.factory.CombinedSources`, whose matrices
:func:`es_scm.similarity.factory.build_similarity` combines; each training among them is resolved
the same way. A sentence encoder's term vectors (:class:`~es_scm.similarity.encoded.EncoderVectors`)
are encoded for the model's terms, and for the encoder's whole words that the model's tokenizer
keeps as terms (the query words outside the vocabulary that the unseen columns cover).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from es_scm.model.similarity_source import SimilaritySource
from es_scm.model.text import Tokenizer
from es_scm.similarity.source import Preparation
from es_scm.similarity.training import SentenceFile

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


def own_corpus_sink(source: SimilaritySource | None) -> OwnCorpus | None:
    """A sentence file when word vectors are, or may be, trained on the model's own corpus
    (:meth:`~es_scm.similarity.source.SimilaritySource.corpus_sink`)."""
    sink = None if source is None else source.corpus_sink()
    return None if sink is None else OwnCorpus(sink)


def resolve_embeddings(
    source: SimilaritySource | None,
    tokenizer: Tokenizer,
    terms: Sequence[str],
    own: OwnCorpus | None,
) -> tuple[SimilaritySource | None, dict[str, Any] | None]:
    """``source`` made ready for S (:meth:`~es_scm.similarity.source.SimilaritySource.prepare`):
    ``"auto"`` chosen, every training replaced by the vectors it trains and every encoder by the
    vectors it encodes.

    Parameters
    ----------
    source : SimilaritySource or None
        What :func:`~es_scm.model.similarity_source.similarity_source` made of ``embeddings=``.
    tokenizer : Tokenizer
        The model's: a background corpus is tokenized as the model's texts are.
    terms : sequence of str
        The model's terms (fastText gives each a subword vector; an encoder encodes them).
    own : OwnCorpus, optional
        The model's corpus, written while the vocabulary was fitted.

    Returns
    -------
    (ready source, choice)
        ``choice`` records what ``"auto"`` chose and why (None for any other ``source``).
    """
    try:
        if source is None:
            return None, None
        preparation = Preparation(terms, tokenizer, own)
        return source.prepare(preparation), preparation.record.get("auto")
    finally:
        if own is not None:
            own.discard()
