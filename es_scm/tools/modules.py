"""OpenSearch modules that an integ-test zip leaves out, assembled from their Maven jars.

OpenSearch's integ-test zip of a 2.x release (``org.opensearch.distribution.integ-test-zip:
opensearch``) holds the server and one module, transport-netty4; the 3.x zips (3.6.0) hold every
module. What es-scm needs beyond the core — ``rank_features`` (mapper-extras), the ``english``
analyzer (analysis-common) and Painless, which analysis-common extends — OpenSearch publishes as
jars (``org.opensearch.plugin:mapper-extras-client`` and so on, :data:`~es_scm.tools.engine.
OPENSEARCH_MODULES`). A module is a folder ``modules/<name>`` with

- its jar and the jars it depends on, fetched by Maven (:func:`~es_scm.tools.maven.
  copy_with_dependencies`) without the engine's core group (``org.opensearch``: the server and
  its libraries are in ``lib/``), and without any jar that ``lib/`` holds already (two copies of
  a class stop the node: "jar hell");
- ``plugin-descriptor.properties``: its name, version, plugin class (the one of
  :attr:`~es_scm.tools.engine.ModuleSpec.plugin_classes` that its jar holds), the modules it
  extends, and the Java and engine versions that the zip's own modules declare;
- ``plugin-security.policy`` when it needs more permissions than the default.

:meth:`ModuleAssembly.ensure` assembles each missing module into a ``.partial`` folder and
renames it when whole, so a failed fetch never leaves a module the node would choke on.
"""

from __future__ import annotations

import fcntl
import shutil
import zipfile
from pathlib import Path

from es_scm.tools.engine import Engine, ModuleSpec
from es_scm.tools.maven import copy_with_dependencies
from es_scm.tools.system import LocalElasticsearchError, log, read_properties

__all__ = [
    "DESCRIPTOR",
    "ModuleAssembly",
    "descriptor_text",
    "jar_stem",
    "plugin_class",
]

DESCRIPTOR = "plugin-descriptor.properties"
POLICY = "plugin-security.policy"
DEFAULT_JAVA_VERSION = "11"  # what 2.x modules declare, should the zip hold none to copy


def jar_stem(name: str) -> str:
    """A jar's name without its version: ``asm-util-9.7.jar`` → ``asm-util``,
    ``netty-codec-4.1.135.Final.jar`` → ``netty-codec``."""
    parts = name.removesuffix(".jar").split("-")
    while len(parts) > 1 and parts[-1][:1].isdigit():
        parts.pop()
    return "-".join(parts)


def plugin_class(jar: Path, candidates: tuple[str, ...]) -> str:
    """The first of ``candidates`` whose class file ``jar`` holds.

    Raises
    ------
    LocalElasticsearchError
        When it holds none of them.
    """
    with zipfile.ZipFile(jar) as archive:
        names = set(archive.namelist())
    for candidate in candidates:
        if candidate.replace(".", "/") + ".class" in names:
            return candidate
    raise LocalElasticsearchError(f"{jar.name} holds none of the classes {', '.join(candidates)}")


def descriptor_text(
    spec: ModuleSpec, engine: Engine, version: str, classname: str, java_version: str
) -> str:
    """``plugin-descriptor.properties`` of an assembled module, in the zip's modules' form."""
    return (
        f"description={spec.description}\n"
        f"version={version}\n"
        f"name={spec.name}\n"
        f"classname={classname}\n"
        f"java.version={java_version}\n"
        f"{engine.name}.version={version}\n"
        "custom.foldername=\n"
        f"extended.plugins={','.join(spec.extends)}\n"
        "has.native.controller=false\n"
    )


class ModuleAssembly:
    """The modules of :attr:`Engine.modules` in one unpacked distribution.

    Parameters
    ----------
    install_dir : path
        The unpacked distribution (``opensearch-<version>``).
    engine : Engine
        Its engine, which names the modules and the core group.
    version : str
        Its version, which is every module's.
    """

    def __init__(self, install_dir: Path, engine: Engine, version: str) -> None:
        self.install_dir = Path(install_dir)
        self.engine = engine
        self.version = version

    @property
    def modules_dir(self) -> Path:
        return self.install_dir / "modules"

    def missing(self) -> list[ModuleSpec]:
        """The engine's modules that the distribution does not have (by folder)."""
        return [spec for spec in self.engine.modules if not (self.modules_dir / spec.name).is_dir()]

    def ensure(self, lock_dir: Path) -> list[str]:
        """Assemble every missing module (once; concurrent runners take turns in ``lock_dir``);
        return the names assembled now.

        Raises
        ------
        LocalElasticsearchError
            When Maven cannot fetch a module's jars or a jar is not the module expected: without
            them the node would lack field types that es-scm maps.
        """
        if not self.missing():
            return []
        lock_dir.mkdir(parents=True, exist_ok=True)
        with (lock_dir / "modules.lock").open("w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            missing = self.missing()
            if missing:
                names = ", ".join(spec.name for spec in missing)
                log(
                    f"assembling the {self.engine.title} modules {names} from their "
                    f"{self.version} jars with Maven (once)"
                )
            for spec in missing:
                self.assemble(spec)
            return [spec.name for spec in missing]

    def assemble(self, spec: ModuleSpec) -> Path:
        """Fetch ``spec``'s jars into ``modules/<name>`` with its descriptor; return the folder."""
        folder = self.modules_dir / spec.name
        partial = folder.with_name(f".{spec.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        jars = copy_with_dependencies(
            spec.artifact, self.version, partial, exclude_group=self.engine.core_group
        )
        in_lib = {jar_stem(path.name) for path in (self.install_dir / "lib").glob("*.jar")}
        for jar in jars:
            if jar_stem(jar.name) in in_lib:
                jar.unlink()
        artifact = spec.artifact.split(":")[1]
        main_jar = partial / f"{artifact}-{self.version}.jar"
        if not main_jar.is_file():
            raise LocalElasticsearchError(f"Maven fetched no {main_jar.name} for {spec.name}")
        classname = plugin_class(main_jar, spec.plugin_classes)
        text = descriptor_text(spec, self.engine, self.version, classname, self.java_version())
        (partial / DESCRIPTOR).write_text(text)
        if spec.security_policy:
            (partial / POLICY).write_text(spec.security_policy)
        shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
        return folder

    def java_version(self) -> str:
        """The ``java.version`` that the zip's own modules declare (their minimum Java)."""
        for descriptor in sorted(self.modules_dir.glob(f"[!.]*/{DESCRIPTOR}")):
            version = read_properties(descriptor).get("java.version")
            if version:
                return version
        return DEFAULT_JAVA_VERSION
