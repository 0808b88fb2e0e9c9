"""How a results file was made: the one provenance block every writer of results records.

The block holds the command line, the git commit of the es-scm source the code was imported from
(and whether its tree had uncommitted changes), the versions of Python, es-scm, its libraries
and the Elasticsearch server (when a client is at hand), the machine, and the date in UTC.
``es-scm eval … --json``, ``--per-question``, ``es-scm tune --json`` and every script under
``scripts/`` (through ``scripts/benchlib.py``) write it.

Examples
--------
>>> block = provenance(["es-scm", "eval", "trec", "--collection", "cranfield"])
>>> block["command"]
'es-scm eval trec --collection cranfield'
>>> set(REQUIRED) <= set(block)
True
"""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from elasticsearch import ApiError, Elasticsearch, TransportError

from es_scm.elastic import cluster_version
from es_scm.elastic.credentials import redact
from es_scm.engines import engine_of

__all__ = [
    "KEY",
    "KEYED_FILE_KEY",
    "LIBRARIES",
    "REQUIRED",
    "git_state",
    "machine",
    "provenance",
    "utc_now",
    "versions",
]

KEY = "provenance"
"""Where a results file holds the block."""

KEYED_FILE_KEY = "_provenance"
"""Where a file keyed by ids (``--per-question``'s, keyed by question) holds it: no id clashes."""

REQUIRED = ("command", "git_commit", "date", "versions", "machine")
"""The keys every block has (``versions`` holds ``python`` and ``es-scm`` at least)."""

LIBRARIES = {
    "es-scm": "es-scm",
    "numpy": "numpy",
    "scipy": "scipy",
    "elasticsearch-client": "elasticsearch",
    "gensim": "gensim",
    "ir-measures": "ir-measures",
}
"""The versions recorded: the name in the block → the distribution's name."""

_SOURCE = Path(__file__).resolve().parents[2]  # the folder holding es_scm/ (a checkout, editable)


def provenance(
    command: Sequence[str],
    client: Elasticsearch | None = None,
    secrets: Sequence[str | None] = (),
) -> dict[str, Any]:
    """The provenance block of a results file written now.

    Parameters
    ----------
    command : sequence of str
        The command line, program included: ``["es-scm", *argv]`` or ``["python", *sys.argv]``.
    client : Elasticsearch, optional
        The cluster the numbers came from: its version is recorded (None when it cannot answer).
    secrets : sequence of str or None
        Credentials that may appear on the command line: recorded as ``***``.

    Returns
    -------
    dict
        ``command``, ``git_commit``, ``uncommitted_changes``, ``date`` (UTC), ``versions``
        (``python``, ``es-scm``, the libraries of :data:`LIBRARIES`, ``elasticsearch`` for the
        server), ``machine`` and ``executable``.
    """
    commit, dirty = git_state()
    return {
        "command": redact(shlex.join(command), list(secrets)),
        "git_commit": commit,
        "uncommitted_changes": dirty,
        "date": utc_now(),
        "versions": versions(client),
        "machine": machine(),
        "executable": sys.executable,
    }


def utc_now() -> str:
    """The date and time in UTC, as ``2026-11-25 18:46:05 UTC``."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())


def versions(client: Elasticsearch | None = None) -> dict[str, str | None]:
    """Python's version, es-scm's and its libraries' (None when not installed), the server's.

    ``elasticsearch`` is the server's version, None without a client or when it does not answer;
    ``elasticsearch-client`` is the Python client's. On OpenSearch the server's version is
    ``opensearch`` (``elasticsearch`` is None) and ``opensearch-client`` opensearch-py's.
    """
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name, distribution in LIBRARIES.items():
        try:
            found[name] = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            found[name] = None
    engine = engine_of(client)
    version = _server_version(client)
    if engine.python_client != "elasticsearch":  # OpenSearch, through its own client
        found["elasticsearch"] = None
        found[engine.name] = version
        found[f"{engine.name}-client"] = _library(engine.python_client)
        return found
    found["elasticsearch"] = version
    return found


def _library(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _server_version(client: Elasticsearch | None) -> str | None:
    """The cluster's version; None without a client, or when the cluster does not answer now."""
    if client is None:
        return None
    try:
        return cluster_version(client)
    except (ApiError, TransportError):  # the numbers are measured: do not lose them for this
        return None


def machine() -> dict[str, Any]:
    """What the numbers were measured on: cores, platform, memory, load average at writing."""
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "memory_gib": _memory_gib(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def _memory_gib() -> float | None:
    """The machine's memory in GiB (Linux's ``MemTotal``), None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def git_state(source: Path = _SOURCE) -> tuple[str | None, bool | None]:
    """The commit of the checkout es-scm was imported from, and whether it had changes.

    Both are None when es-scm was not imported from a git checkout (an installed wheel), even if
    the working directory is one: that commit would not be es-scm's. Changes under ``results/``
    do not count, so that a run writing several results files does not call its own earlier
    ones uncommitted changes; files git does not ignore, committed or not, do.
    """
    top = _git(source, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != source:
        return None, None
    commit = _git(source, "rev-parse", "HEAD")
    status = _git(source, "status", "--porcelain", "--", ":!results")
    return commit, None if status is None else bool(status)


def _git(folder: Path, *args: str) -> str | None:
    """The output of ``git ARGS`` run in ``folder``, stripped; None if git fails or is missing."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=folder, capture_output=True, text=True, check=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()
