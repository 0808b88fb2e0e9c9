"""The engines es-scm searches, Elasticsearch and OpenSearch: what differs, one description each.

Everything else — the query's expansion, exact search's windows and proof, the fusions, the
ingestion's outcomes, the explanations — is the same code for both. What differs is described
here once per engine, as an :class:`Engine`, and the rest of es-scm asks the engine:

- **the field of y' (and Sy')**: Elasticsearch's ``sparse_vector`` (``prune: false`` on 8.19+ and
  9.1+); OpenSearch's ``rank_features`` (module mapper-extras).
- **the weighted dot product Σ_j x'_j·q(y'_j)**: the ``sparse_vector`` query (or a ``bool`` of
  boosted ``term`` clauses); on OpenSearch a ``bool`` of ``rank_feature`` clauses, ``linear``,
  each boosted by x'_j.
- **the default ``metadata`` field**: ``flattened`` with ``ignore_above``; ``flat_object`` (no
  ``ignore_above``).
- **index settings**: ``exclude_source_vectors: false`` on Elasticsearch 9.2+; the
  ``LegacyBM25`` similarity on OpenSearch 3.x (Elasticsearch's BM25 scores).
- **the clause limit**: derived from each Elasticsearch node's heap and search threads
  (``_nodes``); OpenSearch's cluster setting ``indices.query.bool.max_clause_count``.
- **named queries' scores in an ``_msearch``**: Elasticsearch only (OpenSearch: ``_search``).
- **dense vectors and kNN**: Elasticsearch's ``dense_vector``; refused on OpenSearch (its k-NN
  plugin's ``knn_vector`` is not supported).
- **the oldest version**: Elasticsearch 8.15 (the ``sparse_vector`` query); OpenSearch 2.19 (the
  oldest tested).
- **the Python client**: elasticsearch-py; opensearch-py behind elasticsearch-py's surface.

Both store y' in Lucene's ``FeatureField`` (the same 9 significant bits) and sum the clauses in
float32 the same way, so the bound of exact search (:mod:`es_scm.elastic.windows`) holds on both
unchanged (docs/OPENSEARCH-NOTES.md measured it bit for bit).

Which engine a client talks to is known from the client itself (:func:`engine_of`): es-scm's
OpenSearch client (:mod:`es_scm.elastic._async.opensearch`) says so, any other is
Elasticsearch's. Which engine a URL serves is read from a node's answer
(:func:`engine_of_answer`), once, when a client is made from a URL
(:func:`~es_scm.elastic.connection.client_from_env`), unless it is named (``engine=``,
``$ES_SCM_ENGINE``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from es_scm.extras import require

__all__ = [
    "ELASTICSEARCH",
    "ENGINES",
    "ENGINE_CHOICES",
    "ENGINE_PROBE",
    "OPENSEARCH",
    "DenseUnsupportedError",
    "Engine",
    "EngineError",
    "UnsupportedVersionError",
    "clause_limit",
    "engine_named",
    "engine_of",
    "engine_of_answer",
    "version_tuple",
]

#: Longer metadata strings are kept in ``_source`` but not indexed (Elasticsearch's
#: ``flattened``): a Lucene term holds at most 32,766 bytes, and a flattened field's term is the
#: key path, a separator and the value (≤ 4 bytes a character).
METADATA_IGNORE_ABOVE = 4096
DEFAULT_MAX_CLAUSES = 1024  # Lucene's historical limit, used when the cluster cannot be asked
#: The variable that names the engine of the clusters es-scm connects to (``auto``: detected).
ENGINE_VARIABLE = "ES_SCM_ENGINE"


class EngineError(ValueError):
    """An engine that es-scm does not know, or a cluster that its engine's client cannot use."""


class DenseUnsupportedError(EngineError):
    """Dense vectors (an index's ``dense=``, a search's dense leg) on an engine without them."""


class UnsupportedVersionError(RuntimeError):
    """The cluster's engine is older than es-scm supports (:attr:`Engine.min_version`)."""


def version_tuple(version: str) -> tuple[int, ...]:
    """``"9.2.1-SNAPSHOT"`` → ``(9, 2, 1)``."""
    numbers = []
    for part in version.split("-")[0].split(".")[:3]:
        numbers.append(int(part) if part.isdigit() else 0)
    return tuple(numbers)


