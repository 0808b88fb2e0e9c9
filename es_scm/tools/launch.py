"""A local node's operating-system process: its folders, command line, environment and logs.

:class:`es_scm.tools.node.LocalElasticsearch` decides what a node is (its version, port,
settings and where its files go); this module makes its folders (owned by the service user when
the runner is root), starts ``bin/elasticsearch`` (``bin/opensearch``) in a session of its own
with a clean environment and its output in the console log, runs the distribution's tools, finds
a node again by its pid file, waits for its process group to exit, and reads the logs' last
lines. The engine's description (:mod:`es_scm.tools.engine`) names the scripts and variables.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from es_scm.tools.engine import ELASTICSEARCH, Engine
from es_scm.tools.system import (
    LocalElasticsearchError,
    chown_tree,
    ensure_traversable,
    group_alive,
    pid_alive,
    reap,
    signal_group,
)

__all__ = [
    "log_tail",
    "node_environment",
    "prepare_folders",
    "recorded_pid",
    "run_tool",
    "spawn_node",
    "wait_for_group",
]


def prepare_folders(
    home: Path, install_dir: Path, data_dir: Path, logs_dir: Path, user: pwd.struct_passwd | None
) -> None:
    """Make a node's data, logs, run and tmp folders; with a service ``user``, make ``home``
    traversable for it and give it the trees the node writes or runs from."""
    tmp = home / "tmp"
    for folder in (data_dir, logs_dir, home / "run", tmp):
        folder.mkdir(parents=True, exist_ok=True)
    if user is None:
        return
    ensure_traversable(home, user)
    for path in (install_dir, data_dir, logs_dir, tmp):
        chown_tree(path, user.pw_uid, user.pw_gid)


def node_environment(
    java_home: Path, heap: str, home: Path, engine: Engine = ELASTICSEARCH
) -> dict[str, str]:
    """The whole environment of a node: this Java, this heap, temporary files under ``home``
    (``ES_JAVA_HOME``, ``ES_JAVA_OPTS``, ``ES_TMPDIR``, or OpenSearch's ``OPENSEARCH_…``)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        engine.variable("JAVA_HOME"): str(java_home),
        engine.variable("JAVA_OPTS"): f"-Xms{heap} -Xmx{heap}",  # after jvm.options: it wins
        engine.variable("TMPDIR"): str(home / "tmp"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
    }


def spawn_node(
    install_dir: Path,
    settings: Mapping[str, str],
    env: Mapping[str, str],
    console_log: Path,
    user: pwd.struct_passwd | None,
    engine: Engine = ELASTICSEARCH,
) -> subprocess.Popen:
    """Start ``bin/<engine>`` of ``install_dir`` with ``settings`` as ``-E`` options and only
    ``env``, in a new session, as ``user`` if given; its output goes to ``console_log``."""
    command = [str(install_dir / "bin" / engine.name)]
    for key, value in settings.items():
        command += ["-E", f"{key}={value}"]
    with console_log.open("ab") as console:
        return subprocess.Popen(
            command,
            cwd=install_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            user=user.pw_uid if user else None,
            group=user.pw_gid if user else None,
            extra_groups=[] if user else None,
        )


def run_tool(
    install_dir: Path,
    tool: str,
    arguments: list[str],
    java_home: Path,
    engine: Engine = ELASTICSEARCH,
    stdin: str = "",
) -> str:
    """Run the distribution's ``bin/<tool>`` (e.g. ``opensearch-keystore``) with ``java_home``
    on its config folder; return its output.

    Raises
    ------
    LocalElasticsearchError
        When the tool fails; the message has its last lines.
    """
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        engine.variable("JAVA_HOME"): str(java_home),
        engine.variable("PATH_CONF"): str(install_dir / "config"),
        "LANG": "C.UTF-8",
    }
    result = subprocess.run(
        [str(install_dir / "bin" / tool), *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-3:]
        raise LocalElasticsearchError(
            f"bin/{tool} {arguments[0]} failed (exit {result.returncode}): "
            + " | ".join(tail or ["no output"])
        )
    return result.stdout


def recorded_pid(pid_file: Path) -> int | None:
    """The pid written in ``pid_file``, if that process is alive."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if pid_alive(pid) else None


def wait_for_group(pid: int, timeout: float) -> None:
    """Wait for the process group of ``pid`` to exit, reaping it; SIGKILL it after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and group_alive(pid):
        reap(pid)
        time.sleep(0.5)
    if group_alive(pid):
        signal_group(pid, signal.SIGKILL)


def log_tail(log_files: Iterable[Path], lines: int = 40) -> str:
    """The last ``lines`` of each of ``log_files`` that exists, each under its path."""
    chunks = []
    for log_file in log_files:
        if log_file.is_file():
            text = log_file.read_text(errors="replace").splitlines()[-lines:]
            chunks.append(f"--- {log_file}\n" + "\n".join(text))
    return "\n".join(chunks) or "(no log written)"
