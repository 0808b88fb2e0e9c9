"""The Elasticsearch distribution that local nodes run: fetched with Maven, unpacked, completed.

Every node of a runner home runs from the same unpacked folder ``home/elasticsearch-<version>``
and reads its ``config`` folder, so whatever a node would write there on its first start is made
here, once, before any node starts: the English analysis plugin (:mod:`es_scm.tools.analysis`)
and the keystore.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from es_scm.tools.analysis import AnalysisPlugin
from es_scm.tools.security import SecurityFiles
from es_scm.tools.system import LocalElasticsearchError, extract_zip_with_modes, log

__all__ = ["MAVEN_ARTIFACT", "Distribution"]

MAVEN_ARTIFACT = "org.elasticsearch.distribution.integ-test-zip:elasticsearch:{version}:zip"
MAVEN_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"


class Distribution:
    """Elasticsearch ``version`` in the runner home ``home`` (see the module docstring)."""

    def __init__(self, home: Path, version: str) -> None:
        self.home = home
        self.version = version

    @property
    def zip_path(self) -> Path:
        return self.home / "dist" / f"elasticsearch-{self.version}.zip"

    @property
    def install_dir(self) -> Path:
        return self.home / f"elasticsearch-{self.version}"

    @property
    def keystore(self) -> Path:
        """The keystore that every node started from this folder reads."""
        return self.install_dir / "config" / "elasticsearch.keystore"

    def fetch(self) -> Path:
        """Fetch the distribution zip with Maven unless it is already cached."""
        if self.zip_path.is_file():
            return self.zip_path
        mvn = shutil.which("mvn")
        if mvn is None:
            raise LocalElasticsearchError(
                "Maven (mvn) is needed to fetch Elasticsearch; install it "
                "(e.g. apt-get install maven)"
            )
        self.zip_path.parent.mkdir(parents=True, exist_ok=True)
        artifact = MAVEN_ARTIFACT.format(version=self.version)
        log(f"fetching {artifact} with Maven (about 130 MB, once)")
        command = [
            mvn,
            "-q",
            "-B",
            f"{MAVEN_DEPENDENCY_PLUGIN}:copy",
            f"-Dartifact={artifact}",
            f"-DoutputDirectory={self.zip_path.parent}",
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0 or not self.zip_path.is_file():
            tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
            raise LocalElasticsearchError(
                f"Maven could not fetch {artifact}: " + " | ".join(tail or ["no output"])
            )
        return self.zip_path

    def install(self, java_home: Callable[[], Path]) -> Path:
        """Fetch and unpack the distribution, add the English analysis plugin and create the
        keystore, each unless done (``java_home()``: the JDK that builds and runs the tools)."""
        marker = self.install_dir / ".es-scm-installed"
        if not marker.is_file():
            zip_path = self.fetch()
            staging = self.install_dir.with_name(self.install_dir.name + ".partial")
            shutil.rmtree(staging, ignore_errors=True)
            extract_zip_with_modes(zip_path, staging)
            (top,) = list(staging.iterdir())  # the zip holds one folder, elasticsearch-<version>
            shutil.rmtree(self.install_dir, ignore_errors=True)
            top.rename(self.install_dir)
            staging.rmdir()
            marker.write_text(self.version + "\n")
        AnalysisPlugin(self.install_dir, self.version, self.zip_path.parent).ensure(java_home)
        self._ensure_keystore(java_home)
        return self.install_dir

    def _ensure_keystore(self, java_home: Callable[[], Path]) -> None:
        """Create the keystore now, once: nodes that start together and find none would each
        create it, all through one ``elasticsearch.keystore.tmp``, and lose the race (so would
        two runners that start nodes at once: they take turns)."""
        if self.keystore.is_file():
            return
        lock = self.home / "run" / "keystore.lock"
        lock.parent.mkdir(parents=True, exist_ok=True)
        with lock.open("w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            if not self.keystore.is_file():
                tools = SecurityFiles(self.home, self.install_dir)
                tools.run_tool("elasticsearch-keystore", ["create"], java_home())