@dataclass(frozen=True)
class Engine:
    """What one engine does its own way (module docstring). Pure: it builds mappings, settings
    and names, and reads answers; it sends nothing.

    ``query_types`` are the forms of the weighted dot product the engine accepts, the first
    its default (:meth:`~es_scm.elastic.query.ExpandedQuery.es_query`);
    ``named_scores_in_msearch`` whether an ``_msearch`` reports named queries' scores (hybrid
    search then scores BM25 beside the SCM's search); ``dense_vectors`` whether es-scm can keep
    and search dense vectors there; ``clause_limit_source`` where the clause limit is read
    (``"nodes"``: each node's heap and search threads; ``"cluster_settings"``: one setting).
    """

    name: str
    title: str
    min_version: tuple[int, int]
    query_types: tuple[str, ...]
    metadata_type: str
    named_scores_in_msearch: bool
    dense_vectors: bool
    clause_limit_source: str
    python_client: str
    extra: str | None

    #: Why versions older than ``min_version`` are refused.
    oldest_because: ClassVar[str] = ""

    @property
    def query_type(self) -> str:
        """The default form of the weighted dot product."""
        return self.query_types[0]

    # -- the mapping and settings of an index -----------------------------------------------------

    def vector_field(self, version: str | None = None) -> dict[str, Any]:
        """The field of y' (and of Sy') for a cluster of ``version`` (None: the newest)."""
        raise NotImplementedError

    def metadata_field(self) -> dict[str, Any]:
        """The default ``metadata`` field: every leaf indexed as a keyword, none rejected for a
        type."""
        raise NotImplementedError

    def index_settings(self, version: str, *, shards: int, replicas: int) -> dict[str, Any]:
        """The settings of a new index on a cluster of ``version``."""
        return {"number_of_shards": shards, "number_of_replicas": replicas}

    def check_version(self, version: str) -> str:
        """``version`` if es-scm works with it on this engine, else
        :class:`~es_scm.elastic.schema.UnsupportedVersionError`."""
        if version_tuple(version) < self.min_version:
            oldest = ".".join(map(str, self.min_version))
            raise UnsupportedVersionError(
                f"{self.title} {version} is too old for es-scm, which needs {oldest} or newer "
                f"({self.oldest_because})"
            )
        return version

    def check_dense(self) -> None:
        """Nothing where dense vectors work; else :class:`DenseUnsupportedError`, one line."""
        if not self.dense_vectors:
            raise DenseUnsupportedError(
                f"dense vectors are not supported on {self.title}: es-scm's dense leg needs "
                "Elasticsearch's dense_vector field and kNN search (OpenSearch's k-NN plugin and "
                "its knn_vector field are not supported yet); search with method search, native, "
                "hybrid without dense=, or bm25"
            )

    def check_query_type(self, query_type: str | None) -> str:
        """``query_type`` (None: the default) if the engine accepts that form, else a one-line
        ``ValueError``."""
        if query_type is None:
            return self.query_type
        if query_type not in self.query_types:
            raise ValueError(
                f"query_type={query_type!r} is not a query form of {self.title}: it takes "
                f"{' or '.join(repr(t) for t in self.query_types)}"
            )
        return query_type

    def max_clauses(self, answers: Mapping[str, Any]) -> int:
        """The cluster's clause limit from the answers of :attr:`clause_limit_source`."""
        raise NotImplementedError

    # -- clients ----------------------------------------------------------------------------------

    def sync_client(self, options: Mapping[str, Any]) -> Any:
        """A sync client of this engine with elasticsearch-py's surface, from the options of
        :func:`~es_scm.elastic.connection.client_options`."""
        raise NotImplementedError

    def async_client(self, options: Mapping[str, Any]) -> Any:
        """The asyncio twin of :meth:`sync_client`."""
        raise NotImplementedError


def clause_limit(stats: Mapping[str, Any], info: Mapping[str, Any]) -> int:
    """The most clauses a query may have on every data node of an Elasticsearch cluster, from
    the nodes' heap (``_nodes/stats`` with ``metric="jvm"``) and search thread pool (``_nodes``
    with ``metric="thread_pool"``).

    Elasticsearch 8+ derives Lucene's clause limit from each node's heap and search thread pool
    (``max(1024, heap_MB · 64 / search_threads)``, ``SearchUtils.calculateMaxClauseValue``); the
    ``indices.query.bool.max_clause_count`` setting is deprecated and not applied. Newer versions
    take the heap in whole GB; this function uses the smaller of the two readings.
    """
    limits = []
    for node_id, node in stats.get("nodes", {}).items():
        heap_bytes = node["jvm"]["mem"]["heap_max_in_bytes"]
        pool = info["nodes"].get(node_id, {}).get("thread_pool", {}).get("search", {})
        threads = pool.get("max") or pool.get("size") or 0
        if threads <= 0 or heap_bytes <= 0:
            limits.append(DEFAULT_MAX_CLAUSES)
            continue
        by_mb = heap_bytes // 2**20 * 64 // threads
        by_whole_gb = heap_bytes // 2**30 * 65_536 // threads
        limits.append(max(DEFAULT_MAX_CLAUSES, min(by_mb, by_whole_gb)))
    return min(limits, default=DEFAULT_MAX_CLAUSES)


