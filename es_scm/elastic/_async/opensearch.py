"""OpenSearch behind elasticsearch-py's surface, so that es-scm has one searcher and one indexer.

es-scm's Elasticsearch layer calls elasticsearch-py: ``client.search(index=..., query=...)``,
``client.options(ignore_status=404)``, the bulk helpers; it reads answers' ``.body`` and
``.meta.status``, and catches ``ApiError``, ``NotFoundError``, the transport's
``ConnectionError``. opensearch-py has another surface (``body=``, ``ignore=``, plain dicts,
``TransportError.status_code``), and elasticsearch-py cannot talk to OpenSearch (it asks for
``compatible-with=9`` media types, which OpenSearch refuses with 406, and checks Elastic's
product header). So an :class:`AsyncOpenSearchClient` *is* an ``AsyncElasticsearch`` whose
transport, :class:`AsyncOpenSearchTransport`, sends every request through an opensearch-py
``AsyncOpenSearch`` client's connections:

* the first answers are checked until one is OpenSearch's, as elasticsearch-py checks
  Elasticsearch's product header: an answer marked ``X-Elastic-Product: Elasticsearch`` is
  :class:`~es_scm.engines.EngineMismatchError` (the cluster is Elasticsearch), and one
  that is not JSON where JSON was asked :class:`~es_scm.engines.NotASearchEngineError`
  (a web server, a proxy's page), each in one line that names the URL, before es-scm reads a
  word of it (an index request answered ``Unknown Similarity type [LegacyBM25]``, a search
  ``unknown query [rank_feature]``);
* elasticsearch-py builds each request (path, URL parameters, body) as it does for
  Elasticsearch — the REST API es-scm uses is the same on both engines
  (docs/OPENSEARCH-NOTES.md) — and reads each answer into the same responses and errors, with
  the same ``meta`` and ``body``: every caller and every error path of es-scm is shared;
* the transport sends plain ``application/json`` (and ``application/x-ndjson``) media types,
  and the client skips the product check;
* opensearch-py's connections send the request — its authentication (``http_auth``, AWS SigV4
  signers), TLS and node pool — with elasticsearch-py's per-request options
  (``request_timeout``, ``max_retries``, ``retry_on_status``, ``retry_on_timeout``, as
  ``client.options(...)`` sets them); a node that cannot be reached is marked dead and the
  request tried on the next, as elasticsearch-py's transport does.

An opensearch-py client given to es-scm's classes (``SCMIndex(OpenSearch(...), ...)``) is wrapped
by :func:`es_surface`; :func:`~es_scm.elastic.connection.client_from_env` makes one from a URL
when the cluster is OpenSearch (needs ``pip install 'es-scm[opensearch]'``). The sync
``OpenSearchClient`` is generated from this module.
"""

from __future__ import annotations

import base64
import contextlib
import re
import time
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import urlsplit

import elasticsearch.serializer
from elastic_transport import (
    ApiResponseMeta,
    HttpHeaders,
    NodeConfig,
    SerializerCollection,
    TransportApiResponse,
    TransportError,
)
from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout as TransportTimeout
from elastic_transport import TlsError as TransportTlsError
from elastic_transport.client_utils import DEFAULT
from elasticsearch import AsyncElasticsearch

from es_scm.engines import (
    answered_json,
    engine_mismatch,
    expects_json,
    marked_elasticsearch,
    not_a_search_engine,
)

__all__ = ["AsyncOpenSearchClient", "AsyncOpenSearchTransport", "es_surface"]

# elasticsearch-py's compatibility media types → the plain ones OpenSearch takes
_COMPATIBLE = re.compile(
    r"application/vnd\.elasticsearch\+([\w.-]+)(?:\s*;\s*compatible-with=\d+)?"
)
_EVERY_STATUS = range(100, 600)  # the connection returns every answer: the client reads the status
_CLIENT = "AsyncOpenSearch"  # opensearch-py's client class of this module's kind


