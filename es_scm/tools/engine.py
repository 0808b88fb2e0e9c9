"""The engines the local runner starts, Elasticsearch and OpenSearch: everything that differs.

The runner does the same things for both (fetch a zip with Maven, unpack it, start ``bin/<name>``
with ``-E`` settings as an unprivileged user, wait for health, stop the process group); what
differs between them is described here, once per engine, by an :class:`Engine`:

- the Maven coordinates of the zip and the default version;
- which Java runs which release, and the variables that name it (``ES_JAVA_HOME`` and
  ``ES_JAVA_OPTS``, or ``OPENSEARCH_JAVA_HOME`` and ``OPENSEARCH_JAVA_OPTS``);
- the names of the server and its tools (``bin/elasticsearch``, ``bin/opensearch-keystore``,
  ``config/opensearch.keystore``);
- the settings that differ: security off (``xpack.security.enabled`` exists only in
  Elasticsearch; OpenSearch's integ-test zip has no security plugin), the cluster bootstrap
  setting (``cluster.initial_cluster_manager_nodes`` in OpenSearch), the disk watermarks (their
  defaults, and OpenSearch's ``enable_for_single_data_node``, off by default);
- what the zip lacks and how the runner completes it: Elasticsearch gets the ``es-scm-english``
  analysis plugin (:mod:`es_scm.tools.analysis`); OpenSearch 2.x gets the modules of
  :data:`OPENSEARCH_MODULES`, assembled from their Maven jars (:mod:`es_scm.tools.modules`).

This module only describes; it imports nothing of the runner.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "ELASTICSEARCH",
    "ENGINES",
    "OPENSEARCH",
    "OPENSEARCH_MODULES",
    "DiskWatermark",
    "Engine",
    "JavaRequirement",
    "ModuleSpec",
    "engine_named",
]

GB = 1024**3


@dataclass(frozen=True)
class DiskWatermark:
    """One of an engine's default disk watermarks: a used share, capped by a free headroom.

    ``effect`` may name the engine as ``{title}``. ``max_headroom`` None: no cap (OpenSearch has
    no ``max_headroom`` settings; Elasticsearch added them in 8.5).
    """

    name: str
    used_percent: float
    max_headroom: int | None
    effect: str

    def free_needed(self, total: int) -> int:
        """The free bytes below which the watermark is exceeded on a disk of ``total`` bytes."""
        by_share = int(total * (100.0 - self.used_percent) / 100.0)
        return by_share if self.max_headroom is None else min(by_share, self.max_headroom)


@dataclass(frozen=True)
class JavaRequirement:
    """The Java versions that run the releases of an engine from major ``from_major`` on."""

    from_major: int
    low: int
    high: int | None
    why: str


@dataclass(frozen=True)
class ModuleSpec:
    """A module that an engine's integ-test zip may leave out, assembled from its Maven jar.

    Parameters
    ----------
    name : str
        Its folder under ``modules/`` and its ``name`` in ``plugin-descriptor.properties``.
    artifact : str
        ``groupId:artifactId`` of its jar (the version is the engine's); the jars it depends on
        come along, except those of the engine's core (:attr:`Engine.core_group`).
    plugin_classes : tuple of str
        Its plugin class, as named by the releases (2.x ``MapperExtrasPlugin``, 3.x
        ``MapperExtrasModulePlugin``): the first one the jar holds is the descriptor's
        ``classname``.
    description : str
        What it brings, as es-scm uses it.
    extends : tuple of str
        The modules it extends (``extended.plugins``), which must be there too.
    security_policy : str
        Its ``plugin-security.policy``, when it needs permissions beyond the default (the 2.x
        Security Manager).
    """

    name: str
    artifact: str
    plugin_classes: tuple[str, ...]
    description: str
    extends: tuple[str, ...] = ()
    security_policy: str = ""


@dataclass(frozen=True)
class Engine:
    """What the local runner needs to know to fetch, complete and start one engine.

    ``name`` is the engine's name on the command line (``--engine``) and in its files
    (``bin/<name>``, ``<name>-<version>.zip``, ``config/<name>.keystore``);
    ``variable_prefix`` starts the variables its scripts read (``<prefix>_JAVA_HOME``,
    ``<prefix>_JAVA_OPTS``, ``<prefix>_TMPDIR``, ``<prefix>_PATH_CONF``).
    """

    name: str
    title: str
    artifact: str
    default_version: str
    version_variable: str
    download_size: str
    variable_prefix: str
    java: tuple[JavaRequirement, ...]
    java_modules: tuple[str, ...]
    folder_prefix: str
    state_folder: str
    bootstrap_setting: str
    insecure_settings: Mapping[str, str]
    single_node_settings: Mapping[str, str]
    watermarks: tuple[DiskWatermark, ...]
    supports_security: bool
    english_plugin: bool
    modules: tuple[ModuleSpec, ...] = ()
    core_group: str = ""
    node_settings: Mapping[str, str] = field(default_factory=dict)

    def java_requirement(self, version: str) -> JavaRequirement:
        """The Java versions that run ``version`` of this engine."""
        major = int(version.split(".", 1)[0])
        return next(r for r in self.java if major >= r.from_major)

    def variable(self, suffix: str) -> str:
        """``ES_JAVA_HOME`` or ``OPENSEARCH_JAVA_HOME`` for ``"JAVA_HOME"``, and so on."""
        return f"{self.variable_prefix}_{suffix}"

    def tool(self, name: str) -> str:
        """The file name in ``bin/`` of one of the distribution's tools (``"keystore"``)."""
        return f"{self.name}-{name}"

    def artifact_of(self, version: str) -> str:
        """The Maven coordinates of the zip of ``version``."""
        return self.artifact.format(version=version)

    def label(self, version: str) -> str:
        """How ``version`` names a node's data and logs folders (``9.5.4``,
        ``opensearch-2.19.6``): two engines' folders never meet."""
        return f"{self.folder_prefix}{version}"


# Modules that the 9.x distribution's jars `requires` (from `jar --describe-module`) beyond
# java.base, plus jdk.incubator.vector, which its jvm.options adds on the command line.
ELASTICSEARCH_JAVA_MODULES = (
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

# OpenSearch's jars are not Java modules (automatic ones at most), so this is what its command
# line names — jdk.incubator.vector (jvm.options, Java 20+) and java.instrument (the 3.x agent,
# `-javaagent:agent/opensearch-agent.jar`) — and the platform modules a server uses (logging,
# JMX, XML, Unsafe), which a jlink-trimmed runtime may lack.
OPENSEARCH_JAVA_MODULES = (
    "java.instrument",
    "java.logging",
    "java.management",
    "java.xml",
    "jdk.incubator.vector",
    "jdk.management",
    "jdk.unsupported",
)

_READ_ONLY = "{title} makes indices read-only (writes fail)"
_NO_SHARD = "{title} allocates no new shard on this node"
_NO_REPLICA = "{title} allocates no new replica on this node"

ELASTICSEARCH = Engine(
    name="elasticsearch",
    title="Elasticsearch",
    artifact="org.elasticsearch.distribution.integ-test-zip:elasticsearch:{version}:zip",
    default_version="9.5.4",
    version_variable="ES_SCM_ES_VERSION",
    download_size="about 130 MB",
    variable_prefix="ES",
    java=(
        JavaRequirement(9, 21, None, "9.x needs Java 21+"),
        # Up to 8.17 it installs the Security Manager, which Java 24 removed.
        JavaRequirement(0, 17, 21, "8.x runs on Java 17 to 21"),
    ),
    java_modules=ELASTICSEARCH_JAVA_MODULES,
    folder_prefix="",
    state_folder="_state",
    bootstrap_setting="cluster.initial_master_nodes",
    insecure_settings={"xpack.security.enabled": "false"},
    single_node_settings={},
    # Elasticsearch 9's defaults (`cluster.routing.allocation.disk.watermark.*`, `*.max_headroom`).
    watermarks=(
        DiskWatermark("flood-stage", 95.0, 100 * GB, _READ_ONLY),
        DiskWatermark("high", 90.0, 150 * GB, _NO_SHARD),
        DiskWatermark("low", 85.0, 200 * GB, _NO_REPLICA),
    ),
    supports_security=True,
    english_plugin=True,
)

_PAINLESS_POLICY = """\
grant {
  // needed to generate runtime classes
  permission java.lang.RuntimePermission "createClassLoader";
  // needed to find the classloader to load allowlisted classes from
  permission java.lang.RuntimePermission "getClassLoader";
};
"""

#: What es-scm needs of OpenSearch beyond its core (``_search``, ``_msearch``, ``_mget``,
#: ``_bulk``, point in time, aliases, ``flat_object``, BM25 on ``text`` are all core):
#: ``rank_features`` and the ``rank_feature`` query (mapper-extras), the ``english`` analyzer
#: and the stemmers (analysis-common), and Painless, which analysis-common extends.
OPENSEARCH_MODULES = (
    ModuleSpec(
        "mapper-extras",
        "org.opensearch.plugin:mapper-extras-client",
        (
            "org.opensearch.index.mapper.MapperExtrasPlugin",
            "org.opensearch.index.mapper.MapperExtrasModulePlugin",
        ),
        "rank_features fields and the rank_feature query (es-scm's sparse vectors)",
    ),
    ModuleSpec(
        "lang-painless",
        "org.opensearch.plugin:lang-painless",
        ("org.opensearch.painless.PainlessPlugin", "org.opensearch.painless.PainlessModulePlugin"),
        "Painless scripts (analysis-common extends it)",
        security_policy=_PAINLESS_POLICY,
    ),
    ModuleSpec(
        "analysis-common",
        "org.opensearch.plugin:analysis-common",
        (
            "org.opensearch.analysis.common.CommonAnalysisPlugin",
            "org.opensearch.analysis.common.CommonAnalysisModulePlugin",
        ),
        "the english analyzer, stemmers and stop filters",
        extends=("lang-painless",),
    ),
)

OPENSEARCH = Engine(
    name="opensearch",
    title="OpenSearch",
    artifact="org.opensearch.distribution.integ-test-zip:opensearch:{version}:zip",
    default_version="2.19.6",
    version_variable="ES_SCM_OPENSEARCH_VERSION",
    download_size="56 MB for 2.19, 160 MB for 3.x",
    variable_prefix="OPENSEARCH",
    java=(
        JavaRequirement(3, 21, None, "3.x needs Java 21+"),
        # 2.x installs the Security Manager, which Java 24 removed.
        JavaRequirement(0, 11, 21, "2.x runs on Java 11 to 21"),
    ),
    java_modules=OPENSEARCH_JAVA_MODULES,
    folder_prefix="opensearch-",
    state_folder="nodes/0/_state",
    bootstrap_setting="cluster.initial_cluster_manager_nodes",
    insecure_settings={},
    # OpenSearch ignores the watermarks on a single data node unless told (Elasticsearch 8
    # dropped that exception): on, a full disk blocks writes here as it does on Elasticsearch.
    single_node_settings={
        "cluster.routing.allocation.disk.watermark.enable_for_single_data_node": "true"
    },
    # OpenSearch's defaults: the same shares, no headroom caps.
    watermarks=(
        DiskWatermark("flood-stage", 95.0, None, _READ_ONLY),
        DiskWatermark("high", 90.0, None, _NO_SHARD),
        DiskWatermark("low", 85.0, None, _NO_REPLICA),
    ),
    supports_security=False,
    english_plugin=False,
    modules=OPENSEARCH_MODULES,
    core_group="org.opensearch",
    # OpenSearch applies Lucene's historical limit of 1024 clauses to a query (Elasticsearch 8+
    # derives it from the heap: 16,384 for a 1 GB heap and 4 search threads). An expanded query
    # has O(mC) clauses, and exact search cannot prove a top k whose expansion was cut: the
    # runner's node takes as many as Elasticsearch's would (docs/ELASTICSEARCH.md).
    node_settings={"indices.query.bool.max_clause_count": "16384"},
)

ENGINES: dict[str, Engine] = {engine.name: engine for engine in (ELASTICSEARCH, OPENSEARCH)}


def engine_named(name: str | Engine | None) -> Engine:
    """The engine called ``name`` (None: Elasticsearch).

    Raises
    ------
    ValueError
        When no engine has that name.
    """
    if isinstance(name, Engine):
        return name
    if name is None:
        return ELASTICSEARCH
    try:
        return ENGINES[name]
    except KeyError:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {name!r}") from None
