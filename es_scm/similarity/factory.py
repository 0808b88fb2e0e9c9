r"""Which sources make S for a model: word vectors, edit distance, synonym files, a ready matrix.

:func:`build_similarity` is what :meth:`es_scm.model.SoftCosineModel.build` and every command
call, with options checked once (:class:`~es_scm.options.SimilarityOptions`, defaults
:data:`es_scm.options.defaults.SIMILARITY_DEFAULTS`), so that one set of options means the same
matrix everywhere. Its word vectors come resolved: :class:`~es_scm.similarity.WordEmbeddings`, or
:class:`CombinedSources` of them (:mod:`es_scm.model.similarity_source` reads ``embeddings=``,
trains and encodes what is to be trained or encoded first).

Each source of vectors is built with its own threshold, exponent and ``nonzero_limit``
(:func:`~es_scm.options.source_settings`): a part's own (:class:`SourcePart`), else the model's
given ones, else its kind's defaults — :data:`~es_scm.options.defaults.ENCODER_DEFAULTS` for a
sentence encoder's vectors, :data:`~es_scm.options.defaults.EMBEDDING_SOURCE` for other word vectors
— and its build record says which it used. S is then

.. math:: S = I + (1 - w)\,[(1 - \lambda)(S_\text{vectors} - I) + \lambda (S_\text{edit} - I)]
    + w\,(S_\text{synonyms} - I),

with :math:`S_\text{vectors}` the weighted combination of the vectors' matrices, λ the edit
distance's weight and w the synonyms' (a source that is absent drops out with its weight).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from es_scm.options import (
    EncoderOptions,
    LevenshteinOptions,
    SimilarityOptions,
    SourceOptions,
    source_settings,
)
from es_scm.options.defaults import (
    EMBEDDING_SOURCE,
    ENCODER_DEFAULTS,
    LEVENSHTEIN_DEFAULTS,
    SIMILARITY_DEFAULTS,
)
from es_scm.similarity.embeddings import WordEmbeddings
from es_scm.similarity.encoded import EncoderVectors
from es_scm.similarity.levenshtein import levenshtein_matrix
from es_scm.similarity.matrix import TermSimilarityMatrix
from es_scm.similarity.sources import DTYPE, embedding_matrix
from es_scm.similarity.synonyms import Synonyms, Tokenize, synonym_matrix
from es_scm.similarity.training import EmbeddingTraining
from es_scm.similarity.unseen import UnseenTerms

__all__ = [
    "CombinedSources",
    "SimilarityLike",
    "SourcePart",
    "VectorSource",
    "build_similarity",
    "build_unseen",
    "levenshtein_options",
    "source_kind",
    "source_part",
]

SimilarityLike = TermSimilarityMatrix | Callable[[list[str]], TermSimilarityMatrix] | None
#: What a part of a combination may be before it is resolved to word vectors.
PartSource = WordEmbeddings | EmbeddingTraining | EncoderVectors


class SourcePart(NamedTuple):
    """One part of :class:`CombinedSources`: its weight, its source, and its own options."""

    weight: float
    source: Any
    options: SourceOptions | None = None


@dataclass(frozen=True)
class CombinedSources:
    """Sources whose matrices S is combined of, with their weights
    (:meth:`TermSimilarityMatrix.combine`), e.g. ``embeddings=[(0.3, glove), (0.7, "train")]``.

    Parameters
    ----------
    parts : tuple of (weight, source) or (weight, source, options)
        Positive weights summing to at most 1; the sources are word vectors, trainings or
        sentence encoders (replaced by the vectors they make before S is built); ``options``
        (:class:`~es_scm.options.SourceOptions` or a dict of its fields) are the part's own
        threshold, exponent and ``nonzero_limit``. Kept as :class:`SourcePart` values.
    """

    parts: tuple[SourcePart, ...]

    def __post_init__(self) -> None:
        parts = tuple(source_part(part) for part in self.parts)
        weights = [part.weight for part in parts]
        if not parts or any(not w > 0 for w in weights) or sum(weights) > 1 + 1e-9:
            raise ValueError("the weights of combined embeddings must be positive, summing to <= 1")
        for part in parts:
            if not isinstance(part.source, PartSource):
                raise ValueError(
                    "combined embeddings must be word vectors, trainings or encoders, "
                    f"got {type(part.source).__name__}"
                )
        object.__setattr__(self, "parts", parts)


def source_part(part: Any) -> SourcePart:
    """A (weight, source[, options]) tuple as a :class:`SourcePart`, its options typed."""
    if not isinstance(part, tuple) or len(part) not in (2, 3):
        raise ValueError(f"expected (weight, source) or (weight, source, options), got {part!r}")
    weight, source, *rest = part
    options = rest[0] if rest else None
    if isinstance(options, Mapping):
        options = SourceOptions(**options)
    if options is not None and not isinstance(options, SourceOptions):
        raise ValueError(f"a part's options must be SourceOptions or a dict, got {options!r}")
    return SourcePart(float(weight), source, options)


#: Word vectors ready for S: one source, or several combined (no training left to do).
VectorSource = WordEmbeddings | CombinedSources


def source_kind(vectors: WordEmbeddings) -> SourceOptions | EncoderOptions:
    """The defaults of the kind of ``vectors``: a sentence encoder's, or word vectors'."""
    return ENCODER_DEFAULTS if vectors.encoder is not None else EMBEDDING_SOURCE


def build_similarity(
    terms: Sequence[str],
    source: VectorSource | None = None,
    *,
    similarity: SimilarityLike = None,
    levenshtein: LevenshteinOptions | None = None,
    synonyms: Synonyms | None = None,
    tokenize: Tokenize | None = None,
    document_frequencies: Sequence[float] | np.ndarray | None = None,
    options: SimilarityOptions = SIMILARITY_DEFAULTS,
    dtype: np.dtype = DTYPE,
    batch_size: int | None = None,
) -> TermSimilarityMatrix:
    """S over ``terms`` (see the module docstring for how the sources are mixed).

    Parameters
    ----------
    terms : sequence of str
    source : WordEmbeddings or CombinedSources of them, optional
        Word vectors for :meth:`TermSimilarityMatrix.from_embeddings`; combined ones are
        combined with their weights (:meth:`TermSimilarityMatrix.combine`), each part built with
        its own settings.
    similarity : TermSimilarityMatrix or callable, optional
        A ready S (over ``terms`` or a superset, restricted to them), or a function
        ``terms -> TermSimilarityMatrix``. Excludes every other source.
    levenshtein : LevenshteinOptions, optional
        Edit-distance similarity: alone it is S; with word vectors S is
        ``weight``·S_levenshtein + (1 − ``weight``)·S_embeddings off the diagonal.
    synonyms : Synonyms, optional
        Synonym files (:mod:`es_scm.similarity.synonyms`): alone they are S; with other sources
        S is ``weight``·S_synonyms + (1 − ``weight``)·S_others off the diagonal.
    tokenize : callable, optional
        The model's tokenizer, which maps the synonyms' entries to terms (needed with them).
    document_frequencies : array, optional
        One per term: columns are filled rarest term first (else, or with
        ``column_order="id"``, by term id).
    options : SimilarityOptions, default=SIMILARITY_DEFAULTS
    dtype, batch_size
        The float dtype of S from word vectors and the terms per matrix product (checked).

    Returns
    -------
    TermSimilarityMatrix
        The identity when there is no source at all.
    """
    terms = list(terms)
    if similarity is not None:
        if source is not None or levenshtein is not None or synonyms is not None:
            raise ValueError("pass either similarity or embeddings/levenshtein/synonyms, not both")
        matrix = similarity if isinstance(similarity, TermSimilarityMatrix) else similarity(terms)
        if not isinstance(matrix, TermSimilarityMatrix):
            raise ValueError(f"similarity must give a TermSimilarityMatrix, got {matrix!r}")
        return matrix.restrict(terms)
    if options.column_order == "id":
        document_frequencies = None
    built = _semantic(terms, source, options, document_frequencies, dtype, batch_size)
    if levenshtein is not None:
        matrix, info = levenshtein_matrix(
            terms, levenshtein, options, document_frequencies=document_frequencies
        )
        edit = TermSimilarityMatrix(matrix, terms, build_info=info)
        weight = levenshtein.weight
        built = edit if built is None else _mix(built, edit, weight)
    if synonyms is not None:
        if tokenize is None:
            raise ValueError("synonyms need the model's tokenizer (tokenize=)")
        matrix, info = synonym_matrix(
            terms,
            synonyms,
            tokenize,
            symmetric=options.symmetric,
            dtype=np.dtype(dtype),
            nonzero_limit=options.nonzero_limit,
        )
        listed = TermSimilarityMatrix(matrix, terms, build_info=info)
        built = listed if built is None else _mix(built, listed, synonyms.weight)
    return TermSimilarityMatrix.identity(terms) if built is None else built


def _semantic(
    terms: list[str],
    source: VectorSource | None,
    options: SimilarityOptions,
    document_frequencies: Sequence[float] | np.ndarray | None,
    dtype: np.dtype,
    batch_size: int | None,
) -> TermSimilarityMatrix | None:
    """S from the word vectors (combined with their weights), or None without any."""
    if source is None:
        return None
    parts = []
    for weight, vectors, own in _weighted(source):
        matrix, info = embedding_matrix(
            terms,
            vectors,
            source_settings(options, source_kind(vectors), own),
            document_frequencies=document_frequencies,
            dtype=dtype,
            batch_size=batch_size,
        )
        if own is not None:
            info["own_options"] = own.given()
        parts.append((weight, TermSimilarityMatrix(matrix, terms, build_info=info)))
    return parts[0][1] if len(parts) == 1 else TermSimilarityMatrix.combine(parts)


def _mix(
    built: TermSimilarityMatrix, other: TermSimilarityMatrix, weight: float
) -> TermSimilarityMatrix:
    return TermSimilarityMatrix.combine([(1.0 - weight, built), (weight, other)])


def build_unseen(
    terms: Sequence[str],
    source: VectorSource | None,
    *,
    limit: int,
    options: SimilarityOptions = SIMILARITY_DEFAULTS,
    levenshtein: LevenshteinOptions | None = None,
    synonyms: Synonyms | None = None,
) -> UnseenTerms | None:
    """The words of ``source`` outside ``terms`` that a query may use (None without any).

    Each source of word vectors offers its first ``limit`` words outside the terms, under its
    own threshold, exponent and ``nonzero_limit`` (as in :func:`build_similarity`), with the
    weight its matrix has in S: its weight among the vectors, times 1 − λ with edit distance
    and 1 − w with synonyms (:mod:`es_scm.similarity.unseen`).
    """
    if source is None or limit <= 0:
        return None
    share = 1.0
    if levenshtein is not None:
        share *= 1.0 - levenshtein.weight
    if synonyms is not None:
        share *= 1.0 - synonyms.weight
    parts = []
    for weight, vectors, own in _weighted(source):
        settings = source_settings(options, source_kind(vectors), own)
        rule = {
            "threshold": settings.threshold,
            "exponent": settings.exponent,
            "nonzero_limit": settings.budget(len(terms)),
        }
        unseen = UnseenTerms.from_embeddings(terms, vectors, limit=limit, **rule)  # type: ignore[arg-type]
        parts.append((share * weight, unseen))
    unseen = UnseenTerms.combine(parts)
    return unseen if len(unseen) else None


def _weighted(
    source: VectorSource,
) -> tuple[tuple[float, WordEmbeddings, SourceOptions | None], ...]:
    """The (weight, vectors, own options) of ``source``: its parts, or itself with weight 1."""
    parts = source.parts if isinstance(source, CombinedSources) else (SourcePart(1.0, source),)
    for part in parts:
        if not isinstance(part.source, WordEmbeddings):
            kind = type(part.source).__name__
            raise TypeError(f"S needs word vectors, got {kind} (not trained or encoded)")
    return tuple((part.weight, part.source, part.options) for part in parts)


def levenshtein_options(
    levenshtein: bool | float | LevenshteinOptions,
) -> LevenshteinOptions | None:
    """``levenshtein=`` of :meth:`SoftCosineModel.build` as its typed option.

    ``False`` is None (no edit distance), ``True``
    :data:`es_scm.options.defaults.LEVENSHTEIN_DEFAULTS`, a float λ in (0, 1) the defaults with
    ``weight`` λ; :class:`LevenshteinOptions` are kept.
    """
    if isinstance(levenshtein, LevenshteinOptions):
        return levenshtein
    if isinstance(levenshtein, bool):
        return LEVENSHTEIN_DEFAULTS if levenshtein else None
    if isinstance(levenshtein, int | float) and 0.0 < levenshtein < 1.0:
        return replace(LEVENSHTEIN_DEFAULTS, weight=float(levenshtein))
    raise ValueError(
        f"levenshtein must be a bool, a float in (0, 1) or LevenshteinOptions, got {levenshtein!r}"
    )
