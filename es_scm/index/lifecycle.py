"""A document's lifecycle after ingestion: delete by id (an upsert is ingestion itself).

Ingestion writes every document under its id, so sending a document again replaces it whole — an
upsert (:meth:`~es_scm.elastic.aio.AsyncSCMIndex.upsert`). Deleting is the other half:
:meth:`~es_scm.elastic.aio.AsyncSCMIndex.delete_documents` sends bulk ``delete`` actions
(:func:`deletion_arguments`, through the client's bulk helper) and reports, per id, whether it
was deleted, not there (``not_found``: deleting is idempotent, so a rerun after a failure is
safe) or failed (with Elasticsearch's reason). The index is refreshed at the end, so searches
stop finding the deleted documents at once. Pure code: the counting of each answer, and the
actions.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from es_scm.index.bulk import item_reason
from es_scm.index.ingest import MAX_ID_BYTES, RETRYABLE_STATUSES, SHOWN
from es_scm.options.validation import NON_NEGATIVE_INT, POSITIVE_INT, Interval, check

__all__ = ["DeleteReport", "deletion_arguments"]


@dataclass
class DeleteReport:
    """What a deletion did, id by id.

    ``requested`` counts the distinct ids asked for (``duplicates``: ids asked for again);
    each ended ``deleted``, ``not_found`` (nothing to delete: already deleted, or never
    indexed) or ``failed`` (``failures`` holds the ids and reasons; an invalid id fails without a
    request). The id lists keep the first 1,000; the counts are complete.
    """

    requested: int = 0
    deleted: int = 0
    not_found: int = 0
    failed: int = 0
    duplicates: int = 0
    seconds: float = 0.0
    not_found_ids: list[str] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No id failed (ids that were not found are fine: there was nothing to delete)."""
        return self.failed == 0

    def record(self, ok: bool, item: Mapping[str, Any]) -> None:
        """Count one result of a bulk deletion."""
        result = next(iter(item.values()))
        doc_id = str(result.get("_id"))
        if ok and result.get("result") == "deleted":
            self.deleted += 1
        elif result.get("result") == "not_found" and "error" not in result:
            self.not_found += 1
            if len(self.not_found_ids) < SHOWN:
                self.not_found_ids.append(doc_id)
        else:
            _fail(self, doc_id, item_reason(result))

    def summary(self) -> str:
        text = (
            f"deleted {self.deleted}, not found {self.not_found}, failed {self.failed} "
            f"of {self.requested} ids in {self.seconds:.1f}s"
        )
        if self.duplicates:
            text += f" ({self.duplicates} repeated id(s) counted once)"
        return text


def deletion_arguments(
    index: str,
    ids: Iterable[str | int],
    report: DeleteReport,
    *,
    batch_size: int,
    max_retries: int,
    initial_backoff: float,
) -> dict[str, Any]:
    """The arguments of the client's bulk helper (``streaming_bulk`` and its asyncio twin) that
    delete ``ids`` from ``index`` (an index, or an alias with one write index), ``batch_size``
    ids per request; pass each of its results to ``report.record``.

    ``ids`` (str, or int written in decimal as ingestion does) are read once, as the helper
    sends them; invalid ones fail in ``report`` without a request. A request or an id rejected
    with 429, 502, 503 or 504 is retried ``max_retries`` times, the first wait
    ``initial_backoff`` seconds (doubling), as in ingestion.
    """
    actions = (
        {"_op_type": "delete", "_index": index, "_id": doc_id} for doc_id in _valid_ids(ids, report)
    )
    return {
        "actions": actions,
        "chunk_size": check(batch_size, "batch_size", POSITIVE_INT),
        "raise_on_error": False,
        "raise_on_exception": True,
        "max_retries": check(max_retries, "max_retries", NON_NEGATIVE_INT),
        "initial_backoff": check(initial_backoff, "initial_backoff", Interval(float, 0.0, None)),
        "retry_on_status": RETRYABLE_STATUSES,
    }


def _valid_ids(ids: Iterable[str | int], report: DeleteReport) -> Iterator[str]:
    """The distinct valid ids, as strings; invalid ones fail in ``report`` without a request."""
    if isinstance(ids, str | bytes):
        raise ValueError("ids must be an iterable of ids, not a single string; use [id]")
    seen: set[str] = set()
    for value in ids:
        doc_id = str(int(value)) if _is_integer(value) else value
        key = doc_id if isinstance(doc_id, str) else repr(doc_id)
        if key in seen:
            report.duplicates += 1
            continue
        seen.add(key)
        report.requested += 1
        if not isinstance(doc_id, str) or not doc_id:
            _fail(report, repr(value), f"invalid id: an id is a non-empty string, got {value!r}")
        elif len(doc_id.encode("utf-8")) > MAX_ID_BYTES:
            _fail(report, doc_id, f"the id is over Elasticsearch's {MAX_ID_BYTES} bytes")
        else:
            yield doc_id


def _is_integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _fail(report: DeleteReport, doc_id: str, reason: str) -> None:
    report.failed += 1
    if len(report.failures) < SHOWN:
        report.failures.append((doc_id, reason))
