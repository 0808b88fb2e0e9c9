"""The Elasticsearch index owned by es-scm: create, ingest (upsert), delete; searched by its
searcher.

:class:`IndexOperations` puts the pieces of the Elasticsearch side together for one index and one
model: the schema (:mod:`es_scm.elastic.schema`), its lifecycle (:mod:`es_scm.elastic.indices`),
ingestion (:mod:`es_scm.elastic.ingest`) and deletion by id (:mod:`es_scm.elastic.lifecycle`).
It writes; ``index.searcher`` (a :class:`~es_scm.elastic.Searcher` of the same client, name and
model, sharing its model check) searches. Every operation is
written once, as a plan: :class:`SCMIndex` runs them on an ``Elasticsearch`` client,
:class:`AsyncSCMIndex` awaits them on an ``AsyncElasticsearch`` one (:mod:`es_scm.elastic.shells`).
The model is checked against the index once per object (and again when an answer shows that
the name stands for other indices now).

Requests: indexing into an existing index of one shard is four (the model check, which ids the
index holds, the bulk request that refreshes, the count); a warm search is one.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from es_scm.documents import Document
from es_scm.elastic._async.searcher import AsyncSearcher
from es_scm.elastic._sync.searcher import Searcher
from es_scm.elastic.calls import Call, Plan
from es_scm.elastic.indices import (
    counted,
    create_index_plan,
    delete_plan,
    finish_plan,
    layout_mapping,
    optimize_plan,
)
from es_scm.elastic.ingest import IngestError, Ingestion, IngestReport
from es_scm.elastic.lifecycle import DeleteReport, deletion
from es_scm.elastic.names import check_one_name, validate_index_name
from es_scm.elastic.requests import IndexLayout, IngestOptions
from es_scm.elastic.shells import AsyncAPI, SyncAPI, operation
from es_scm.elastic.target import Checked
from es_scm.validation import Boolean, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["AsyncSCMIndex", "IndexOperations", "SCMIndex"]


class IndexOperations:
    """An Elasticsearch index of soft cosine vectors: create, ingest, delete (the operations of
    :class:`SCMIndex` and :class:`AsyncSCMIndex`); ``searcher`` searches it.

    ``name`` is the index (or, for searching, an alias or pattern); the index records
    ``model``'s ``model_id``. ``searcher_options`` are the
    :class:`~es_scm.elastic.Searcher`'s (``max_clauses``, ``max_window``, ``query_type``,
    ``max_query_words``, ``filter_policy``).

    Examples
    --------
    >>> index = SCMIndex(client, "news", model)            # doctest: +SKIP
    >>> index.create()                                     # doctest: +SKIP
    >>> report = index.index_documents([{"id": "1", "text": "Obama speaks to the media"}])
    ... # doctest: +SKIP
    >>> index.searcher.search("president greets the press", k=10)  # doctest: +SKIP
    """

    searcher_type: type[Searcher] | type[AsyncSearcher] = Searcher

    def __init__(
        self, client: Any, name: str, model: SoftCosineModel, **searcher_options: Any
    ) -> None:
        #: The searcher of this index: same client, name and model, and one model check.
        self.searcher = self.searcher_type(client, name, model, **searcher_options)
        self.client = client
        self.model = model
        self.index = self.searcher.name
        self.target = self.searcher.target

    @property
    def name(self) -> str:
        """The index (or alias, or pattern)."""
        return self.index

    @operation
    def exists(self) -> Plan[bool]:
        """Whether an index (or alias) of this name exists."""
        return bool((yield Call("indices.exists", {"index": self.index})))

    @operation
    def create(
        self,
        *,
        shards: int = 1,
        replicas: int = 0,
        exist_ok: bool = False,
        text_analyzer: str | None = None,
        metadata_mapping: Mapping[str, Any] | None = None,
        expansion: str = "query",
    ) -> Plan[bool]:
        """Create the index with es-scm's mapping; return False if it existed (and matches).

        Parameters
        ----------
        shards, replicas : int
            Primary shards and replicas.
        exist_ok : bool
            Accept an existing index built with this model (its mapping is left as it is: the
            options below apply to new indices only).
        text_analyzer : str, optional
            The analyzer of the BM25 ``text`` field, e.g. ``"standard"`` (the default),
            ``"simple"``, ``"whitespace"``, ``"english"`` where the cluster has it.
        metadata_mapping : dict, optional
            Elasticsearch ``properties`` of the metadata fields, e.g.
            ``{"published": {"type": "date"}, "tags": {"type": "keyword"}}``: those fields are
            typed, and a document whose value does not fit fails with the reason; other fields
            are kept in ``_source`` unindexed. Default: every field a keyword (``flattened``),
            which never rejects a document for a type (see
            :func:`~es_scm.elastic.schema.metadata_field_mapping`).
        expansion : {"query", "documents"}
            Where S is applied. ``"query"`` (default): each search sends the O(mC) terms of the
            expanded query x' = SᵀWx. ``"documents"``: each document is stored with Sy' too and
            a search sends its m own terms, which is faster to search but makes the index and
            its ingestion several times larger and slower (``docs/BENCHMARKS.md``), and ties
            the index to S (a new S means reindexing). Scores and ``exact`` results are the
            same either way (:mod:`es_scm.elastic.query`).

        Raises
        ------
        ValueError
            An invalid option; an analyzer the cluster does not have, or a mapping it refuses
            (one line that names it); an existing index without ``exist_ok``.
        """
        layout = IndexLayout(shards, replicas, text_analyzer, metadata_mapping, expansion)
        return (yield from self._create_plan(layout, check(exist_ok, "exist_ok", Boolean())))

    @operation
    def delete(self) -> Plan[bool]:
        """Delete the index; return False if it did not exist.

        Only one index that es-scm created, named in full, is deleted (see
        :func:`~es_scm.elastic.indices.delete_plan`).

        Raises
        ------
        ValueError
            The name is a comma list, a pattern, ``_all`` or an alias, or the index was not
            created by es-scm; nothing is deleted.
        """
        deleted = yield from delete_plan(self.index)
        self.target.forget()
        return deleted

    @operation
    def count(self) -> Plan[int]:
        """The documents in the index; :class:`PartialResultError` if a shard did not answer."""
        return counted((yield Call("count", {"index": self.index})), self.index)

    @operation
    def optimize(self, max_num_segments: int = 1) -> Plan[None]:
        """Force-merge the index into ``max_num_segments`` segments (waits until done).

        An expanded query has hundreds of terms, and Lucene looks each one up and builds a
        scorer for it in every segment: on 100,000 paragraphs, one segment instead of twelve took
        ``exact`` searches from 21.9 to 15.2 ms at p50 (``scripts/bench_search.py``). Worth it
        for a corpus that no longer changes; merging a large index takes a while and needs
        temporary disk space.
        """
        yield from optimize_plan(self.index, max_num_segments)

    @operation
    def index_documents(
        self,
        documents: Iterable[Document | Mapping[str, Any]],
        *,
        batch_size: int = 500,
        max_retries: int = 5,
        initial_backoff: float = 1.0,
        retry_budget: float = 60.0,
        create: bool = True,
        refresh: bool = True,
        progress: Any = None,
        concurrency: int = 2,
    ) -> Plan[IngestReport]:
        """Vectorize and bulk-index documents (see :class:`~es_scm.elastic.ingest.IngestReport`).

        ``documents`` are :class:`~es_scm.documents.Document` records or mappings
        ``{"id", "text", **metadata}`` (the asyncio API also takes an async iterable). The index
        is created if missing (``create=True``) and checked against the model once per object.
        ``concurrency`` bulk requests are in flight at once; a lost cluster or a red index is
        waited for ``retry_budget`` seconds (see :mod:`es_scm.elastic.ingest`). With
        ``refresh``, the documents are searchable when the report is back; the report ends with
        the count the index holds (a refresh or count that Elasticsearch refuses is a warning,
        not an error). ``progress`` is an object with ``update(n)``, e.g. a tqdm bar.

        Raises
        ------
        IngestError
            When the run stops early (``error.report``: what was done, and the index count).
        IngestInterrupted
            On Ctrl-C (``error.report``: what was done); a cancelled asyncio task logs the
            counts and is cancelled.
        """
        options = IngestOptions(batch_size, max_retries, initial_backoff, retry_budget, concurrency)
        refresh = check(refresh, "refresh", Boolean())
        validate_index_name(self.index)
        fresh = False
        if check(create, "create", Boolean()):
            fresh = yield from self._create_plan(IndexLayout(), exist_ok=True)
        return (yield from self._ingest_plan(documents, options, fresh, refresh, progress))

    upsert = index_documents.renamed(
        "upsert",
        """Insert documents, or replace those whose id is indexed already: an upsert.

        Ingestion writes every document under its id, so this is :meth:`index_documents` (same
        options and report) under the name of what it does: a document sent again replaces the
        stored one whole (its text, vector and metadata; a metadata field left out is gone), and
        searches find the new version once the report is back. The report counts the replaced
        documents as ``updated``, the new ones as ``created``.
        """,
    )

    @operation
    def delete_documents(
        self,
        ids: Iterable[str | int],
        *,
        batch_size: int = 1000,
        max_retries: int = 5,
        initial_backoff: float = 1.0,
        refresh: bool = True,
    ) -> Plan[DeleteReport]:
        """Delete documents by id; deleting an id that is not there reports it as not found.

        Idempotent: deleting again changes nothing and reports the ids ``not_found``; a rerun
        after a failure is safe. ``ids`` (str, or int written in decimal as ingestion does) are
        read once, ``batch_size`` per request; a request or an id rejected with 429, 502, 503 or
        504 is retried ``max_retries`` times, the first wait ``initial_backoff`` seconds
        (doubling), as in ingestion. With ``refresh`` (default) searches stop finding them at
        once.

        Raises
        ------
        ValueError
            The name is a comma list, a pattern or ``_all`` (one index or alias only).
        IndexNotFoundError
            If the index does not exist.
        ModelMismatchError
            If the index is not an es-scm index of this model.
        """
        check_one_name(self.index, "delete documents from", "index or alias")
        refresh = check(refresh, "refresh", Boolean())
        yield from self._checked_plan()  # another model's index: an error
        report = DeleteReport()
        started = time.perf_counter()
        yield deletion(self.index, ids, report, batch_size, (max_retries, initial_backoff))
        if refresh and report.deleted:
            yield Call("indices.refresh", {"index": self.index})
        report.seconds = time.perf_counter() - started
        return report

    # -- the plans behind the operations ---------------------------------------------------------

    def _create_plan(self, layout: IndexLayout, exist_ok: bool) -> Plan[bool]:
        """Create the index as ``layout`` says unless it exists; True if created. An existing
        index is checked against the model by the same request that finds it."""
        validate_index_name(self.index)
        layout_mapping(self.model, layout)  # a bad analyzer or mapping: before any request
        response = yield Call("indices.get", {"index": self.index}, {"ignore_status": 404})
        if response.meta.status != 404:
            if not exist_ok:
                raise ValueError(f"index {self.index!r} exists already (pass exist_ok=True)")
            self.target.accept(response)
            return False
        if (yield from create_index_plan(self.index, self.model, layout)):
            self.target.created(layout.shards, layout.expansion)
            return True
        if not exist_ok:  # another process created it meanwhile
            raise ValueError(f"index {self.index!r} exists already (pass exist_ok=True)")
        self.target.accept((yield self._get_index_call()))
        return False

    def _ingest_plan(
        self,
        documents: Any,
        options: IngestOptions,
        fresh: bool,
        refresh: bool,
        progress: Any,
    ) -> Plan[IngestReport]:
        """Ingest into the index (``fresh``: created by this run), then refresh and count."""
        checked = yield from self._checked_plan()
        target, expansion = checked.target, checked.expansion
        one_shard = target.shard_totals == {1}
        ingestion = Ingestion(
            self.index,
            self.model,
            options,
            expansion=expansion,
            fresh=fresh,
            serializable=self._serializable,
            refresh_last=refresh and one_shard,
        )
        try:
            report = yield from ingestion.run(documents, progress)
        except IngestError as stopped:
            yield from finish_plan(self.index, stopped.report, refresh)
            raise
        yield from finish_plan(self.index, report, refresh and not ingestion.refreshed)
        return report

    def _get_index_call(self) -> Call:
        return Call("indices.get", {"index": self.index}, {"ignore_status": 404})

    def _checked_plan(self) -> Plan[Checked]:
        """The model checked against the index, once (shared with the searcher)."""
        checked = self.target.checked
        if checked is None:
            _, checked = self.target.accept((yield self._get_index_call()))
        return checked

    def _serializable(self, value: Any) -> bool:
        """Whether the client's serializer writes ``value`` (dates, UUIDs, NumPy values...)."""
        serializer = self.client.transport.serializers.get_serializer("application/json")
        try:
            serializer.dumps(value)
        except Exception:  # the serializer's own error, or a TypeError of the value
            return False
        return True


class SCMIndex(IndexOperations, SyncAPI):
    """An es-scm index on an ``Elasticsearch`` client (the parameters and operations of
    :class:`IndexOperations`); ``searcher`` is a :class:`~es_scm.elastic.Searcher`."""

    searcher: Searcher


class AsyncSCMIndex(IndexOperations, AsyncAPI):
    """:class:`SCMIndex` on an ``AsyncElasticsearch`` client: the same operations, awaited;
    ``searcher`` is an :class:`~es_scm.elastic.aio.AsyncSearcher`.

    Vectorizing documents runs in a worker thread; ``documents`` may be an async iterable.
    """

    searcher: AsyncSearcher
    searcher_type = AsyncSearcher
