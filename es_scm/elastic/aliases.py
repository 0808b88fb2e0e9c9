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
from one model to the next with no failed search. (A :class:`~es_scm.elastic.Searcher`
or :class:`~es_scm.elastic.index.SCMIndex` on the alias checks its model when first used, and
again when an answer comes from other indices: it follows a swap that keeps the model, and
raises :class:`~es_scm.elastic.schema.ModelMismatchError` after a swap to another one.)
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from elasticsearch import NotFoundError

from es_scm.documents import Document
from es_scm.elastic._async.searcher import AsyncSearcher
from es_scm.elastic._sync.searcher import Searcher
from es_scm.elastic.calls import Call, Plan, Wait
from es_scm.elastic.index import IndexOperations
from es_scm.elastic.indices import optimize_plan
from es_scm.elastic.ingest import IngestReport
from es_scm.elastic.names import validate_index_name
from es_scm.elastic.requests import IndexLayout, IngestOptions
from es_scm.elastic.results import SearchResult
from es_scm.elastic.schema import IndexNotFoundError, ModelMismatchError, mapping_options
from es_scm.elastic.shells import AsyncAPI, SyncAPI, async_function, operation, sync_function
from es_scm.validation import NON_NEGATIVE_INT, POSITIVE_INT, Boolean, Interval, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "FLATTENED",
    "AliasSearcher",
    "AliasSwap",
    "AliasSwapError",
    "AsyncAliasSearcher",
    "async_reindex_into_alias",
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


def _alias_targets(alias: str) -> Plan[tuple[dict[str, Any], bool]]:
    """The mappings of the indices ``alias`` names, and whether it is a concrete index itself.

    Returns ``({}, False)`` when nothing has that name.
    """
    response = yield Call("indices.get_mapping", {"index": alias}, {"ignore_status": 404})
    if response.meta.status == 404:
        return {}, False
    mappings = {name: body.get("mappings", {}) for name, body in response.body.items()}
    return mappings, alias in mappings


