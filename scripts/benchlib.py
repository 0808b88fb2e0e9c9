"""Pieces shared by the benchmark scripts: the plain-bulk baseline and the machine description."""

from __future__ import annotations

import os
import platform
import resource
import time
from typing import Any

from elasticsearch import Elasticsearch, helpers

from es_scm.elastic.connection import cluster_version


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


def machine(client: Elasticsearch | None = None) -> dict[str, Any]:
    """What the numbers were measured on."""
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_average_at_end": os.getloadavg(),
    }
    if client is not None:
        info["elasticsearch"] = cluster_version(client)
    return info


def provenance(argv: list[str], client: Elasticsearch | None = None) -> dict[str, Any]:
    """How a results file was made: the command line, the git commit, the versions, the day."""
    import subprocess
    import sys
    from importlib import metadata

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], capture_output=True, text=True, check=True)
        except (OSError, subprocess.CalledProcessError):
            return "unknown"
        return done.stdout.strip()

    versions = {}
    for package in ("es-scm", "numpy", "scipy", "elasticsearch", "gensim", "ir-measures"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "command": " ".join(["python", *argv]),
        "git_commit": git("rev-parse", "HEAD"),
        "uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no")),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "versions": versions,
        "machine": machine(client),
        "executable": sys.executable,
    }