def es_surface(client: Any) -> AsyncElasticsearch:
    """``client`` with elasticsearch-py's surface: an opensearch-py ``AsyncOpenSearch`` wrapped
    in an :class:`AsyncOpenSearchClient`; any other client as it is."""
    for kind in type(client).__mro__:
        if kind.__name__ == _CLIENT and kind.__module__.startswith("opensearchpy"):
            return AsyncOpenSearchClient(client)
    return cast(AsyncElasticsearch, client)


class AsyncOpenSearchTransport:
    """elasticsearch-py's transport, as its client calls it, over an opensearch-py client's
    connections (the module docstring).

    Parameters
    ----------
    opensearch : AsyncOpenSearch
        The opensearch-py client whose connections send the requests (its own retries are not
        used: this transport retries, with the options of each request).
    serializers : mapping of media type to serializer, optional
        Serializers beside elasticsearch-py's (e.g. orjson's,
        :func:`~es_scm.elastic.connection.fast_serializers`).
    request_timeout, max_retries, retry_on_status, retry_on_timeout
        The defaults of the requests, as elasticsearch-py's transport takes them.
    """

    def __init__(
        self,
        opensearch: Any,
        *,
        serializers: Mapping[str, Any] | None = None,
        request_timeout: float | None = None,
        max_retries: int = 3,
        retry_on_status: tuple[int, ...] = (429, 502, 503, 504),
        retry_on_timeout: bool = False,
    ) -> None:
        from opensearchpy import exceptions

        self.opensearch = opensearch
        self.serializers = SerializerCollection(
            {**elasticsearch.serializer.DEFAULT_SERIALIZERS, **(serializers or {})}
        )
        self.request_timeout = request_timeout
        self.max_retries = max_retries
        self.retry_on_status = tuple(retry_on_status)
        self.retry_on_timeout = retry_on_timeout
        self._timeout = exceptions.ConnectionTimeout
        self._tls = exceptions.SSLError
        self._unreachable = exceptions.ConnectionError
        self._nodes: dict[str, NodeConfig] = {}
        self._verified = False  # an answer showed the cluster to be OpenSearch

    async def perform_request(
        self,
        method: str,
        target: str,
        *,
        body: Any = None,
        headers: Any = DEFAULT,
        max_retries: Any = DEFAULT,
        retry_on_status: Any = DEFAULT,
        retry_on_timeout: Any = DEFAULT,
        request_timeout: Any = DEFAULT,
        **_: Any,
    ) -> TransportApiResponse:
        """Send one request (``target``: the path and query string); its answer's meta and
        deserialized body, whatever its status (the client raises on an error status)."""
        retries = self.max_retries if max_retries is DEFAULT else max_retries
        statuses = self.retry_on_status if retry_on_status is DEFAULT else retry_on_status
        on_timeout = self.retry_on_timeout if retry_on_timeout is DEFAULT else retry_on_timeout
        timeout = self.request_timeout if request_timeout is DEFAULT else request_timeout
        sent = plain_headers({} if headers is DEFAULT else headers)
        payload = None if body is None else self.serializers.dumps(body, sent.get("content-type"))
        transport = self.opensearch.transport
        prepare = getattr(transport, "_async_call", None)  # opensearch-py's lazy asyncio setup
        if prepare is not None:
            await prepare()
        errors: list[TransportError] = []
        last: TransportApiResponse | None = None
        for attempt in range(retries + 1):
            connection = transport.get_connection()
            started = time.perf_counter()
            try:
                status, raw_headers, data = await connection.perform_request(
                    method,
                    target,
                    None,
                    payload,
                    timeout=timeout,
                    ignore=_EVERY_STATUS,
                    headers=sent,
                )
            except self._unreachable as error:
                failure = self._failure(error)
                retry = on_timeout if isinstance(failure, TransportTimeout) else True
                retry = retry and not isinstance(failure, TransportTlsError)
                _mark_dead(transport, connection)
                if not retry or attempt >= retries:
                    if last is not None:  # an answer came before: more telling than no answer
                        return last
                    failure.errors = tuple(errors)
                    raise failure from error
                errors.append(failure)
                continue
            answered = {key.lower(): v for key, v in raw_headers.items()}
            if not self._verified:
                url = str(getattr(connection, "host", "OpenSearch"))  # no credentials in it
                self._verified = self._verify(url, method, target, status, answered, data, sent)
            meta = ApiResponseMeta(
                status=status,
                http_version="1.1",
                headers=HttpHeaders(answered),
                duration=time.perf_counter() - started,
                node=self._node(connection),
            )
            answer = TransportApiResponse(meta, self._body(method, meta, data))
            if status in statuses and attempt < retries:
                last = answer
                continue
            transport.connection_pool.mark_live(connection)
            return answer
        raise AssertionError("unreachable: the last attempt returns or raises")  # pragma: no cover

    async def close(self) -> None:
        """Close the opensearch-py client's connections."""
        await self.opensearch.close()

    @staticmethod
    def _verify(
        url: str,
        method: str,
        target: str,
        status: int,
        headers: Mapping[str, str],
        data: Any,
        sent: Mapping[str, str],
    ) -> bool:
        """Whether an answer shows the cluster to be OpenSearch (a JSON object without
        Elasticsearch's mark); an answer of Elasticsearch, or no engine's, raises its one-line
        error instead of being read."""
        if marked_elasticsearch(headers):
            raise engine_mismatch("opensearch", "elasticsearch", url)
        if not data:  # a HEAD answer, or an empty one: nothing to tell by
            return False
        head = data[:256]  # the start tells an object; the rest need not be decoded
        text = head.decode("utf-8", "replace") if isinstance(head, bytes) else str(head)
        # both engines answer a JSON object to a request that asks for JSON only
        if answered_json(headers) and text.lstrip()[:1] == "{":
            return True
        if expects_json(sent):
            raise not_a_search_engine(url, method, target, status, headers)
        return False

    def _body(self, method: str, meta: ApiResponseMeta, data: Any) -> Any:
        if method == "HEAD" or not data:
            return None
        return self.serializers.loads(data, meta.mimetype)

    def _failure(self, error: Exception) -> TransportError:
        """elastic_transport's error for an opensearch-py connection's failure."""
        message = " ".join(str(getattr(error, "error", None) or error).split())
        if isinstance(error, self._tls):
            return TransportTlsError(message)
        if isinstance(error, self._timeout):
            return TransportTimeout(message)
        return TransportConnectionError(message)

    def _node(self, connection: Any) -> NodeConfig:
        """The node of an opensearch-py connection, as elasticsearch-py names nodes."""
        host = str(getattr(connection, "host", "http://localhost:9200"))
        node = self._nodes.get(host)
        if node is None:
            parts = urlsplit(host)
            scheme = parts.scheme or "http"
            node = NodeConfig(
                scheme,
                parts.hostname or "localhost",
                parts.port or (443 if scheme == "https" else 9200),
                path_prefix=str(getattr(connection, "url_prefix", "") or ""),
            )
            self._nodes[host] = node
        return node


