"""What ``embeddings=`` of :meth:`SoftCosineModel.build` may be, read in one place.

S is built from a *source* of term similarities, as in gensim (``similarities/termsim.py``: a
``TermSimilarityIndex`` offers ``most_similar(term, topn)``, from which a sparse matrix is built).
Every source implements one protocol, :class:`~es_scm.similarity.source.SimilaritySource`, and
the registry of its kinds (:func:`~es_scm.similarity.source.register`) reads ``embeddings=``;
these are registered here:

:class:`~es_scm.similarity.WordEmbeddings`
    Word vectors given (gensim ``KeyedVectors`` are converted); ``most_similar(word, topn)``.
:class:`~es_scm.similarity.training.EmbeddingTraining`
    Word vectors to train with gensim on the model's corpus or a background corpus
    (``"train"``, ``"train:word2vec"``, ``"train:fasttext"``).
:class:`~es_scm.similarity.encoded.EncoderVectors`
    A sentence encoder's static term vectors, each word encoded alone once its terms are known
    (``"encoder"``, ``"encoder:NAME_OR_FOLDER"``, a :class:`~es_scm.encoder.SentenceEncoder`).
:class:`~es_scm.model.auto.AutoEmbeddings`
    Chosen by the corpus's size and the installed extras once the corpus is read (``"auto"``).
:class:`~es_scm.similarity.factory.CombinedSources`
    Several of the first three whose matrices are combined with their weights (a list of
    ``(weight, embeddings)`` pairs, or ``(weight, embeddings, options)`` triples whose
    :class:`~es_scm.options.SourceOptions` are the part's own threshold, exponent and
    ``nonzero_limit``).

Synonym files are no value of ``embeddings=``: they are mixed into whatever S the embeddings
make (``synonyms=``, :mod:`es_scm.similarity.synonyms`).

:func:`similarity_source` turns every value ``embeddings=`` accepts (:data:`EmbeddingsLike`) into
one of them (or of any other registered kind), or None (no word vectors: S = I unless
``levenshtein=``), before the corpus is read, so that a wrong value is refused at once;
:mod:`es_scm.model.trained` then makes it ready (chooses, trains, encodes:
:meth:`~es_scm.similarity.source.SimilaritySource.prepare`), and
:func:`es_scm.similarity.factory.build_similarity` builds S from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

# the kinds of source, registered as their modules are imported (in this order)
from es_scm.model.auto import AutoEmbeddings
from es_scm.similarity.embeddings import WordEmbeddings
from es_scm.similarity.encoded import EncoderVectors
from es_scm.similarity.factory import CombinedSources
from es_scm.similarity.source import SimilaritySource, read_source
from es_scm.similarity.training import EmbeddingTraining

if TYPE_CHECKING:  # pragma: no cover
    from gensim.models import KeyedVectors

__all__ = ["EmbeddingsLike", "SimilaritySource", "similarity_source"]

#: The kinds of source registered by es-scm (any registered :class:`SimilaritySource` is one).
KINDS = (WordEmbeddings, EmbeddingTraining, EncoderVectors, AutoEmbeddings, CombinedSources)
#: What ``embeddings=`` accepts: a source, gensim ``KeyedVectors``, a ``SentenceEncoder``,
#: ``"auto"``, ``"train[:word2vec|fasttext]"``, ``"encoder[:NAME_OR_FOLDER]"``, a sequence of
#: ``(weight, embeddings)`` pairs or ``(weight, embeddings, options)`` triples, or None.
EmbeddingsLike = Union[SimilaritySource, "KeyedVectors", str, Sequence[tuple[float, Any]], None]


def similarity_source(embeddings: EmbeddingsLike) -> SimilaritySource | None:
    """The source of S that ``embeddings`` names (None for None), by the registry
    (:func:`~es_scm.similarity.source.read_source`).

    Raises
    ------
    ValueError
        For a value that names no source, a malformed training or encoder spec, ``"auto"``
        among combined sources, or combined weights that are not positive or sum to more
        than 1.
    """
    return read_source(embeddings)
