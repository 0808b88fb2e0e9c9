"""The Elasticsearch index owned by es-scm: create, ingest (upsert), delete, search.

:class:`SCMIndex` puts the pieces of the Elasticsearch side together for one index and one
model: the schema (:mod:`es_scm.elastic.schema`), ingestion (:mod:`es_scm.elastic.ingest`),
deletion by id (:mod:`es_scm.elastic.lifecycle`) and search (:mod:`es_scm.elastic.searcher`).
The model is checked against the index once per object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from elasticsearch import ApiError, Elasticsearch, TransportError

from es_scm.defaults import MAX_QUERY_WORDS
from es_scm.documents import Document
from es_scm.elastic.calls import Call, Plan, run_sync, single
from es_scm.elastic.connection import cluster_version_plan, error_reason
from es_scm.elastic.ingest import DocumentIngester, IngestError, IngestReport
from es_scm.elastic.lifecycle import DeleteReport, delete_documents
from es_scm.elastic.query import QueryType
from es_scm.elastic.results import PartialResultError, SearchResult
from es_scm.elastic.schema import (
    check_model_plan,
    check_version,
    index_mapping,
    settings_for_version,
)
from es_scm.elastic.searcher import Searcher
from es_scm.elastic.target import require_whole
from es_scm.validation import NON_NEGATIVE_INT, POSITIVE_INT, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "SCMIndex",
    "check_one_name",
    "check_target_name",
    "counted",
    "create_plan",
    "delete_plan",
    "finish_plan",
    "validate_index_name",
]

_FORBIDDEN = set(' "\\/,|<>?*#:')


def validate_index_name(name: str) -> str:
    """An index name Elasticsearch accepts, checked before any request.

    Lower case, at most 255 bytes, not ``.`` or ``..``, not starting with ``-``, ``_`` or ``+``,
    and none of the characters ``space " \\ / , | < > ? * # :``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"an index name must be a non-empty string, got {name!r}")
    reasons = []
    if name != name.lower():
        reasons.append("it must be lower case")
    if set(name) & _FORBIDDEN:
        reasons.append('it must not contain spaces or any of " \\ / , | < > ? * # :')
    if name[0] in "-_+":
        reasons.append("it must not start with -, _ or +")
    if name in (".", ".."):
        reasons.append("it must not be . or ..")
    if len(name.encode("utf-8")) > 255:
        reasons.append("it must be at most 255 bytes")
    if reasons:
        raise ValueError(f"invalid index name {name!r}: {'; '.join(reasons)}")
    return name


def check_target_name(name: str) -> str:
    """A name to search (index, alias or pattern): lower case, none of ``space " \\ / | < > ?``."""
    if (
        not isinstance(name, str)
        or not name
        or name != name.lower()
        or set(name) & set(' "\\/|<>?')
    ):
        raise ValueError(f"invalid index name, alias or pattern {name!r}")
    return name


