"""English stemming: the ``english`` analyzer and the ``porter_stem`` and ``kstem`` filters.

A full distribution has them built in (analysis-common); the local runner serves them from the
stable plugin of :mod:`es_scm.tools.analysis`. The integration tests hold either to the same
expected tokens, written by hand from Porter's algorithm and from Elastic's documentation. The
other tests check the plugin's pure parts without a server or Maven.
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

integration = pytest.mark.integration


def tokens(es_client, **body) -> list[str]:
    return [token["token"] for token in es_client.indices.analyze(**body)["tokens"]]


# --------------------------------------------------------------------------- against the server


@integration
def test_the_english_analyzer_drops_stop_words_and_possessives_and_stems(es_client):
    # Porter: running → runn → run (undoubled), flows → flow, studies → studi (ies → i);
    # "the" and "of" are default English stop words; "John's" loses its possessive.
    assert tokens(es_client, analyzer="english", text="The Running flows of studies") == [
        "run",
        "flow",
        "studi",
    ]
    assert tokens(es_client, analyzer="english", text="John's ponies caresses") == [
        "john",
        "poni",
        "caress",
    ]


@integration
def test_porter_stem_and_kstem_filters_stem_as_documented(es_client):
    text = "the foxes jumping quickly"
    # Porter: foxes → foxe → fox (final e of a cvc stem ending in x goes), quickly → quickli.
    porter = tokens(es_client, tokenizer="standard", filter=["lowercase", "porter_stem"], text=text)
    assert porter == ["the", "fox", "jump", "quickli"]
    # Elastic's kstem reference example: the same sentence gives quick, not quickli.
    kstem = tokens(es_client, tokenizer="standard", filter=["lowercase", "kstem"], text=text)
    assert kstem == ["the", "fox", "jump", "quick"]


@integration
def test_an_index_with_english_and_porter_fields_matches_across_word_forms(es_client, index_name):
    es_client.indices.create(
        index=index_name,
        settings={
            "number_of_shards": 1,
            "number_of_replicas": 0,
            "analysis": {
                "analyzer": {
                    "porter": {"tokenizer": "standard", "filter": ["lowercase", "porter_stem"]},
                    "kstem": {"tokenizer": "standard", "filter": ["lowercase", "kstem"]},
                }
            },
        },
        mappings={
            "properties": {
                "text": {"type": "text", "analyzer": "english"},
                "porter": {"type": "text", "analyzer": "porter"},
                "kstem": {"type": "text", "analyzer": "kstem"},
            }
        },
    )
    documents = {
        "d1": "Two studies of running water",
        "d2": "Cats sleep all day",
    }
    for doc_id, text in documents.items():
        es_client.index(
            index=index_name, id=doc_id, document=dict.fromkeys(("text", "porter", "kstem"), text)
        )
    es_client.indices.refresh(index=index_name)

    def hits(field: str, query: str) -> list[str]:
        response = es_client.search(index=index_name, query={"match": {field: query}})
        return sorted(hit["_id"] for hit in response["hits"]["hits"])

    # studying → study (ing) → studi (y → i), the stem of "studies" too.
    assert hits("text", "studying") == ["d1"]
    assert hits("porter", "studying") == ["d1"]
    assert hits("text", "runs") == ["d1"]
    assert hits("kstem", "study") == ["d1"]  # kstem: studies → study
    assert hits("text", "the") == []  # a stop word
    assert tokens(es_client, index=index_name, field="text", text="Cats sleeping") == [
        "cat",
        "sleep",
    ]


# --------------------------------------------------------------------------- the plugin's parts


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
