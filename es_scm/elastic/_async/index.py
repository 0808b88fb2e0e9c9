"""The index es-scm writes: create, ingest (upsert), count, optimize, delete documents, delete.

:class:`AsyncSCMIndex` (and its generated sync twin ``SCMIndex``) puts the write side together for
one index and one model: the schema (:mod:`es_scm.index.schema`), the index's lifecycle (the
functions below, with the decisions of :mod:`es_scm.index.indices`), ingestion
(:mod:`es_scm.elastic._async.ingest`) and deletion by id (:mod:`es_scm.index.lifecycle`). It
writes only: ``index.searcher`` is the searcher of the same client, name and model, which shares
its model check (made once per object, and again when an answer shows that the name stands for
other indices now) and its sentence encoder (an index with dense vectors: the one that encodes
the documents at ingestion encodes the queries, its identity checked once against ``_meta``).

Requests: indexing into an existing index of one shard is four (the model check, which ids the
index holds, the bulk request that refreshes, the count); into a new index five (the name found
free, the cluster's version, the creation, the bulk request, the count).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError, AsyncElasticsearch, TransportError
from elasticsearch.helpers import async_streaming_bulk

from es_scm.documents import Document
from es_scm.elastic._async.client import cluster_version, head_call
from es_scm.elastic._async.ingest import AsyncIngestion
from es_scm.elastic._async.searcher import AsyncSearcher
from es_scm.elastic.concurrency import AsyncStop
from es_scm.elastic.connection import error_reason
from es_scm.engines import engine_of
from es_scm.index.dense import dense_meta
from es_scm.index.indices import (
    WriteTarget,
    counted,
    deletable,
    describe,
    layout_mapping,
    new_write_alias,
    refused_mapping,
    write_target,
)
from es_scm.index.ingest import IngestError, IngestInterrupted, IngestReport
from es_scm.index.layout import MAX_REQUEST_BYTES, IndexLayout, IngestOptions, dense_options
from es_scm.index.lifecycle import DeleteReport, deletion_arguments
from es_scm.index.names import check_one_name, validate_index_name
from es_scm.index.schema import check_version, settings_for_version
from es_scm.options import DenseOptions
from es_scm.options.validation import POSITIVE_INT, Boolean, check
from es_scm.search.results import PartialResultError
from es_scm.search.target import Checked, TargetCheck

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["AsyncSCMIndex", "create_index", "delete_index", "finish", "optimize_index"]

Documents = Iterable[Document | Mapping[str, Any]] | AsyncIterable[Document | Mapping[str, Any]]
# the deletion's bulk helper retries, with its backoff; the transport does not
_NO_RETRY: dict[str, Any] = {"max_retries": 0, "retry_on_status": ()}


class AsyncSCMIndex:
    """An Elasticsearch index of soft cosine vectors, written with ``model``.

    Parameters
    ----------
    client : AsyncElasticsearch
        Or an opensearch-py ``AsyncOpenSearch`` (:mod:`es_scm.elastic._async.opensearch`), or a
        client of :func:`~es_scm.elastic.aio.async_client_from_env`, which detects the engine.
    name : str
        The index (an alias with a write index, for ingesting and deleting documents).
    model : SoftCosineModel
        The index records its ``model_id``; every write checks it.
    **searcher_options
        Those of :attr:`searcher` (``max_window``, ``query_type``, ``encoder``: the sentence
        encoder of an index with dense vectors, see :meth:`create`...).

    Examples
    --------
    >>> index = AsyncSCMIndex(client, "news", model)                      # doctest: +SKIP
    >>> await index.create()                                              # doctest: +SKIP
    >>> await index.index_documents([{"id": "1", "text": "Obama speaks to the media"}])
    ... # doctest: +SKIP
    >>> await index.searcher.search("president greets the press", k=10)  # doctest: +SKIP
    """

    def __init__(
        self, client: AsyncElasticsearch, name: str, model: SoftCosineModel, **searcher_options: Any
    ) -> None:
        #: The searcher of this index and model.
        self.searcher = AsyncSearcher(client, name, model, **searcher_options)
        #: The client, the model check and the dense vectors' encoder, shared with
        #: :attr:`searcher` (:mod:`es_scm.elastic._async.handle`).
        self.handle = self.searcher.handle
        self.client = self.handle.client
        self.model = model
        self._writes: tuple[str, str | None] | None = None  # the index written, its write alias
        self._alias_refused = False  # Elasticsearch refused the key the right to add one

    @property
    def name(self) -> str:
        """The index (or alias)."""
        return self.handle.name

    @property
    def target(self) -> TargetCheck:
        """The model check, shared with :attr:`searcher` (the handle's)."""
        return self.handle.target

    async def exists(self) -> bool:
        """Whether an index (or alias) of this name exists."""
        return bool(await head_call(self.client, "indices.exists", index=self.name))

    async def create(
        self,
        *,
        shards: int = 1,
        replicas: int = 0,
        exist_ok: bool = False,
        text_analyzer: str | None = None,
        metadata_mapping: Mapping[str, Any] | None = None,
        expansion: str = "query",
        dense: DenseOptions | bool | None = None,
    ) -> bool:
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
            :func:`~es_scm.index.schema.metadata_field_mapping`).
        expansion : {"query", "documents"}
            Where S is applied. ``"query"`` (default): each search sends the O(mC) terms of the
            expanded query x' = SᵀWx. ``"documents"``: each document is stored with Sy' too and
            a search sends its m own terms, which is faster to search but makes the index and
            its ingestion several times larger and slower (``docs/BENCHMARKS.md``), and ties
            the index to S (a new S means reindexing). Scores and exact results are the same
            either way (:mod:`es_scm.search.query`).
        dense : DenseOptions or bool, optional
            Dense vectors that es-scm computes, for hybrid search's kNN leg
            (:mod:`es_scm.index.dense`): ``True`` for
            :data:`~es_scm.options.defaults.DENSE_DEFAULTS` (all-MiniLM-L6-v2, a ``flat`` field:
            exact kNN), or ``DenseOptions(encoder=NAME_OR_FOLDER, index_options="flat" | "default" |
            ...)``. The index gets a ``dense_vector`` field ``scm.dense`` of the encoder's dimension
            (cosine, kept out of ``_source``) and records the encoder's name and identity in
            ``_meta.es_scm.dense``; every ingestion encodes the documents' texts with it (the
            encoder given to the index, ``encoder=``, if it bears that name; the model loads
            here, once). Needs the ``encoder`` extra. A field of your own instead:
            ``metadata_mapping={"embedding": {"type": "dense_vector", "dims": 384,
            "similarity": "cosine"}}``, filled by your documents' ``embedding``.

        The index gets its hidden write alias (:mod:`es_scm.index.indices`).

        Raises
        ------
        ValueError
            An invalid option; an analyzer the cluster does not have, or a mapping it refuses
            (one line that names it); an existing index without ``exist_ok``.
        """
        layout = IndexLayout(
            shards, replicas, text_analyzer, metadata_mapping, expansion, dense_options(dense)
        )
        return await self._create(layout, check(exist_ok, "exist_ok", Boolean()))

    async def delete(self) -> bool:
        """Delete the index; return False if it did not exist.

        Only one index that es-scm created, named in full, is deleted (see
        :func:`delete_index`).

        Raises
        ------
        ValueError
            The name is a comma list, a pattern, ``_all`` or an alias, or the index was not
            created by es-scm; nothing is deleted.
        """
        deleted = await delete_index(self.client, self.name)
        self.target.forget()
        self._writes = None
        self._alias_refused = False
        return deleted

    async def count(self) -> int:
        """The documents in the index; :class:`PartialResultError` if a shard did not answer."""
        return counted((await self.client.count(index=self.name)).body, self.name)

    async def optimize(self, max_num_segments: int = 1) -> None:
        """Force-merge the index into ``max_num_segments`` segments (waits until done).

        An expanded query has hundreds of terms, and Lucene looks each one up and builds a
        scorer for it in every segment: on 100,000 paragraphs, one segment instead of twelve took
        exact searches from 21.9 to 15.2 ms at p50 (``scripts/bench_search.py``). Worth it for a
        corpus that no longer changes; merging a large index takes a while and needs temporary
        disk space.
        """
        await optimize_index(self.client, self.name, max_num_segments)

    async def index_documents(
        self,
        documents: Documents,
        *,
        batch_size: int = 500,
        max_retries: int = 5,
        initial_backoff: float = 1.0,
        retry_budget: float = 60.0,
        create: bool = True,
        refresh: bool = True,
        progress: Any = None,
        concurrency: int = 2,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        stop: AsyncStop | None = None,
    ) -> IngestReport:
        """Vectorize and bulk-index documents (see :class:`~es_scm.index.ingest.IngestReport`).

        ``documents`` are :class:`~es_scm.documents.Document` records or mappings
        ``{"id", "text", **metadata}`` (the asyncio API also takes an async iterable). The index
        is created if missing (``create=True``) and checked against the model once per object.
        ``concurrency`` bulk requests of ``batch_size`` documents are in flight at once, none
        over ``max_request_bytes`` (a document larger than that fails alone, without a request);
        a document rejected with 429, 502 or 504 is retried ``max_retries`` times (waits
        doubling from ``initial_backoff``); a lost cluster or a red index is waited for
        ``retry_budget`` seconds (see :mod:`es_scm.elastic._async.ingest`). With ``refresh``,
        the documents are searchable when the report is back; the report ends with the count
        the index holds (a refresh or count that Elasticsearch refuses is a warning, not an
        error). ``progress`` is an object with ``update(n)``, e.g. a tqdm bar. ``stop`` (an
        :class:`~es_scm.elastic.concurrency.AsyncStop`, or ``Stop`` for ``SCMIndex``; a signal
        handler may set it) ends the run as an interruption does.

        Also ``upsert``: a document sent again replaces the stored one whole (its text, vector
        and metadata; a metadata field left out is gone), searches find the new version once
        the report is back, and the report counts it as ``updated`` (new ones as ``created``).

        Raises
        ------
        IngestError
            When the run stops early (``error.report``: what was done, and the index count).
        IngestInterrupted
            On Ctrl-C or ``stop`` (``error.report``: what was done, once the requests in
            flight returned); a cancelled asyncio task logs the counts and is cancelled.
        """
        options = IngestOptions(
            batch_size, max_retries, initial_backoff, retry_budget, concurrency, max_request_bytes
        )
        refresh = check(refresh, "refresh", Boolean())
        validate_index_name(self.name)
        fresh = False
        if check(create, "create", Boolean()):
            fresh = await self._create(IndexLayout(), exist_ok=True)
        return await self._ingest(documents, options, fresh, refresh, progress, stop)

    #: Insert documents, or replace those whose id is indexed already: :meth:`index_documents`
    #: under the name of what it does (ingestion writes every document under its id).
    upsert = index_documents

    async def delete_documents(
        self,
        ids: Iterable[str | int],
        *,
        batch_size: int = 1000,
        max_retries: int = 5,
        initial_backoff: float = 1.0,
        refresh: bool = True,
    ) -> DeleteReport:
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
        check_one_name(self.name, "delete documents from", "index or alias")
        refresh = check(refresh, "refresh", Boolean())
        await self._checked()  # another model's index: an error
        report = DeleteReport()
        started = time.perf_counter()
        arguments = deletion_arguments(
            self.name,
            ids,
            report,
            batch_size=batch_size,
            max_retries=max_retries,
            initial_backoff=initial_backoff,
        )
        async for ok, item in async_streaming_bulk(self.client.options(**_NO_RETRY), **arguments):
            report.record(ok, item)
        if refresh and report.deleted:
            await self.client.indices.refresh(index=self.name)
        report.seconds = time.perf_counter() - started
        return report

    # -- the steps ---------------------------------------------------------------------------

    async def _create(
        self, layout: IndexLayout, exist_ok: bool, swap: Mapping[str, Any] | None = None
    ) -> bool:
        """Create the index as ``layout`` says unless it exists; True if created. An existing
        index is checked against the model by the same request that finds it. ``swap``: the
        marker of an index made for a swap (:mod:`es_scm.index.swaps`), in its ``_meta``
        from its creation on."""
        validate_index_name(self.name)
        # a bad analyzer or mapping fails before any request; the mapping's fields are what a
        # filter may name once the index is created
        engine = self.handle.engine
        mappings = layout_mapping(self.model, layout, engine=engine)
        response = await self.handle.get_index()
        if response.meta.status != 404:
            if not exist_ok:
                raise ValueError(f"index {self.name!r} exists already (pass exist_ok=True)")
            self._accept(response)
            return False
        dense = None
        if layout.dense is not None:  # the encoder loaded: its dimension and identity recorded
            encoder, dims, identity = await self.handle.new_encoder(layout.dense)
            dense = dense_meta(encoder.name, identity, dims, layout.dense)
        created, alias = await create_index(
            self.client, self.name, self.model, layout, new_write_alias(self.name), dense, swap
        )
        if created:
            if dense is not None or swap is not None:  # the mapping made above, with them
                mappings = layout_mapping(self.model, layout, None, dense, swap, engine)
            self.target.created(layout.shards, layout.expansion, mappings)
            self._writes = (self.name, alias)
            self._alias_refused = alias is None
            return True
        if not exist_ok:  # another process created it meanwhile
            raise ValueError(f"index {self.name!r} exists already (pass exist_ok=True)")
        self._accept(await self.handle.get_index())
        return False

    def _accept(self, response: Any) -> None:
        """Check the model against a get-index answer of the name, and learn where to write."""
        self.target.accept(response)
        self._writes = write_target(self.name, response.body)

    async def _checked(self) -> Checked:
        """The indices behind the name and their side of S, the model checked (once)."""
        if self.target.checked is None or self._writes is None:
            self._accept(await self.handle.get_index())
        assert self.target.checked is not None
        return self.target.checked

    async def _write_target(self) -> WriteTarget:
        """Where the bulk requests go: the write alias of the index, added if it has none (an
        index of an older es-scm); the index itself where Elasticsearch refuses that."""
        await self._checked()
        assert self._writes is not None
        concrete, alias = self._writes
        if alias is None and not self._alias_refused:
            alias = new_write_alias(concrete)
            try:
                await self.client.indices.update_aliases(
                    actions=[{"add": {"index": concrete, "alias": alias, "is_hidden": True}}]
                )
            except ApiError:  # no right to manage aliases: the writes are not guarded (a warning)
                self._alias_refused = True
                alias = None
            self._writes = (concrete, alias)
        if alias is None:
            return WriteTarget(self.name, concrete, guarded=False)
        return WriteTarget(self.name, alias, guarded=True)

    async def _ingest(
        self,
        documents: Documents,
        options: IngestOptions,
        fresh: bool,
        refresh: bool,
        progress: Any,
        stop: AsyncStop | None,
    ) -> IngestReport:
        """Ingest into the index (``fresh``: created by this run), then refresh and count."""
        writer = await self._write_target()
        checked = await self._checked()
        encoder = None
        if checked.encoder is not None:  # es-scm's dense vectors: the index's encoder, checked
            encoder = await self.handle.index_encoder(checked)
        ingestion = AsyncIngestion(
            self.client,
            writer,
            self.model,
            options,
            expansion=checked.expansion,
            fresh=fresh,
            refresh_last=refresh and checked.target.shard_totals == {1},
            stop=stop,
            encoder=encoder,
        )
        if writer.warning is not None:
            ingestion.report.warnings.append(writer.warning)
        try:
            report = await ingestion.run(documents, progress)
        except IngestInterrupted as interrupted:  # what the index holds, unless told to hurry
            if not interrupted.abandoned:
                try:
                    await finish(self.client, self.name, interrupted.report, True)
                except KeyboardInterrupt:  # interrupted again: no count
                    interrupted.report.warnings.append("the index was not counted (interrupted)")
            raise
        except IngestError as stopped:
            await finish(self.client, self.name, stopped.report, refresh)
            raise
        await finish(self.client, self.name, report, refresh and not ingestion.refreshed)
        return report


async def create_index(
    client: AsyncElasticsearch,
    name: str,
    model: SoftCosineModel,
    layout: IndexLayout,
    write_alias: str,
    dense: Mapping[str, Any] | None = None,
    swap: Mapping[str, Any] | None = None,
) -> tuple[bool, str | None]:
    """Create index ``name`` for ``model`` as ``layout`` says, with its hidden ``write_alias``
    (and ``dense``, the record of the encoder of its dense vectors, when ``layout.dense``;
    ``swap``, the marker of an index made for a swap).

    Returns whether it was created (False: another process created it meanwhile) and its write
    alias: None where Elasticsearch refuses the key the right to make aliases (the index is made
    without one; its writes are then not guarded, :mod:`es_scm.index.indices`). The settings
    and the mapping are those of the cluster's engine and version
    (:func:`~es_scm.index.schema.settings_for_version`).
    """
    engine = engine_of(client)
    version = check_version(await cluster_version(client), engine)
    settings = settings_for_version(
        version, shards=layout.shards, replicas=layout.replicas, engine=engine
    )
    mappings = layout_mapping(model, layout, version, dense, swap, engine)
    alias: str | None = write_alias
    while True:
        aliases = {alias: {"is_hidden": True}} if alias else None
        try:
            await client.indices.create(
                index=name, settings=settings, mappings=mappings, aliases=aliases
            )
        except ApiError as error:
            reason = error_reason(error)
            if "resource_already_exists_exception" in reason:
                return False, None
            if alias and error.meta.status == 403 and "indices:admin/aliases" in reason:
                alias = None  # a key that may create indices but not manage aliases
                continue
            refused = refused_mapping(error, layout)
            if refused is None:
                raise
            raise refused from error
        return True, alias


async def delete_index(client: AsyncElasticsearch, name: str) -> bool:
    """Delete the index ``name`` that es-scm created; True if deleted, False if there was none.

    ``name`` must be one concrete index, named in full: a comma list, a wildcard pattern,
    ``_all`` or any invalid name is refused before any request, and an alias or an index without
    es-scm's ``_meta`` marker after reading its mapping
    (:func:`~es_scm.index.indices.deletable`). Elasticsearch's own guard
    (``action.destructive_requires_name``) is not relied upon: a cluster may have it off.

    Raises
    ------
    ValueError
        One line that names the refused value; nothing was deleted.
    """
    check_one_name(name)
    response = await client.options(ignore_status=404).indices.get_mapping(index=name)
    if not deletable(name, response.meta.status, response.body):
        return False
    # expand_wildcards=none: should the name become a pattern here, it matches nothing
    deleted = await client.options(ignore_status=404).indices.delete(
        index=name, expand_wildcards="none"
    )
    return deleted.meta.status != 404


async def optimize_index(client: AsyncElasticsearch, name: str, max_num_segments: int) -> None:
    """Force-merge ``name`` into ``max_num_segments`` segments, waiting, then refresh."""
    max_num_segments = check(max_num_segments, "max_num_segments", POSITIVE_INT)
    await client.options(request_timeout=3600).indices.forcemerge(
        index=name, max_num_segments=max_num_segments, wait_for_completion=True
    )
    await client.indices.refresh(index=name)


async def finish(
    client: AsyncElasticsearch, name: str, report: IngestReport, refresh: bool
) -> None:
    """Refresh (the documents become searchable now) and count, as far as allowed.

    The count reads what is refreshed, so a run that stopped is refreshed too. A refresh or
    count that fails is a warning of ``report``.
    """
    quick = client.options(request_timeout=10, max_retries=2)  # a cluster: another node
    if refresh or report.stopped:
        try:
            await quick.indices.refresh(index=name)
        except (ApiError, TransportError) as error:
            report.warnings.append(f"the final refresh failed ({describe(error)})")
    try:
        report.index_count = counted((await quick.count(index=name)).body, name)
    except (ApiError, TransportError, PartialResultError) as error:
        report.warnings.append(f"the index could not be counted ({describe(error)})")
