"""Model swaps behind an alias, without downtime: the decisions.

Applications search an alias (``news``); :func:`~es_scm.elastic.reindex_into_alias` (the asyncio
:func:`~es_scm.elastic.aio.async_reindex_into_alias`) builds the next version of the index beside
the live one and moves the alias in one step:

1. create a new concrete index ``news-<UTC timestamp>`` with the new model (and the text analyzer
   and metadata mapping of the index the alias points at now, unless given: :func:`swap_layout`);
2. ingest every document into it (optionally force-merge it) while the alias keeps answering
   from the old index;
3. move the alias in one ``_aliases`` request — remove it from the old indices, add it to the new
   one (:func:`move_actions`) — which Elasticsearch applies atomically: every search sees either
   the old index or the new, never both or neither;
4. delete the old indices after a grace period (``grace``, 1 s, for searches already running
   on them), unless ``keep_old`` (keep them for a rollback: move the alias back with one
   ``_aliases`` request); an old index that another alias still uses, or that es-scm did not
   create, is kept and reported (:func:`retirement`).

If anything fails before the move — the ingestion stops, more than ``max_failures`` documents
fail, Elasticsearch refuses the move — the new index is deleted and the alias is untouched: the
run created that index under a name of its own, and its writes have all returned. A move refused
because another run moved the alias first is :class:`AliasMovedError`, which says so
(:func:`moved_first`). A run killed outright cannot delete anything: the indices it leaves are
marked, and the next swap of the alias deletes them (:mod:`es_scm.index.swaps`). An alias name
that is a concrete index today (an application that searched the index ``news`` directly) is
converted: the same atomic request removes that index and adds the alias, so it cannot be kept
(:func:`check_replaceable`).

The query encoding depends on the model (its term ids), so after a swap to another model,
searches must use the new model. A searcher given several models does that
(:class:`~es_scm.elastic.AliasSearcher`): its model check takes the one the alias's indices
record (:func:`~es_scm.search.target.route_model`), and an answer from the next indices is
read with the next model, so it follows the alias from one model to the next with no failed
search.

Pure code: the requests are made by :mod:`es_scm.elastic._async.aliases`.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from es_scm.index.indices import is_write_alias
from es_scm.index.ingest import IngestReport
from es_scm.index.layout import IndexLayout, dense_options
from es_scm.index.names import validate_index_name
from es_scm.index.schema import mapping_options
from es_scm.index.swaps import SwapCleanup
from es_scm.options import DenseOptions

__all__ = [
    "FLATTENED",
    "AliasMovedError",
    "AliasSwap",
    "AliasSwapError",
    "alias_targets",
    "check_replaceable",
    "move_actions",
    "moved_first",
    "new_index_name",
    "retirement",
    "swap_layout",
]

logger = logging.getLogger(__name__)

#: ``metadata_mapping=FLATTENED``: es-scm's default metadata mapping, not the current index's.
FLATTENED = "flattened"


@dataclass
class AliasSwap:
    """What :func:`~es_scm.elastic.reindex_into_alias` did.

    ``index`` is the new concrete index the alias points at now; ``previous`` what it pointed at
    before (empty for a new alias); ``deleted`` and ``kept`` (with the reason) the fate of each
    previous index; ``report`` the ingestion's; ``cleanup`` what the run deleted first, of what
    killed swaps of the alias left behind (None if not asked: ``clean_up=False``).
    """

    alias: str
    index: str
    previous: list[str]
    report: IngestReport
    deleted: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)
    cleanup: SwapCleanup | None = None


class AliasMovedError(RuntimeError):
    """Another run moved the alias while this one filled its index: this run's new index was
    deleted and the alias left as that run set it (``report``: this run's ingestion)."""

    def __init__(self, message: str, report: IngestReport) -> None:
        super().__init__(message)
        self.report = report


def moved_first(
    alias: str,
    name: str,
    previous: Sequence[str],
    aliases_now: Mapping[str, Any],
    error: Exception,
    report: IngestReport,
) -> AliasMovedError:
    """The error of a move that Elasticsearch refused because what it was to remove is gone
    (``aliases [news] missing``): another run moved the alias first. ``aliases_now`` is the
    get-alias answer of the alias after the refusal."""
    now = sorted(index for index in aliases_now if index not in ("error", "status"))
    before = ", ".join(previous) or "nothing"
    points = ", ".join(now) if now else "nothing"
    logger.info("%s: the move to %s was refused (%s)", alias, name, error)
    return AliasMovedError(
        f"another run moved the alias {alias!r} first: it points at {points} now, no longer at "
        f"{before}; the new index {name!r} of this run was deleted and the alias left as that "
        "run set it",
        report,
    )


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


def alias_targets(alias: str, status: int, body: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """From the get-mapping answer of ``alias`` (``status``, ``body``): the mappings of the indices
    it names, and whether it is a concrete index itself; ``({}, False)`` for nothing (404)."""
    if status == 404:
        return {}, False
    mappings = {name: index.get("mappings", {}) for name, index in body.items()}
    return mappings, alias in mappings


def check_replaceable(
    alias: str, current: Mapping[str, Any], concrete: bool, keep_old: bool
) -> None:
    """Refuse to turn into an alias an index that es-scm did not create, or one to keep."""
    if concrete and not _es_scm(current[alias]):
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


def swap_layout(
    current: Mapping[str, Any],
    text_analyzer: str | None,
    metadata_mapping: Mapping[str, Any] | str | None,
    expansion: str | None,
    shards: int,
    replicas: int,
    dense: DenseOptions | bool | None = None,
) -> IndexLayout:
    """The new index's layout: what is given, else what the alias's es-scm index has now (its
    dense vectors too, with the same encoder and index options, unless ``dense`` is False)."""
    inherited: dict[str, Any] = {"text_analyzer": None, "metadata_mapping": None}
    inherited["expansion"], inherited["dense"] = "query", None
    for mappings in current.values():
        if _es_scm(mappings):
            inherited = mapping_options(mappings)
            break
    mapping: Mapping[str, Any] | None
    if metadata_mapping is None:
        mapping = inherited["metadata_mapping"]
    elif isinstance(metadata_mapping, str):
        if metadata_mapping != FLATTENED:
            raise ValueError(f"metadata_mapping must be a mapping, None or {FLATTENED!r}")
        mapping = None
    else:
        mapping = metadata_mapping
    return IndexLayout(
        shards,
        replicas,
        inherited["text_analyzer"] if text_analyzer is None else text_analyzer,
        mapping,
        inherited["expansion"] if expansion is None else expansion,
        inherited["dense"] if dense is None else dense_options(dense),
    )


def move_actions(
    alias: str, name: str, previous: Sequence[str], concrete: bool
) -> list[dict[str, Any]]:
    """The actions of the one ``_aliases`` request that moves ``alias`` from ``previous`` to the
    new index ``name`` (and removes the index ``alias`` when it is one: ``concrete``)."""
    if concrete:
        actions: list[dict[str, Any]] = [{"remove_index": {"index": alias}}]
    else:
        actions = [
            {"remove": {"index": old, "alias": alias, "must_exist": True}} for old in previous
        ]
    actions.append({"add": {"index": name, "alias": alias, "is_write_index": True}})
    return actions


def retirement(
    alias: str,
    previous: Sequence[str],
    current: Mapping[str, Any],
    aliases: Mapping[str, Any],
) -> tuple[list[str], list[tuple[str, str]]]:
    """Which of the indices the alias left may be deleted, and which are kept and why.

    ``current`` holds their mappings (from before the move), ``aliases`` the get-alias answer of
    them after it. An index is kept if es-scm did not create it, or if another alias still uses
    it (es-scm's own hidden write alias does not count: it goes with its index).
    """
    deleted: list[str] = []
    kept: list[tuple[str, str]] = []
    for old in previous:
        others = sorted(
            name
            for name, properties in aliases.get(old, {}).get("aliases", {}).items()
            if name != alias and not is_write_alias(name, properties)
        )
        if not _es_scm(current[old]):
            kept.append((old, "not an es-scm index"))
        elif others:
            kept.append((old, f"still in use by the alias {others[0]!r}"))
        else:
            deleted.append(old)
    return deleted, kept


def _es_scm(mappings: Mapping[str, Any]) -> bool:
    return bool(mappings.get("_meta", {}).get("es_scm"))
