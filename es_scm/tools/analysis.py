"""English stemming for the local runner: a stable analysis plugin built from Lucene's classes.

The integ-test distribution that the runner fetches lacks the analysis-common module, so it has no
``english`` analyzer and no ``porter_stem`` or ``kstem`` filter ("failed to find global analyzer
[english]"), and Elastic does not publish that module on Maven Central. What it does publish is the
stable plugin API (``org.elasticsearch.plugin:elasticsearch-plugin-api`` and
``elasticsearch-plugin-analysis-api``), and the distribution's ``lib/`` ships
``lucene-analysis-common``, where Lucene's ``EnglishAnalyzer``, ``PorterStemFilter`` and
``KStemFilter`` live. The sources in ``analysis_plugin/`` (three factories and a Maven pom) wrap
them as named components under Elasticsearch's own names, so that a mapping means the same on a
full distribution and on the runner:

- analyzer ``english``: ``EnglishAnalyzer`` with its default stop words and no stem exclusion,
  which is what Elasticsearch's built-in ``english`` analyzer is with default settings;
- token filters ``porter_stem`` (``PorterStemFilter``) and ``kstem`` (``KStemFilter``).

:meth:`AnalysisPlugin.ensure` runs after the distribution is unpacked: unless the plugin is
installed already, it builds the jar with Maven (against the node's version of the plugin API and
the distribution's Lucene version, Java 17 bytecode), packs it with
``stable-plugin-descriptor.properties`` and ``named_components.json`` into a zip cached next to
the distribution zip, and installs that with the distribution's ``bin/elasticsearch-plugin``.
A plugin that cannot be built or installed costs one warning, never the node's start.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from es_scm.tools.system import LocalElasticsearchError, log, read_properties

__all__ = [
    "COMPONENTS",
    "PLUGIN_NAME",
    "AnalysisPlugin",
    "AnalysisPluginError",
    "lucene_version",
]

PLUGIN_NAME = "es-scm-english"
COMPONENTS = ("english", "porter_stem", "kstem")
SOURCES = Path(__file__).resolve().with_name("analysis_plugin")
JAVA_RELEASE = "17"  # maven.compiler.release in the pom
DESCRIPTOR = "stable-plugin-descriptor.properties"
NAMED_COMPONENTS = "named_components.json"
SOURCE_SUFFIXES = (".java", ".json", ".xml")
MAVEN_TIMEOUT = 600.0
CLI_TIMEOUT = 120.0
_LUCENE_JAR = re.compile(r"lucene-analysis-common-(\d+\.\d+\.\d+)\.jar")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class AnalysisPluginError(RuntimeError):
    """The analysis plugin could not be built or installed; the message says why."""


def lucene_version(lib: Path) -> str:
    """The Lucene version of a distribution, from the name of ``lib/lucene-analysis-common-*.jar``.

    Raises
    ------
    AnalysisPluginError
        When ``lib`` holds no such jar, or more than one.
    """
    found = sorted(
        match.group(1)
        for path in (lib.iterdir() if lib.is_dir() else ())
        if (match := _LUCENE_JAR.fullmatch(path.name))
    )
    if len(found) != 1:
        what = f"{len(found)} versions ({', '.join(found)})" if found else "none"
        raise AnalysisPluginError(f"expected one lucene-analysis-common jar in {lib}, found {what}")
    return found[0]


def sources_digest(sources: Path = SOURCES) -> str:
    """A short digest of the plugin's sources: a changed source makes a new plugin version."""
    digest = hashlib.sha256()
    for path in sorted(p for p in sources.rglob("*") if p.suffix in SOURCE_SUFFIXES):
        digest.update(path.relative_to(sources).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def descriptor_text(plugin_version: str, es_version: str) -> str:
    """``stable-plugin-descriptor.properties``: stable plugins take no classname or modulename."""
    return (
        f"name={PLUGIN_NAME}\n"
        f"description=Elasticsearch's {', '.join(COMPONENTS)} from Lucene's own classes "
        "(es-scm local runner)\n"
        f"version={plugin_version}\n"
        f"elasticsearch.version={es_version}\n"
        f"java.version={JAVA_RELEASE}\n"
    )


def _output_tail(output: str, lines: int = 3) -> str:
    """What names the cause in a tool's output: its first error line, else its last lines."""
    text = [line.strip() for line in _ANSI.sub("", output).splitlines() if line.strip()]
    text = [line for line in text if not line.startswith("WARNING:")]  # JVM noise
    # Maven follows its first error with generic advice, also tagged [ERROR].
    errors = [line for line in text if line.startswith(("[ERROR] ", "ERROR", "Exception"))]
    return " | ".join(errors[:1] or text[-lines:]) or "no output"


class AnalysisPlugin:
    """The English analysis plugin of one unpacked distribution.

    Parameters
    ----------
    install_dir : path
        The unpacked distribution (``elasticsearch-<version>``).
    version : str
        Its Elasticsearch version, e.g. ``"9.5.4"``.
    cache : path
        Where built plugin zips are kept (the folder of the distribution zip).
    """

    def __init__(self, install_dir: Path, version: str, cache: Path) -> None:
        self.install_dir = Path(install_dir)
        self.version = version
        self.cache = Path(cache)
        self.plugin_version = f"1.0+{sources_digest()}"

    @property
    def plugin_dir(self) -> Path:
        return self.install_dir / "plugins" / PLUGIN_NAME

    @property
    def zip_path(self) -> Path:
        return self.cache / f"{PLUGIN_NAME}-{self.plugin_version}-es{self.version}.zip"

    def installed(self) -> bool:
        """Whether this plugin version, built for this Elasticsearch version, is installed."""
        try:
            properties = read_properties(self.plugin_dir / DESCRIPTOR)
        except OSError:
            return False
        wanted = {"version": self.plugin_version, "elasticsearch.version": self.version}
        return all(properties.get(key) == value for key, value in wanted.items())

    def ensure(self, java_home: Callable[[], Path]) -> bool:
        """Build (once) and install the plugin unless it is installed; True if it is installed.

        ``java_home`` gives the JDK that builds the plugin and runs ``elasticsearch-plugin`` (the
        node's own, called only when there is work). A failure is logged as one warning.
        """
        if self.installed():
            return True
        try:
            with self._lock():
                if not self.installed():
                    self._build_and_install(java_home())
            return True
        except (AnalysisPluginError, LocalElasticsearchError, OSError) as error:
            log(
                f"warning: the analysis plugin {PLUGIN_NAME} could not be installed, so the "
                f"{COMPONENTS[0]} analyzer and the {' and '.join(COMPONENTS[1:])} filters will "
                f"be missing: {error}"
            )
            return False

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        """Serialize concurrent starts of the same distribution while the plugin is made."""
        self.cache.mkdir(parents=True, exist_ok=True)
        with (self.cache / f"{PLUGIN_NAME}.lock").open("w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def _build_and_install(self, java_home: Path) -> None:
        lucene = lucene_version(self.install_dir / "lib")
        if self.zip_path.is_file():
            log(f"installing {PLUGIN_NAME} ({', '.join(COMPONENTS)}) from {self.zip_path}")
        else:
            log(
                f"building the analysis plugin {PLUGIN_NAME} ({', '.join(COMPONENTS)}) from "
                f"Lucene {lucene}'s classes with Maven, and installing it (once)"
            )
            self.build(java_home, lucene)
        self.install(java_home)

    def build(self, java_home: Path, lucene: str) -> Path:
        """Compile the plugin with Maven and write its zip to the cache; return the zip."""
        mvn = shutil.which("mvn")
        if mvn is None:
            raise AnalysisPluginError("Maven (mvn) is not on PATH")
        with tempfile.TemporaryDirectory(prefix=f"{PLUGIN_NAME}-") as temporary:
            project = Path(temporary) / "project"
            shutil.copytree(SOURCES, project, ignore=shutil.ignore_patterns("target"))
            command = [
                mvn,
                "-q",
                "-B",
                "package",
                f"-Delasticsearch.version={self.version}",
                f"-Dlucene.version={lucene}",
            ]
            env = os.environ | {"JAVA_HOME": str(java_home)}
            try:
                result = subprocess.run(
                    command,
                    cwd=project,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=MAVEN_TIMEOUT,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                raise AnalysisPluginError(f"mvn package ran over {MAVEN_TIMEOUT:.0f}s") from None
            jar = project / "target" / f"{PLUGIN_NAME}.jar"
            if result.returncode != 0 or not jar.is_file():
                raise AnalysisPluginError(
                    "mvn package failed: " + _output_tail(result.stdout + result.stderr)
                )
            partial = self.zip_path.with_name(self.zip_path.name + ".partial")
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
                archive.write(jar, jar.name)
                archive.writestr(DESCRIPTOR, descriptor_text(self.plugin_version, self.version))
                archive.write(SOURCES / NAMED_COMPONENTS, NAMED_COMPONENTS)
        partial.replace(self.zip_path)
        return self.zip_path

    def install(self, java_home: Path) -> None:
        """Install the cached zip with the distribution's ``bin/elasticsearch-plugin``.

        An older version of the plugin is removed first. As root, the files are root's until
        the node's launch gives the distribution to the ``es-scm`` user.
        """
        shutil.rmtree(self.plugin_dir, ignore_errors=True)
        command = [
            str(self.install_dir / "bin" / "elasticsearch-plugin"),
            "install",
            "--batch",
            self.zip_path.resolve().as_uri(),
        ]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "ES_JAVA_HOME": str(java_home),
            "HOME": os.environ.get("HOME", str(self.install_dir)),
            "LANG": "C.UTF-8",
        }
        try:
            result = subprocess.run(
                command,
                cwd=self.install_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=CLI_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            result = subprocess.CompletedProcess(command, -1, "", f"ran over {CLI_TIMEOUT:.0f}s")
        if result.returncode != 0 or not self.installed():
            self.zip_path.unlink(missing_ok=True)  # the next start builds it afresh
            # A half-made plugin folder would stop the node from starting.
            for leftover in [self.plugin_dir, *self.plugin_dir.parent.glob(".installing-*")]:
                shutil.rmtree(leftover, ignore_errors=True)
            raise AnalysisPluginError(
                "elasticsearch-plugin install failed: "
                + _output_tail(result.stdout + result.stderr)
            )
