"""The local runner's logic that needs no server: Java discovery, validation, unpacking, options."""

from __future__ import annotations

import stat
import zipfile

import pytest

from es_scm.elastic.connection import connection_options
from es_scm.tools import es_local, java
from es_scm.tools.es_local import LocalElasticsearch, LocalElasticsearchError


def write_jdk(root, major: int, modules: tuple[str, ...]):
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "java").write_text("")
    (root / "release").write_text(
        f'JAVA_VERSION="{major}.0.1"\nMODULES="java.base {" ".join(modules)}"\n'
    )
    return root


def test_find_java_takes_the_first_full_jdk(tmp_path, monkeypatch):
    old = write_jdk(tmp_path / "old", 17, es_local.REQUIRED_JAVA_MODULES)
    trimmed = write_jdk(tmp_path / "trimmed", 25, ("jdk.attach",))
    full = write_jdk(tmp_path / "full", 25, es_local.REQUIRED_JAVA_MODULES)
    candidates = [(old, "old"), (trimmed, "trimmed"), (full, "full")]
    monkeypatch.setattr(java, "_candidate_java_homes", lambda: candidates)
    assert es_local._find_java().home == full


def test_find_java_says_what_each_candidate_lacks(tmp_path, monkeypatch):
    trimmed = write_jdk(tmp_path / "trimmed", 25, ("jdk.attach",))
    old = write_jdk(tmp_path / "old", 17, es_local.REQUIRED_JAVA_MODULES)
    monkeypatch.setattr(java, "_candidate_java_homes", lambda: [(trimmed, "A"), (old, "B")])
    with pytest.raises(LocalElasticsearchError) as error:
        es_local._find_java()
    message = str(error.value)
    assert "JDK 21+" in message
    assert "A: Java 25 without" in message
    assert "jdk.jdi" in message
    assert "B: Java 17" in message


@pytest.mark.parametrize(
    ("kwargs", "bad"),
    [({"version": "nine"}, "nine"), ({"port": 80}, "80"), ({"heap": "lots"}, "lots")],
)
def test_bad_settings_are_named(kwargs, bad, tmp_path):
    with pytest.raises(ValueError, match=bad):
        LocalElasticsearch(home=tmp_path, **kwargs)


def test_unzip_keeps_executable_bits(tmp_path):
    archive = tmp_path / "dist.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo("es/bin/elasticsearch")
        info.external_attr = (stat.S_IFREG | 0o755) << 16
        zf.writestr(info, "#!/bin/sh\n")
        zf.writestr("es/config/jvm.options", "-Xms1g\n")
    es_local._extract_zip_with_modes(archive, tmp_path / "out")
    assert (tmp_path / "out/es/bin/elasticsearch").stat().st_mode & 0o111
    assert (tmp_path / "out/es/config/jvm.options").read_text() == "-Xms1g\n"


def test_stop_without_a_node_is_a_no_op(tmp_path):
    assert LocalElasticsearch(home=tmp_path, port=9999).stop() is False


def test_connection_options_from_environment(monkeypatch, tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    monkeypatch.setenv("ES_URL", "https://search.example:9243")
    monkeypatch.setenv("ES_API_KEY", "id:secret")
    monkeypatch.setenv("ES_CA_CERTS", str(ca))
    options = connection_options()
    assert options["hosts"] == ["https://search.example:9243"]
    assert options["api_key"] == ("id", "secret")
    assert options["ca_certs"] == str(ca)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": "localhost:9200"}, "http"),
        ({"url": "http://x", "username": "elastic"}, "password"),
        ({"url": "http://x", "ca_certs": "/nonexistent/ca.pem"}, "ca.pem"),
    ],
)
def test_bad_connection_options_are_named(kwargs, message, monkeypatch):
    for variable in ("ES_URL", "ES_API_KEY", "ES_USERNAME", "ES_PASSWORD", "ES_CA_CERTS"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ValueError, match=message):
        connection_options(**kwargs)


def test_requests_are_encoded_with_orjson_when_installed():
    orjson = pytest.importorskip("orjson")
    from es_scm.elastic.connection import client_from_env

    client = client_from_env("http://127.0.0.1:1")
    serializer = client.transport.serializers.get_serializer("application/x-ndjson")
    lines = [{"index": {"_id": "é/1"}}, {"v": {"12": 0.5}, "text": "ü"}]
    assert serializer.dumps(lines) == b"".join(orjson.dumps(line) + b"\n" for line in lines)