def _reindex(
    client: Any,
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
    batch_size: int = 500,
    max_retries: int = 5,
    initial_backoff: float = 1.0,
    retry_budget: float = 60.0,
    concurrency: int = 2,
    progress: Any = None,
) -> Plan[AliasSwap]:
    """Index ``documents`` with ``model`` into a new index, then move ``alias`` onto it at once.

    Parameters
    ----------
    client : Elasticsearch or AsyncElasticsearch
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
    batch_size, max_retries, initial_backoff, retry_budget, concurrency, progress
        The ingestion's, as :meth:`SCMIndex.index_documents`.

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
    ingest = IngestOptions(batch_size, max_retries, initial_backoff, retry_budget, concurrency)
    current, concrete = yield from _alias_targets(alias)
    _check_replaceable(alias, current, concrete, keep_old)
    layout = _layout(current, text_analyzer, metadata_mapping, expansion, shards, replicas)
    name = validate_index_name(new_index) if new_index else new_index_name(alias)
    index = IndexOperations(client, name, model)
    yield from index.create.plan(
        shards=layout.shards,
        replicas=layout.replicas,
        text_analyzer=layout.text_analyzer,
        metadata_mapping=layout.metadata_mapping,
        expansion=layout.expansion,
    )
    logger.info("%s: indexing into the new index %s", alias, name)
    try:
        report = yield from index._ingest_plan(documents, ingest, True, True, progress)
        if report.failed > max_failures:
            raise AliasSwapError(
                f"{report.failed} document(s) failed (max_failures={max_failures}): the alias "
                f"{alias!r} was not moved and the new index {name!r} was deleted",
                report,
            )
        if optimize:
            yield from optimize_plan(name, 1)
        yield from _move(alias, name, sorted(current), concrete)
    except BaseException:
        yield from _delete_quietly(name)
        raise
    swap = AliasSwap(alias, name, sorted(current), report)
    return (yield from _retire_previous(swap, current, concrete, keep_old, grace))


reindex_into_alias = sync_function(_reindex, "reindex_into_alias")
async_reindex_into_alias = async_function(_reindex, "async_reindex_into_alias")


def _check_replaceable(
    alias: str, current: Mapping[str, Any], concrete: bool, keep_old: bool
) -> None:
    """Refuse to turn into an alias an index that es-scm did not create, or one to keep."""
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


def _layout(
    current: Mapping[str, Any],
    text_analyzer: str | None,
    metadata_mapping: Mapping[str, Any] | str | None,
    expansion: str | None,
    shards: int,
    replicas: int,
) -> IndexLayout:
    """The new index's layout: what is given, else what the alias's index has now."""
    inherited = _inherited_options(current)
    if metadata_mapping is None:
        metadata_mapping = inherited["metadata_mapping"]
    elif metadata_mapping == FLATTENED:
        metadata_mapping = None
    elif isinstance(metadata_mapping, str):
        raise ValueError(f"metadata_mapping must be a mapping, None or {FLATTENED!r}")
    return IndexLayout(
        shards,
        replicas,
        inherited["text_analyzer"] if text_analyzer is None else text_analyzer,
        metadata_mapping,  # type: ignore[arg-type]
        inherited["expansion"] if expansion is None else expansion,
    )


def _inherited_options(current: Mapping[str, Any]) -> dict[str, Any]:
    for mappings in current.values():
        if mappings.get("_meta", {}).get("es_scm"):
            return mapping_options(mappings)
    return {"text_analyzer": None, "metadata_mapping": None, "expansion": "query"}


def _move(alias: str, name: str, previous: list[str], concrete: bool) -> Plan[None]:
    """One atomic ``_aliases`` request: the alias leaves ``previous`` and points at ``name``."""
    if concrete:
        actions: list[dict[str, Any]] = [{"remove_index": {"index": alias}}]
    else:
        actions = [
            {"remove": {"index": old, "alias": alias, "must_exist": True}} for old in previous
        ]
    actions.append({"add": {"index": name, "alias": alias, "is_write_index": True}})
    yield Call("indices.update_aliases", {"actions": actions})
    logger.info("%s: moved from %s to %s", alias, previous or "nothing", name)


def _retire_previous(
    swap: AliasSwap, current: Mapping[str, Any], concrete: bool, keep_old: bool, grace: float
) -> Plan[AliasSwap]:
    """After the move: the indices the alias left are kept (``keep_old``) or deleted after
    ``grace`` seconds; an index the alias replaced (``concrete``) is gone with the move."""
    if concrete:
        swap.deleted.append(swap.alias)
    elif keep_old:
        swap.kept += [(old, "kept as asked (keep_old)") for old in swap.previous]
    elif swap.previous:
        yield Wait(grace)
        yield from _delete_previous(swap, current)
    return swap


def _delete_previous(swap: AliasSwap, current: Mapping[str, Any]) -> Plan[None]:
    call = Call("indices.get_alias", {"index": ",".join(swap.previous)}, {"ignore_status": 404})
    aliases = yield call
    for old in swap.previous:
        others = sorted(set(aliases.body.get(old, {}).get("aliases", {})) - {swap.alias})
        if not current[old].get("_meta", {}).get("es_scm"):
            swap.kept.append((old, "not an es-scm index"))
        elif others:
            swap.kept.append((old, f"still in use by the alias {others[0]!r}"))
        else:
            yield Call("indices.delete", {"index": old}, {"ignore_status": 404})
            swap.deleted.append(old)


def _delete_quietly(name: str) -> Plan[None]:
    try:
        yield Call("indices.delete", {"index": name}, {"ignore_status": 404})
    except Exception as error:  # the cluster may be what failed: say what is left behind
        logger.warning("could not delete the unfinished index %s (%s); delete it", name, error)


class AliasOperations:
    """Search an alias with the model of the index it points at, across model swaps (the
    operations of :class:`AliasSearcher` and :class:`AsyncAliasSearcher`).

    Parameters
    ----------
    client : Elasticsearch or AsyncElasticsearch
    alias : str
        The alias (or index) to search.
    models : iterable of SoftCosineModel
        The models the alias's indices may be built with; add the next one with
        :meth:`add_model` before swapping to it.
    max_age : float
        Seconds a resolved route (the concrete indices and their model) is reused before the
        alias is looked up again (1 s). An index that disappears meanwhile is re-resolved at once.
    **searcher_options
        Passed to each :class:`~es_scm.elastic.Searcher` (``max_window``, ...).

    Examples
    --------
    >>> searcher = AliasSearcher(client, "news", [old_model])  # doctest: +SKIP
    >>> searcher.add_model(new_model)                           # doctest: +SKIP
    >>> reindex_into_alias(client, "news", new_model, documents)  # doctest: +SKIP
    >>> searcher.search("president greets the press")          # doctest: +SKIP
    """

    searcher_type: type[Searcher] | type[AsyncSearcher]  # for the side

    def __init__(
        self,
        client: Any,
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
        self._route: tuple[float, Any] | None = None
        self._searchers: dict[tuple[str, str], Any] = {}
        for model in models:
            self.add_model(model)

    def add_model(self, model: SoftCosineModel) -> None:
        """Make ``model`` available for indices built with it."""
        self._models[model.model_id] = model

    @operation
    def searcher(self, *, refresh: bool = False) -> Plan[Any]:
        """The searcher of the concrete indices the alias points at now, with their model.

        Raises
        ------
        IndexNotFoundError
            If the alias does not exist.
        ModelMismatchError
            If its indices are not es-scm indices, disagree on the model, or were built with a
            model this searcher does not hold.
        """
        route = self._route
        if not refresh and route is not None and time.monotonic() - route[0] < self.max_age:
            return route[1]
        current, _ = yield from _alias_targets(self.alias)
        model_id = self._model_id(current)
        key = (",".join(sorted(current)), model_id)
        if key not in self._searchers:
            self._searchers[key] = self.searcher_type(
                self.client, key[0], self._models[model_id], **self._options
            )
        self._route = (time.monotonic(), self._searchers[key])  # replaced whole: thread-safe
        return self._route[1]

    def _model_id(self, current: Mapping[str, Any]) -> str:
        """The one model of the indices ``current`` (their mappings), which this object holds."""
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
        return model_id


# The search of an alias, sync and asyncio, until the alias side is written once in _async/.
_SEARCH_DOC = """:meth:`Searcher.search` on the alias's current indices, with their model.

        An index deleted between resolving the alias and searching it (a swap just happened) is
        not an error: the alias is resolved again and the search repeated, up to ``attempts``
        times in all. ``options`` are :meth:`Searcher.search`'s.
        """


class AliasSearcher(AliasOperations, SyncAPI):
    """Search an alias across model swaps on an ``Elasticsearch`` client (the parameters and
    operations of :class:`AliasOperations`)."""

    searcher_type = Searcher

    def search(self, query: str, k: int = 10, *, attempts: int = 3, **options: Any) -> SearchResult:
        attempts = check(attempts, "attempts", POSITIVE_INT)
        for attempt in range(1, attempts + 1):
            searcher = self.searcher(refresh=attempt > 1)
            try:
                return searcher.search(query, k, **options)
            except (NotFoundError, IndexNotFoundError):
                if attempt == attempts:
                    raise
                logger.info("%s: %s went away; resolving again", self.alias, searcher.name)
        raise AssertionError("unreachable")  # pragma: no cover

    search.__doc__ = _SEARCH_DOC


class AsyncAliasSearcher(AliasOperations, AsyncAPI):
    """:class:`AliasSearcher` on an ``AsyncElasticsearch`` client: the same operations, awaited."""

    searcher_type = AsyncSearcher

    async def search(
        self, query: str, k: int = 10, *, attempts: int = 3, **options: Any
    ) -> SearchResult:
        attempts = check(attempts, "attempts", POSITIVE_INT)
        for attempt in range(1, attempts + 1):
            searcher = await self.searcher(refresh=attempt > 1)
            try:
                return await searcher.search(query, k, **options)
            except (NotFoundError, IndexNotFoundError):
                if attempt == attempts:
                    raise
                logger.info("%s: %s went away; resolving again", self.alias, searcher.name)
        raise AssertionError("unreachable")  # pragma: no cover

    search.__doc__ = _SEARCH_DOC
