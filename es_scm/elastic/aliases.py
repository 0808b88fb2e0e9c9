"""Model swaps behind an alias, without downtime.

Applications search an alias (``news``); :func:`reindex_into_alias` builds the next version of
the index beside the live one and moves the alias in one step:

1. create a new concrete index ``news-<UTC timestamp>`` with the new model (and the text analyzer
   and metadata mapping of the index the alias points at now, unless given);
2. ingest every document into it (optionally force-merge it) while the alias keeps answering
   from the old index;
3. move the alias in one ``_aliases`` request — remove it from the old indices, add it to the new
   one — which Elasticsearch applies atomically: every search sees either the old index or the
   new, never both or neither;
4. delete the old indices after a grace period (``grace``, 1 s, for searches already running
   on them), unless ``keep_old`` (keep them for a rollback: move the alias back with one
   ``_aliases`` request); an old index that another alias still uses, or that es-scm did not
   create, is kept and reported.

If anything fails before the move — the ingestion stops, more than ``max_failures`` documents
fail, Elasticsearch refuses the move — the new index is deleted and the alias is untouched. An
alias name that is a concrete index today (an application that searched the index ``news``
directly) is converted: the same atomic request removes that index and adds the alias, so it
cannot be kept.

The query encoding depends on the model (its term ids), so after a swap to another model,
searches must use the new model. :class:`AliasSearcher` does that: it holds the models, finds
the one the alias's index was built with, and searches that concrete index, following the alias
from one model to the next with no failed search. (A :class:`~es_scm.elastic.searcher.Searcher`
or :class:`~es_scm.elastic.index.SCMIndex` on the alias checks its model when first used, and
again when an answer comes from other indices: it follows a swap that keeps the model, and
raises :class:`~es_scm.elastic.schema.ModelMismatchError` after a swap to another one.)
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from elasticsearch import Elasticsearch, NotFoundError

from es_scm.documents import Document
from es_scm.elastic.index import SCMIndex, validate_index_name
from es_scm.elastic.ingest import IngestReport
from es_scm.elastic.schema import (
    IndexNotFoundError,
    ModelMismatchError,
    mapping_options,
)
from es_scm.elastic.searcher import Searcher, SearchResult
from es_scm.validation import NON_NEGATIVE_INT, POSITIVE_INT, Boolean, Interval, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "FLATTENED",
    "AliasSearcher",
    "AliasSwap",
    "AliasSwapError",
    "alias_targets",
    "new_index_name",
    "reindex_into_alias",
]

logger = logging.getLogger(__name__)

#: ``metadata_mapping=FLATTENED``: es-scm's default metadata mapping, not the current index's.
FLATTENED = "flattened"
_SECONDS = Interval(float, 0.0, None)


@dataclass
class AliasSwap:
    """What :func:`reindex_into_alias` did.

    ``index`` is the new concrete index the alias points at now; ``previous`` what it pointed at
    before (empty for a new alias); ``deleted`` and ``kept`` (with the reason) the fate of each
    previous index; ``report`` the ingestion's.
    """

    alias: str
    index: str
    previous: list[str]
    report: IngestReport
    deleted: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)


class AliasSwapError(RuntimeError):
    """Too many documents failed to move the alias; the new index was deleted, the alias kept.

    ``report`` is the ingestion's (its ``failures`` say why).
    """

    def __init__(self, message: str, report: IngestReport) -> None:
        super().__init__(message)
        self.report = report


def new_index_name(alias: str, now: dt.datetime | None = None) -> str:
    """``<alias>-<UTC timestamp to the microsecond>``, e.g. ``news-20260101-120000-123456``."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return validate_index_name(f"{alias}-{now:%Y%m%d-%H%M%S-%f}")


def alias_targets(client: Elasticsearch, alias: str) -> tuple[dict[str, Any], bool]:
    """The mappings of the indices ``alias`` names, and whether it is a concrete index itself.

    Returns ``({}, False)`` when nothing has that name.
    """
    response = client.options(ignore_status=404).indices.get_mapping(index=alias)
    if response.meta.status == 404:
        return {}, False
    mappings = {name: body.get("mappings", {}) for name, body in response.body.items()}
    return mappings, alias in mappings


