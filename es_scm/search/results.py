"""What a search's answers hold and what it returns: hits read through the :class:`Target`
(every answer whole and from the checked indices), documents parsed once, the result, and the
errors of an answer refused.

A :class:`Target` is the name a searcher was given (an index, an alias or a pattern) with what the
model check (:mod:`es_scm.search.target`) found behind it: the concrete indices and their number
of shards. Every response of a search is read through it, at no cost in requests:

* an answer must be whole: a search response with a failed shard (or that timed out) and an
  ``mget`` with a document that no shard could serve raise
  :class:`~es_scm.index.schema.PartialResultError`, so that nothing is reported "not found"
  or proven from part of the index;
* an answer must come from the checked indices: a hit or document of another concrete index, or
  a search over another number of shards, raises :class:`TargetMoved`. The alias moved (or the
  pattern matches other indices) since the model check; the searcher checks the model again
  before any score is computed, since term ids mean other words under another model.

:class:`Stored` is a document as Elasticsearch returned it, its stored vector parsed once, from
which every score and explanation of it is computed. A :class:`SearchResult` is complete when it
is made: the searcher makes it once, at the end of a search, from what the search found.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from es_scm.index.schema import (
    PartialResultError,
    answer_reason,
    public_source,
    require_whole,
    stored_vector,
    stored_vectors,
)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from es_scm.model.explanation import Explanation

__all__ = [
    "BatchSearchError",
    "ConnectionLostError",
    "Hit",
    "NotProvenError",
    "PartialResultError",
    "SearchResult",
    "Stored",
    "StoredVector",
    "Target",
    "TargetMoved",
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
    (:mod:`es_scm.search.explain`); ``vector`` is the stored y' it is computed from.
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


class ConnectionLostError(RuntimeError):
    """The connection to the cluster was lost in the middle of a batch, before this query was
    answered (what :attr:`BatchSearchError.failed` holds for each such query, and
    :attr:`BatchSearchError.lost`); the client's error is its ``__cause__``. One line: the
    engine, and how the connection failed."""


class BatchSearchError(RuntimeError):
    """Queries of a batch that could not be answered, named: ``failed`` maps each one's id (the
    batch's key, or its position in a sequence) to its error, and ``results`` holds the results
    of all the others, by id — nothing answered is lost. ``lost`` is the
    :class:`ConnectionLostError` of a batch that the cluster went away from (None otherwise):
    the queries it names in ``failed`` were not answered, and may be searched again later."""

    def __init__(
        self,
        failed: Mapping[Any, BaseException],
        results: Mapping[Any, SearchResult],
        lost: ConnectionLostError | None = None,
    ) -> None:
        self.failed = dict(failed)
        self.results = dict(results)
        self.lost = lost
        others = [(qid, error) for qid, error in self.failed.items() if error is not lost]
        parts = [f"{len(self.failed) - len(others)} as {lost}"] if lost is not None else []
        parts += [f"{qid!r}: {error}" for qid, error in others[:3]]
        if len(others) > 3:
            parts.append(f"and {len(others) - 3} more")
        total = len(self.failed) + len(self.results)
        super().__init__(
            f"{len(self.failed)} of {total} queries could not be answered ({'; '.join(parts)}); "
            f"the other {len(self.results)} were (error.results)"
        )


class TargetMoved(Exception):
    """An answer came from other indices than those the model was checked against.

    ``total`` is the number of shards the search answered from (None for an ``mget``).
    """

    def __init__(self, name: str, outside: Sequence[str], total: int | None) -> None:
        where = f"index {', '.join(outside)}" if outside else f"{total} shards"
        super().__init__(f"{name!r} answered from {where}, not what its model was checked on")
        self.total = total


@dataclass(frozen=True)
class Target:
    """The ``name`` searched, the concrete ``indices`` behind it at the model check, and the
    numbers of shards (``shard_totals``) a search of them may answer from."""

    name: str
    indices: frozenset[str]
    shard_totals: frozenset[int]

    @classmethod
    def of(cls, name: str, indices: Mapping[str, Any]) -> Target:
        """The target of a get-index answer ``{concrete name: {"settings": ...}}``."""
        shards = sum(
            int(body["settings"]["index"]["number_of_shards"]) for body in indices.values()
        )
        return cls(name, frozenset(indices), frozenset([shards]))

    def accepting(self, totals: Iterable[int]) -> Target:
        """The same indices, answering from ``totals`` shards too (an alias with routing)."""
        return dataclasses.replace(self, shard_totals=self.shard_totals | set(totals))

    def hits(self, response: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The hits of a search response, once it is known whole and from this target."""
        require_whole(response, f"the search of {self.name!r}")
        hits: list[dict[str, Any]] = response["hits"]["hits"]
        outside = sorted({hit["_index"] for hit in hits} - self.indices)
        total = response.get("_shards", {}).get("total")
        if outside or (total is not None and total not in self.shard_totals):
            raise TargetMoved(self.name, outside, total)
        return hits

    def documents(
        self, response: Mapping[str, Any], ids: Sequence[str]
    ) -> tuple[dict[str, Stored], list[str]]:
        """The stored documents of an ``mget`` of ``ids``: (found id → document, missing ids).

        Raises
        ------
        PartialResultError
            If a shard could not serve some of the ids: they are not known to be missing.
        """
        docs = response["docs"]
        failed = [doc for doc in docs if "error" in doc]
        if failed:
            names = [doc.get("_id") for doc in failed]
            more = f" and {len(names) - 5} more" if len(names) > 5 else ""
            raise PartialResultError(
                f"{len(failed)} of {len(ids)} ids could not be read ({answer_reason(failed[0])}): "
                f"{names[:5]}{more}; nothing was rescored"
            )
        outside = sorted({doc["_index"] for doc in docs if "_index" in doc} - self.indices)
        if outside:
            raise TargetMoved(self.name, outside, None)
        found = {doc["_id"]: Stored.of(doc) for doc in docs if doc.get("found")}
        return found, [doc_id for doc_id in ids if doc_id not in found]
