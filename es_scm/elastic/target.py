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

:class:`TargetCheck` holds a searcher's check — made once, made again when an answer says so —
and is shared with the :class:`~es_scm.elastic.SCMIndex` that writes the same index. It asks
nothing itself: the searcher sends the get-index request and hands the answer to
:meth:`TargetCheck.accept`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from es_scm.elastic.dense import DenseField, common_fields, dense_fields
from es_scm.elastic.filters import MappedFields
from es_scm.elastic.results import PartialResultError, Stored
from es_scm.elastic.schema import IndexNotFoundError, ModelMismatchError, check_indices

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "ATTEMPTS",
    "Checked",
    "Target",
    "TargetCheck",
    "TargetMoved",
    "require_whole",
    "route_model",
]

logger = logging.getLogger(__name__)

#: Searches in a row that may find the name moved to other indices before giving up.
ATTEMPTS = 3


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
                f"{len(failed)} of {len(ids)} ids could not be read ({_reason(failed[0])}): "
                f"{names[:5]}{more}; nothing was rescored"
            )
        outside = sorted({doc["_index"] for doc in docs if "_index" in doc} - self.indices)
        if outside:
            raise TargetMoved(self.name, outside, None)
        found = {doc["_id"]: Stored.of(doc) for doc in docs if doc.get("found")}
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


@dataclass(frozen=True)
class Checked:
    """A passed model check: the :class:`Target`, the side its index applies S on
    (``"query"`` or ``"documents"``), the fields its indices map (``fields``: what a filter
    may name), the ``dense_vector`` fields of every index behind it (``dense_fields``, by path:
    :mod:`es_scm.elastic.dense`), the record of the encoder of es-scm's own dense vectors
    (``encoder``: ``_meta.es_scm.dense``, None without them) and the ``model`` the indices were
    built with (None where the check's model is the searcher's only one)."""

    target: Target
    expansion: str
    fields: MappedFields
    dense_fields: Mapping[str, DenseField] = dataclasses.field(default_factory=dict)
    encoder: Mapping[str, Any] | None = None
    model: SoftCosineModel | None = None


def route_model(alias: str, current: Mapping[str, Any], models: Mapping[str, Any]) -> str:
    """The ``model_id`` of the indices ``current`` (their mappings) behind ``alias``, which must be
    one model that ``models`` (model_id → model) holds.

    Raises
    ------
    IndexNotFoundError
        If nothing has that name.
    ModelMismatchError
        If the indices are not es-scm indices of one model, or of a model not held.
    """
    if not current:
        raise IndexNotFoundError(f"index or alias {alias!r} does not exist")
    ids = {
        mappings.get("_meta", {}).get("es_scm", {}).get("model_id") for mappings in current.values()
    }
    names = ", ".join(sorted(current))
    if len(ids) != 1 or None in ids:
        raise ModelMismatchError(
            f"the indices behind {alias!r} ({names}) are not es-scm indices of one model"
        )
    model_id = str(ids.pop())
    if model_id not in models:
        raise ModelMismatchError(
            f"{alias!r} points at {names}, built with model {model_id[:12]}, which this searcher "
            "does not hold (add_model)"
        )
    return model_id


