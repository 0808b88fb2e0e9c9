"""One local node, Elasticsearch or OpenSearch: install, start (or reuse this home's), stop, status.

A node is a single-node cluster (``discovery.type: single-node``) unless it is given a
:class:`ClusterSpec`, which makes it one member of a loopback cluster
(:class:`es_scm.tools.cluster.LocalCluster`). What differs between the engines comes from their
description (:mod:`es_scm.tools.engine`). See :mod:`es_scm.tools.es_local` for the life cycle,
where files go, which Java runs it, and the command line.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from es_scm.tools.defaults import DEFAULT_HEAP, DEFAULT_PORT, DEFAULT_VERSION
from es_scm.tools.distribution import Distribution
from es_scm.tools.engine import ELASTICSEARCH, Engine, engine_named
from es_scm.tools.java import JavaNotFoundError, JavaRuntime, find_java
from es_scm.tools.launch import (
    log_tail,
    node_environment,
    prepare_folders,
    recorded_pid,
    spawn_node,
    wait_for_group,
)
from es_scm.tools.probe import NodeProbe
from es_scm.tools.security import ADMIN_USER, SecurityFiles, security_settings
from es_scm.tools.system import (
    LocalElasticsearchError,
    disk_warnings,
    log,
    port_open,
    service_user,
    signal_group,
)

__all__ = [
    "DEFAULT_HEAP",
    "DEFAULT_PORT",
    "DEFAULT_VERSION",
    "ClusterSpec",
    "LocalElasticsearch",
    "default_home",
    "ownership_problem",
    "port_from_env",
]

SINGLE_NODE_NAME = "es-scm-local"  # the single node's node and cluster name
REQUIRED_JAVA_MODULES = ELASTICSEARCH.java_modules  # Elasticsearch's (engine.py)


def default_home() -> Path:
    """The folder for the distribution, data and logs (see :mod:`es_scm.tools.es_local`)."""
    if os.environ.get("ES_SCM_HOME"):
        return Path(os.environ["ES_SCM_HOME"]).expanduser().resolve()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / ".git").exists():
        return checkout / ".es-local"
    return Path.home() / ".cache" / "es-scm"


def find_runtime(version: str | None = None, engine: Engine = ELASTICSEARCH) -> JavaRuntime:
    """A Java runtime that can run ``engine``'s ``version`` (version and modules checked).

    Elasticsearch 9.x and OpenSearch 3.x need Java 21+. Elasticsearch 8.x runs on Java 17 to 21
    and OpenSearch 2.x on 11 to 21: they install the Security Manager (Elasticsearch up to
    8.17), which Java 24 removed, so the runner does not give them a newer Java.
    """
    version = version or engine.default_version
    requirement = engine.java_requirement(version)
    low, high = requirement.low, requirement.high
    variable = engine.variable("JAVA_HOME")
    try:
        return find_java(low, engine.java_modules, high, prefer=variable)
    except JavaNotFoundError as error:
        wanted = f"{low}+" if high is None else f"{low} to {high}"
        raise LocalElasticsearchError(
            f"{engine.title} {version_major(version)} needs a full JDK {wanted} (install e.g. "
            f"Eclipse Temurin or OpenJDK {high or 21} and set {variable}); checked: {error}"
        ) from None


def version_major(version: str) -> int:
    """``"8.19.9"`` → 8."""
    return int(version.split(".", 1)[0])


def ownership_problem(
    port: int,
    home: Path,
    own_pid: int | None,
    expected: Path,
    reported: list[str] | None,
    title: str = ELASTICSEARCH.title,
) -> str | None:
    """Why a healthy node on ``port`` may not be reused by this home, or None if it may.

    It may when this home's pid file names a live process (``own_pid``), or when the node's own
    ``path.data`` (``reported``, from ``GET _nodes/_local/settings``) is this home's folder.
    """
    if own_pid is not None:
        return None
    if reported and any(Path(path).resolve() == expected.resolve() for path in reported):
        return None
    where = f"its data is in {', '.join(reported)}" if reported else "its data folder is unknown"
    return (
        f"port {port} is served by an {title} that was not started from {home} ({where}); "
        "stop that node or pick another --port"
    )


def port_from_env(variable: str | None = None, offset: int = 0) -> int:
    """``$variable`` if set, else ``$ES_SCM_PORT`` (default 9200) + ``offset``.

    Nodes started beside the main one (by tests, for instance) take ports relative to it, so
    that two checkouts with different ``ES_SCM_PORT`` never reach for the same port.
    """
    if variable and os.environ.get(variable):
        return int(os.environ[variable])
    return int(os.environ.get("ES_SCM_PORT", DEFAULT_PORT)) + offset


def _check_node_options(version: str, port: int, heap: str) -> None:
    """A ValueError naming the first of a node's version, port and heap that is malformed."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise ValueError(f"version must look like 9.5.4, got {version!r}")
    if not 1024 <= port <= 65435:
        raise ValueError(f"port must be in 1024..65435, got {port}")
    if not re.fullmatch(r"\d+[mMgG]", heap):
        raise ValueError(f"heap must look like 512m or 1g, got {heap!r}")


