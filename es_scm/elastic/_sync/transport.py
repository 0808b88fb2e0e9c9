# Generated from es_scm/elastic/_async/transport.py by scripts/generate_sync.py: do not edit.
# Change the asyncio source and run `python scripts/generate_sync.py`.
"""elasticsearch-py's transport, with the engine of the cluster checked on its first answers.

elasticsearch-py refuses a 2xx answer without Elasticsearch's ``X-Elastic-Product`` header, in
one line ("the server is not Elasticsearch"), but reads any other answer: a web server's 404 page
to the model check read as "the index does not exist", its HTML as an error's reason. The
clients es-scm makes for Elasticsearch (:func:`~es_scm.elastic.connection.client_from_env`)
send through :class:`AsyncElasticsearchTransport`, which checks each answer until one is
Elasticsearch's (it carries the header: Elasticsearch marks every answer, errors included):

* an answer that is not JSON, to a request that asked for JSON only, is
  :class:`~es_scm.engines.NotASearchEngineError`, naming what answered (status and
  content type);
* an unmarked answer makes the transport ask the cluster what it is (the engine's probe,
  :data:`~es_scm.engines.ENGINE_PROBE`, one request, only then): OpenSearch is
  :class:`~es_scm.engines.EngineMismatchError`, naming both engines and the version;
  a 2xx answer of anything else is no engine's (Elasticsearch would have marked it); an
  unmarked error of anything else (a proxy's 502) is passed on as it is.

One dictionary lookup an answer until then, and nothing after. The sync
``ElasticsearchTransport`` is generated from this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from elastic_transport import NodeConfig, SerializationError, Transport, TransportApiResponse
from elastic_transport import TransportError as NoAnswer

from es_scm.engines import (
    ENGINE_PROBE,
    answered_json,
    engine_mismatch,
    expects_json,
    marked_elasticsearch,
    not_a_search_engine,
    product_of_answer,
)

__all__ = ["ElasticsearchTransport"]

_UNKNOWN_MEDIA = "Unknown mimetype"  # elastic_transport's refusal of an answer it cannot read
_PROBE_TIMEOUT = 10.0  # seconds the probe of a suspect answer waits


class ElasticsearchTransport(Transport):
    """elastic_transport's transport that checks its first answers for Elasticsearch's (the
    module docstring); its arguments are elastic_transport's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._verified = False  # an answer carried Elasticsearch's product header

    # elastic_transport's AsyncTransport overrides Transport's method with an ignore of its own:
    # mypy compares this one with the sync signature (the generated sync twin matches it)
    def perform_request(  # type: ignore[override, unused-ignore]
        self, method: str, target: str, **options: Any
    ) -> TransportApiResponse:
        """Send one request as elastic_transport does; until an answer is Elasticsearch's, an
        answer of another engine, or of no engine, raises its one-line error instead."""
        try:
            response = super().perform_request(method, target, **options)
        except SerializationError as error:
            if self._verified or not str(error).startswith(_UNKNOWN_MEDIA):
                raise
            media = str(error).rsplit(":", 1)[-1].strip()
            raise not_a_search_engine(
                self._url(None), method, target, None, {"content-type": media}
            ) from error
        if not self._verified:
            self._verified = self._verify(method, target, options, response)
        return response

    def _verify(
        self, method: str, target: str, options: Mapping[str, Any], response: TransportApiResponse
    ) -> bool:
        """Whether ``response`` shows the cluster to be Elasticsearch; raises when it shows
        another engine, or none."""
        meta = response.meta
        if marked_elasticsearch(meta.headers):
            return True
        url = self._url(meta.node)
        sent = options.get("headers")
        sent = dict(sent) if isinstance(sent, Mapping) else {}
        if response.body is not None and not answered_json(meta.headers):
            if expects_json(sent):
                raise not_a_search_engine(url, method, target, meta.status, meta.headers)
            return False
        found, version = self._probe(sent)
        if found == "opensearch":
            raise engine_mismatch("elasticsearch", "opensearch", url, version)
        if 200 <= meta.status < 300:
            raise not_a_search_engine(url, method, target, meta.status, meta.headers)
        return False

    def _probe(self, sent: Mapping[str, str]) -> tuple[str | None, str | None]:
        """The engine (its name) and version of the cluster, from its answer to the engine's
        probe (plain JSON, with the request's credentials); (None, None) without a node's
        answer."""
        headers = {k: v for k, v in sent.items() if k.lower() not in ("accept", "content-type")}
        headers["accept"] = "application/json"
        try:
            answer = super().perform_request(
                "GET",
                ENGINE_PROBE,
                headers=headers,
                max_retries=0,
                request_timeout=_PROBE_TIMEOUT,
            )
        except (NoAnswer, ValueError):
            return None, None
        status, headers_, body = answer.meta.status, dict(answer.meta.headers), answer.body
        if marked_elasticsearch(headers_) or not isinstance(body, Mapping):
            return None, None
        return product_of_answer(status, headers_, body)

    def _url(self, node: NodeConfig | None) -> str:
        """A node's URL (no credentials: they are headers), the first node's if none is
        given."""
        if node is None:
            nodes = list(self.node_pool.all())
            node = nodes[0].config if nodes else None
        if node is None:
            return "the cluster"
        return f"{node.scheme}://{node.host}:{node.port}{node.path_prefix}"
