"""The English analysis plugin's pure parts, without a server or Maven
(:mod:`es_scm.tools.analysis`; the analyzers on a server:
tests/integration/test_english_analysis_es.py).
"""

from __future__ import annotations

import json
import re

import pytest

from es_scm.tools import analysis
from es_scm.tools.analysis import (
    COMPONENTS,
    DESCRIPTOR,
    PLUGIN_NAME,
    AnalysisPlugin,
    AnalysisPluginError,
    descriptor_text,
    lucene_version,
    read_properties,
)


def test_lucene_version_is_read_from_the_jar_name(tmp_path):
    for name in ("lucene-core-10.5.1.jar", "lucene-analysis-common-10.5.1.jar", "x.jar"):
        (tmp_path / name).write_bytes(b"")
    assert lucene_version(tmp_path) == "10.5.1"


def test_lucene_version_names_a_missing_or_ambiguous_jar(tmp_path):
    with pytest.raises(AnalysisPluginError, match="found none"):
        lucene_version(tmp_path)
    with pytest.raises(AnalysisPluginError, match="found none"):
        lucene_version(tmp_path / "absent")
    (tmp_path / "lucene-analysis-common-9.12.2.jar").write_bytes(b"")
    (tmp_path / "lucene-analysis-common-10.5.1.jar").write_bytes(b"")
    with pytest.raises(AnalysisPluginError, match=r"2 versions \(10\.5\.1, 9\.12\.2\)"):
        lucene_version(tmp_path)


def test_the_descriptor_has_only_the_keys_a_stable_plugin_may_have(tmp_path):
    path = tmp_path / DESCRIPTOR
    path.write_text(descriptor_text("1.0+abc", "8.19.9"))
    properties = read_properties(path)
    # Elasticsearch refuses unknown keys, and a classname or modulename in a stable plugin.
    assert set(properties) == {
        "name",
        "description",
        "version",
        "elasticsearch.version",
        "java.version",
    }
    assert properties["name"] == PLUGIN_NAME
    assert properties["elasticsearch.version"] == "8.19.9"
    assert properties["java.version"] == "17"


def test_named_components_match_the_java_sources():
    named = json.loads((analysis.SOURCES / analysis.NAMED_COMPONENTS).read_text())
    declared = {}
    for interface, components in named.items():
        for name, class_name in components.items():
            package, simple = class_name.rsplit(".", 1)
            source = (analysis.SOURCES / "java" / f"{simple}.java").read_text()
            assert f"package {package};" in source
            assert f"implements {interface.rsplit('.', 1)[1]}" in source
            declared[name] = re.search(r'@NamedComponent\("([^"]+)"\)', source).group(1)
    assert declared == {name: name for name in COMPONENTS}


def write_distribution(root, version: str = "9.5.4"):
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "lucene-analysis-common-10.5.1.jar").write_bytes(b"")
    (root / "plugins").mkdir()
    return AnalysisPlugin(root, version, root.parent / "dist")


def test_an_installed_plugin_needs_no_java_and_no_build(tmp_path):
    plugin = write_distribution(tmp_path / "es")
    assert not plugin.installed()
    plugin.plugin_dir.mkdir()
    (plugin.plugin_dir / DESCRIPTOR).write_text(descriptor_text(plugin.plugin_version, "9.5.4"))
    assert plugin.installed()
    assert plugin.ensure(lambda: pytest.fail("java was looked for")) is True
    (plugin.plugin_dir / DESCRIPTOR).write_text(descriptor_text("0.9", "9.5.4"))
    assert not plugin.installed()  # an older plugin version is replaced


def test_a_plugin_that_cannot_be_built_costs_one_warning(tmp_path, monkeypatch, capsys):
    plugin = write_distribution(tmp_path / "es")
    monkeypatch.setattr(analysis.shutil, "which", lambda name: None)
    assert plugin.ensure(lambda: tmp_path / "jdk") is False
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2  # the "building" line, then the warning
    assert "warning:" in lines[1]
    assert "english analyzer" in lines[1]
    assert "Maven (mvn) is not on PATH" in lines[1]
    assert not plugin.zip_path.exists()


def test_a_failed_tool_is_named_by_its_first_error_line():
    maven = (
        "\x1b[0mWARNING: A terminally deprecated method in sun.misc.Unsafe has been called\n"
        "[ERROR] Failed to execute goal on project es-scm-english: Could not find artifact\n"
        "[ERROR] \n[ERROR] To see the full stack trace of the errors, re-run Maven with -e.\n"
    )
    assert analysis._output_tail(maven) == (
        "[ERROR] Failed to execute goal on project es-scm-english: Could not find artifact"
    )
    assert analysis._output_tail("one\ntwo\nthree\nfour\n") == "two | three | four"
    assert analysis._output_tail("") == "no output"


def test_a_failed_install_leaves_no_half_made_plugin(tmp_path):
    plugin = write_distribution(tmp_path / "es")
    (plugin.install_dir / "bin").mkdir()
    cli = plugin.install_dir / "bin" / "elasticsearch-plugin"
    cli.write_text(
        "#!/bin/sh\nmkdir plugins/.installing-1 plugins/es-scm-english\n"
        "echo 'ERROR: boom'\nexit 1\n"
    )
    cli.chmod(0o755)
    plugin.cache.mkdir()
    plugin.zip_path.write_bytes(b"")
    with pytest.raises(
        AnalysisPluginError, match="elasticsearch-plugin install failed: ERROR: boom"
    ):
        plugin.install(tmp_path / "jdk")
    assert list((plugin.install_dir / "plugins").iterdir()) == []
    assert not plugin.zip_path.exists()  # rebuilt next time
