"""Which sources make S for a model: embeddings, edit distance, a ready matrix, or none.

:func:`build_similarity` is what :meth:`es_scm.model.SoftCosineModel.build` and every command
call, so that one set of options (:data:`es_scm.defaults.SIMILARITY_DEFAULTS`) means the same
matrix everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from es_scm.defaults import SIMILARITY_DEFAULTS
from es_scm.similarity.matrix import TermSimilarityMatrix
from es_scm.similarity.sources import as_embeddings
from es_scm.similarity.unseen import UnseenTerms

__all__ = [
    "SimilarityLike",
    "build_similarity",
    "build_unseen",
    "levenshtein_weight",
    "weighted_sources",
]

SimilarityLike = TermSimilarityMatrix | Callable[[list[str]], TermSimilarityMatrix] | None


def build_similarity(
    terms: Sequence[str],
    embeddings: Any = None,
    *,
    similarity: SimilarityLike = None,
    levenshtein: bool | float = False,
    document_frequencies: Sequence[float] | np.ndarray | None = None,
    options: dict[str, Any] | None = None,
) -> TermSimilarityMatrix:
    """S over ``terms``.

    Parameters
    ----------
    terms : sequence of str
    embeddings : WordEmbeddings, gensim KeyedVectors, or a list of (weight, those), optional
        Word vectors for :meth:`TermSimilarityMatrix.from_embeddings`; several are combined
        with their weights (:meth:`TermSimilarityMatrix.combine`).
    similarity : TermSimilarityMatrix or callable, optional
        A ready S (over ``terms`` or a superset, restricted to them), or a function
        ``terms -> TermSimilarityMatrix``. Excludes ``embeddings`` and ``levenshtein``.
    levenshtein : bool or float
        Edit-distance similarity: alone it is S; with embeddings, ``True`` averages the two and a
        float λ in (0, 1) gives ``λ·S_levenshtein + (1 − λ)·S_embeddings`` off the diagonal.
    document_frequencies : array, optional
        One per term: columns are filled rarest term first (else by term id).
    options : dict, optional
        ``nonzero_limit``, ``threshold``, ``exponent``, ``symmetric``, ``dominant``,
        ``neighbors``, ``column_order`` (``"rarest"`` or ``"id"``) and any other keyword of
        :meth:`TermSimilarityMatrix.from_embeddings`; missing ones take
        :data:`~es_scm.defaults.SIMILARITY_DEFAULTS`.

    Returns
    -------
    TermSimilarityMatrix
        The identity when there is neither ``embeddings``, ``similarity`` nor ``levenshtein``.
    """
    terms = list(terms)
    if similarity is not None:
        if embeddings is not None or levenshtein:
            raise ValueError("pass either similarity or embeddings/levenshtein, not both")
        matrix = similarity if isinstance(similarity, TermSimilarityMatrix) else similarity(terms)
        if not isinstance(matrix, TermSimilarityMatrix):
            raise ValueError(f"similarity must give a TermSimilarityMatrix, got {matrix!r}")
        return matrix.restrict(terms)
    weight = levenshtein_weight(levenshtein)
    if embeddings is None and weight == 0.0:
        return TermSimilarityMatrix.identity(terms)
    settings = {**SIMILARITY_DEFAULTS, **(options or {})}
    if settings.pop("column_order") == "id":
        document_frequencies = None
    shared = {
        key: settings[key] for key in ("nonzero_limit", "symmetric", "dominant") if key in settings
    }
    edit = None
    if weight > 0.0:
        edit = TermSimilarityMatrix.from_levenshtein(
            terms, document_frequencies=document_frequencies, **shared
        )
    if embeddings is None:
        assert edit is not None
        return edit
    sources = weighted_sources(embeddings) or [(1.0, embeddings)]
    parts = [
        (weight, TermSimilarityMatrix.from_embeddings(
            terms, source, document_frequencies=document_frequencies, **settings
        ))
        for weight, source in sources
    ]  # fmt: skip
    semantic = parts[0][1] if len(parts) == 1 else TermSimilarityMatrix.combine(parts)
    if edit is None:
        return semantic
    weight = 0.5 if levenshtein is True else weight
    return TermSimilarityMatrix.combine([(1.0 - weight, semantic), (weight, edit)])


def build_unseen(
    terms: Sequence[str],
    embeddings: Any,
    *,
    limit: int,
    options: dict[str, Any] | None = None,
) -> UnseenTerms | None:
    """The words of ``embeddings`` outside ``terms`` that a query may use (None without any).

    Each embeddings source (weighted as in :func:`build_similarity`) offers its first ``limit``
    words outside the terms, under S's ``threshold``, ``exponent`` and ``nonzero_limit``
    (:mod:`es_scm.similarity.unseen`).
    """
    if embeddings is None or limit <= 0:
        return None
    settings = {**SIMILARITY_DEFAULTS, **(options or {})}
    budget = settings["nonzero_limit"]
    rule = {
        "threshold": float(settings["threshold"]),
        "exponent": float(settings["exponent"]),
        "nonzero_limit": len(terms) if budget is None else int(budget),
    }
    parts = [
        (weight, UnseenTerms.from_embeddings(terms, as_embeddings(source), limit=limit, **rule))
        for weight, source in weighted_sources(embeddings) or [(1.0, embeddings)]
    ]
    unseen = UnseenTerms.combine(parts)
    return unseen if len(unseen) else None


def levenshtein_weight(levenshtein: bool | float) -> float:
    """1 or 0 for a bool, the weight itself for a float in (0, 1)."""
    if isinstance(levenshtein, bool):
        return 1.0 if levenshtein else 0.0
    if isinstance(levenshtein, int | float) and 0.0 < levenshtein < 1.0:
        return float(levenshtein)
    raise ValueError(f"levenshtein must be a bool or a float in (0, 1), got {levenshtein!r}")


def weighted_sources(embeddings: Any) -> list[tuple[float, Any]]:
    """``[(weight, source), …]`` when ``embeddings`` is such a list (weights > 0), else []."""
    if not isinstance(embeddings, list | tuple) or not embeddings:
        return []
    if not all(isinstance(item, tuple) and len(item) == 2 for item in embeddings):
        return []
    sources = [(float(weight), source) for weight, source in embeddings]
    if any(not weight > 0 for weight, _ in sources) or sum(w for w, _ in sources) > 1 + 1e-9:
        raise ValueError("the weights of combined embeddings must be positive, summing to <= 1")
    return sources
