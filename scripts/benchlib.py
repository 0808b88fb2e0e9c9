"""Pieces shared by the benchmark scripts: the plain-bulk baseline, peak memory, provenance.

Every script that writes a results file records :func:`provenance` in it, the block that
``es-scm eval`` and ``es-scm tune`` write too (one implementation, in
:mod:`es_scm.evaluation.provenance`).
"""

from __future__ import annotations

import resource
import time
from typing import Any

from elasticsearch import Elasticsearch, helpers

from es_scm.evaluation.provenance import provenance as package_provenance


def plain_bulk(client: Elasticsearch, index: str, docs: list[dict], threads: int = 1) -> float:
    """Seconds to bulk the texts into a fresh text-only index: the ingestion baseline.

    ``threads=1`` is ``helpers.streaming_bulk``, what indexing texts plainly looks like;
    more is ``helpers.parallel_bulk`` with that many requests in flight.
    """
    client.options(ignore_status=404).indices.delete(index=index)
    client.indices.create(
        index=index,
        settings={"number_of_shards": 1, "number_of_replicas": 0},
        mappings={"properties": {"text": {"type": "text"}}},
    )
    actions = ({"_index": index, "_id": d["id"], "_source": {"text": d["text"]}} for d in docs)
    started = time.perf_counter()
    if threads == 1:
        results = helpers.streaming_bulk(client, actions, chunk_size=500, raise_on_error=False)
    else:
        results = helpers.parallel_bulk(
            client, actions, thread_count=threads, chunk_size=500, raise_on_error=False
        )
    for ok, item in results:
        if not ok:
            raise RuntimeError(f"plain bulk failed: {item}")
    client.indices.refresh(index=index)
    return time.perf_counter() - started


def peak_rss_mib() -> float:
    """This process's peak resident set size since it started (or exec'd), in MiB.

    Linux's ``VmHWM``, because ``getrusage``'s ``ru_maxrss`` survives ``exec``: a worker started by
    a big parent would report at least the parent's size. Elsewhere, ``ru_maxrss``.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def provenance(argv: list[str], client: Elasticsearch | None = None) -> dict[str, Any]:
    """How a results file was made: :func:`es_scm.evaluation.provenance.provenance` of a script.

    Parameters
    ----------
    argv : list of str
        The script's ``sys.argv``: recorded as ``python <argv>``.
    client : Elasticsearch, optional
        The cluster measured, whose version is recorded.

    Returns
    -------
    dict
        The block to write under ``"provenance"``, as ``es-scm eval`` and ``tune`` write it.
    """
    return package_provenance(["python", *argv], client)