@dataclass(frozen=True)
class ClusterSpec:
    """The loopback cluster a node belongs to: its name, every member's HTTP port, and the
    engine's setting that names the initial masters (:attr:`Engine.bootstrap_setting`)."""

    name: str
    ports: tuple[int, ...]
    bootstrap_setting: str = ELASTICSEARCH.bootstrap_setting

    def node_name(self, port: int) -> str:
        return f"es-scm-{port}"

    def settings(self, port: int, first_boot: bool) -> dict[str, str]:
        """Discovery settings; the initial masters only when the node has never run."""
        settings = {
            "cluster.name": self.name,
            "node.name": self.node_name(port),
            "discovery.seed_hosts": ",".join(f"127.0.0.1:{p + 100}" for p in self.ports),
        }
        if first_boot:
            settings[self.bootstrap_setting] = ",".join(map(self.node_name, self.ports))
        return settings


class LocalElasticsearch:
    """An Elasticsearch (or OpenSearch) node on 127.0.0.1, run from the engine's integ-test zip.

    Parameters
    ----------
    version : str
        The engine's version (default ``$ES_SCM_ES_VERSION`` or ``$ES_SCM_OPENSEARCH_VERSION``,
        else the engine's default).
    home : path, optional
        Where the distribution, data and logs live; see :func:`default_home`.
    port : int
        The HTTP port on 127.0.0.1 (``$ES_SCM_PORT``); the transport port is ``port + 100``.
    heap : str
        The JVM heap, e.g. ``"1g"`` (``$ES_SCM_HEAP``).
    secure : bool
        Security on: HTTPS and file-realm users (:mod:`es_scm.tools.security`).
    cluster : ClusterSpec, optional
        Make the node a member of this cluster instead of a single-node cluster.
    settings : mapping, optional
        More ``-E`` settings, applied last (e.g. ``{"cluster.info.update.interval": "10s"}``).
    engine : str or Engine
        ``"elasticsearch"`` (the default) or ``"opensearch"`` (:mod:`es_scm.tools.engine`).

    Raises
    ------
    ValueError
        For a malformed version, port or heap, an unknown engine, or ``secure`` with an engine
        whose zip has no security.
    """

    def __init__(
        self,
        version: str | None = None,
        home: str | os.PathLike[str] | None = None,
        port: int | None = None,
        heap: str | None = None,
        *,
        secure: bool = False,
        cluster: ClusterSpec | None = None,
        settings: Mapping[str, str] | None = None,
        engine: str | Engine | None = None,
    ) -> None:
        self.engine = engine_named(engine)
        self.version = version or os.environ.get(
            self.engine.version_variable, self.engine.default_version
        )
        self.home = Path(home) if home else default_home()
        self.port = int(port or port_from_env())
        self.heap = heap or os.environ.get("ES_SCM_HEAP", DEFAULT_HEAP)
        self.secure = secure
        self.cluster = cluster
        self.extra_settings = dict(settings or {})
        _check_node_options(self.version, self.port, self.heap)
        if secure and not self.engine.supports_security:
            raise ValueError(
                f"--secure is not available for {self.engine.title}: its integ-test zip has no "
                "security plugin (plain HTTP, no users)"
            )
        self.distribution = Distribution(self.home, self.version, self.engine)
        self.security = SecurityFiles(self.home, self.install_dir)

    # -- paths
    @property
    def url(self) -> str:
        return f"{'https' if self.secure else 'http'}://127.0.0.1:{self.port}"

    @property
    def name(self) -> str:
        return self.cluster.node_name(self.port) if self.cluster else SINGLE_NODE_NAME

    @property
    def cluster_name(self) -> str:
        return self.cluster.name if self.cluster else SINGLE_NODE_NAME

    @property
    def zip_path(self) -> Path:
        return self.distribution.zip_path

    @property
    def install_dir(self) -> Path:
        return self.distribution.install_dir

    @property
    def _folder_name(self) -> str:
        label = self.engine.label(self.version)
        if self.cluster:
            return f"{label}-{self.cluster.name}/{self.port}"
        return f"{label}-{self.port}"

    @property
    def data_dir(self) -> Path:
        return self.home / "data" / self._folder_name

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs" / self._folder_name

    @property
    def pid_file(self) -> Path:
        return self.home / "run" / f"{self.port}.pid"

    @property
    def console_log(self) -> Path:
        return self.logs_dir / "console.log"

    # -- install
    def fetch(self) -> Path:
        """Fetch the distribution zip with Maven unless it is already cached."""
        return self.distribution.fetch()

    def install(self, java: JavaRuntime | None = None) -> Path:
        """Fetch and unpack the distribution, complete it (Elasticsearch's English analysis
        plugin, OpenSearch's missing modules) and create the keystore (idempotent;
        :class:`~es_scm.tools.distribution.Distribution`).

        The plugin (:mod:`es_scm.tools.analysis`) is built with ``java``, by default the node's.
        """
        return self.distribution.install(
            lambda: (java or find_runtime(self.version, self.engine)).home
        )

    # -- state
    def running_pid(self) -> int | None:
        """The pid recorded by this home for this port, if that process is alive."""
        return recorded_pid(self.pid_file)

    @property
    def probe(self) -> NodeProbe:
        """Reads the node's JSON endpoints (as this home's admin user when secured)."""
        if not self.secure:
            return NodeProbe(self.url)
        return NodeProbe(self.url, **self.security.credentials(ADMIN_USER))

    def health(self, timeout: float = 2.0) -> dict | None:
        """Return ``_cluster/health`` as a dict, or None when nothing answers at the URL."""
        return self.probe.health(timeout)

    def server_version(self) -> str | None:
        """Return the version of the node answering at the URL, or None."""
        return self.probe.version()

    def is_healthy(self) -> bool:
        health = self.health()
        return health is not None and health.get("status") in ("green", "yellow")

    def credentials(self, user: str = ADMIN_USER) -> dict[str, str | None]:
        """Connection options of a secured node: ``ca_certs``, ``username``, ``password``."""
        if not self.secure:
            raise LocalElasticsearchError(f"the node on port {self.port} is not secured")
        return self.security.credentials(user)

    # -- start / stop
    def start(self, timeout: float = 180.0) -> str:
        """Start the node, or reuse this home's healthy node at the URL; return the URL.

        Raises
        ------
        LocalElasticsearchError
            When another process holds the port (a node of another home included), or the node
            does not become healthy within ``timeout`` seconds.
        """
        if self.reusable():
            return self.url
        self.wait_until_healthy(self.launch(find_runtime(self.version, self.engine)), timeout)
        return self.url

    def reusable(self) -> bool:
        """True if this home's node answers healthy at the URL; raise if another one does."""
        own_pid = self.running_pid()
        if self.is_healthy():
            reported = None if own_pid else self.probe.data_paths()
            problem = ownership_problem(
                self.port, self.home, own_pid, self.data_dir, reported, self.engine.title
            )
            if problem:
                raise LocalElasticsearchError(problem)
            return True
        if own_pid is None and port_open(self.port):
            raise LocalElasticsearchError(
                f"port {self.port} is in use by a process that is not a healthy "
                f"{self.engine.title} started from {self.home}; stop it or pick another --port"
            )
        return False

    def launch(self, java: JavaRuntime) -> subprocess.Popen | None:
        """Launch the node (None when this home's node is already starting); record its pid."""
        if self.running_pid() is not None:
            return None
        self.install(java)
        if self.secure:
            self.security.ensure(java.home)
        user = service_user() if os.geteuid() == 0 else None
        prepare_folders(self.home, self.install_dir, self.data_dir, self.logs_dir, user)
        for warning in disk_warnings(self.data_dir, engine=self.engine):
            log(f"warning: {warning}")
        env = node_environment(java.home, self.heap, self.home, self.engine)
        process = spawn_node(
            self.install_dir, self.settings(), env, self.console_log, user, self.engine
        )
        self.pid_file.write_text(f"{process.pid}\n")
        return process

    def settings(self) -> dict[str, str]:
        """The ``-E`` settings of the node. Disk watermarks keep the engine's defaults (and
        apply to OpenSearch's single node too: :attr:`Engine.single_node_settings`)."""
        settings = {"cluster.name": self.cluster_name, "node.name": self.name}
        if self.cluster:
            settings |= self.cluster.settings(self.port, first_boot=self.first_boot)
        else:
            settings["discovery.type"] = "single-node"
            settings |= self.engine.single_node_settings
        settings |= {
            "network.host": "127.0.0.1",
            "http.port": str(self.port),
            "transport.port": str(self.port + 100),
            "path.data": str(self.data_dir),
            "path.logs": str(self.logs_dir),
        }
        settings |= self.engine.node_settings
        security = security_settings(True) if self.secure else dict(self.engine.insecure_settings)
        return settings | security | self.extra_settings

    @property
    def first_boot(self) -> bool:
        """Whether the node has never written its data folder."""
        return not (self.data_dir / self.engine.state_folder).exists()

    def wait_until_healthy(
        self,
        process: subprocess.Popen | None,
        timeout: float,
        ready: Callable[[], bool] | None = None,
    ) -> None:
        """Wait until ``ready()`` (default: the node answers yellow or green); stop it if not."""
        ready = ready or self.is_healthy
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_running(process)
            if ready():
                return
            time.sleep(1.0)
        self.stop()
        raise LocalElasticsearchError(
            f"{self.engine.title} on port {self.port} did not become healthy within "
            f"{timeout:.0f}s; "
            f"log tail:\n{self.log_tail()}"
        )

    def check_running(self, process: subprocess.Popen | None) -> None:
        """Raise if the node launched as ``process`` (None: launched before) has exited."""
        if process is not None and process.poll() is not None:
            self.pid_file.unlink(missing_ok=True)
            raise LocalElasticsearchError(
                f"{self.engine.title} on port {self.port} exited with code {process.returncode} "
                f"while starting; log tail:\n{self.log_tail()}"
            )
        if process is None and self.running_pid() is None:
            raise LocalElasticsearchError(f"{self.engine.title} on port {self.port} exited")

    def terminate(self) -> int | None:
        """Send SIGTERM to the node's process group; return its pid (None if none runs)."""
        pid = self.running_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return None
        signal_group(pid)
        return pid

    def wait_stopped(self, pid: int, timeout: float = 60.0) -> None:
        """Wait for the group of ``pid`` to exit (SIGKILL after ``timeout``); drop the pid file."""
        wait_for_group(pid, timeout)
        self.pid_file.unlink(missing_ok=True)

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the node started by this runner; return False if none was running."""
        pid = self.terminate()
        if pid is None:
            return False
        self.wait_stopped(pid, timeout)
        return True

    def status(self) -> dict:
        """Describe the node: URL, whether it runs, its health, engine and version as the node
        reports them, what this home would start on the port (``configured``), where files live.

        ``data`` is the ``path.data`` of the node that answers at the URL (this home's folder
        when none answers). A node that another home started may be another engine than this
        home's: ``engine`` and ``version`` are the node's own.
        """
        health = self.health()
        reported = self.probe.engine() if health else None
        data = self.probe.data_paths() if health else None
        return {
            "url": self.url,
            "running": health is not None,
            "managed_pid": self.running_pid(),
            "health": health.get("status") if health else None,
            "engine": reported[0] if reported else self.engine.name,
            "version": reported[1] if reported else None,
            "configured": f"{self.engine.name} {self.version}",
            "home": str(self.home),
            "data": ", ".join(data) if data else str(self.data_dir),
            "logs": str(self.logs_dir),
        }

    def log_tail(self, lines: int = 40) -> str:
        """Return the last lines of the console log and the server log."""
        return log_tail((self.console_log, self.logs_dir / f"{self.cluster_name}.log"), lines)
