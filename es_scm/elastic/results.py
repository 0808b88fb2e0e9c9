"""What a search returns: hits, how they were obtained, and the errors of an answer refused.

A :class:`SearchResult` is complete when it is made: the searcher makes it once, at the end of a
search, from what the search found. :class:`Stored` is a document as Elasticsearch returned it,
its stored vector parsed once, from which every score and explanation of it is computed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from es_scm.elastic.schema import public_source, stored_vector, stored_vectors

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from es_scm.model.explanation import Explanation

__all__ = [
    "BatchSearchError",
    "Hit",
    "NotProvenError",
    "PartialResultError",
    "SearchResult",
    "Stored",
    "StoredVector",
    "distinct_hits",
    "outranks",
]

#: A stored y': its term ids and float64 values.
StoredVector = tuple["np.ndarray", "np.ndarray"]


@dataclass(frozen=True)
class Stored:
    """A document as Elasticsearch returned it: its id, its whole ``_source`` and its stored
    vector y' (parsed once)."""

    id: str
    source: Mapping[str, Any]
    vector: StoredVector
    index: str = ""

    @classmethod
    def of(cls, hit: Mapping[str, Any]) -> Stored:
        """A hit of a search (or a found document of an ``mget``) with its ``_source``."""
        source = hit["_source"]
        return cls(hit["_id"], source, stored_vector(source), hit.get("_index", ""))

    @classmethod
    def many(cls, hits: Sequence[Mapping[str, Any]]) -> list[Stored]:
        """:meth:`of` every hit, their vectors parsed in one pass."""
        vectors = stored_vectors([hit["_source"] for hit in hits])
        return [
            cls(hit["_id"], hit["_source"], vector, hit.get("_index", ""))
            for hit, vector in zip(hits, vectors, strict=True)
        ]


def distinct_hits(hits: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``hits`` (best first) with each document id once: an id is one document, and where the
    indices behind a name hold it more than once, its hit is the copy with the highest score
    (equal scores: the one of the index first by name). The one rule of every search method.
    """
    best: dict[str, Mapping[str, Any]] = {}
    for hit in hits:
        kept = best.get(hit["_id"])
        if kept is None or outranks(hit["_score"], hit["_index"], kept["_score"], kept["_index"]):
            best[hit["_id"]] = hit
    if len(best) == len(hits):
        return list(hits)
    chosen = {id(hit) for hit in best.values()}
    return [hit for hit in hits if id(hit) in chosen]


def outranks(score: float, index: str, other_score: float, other_index: str) -> bool:
    """Whether a copy of a document (its ``score`` in ``index``) is kept over another copy:
    the higher score, else the index first by name (:func:`distinct_hits`)."""
    return score > other_score or (score == other_score and index < other_index)


@dataclass
class Hit:
    """One result: the document id, its score, its text and metadata, and the native score.

    ``native_score`` is Elasticsearch's estimate of the same SCM, its ``_score`` divided by
    ‖Wx‖_S (None where Elasticsearch did not score the hit by the SCM: a rescore of ids, BM25,
    hybrid search). ``components`` (hybrid search) holds the scores that were fused, by leg;
    ``explanation`` (with ``explain=True``) lists the term pairs that make up the exact SCM
    (:mod:`es_scm.elastic.explain`); ``vector`` is the stored y' it is computed from.
    """

    id: str
    score: float
    source: dict[str, Any]
    native_score: float | None = None
    components: dict[str, float | None] | None = None
    explanation: Explanation | None = None
    vector: StoredVector | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(
        cls,
        stored: Stored,
        score: float,
        *,
        native_score: float | None = None,
        components: dict[str, float | None] | None = None,
        explanation: Explanation | None = None,
    ) -> Hit:
        """The hit of a stored document: its public source (no vectors) and its vector."""
        return cls(
            stored.id,
            score,
            public_source(stored.source),
            native_score,
            components,
            explanation,
            vector=stored.vector,
        )

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"id": self.id, "score": self.score}
        result["native_score"] = self.native_score
        if self.components is not None:
            result["components"] = self.components
        explained = {} if self.explanation is None else {"explanation": self.explanation.to_dict()}
        return {**result, **self.source, **explained}


@dataclass(frozen=True)
class SearchResult:
    """Hits and how they were obtained.

    ``mode`` says which ranking the hits follow (``"exact"``, ``"native"``, ``"hybrid"``,
    ``"bm25"`` or ``"rescore"``); ``exact_guarantee`` whether they are provably its top k
    (the brute force's, for the SCM); ``query_terms``, ``expansion_terms`` and ``pruned_terms``
    account for the query's terms, the expansion's and those the clause limit left out;
    ``candidates`` and ``rounds`` count the documents read and the search's round trips
    (requests, or ``_msearch`` requests of several searches); ``unproven`` says why an exact top
    k is not proven (``search`` then raises :class:`NotProvenError` with this result);
    ``fusion_weights`` (hybrid search with a score fusion) the weight of each leg for this query
    (an adaptive fusion's own; with ``explain``, a note says why).
    """

    hits: list[Hit]
    mode: str
    query_terms: int = 0
    expansion_terms: int = 0
    pruned_terms: int = 0
    candidates: int = 0
    rounds: int = 0
    exact_guarantee: bool = False
    took_ms: float = 0.0
    notes: tuple[str, ...] = ()
    unproven: str | None = None
    fusion_weights: Mapping[str, float] | None = None

    def __iter__(self) -> Iterator[Hit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    @overload
    def __getitem__(self, position: int) -> Hit: ...

    @overload
    def __getitem__(self, position: slice) -> list[Hit]: ...

    def __getitem__(self, position: int | slice) -> Hit | list[Hit]:
        """The hit at ``position`` (best first), or a list of hits for a slice."""
        return self.hits[position]

    def ids(self) -> list[str]:
        return [hit.id for hit in self.hits]


class NotProvenError(RuntimeError):
    """Exact search could not prove its top k; ``result`` holds the window's exact scores (a
    batch's error: the first such query's, and ``results`` every query's result, by the
    batch's query ids or positions)."""

    def __init__(
        self,
        message: str,
        result: SearchResult,
        results: Mapping[Any, SearchResult] | None = None,
    ) -> None:
        super().__init__(message)
        self.result = result
        self.results: dict[Any, SearchResult] = dict(results or {})


class BatchSearchError(RuntimeError):
    """Queries of a batch that could not be answered, named: ``failed`` maps each one's id (the
    batch's key, or its position in a sequence) to its error, and ``results`` holds the results
    of all the others, by id — nothing answered is lost."""

    def __init__(
        self, failed: Mapping[Any, BaseException], results: Mapping[Any, SearchResult]
    ) -> None:
        self.failed = dict(failed)
        self.results = dict(results)
        shown = "; ".join(f"{qid!r}: {error}" for qid, error in list(self.failed.items())[:3])
        more = f"; and {len(self.failed) - 3} more" if len(self.failed) > 3 else ""
        total = len(self.failed) + len(self.results)
        super().__init__(
            f"{len(self.failed)} of {total} queries could not be answered ({shown}{more}); "
            f"the other {len(self.results)} were (error.results)"
        )


class PartialResultError(RuntimeError):
    """Elasticsearch answered without part of what was asked (a shard or document it could not
    serve): the answer is refused rather than passed on as whole."""
