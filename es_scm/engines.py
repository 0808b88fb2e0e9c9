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
float32 the same way, so the bound of exact search (:mod:`es_scm.search.exact`) holds on both
unchanged (docs/OPENSEARCH-NOTES.md measured it bit for bit).

Which engine a client talks to is known from the client itself (:func:`engine_of`): es-scm's
OpenSearch client (:mod:`es_scm.elastic._async.opensearch`) says so, any other is
Elasticsearch's. Which engine a URL serves is read from a node's answer
(:func:`engine_of_answer`), once, when a client is made from a URL
(:func:`~es_scm.elastic.connection.client_from_env`), unless it is named (``engine=``,
``$ES_SCM_ENGINE``).

A named engine may be the wrong one, and a URL may reach no engine at all. So the transports of
es-scm's clients check their first answers against their engine until one is its own (the
section *what answered* below), as elasticsearch-py checks Elasticsearch's product header: the
other engine is :class:`EngineMismatchError`, a server that is no engine (a web server's page, a
proxy's) :class:`NotASearchEngineError`, each in one line naming the URL and what answered,
before es-scm reads the answer (``elastic/_async/opensearch.py``, ``elastic/_async/transport.py``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "ELASTICSEARCH",
    "ENGINES",
    "ENGINE_CHOICES",
    "ENGINE_PROBE",
    "ENGINE_VARIABLE",
    "JSON_MEDIA_TYPES",
    "OPENSEARCH",
    "TITLES",
    "DenseUnsupportedError",
    "Engine",
    "EngineError",
    "EngineMismatchError",
    "NotASearchEngineError",
    "UnsupportedVersionError",
    "answered_json",
    "balanced",
    "clause_limit",
    "connection_detail",
    "engine_mismatch",
    "engine_named",
    "engine_of",
    "engine_of_answer",
    "error_reason",
    "expects_json",
    "marked_elasticsearch",
    "not_a_search_engine",
    "product_of_answer",
    "shorten_words",
    "version_tuple",
]

#: Longer metadata strings are kept in ``_source`` but not indexed (Elasticsearch's
#: ``flattened``): a Lucene term holds at most 32,766 bytes, and a flattened field's term is the
#: key path, a separator and the value (≤ 4 bytes a character).
METADATA_IGNORE_ABOVE = 4096
DEFAULT_MAX_CLAUSES = 1024  # Lucene's historical limit, used when the cluster cannot be asked


# -- what answered: Elasticsearch, OpenSearch, or no search engine ----------------------------
#
# What answered at a cluster's URL: Elasticsearch, OpenSearch, or no search engine (pure).
#
# Elasticsearch marks every answer, errors included, with ``X-Elastic-Product: Elasticsearch``;
# OpenSearch marks none, and both answer es-scm's requests with JSON objects
# (docs/OPENSEARCH-NOTES.md, section 1). From that, read off one answer's status and headers:
#
# * :func:`marked_elasticsearch`: the answer is Elasticsearch's;
# * :func:`answered_json`, :func:`expects_json`: an answer that is not JSON to a request that
#   asked for JSON only (every request of es-scm's: ``_cat`` asks for text too) is no engine's —
#   a web server's page, a proxy's;
# * :func:`product_of_answer`: which engine answered :data:`ENGINE_PROBE`, and its version.
#
# The transports of es-scm's clients (``_async/transport.py`` for Elasticsearch,
# ``_async/opensearch.py`` for OpenSearch) check their first answers with these until one is their
# engine's, and raise :class:`EngineMismatchError` (:func:`engine_mismatch`) or
# :class:`NotASearchEngineError` (:func:`not_a_search_engine`) in one line naming the URL and what
# answered, before es-scm reads a word of it. When nothing answered, :func:`connection_detail`
# says how the connection failed in a few words, read from the client's nested errors.

#: The engines' names (``--engine``) and how messages call them.
TITLES = {"elasticsearch": "Elasticsearch", "opensearch": "OpenSearch"}
#: The variable that names the engine of the clusters es-scm connects to (``auto``: detected).
ENGINE_VARIABLE = "ES_SCM_ENGINE"
#: What :func:`~es_scm.elastic.connection.detect_engine` asks: a node's version and build
#: flavour (every Elasticsearch since 7 has one, OpenSearch none), answered by both engines.
ENGINE_PROBE = "/_nodes/_local?filter_path=nodes.*.version,nodes.*.build_flavor"
#: The media types of the answers of either engine to es-scm's requests (JSON, NDJSON and
#: Elasticsearch's compatibility forms of them).
JSON_MEDIA_TYPES = frozenset(
    {
        "application/json",
        "application/x-ndjson",
        "application/vnd.elasticsearch+json",
        "application/vnd.elasticsearch+x-ndjson",
    }
)


class EngineError(ValueError):
    """An engine that es-scm does not know, or a cluster that its engine's client cannot use."""


class EngineMismatchError(EngineError):
    """The cluster runs the other engine than the one its client was made for (named with
    ``engine=``, ``--engine`` or ``$ES_SCM_ENGINE``, or the kind of client given)."""


class NotASearchEngineError(EngineError):
    """What answered at the cluster's URL is neither Elasticsearch nor OpenSearch."""


def _header(headers: Mapping[str, str], name: str) -> str:
    return next((str(v) for k, v in headers.items() if k.lower() == name), "")


def marked_elasticsearch(headers: Mapping[str, str]) -> bool:
    """Whether an answer carries ``X-Elastic-Product: Elasticsearch``, which Elasticsearch puts
    on every answer (errors included) and OpenSearch on none."""
    return _header(headers, "x-elastic-product") == "Elasticsearch"


def answered_json(headers: Mapping[str, str]) -> bool:
    """Whether an answer's content type is JSON (or NDJSON), as both engines answer."""
    media = _header(headers, "content-type").split(";", 1)[0].strip().lower()
    return media in JSON_MEDIA_TYPES


def expects_json(headers: Mapping[str, str]) -> bool:
    """Whether a request accepts JSON only (every request of es-scm's; ``_cat`` asks for text
    too)."""
    accept = _header(headers, "accept").lower()
    return "json" in accept and "text/" not in accept


def product_of_answer(
    status: int | None, headers: Mapping[str, str], body: Any
) -> tuple[str, str | None]:
    """The name of the engine behind an answer to :data:`ENGINE_PROBE`, and its version.

    Elasticsearch marks every answer with ``X-elastic-product: Elasticsearch`` and gives its
    nodes a ``build_flavor``; OpenSearch does neither (docs/OPENSEARCH-NOTES.md, section 1). An
    answer that is not a node's (an error, a proxy's page) is taken for Elasticsearch, es-scm's
    default: the first request of the client made then says what is wrong.
    """
    nodes = body.get("nodes") if isinstance(body, Mapping) else None
    node = next(iter(nodes.values()), None) if isinstance(nodes, Mapping) else None
    version = str(node["version"]) if isinstance(node, Mapping) and "version" in node else None
    marked = marked_elasticsearch(headers)
    flavoured = isinstance(node, Mapping) and "build_flavor" in node
    if status == 200 and version is not None and not marked and not flavoured:
        return "opensearch", version
    return "elasticsearch", version


def engine_mismatch(
    expected: str, found: str, url: str, version: str | None = None
) -> EngineMismatchError:
    """The one-line error of a client made for the engine ``expected`` (a name of
    :data:`TITLES`) that reached ``found`` at ``url``."""
    made, there = TITLES[expected], TITLES[found]
    release = f" {version}" if version else ""
    return EngineMismatchError(
        f"the cluster at {url} is {there}{release}, not {made}: this client was made for "
        f"{made} (named with --engine, ${ENGINE_VARIABLE} or engine=, or by the kind of client "
        f"given to es-scm); name {found}, or auto to ask the cluster"
    )


def not_a_search_engine(
    url: str, method: str, target: str, status: int | None, headers: Mapping[str, str]
) -> NotASearchEngineError:
    """The one-line error of a server at ``url`` whose answer to ``method target`` (``status``,
    None if unknown; ``headers``) is no engine's."""
    media = _header(headers, "content-type").split(";", 1)[0].strip() or "no content type"
    path = target.split("?", 1)[0]
    answer = f"HTTP {status} ({media})" if status is not None else f"an answer of {media}"
    return NotASearchEngineError(
        f"the server at {url} is not Elasticsearch or OpenSearch: it answered {method} {path} "
        f"with {answer}, not the JSON object either engine answers; check the cluster's URL "
        "and port (--es-url, $ES_URL)"
    )


#: How a connection fails, as the clients' errors say it (urllib3's, aiohttp's), and in words:
#: the first one found is reported.
_CONNECTION_FAILURES = (
    ("connection refused", "connection refused"),
    ("[errno 111]", "connection refused"),  # ECONNREFUSED, as aiohttp says it
    ("name or service not known", "name or service not known"),
    ("no route to host", "no route to host"),
    ("connection reset", "connection reset"),
    ("remote end closed connection", "the node closed the connection"),
    ("server disconnected", "the node closed the connection"),
    ("timed out", "timed out"),
    ("timeout", "timed out"),
    ("network is unreachable", "network is unreachable"),
    ("cannot connect to host", "cannot connect"),
)


def connection_detail(error: BaseException, width: int = 160) -> str:
    """How a connection failed, in a few words (``connection refused``), from the client's
    error, whose message nests the reprs of the errors under it (and, through OpenSearch's
    transport, may keep the cause only in the errors of the earlier tries or the exception's
    cause); else its message, cut at a word and with its parentheses balanced, so that it reads
    whole inside parentheses."""
    text = " ".join(str(error).split()) or type(error).__name__
    told = [text]
    seen: list[BaseException] = [error]
    while seen and len(told) < 20:  # the tries' errors and the causes, a few levels down
        current = seen.pop()
        told.append(str(getattr(current, "message", "") or ""))  # a transport error's own
        for under in (*getattr(current, "errors", ()), current.__cause__, current.__context__):
            if isinstance(under, BaseException):
                told.append(str(under))
                seen.append(under)
    found = " ".join(told).lower()
    for needle, said in _CONNECTION_FAILURES:
        if needle in found:
            return said
    # the deepest message said, which nests no other error's repr
    deepest = next((t for t in reversed(told) if t.strip()), text)
    return balanced(shorten_words(deepest, width))


def balanced(text: str) -> str:
    """``text`` without the closing parentheses it does not open, and cut before an opening one
    it does not close (so that it reads whole inside parentheses of its own)."""
    kept: list[str] = []
    opened: list[int] = []  # where, in ``kept``, each open parenthesis is
    for character in text:
        if character == ")":
            if not opened:
                continue
            opened.pop()
        elif character == "(":
            opened.append(len(kept))
        kept.append(character)
    if opened:
        kept = kept[: opened[0]]
    return "".join(kept).rstrip(" ,;:")


def shorten_words(text: str, width: int) -> str:
    """``text`` cut at a word boundary to at most ``width`` characters, with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"


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
    its default (:meth:`~es_scm.search.query.ExpandedQuery.es_query`);
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
        :class:`~es_scm.index.schema.UnsupportedVersionError`."""
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


ELASTICSEARCH: Engine = _Elasticsearch(
    name="elasticsearch",
    title=TITLES["elasticsearch"],
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
    title=TITLES["opensearch"],
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


def engine_of_answer(
    status: int | None, headers: Mapping[str, str], body: Any
) -> tuple[Engine, str | None]:
    """The engine behind an answer to :data:`ENGINE_PROBE`, and its version
    (:func:`product_of_answer`: an answer that is not a node's is taken for Elasticsearch,
    es-scm's default)."""
    name, version = product_of_answer(status, headers, body)
    return ENGINES[name], version


# -- what an error answer says, on one line ---------------------------------------------------

# An older server's answer to a newer client's headers (compatible-with=9 to Elasticsearch 8).
_REFUSED_HEADERS = re.compile(
    r"Accept version must be either version (\d+) or \d+, but found (\d+)"
)
_MISSING_SHARDS = ("Search rejected due to missing shards", "no_shard_available_action_exception")
# elasticsearch-py's client refused by OpenSearch (its media types), or refusing OpenSearch's answer
_NOT_ELASTICSEARCH = ("compatible-with=", "server is not Elasticsearch")
_MORE_CAUSES = 2  # deeper causes added to the root cause's reason, at most


def error_reason(error: Exception) -> str:
    """The reason of an Elasticsearch error response, on one line: ``type: reason`` of its root
    cause, with what the deeper causes add (``caused_by``, the failed shards'); its message when
    the answer has no reason.

    A client too new for the server leads with that, and the install that fixes it; other known
    causes get what to do appended (a shard without an active copy, a cluster without the
    sparse_vector query).
    """
    body = getattr(error, "body", None)
    cause = body.get("error") if isinstance(body, Mapping) else None
    mismatch = _version_mismatch(str(error))
    if isinstance(cause, Mapping):
        text = _cause_text(cause, more=0 if mismatch else _MORE_CAUSES)
    elif body in (None, "") and getattr(error, "meta", None) is not None:
        text = "no reason given (the answer has no body)"
    else:
        text = " ".join(str(getattr(error, "message", None) or error).split())
    if mismatch:
        return f"{mismatch} ({text})"
    return text + _advice(f"{text} {error}")


def _version_mismatch(text: str) -> str | None:
    """The client and server majors and the fix, if ``text`` is a server refusing the client's
    compatibility headers; else None."""
    refused = _REFUSED_HEADERS.search(text)
    if refused is None:
        return None
    import elasticsearch  # the client's version, read only when the server refused it

    server, spoken = refused.groups()
    fix = (
        "pip install 'elasticsearch>=8.19,<9'"
        if server == "8"
        else "es-scm needs Elasticsearch 8.15 or newer"
    )
    return (
        f"the Python client elasticsearch {elasticsearch.__versionstr__} speaks Elasticsearch "
        f"{spoken}, which this Elasticsearch {server} server refuses: {fix}"
    )


def _cause_text(cause: Mapping[str, Any], more: int) -> str:
    """``type: reason`` of the most specific cause that has a reason, and up to ``more`` deeper
    ones."""
    roots = [root for root in cause.get("root_cause") or [] if isinstance(root, Mapping)]
    deeper = _caused_by(cause)
    for shard in cause.get("failed_shards") or []:
        reason = shard.get("reason") if isinstance(shard, Mapping) else None
        if isinstance(reason, Mapping):
            deeper += [reason, *_caused_by(reason)]
    explained = [c for c in [*roots, cause, *deeper] if c.get("reason")]
    if not explained:
        return str(next((c["type"] for c in [*roots, cause] if c.get("type")), "unknown error"))
    text = f"{explained[0].get('type') or cause.get('type')}: {explained[0]['reason']}"
    added = 0
    for extra in deeper:
        reason = extra.get("reason")
        if reason and reason not in text and added < more:
            text += f" (caused by {extra.get('type')}: {reason})"
            added += 1
    return " ".join(text.split())


def _caused_by(cause: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The chain of ``caused_by`` under ``cause``, outermost first."""
    chain: list[Mapping[str, Any]] = []
    while isinstance(cause.get("caused_by"), Mapping) and len(chain) < 10:
        cause = cause["caused_by"]
        chain.append(cause)
    return chain


def _advice(text: str) -> str:
    """What to do about a known cause found in ``text``; empty when none is known."""
    if any(marker in text for marker in _MISSING_SHARDS):
        return (
            "; a shard of the index has no active copy (the index is red), and es-scm never "
            "answers from part of an index: `GET _cluster/allocation/explain` says why"
        )
    if any(marker in text for marker in _NOT_ELASTICSEARCH):
        return (
            "; the cluster is not Elasticsearch (OpenSearch?): make the client with "
            "es_scm.client_from_env, which asks the cluster its engine, or give es-scm an "
            "opensearch-py client (pip install 'es-scm[opensearch]')"
        )
    if "unknown query [sparse_vector]" in text:
        return (
            "; this cluster lacks the sparse_vector query: up to 8.17 at least it comes with "
            "the machine-learning plugin, which minimal distributions leave out; search with "
            "query_type='bool'"
        )
    return ""