def reindex_into_alias(
    client: Elasticsearch,
    alias: str,
    model: SoftCosineModel,
    documents: Iterable[Document | Mapping[str, Any]],
    *,
    keep_old: bool = False,
    text_analyzer: str | None = None,
    metadata_mapping: Mapping[str, Any] | str | None = None,
    expansion: str | None = None,
    shards: int = 1,
    replicas: int = 0,
    max_failures: int = 0,
    optimize: bool = False,
    grace: float = 1.0,
    new_index: str | None = None,
    **ingest_options: Any,
) -> AliasSwap:
    """Index ``documents`` with ``model`` into a new index, then move ``alias`` onto it at once.

    Parameters
    ----------
    client : Elasticsearch
    alias : str
        The alias the applications search (created if missing; an index of that name is
        replaced by the alias, see the module docstring).
    model : SoftCosineModel
        The model of the new index (the same or another one).
    documents : iterable of Document or mapping
        Every document the new index must hold (read once).
    keep_old : bool
        Keep the previous indices (default: delete them after ``grace`` seconds).
    text_analyzer, metadata_mapping
        As :meth:`SCMIndex.create`; None (default) takes them from the index the alias points at
        now (es-scm's defaults for a new alias). ``metadata_mapping=FLATTENED`` asks for the
        default ``flattened`` metadata whatever the current index has.
    expansion : {"query", "documents"}, optional
        As :meth:`SCMIndex.create`; None (default) keeps the current index's.
    shards, replicas : int
        Of the new index.
    max_failures : int
        The most failed documents with which the alias is still moved (0: every document must
        be indexed).
    optimize : bool
        Force-merge the new index into one segment before the move.
    grace : float
        Seconds between moving the alias and deleting the old indices.
    new_index : str, optional
        The new index's name (default :func:`new_index_name`).
    **ingest_options
        Passed to :meth:`SCMIndex.index_documents` (``batch_size``, ``concurrency``,
        ``retry_budget``, ``progress``, ...).

    Returns
    -------
    AliasSwap

    Raises
    ------
    AliasSwapError
        More than ``max_failures`` documents failed (the alias did not move).
    IngestError, IngestInterrupted
        The ingestion stopped (the alias did not move; the new index is deleted).
    """
    validate_index_name(alias)
    keep_old = check(keep_old, "keep_old", Boolean())
    max_failures = check(max_failures, "max_failures", NON_NEGATIVE_INT)
    grace = check(grace, "grace", _SECONDS)
    current, concrete = alias_targets(client, alias)
    if concrete and not current[alias].get("_meta", {}).get("es_scm"):
        raise ValueError(
            f"{alias!r} is an index that es-scm did not create: making it an alias would delete "
            "it; choose another alias name"
        )
    if concrete and keep_old:
        raise ValueError(
            f"{alias!r} is an index, not an alias: the request that makes {alias!r} an alias "
            "must delete that index, so it cannot be kept (leave out keep_old, or choose another "
            "alias name)"
        )
    inherited = _inherited_options(current)
    if text_analyzer is None:
        text_analyzer = inherited["text_analyzer"]
    if expansion is None:
        expansion = inherited["expansion"]
    if metadata_mapping is None:
        metadata_mapping = inherited["metadata_mapping"]
    elif metadata_mapping == FLATTENED:
        metadata_mapping = None
    elif isinstance(metadata_mapping, str):
        raise ValueError(f"metadata_mapping must be a mapping, None or {FLATTENED!r}")
    name = validate_index_name(new_index) if new_index else new_index_name(alias)
    index = SCMIndex(client, name, model)
    index.create(
        shards=shards,
        replicas=replicas,
        text_analyzer=text_analyzer,
        metadata_mapping=metadata_mapping,  # type: ignore[arg-type]
        expansion=expansion,
    )
    logger.info("%s: indexing into the new index %s", alias, name)
    try:
        report = index.index_documents(documents, create=False, **ingest_options)
        if report.failed > max_failures:
            raise AliasSwapError(
                f"{report.failed} document(s) failed (max_failures={max_failures}): the alias "
                f"{alias!r} was not moved and the new index {name!r} was deleted",
                report,
            )
        if optimize:
            index.optimize()
        _move(client, alias, name, sorted(current), concrete)
    except BaseException:
        _delete_quietly(client, name)
        raise
    swap = AliasSwap(alias, name, sorted(current), report)
    if concrete:
        swap.deleted.append(alias)
    elif keep_old:
        swap.kept += [(old, "kept as asked (keep_old)") for old in swap.previous]
    elif swap.previous:
        time.sleep(grace)
        _delete_previous(client, swap, current)
    return swap


def _inherited_options(current: Mapping[str, Any]) -> dict[str, Any]:
    for mappings in current.values():
        if mappings.get("_meta", {}).get("es_scm"):
            return mapping_options(mappings)
    return {"text_analyzer": None, "metadata_mapping": None, "expansion": "query"}


def _move(client: Elasticsearch, alias: str, name: str, previous: list[str], concrete: bool):
    """One atomic ``_aliases`` request: the alias leaves ``previous`` and points at ``name``."""
    if concrete:
        actions: list[dict[str, Any]] = [{"remove_index": {"index": alias}}]
    else:
        actions = [
            {"remove": {"index": old, "alias": alias, "must_exist": True}} for old in previous
        ]
    actions.append({"add": {"index": name, "alias": alias, "is_write_index": True}})
    client.indices.update_aliases(actions=actions)
    logger.info("%s: moved from %s to %s", alias, previous or "nothing", name)


