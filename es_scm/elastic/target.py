"""What a searcher searches, and the checks that every answer is whole and comes from there.

A :class:`Target` is the name a searcher was given (an index, an alias or a pattern) with what the
model check found behind it: the concrete indices and their number of shards. Every response of
a search is read through it, at no cost in requests:

* an answer must be whole: a search response with a failed shard (or that timed out) and an
  ``mget`` with a document that no shard could serve raise
  :class:`~es_scm.elastic.results.PartialResultError`, so that nothing is reported "not found"
  or proven from part of the index;
* an answer must come from the checked indices: a hit or document of another concrete index, or
  a search over another number of shards, raises :class:`TargetMoved`. The alias moved (or the
  pattern matches other indices) since the model check; the searcher checks the model again
  before any score is computed, since term ids mean other words under another model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from es_scm.elastic.results import PartialResultError

__all__ = ["Target", "TargetMoved", "require_whole"]


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
        hits = response["hits"]["hits"]
        outside = sorted({hit["_index"] for hit in hits} - self.indices)
        total = response.get("_shards", {}).get("total")
        if outside or (total is not None and total not in self.shard_totals):
            raise TargetMoved(self.name, outside, total)
        return hits

    def documents(
        self, response: Mapping[str, Any], ids: Sequence[str]
    ) -> tuple[dict[str, dict], list[str]]:
        """The stored sources of an ``mget`` of ``ids``: (found id → source, missing ids).

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
                f"{len(failed)} of {len(ids)} ids could not be read ({_reason(failed[0])}): "
                f"{names[:5]}{more}; nothing was rescored"
            )
        outside = sorted({doc["_index"] for doc in docs if "_index" in doc} - self.indices)
        if outside:
            raise TargetMoved(self.name, outside, None)
        found = {doc["_id"]: doc["_source"] for doc in docs if doc.get("found")}
        return found, [doc_id for doc_id in ids if doc_id not in found]


def require_whole(response: Mapping[str, Any], what: str) -> None:
    """Raise :class:`PartialResultError` unless every shard answered ``response`` in time."""
    shards = response.get("_shards", {})
    if shards.get("failed") or response.get("timed_out"):
        failures = shards.get("failures") or [{}]
        reason = _reason(failures[0]) if shards.get("failed") else "timed out"
        raise PartialResultError(
            f"{what} answered from {shards.get('successful', '?')} of "
            f"{shards.get('total', '?')} shards ({reason}); a partial answer is not given"
        )


def _reason(failure: Mapping[str, Any]) -> str:
    """``type: reason`` of a shard failure or a document's error, on one line."""
    error = failure.get("error") or failure.get("reason") or {}
    if not isinstance(error, Mapping):
        return " ".join(str(error).split())
    text = str(error.get("type", "error"))
    if error.get("reason"):
        text += f": {error['reason']}"
    return " ".join(text.split())
