"""The model check of what a searcher searches: the indices behind its name, and their model.

The check finds the :class:`~es_scm.search.results.Target` — the name a searcher was given (an
index, an alias or a pattern) with the concrete indices behind it and their number of shards —
through which every answer is read (:mod:`es_scm.search.results`); an answer from elsewhere
raises :class:`~es_scm.search.results.TargetMoved`, and the model is checked again.

:class:`TargetCheck` holds a searcher's check — made once, made again when an answer says so —
and is shared with the :class:`~es_scm.elastic.SCMIndex` that writes the same index. It asks
nothing itself: the searcher sends the get-index request and hands the answer to
:meth:`TargetCheck.accept`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from es_scm.index.dense import DenseField, common_fields, dense_fields
from es_scm.index.schema import (
    IndexNotFoundError,
    ModelMismatchError,
    PartialResultError,
    check_indices,
)
from es_scm.search.filters import MappedFields
from es_scm.search.results import Target, TargetMoved

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "ATTEMPTS",
    "Checked",
    "Target",
    "TargetCheck",
    "TargetMoved",
    "route_model",
]

logger = logging.getLogger(__name__)

#: Searches in a row that may find the name moved to other indices before giving up.
ATTEMPTS = 3


@dataclass(frozen=True)
class Checked:
    """A passed model check: the :class:`Target`, the side its index applies S on
    (``"query"`` or ``"documents"``), the fields its indices map (``fields``: what a filter
    may name), the ``dense_vector`` fields of every index behind it (``dense_fields``, by path:
    :mod:`es_scm.index.dense`), the record of the encoder of es-scm's own dense vectors
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
        #: The model of the indices last checked (before the first check: the first given).
        self.model: SoftCosineModel = next(iter(self.models.values()))

    def add(self, model: SoftCosineModel) -> None:
        """Accept indices built with ``model`` too."""
        self.models[model.model_id] = model

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
            As :func:`~es_scm.index.schema.check_indices`.
        """
        model = self._recorded_model(response)
        meta = check_indices(self.name, response, model)
        mappings = [body.get("mappings", {}) for body in response.body.values()]
        dense = common_fields([dense_fields(mapping) for mapping in mappings])
        target = Target.of(self.name, response.body)
        checked = Checked(
            target, meta["expansion"], MappedFields(mappings), dense, meta.get("dense"), model
        )
        self.checked, self.model = checked, model
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