class TargetCheck:
    """The model checked against the indices behind a name: once, and again whenever an answer
    shows that the name now stands for other indices (see :class:`Target`).

    ``models`` are the models the indices may have been built with: one (an index, or an alias
    whose indices keep their model), or several (an alias that moves from the indices of one
    model to those of the next: the check takes the model the indices record, and an answer
    from the next indices is read with the next model). ``checked`` is the last passed check
    (None before the first, and after :meth:`forget`); ``clause_limit`` the most clauses a
    query may have: the given limit, else the cluster's, which the searcher learns with its
    first search.
    """

    def __init__(
        self,
        name: str,
        models: SoftCosineModel | Iterable[SoftCosineModel],
        clause_limit: int | None,
    ) -> None:
        from es_scm.model import SoftCosineModel

        self.name = name
        self.models: dict[str, SoftCosineModel] = {}
        #: Given several (a collection, even of one): the check takes the model the indices
        #: record, else the one model given must be theirs.
        self.routed = not isinstance(models, SoftCosineModel)
        for model in [models] if isinstance(models, SoftCosineModel) else models:
            self.add(model)
        if not self.models:
            raise ValueError("a searcher needs at least one model")
        self.clause_limit = clause_limit
        self.checked: Checked | None = None

    def add(self, model: SoftCosineModel) -> None:
        """Accept indices built with ``model`` too."""
        self.models[model.model_id] = model

    @property
    def model(self) -> SoftCosineModel:
        """The model of the indices last checked (before the first check: the first given)."""
        checked = self.checked
        if checked is not None and checked.model is not None:
            return checked.model
        return next(iter(self.models.values()))

    @property
    def limit(self) -> int:
        """:attr:`clause_limit`, once known."""
        if self.clause_limit is None:
            raise RuntimeError("the clause limit is read before the first search")
        return self.clause_limit

    def forget(self) -> None:
        """The index was deleted: check the next one of that name again."""
        self.checked = None

    def accept(self, response: Any) -> tuple[dict[str, Any], Checked]:
        """Check the model against a get-index ``response`` of the name (404: none), and
        remember the indices: the ``_meta.es_scm`` of the indices and the :class:`Checked`.

        Raises
        ------
        IndexNotFoundError, ModelMismatchError
            As :func:`~es_scm.elastic.schema.check_indices`.
        """
        model = self._recorded_model(response)
        meta = check_indices(self.name, response, model)
        mappings = [body.get("mappings", {}) for body in response.body.values()]
        dense = common_fields([dense_fields(mapping) for mapping in mappings])
        target = Target.of(self.name, response.body)
        checked = Checked(
            target, meta["expansion"], MappedFields(mappings), dense, meta.get("dense"), model
        )
        self.checked = checked
        return meta, checked

    def _recorded_model(self, response: Any) -> SoftCosineModel:
        """The model that the indices of a get-index ``response`` record, of :attr:`models`
        (the only one, if there is one: :func:`check_indices` then says what differs)."""
        models = list(self.models.values())
        if not self.routed or response.meta.status == 404 or not response.body:
            return models[0]
        current = {name: body.get("mappings", {}) for name, body in response.body.items()}
        return self.models[route_model(self.name, current, self.models)]

    def created(self, shards: int, expansion: str, mappings: Mapping[str, Any]) -> None:
        """The name is an index just created with this model and ``mappings``: nothing to
        look up."""
        target = Target(self.name, frozenset([self.name]), frozenset([shards]))
        encoder = mappings.get("_meta", {}).get("es_scm", {}).get("dense")
        self.checked = Checked(
            target, expansion, MappedFields([mappings]), dense_fields(mappings), encoder
        )

    def moved(self, error: ModelMismatchError) -> ModelMismatchError:
        """The error of a check made again after an answer came from elsewhere."""
        return ModelMismatchError(
            f"{self.name!r} moved since its model was checked: {error} (a searcher given "
            "several models, AliasSearcher(client, alias, [old, new]), follows an alias from "
            "one model to the next)"
        )

    def still(self, seen: Target, now: Checked, total: int | None) -> bool:
        """After checking again (``now``): whether the name still stands for the indices
        ``seen``; if so, an answer from ``total`` shards is theirs too (an alias with routing)
        and is accepted from now on."""
        if now.target.indices != seen.indices:
            logger.info(
                "%s: now %s; searching again", self.name, ", ".join(sorted(now.target.indices))
            )
            return False
        totals = {*seen.shard_totals, *([] if total is None else [total])}
        self.checked = dataclasses.replace(now, target=now.target.accepting(totals))
        return True

    def moved_too_often(self) -> PartialResultError:
        """The error when the name moved during every one of :data:`ATTEMPTS` searches."""
        return PartialResultError(
            f"{self.name!r} moved during each of {ATTEMPTS} attempts of the search; try again"
        )
