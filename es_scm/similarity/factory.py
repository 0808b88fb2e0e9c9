"""Which sources make S for a model: word embeddings, edit distance, a ready matrix, or none.

:func:`build_similarity` is what :meth:`es_scm.model.SoftCosineModel.build` and every command
call, with options checked once (:class:`~es_scm.options.SimilarityOptions`, defaults
:data:`es_scm.defaults.SIMILARITY_DEFAULTS`), so that one set of options means the same matrix
everywhere. Its word vectors come resolved: :class:`~es_scm.similarity.WordEmbeddings`, or
:class:`CombinedSources` of them (:mod:`es_scm.model.similarity_source` reads ``embeddings=``
and trains what is to be trained first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from es_scm.defaults import LEVENSHTEIN_DEFAULTS, SIMILARITY_DEFAULTS
from es_scm.options import LevenshteinOptions, SimilarityOptions
from es_scm.similarity.embeddings import WordEmbeddings
from es_scm.similarity.levenshtein import levenshtein_matrix
from es_scm.similarity.matrix import TermSimilarityMatrix
from es_scm.similarity.sources import DTYPE, embedding_matrix
from es_scm.similarity.training import EmbeddingTraining
from es_scm.similarity.unseen import UnseenTerms

__all__ = [
    "CombinedSources",
    "SimilarityLike",
    "VectorSource",
    "build_similarity",
    "build_unseen",
    "levenshtein_options",
]

SimilarityLike = TermSimilarityMatrix | Callable[[list[str]], TermSimilarityMatrix] | None


@dataclass(frozen=True)
class CombinedSources:
    """Sources whose matrices S is combined of, with their weights
    (:meth:`TermSimilarityMatrix.combine`), e.g. ``embeddings=[(0.3, glove), (0.7, "train")]``.

    Parameters
    ----------
    parts : tuple of (float, WordEmbeddings or EmbeddingTraining)
        Positive weights summing to at most 1; the trainings are replaced by the vectors they
        train before S is built.
    """

    parts: tuple[tuple[float, WordEmbeddings | EmbeddingTraining], ...]

    def __post_init__(self) -> None:
        parts = tuple((float(weight), source) for weight, source in self.parts)
        if not parts or any(not w > 0 for w, _ in parts) or sum(w for w, _ in parts) > 1 + 1e-9:
            raise ValueError("the weights of combined embeddings must be positive, summing to <= 1")
        for _, source in parts:
            if not isinstance(source, WordEmbeddings | EmbeddingTraining):
                raise ValueError(
                    "combined embeddings must be word vectors or trainings, "
                    f"got {type(source).__name__}"
                )
        object.__setattr__(self, "parts", parts)


#: Word vectors ready for S: one source, or several combined (no training left to do).
VectorSource = WordEmbeddings | CombinedSources


def build_similarity(
    terms: Sequence[str],
    source: VectorSource | None = None,
    *,
    similarity: SimilarityLike = None,
    levenshtein: LevenshteinOptions | None = None,
    document_frequencies: Sequence[float] | np.ndarray | None = None,
    options: SimilarityOptions = SIMILARITY_DEFAULTS,
    dtype: np.dtype = DTYPE,
    batch_size: int | None = None,
) -> TermSimilarityMatrix:
    """S over ``terms``.

    Parameters
    ----------
    terms : sequence of str
    source : WordEmbeddings or CombinedSources of them, optional
        Word vectors for :meth:`TermSimilarityMatrix.from_embeddings`; combined ones are
        combined with their weights (:meth:`TermSimilarityMatrix.combine`).
    similarity : TermSimilarityMatrix or callable, optional
        A ready S (over ``terms`` or a superset, restricted to them), or a function
        ``terms -> TermSimilarityMatrix``. Excludes ``source`` and ``levenshtein``.
    levenshtein : LevenshteinOptions, optional
        Edit-distance similarity: alone it is S; with word vectors S is
        ``weight``·S_levenshtein + (1 − ``weight``)·S_embeddings off the diagonal.
    document_frequencies : array, optional
        One per term: columns are filled rarest term first (else, or with
        ``column_order="id"``, by term id).
    options : SimilarityOptions, default=SIMILARITY_DEFAULTS
    dtype, batch_size
        The float dtype of S from word vectors and the terms per matrix product (checked).

    Returns
    -------
    TermSimilarityMatrix
        The identity when there is neither ``source``, ``similarity`` nor ``levenshtein``.
    """
    terms = list(terms)
    if similarity is not None:
        if source is not None or levenshtein is not None:
            raise ValueError("pass either similarity or embeddings/levenshtein, not both")
        matrix = similarity if isinstance(similarity, TermSimilarityMatrix) else similarity(terms)
        if not isinstance(matrix, TermSimilarityMatrix):
            raise ValueError(f"similarity must give a TermSimilarityMatrix, got {matrix!r}")
        return matrix.restrict(terms)
    if source is None and levenshtein is None:
        return TermSimilarityMatrix.identity(terms)
    if options.column_order == "id":
        document_frequencies = None
    edit = None
    if levenshtein is not None:
        matrix, info = levenshtein_matrix(
            terms, levenshtein, options, document_frequencies=document_frequencies
        )
        edit = TermSimilarityMatrix(matrix, terms, build_info=info)
    if source is None:
        assert edit is not None
        return edit
    parts = []
    for weight, vectors in _weighted(source):
        matrix, info = embedding_matrix(
            terms,
            vectors,
            options,
            document_frequencies=document_frequencies,
            dtype=dtype,
            batch_size=batch_size,
        )
        parts.append((weight, TermSimilarityMatrix(matrix, terms, build_info=info)))
    semantic = parts[0][1] if len(parts) == 1 else TermSimilarityMatrix.combine(parts)
    if edit is None:
        return semantic
    weight = levenshtein.weight  # type: ignore[union-attr]
    return TermSimilarityMatrix.combine([(1.0 - weight, semantic), (weight, edit)])


def build_unseen(
    terms: Sequence[str],
    source: VectorSource | None,
    *,
    limit: int,
    options: SimilarityOptions = SIMILARITY_DEFAULTS,
) -> UnseenTerms | None:
    """The words of ``source`` outside ``terms`` that a query may use (None without any).

    Each source of word vectors (weighted as in :func:`build_similarity`) offers its first
    ``limit`` words outside the terms, under S's ``threshold``, ``exponent`` and
    ``nonzero_limit`` (:mod:`es_scm.similarity.unseen`).
    """
    if source is None or limit <= 0:
        return None
    rule = {
        "threshold": options.threshold,
        "exponent": options.exponent,
        "nonzero_limit": options.budget(len(terms)),
    }
    parts = [
        (weight, UnseenTerms.from_embeddings(terms, vectors, limit=limit, **rule))
        for weight, vectors in _weighted(source)
    ]
    unseen = UnseenTerms.combine(parts)
    return unseen if len(unseen) else None


def _weighted(source: VectorSource) -> tuple[tuple[float, WordEmbeddings], ...]:
    """The (weight, vectors) pairs of ``source``: its parts, or itself with weight 1."""
    parts = source.parts if isinstance(source, CombinedSources) else ((1.0, source),)
    for _, vectors in parts:
        if not isinstance(vectors, WordEmbeddings):
            raise TypeError(f"S needs word vectors, got {type(vectors).__name__} (not trained)")
    return parts  # type: ignore[return-value]


def levenshtein_options(
    levenshtein: bool | float | LevenshteinOptions,
) -> LevenshteinOptions | None:
    """``levenshtein=`` of :meth:`SoftCosineModel.build` as its typed option.

    ``False`` is None (no edit distance), ``True`` :data:`es_scm.defaults.LEVENSHTEIN_DEFAULTS`,
    a float λ in (0, 1) the defaults with ``weight`` λ; :class:`LevenshteinOptions` are kept.
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