@dataclass(frozen=True)
class _Elasticsearch(Engine):
    oldest_because: ClassVar[str] = "the sparse_vector query"

    def vector_field(self, version: str | None = None) -> dict[str, Any]:
        """A ``sparse_vector``, never pruned: since 8.19 and 9.1 the field takes
        ``index_options``, and a new index prunes by default the tokens it deems
        insignificant; es-scm turns that off (every term counts in the SCM). Older versions
        have no such option and prune nothing."""
        mapping: dict[str, Any] = {"type": "sparse_vector"}
        release = version_tuple(version) if version is not None else (99,)
        if release >= (9, 1) or (8, 19) <= release < (9,):
            mapping["index_options"] = {"prune": False}
        return mapping

    def metadata_field(self) -> dict[str, Any]:
        return {"type": "flattened", "ignore_above": METADATA_IGNORE_ABOVE}

    def index_settings(self, version: str, *, shards: int, replicas: int) -> dict[str, Any]:
        """Since 9.2 Elasticsearch leaves ``sparse_vector`` values out of the stored
        ``_source`` (``index.mapping.exclude_source_vectors``) and rebuilds them with the
        index's 9-bit precision: es-scm keeps the exact values the rescorer reads."""
        settings = super().index_settings(version, shards=shards, replicas=replicas)
        if version_tuple(version) >= (9, 2):
            settings["index.mapping.exclude_source_vectors"] = False
        return settings

    def max_clauses(self, answers: Mapping[str, Any]) -> int:
        return clause_limit(answers["stats"], answers["info"])

    def sync_client(self, options: Mapping[str, Any]) -> Any:
        from elasticsearch import Elasticsearch

        return Elasticsearch(**options)

    def async_client(self, options: Mapping[str, Any]) -> Any:
        from elasticsearch import AsyncElasticsearch

        return AsyncElasticsearch(**options)


#: OpenSearch's own clause limit setting, and its default.
OPENSEARCH_CLAUSES = "indices.query.bool.max_clause_count"
_OPENSEARCH_DEFAULT_CLAUSES = 1024


@dataclass(frozen=True)
class _OpenSearch(Engine):
    oldest_because: ClassVar[str] = "the oldest release it is tested on; 3.x is supported too"

    def vector_field(self, version: str | None = None) -> dict[str, Any]:
        """``rank_features``: Lucene's ``FeatureField``, as Elasticsearch's ``sparse_vector``
        (the same 9 significant bits), which nothing prunes."""
        return {"type": "rank_features"}

    def metadata_field(self) -> dict[str, Any]:
        """``flat_object``, OpenSearch's ``flattened``: it takes no ``ignore_above``, so a leaf
        longer than Lucene's 32,766-byte term fails its document (reported)."""
        return {"type": "flat_object"}

    def index_settings(self, version: str, *, shards: int, replicas: int) -> dict[str, Any]:
        """From 3.0 OpenSearch's default similarity is Lucene's ``BM25Similarity``, whose scores
        are Elasticsearch's divided by k1 + 1 = 2.2 (the same ranking); ``LegacyBM25`` keeps the
        scores of 2.x and of Elasticsearch, so that BM25 scores and tuned weights mean the same
        on every engine. 2.x refuses that name (its default is that similarity)."""
        settings = super().index_settings(version, shards=shards, replicas=replicas)
        if version_tuple(version) >= (3,):
            settings["index.similarity.default.type"] = "LegacyBM25"
        return settings

    def max_clauses(self, answers: Mapping[str, Any]) -> int:
        """The clause limit of ``GET _cluster/settings?include_defaults&flat_settings``: the
        transient setting, else the persistent one, else the default."""
        settings = answers["settings"]
        for level in ("transient", "persistent", "defaults"):
            value = (settings.get(level) or {}).get(OPENSEARCH_CLAUSES)
            if value is not None:
                try:
                    return max(1, int(value))
                except (TypeError, ValueError):
                    break
        return _OPENSEARCH_DEFAULT_CLAUSES

    def sync_client(self, options: Mapping[str, Any]) -> Any:
        require("opensearchpy", "OpenSearch")
        from es_scm.elastic._sync.opensearch import OpenSearchClient

        return OpenSearchClient.from_options(options)

    def async_client(self, options: Mapping[str, Any]) -> Any:
        require("opensearchpy", "OpenSearch")
        from es_scm.elastic._async.opensearch import AsyncOpenSearchClient

        return AsyncOpenSearchClient.from_options(options)


