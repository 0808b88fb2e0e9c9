r"""Which sources make S for a model: word vectors, edit distance, synonym files, a ready matrix.

Every source of ``embeddings=`` is a :class:`~es_scm.similarity.source.SimilaritySource` (read
by the registry, :func:`~es_scm.similarity.source.read_source`): each of its weighted parts
builds its own matrix (:meth:`~es_scm.similarity.source.SimilaritySource.similarity_matrix`)
with its kind's defaults, and :class:`CombinedSources` is the source of several.

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
from typing import Any

import numpy as np

from es_scm.options import (
    EncoderOptions,
    LevenshteinOptions,
    SimilarityOptions,
    SourceOptions,
    source_settings,
)
from es_scm.options.defaults import LEVENSHTEIN_DEFAULTS, SIMILARITY_DEFAULTS
from es_scm.similarity.levenshtein import levenshtein_matrix
from es_scm.similarity.matrix import TermSimilarityMatrix
from es_scm.similarity.source import (
    Preparation,
    SimilaritySource,
    SourcePart,
    read_source,
    register,
)
from es_scm.similarity.sources import DTYPE
from es_scm.similarity.synonyms import Synonyms, Tokenize, synonym_matrix
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


@register
@dataclass(frozen=True)
class CombinedSources(SimilaritySource):
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

    kind = "combined"
    combinable = False
    accepts = "a list of (weight, embeddings) pairs or (weight, embeddings, options) triples"

    def __post_init__(self) -> None:
        parts = tuple(source_part(part) for part in self.parts)
        weights = [part.weight for part in parts]
        if not parts or any(not w > 0 for w in weights) or sum(weights) > 1 + 1e-9:
            raise ValueError("the weights of combined embeddings must be positive, summing to <= 1")
        for part in parts:
            if not (isinstance(part.source, SimilaritySource) and part.source.combinable):
                raise ValueError(
                    "combined embeddings must be word vectors, trainings or encoders, "
                    f"got {type(part.source).__name__}"
                )
        object.__setattr__(self, "parts", parts)

    @classmethod
    def recognize(cls, value: Any) -> CombinedSources | None:
        """Itself, or a non-empty list or tuple of (weight, embeddings[, options]) tuples, each
        ``embeddings`` read by the registry."""
        if isinstance(value, CombinedSources):
            return value
        if not (
            isinstance(value, list | tuple)
            and bool(value)
            and all(isinstance(item, tuple) and len(item) in (2, 3) for item in value)
        ):
            return None
        return cls(tuple(source_part((p[0], _combinable(p[1]), *p[2:])) for p in value))

    def corpus_sink(self) -> Any:
        """The first part's sentence file that needs the model's corpus (one is shared)."""
        for part in self.parts:
            sink = part.source.corpus_sink()
            if sink is not None:
                return sink
        return None

    def prepare(self, preparation: Preparation) -> CombinedSources:
        """Every part made ready, with its weight and options."""
        return CombinedSources(
            tuple(
                SourcePart(weight, source.prepare(preparation), options)
                for weight, source, options in self.parts
            )
        )

    def weighted_parts(self) -> tuple[SourcePart, ...]:
        return self.parts


def _combinable(value: Any) -> SimilaritySource:
    source = read_source(value)
    if source is None or not source.combinable:
        kind = "None" if source is None else type(source).__name__
        raise ValueError(f"only word vectors, trainings and encoders can be combined, not {kind}")
    return source


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


#: A source ready for S: one, or several combined (no training left to do).
VectorSource = SimilaritySource


def source_kind(vectors: SimilaritySource) -> SourceOptions | EncoderOptions:
    """The defaults of the kind of ``vectors`` (e.g. a sentence encoder's, or word vectors')."""
    return vectors.kind_defaults()


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
    source : SimilaritySource, optional
        A ready source (word vectors, or any registered source with neighbours; prepared:
        :meth:`~es_scm.similarity.source.SimilaritySource.prepare`); combined ones are
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
    """S from the source's parts (combined with their weights), or None without any."""
    if source is None:
        return None
    parts = []
    for weight, part, own in source.weighted_parts():
        matrix, info = part.similarity_matrix(
            terms,
            source_settings(options, part.kind_defaults(), own),
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
    for weight, part, own in source.weighted_parts():
        settings = source_settings(options, part.kind_defaults(), own)
        unseen = part.unseen(terms, limit=limit, options=settings, weight=share * weight)
        if unseen is not None:
            parts.append((1.0, unseen))
    unseen = UnseenTerms.combine(parts)
    return unseen if len(unseen) else None


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
