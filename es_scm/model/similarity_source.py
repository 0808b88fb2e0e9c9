"""What ``embeddings=`` of :meth:`SoftCosineModel.build` may be, read in one place.

S is built from a *source* of term similarities, as in gensim (``similarities/termsim.py``: a
``TermSimilarityIndex`` offers ``most_similar(term, topn)``, from which a sparse matrix is built).
A source here is one of five named kinds, the :data:`SimilaritySource` union:

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
one of them, or None (no word vectors: S = I unless ``levenshtein=``), before the corpus is read,
so that a wrong value is refused at once; :mod:`es_scm.model.trained` then chooses and trains,
and :func:`es_scm.similarity.factory.build_similarity` builds S from the word vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

from es_scm.model.auto import AutoEmbeddings, as_auto
from es_scm.similarity.embeddings import WordEmbeddings
from es_scm.similarity.encoded import EncoderVectors, as_encoder_vectors
from es_scm.similarity.factory import CombinedSources, source_part
from es_scm.similarity.training import EmbeddingTraining, as_training

if TYPE_CHECKING:  # pragma: no cover
    from gensim.models import KeyedVectors

__all__ = ["EmbeddingsLike", "SimilaritySource", "similarity_source"]

#: The named kinds of source S is built from.
SimilaritySource = (
    WordEmbeddings | EmbeddingTraining | EncoderVectors | AutoEmbeddings | CombinedSources
)
#: What ``embeddings=`` accepts: a source, gensim ``KeyedVectors``, a ``SentenceEncoder``,
#: ``"auto"``, ``"train[:word2vec|fasttext]"``, ``"encoder[:NAME_OR_FOLDER]"``, a sequence of
#: ``(weight, embeddings)`` pairs or ``(weight, embeddings, options)`` triples, or None.
EmbeddingsLike = Union[SimilaritySource, "KeyedVectors", str, Sequence[tuple[float, Any]], None]

_ACCEPTED = (
    "WordEmbeddings or gensim KeyedVectors, an EmbeddingTraining or "
    "'train[:word2vec|fasttext]', an EncoderVectors, a SentenceEncoder or "
    "'encoder[:NAME_OR_FOLDER]', an AutoEmbeddings or 'auto', a list of (weight, embeddings) "
    "pairs or (weight, embeddings, options) triples, or None"
)


def similarity_source(embeddings: EmbeddingsLike) -> SimilaritySource | None:
    """The source of S that ``embeddings`` names (None for None).

    Raises
    ------
    ValueError
        For a value that names no source, a malformed training or encoder spec, ``"auto"``
        among combined sources, or combined weights that are not positive or sum to more
        than 1.
    """
    if embeddings is None or isinstance(
        embeddings,
        WordEmbeddings | EmbeddingTraining | EncoderVectors | AutoEmbeddings | CombinedSources,
    ):
        return embeddings
    encoder = as_encoder_vectors(embeddings)
    if encoder is not None:
        return encoder
    if isinstance(embeddings, str):
        named = as_auto(embeddings) or as_training(embeddings)
        if named is not None:
            return named
    elif _is_keyed_vectors(embeddings):
        return WordEmbeddings.from_gensim(embeddings)
    elif _is_parts(embeddings):
        parts = tuple(
            source_part((part[0], _combinable(part[1]), *part[2:])) for part in embeddings
        )
        return CombinedSources(parts)
    shown = repr(embeddings) if isinstance(embeddings, str) else type(embeddings).__name__
    raise ValueError(f"embeddings must be {_ACCEPTED}, got {shown}")


def _is_keyed_vectors(value: Any) -> bool:
    return hasattr(value, "index_to_key") and hasattr(value, "vectors")


def _is_parts(value: Any) -> bool:
    """A non-empty list or tuple of 2- or 3-tuples."""
    return (
        isinstance(value, list | tuple)
        and bool(value)
        and all(isinstance(item, tuple) and len(item) in (2, 3) for item in value)
    )


def _combinable(value: Any) -> WordEmbeddings | EmbeddingTraining | EncoderVectors:
    source = similarity_source(value)
    if not isinstance(source, WordEmbeddings | EmbeddingTraining | EncoderVectors):
        kind = "None" if source is None else type(source).__name__
        raise ValueError(f"only word vectors, trainings and encoders can be combined, not {kind}")
    return source