class AsyncOpenSearchClient(AsyncElasticsearch):
    """An ``AsyncElasticsearch`` that talks to OpenSearch through opensearch-py (the module
    docstring): give it an ``opensearchpy.AsyncOpenSearch``, or make it from es-scm's connection
    options (:meth:`from_options`). ``client.opensearch`` is the opensearch-py client.

    Examples
    --------
    >>> from opensearchpy import AsyncOpenSearch                     # doctest: +SKIP
    >>> client = AsyncOpenSearchClient(AsyncOpenSearch("http://127.0.0.1:9440"))  # doctest: +SKIP
    """

    #: The engine es-scm reads off the client (:func:`~es_scm.engines.engine_of`).
    es_scm_engine = "opensearch"

    def __init__(
        self,
        opensearch: Any = None,
        *,
        _transport: AsyncOpenSearchTransport | None = None,
        **transport_options: Any,
    ) -> None:
        if _transport is None:
            if opensearch is None:
                raise TypeError("AsyncOpenSearchClient needs an opensearch-py AsyncOpenSearch")
            _transport = AsyncOpenSearchTransport(opensearch, **transport_options)
        super().__init__(_transport=cast(Any, _transport))
        # Elasticsearch's product check does not apply: the transport talks to OpenSearch
        self._verified_elasticsearch = True

    @property
    def opensearch(self) -> Any:
        """The opensearch-py client whose connections send the requests."""
        return cast(AsyncOpenSearchTransport, self.transport).opensearch

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> AsyncOpenSearchClient:
        """A client from the keyword arguments of elasticsearch-py's client that
        :func:`~es_scm.elastic.connection.client_options` resolves (``hosts``, ``basic_auth``,
        ``api_key``, ``ca_certs``, ``verify_certs``, ``request_timeout``, ``max_retries``,
        ``retry_on_timeout``, ``retry_on_status``, ``serializers``)."""
        from opensearchpy import AsyncOpenSearch

        connection, transport = opensearch_arguments(options)
        return cls(AsyncOpenSearch(**connection), **transport)

    def __repr__(self) -> str:
        hosts = [str(getattr(c, "host", "?")) for c in _connections(self.opensearch)]
        return f"<{type(self).__name__}({hosts})>"


