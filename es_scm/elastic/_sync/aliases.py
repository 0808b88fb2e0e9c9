# Generated from es_scm/elastic/_async/aliases.py by scripts/generate_sync.py: do not edit.
# Change the asyncio source and run `python scripts/generate_sync.py`.
"""Model swaps behind an alias: the new index filled and the alias moved, and the searcher of an
alias that follows it from model to model (the decisions: :mod:`es_scm.index.aliases`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError, Elasticsearch, NotFoundError, TransportError

from es_scm.documents import Document
from es_scm.elastic._sync.index import SCMIndex, delete_index, optimize_index
from es_scm.elastic._sync.opensearch import es_surface
from es_scm.elastic._sync.searcher import Searcher
from es_scm.elastic.concurrency import Heartbeat, Stop
from es_scm.elastic.connection import error_reason
from es_scm.index.aliases import (
    AliasSwap,
    AliasSwapError,
    alias_targets,
    check_replaceable,
    move_actions,
    moved_first,
    new_index_name,
    retirement,
    swap_layout,
)
from es_scm.index.layout import MAX_REQUEST_BYTES, IngestOptions
from es_scm.index.names import validate_index_name
from es_scm.index.swaps import (
    HEARTBEAT,
    SWAP_KEY,
    SwapCleanup,
    SwapRun,
    beaten,
    marker_of,
    moved_marker,
    retiring_marker,
    swap_leftovers,
    swap_marker,
    this_machine,
    with_marker,
)
from es_scm.options import DenseOptions
from es_scm.options.validation import NON_NEGATIVE_INT, Boolean, Interval, check
from es_scm.processes import pid_alive

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["AliasSearcher", "reindex_into_alias", "remove_swap_leftovers"]

logger = logging.getLogger(__name__)

Documents = Iterable[Document | Mapping[str, Any]] | Iterable[Document | Mapping[str, Any]]
_SECONDS = Interval(float, 0.0, None)


def reindex_into_alias(
    client: Elasticsearch,
    alias: str,
    model: SoftCosineModel,
    documents: Documents,
    *,
    keep_old: bool = False,
    text_analyzer: str | None = None,
    metadata_mapping: Mapping[str, Any] | str | None = None,
    expansion: str | None = None,
    dense: DenseOptions | bool | None = None,
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
    max_request_bytes: int = MAX_REQUEST_BYTES,
    progress: Any = None,
    stop: Stop | None = None,
    clean_up: bool = True,
) -> AliasSwap:
    """Index ``documents`` with ``model`` into a new index, then move ``alias`` onto it at once.

    Parameters
    ----------
    client : AsyncElasticsearch
    alias : str
        The alias the applications search (created if missing; an index of that name is
        replaced by the alias, see :mod:`es_scm.index.aliases`).
    model : SoftCosineModel
        The model of the new index (the same or another one).
    documents : iterable of Document or mapping
        Every document the new index must hold (read once).
    keep_old : bool
        Keep the previous indices (default: delete them after ``grace`` seconds).
    text_analyzer, metadata_mapping
        As :meth:`AsyncSCMIndex.create`; None (default) takes them from the index the alias
        points at now (es-scm's defaults for a new alias). ``metadata_mapping=FLATTENED`` asks
        for the default ``flattened`` metadata whatever the current index has.
    expansion : {"query", "documents"}, optional
        As :meth:`AsyncSCMIndex.create`; None (default) keeps the current index's.
    dense : DenseOptions or bool, optional
        As :meth:`AsyncSCMIndex.create`; None (default) keeps the current index's dense
        vectors (the same encoder and index options), False makes the new index without.
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
        The new index's name (default :func:`~es_scm.index.aliases.new_index_name`).
    batch_size, max_retries, initial_backoff, retry_budget, concurrency, max_request_bytes
        The ingestion's, as :meth:`AsyncSCMIndex.index_documents`.
    progress, stop
        The ingestion's too: a progress bar, and what stops it.
    clean_up : bool
        First delete what swaps of ``alias`` that were killed left behind
        (:func:`async_remove_swap_leftovers`; ``swap.cleanup`` says what). The new index is
        marked for the next run to do the same (:mod:`es_scm.index.swaps`).

    Returns
    -------
    AliasSwap

    Raises
    ------
    AliasSwapError
        More than ``max_failures`` documents failed (the alias did not move).
    AliasMovedError
        Another run moved the alias first (this run's index is deleted, the alias left as that
        run set it).
    IngestError, IngestInterrupted
        The ingestion stopped (the alias did not move; the new index is deleted).
    """
    validate_index_name(alias)
    client = es_surface(client)
    keep_old = check(keep_old, "keep_old", Boolean())
    max_failures = check(max_failures, "max_failures", NON_NEGATIVE_INT)
    grace = check(grace, "grace", _SECONDS)
    options = IngestOptions(
        batch_size, max_retries, initial_backoff, retry_budget, concurrency, max_request_bytes
    )
    found = client.options(ignore_status=404).indices.get_mapping(index=alias)
    current, concrete = alias_targets(alias, found.meta.status, found.body)
    check_replaceable(alias, current, concrete, keep_old)
    layout = swap_layout(
        current, text_analyzer, metadata_mapping, expansion, shards, replicas, dense
    )
    cleanup = remove_swap_leftovers(client, alias) if clean_up else None
    name = validate_index_name(new_index) if new_index else new_index_name(alias)
    index = SCMIndex(client, name, model)
    marker = swap_marker(alias, SwapRun.this(), _now())
    index._create(layout, False, marker)  # marked from its creation on
    logger.info("%s: indexing into the new index %s", alias, name)
    previous = sorted(current)
    try:
        meta = _meta(client, name)

        def beat() -> None:  # while the run fills the index: it is alive
            client.indices.put_mapping(index=name, meta=with_marker(meta, beaten(marker, _now())))

        with Heartbeat(HEARTBEAT, beat):
            # the run created the index, under a name of its own: no id to look up (fresh)
            report = index._ingest(documents, options, True, True, progress, stop)
            if report.failed > max_failures:
                raise AliasSwapError(
                    f"{report.failed} document(s) failed (max_failures={max_failures}): the "
                    f"alias {alias!r} was not moved and the new index {name!r} was deleted",
                    report,
                )
            if optimize:
                optimize_index(client, name, 1)
        try:
            if not concrete:
                _mark_previous(client, previous, name, keep_old)
            client.indices.update_aliases(actions=move_actions(alias, name, previous, concrete))
        except NotFoundError as error:  # an index or the alias it was to leave is gone
            now = client.options(ignore_status=404).indices.get_alias(name=alias)
            raise moved_first(alias, name, previous, now.body, error, report) from None
        logger.info("%s: moved from %s to %s", alias, previous or "nothing", name)
    except BaseException:
        _delete_unfinished(client, name)
        raise
    _update_marker(client, name, meta, moved_marker(marker, _now()))
    swap = AliasSwap(alias, name, previous, report, cleanup=cleanup)
    if concrete:  # the index the alias replaced is gone with the move
        swap.deleted.append(alias)
    elif keep_old:
        swap.kept += [(old, "kept as asked (keep_old)") for old in previous]
    elif previous:
        Stop().wait(grace)  # for the searches already running on the old indices
        aliases = client.options(ignore_status=404).indices.get_alias(index=",".join(previous))
        swap.deleted, swap.kept = retirement(alias, previous, current, aliases.body)
        for old in swap.deleted:
            client.options(ignore_status=404).indices.delete(index=old)
    return swap


def remove_swap_leftovers(client: Elasticsearch, alias: str) -> SwapCleanup:
    """Delete the indices that swaps of ``alias`` left behind when they were killed.

    The rule (:mod:`es_scm.index.swaps`): an index that a swap of ``alias`` created (its
    mapping's marker says so), that no alias points at and no swap kept, and that a swap
    retired (killed between moving the alias and deleting it) or that is still being filled by
    a run that is gone (on this machine: its process no longer exists; on another: its
    heartbeat is older than the lease). An index another run is filling is left alone and
    reported. A cluster that cannot be looked through (a key without the right) skips the
    cleanup with a warning; nothing else is deleted, ever.

    Returns
    -------
    SwapCleanup
        What was deleted and why, what was left to a run still filling it, and any warning.
    """
    validate_index_name(alias)
    client = es_surface(client)
    try:
        found = client.options(ignore_status=404).indices.get_mapping(
            index="*", filter_path=f"*.mappings._meta.es_scm.{SWAP_KEY}"
        )
        metas = {
            index: body["mappings"]["_meta"]
            for index, body in (found.body or {}).items()
            if (marker_of(body["mappings"]["_meta"]) or {}).get("alias") == alias
        }
        aliases: Any = {}
        if metas:
            answer = client.options(ignore_status=404).indices.get_alias(
                index=",".join(sorted(metas))
            )
            aliases = answer.body
    except (ApiError, TransportError) as error:
        return SwapCleanup(alias, [], [], f"swaps left behind were not looked for ({_said(error)})")
    leftovers, writing = swap_leftovers(alias, metas, aliases, _now(), this_machine(), pid_alive)
    cleanup = SwapCleanup(alias, [], writing)
    for leftover in leftovers:
        try:
            if delete_index(client, leftover.index):
                cleanup.deleted.append(leftover)
                logger.info("%s: deleted %s: %s", alias, leftover.index, leftover.why)
        except (ApiError, TransportError, ValueError) as error:
            cleanup.warning = f"could not delete {leftover.index!r} ({_said(error)})"
    for other in writing:
        logger.info("%s: left %s alone: %s", alias, other.index, other.why)
    return cleanup


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _said(error: Exception) -> str:
    if isinstance(error, ApiError):
        return f"HTTP {error.meta.status}: {error_reason(error)}"
    return " ".join(str(error).split())[:200]


def _meta(client: Elasticsearch, name: str) -> dict[str, Any]:
    """The whole ``_meta`` of the index ``name`` (a mapping update replaces all of it)."""
    found = client.indices.get_mapping(index=name)
    meta: dict[str, Any] = found.body[name]["mappings"]["_meta"]
    return meta


def _mark_previous(client: Elasticsearch, previous: Sequence[str], name: str, keep: bool) -> None:
    """Mark the indices the alias leaves, before it moves: ``kept`` or ``retired`` for the
    swap to ``name`` (read fresh: a ``kept`` mark of another swap stays). Those without a swap
    marker are not marked (the next swaps never take them)."""
    if not previous:
        return
    found = client.indices.get_mapping(index=",".join(previous))
    for old, body in found.body.items():
        meta = body.get("mappings", {}).get("_meta", {})
        marker = marker_of(meta)
        if marker is not None:
            marked = with_marker(meta, retiring_marker(marker, name, keep, _now()))
            client.indices.put_mapping(index=old, meta=marked)


def _update_marker(
    client: Elasticsearch, name: str, meta: Mapping[str, Any], marker: Mapping[str, Any]
) -> None:
    """Write ``marker`` into the index ``name`` after the move; a failure is only logged (the
    alias moved: the swap is done, and the index is the alias's, which no cleanup takes)."""
    try:
        client.indices.put_mapping(index=name, meta=with_marker(meta, marker))
    except (ApiError, TransportError) as error:
        logger.warning("%s: could not mark it as moved onto (%s)", name, _said(error))


def _delete_unfinished(client: Elasticsearch, name: str) -> None:
    """Delete the new index of a swap that failed (this run created it; its writes returned)."""
    try:
        client.options(ignore_status=404).indices.delete(index=name)
    except Exception as error:  # the cluster may be what failed: say what is left behind
        logger.warning("could not delete the unfinished index %s (%s); delete it", name, error)


def AliasSearcher(
    client: Elasticsearch,
    alias: str,
    models: Iterable[SoftCosineModel],
    **searcher_options: Any,
) -> Searcher:
    """A searcher of an alias across model swaps: the :class:`AsyncSearcher` given every model
    the alias's indices may be built with (its ``model``, several).

    Each search reads the alias's indices with the model they record; when the alias moves to
    the indices of another model, the first answer from them says so, and the search is
    repeated with that model (:class:`~es_scm.search.target.TargetCheck`). Add the next model
    with :meth:`~AsyncSearcher.add_model` before swapping to it.

    Parameters
    ----------
    client : AsyncElasticsearch
    alias : str
        The alias (or index) to search.
    models : iterable of SoftCosineModel
        The models the alias's indices may be built with.
    **searcher_options
        :class:`AsyncSearcher`'s other options (``max_window``, ...).

    Examples
    --------
    >>> searcher = AliasSearcher(client, "news", [old_model])  # doctest: +SKIP
    >>> searcher.add_model(new_model)                           # doctest: +SKIP
    >>> reindex_into_alias(client, "news", new_model, documents)  # doctest: +SKIP
    >>> searcher.search("president greets the press")          # doctest: +SKIP
    """
    return Searcher(client, alias, list(models), **searcher_options)