def _delete_previous(client: Elasticsearch, swap: AliasSwap, current: Mapping[str, Any]) -> None:
    aliases = client.options(ignore_status=404).indices.get_alias(index=",".join(swap.previous))
    for old in swap.previous:
        others = sorted(set(aliases.body.get(old, {}).get("aliases", {})) - {swap.alias})
        if not current[old].get("_meta", {}).get("es_scm"):
            swap.kept.append((old, "not an es-scm index"))
        elif others:
            swap.kept.append((old, f"still in use by the alias {others[0]!r}"))
        else:
            client.options(ignore_status=404).indices.delete(index=old)
            swap.deleted.append(old)


def _delete_quietly(client: Elasticsearch, name: str) -> None:
    try:
        client.options(ignore_status=404).indices.delete(index=name)
    except Exception as error:  # the cluster may be what failed: say what is left behind
        logger.warning("could not delete the unfinished index %s (%s); delete it", name, error)


class AliasSearcher:
    """Search an alias with the model of the index it points at, across model swaps.

    Parameters
    ----------
    client : Elasticsearch
    alias : str
        The alias (or index) to search.
    models : iterable of SoftCosineModel
        The models the alias's indices may be built with; add the next one with
        :meth:`add_model` before swapping to it.
    max_age : float
        Seconds a resolved route (the concrete indices and their model) is reused before the
        alias is looked up again (1 s). An index that disappears meanwhile is re-resolved at once.
    **searcher_options
        Passed to each :class:`~es_scm.elastic.searcher.Searcher` (``max_window``, ...).

    Examples
    --------
    >>> searcher = AliasSearcher(client, "news", [old_model])  # doctest: +SKIP
    >>> searcher.add_model(new_model)                           # doctest: +SKIP
    >>> reindex_into_alias(client, "news", new_model, documents)  # doctest: +SKIP
    >>> searcher.search("president greets the press")          # doctest: +SKIP
    """

    def __init__(
        self,
        client: Elasticsearch,
        alias: str,
        models: Iterable[SoftCosineModel],
        *,
        max_age: float = 1.0,
        **searcher_options: Any,
    ) -> None:
        self.client = client
        self.alias = alias
        self.max_age = check(max_age, "max_age", _SECONDS)
        self._options = searcher_options
        self._models: dict[str, SoftCosineModel] = {}
        self._route: tuple[float, Searcher] | None = None
        self._searchers: dict[tuple[str, str], Searcher] = {}
        self._lock = threading.Lock()
        for model in models:
            self.add_model(model)

    def add_model(self, model: SoftCosineModel) -> None:
        """Make ``model`` available for indices built with it."""
        self._models[model.model_id] = model

    def searcher(self, *, refresh: bool = False) -> Searcher:
        """The searcher of the concrete indices the alias points at now, with their model.

        Raises
        ------
        IndexNotFoundError
            If the alias does not exist.
        ModelMismatchError
            If its indices are not es-scm indices, disagree on the model, or were built with a
            model this searcher does not hold.
        """
        with self._lock:
            now = time.monotonic()
            if not refresh and self._route is not None and now - self._route[0] < self.max_age:
                return self._route[1]
            current, _ = alias_targets(self.client, self.alias)
            if not current:
                raise IndexNotFoundError(f"index or alias {self.alias!r} does not exist")
            ids = {m.get("_meta", {}).get("es_scm", {}).get("model_id") for m in current.values()}
            if len(ids) != 1 or None in ids:
                raise ModelMismatchError(
                    f"the indices behind {self.alias!r} ({', '.join(sorted(current))}) are not "
                    "es-scm indices of one model"
                )
            model_id = ids.pop()
            if model_id not in self._models:
                raise ModelMismatchError(
                    f"{self.alias!r} points at {', '.join(sorted(current))}, built with model "
                    f"{model_id[:12]}, which this searcher does not hold (add_model)"
                )
            key = (",".join(sorted(current)), model_id)
            if key not in self._searchers:
                self._searchers[key] = Searcher(
                    self.client, key[0], self._models[model_id], **self._options
                )
            self._route = (now, self._searchers[key])
            return self._route[1]

    def search(self, query: str, k: int = 10, *, attempts: int = 3, **options: Any) -> SearchResult:
        """:meth:`Searcher.search` on the alias's current indices, with their model.

        An index deleted between resolving the alias and searching it (a swap just happened) is
        not an error: the alias is resolved again and the search repeated, up to ``attempts``
        times in all.
        """
        attempts = check(attempts, "attempts", POSITIVE_INT)
        for attempt in range(1, attempts + 1):
            searcher = self.searcher(refresh=attempt > 1)
            try:
                return searcher.search(query, k, **options)
            except (NotFoundError, IndexNotFoundError):
                if attempt == attempts:
                    raise
                logger.info("%s: %s went away; resolving again", self.alias, searcher.index)
        raise AssertionError("unreachable")  # pragma: no cover
