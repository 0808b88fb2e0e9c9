"""Fetch artifacts with Maven's dependency plugin: one file, or a jar with its dependencies.

The runner reaches Maven Central only through ``mvn`` (which caches in ``~/.m2``), so the
engines' zips and OpenSearch's module jars come the same way as the analysis plugin's build
dependencies.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

from es_scm.tools.system import LocalElasticsearchError

__all__ = ["MAVEN_DEPENDENCY_PLUGIN", "copy_artifact", "copy_with_dependencies", "dependency_pom"]

MAVEN_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
MAVEN_TIMEOUT = 900.0


def _mvn(what: str) -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LocalElasticsearchError(
            f"Maven (mvn) is needed to fetch {what}; install it (e.g. apt-get install maven)"
        )
    return mvn


def _run(arguments: list[str], what: str, cwd: Path | None = None) -> None:
    """Run ``mvn -q -B arguments``; raise with the output's last lines when it fails."""
    command = [_mvn(what), "-q", "-B", *arguments]
    try:
        result = subprocess.run(
            command, cwd=cwd, capture_output=True, text=True, timeout=MAVEN_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise LocalElasticsearchError(
            f"Maven could not fetch {what}: ran over {MAVEN_TIMEOUT:.0f}s"
        ) from None
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        raise LocalElasticsearchError(
            f"Maven could not fetch {what}: " + " | ".join(tail or ["no output"])
        )


def copy_artifact(artifact: str, folder: Path) -> None:
    """Copy the artifact ``group:artifact:version[:packaging]`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    _run(
        [
            f"{MAVEN_DEPENDENCY_PLUGIN}:copy",
            f"-Dartifact={artifact}",
            f"-DoutputDirectory={folder}",
        ],
        artifact,
    )


def dependency_pom(group: str, artifact: str, version: str, exclude_group: str = "") -> str:
    """A pom whose one dependency is ``group:artifact:version``, without the jars of
    ``exclude_group`` (and whatever they bring) when given."""
    exclusions = (
        "<exclusions><exclusion>"
        f"<groupId>{escape(exclude_group)}</groupId><artifactId>*</artifactId>"
        "</exclusion></exclusions>"
        if exclude_group
        else ""
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>es-scm.local-runner</groupId><artifactId>module</artifactId>"
        "<version>1</version><packaging>pom</packaging>\n"
        "  <dependencies><dependency>"
        f"<groupId>{escape(group)}</groupId><artifactId>{escape(artifact)}</artifactId>"
        f"<version>{escape(version)}</version>{exclusions}"
        "</dependency></dependencies>\n"
        "</project>\n"
    )


def copy_with_dependencies(
    coordinates: str, version: str, folder: Path, exclude_group: str = ""
) -> list[Path]:
    """Copy the jar ``group:artifact`` of ``version`` and its runtime dependencies into
    ``folder`` (without ``exclude_group``'s); return the jars copied."""
    group, artifact = coordinates.split(":")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="es-scm-maven-") as temporary:
        project = Path(temporary)
        (project / "pom.xml").write_text(dependency_pom(group, artifact, version, exclude_group))
        _run(
            [
                f"{MAVEN_DEPENDENCY_PLUGIN}:copy-dependencies",
                f"-DoutputDirectory={folder}",
                "-DincludeScope=runtime",
            ],
            f"{coordinates}:{version}",
            cwd=project,
        )
    return sorted(folder.glob("*.jar"))