def opensearch_arguments(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The keyword arguments of opensearch-py's client and of :class:`AsyncOpenSearchTransport`
    for the keyword arguments of elasticsearch-py's client.

    Raises
    ------
    ValueError
        An option that has no counterpart on opensearch-py (``cloud_id``...), in one line.
    """
    options = dict(options)
    transport: dict[str, Any] = {
        key: options.pop(key)
        for key in ("request_timeout", "max_retries", "retry_on_timeout", "serializers")
        if key in options
    }
    if "retry_on_status" in options:
        status = options.pop("retry_on_status")
        transport["retry_on_status"] = (status,) if isinstance(status, int) else tuple(status)
    # as many connections a node as elasticsearch-py keeps (urllib3's default is one)
    connection: dict[str, Any] = {
        "hosts": options.pop("hosts"),
        "max_retries": 0,
        "pool_maxsize": options.pop("connections_per_node", 10),
    }
    if transport.get("request_timeout") is not None:
        connection["timeout"] = transport["request_timeout"]
    if "basic_auth" in options:
        connection["http_auth"] = tuple(options.pop("basic_auth"))
    headers = dict(options.pop("headers", None) or {})
    api_key = options.pop("api_key", None)
    if api_key:
        pair = ":".join(api_key) if isinstance(api_key, tuple | list) else None
        encoded = base64.b64encode(pair.encode()).decode() if pair else str(api_key)
        headers["authorization"] = f"ApiKey {encoded}"
    if headers:
        connection["headers"] = headers
    for same in ("ca_certs", "verify_certs", "client_cert", "client_key", "http_compress"):
        if same in options:
            connection[same] = options.pop(same)
    if "ssl_assert_hostname" in options:
        connection["ssl_assert_hostname"] = options.pop("ssl_assert_hostname")
    if options:
        names = ", ".join(sorted(options))
        raise ValueError(f"these client options have no OpenSearch counterpart: {names}")
    return connection, transport


def plain_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Request headers with elasticsearch-py's compatibility media types made plain
    (``application/vnd.elasticsearch+json; compatible-with=9`` → ``application/json``)."""
    return {key.lower(): _COMPATIBLE.sub(r"application/\1", v) for key, v in headers.items()}


def _mark_dead(transport: Any, connection: Any) -> None:
    # sniffing on failure may fail too: the request's own error is raised
    with contextlib.suppress(Exception):
        transport.mark_dead(connection)


def _connections(opensearch: Any) -> list[Any]:
    pool = getattr(opensearch.transport, "connection_pool", None)
    return list(getattr(pool, "connections", None) or [])
