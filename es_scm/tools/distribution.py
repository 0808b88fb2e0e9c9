"""The distribution that local nodes run: fetched with Maven, unpacked, completed.

Every node of a runner home runs from the same unpacked folder ``home/<engine>-<version>``
(``elasticsearch-9.5.4``, ``opensearch-2.19.6``) and reads its ``config`` folder, so whatever a
node would write there on its first start is made here, once, before any node starts: what the
engine's zip lacks — Elasticsearch's English analysis plugin (:mod:`es_scm.tools.analysis`),
OpenSearch's modules (:mod:`es_scm.tools.modules`) — and the keystore.
"""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable
from pathlib import Path

from es_scm.tools.analysis import AnalysisPlugin
from es_scm.tools.engine import ELASTICSEARCH, Engine
from es_scm.tools.launch import run_tool
from es_scm.tools.maven import copy_artifact
from es_scm.tools.modules import ModuleAssembly
from es_scm.tools.system import LocalElasticsearchError, extract_zip_with_modes, log

__all__ = ["Distribution"]


class Distribution:
    """``engine``'s ``version`` in the runner home ``home`` (see the module docstring)."""

    def __init__(self, home: Path, version: str, engine: Engine = ELASTICSEARCH) -> None:
        self.home = home
        self.version = version
        self.engine = engine

    @property
    def zip_path(self) -> Path:
        return self.home / "dist" / f"{self.engine.name}-{self.version}.zip"

    @property
    def install_dir(self) -> Path:
        return self.home / f"{self.engine.name}-{self.version}"

    @property
    def keystore(self) -> Path:
        """The keystore that every node started from this folder reads."""
        return self.install_dir / "config" / f"{self.engine.name}.keystore"

    def fetch(self) -> Path:
        """Fetch the distribution zip with Maven unless it is already cached."""
        if self.zip_path.is_file():
            return self.zip_path
        artifact = self.engine.artifact_of(self.version)
        log(f"fetching {artifact} with Maven ({self.engine.download_size}, once)")
        copy_artifact(artifact, self.zip_path.parent)
        if not self.zip_path.is_file():
            raise LocalElasticsearchError(
                f"Maven fetched {artifact} but {self.zip_path} is missing"
            )
        return self.zip_path

    def install(self, java_home: Callable[[], Path]) -> Path:
        """Fetch and unpack the distribution, complete it (the English analysis plugin, or the
        modules its zip lacks) and create the keystore, each unless done (``java_home()``: the
        JDK that builds and runs the tools)."""
        marker = self.install_dir / ".es-scm-installed"
        if not marker.is_file():
            zip_path = self.fetch()
            staging = self.install_dir.with_name(self.install_dir.name + ".partial")
            shutil.rmtree(staging, ignore_errors=True)
            extract_zip_with_modes(zip_path, staging)
            (top,) = list(staging.iterdir())  # the zip holds one folder, <engine>-<version>
            shutil.rmtree(self.install_dir, ignore_errors=True)
            top.rename(self.install_dir)
            staging.rmdir()
            marker.write_text(self.version + "\n")
        ModuleAssembly(self.install_dir, self.engine, self.version).ensure(self.home / "run")
        if self.engine.english_plugin:
            AnalysisPlugin(self.install_dir, self.version, self.zip_path.parent).ensure(java_home)
        self._ensure_keystore(java_home)
        return self.install_dir

    def _ensure_keystore(self, java_home: Callable[[], Path]) -> None:
        """Create the keystore now, once: nodes that start together and find none would each
        create it, all through one ``<engine>.keystore.tmp``, and lose the race (so would two
        runners that start nodes at once: they take turns)."""
        if self.keystore.is_file():
            return
        lock = self.home / "run" / "keystore.lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        with lock.open("w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            if not self.keystore.is_file():
                run_tool(
                    self.install_dir,
                    self.engine.tool("keystore"),
                    ["create"],
                    java_home(),
                    self.engine,
                )
