"""A local cluster: N nodes on loopback, started, stopped and described together.

Node ``i`` listens for HTTP on ``port + i`` and for transport on ``port + 100 + i``; every node
is master-eligible and holds data, in a folder of its own. The cluster forms with
``discovery.seed_hosts`` (every transport port) and, on the first boot only,
``cluster.initial_master_nodes`` (OpenSearch: ``cluster.initial_cluster_manager_nodes``; every
node's name). With ``nodes=1`` the cluster is the single node of
:class:`~es_scm.tools.node.LocalElasticsearch`, unchanged.

The layout of a start (the engine, the number of nodes, secured or not) is saved in
``run/PORT.json`` so that ``stop`` and ``status`` find every node without being told again.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from subprocess import Popen

from es_scm.tools.defaults import DEFAULT_TIMEOUT, MAX_NODES
from es_scm.tools.engine import ELASTICSEARCH, ENGINES, Engine
from es_scm.tools.node import ClusterSpec, LocalElasticsearch, find_runtime
from es_scm.tools.security import ADMIN_USER
from es_scm.tools.system import LocalElasticsearchError

__all__ = ["MAX_NODES", "LocalCluster", "saved_layout"]


def saved_layout(home: Path, port: int) -> dict | None:
    """``{"nodes": N, "secure": bool, "engine": name}`` of the last start on ``port`` from
    ``home`` (a layout saved before OpenSearch was known: Elasticsearch), or None."""
    try:
        layout = json.loads((home / "run" / f"{port}.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(layout, dict):
        return None
    engine = layout.get("engine", ELASTICSEARCH.name)
    return {
        "nodes": int(layout.get("nodes", 1)),
        "secure": bool(layout.get("secure", False)),
        "engine": engine if engine in ENGINES else ELASTICSEARCH.name,
    }


def layout_flags(layout: dict) -> str:
    """The options of ``start`` that make ``layout``: ``--nodes 3 --secure``."""
    flags = f"--nodes {layout['nodes']}" + (" --secure" if layout["secure"] else "")
    if layout["engine"] != ELASTICSEARCH.name:
        flags += f" --engine {layout['engine']}"
    return flags


class LocalCluster:
    """N local nodes on 127.0.0.1 forming one cluster (see the module docstring).

    Parameters
    ----------
    nodes : int
        How many nodes (1 to 9); 1 is a single-node cluster.
    port : int, optional
        The first node's HTTP port (``$ES_SCM_PORT``, default 9200).
    version, home, heap
        As for :class:`~es_scm.tools.node.LocalElasticsearch` (``heap`` is each node's).
    secure : bool
        Security on every node: HTTPS, file-realm users (:mod:`es_scm.tools.security`).
    settings : mapping, optional
        More ``-E`` settings for every node.
    engine : str or Engine
        ``"elasticsearch"`` (the default) or ``"opensearch"`` (:mod:`es_scm.tools.engine`).

    Examples
    --------
    >>> cluster = LocalCluster(nodes=3, port=9260, heap="512m")  # doctest: +SKIP
    >>> urls = cluster.start()                                   # doctest: +SKIP
    >>> cluster.stop_node(1); cluster.start_node(1)             # doctest: +SKIP
    >>> cluster.stop()                                           # doctest: +SKIP
    """

    def __init__(
        self,
        nodes: int = 1,
        port: int | None = None,
        *,
        version: str | None = None,
        home: str | os.PathLike[str] | None = None,
        heap: str | None = None,
        secure: bool = False,
        settings: Mapping[str, str] | None = None,
        engine: str | Engine | None = None,
    ) -> None:
        if isinstance(nodes, bool) or not isinstance(nodes, int) or not 1 <= nodes <= MAX_NODES:
            raise ValueError(f"nodes must be an integer in 1..{MAX_NODES}, got {nodes!r}")
        first = LocalElasticsearch(
            version, home, port, heap, secure=secure, settings=settings, engine=engine
        )
        if first.port + nodes - 1 > 65435:
            raise ValueError(f"ports {first.port}..{first.port + nodes - 1} go past 65435")
        if nodes == 1:
            self.nodes = [first]
        else:
            ports = tuple(range(first.port, first.port + nodes))
            spec = ClusterSpec(
                f"es-scm-cluster-{first.port}", ports, first.engine.bootstrap_setting
            )
            self.nodes = [
                LocalElasticsearch(
                    first.version,
                    first.home,
                    p,
                    first.heap,
                    secure=secure,
                    cluster=spec,
                    settings=settings,
                    engine=first.engine,
                )
                for p in ports
            ]
        self.secure = secure
        self.engine = first.engine
        self.home = first.home
        self.port = first.port

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    @property
    def layout_file(self) -> Path:
        return self.home / "run" / f"{self.port}.json"

    @property
    def layout(self) -> dict:
        """What :func:`saved_layout` reads back after a start."""
        return {"nodes": len(self.nodes), "secure": self.secure, "engine": self.engine.name}

    def credentials(self, user: str = ADMIN_USER) -> dict[str, str | None]:
        """``ca_certs``, ``username``, ``password`` of a secured cluster's user."""
        return self.nodes[0].credentials(user)

    # -- start
    def start(self, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
        """Start the nodes that do not run (reusing this home's), wait for all to join.

        Returns the nodes' URLs once the cluster is yellow or green with every node joined.

        Raises
        ------
        LocalElasticsearchError
            When a port is held by another process or another home's node, when this home's
            nodes on these ports run with another layout, or when the cluster does not form in
            ``timeout`` seconds (the nodes started here are stopped again).
        """
        self._check_layout()
        deadline = time.monotonic() + timeout
        missing = [node for node in self.nodes if not node.reusable()]
        launched = []
        try:
            if missing:  # the nodes that do not run yet share one Java runtime
                java = find_runtime(self.nodes[0].version, self.engine)
                for node in missing:  # one at a time: a failed start stops those before it
                    launched.append((node, node.launch(java)))
            for node, process in launched:
                ready = _healthy_while_all_run(node, launched)
                node.wait_until_healthy(process, max(deadline - time.monotonic(), 1.0), ready)
            self.wait_for_nodes(max(deadline - time.monotonic(), 1.0))
        except BaseException:
            self._stop_all([node for node, _ in launched])
            raise
        self.layout_file.parent.mkdir(parents=True, exist_ok=True)
        self.layout_file.write_text(json.dumps(self.layout))
        return self.urls

    def _check_layout(self) -> None:
        saved = saved_layout(self.home, self.port)
        if saved is None or saved == self.layout:
            return
        running = LocalCluster(
            saved["nodes"],
            self.port,
            home=self.home,
            secure=saved["secure"],
            engine=saved["engine"],
        )
        if any(node.running_pid() for node in running.nodes):
            raise LocalElasticsearchError(
                f"this home's {running.engine.title} on port {self.port} runs with "
                f"{layout_flags(saved)}; stop it first (es-scm es stop --port {self.port})"
            )

    def wait_for_nodes(self, timeout: float = DEFAULT_TIMEOUT) -> dict:
        """Wait until a node reports the cluster yellow or green with every node joined."""
        deadline = time.monotonic() + timeout
        health: dict | None = None
        while time.monotonic() < deadline:
            health = self.health()
            if (
                health is not None
                and health.get("number_of_nodes") == len(self.nodes)
                and health.get("status") in ("green", "yellow")
            ):
                return health
            time.sleep(1.0)
        joined = health.get("number_of_nodes") if health else 0
        raise LocalElasticsearchError(
            f"the cluster on ports {self.port}..{self.port + len(self.nodes) - 1} did not form "
            f"within {timeout:.0f}s ({joined} of {len(self.nodes)} nodes joined); log tail:\n"
            f"{self.nodes[0].log_tail()}"
        )

    def start_node(self, i: int, timeout: float = DEFAULT_TIMEOUT) -> str:
        """Start node ``i`` again and wait until it has rejoined; return its URL."""
        started = time.monotonic()
        url = self.nodes[i].start(timeout)
        self.wait_for_nodes(max(timeout - (time.monotonic() - started), 1.0))
        return url

    # -- stop
    def stop_node(self, i: int, timeout: float = 60.0) -> bool:
        """Stop node ``i`` (SIGTERM, then wait); return False if it was not running."""
        return self.nodes[i].stop(timeout)

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop every node started from this home on these ports (whatever its engine); return
        False if none was running."""
        stopped = self._stop_all(self.nodes, timeout)
        self.layout_file.unlink(missing_ok=True)
        return stopped

    @staticmethod
    def _stop_all(nodes: list[LocalElasticsearch], timeout: float = 60.0) -> bool:
        pids = [(node, node.terminate()) for node in nodes]
        for node, pid in pids:
            if pid is not None:
                node.wait_stopped(pid, timeout)
        return any(pid is not None for _, pid in pids)

    def delete_data(self) -> None:
        """Delete every node's data folder (indices included); refused while a node runs."""
        running = [node.port for node in self.nodes if node.running_pid()]
        if running:
            raise LocalElasticsearchError(
                f"the nodes on ports {running} run; stop them before deleting their data"
            )
        for node in self.nodes:
            shutil.rmtree(node.data_dir, ignore_errors=True)

    # -- state
    def health(self) -> dict | None:
        """``_cluster/health`` from the first node that answers."""
        for node in self.nodes:
            health = node.health()
            if health is not None:
                return health
        return None

    def status(self) -> dict:
        """The cluster's URL, health and node count, and each node's URL, pid, health, data."""
        if len(self.nodes) == 1:
            status = self.nodes[0].status()
        else:
            health = self.health()
            reported = next(filter(None, (n.probe.engine() for n in self.nodes)), None)
            joined = health["number_of_nodes"] if health else 0
            status = {
                "url": self.urls[0],
                "running": health is not None,
                "health": health.get("status") if health else None,
                "nodes": f"{joined} of {len(self.nodes)} joined",
                "engine": reported[0] if reported else self.engine.name,
                "version": reported[1] if reported else None,
                "configured": f"{self.engine.name} {self.nodes[0].version}",
                "home": str(self.home),
            }
            for node in self.nodes:
                status[f"node {node.port}"] = _node_line(node)
        status["secure"] = self.secure
        if self.secure:
            status["ca_certs"] = str(self.nodes[0].security.ca_cert)
        return status


def _healthy_while_all_run(
    node: LocalElasticsearch, launched: list[tuple[LocalElasticsearch, Popen | None]]
) -> Callable[[], bool]:
    """Whether ``node`` is healthy, raising as soon as any node launched with it has exited
    (the others would wait in vain for a master to be elected)."""

    def ready() -> bool:
        for other, process in launched:
            other.check_running(process)
        return node.is_healthy()

    return ready


def _node_line(node: LocalElasticsearch) -> str:
    described = node.status()
    pid = described["managed_pid"] or "-"
    health = described["health"] or "down"
    return f"{node.url} pid {pid} {health}; data {described['data']}"
