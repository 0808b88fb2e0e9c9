"""Small calls that every operation shares: a HEAD call with its reason, the cluster's version and
clause limit.

The answers are read by pure code (:mod:`es_scm.elastic.connection`); this module only asks.
"""

from __future__ import annotations

import operator
from typing import Any

from elasticsearch import ApiError, AsyncElasticsearch

from es_scm.elastic.connection import DEFAULT_MAX_CLAUSES, node_version
from es_scm.engines import engine_of

__all__ = ["cluster_max_clauses", "cluster_version", "head_call"]

# The GET that a HEAD call's method stands for.
_GET_OF_HEAD = {
    "exists": "get",
    "exists_source": "get_source",
    "indices.exists": "indices.get",
    "indices.exists_alias": "indices.get_alias",
    "indices.exists_index_template": "indices.get_index_template",
}


async def head_call(client: AsyncElasticsearch, method: str, **kwargs: Any) -> Any:
    """``client.<method>(**kwargs)``, a HEAD call (``"indices.exists"``...) with its reason.

    An answer to a HEAD request has no body, hence no reason: when it is refused (a missing
    privilege, a client too new for the server), the matching GET is sent, and its refusal,
    which says why, is raised instead.
    """
    try:
        return await operator.attrgetter(method)(client)(**kwargs)
    except ApiError as error:
        if error.body not in (None, ""):
            raise
        try:
            await operator.attrgetter(_GET_OF_HEAD[method])(client)(**kwargs)
        except ApiError as explained:  # the same refusal, with its reason
            raise explained from error
        raise


async def cluster_version(client: AsyncElasticsearch) -> str:
    """The version of a node of the cluster.

    Asks ``_nodes`` rather than ``GET /``: the minimal distribution that the local runner uses
    does not register the root endpoint.
    """
    nodes = await client.nodes.info(filter_path="nodes.*.version")
    return node_version(nodes.body)


async def cluster_max_clauses(client: AsyncElasticsearch) -> int:
    """The most clauses a query may have on every data node of the cluster, read where its
    engine keeps it (:meth:`~es_scm.engines.Engine.max_clauses`): on Elasticsearch
    from each node's heap and search threads
    (:func:`~es_scm.engines.clause_limit`), on OpenSearch from the cluster setting
    ``indices.query.bool.max_clause_count``; :data:`DEFAULT_MAX_CLAUSES` where they cannot be
    read (a restricted API key)."""
    engine = engine_of(client)
    try:
        if engine.clause_limit_source == "cluster_settings":
            settings = await client.cluster.get_settings(
                include_defaults=True,
                flat_settings=True,
                filter_path="*.indices*max_clause_count",
            )
            return engine.max_clauses({"settings": settings.body})
        stats = await client.nodes.stats(
            metric="jvm", filter_path="nodes.*.jvm.mem.heap_max_in_bytes"
        )
        info = await client.nodes.info(
            metric="thread_pool", filter_path="nodes.*.thread_pool.search"
        )
    except Exception:  # a restricted API key may not read node statistics
        return DEFAULT_MAX_CLAUSES
    return engine.max_clauses({"stats": stats.body, "info": info.body})
