"""What an index is made of and how documents are sent to it, as typed values checked once.

A public method takes its options as keyword arguments (explicit signatures); it turns them into
one of these frozen values at once, which says what is wrong with a bad one in one line, and the
layers below receive the value and check nothing again (a search's options are its method's
request: :mod:`es_scm.search.plan`):

* :class:`IndexLayout` — what a new index is made of (shards, replicas, analyzer, metadata
  mapping, the side of S, dense vectors);
* :class:`IngestOptions` — how documents are sent (batches, retries, requests in flight).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from es_scm.options import DenseOptions
from es_scm.options.defaults import DENSE_DEFAULTS, EXPANSIONS, MAX_REQUEST_BYTES
from es_scm.options.validation import NON_NEGATIVE_INT, POSITIVE_INT, Interval, Options, check

__all__ = ["MAX_REQUEST_BYTES", "IndexLayout", "IngestOptions", "dense_options"]

_SECONDS = Interval(float, 0.0, None)


@dataclass(frozen=True)
class IndexLayout:
    """What a new index is made of (see :meth:`~es_scm.elastic.index.IndexOperations.create`)."""

    shards: int = 1
    replicas: int = 0
    text_analyzer: str | None = None
    metadata_mapping: Mapping[str, Any] | None = None
    expansion: str = "query"
    dense: DenseOptions | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dense", dense_options(self.dense))
        object.__setattr__(self, "shards", check(self.shards, "shards", POSITIVE_INT))
        object.__setattr__(self, "replicas", check(self.replicas, "replicas", NON_NEGATIVE_INT))
        object.__setattr__(
            self, "expansion", check(self.expansion, "expansion", Options(EXPANSIONS))
        )


def dense_options(dense: Any) -> DenseOptions | None:
    """``dense=`` of an index's creation: None (or False), True (:data:`~es_scm.options.defaults.
    DENSE_DEFAULTS`) or a :class:`~es_scm.options.DenseOptions`."""
    if dense is None or dense is False:
        return None
    if dense is True:
        return DENSE_DEFAULTS
    if isinstance(dense, DenseOptions):
        return dense
    raise ValueError(
        "dense must be None, True (the default encoder, a flat field) or a "
        f"DenseOptions(encoder=..., index_options=...), got {type(dense).__name__}"
    )


@dataclass(frozen=True)
class IngestOptions:
    """How documents are sent (see :meth:`~es_scm.elastic.aio.AsyncSCMIndex.index_documents`
    and :mod:`es_scm.index.bulk`)."""

    batch_size: int = 500
    max_retries: int = 5
    initial_backoff: float = 1.0
    retry_budget: float = 60.0
    concurrency: int = 2
    max_request_bytes: int = MAX_REQUEST_BYTES
    max_backoff: float = 10.0

    def __post_init__(self) -> None:
        for name, constraint in (
            ("batch_size", POSITIVE_INT),
            ("max_retries", NON_NEGATIVE_INT),
            ("initial_backoff", _SECONDS),
            ("max_backoff", _SECONDS),
            ("retry_budget", _SECONDS),
            ("concurrency", POSITIVE_INT),
            ("max_request_bytes", POSITIVE_INT),
        ):
            object.__setattr__(self, name, check(getattr(self, name), name, constraint))
