"""What a search returns: hits, how they were obtained, and the error of an unproven top k."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from es_scm.model.explanation import Explanation

__all__ = ["Hit", "NotProvenError", "PartialResultError", "SearchResult"]


@dataclass
class Hit:
    """One result: the document id, its score, its text and metadata, and the native score.

    ``components`` (hybrid mode) holds the BM25 and SCM scores that were fused; ``explanation``
    (with ``explain=True``) lists the term pairs that make up the exact SCM
    (:mod:`es_scm.elastic.explain`); ``vector`` is the stored y' it is computed from.
    """

    id: str
    score: float
    source: dict[str, Any]
    native_score: float | None = None
    components: dict[str, float | None] | None = None
    explanation: Explanation | None = None
    vector: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"id": self.id, "score": self.score}
        result["native_score"] = self.native_score
        if self.components is not None:
            result["components"] = self.components
        explained = {} if self.explanation is None else {"explanation": self.explanation.to_dict()}
        return {**result, **self.source, **explained}


@dataclass
class SearchResult:
    """Hits and how they were obtained."""

    hits: list[Hit]
    mode: str
    query_terms: int = 0
    expansion_terms: int = 0
    pruned_terms: int = 0
    candidates: int = 0
    rounds: int = 0
    exact_guarantee: bool = False
    took_ms: float = 0.0
    notes: list[str] = field(default_factory=list)
    unproven: str | None = None  # exact mode: why the top k is not proven (then it raises)

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
    """``exact`` mode could not prove its top k; ``result`` holds the window's exact scores."""

    def __init__(self, message: str, result: SearchResult) -> None:
        super().__init__(message)
        self.result = result


class PartialResultError(RuntimeError):
    """Elasticsearch answered without part of what was asked (a shard or document it could not
    serve): the answer is refused rather than passed on as whole."""
