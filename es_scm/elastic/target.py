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

:class:`TargetCheck` holds a searcher's check: made once, made again when an answer says so.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from es_scm.elastic.calls import Call, Plan
from es_scm.elastic.connection import max_clauses_plan
from es_scm.elastic.results import PartialResultError
from es_scm.elastic.schema import ModelMismatchError, check_indices

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["Checked", "Target", "TargetCheck", "TargetMoved", "require_whole"]

logger = logging.getLogger(__name__)
R = TypeVar("R")


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


#: A checked target and the side its index applies S on (``"query"`` or ``"documents"``).
Checked = tuple[Target, str]
_ATTEMPTS = 3  # searches in a row that may find the alias moved before giving up


class TargetCheck:
    """The model checked against the indices behind a name: once, and again whenever an answer
    shows that the name now stands for other indices (see :class:`Target`).

    ``clause_limit`` is the most clauses a query may have: the given limit, else the cluster's
    (learned with the first check).
    """

    def __init__(self, name: str, model: SoftCosineModel, clause_limit: int | None) -> None:
        self.name = name
        self.model = model
        self._clause_limit = clause_limit
        self.checked: Checked | None = None  # set by a passed model check

    @property
    def clause_limit(self) -> int:
        assert self._clause_limit is not None, "known once ready_plan has run"
        return self._clause_limit

    def forget(self) -> None:
        """The index was deleted: check the next one of that name again."""
        self.checked = None

    def check_plan(self) -> Plan[tuple[dict[str, Any], Checked]]:
        """Check the model against the indices behind the name now, and remember them.

        Returns the ``_meta.es_scm`` of the indices and the :data:`Checked` pair.
        """
        response = yield Call("indices.get", {"index": self.name}, {"ignore_status": 404})
        return self.accept(response)

    def accept(self, response: Any) -> tuple[dict[str, Any], Checked]:
        """Check the model against a get-index ``response`` of the name (404: none), and
        remember the indices: the ``_meta.es_scm`` of the indices and the :data:`Checked` pair."""
        meta = check_indices(self.name, response, self.model)
        checked = (Target.of(self.name, response.body), meta["expansion"])
        self.checked = checked
        return meta, checked

    def created(self, shards: int, expansion: str) -> None:
        """The name is an index just created with this model: nothing to look up."""
        self.checked = (Target(self.name, frozenset([self.name]), frozenset([shards])), expansion)

    def ready_plan(self, *, clauses: bool = True) -> Plan[Checked]:
        """The :data:`Checked` pair (the model checked once) and, if ``clauses``, the clause
        limit, learned once."""
        checked = self.checked
        if checked is None:
            _, checked = yield from self.check_plan()
        if clauses and self._clause_limit is None:
            self._clause_limit = yield from max_clauses_plan()
        return checked

    def recheck_plan(self, seen: Target, total: int | None) -> Plan[bool]:
        """An answer did not come from ``seen``, or named no index: check the model again.

        Returns whether the name still stands for the same indices (an answer from ``total``
        shards is then theirs too, as through an alias with routing).
        """
        self.checked = None  # until checked again (another thread then checks too)
        try:
            _, (target, expansion) = yield from self.check_plan()
        except ModelMismatchError as error:
            raise ModelMismatchError(
                f"{self.name!r} moved since its model was checked: {error} (an AliasSearcher "
                "follows an alias from one model to the next)"
            ) from error
        if target.indices != seen.indices:
            now = ", ".join(sorted(target.indices))
            logger.info("%s: now %s; searching again", self.name, now)
            return False
        totals = {*seen.shard_totals, *([] if total is None else [total])}
        self.checked = (target.accepting(totals), expansion)
        return True

    def verified_plan(self, attempt: Callable[[Checked], Plan[R]]) -> Plan[R]:
        """``attempt``'s result (it has ``hits``), from the indices the model was checked on."""
        for _ in range(_ATTEMPTS):
            checked = yield from self.ready_plan()
            try:
                result = yield from attempt(checked)
            except TargetMoved as moved:
                yield from self.recheck_plan(checked[0], moved.total)
                continue
            if result.hits or (yield from self.recheck_plan(checked[0], None)):  # type: ignore[attr-defined]
                return result
        raise PartialResultError(
            f"{self.name!r} moved during each of {_ATTEMPTS} attempts of the search; try again"
        )