ELASTICSEARCH: Engine = _Elasticsearch(
    name="elasticsearch",
    title="Elasticsearch",
    min_version=(8, 15),
    query_types=("sparse_vector", "bool"),
    metadata_type="flattened",
    named_scores_in_msearch=True,
    dense_vectors=True,
    clause_limit_source="nodes",
    python_client="elasticsearch",
    extra=None,
)
OPENSEARCH: Engine = _OpenSearch(
    name="opensearch",
    title="OpenSearch",
    min_version=(2, 19),
    query_types=("rank_feature",),
    metadata_type="flat_object",
    named_scores_in_msearch=False,
    dense_vectors=False,
    clause_limit_source="cluster_settings",
    python_client="opensearch-py",
    extra="opensearch",
)
#: The engines by name.
ENGINES: dict[str, Engine] = {engine.name: engine for engine in (ELASTICSEARCH, OPENSEARCH)}
#: What ``--engine`` and ``$ES_SCM_ENGINE`` take: an engine's name, or ``auto`` (detected).
ENGINE_CHOICES = ("auto", *ENGINES)


def engine_named(name: str | Engine | None) -> Engine | None:
    """The engine of a name (``engine=``; None or ``"auto"``: ``$ES_SCM_ENGINE``, else None, to
    be detected).

    Raises
    ------
    EngineError
        A name that is not one of :data:`ENGINE_CHOICES`, in one line.
    """
    if isinstance(name, Engine):
        return name
    if name is None or name == "auto":
        name = os.environ.get(ENGINE_VARIABLE) or "auto"
        where = f"${ENGINE_VARIABLE}"
    else:
        where = "engine"
    text = str(name).strip().lower()
    if text == "auto":
        return None
    if text not in ENGINES:
        raise EngineError(
            f"{where}={name!r} is not an engine es-scm knows: {', '.join(ENGINE_CHOICES)}"
        )
    return ENGINES[text]


def engine_of(client: Any) -> Engine:
    """The engine a client talks to: the one es-scm's OpenSearch client names
    (``es_scm_engine``), else Elasticsearch (an elasticsearch-py client)."""
    return ENGINES[getattr(client, "es_scm_engine", ELASTICSEARCH.name)]


#: What :func:`~es_scm.elastic.connection.detect_engine` asks: a node's version and build
#: flavour (every Elasticsearch since 7 has one, OpenSearch none), answered by both engines.
ENGINE_PROBE = "/_nodes/_local?filter_path=nodes.*.version,nodes.*.build_flavor"


def engine_of_answer(
    status: int | None, headers: Mapping[str, str], body: Any
) -> tuple[Engine, str | None]:
    """The engine behind an answer to :data:`ENGINE_PROBE`, and its version.

    Elasticsearch marks every answer with ``X-elastic-product: Elasticsearch`` and gives its
    nodes a ``build_flavor``; OpenSearch does neither (docs/OPENSEARCH-NOTES.md, section 1). An
    answer that is not a node's (an error, a proxy's page) is taken for Elasticsearch, es-scm's
    default: the first request of the client made then says what is wrong.
    """
    nodes = body.get("nodes") if isinstance(body, Mapping) else None
    node = next(iter(nodes.values()), None) if isinstance(nodes, Mapping) else None
    version = str(node["version"]) if isinstance(node, Mapping) and "version" in node else None
    marked = any(
        key.lower() == "x-elastic-product" and value == "Elasticsearch"
        for key, value in headers.items()
    )
    flavoured = isinstance(node, Mapping) and "build_flavor" in node
    if status == 200 and version is not None and not marked and not flavoured:
        return OPENSEARCH, version
    return ELASTICSEARCH, version
