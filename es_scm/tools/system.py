"""Operating-system helpers of the local runner: processes, ports, the service user, files, disk.

Nothing here knows about an engine's settings; :mod:`es_scm.tools.node` puts them together, and
the disk watermarks are those of the engine's description (:mod:`es_scm.tools.engine`).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

from es_scm.processes import pid_alive
from es_scm.tools.engine import ELASTICSEARCH, DiskWatermark, Engine

__all__ = [
    "SERVICE_USER",
    "DiskWatermark",
    "LocalElasticsearchError",
    "chown_tree",
    "disk_warnings",
    "ensure_traversable",
    "extract_zip_with_modes",
    "group_alive",
    "log",
    "pid_alive",
    "port_open",
    "read_properties",
    "reap",
    "service_user",
    "signal_group",
]

SERVICE_USER = "es-scm"


class LocalElasticsearchError(RuntimeError):
    """A local Elasticsearch could not be installed, started or stopped; the message says why."""


def log(message: str) -> None:
    """Print a runner message on stderr, the way every runner message is printed."""
    print(f"es-scm: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- processes and ports


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout):
        return True
    return False


def signal_group(pid: int, sig: int = signal.SIGTERM) -> None:
    """Send ``sig`` to the process group that ``pid`` leads (nothing if it is gone)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def reap(pid: int) -> None:
    """Collect the launcher if this process started it: a zombie leader keeps its group alive."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def group_alive(pid: int) -> bool:
    """Whether any process of the group that ``pid`` leads is still alive."""
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --------------------------------------------------------------------------- the service user


def service_user() -> pwd.struct_passwd:
    """The unprivileged ``es-scm`` system user (created once): the engines refuse root."""
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        pass
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    result = subprocess.run(
        [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode not in (0, 9):  # 9: the user exists already (a concurrent start)
        raise LocalElasticsearchError(
            "Elasticsearch and OpenSearch refuse to run as root, and creating user "
            f"{SERVICE_USER!r} failed: {result.stderr.strip()}"
        )
    return pwd.getpwnam(SERVICE_USER)


def ensure_traversable(path: Path, user: pwd.struct_passwd) -> None:
    """Raise unless ``user`` may enter ``path`` and each of its parents."""
    for parent in [path, *path.parents]:
        if parent.exists() and not os.stat(parent).st_mode & 0o001:
            raise LocalElasticsearchError(
                f"user {user.pw_name!r} cannot enter {parent}; set ES_SCM_HOME to a folder "
                "outside it (e.g. /var/tmp/es-scm)"
            )


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Give ``root`` and everything below it to ``uid:gid``."""
    for dirpath, dirnames, filenames in os.walk(root):
        os.chown(dirpath, uid, gid)
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


# --------------------------------------------------------------------------- files


def read_properties(path: Path) -> dict[str, str]:
    """``key=value`` lines of a simple properties file (no continuations or escapes)."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs if not key.startswith("#")}


def extract_zip_with_modes(zip_path: Path, target: Path) -> None:
    """Unpack a zip keeping the Unix permission bits (zipfile alone drops them)."""
    with zipfile.ZipFile(zip_path) as archive:
        for info in archive.infolist():
            extracted = Path(archive.extract(info, target))
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                extracted.chmod(mode)


# --------------------------------------------------------------------------- disk watermarks


GB = 1024**3
# Elasticsearch's defaults; each engine's are in its description (es_scm/tools/engine.py).
DEFAULT_WATERMARKS = ELASTICSEARCH.watermarks


def disk_warnings(
    folder: Path, total: int | None = None, free: int | None = None, engine: Engine = ELASTICSEARCH
) -> list[str]:
    """Say which of ``engine``'s default watermarks the disk holding ``folder`` exceeds already
    (at most one).

    ``total`` and ``free`` (bytes) replace the disk's own figures, for tests.
    """
    if total is None or free is None:
        usage = shutil.disk_usage(folder)
        total = usage.total
        free = usage.free
    for mark in engine.watermarks:
        needed = mark.free_needed(total)
        if free < needed:
            effect = mark.effect.format(title=engine.title)
            return [
                f"the disk holding {folder} has {free / GB:.1f} GB free, under {engine.title}'s "
                f"{mark.name} watermark ({needed / GB:.1f} GB free): {effect}; free disk "
                "space or set ES_SCM_HOME to a roomier disk (docs/ELASTICSEARCH.md: watermarks)"
            ]
    return []