class SCMIndex:
    """An Elasticsearch index of soft cosine vectors: create, ingest, search, delete.

    Parameters
    ----------
    client : Elasticsearch
        An official client, e.g. from :func:`es_scm.client_from_env`.
    name : str
        The index name (or, for searching, an alias or pattern).
    model : SoftCosineModel
        The model that vectorizes documents and queries; the index records its ``model_id``.
    max_clauses : int, optional
        The most query clauses to send (default: the cluster's limit).
    query_type : {"sparse_vector", "bool"}
        How the expanded query is sent: a ``sparse_vector`` query (default) or a bool of boosted
        ``term`` queries; both score alike, the first is the smaller and faster request.
    max_query_words : int
        The most words a query may have (default :data:`~es_scm.defaults.MAX_QUERY_WORDS`; see
        :class:`~es_scm.elastic.searcher.SearcherBase`).

    Examples
    --------
    >>> index = SCMIndex(client, "news", model)            # doctest: +SKIP
    >>> index.create()                                     # doctest: +SKIP
    >>> report = index.index_documents([{"id": "1", "text": "Obama speaks to the media"}])
    ... # doctest: +SKIP
    >>> index.search("president greets the press", k=10)  # doctest: +SKIP
    """

    def __init__(
        self,
        client: Elasticsearch,
        name: str,
        model: SoftCosineModel,
        *,
        max_clauses: int | None = None,
        query_type: QueryType = "sparse_vector",
        max_query_words: int = MAX_QUERY_WORDS,
    ) -> None:
        check_target_name(name)
        self.client = client
        self.name = name
        self.model = model
        self._search_options = {
            "max_clauses": max_clauses,
            "query_type": query_type,
            "max_query_words": max_query_words,
        }
        self._searcher: Searcher | None = None
        # fail now on bad search options, not at the first search
        Searcher(client, name, model, **self._search_options)

    @property
    def searcher(self) -> Searcher:
        """The :class:`~es_scm.elastic.searcher.Searcher` of this index, made on first use."""
        if self._searcher is None:
            self._searcher = Searcher(self.client, self.name, self.model, **self._search_options)
        return self._searcher

    def exists(self) -> bool:
        return bool(run_sync(single(Call("indices.exists", {"index": self.name})), self.client))

    def create(
        self,
        *,
        shards: int = 1,
        replicas: int = 0,
        exist_ok: bool = False,
        text_analyzer: str | None = None,
        metadata_mapping: Mapping[str, Any] | None = None,
        expansion: str = "query",
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
        options = {"shards": shards, "replicas": replicas, "exist_ok": exist_ok}
        options.update(
            text_analyzer=text_analyzer, metadata_mapping=metadata_mapping, expansion=expansion
        )
        return run_sync(create_plan(self.name, self.model, options), self.client)

    def delete(self) -> bool:
        """Delete the index; return False if it did not exist.

        Only one index that es-scm created, named in full, is deleted (see :func:`delete_plan`).

        Raises
        ------
        ValueError
            The name is a comma list, a pattern, ``_all`` or an alias, or the index was not
            created by es-scm; nothing is deleted.
        """
        deleted = run_sync(delete_plan(self.name), self.client)
        self.searcher._forget_index()
        return deleted

    def check(self) -> dict[str, Any]:
        """Raise unless the index was built with this model; return its ``_meta.es_scm``."""
        meta, _ = run_sync(self.searcher._check_plan(), self.client)
        return meta

    def count(self) -> int:
        """The documents in the index; :class:`PartialResultError` if a shard did not answer."""
        return counted(self.client.count(index=self.name), self.name)

    def optimize(self, max_num_segments: int = 1) -> None:
        """Force-merge the index into ``max_num_segments`` segments (waits until done).

        An expanded query has hundreds of terms, and Lucene looks each one up and builds a
        scorer for it in every segment: on 100,000 paragraphs, one segment instead of twelve took
        ``exact`` searches from 21.9 to 15.2 ms at p50 (``scripts/bench_search.py``). Worth it
        for a corpus that no longer changes; merging a large index takes a while and needs
        temporary disk space.
        """
        run_sync(optimize_plan(self.name, max_num_segments), self.client)

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
    ) -> IngestReport:
        """Vectorize and bulk-index documents (see :class:`~es_scm.elastic.ingest.IngestReport`).

        ``documents`` are :class:`~es_scm.documents.Document` records or mappings
        ``{"id", "text", **metadata}``. The index is created if missing (``create=True``) and
        checked against the model once per :class:`SCMIndex`. ``concurrency`` bulk requests are
        in flight at once; a lost cluster or a red index is waited for ``retry_budget`` seconds (see
        :class:`~es_scm.elastic.ingest.DocumentIngester`). The report ends with the count the
        index holds; a refresh or count that Elasticsearch refuses is a warning, not an error.

        Raises
        ------
        IngestError
            When the run stops early (``error.report``: what was done, and the index count).
        IngestInterrupted
            On Ctrl-C, at once (``error.report``: what was done).
        """
        validate_index_name(self.name)
        if create:
            self.create(exist_ok=True)
        ingester = DocumentIngester(
            self.client,
            self.name,
            self.model,
            batch_size=batch_size,
            max_retries=max_retries,
            initial_backoff=initial_backoff,
            concurrency=concurrency,
            retry_budget=retry_budget,
            expansion=self.searcher.expansion,  # checks the index
        )
        try:
            report = ingester.run(documents, progress=progress)
        except IngestError as stopped:
            self._finish(stopped.report, refresh)
            raise
        self._finish(report, refresh)
        return report

    def upsert(
        self, documents: Iterable[Document | Mapping[str, Any]], **options: Any
    ) -> IngestReport:
        """Insert documents, or replace those whose id is indexed already: an upsert.

        Ingestion writes every document under its id, so this is :meth:`index_documents` (same
        options and report) under the name of what it does: a document sent again replaces the
        stored one whole (its text, vector and metadata; a metadata field left out is gone), and
        searches find the new version once the report is back. The report counts the replaced
        documents as ``updated``, the new ones as ``created``.
        """
        return self.index_documents(documents, **options)

    def delete_documents(
        self, ids: Iterable[str | int], *, refresh: bool = True, batch_size: int = 1000
    ) -> DeleteReport:
        """Delete documents by id; deleting an id that is not there reports it as not found.

        Idempotent: deleting again changes nothing and reports the ids ``not_found``. With
        ``refresh`` (default) searches stop finding them at once. See
        :func:`~es_scm.elastic.lifecycle.delete_documents`.

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
        self.searcher.check()
        return delete_documents(self.client, self.name, ids, batch_size=batch_size, refresh=refresh)

    def _finish(self, report: IngestReport, refresh: bool) -> None:
        run_sync(finish_plan(self.name, report, refresh), self.client)

    def search(self, query: str, k: int = 10, **options: Any) -> SearchResult:
        """Search: :meth:`es_scm.elastic.searcher.Searcher.search` (``mode``, ``from_``,
        ``filter``, ``explain``, and the hybrid options ``fusion``, ``alpha``, ``rrf_k``,
        ``depth``)."""
        return self.searcher.search(query, k, **options)

    def rescore(self, query: str, **kwargs: Any) -> SearchResult:
        """Rescore candidates with :meth:`es_scm.elastic.searcher.Searcher.rescore`."""
        return self.searcher.rescore(query, **kwargs)


def counted(response: Mapping[str, Any], name: str) -> int:
    """The count of a count response, once every shard answered it."""
    require_whole(response, f"the count of {name!r}")
    return int(response["count"])


def create_plan(name: str, model: SoftCosineModel, options: Mapping[str, Any]) -> Plan:
    """Create index ``name`` for ``model``; True if created, False if it existed (and matches).

    ``options``: the keyword arguments of :meth:`SCMIndex.create`. The settings and the mapping
    are those of the cluster's version (:func:`~es_scm.elastic.schema.settings_for_version`).
    """
    validate_index_name(name)
    shards = check(options.get("shards", 1), "shards", POSITIVE_INT)
    replicas = check(options.get("replicas", 0), "replicas", NON_NEGATIVE_INT)
    exist_ok = options.get("exist_ok", False)
    text_analyzer, metadata_mapping = options.get("text_analyzer"), options.get("metadata_mapping")
    expansion = options.get("expansion", "query")
    # checked before any request; made again below for the cluster's version
    index_mapping(
        model, text_analyzer=text_analyzer, metadata_mapping=metadata_mapping, expansion=expansion
    )
    if (yield Call("indices.exists", {"index": name})):
        if not exist_ok:
            raise ValueError(f"index {name!r} exists already (pass exist_ok=True)")
        yield from check_model_plan(name, model)
        return False
    version = check_version((yield from cluster_version_plan()))
    settings = settings_for_version(version, shards=shards, replicas=replicas)
    mappings = index_mapping(
        model,
        text_analyzer=text_analyzer,
        metadata_mapping=metadata_mapping,
        version=version,
        expansion=expansion,
    )
    try:
        yield Call("indices.create", {"index": name, "settings": settings, "mappings": mappings})
    except ApiError as error:  # another process created it meanwhile: use theirs
        reason = error_reason(error)
        if "resource_already_exists_exception" not in reason or not exist_ok:
            refused = _refused_mapping(error, text_analyzer, metadata_mapping)
            if refused is None:
                raise
            raise refused from error
        yield from check_model_plan(name, model)
        return False
    return True


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


def check_one_name(name: str, action: str = "delete", target: str = "index") -> str:
    """``name`` if it names one ``target`` in full; else one line saying why ``action`` is
    refused: a comma list, a wildcard pattern, ``_all``, or an invalid name."""
    if isinstance(name, str):
        many = None
        if "," in name:
            many = "a comma list"
        elif set(name) & set("*?"):
            many = "a wildcard pattern"
        elif name == "_all":
            many = "every index"
        if many:
            raise ValueError(
                f"refusing to {action} {name!r}: it names {many}, not one {target} named in full"
            )
    return validate_index_name(name)


def optimize_plan(name: str, max_num_segments: int) -> Plan:
    """Force-merge ``name`` into ``max_num_segments`` segments, waiting, then refresh."""
    max_num_segments = check(max_num_segments, "max_num_segments", POSITIVE_INT)
    merge = {"index": name, "max_num_segments": max_num_segments, "wait_for_completion": True}
    yield Call("indices.forcemerge", merge, {"request_timeout": 3600})
    yield Call("indices.refresh", {"index": name})


def finish_plan(name: str, report: IngestReport, refresh: bool) -> Plan:
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
