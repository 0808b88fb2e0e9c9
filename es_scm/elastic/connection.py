"""Clients configured like the official client, from arguments or the environment.

A client is made for the engine the cluster runs (:mod:`es_scm.engines`): an
``Elasticsearch`` for Elasticsearch, es-scm's OpenSearch client (elasticsearch-py's surface over
opensearch-py, :mod:`es_scm.elastic._async.opensearch`) for OpenSearch. The engine is named
(``engine=``, ``$ES_SCM_ENGINE``) or, by default, detected once from the cluster's answer to
one node's answer.

Environment variables (arguments take precedence):

``ES_URL``
    The cluster's URL, e.g. ``https://search.example.com:9200`` (default ``http://127.0.0.1:9200``,
    the local runner's); it may hold basic-auth credentials, ``https://user:password@host:9200``
    (read as :mod:`es_scm.elastic.credentials` says; the client gets the URL without them).
``ES_API_KEY``
    An API key (the encoded form Kibana shows, or ``id:key``).
``ES_USERNAME`` / ``ES_PASSWORD``
    Basic authentication.
``ES_CA_CERTS``
    A CA certificate bundle (PEM) to verify the cluster's TLS certificate.
``ES_VERIFY_CERTS``
    ``false`` to skip certificate verification (testing only).
``ES_SCM_ENGINE``
    ``elasticsearch``, ``opensearch``, or ``auto`` (the default: asked of the cluster).
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Mapping
from typing import Any

from elastic_transport import TransportError
from elasticsearch import Elasticsearch

from es_scm.elastic.credentials import check_url
from es_scm.engines import (
    DEFAULT_MAX_CLAUSES,
    ENGINE_PROBE,
    OPENSEARCH,
    Engine,
    balanced,
    clause_limit,
    connection_detail,
    engine_named,
    engine_of_answer,
    error_reason,
    shorten_words,
    version_tuple,
)
from es_scm.extras import require

__all__ = [
    "DEFAULT_MAX_CLAUSES",
    "DEFAULT_URL",
    "balanced",
    "clause_limit",
    "client_from_env",
    "client_options",
    "connection_detail",
    "connection_options",
    "detect_engine",
    "engine_client",
    "error_reason",
    "fast_serializers",
    "node_version",
    "shorten_words",
    "version_tuple",
]

logger = logging.getLogger(__name__)
DEFAULT_URL = "http://127.0.0.1:9200"
_PROBE_TIMEOUT = 10.0  # seconds the engine's detection waits for the cluster's answer


def connection_options(
    url: str | None = None,
    *,
    api_key: str | None = None,
    username: str | None = None,
    password: str | None = None,
    ca_certs: str | None = None,
    verify_certs: bool | None = None,
) -> dict[str, Any]:
    """Resolve the keyword arguments for :class:`elasticsearch.Elasticsearch`.

    Each argument falls back to its environment variable (see the module docstring).

    Raises
    ------
    ValueError
        For an incomplete basic-auth pair, a missing CA file or a malformed URL (one line that
        names what is wrong, without the password: :func:`~es_scm.elastic.credentials.check_url`).
    """
    parts = check_url(url or os.environ.get("ES_URL") or DEFAULT_URL)
    options: dict[str, Any] = {"hosts": [parts.bare]}
    api_key = api_key or os.environ.get("ES_API_KEY")
    username = username or os.environ.get("ES_USERNAME") or parts.username
    password = password or os.environ.get("ES_PASSWORD") or parts.password
    if api_key:
        options["api_key"] = tuple(api_key.split(":", 1)) if ":" in api_key else api_key
    elif username or password:
        if not (username and password):
            raise ValueError("basic auth needs both a username and a password")
        options["basic_auth"] = (username, password)
    ca_certs = ca_certs or os.environ.get("ES_CA_CERTS")
    if ca_certs:
        if not os.path.isfile(ca_certs):
            raise ValueError(f"CA certificate file not found: {ca_certs!r}")
        options["ca_certs"] = ca_certs
    if verify_certs is None and os.environ.get("ES_VERIFY_CERTS"):
        verify_certs = os.environ["ES_VERIFY_CERTS"].lower() not in ("0", "false", "no")
    if verify_certs is not None:
        options["verify_certs"] = verify_certs
    return options


def fast_serializers() -> dict[str, Any] | None:
    """Serializers for every JSON mimetype the client uses, with orjson; None without it.

    The official client encodes requests (bulk bodies included) and decodes responses with the
    standard library's ``json``; with orjson (``pip install es-scm[fast]``) both are faster:
    the bulk bodies of ingestion, and the expanded queries and candidate vectors of search.
    """
    try:
        from elastic_transport import OrjsonSerializer  # defined only where orjson imports
    except ImportError:
        return None
    from elasticsearch.serializer import (
        CompatibilityModeJsonSerializer,
        CompatibilityModeNdjsonSerializer,
        JsonSerializer,
        NdjsonSerializer,
    )

    # the client's serializers, each with its own mimetype and defaults, encoding and decoding
    # with the transport's orjson functions
    methods = {
        "json_dumps": OrjsonSerializer.json_dumps,
        "json_loads": OrjsonSerializer.json_loads,
    }
    bases = (
        JsonSerializer,
        NdjsonSerializer,
        CompatibilityModeJsonSerializer,
        CompatibilityModeNdjsonSerializer,
    )
    serializers = {}
    for base in bases:
        fast = type(f"Orjson{base.__name__}", (base,), dict(methods))
        serializers[base.mimetype] = fast()
    return serializers


def client_from_env(
    url: str | None = None, *, engine: str | Engine | None = None, **kwargs: Any
) -> Elasticsearch:
    """A client of the cluster at ``url``, from arguments and the environment.

    Parameters
    ----------
    url : str, optional
        The cluster URL; defaults to ``$ES_URL``, then the local runner's URL.
    engine : {"auto", "elasticsearch", "opensearch"}, optional
        The cluster's engine; default ``$ES_SCM_ENGINE``, else ``auto``: asked of the cluster
        once, here (:func:`detect_engine`). For OpenSearch the client is es-scm's
        :class:`~es_scm.elastic._sync.opensearch.OpenSearchClient` (an ``Elasticsearch`` that
        talks through opensearch-py: ``pip install 'es-scm[opensearch]'``).
    **kwargs
        ``api_key``, ``username``, ``password``, ``ca_certs``, ``verify_certs`` as in
        :func:`connection_options`; any other keyword goes to the client unchanged.

    Examples
    --------
    >>> client = client_from_env("http://127.0.0.1:9200")  # doctest: +SKIP
    """
    options = client_options(url, **kwargs)
    return engine_client(engine_named(engine) or detect_engine(options), options)


def engine_client(engine: Engine, options: Mapping[str, Any]) -> Elasticsearch:
    """A sync client of ``engine`` with elasticsearch-py's surface, from the options of
    :func:`client_options`: an ``Elasticsearch`` whose transport checks that the cluster is
    Elasticsearch (:mod:`es_scm.elastic._async.transport`), or for OpenSearch es-scm's
    :class:`~es_scm.elastic._sync.opensearch.OpenSearchClient` over opensearch-py."""
    if engine.python_client == OPENSEARCH.python_client:
        require("opensearchpy", "OpenSearch")
        from es_scm.elastic._sync.opensearch import OpenSearchClient

        return OpenSearchClient.from_options(options)
    # a transport that checks the first answers are Elasticsearch's (es_scm.engines)
    from es_scm.elastic._sync.transport import ElasticsearchTransport

    return Elasticsearch(**{"transport_class": ElasticsearchTransport, **options})


def detect_engine(options: Mapping[str, Any]) -> Engine:
    """The engine of the cluster that ``options`` (:func:`client_options`) reach, from a node's
    answer (:data:`~es_scm.engines.ENGINE_PROBE`, read by
    :func:`~es_scm.engines.engine_of_answer`): one request, of a client of its own,
    waiting at most 10 s. It is sent as plain JSON by the client's transport, since
    elasticsearch-py's media types are refused by OpenSearch, and each engine answers it with a
    200. A cluster that does not answer is taken for Elasticsearch: the first request of the
    client made then says why."""
    timeout = min(_PROBE_TIMEOUT, options.get("request_timeout") or _PROBE_TIMEOUT)
    probe = Elasticsearch(**{**options, "request_timeout": timeout})
    status, headers, body = None, {}, None
    try:
        answer = probe.transport.perform_request(
            "GET", ENGINE_PROBE, headers=_probe_headers(options), max_retries=0
        )
        status, headers, body = answer.meta.status, dict(answer.meta.headers), answer.body
    except (TransportError, ValueError) as error:  # no answer, or not JSON
        logger.info("the engine could not be asked (%s): Elasticsearch assumed", error)
    finally:
        probe.close()
    found, version = engine_of_answer(status, headers, body)
    logger.info("%s %s", found.title, version or "(version not given)")
    return found


def _probe_headers(options: Mapping[str, Any]) -> dict[str, str]:
    """Plain JSON, and the credentials of ``options`` as the client would send them."""
    headers = {"accept": "application/json", **dict(options.get("headers") or {})}
    api_key, basic = options.get("api_key"), options.get("basic_auth")
    if api_key:
        encoded = ":".join(api_key).encode() if isinstance(api_key, tuple | list) else None
        headers["authorization"] = "ApiKey " + (
            base64.b64encode(encoded).decode() if encoded else str(api_key)
        )
    elif basic:
        pair = ":".join(basic).encode()
        headers["authorization"] = "Basic " + base64.b64encode(pair).decode()
    return headers


def client_options(url: str | None = None, **kwargs: Any) -> dict[str, Any]:
    """The keyword arguments of a client made by :func:`client_from_env` (sync or asyncio)."""
    keys = ("api_key", "username", "password", "ca_certs", "verify_certs")
    auth = {key: kwargs.pop(key) for key in keys if key in kwargs}
    options = connection_options(url, **auth)
    options.setdefault("request_timeout", 60)
    options.setdefault("retry_on_timeout", True)
    options.setdefault("max_retries", 3)
    if "serializer" not in kwargs and "serializers" not in kwargs:
        serializers = fast_serializers()
        if serializers:
            options["serializers"] = serializers
    options.update(kwargs)
    return options


def node_version(nodes: Mapping[str, Any]) -> str:
    """The version of a node of a ``_nodes`` answer (``filter_path="nodes.*.version"``)."""
    return str(next(iter(nodes["nodes"].values()))["version"])
