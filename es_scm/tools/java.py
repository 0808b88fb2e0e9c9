"""Find a Java runtime on this machine: its version and modules, from its ``release`` file."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = ["JavaNotFoundError", "JavaRuntime", "find_java"]


class JavaNotFoundError(LookupError):
    """No Java runtime qualifies; the message lists what each candidate lacked."""


@dataclass(frozen=True)
class JavaRuntime:
    """A Java installation that can run a search engine."""

    home: Path
    major: int
    description: str


def _read_release_file(home: Path) -> tuple[int, set[str]] | None:
    release = home / "release"
    if not release.is_file():
        return None
    fields = dict(
        line.split("=", 1)
        for line in release.read_text(errors="replace").splitlines()
        if "=" in line
    )
    version = fields.get("JAVA_VERSION", "").strip('"')
    match = re.match(r"(\d+)", version)
    if not match:
        return None
    modules = set(fields.get("MODULES", "").strip('"').split())
    return int(match.group(1)), modules


#: The variables that name a Java home, each a candidate (:func:`find_java` puts the engine's
#: own first).
JAVA_HOME_VARIABLES = ("ES_JAVA_HOME", "OPENSEARCH_JAVA_HOME", "JAVA_HOME")


def _candidate_java_homes() -> list[tuple[Path, str]]:
    candidates: list[tuple[Path, str]] = []
    for variable in JAVA_HOME_VARIABLES:
        if os.environ.get(variable):
            candidates.append((Path(os.environ[variable]), f"${variable}"))
    jvm_dir = Path("/usr/lib/jvm")
    if jvm_dir.is_dir():
        for home in sorted(jvm_dir.iterdir(), reverse=True):
            if (home / "bin" / "java").is_file() and not home.is_symlink():
                candidates.append((home, str(home)))
    java_on_path = shutil.which("java")
    if java_on_path:
        candidates.append((Path(java_on_path).resolve().parents[1], "java on PATH"))
    return candidates


def find_java(
    min_major: int,
    modules: tuple[str, ...] = (),
    max_major: int | None = None,
    prefer: str = "ES_JAVA_HOME",
) -> JavaRuntime:
    """The first Java runtime of ``min_major`` (up to ``max_major``) that has ``modules``.

    Candidates, in order: ``$prefer`` (the engine's own variable), ``$ES_JAVA_HOME``,
    ``$OPENSEARCH_JAVA_HOME``, ``$JAVA_HOME``, the JDKs under ``/usr/lib/jvm``, ``java`` on
    ``PATH``; each one's ``release`` file gives its version and modules.

    Raises
    ------
    JavaNotFoundError
        When none of the candidates qualifies; the message lists what each one lacked.
    """
    rejected: list[str] = []
    candidates = sorted(_candidate_java_homes(), key=lambda c: c[1] != f"${prefer}")  # stable
    for home, origin in candidates:
        info = _read_release_file(home)
        if info is None:
            rejected.append(f"{origin}: no readable 'release' file")
            continue
        major, available = info
        missing = [m for m in modules if m not in available]
        if major < min_major or (max_major is not None and major > max_major):
            rejected.append(f"{origin}: Java {major}")
        elif missing:
            rejected.append(f"{origin}: Java {major} without {', '.join(missing)}")
        else:
            return JavaRuntime(home=home, major=major, description=f"Java {major} at {home}")
    detail = "; ".join(rejected) if rejected else "no Java installation found"
    raise JavaNotFoundError(detail)
