"""The plans of an index's lifecycle: create, delete, force-merge, and the end of an ingestion.

Plans (:mod:`es_scm.elastic.calls`) that :class:`~es_scm.elastic.index.IndexOperations` and the
alias swap (:mod:`es_scm.elastic.aliases`) run; free of I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError, TransportError

from es_scm.elastic.calls import Call, Plan
from es_scm.elastic.connection import cluster_version_plan, error_reason
from es_scm.elastic.ingest_report import IngestReport
from es_scm.elastic.names import check_one_name
from es_scm.elastic.requests import IndexLayout
from es_scm.elastic.results import PartialResultError
from es_scm.elastic.schema import check_version, index_mapping, settings_for_version
from es_scm.elastic.target import require_whole
from es_scm.validation import POSITIVE_INT, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "counted",
    "create_index_plan",
    "delete_plan",
    "finish_plan",
    "layout_mapping",
    "optimize_plan",
]


def counted(response: Mapping[str, Any], name: str) -> int:
    """The count of a count response, once every shard answered it."""
    require_whole(response, f"the count of {name!r}")
    return int(response["count"])


def create_index_plan(name: str, model: SoftCosineModel, layout: IndexLayout) -> Plan[bool]:
    """Create index ``name`` for ``model`` as ``layout`` says; False if another process created
    it meanwhile (it is then checked against the model like any existing index).

    The settings and the mapping are those of the cluster's version
    (:func:`~es_scm.elastic.schema.settings_for_version`).
    """
    version = check_version((yield from cluster_version_plan()))
    settings = settings_for_version(version, shards=layout.shards, replicas=layout.replicas)
    mappings = layout_mapping(model, layout, version)
    try:
        yield Call("indices.create", {"index": name, "settings": settings, "mappings": mappings})
    except ApiError as error:
        if "resource_already_exists_exception" in error_reason(error):
            return False
        refused = _refused_mapping(error, layout.text_analyzer, layout.metadata_mapping)
        if refused is None:
            raise
        raise refused from error
    return True


def layout_mapping(
    model: SoftCosineModel, layout: IndexLayout, version: str | None = None
) -> dict[str, Any]:
    """The mapping of an index of ``model`` made as ``layout`` says (for the cluster's
    ``version``; without one, only checked: an analyzer or a metadata mapping that cannot be)."""
    return index_mapping(
        model,
        text_analyzer=layout.text_analyzer,
        metadata_mapping=layout.metadata_mapping,
        version=version,
        expansion=layout.expansion,
    )


def delete_plan(name: str) -> Plan:
    """Delete the index ``name`` that es-scm created; True if deleted, False if there was none.

    ``name`` must be one concrete index, named in full: a comma list, a wildcard pattern,
    ``_all`` or any invalid name is refused before any request, and an alias or an index without
    es-scm's ``_meta`` marker after reading its mapping. Elasticsearch's own guard
    (``action.destructive_requires_name``) is not relied upon: a cluster may have it off.

    Raises
    ------
    ValueError
        One line that names the refused value; nothing was deleted.
    """
    check_one_name(name)
    response = yield Call("indices.get_mapping", {"index": name}, {"ignore_status": 404})
    if response.meta.status == 404:
        return False
    mappings = response.body.get(name)
    if mappings is None:
        targets = ", ".join(sorted(response.body)) or "nothing"
        raise ValueError(
            f"refusing to delete {name!r}: it is an alias (of {targets}), not an index; es-scm "
            "deletes one index by its own name"
        )
    if not mappings.get("mappings", {}).get("_meta", {}).get("es_scm"):
        raise ValueError(f"refusing to delete {name!r}: es-scm did not create that index")
    # expand_wildcards=none: should the name become a pattern here, it matches nothing
    arguments = {"index": name, "expand_wildcards": "none"}
    deleted = yield Call("indices.delete", arguments, {"ignore_status": 404})
    return deleted.meta.status != 404


def optimize_plan(name: str, max_num_segments: int) -> Plan:
    """Force-merge ``name`` into ``max_num_segments`` segments, waiting, then refresh."""
    max_num_segments = check(max_num_segments, "max_num_segments", POSITIVE_INT)
    merge = {"index": name, "max_num_segments": max_num_segments, "wait_for_completion": True}
    yield Call("indices.forcemerge", merge, {"request_timeout": 3600})
    yield Call("indices.refresh", {"index": name})


def finish_plan(name: str, report: IngestReport, refresh: bool) -> Plan[None]:
    """Refresh (the documents become searchable now) and count, as far as allowed.

    The count reads what is refreshed, so a run that stopped is refreshed too. A refresh or
    count that fails is a warning of ``report``.
    """
    # A few retries: on a cluster the transport moves on to another node.
    quick = {"request_timeout": 10, "max_retries": 2}
    if refresh or report.stopped:
        try:
            yield Call("indices.refresh", {"index": name}, quick)
        except (ApiError, TransportError) as error:
            report.warnings.append(f"the final refresh failed ({_describe(error)})")
    try:
        response = yield Call("count", {"index": name}, quick)
        report.index_count = counted(response, name)
    except (ApiError, TransportError, PartialResultError) as error:
        report.warnings.append(f"the index could not be counted ({_describe(error)})")


def _refused_mapping(
    error: ApiError, text_analyzer: str | None, metadata_mapping: Mapping[str, Any] | None
) -> ValueError | None:
    """A one-line error for a mapping Elasticsearch refused because of an option, else None."""
    if error.meta.status != 400:
        return None
    reason = error_reason(error)
    if text_analyzer is not None and f"analyzer [{text_analyzer}]" in reason:
        return ValueError(
            f"unknown text analyzer {text_analyzer!r}: the cluster has no analyzer of that name "
            "(built in: standard, simple, whitespace, stop, keyword, pattern; language analyzers "
            "such as english come with the analysis-common module, or on the local runner with "
            "its es-scm-english plugin)"
        )
    if metadata_mapping is not None and "mapper_parsing_exception" in reason:
        return ValueError(f"Elasticsearch refused the metadata mapping: {reason}")
    return None


def _describe(error: Exception) -> str:
    if isinstance(error, ApiError):
        return f"HTTP {error.meta.status}: {error_reason(error)}"
    if isinstance(error, PartialResultError):
        return str(error)
    return f"connection error: {' '.join(str(error).split())[:200]}"
