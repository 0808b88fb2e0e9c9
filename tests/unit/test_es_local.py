"""The local runner's logic that needs no server: Java discovery, validation, unpacking, options,
and what differs for OpenSearch (settings, folders, Java, modules)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import zipfile

import pytest

from es_scm.elastic.connection import connection_options
from es_scm.tools import engine, es_local, java, launch, maven, modules, node, system
from es_scm.tools.es_local import LocalCluster, LocalElasticsearch, LocalElasticsearchError
from es_scm.tools.node import ownership_problem

GB = 1024**3


def write_jdk(root, major: int, modules: tuple[str, ...]):
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "java").write_text("")
    (root / "release").write_text(
        f'JAVA_VERSION="{major}.0.1"\nMODULES="java.base {" ".join(modules)}"\n'
    )
    return root


def test_find_java_takes_the_first_full_jdk(tmp_path, monkeypatch):
    old = write_jdk(tmp_path / "old", 17, node.REQUIRED_JAVA_MODULES)
    trimmed = write_jdk(tmp_path / "trimmed", 25, ("jdk.attach",))
    full = write_jdk(tmp_path / "full", 25, node.REQUIRED_JAVA_MODULES)
    candidates = [(old, "old"), (trimmed, "trimmed"), (full, "full")]
    monkeypatch.setattr(java, "_candidate_java_homes", lambda: candidates)
    assert node.find_runtime().home == full


def test_find_java_says_what_each_candidate_lacks(tmp_path, monkeypatch):
    trimmed = write_jdk(tmp_path / "trimmed", 25, ("jdk.attach",))
    old = write_jdk(tmp_path / "old", 17, node.REQUIRED_JAVA_MODULES)
    monkeypatch.setattr(java, "_candidate_java_homes", lambda: [(trimmed, "A"), (old, "B")])
    with pytest.raises(LocalElasticsearchError) as error:
        node.find_runtime()
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
    system.extract_zip_with_modes(archive, tmp_path / "out")
    assert (tmp_path / "out/es/bin/elasticsearch").stat().st_mode & 0o111
    assert (tmp_path / "out/es/config/jvm.options").read_text() == "-Xms1g\n"


def test_stop_without_a_node_is_a_no_op(tmp_path):
    assert LocalElasticsearch(home=tmp_path, port=9999).stop() is False


# -- options of start|stop|status -----------------------------------------------------------------


def parse(*argv: str):
    return es_local.build_parser().parse_args(list(argv))


def test_nodes_secure_and_credentials_options():
    args = parse("start", "--nodes", "3", "--port", "9260", "--secure", "--print-credentials")
    assert (args.nodes, args.port, args.secure, args.print_credentials) == (3, 9260, True, True)
    args = parse("status")
    assert (args.nodes, args.secure, args.print_credentials) == (None, None, False)


@pytest.mark.parametrize("bad", ["0", "10", "three", "-1"])
def test_bad_node_counts_are_usage_errors(bad, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse("start", "--nodes", bad)
    assert exit_.value.code == 2
    assert "1..9" in capsys.readouterr().err


def test_es_scm_es_help_lists_the_actions(capsys):
    from es_scm.cli import main

    assert main(["es", "--help"]) == 0
    out = capsys.readouterr().out
    for action in ("start", "stop", "status", "install", "ACTION --help"):
        assert action in out


@pytest.mark.parametrize(
    ("action", "shown", "not_shown"),
    [
        ("start", ["--nodes N", "--secure", "--print-credentials", "--heap", "watermark"], []),
        ("stop", ["--port", "--nodes N", "what `start` used"], ["--heap", "--print-credentials"]),
        ("status", ["--print-credentials", "data folder", "exits 3"], ["--heap", "--timeout"]),
        ("install", ["--version", "--home"], ["--port", "--nodes"]),
    ],
)
def test_each_es_action_has_its_own_help(action, shown, not_shown, capsys):
    """`es-scm es start --help` is start's help, not the general `es` one (issue 41)."""
    from es_scm.cli import main

    assert main(["es", action, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: es-scm es {action} ")
    assert es_local.ACTIONS[action][1].splitlines()[0] in out
    for text in shown:
        assert text in out
    for text in not_shown:
        assert text not in out


def test_es_actions_take_verbose_after_the_action():
    args = es_local.build_parser(parents=[]).parse_args(["status", "--port", "9999"])
    assert (args.action, args.port, args.timeout) == ("status", 9999, 240.0)
    from es_scm.cli.main import build_parser

    args = build_parser().parse_args(["es", "status", "-v", "--port", "9999"])
    assert (args.action, args.port, args.verbose) == ("status", 9999, True)


def test_stop_and_status_remember_the_layout_of_start(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "9262.json").write_text('{"nodes": 3, "secure": true}')
    home = ("--home", str(tmp_path), "--port", "9262")
    for action in ("stop", "status"):
        cluster = es_local.cluster_from_args(parse(action, *home))
        assert [n.port for n in cluster.nodes] == [9262, 9263, 9264]
        assert cluster.secure
    one = es_local.cluster_from_args(parse("status", *home, "--nodes", "1"))
    assert len(one.nodes) == 1
    assert one.secure
    start = es_local.cluster_from_args(parse("start", *home))
    assert len(start.nodes) == 1
    assert not start.secure


# -- node and cluster settings --------------------------------------------------------------------


def test_cluster_nodes_have_their_ports_folders_and_discovery(tmp_path):
    cluster = LocalCluster(3, 9260, home=tmp_path, heap="512m")
    assert cluster.urls == [f"http://127.0.0.1:{p}" for p in (9260, 9261, 9262)]
    settings = [n.settings() for n in cluster.nodes]
    assert [s["http.port"] for s in settings] == ["9260", "9261", "9262"]
    assert [s["transport.port"] for s in settings] == ["9360", "9361", "9362"]
    for s in settings:
        assert s["discovery.seed_hosts"] == "127.0.0.1:9360,127.0.0.1:9361,127.0.0.1:9362"
        assert s["cluster.initial_master_nodes"] == "es-scm-9260,es-scm-9261,es-scm-9262"
        assert s["cluster.name"] == "es-scm-cluster-9260"
        assert "discovery.type" not in s
    for key in ("path.data", "path.logs", "node.name"):
        assert len({s[key] for s in settings}) == 3
    assert len({n.pid_file for n in cluster.nodes}) == 3
    # once a node has run, it must not try to bootstrap a cluster again
    (cluster.nodes[0].data_dir / "_state").mkdir(parents=True)
    assert "cluster.initial_master_nodes" not in cluster.nodes[0].settings()


def test_a_single_node_keeps_the_disk_watermarks_on(tmp_path):
    settings = LocalElasticsearch(home=tmp_path, port=9260).settings()
    assert settings["discovery.type"] == "single-node"
    assert not [key for key in settings if key.startswith("cluster.routing.allocation.disk")]
    assert settings["xpack.security.enabled"] == "false"
    assert LocalCluster(1, 9260, home=tmp_path).nodes[0].settings() == settings


def test_extra_settings_reach_every_node_last(tmp_path):
    extra = {"cluster.info.update.interval": "10s", "node.attr.rack": "r1"}
    cluster = LocalCluster(2, 9260, home=tmp_path, settings=extra)
    for local in cluster.nodes:
        assert local.settings().items() >= extra.items()
        assert list(local.settings())[-2:] == list(extra)


def test_a_secure_node_speaks_https_with_the_homes_certificates(tmp_path):
    secure = LocalElasticsearch(home=tmp_path, port=9260, secure=True)
    assert secure.url == "https://127.0.0.1:9260"
    settings = secure.settings()
    assert settings["xpack.security.enabled"] == "true"
    for layer in ("http", "transport"):
        assert settings[f"xpack.security.{layer}.ssl.enabled"] == "true"
        assert settings[f"xpack.security.{layer}.ssl.certificate"] == "es-scm-certs/node.crt"
    credentials = secure.credentials()
    assert credentials["username"] == "es-scm-admin"
    assert credentials["ca_certs"] == str(tmp_path / "secure" / "ca" / "ca.crt")
    assert credentials["password"] is None  # made by the first secure start
    with pytest.raises(LocalElasticsearchError, match="not secured"):
        LocalElasticsearch(home=tmp_path, port=9260).credentials()


@pytest.mark.parametrize(
    ("nodes", "port", "bad"),
    [(0, 9260, "nodes"), (10, 9260, "nodes"), (True, 9260, "nodes"), (3, 65434, "65436")],
)
def test_bad_cluster_layouts_are_named(nodes, port, bad, tmp_path):
    with pytest.raises(ValueError, match=bad):
        LocalCluster(nodes, port, home=tmp_path)


# -- which node is this home's --------------------------------------------------------------------


def test_a_node_is_this_homes_by_its_live_pid_or_its_data_folder(tmp_path):
    expected = tmp_path / "data" / "9.5.4-9260"
    assert ownership_problem(9260, tmp_path, 1234, expected, None) is None
    assert ownership_problem(9260, tmp_path, None, expected, [str(expected)]) is None
    problem = ownership_problem(9260, tmp_path, None, expected, ["/elsewhere/data/9.5.4-9260"])
    assert problem is not None
    assert "port 9260" in problem
    assert "/elsewhere/data/9.5.4-9260" in problem
    assert "stop that node or pick another --port" in problem
    assert "\n" not in problem
    assert "unknown" in (ownership_problem(9260, tmp_path, None, expected, None) or "")


def test_a_stale_pid_file_does_not_make_a_node_ours(tmp_path):
    local = LocalElasticsearch(home=tmp_path, port=9260)
    local.pid_file.parent.mkdir(parents=True)
    local.pid_file.write_text("999999999\n")  # above any pid_max
    assert local.running_pid() is None
    local.pid_file.write_text(f"{os.getpid()}\n")
    assert local.running_pid() == os.getpid()


def test_a_port_held_by_another_process_is_named(tmp_path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with pytest.raises(LocalElasticsearchError) as error:
            LocalElasticsearch(home=tmp_path, port=port).start(timeout=1)
    message = str(error.value)
    assert f"port {port} is in use" in message
    assert "--port" in message
    assert "\n" not in message
    assert not (tmp_path / "dist").exists()  # refused before any install


def test_start_refuses_another_layout_of_this_homes_running_nodes(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "9260.json").write_text('{"nodes": 3, "secure": false}')
    stand_in = subprocess.Popen(["sleep", "60"], start_new_session=True)  # a live "node"
    try:
        (tmp_path / "run" / "9261.pid").write_text(f"{stand_in.pid}\n")
        with pytest.raises(LocalElasticsearchError, match="runs with --nodes 3; stop it first"):
            LocalCluster(1, 9260, home=tmp_path, secure=True).start(timeout=1)
    finally:
        stand_in.kill()
        stand_in.wait()


def test_delete_data_is_refused_while_a_node_runs(tmp_path):
    cluster = LocalCluster(2, 9260, home=tmp_path)
    for local in cluster.nodes:
        (local.data_dir / "_state").mkdir(parents=True)
    stand_in = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        cluster.nodes[1].pid_file.parent.mkdir(parents=True)
        cluster.nodes[1].pid_file.write_text(f"{stand_in.pid}\n")
        with pytest.raises(LocalElasticsearchError, match="9261"):
            cluster.delete_data()
    finally:
        stand_in.kill()
        stand_in.wait()
    cluster.delete_data()
    assert not any(local.data_dir.exists() for local in cluster.nodes)


# -- disk watermarks and secrets in messages ------------------------------------------------------


def test_disk_warnings_name_the_watermark_that_is_passed(tmp_path):
    assert system.disk_warnings(tmp_path, total=1000 * GB, free=500 * GB) == []
    (flood,) = system.disk_warnings(tmp_path, total=100 * GB, free=4 * GB)
    assert "flood-stage watermark (5.0 GB free)" in flood
    assert "read-only" in flood
    (high,) = system.disk_warnings(tmp_path, total=100 * GB, free=8 * GB)
    assert "high watermark" in high
    # on a large disk the defaults' headroom caps the percentages: 210 GB free of 2 TB is fine
    assert system.disk_warnings(tmp_path, total=2000 * GB, free=210 * GB) == []


def test_start_messages_show_the_password_only_when_asked(tmp_path, capsys):
    cluster = LocalCluster(1, 9260, home=tmp_path, secure=True)
    (tmp_path / "secure").mkdir()
    for user in ("es-scm-admin", "es-scm-writer"):
        (tmp_path / "secure" / f"{user}.password").write_text(f"secret-of-{user}\n")
    es_local._describe_security(cluster, print_credentials=False)
    shown = capsys.readouterr()
    assert "secret-of" not in shown.out + shown.err
    assert "ES_URL=https://127.0.0.1:9260" in shown.err
    assert f"ES_CA_CERTS={tmp_path / 'secure' / 'ca' / 'ca.crt'}" in shown.err
    assert "ES_USERNAME=es-scm-admin" in shown.err
    assert f'ES_PASSWORD="$(cat {tmp_path / "secure" / "es-scm-admin.password"})"' in shown.err
    es_local._describe_security(cluster, print_credentials=True)
    shown = capsys.readouterr()
    assert "ES_USERNAME=es-scm-writer ES_PASSWORD=secret-of-es-scm-writer" in shown.out


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


# -- OpenSearch: the engine's description, its node's settings, its modules -----------------------


def test_the_engine_is_elasticsearch_unless_named(tmp_path):
    assert LocalElasticsearch(home=tmp_path).engine is engine.ELASTICSEARCH
    assert LocalElasticsearch(home=tmp_path, engine="opensearch").engine is engine.OPENSEARCH
    with pytest.raises(ValueError, match="engine must be one of elasticsearch, opensearch"):
        LocalElasticsearch(home=tmp_path, engine="solr")


def test_each_engine_has_its_own_default_version_and_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("ES_SCM_ES_VERSION", "8.19.9")
    monkeypatch.delenv("ES_SCM_OPENSEARCH_VERSION", raising=False)
    assert LocalElasticsearch(home=tmp_path).version == "8.19.9"
    assert LocalElasticsearch(home=tmp_path, engine="opensearch").version == "2.19.6"
    monkeypatch.setenv("ES_SCM_OPENSEARCH_VERSION", "3.6.0")
    assert LocalElasticsearch(home=tmp_path, engine="opensearch").version == "3.6.0"


@pytest.mark.parametrize(
    ("name", "version", "low", "high"),
    [
        ("elasticsearch", "9.5.4", 21, None),
        ("elasticsearch", "8.19.9", 17, 21),
        ("opensearch", "2.19.6", 11, 21),
        ("opensearch", "3.6.0", 21, None),
    ],
)
def test_java_requirements_by_engine_and_major(name, version, low, high):
    requirement = engine.ENGINES[name].java_requirement(version)
    assert (requirement.low, requirement.high) == (low, high)


def test_opensearch_2_gets_a_java_before_24_its_own_variable_first(tmp_path, monkeypatch):
    newest = write_jdk(tmp_path / "newest", 25, engine.OPENSEARCH.java_modules)
    system_17 = write_jdk(tmp_path / "system", 17, engine.OPENSEARCH.java_modules)
    named = write_jdk(tmp_path / "named", 21, engine.OPENSEARCH.java_modules)
    candidates = [(newest, "/usr/lib/jvm/newest"), (system_17, "java on PATH")]
    monkeypatch.setattr(java, "_candidate_java_homes", lambda: candidates)
    assert node.find_runtime("2.19.6", engine.OPENSEARCH).home == system_17
    assert node.find_runtime("3.6.0", engine.OPENSEARCH).home == newest
    candidates.append((named, "$OPENSEARCH_JAVA_HOME"))
    assert node.find_runtime("2.19.6", engine.OPENSEARCH).home == named


def test_find_java_names_the_engine_and_its_variable(tmp_path, monkeypatch):
    old = write_jdk(tmp_path / "old", 17, engine.OPENSEARCH.java_modules)
    monkeypatch.setattr(java, "_candidate_java_homes", lambda: [(old, "A")])
    with pytest.raises(LocalElasticsearchError) as error:
        node.find_runtime("3.6.0", engine.OPENSEARCH)
    message = str(error.value)
    assert message.startswith("OpenSearch 3 needs a full JDK 21+")
    assert "OPENSEARCH_JAVA_HOME" in message
    assert "A: Java 17" in message


def test_an_opensearch_node_has_no_xpack_and_keeps_watermarks_on_one_node(tmp_path):
    local = LocalElasticsearch(home=tmp_path, port=9400, engine="opensearch")
    settings = local.settings()
    assert not [key for key in settings if key.startswith("xpack.")]
    assert settings["discovery.type"] == "single-node"
    single = "cluster.routing.allocation.disk.watermark.enable_for_single_data_node"
    assert settings[single] == "true"
    assert local.url == "http://127.0.0.1:9400"
    assert local.install_dir == tmp_path / "opensearch-2.19.6"
    assert local.zip_path == tmp_path / "dist" / "opensearch-2.19.6.zip"
    assert local.distribution.keystore.name == "opensearch.keystore"
    assert local.data_dir == tmp_path / "data" / "opensearch-2.19.6-9400"
    # an Elasticsearch node's folders are as they were
    assert LocalElasticsearch(home=tmp_path, port=9400).data_dir == tmp_path / "data" / "9.5.4-9400"


def test_an_opensearch_cluster_bootstraps_with_cluster_manager_nodes(tmp_path):
    cluster = LocalCluster(2, 9400, home=tmp_path, engine="opensearch")
    settings = [n.settings() for n in cluster.nodes]
    for s in settings:
        assert s["cluster.initial_cluster_manager_nodes"] == "es-scm-9400,es-scm-9401"
        assert "cluster.initial_master_nodes" not in s
        assert "discovery.type" not in s
        assert not [key for key in s if "enable_for_single_data_node" in key]
    # OpenSearch keeps its node state in nodes/0/_state: once there, no bootstrap again
    (cluster.nodes[0].data_dir / "nodes" / "0" / "_state").mkdir(parents=True)
    assert "cluster.initial_cluster_manager_nodes" not in cluster.nodes[0].settings()
    assert "cluster.initial_cluster_manager_nodes" in cluster.nodes[1].settings()


def test_secure_is_refused_for_opensearch_in_one_line(tmp_path):
    with pytest.raises(ValueError, match="--secure is not available for OpenSearch") as error:
        LocalCluster(1, 9400, home=tmp_path, secure=True, engine="opensearch")
    assert "\n" not in str(error.value)
    assert es_local.main(["start", "--engine", "opensearch", "--secure", "--home", str(tmp_path)])
    assert not (tmp_path / "dist").exists()


def test_the_engine_option_and_the_saved_layout(tmp_path):
    args = parse("start", "--engine", "opensearch", "--version", "3.6.0", "--home", str(tmp_path))
    cluster = es_local.cluster_from_args(args)
    assert cluster.engine is engine.OPENSEARCH
    assert cluster.nodes[0].version == "3.6.0"
    assert cluster.layout == {"nodes": 1, "secure": False, "engine": "opensearch"}
    # stop and status take the engine that start saved; a layout saved before has none
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "9400.json").write_text(json.dumps(cluster.layout))
    home = ("--home", str(tmp_path), "--port", "9400")
    assert es_local.cluster_from_args(parse("status", *home)).engine is engine.OPENSEARCH
    (tmp_path / "run" / "9400.json").write_text('{"nodes": 1, "secure": false}')
    assert es_local.cluster_from_args(parse("stop", *home)).engine is engine.ELASTICSEARCH
    with pytest.raises(SystemExit):
        parse("start", "--engine", "solr")


def test_start_refuses_another_engine_on_this_homes_running_port(tmp_path):
    (tmp_path / "run").mkdir()
    layout = {"nodes": 1, "secure": False, "engine": "opensearch"}
    (tmp_path / "run" / "9400.json").write_text(json.dumps(layout))
    stand_in = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        (tmp_path / "run" / "9400.pid").write_text(f"{stand_in.pid}\n")
        with pytest.raises(LocalElasticsearchError) as error:
            LocalCluster(1, 9400, home=tmp_path).start(timeout=1)
    finally:
        stand_in.kill()
        stand_in.wait()
    assert "this home's OpenSearch on port 9400 runs with --nodes 1 --engine opensearch" in str(
        error.value
    )


def test_opensearch_watermarks_have_no_headroom(tmp_path):
    # 2 TB with 210 GB free: under Elasticsearch's 200 GB cap, past OpenSearch's 85 % (300 GB)
    assert system.disk_warnings(tmp_path, total=2000 * GB, free=210 * GB) == []
    (low,) = system.disk_warnings(
        tmp_path, total=2000 * GB, free=210 * GB, engine=engine.OPENSEARCH
    )
    assert "under OpenSearch's low watermark (300.0 GB free)" in low
    assert "OpenSearch allocates no new replica" in low
    (flood,) = system.disk_warnings(tmp_path, total=100 * GB, free=4 * GB, engine=engine.OPENSEARCH)
    assert "OpenSearch makes indices read-only" in flood


def test_engine_scripts_and_variables(tmp_path):
    opensearch = engine.OPENSEARCH
    env = launch.node_environment(tmp_path / "jdk", "512m", tmp_path, opensearch)
    assert env["OPENSEARCH_JAVA_HOME"] == str(tmp_path / "jdk")
    assert env["OPENSEARCH_JAVA_OPTS"] == "-Xms512m -Xmx512m"
    assert env["OPENSEARCH_TMPDIR"] == str(tmp_path / "tmp")
    assert not [key for key in env if key.startswith("ES_")]
    assert set(launch.node_environment(tmp_path, "1g", tmp_path)) >= {"ES_JAVA_HOME", "ES_TMPDIR"}
    assert opensearch.tool("keystore") == "opensearch-keystore"
    assert opensearch.artifact_of("2.19.6") == (
        "org.opensearch.distribution.integ-test-zip:opensearch:2.19.6:zip"
    )


def write_jar(path, *classes: str):
    with zipfile.ZipFile(path, "w") as jar:
        for name in classes:
            jar.writestr(name.replace(".", "/") + ".class", b"")
    return path


def test_a_module_descriptor_names_the_class_its_jar_holds(tmp_path):
    spec = engine.OPENSEARCH_MODULES[0]
    old = write_jar(tmp_path / "old.jar", "org.opensearch.index.mapper.MapperExtrasPlugin")
    new = write_jar(tmp_path / "new.jar", "org.opensearch.index.mapper.MapperExtrasModulePlugin")
    assert modules.plugin_class(old, spec.plugin_classes).endswith(".MapperExtrasPlugin")
    assert modules.plugin_class(new, spec.plugin_classes).endswith(".MapperExtrasModulePlugin")
    with pytest.raises(LocalElasticsearchError, match="none of the classes"):
        modules.plugin_class(write_jar(tmp_path / "other.jar", "a.B"), spec.plugin_classes)
    analysis = next(s for s in engine.OPENSEARCH_MODULES if s.name == "analysis-common")
    text = modules.descriptor_text(analysis, engine.OPENSEARCH, "2.19.6", "x.Y", "11")
    (tmp_path / "descriptor").write_text(text)
    assert system.read_properties(tmp_path / "descriptor") == {
        "description": analysis.description,
        "version": "2.19.6",
        "name": "analysis-common",
        "classname": "x.Y",
        "java.version": "11",
        "opensearch.version": "2.19.6",
        "custom.foldername": "",
        "extended.plugins": "lang-painless",
        "has.native.controller": "false",
    }


@pytest.mark.parametrize(
    ("jar", "stem"),
    [
        ("asm-util-9.7.jar", "asm-util"),
        ("netty-codec-4.1.135.Final.jar", "netty-codec"),
        ("opensearch-2.19.6.jar", "opensearch"),
        ("opensearch-scripting-painless-spi-2.19.6.jar", "opensearch-scripting-painless-spi"),
        ("t-digest-3.2.jar", "t-digest"),
        ("antlr4-runtime-4.13.1.jar", "antlr4-runtime"),
    ],
)
def test_jars_are_compared_without_their_version(jar, stem):
    assert modules.jar_stem(jar) == stem


def test_modules_are_missing_by_folder_and_take_the_zips_java_version(tmp_path):
    install = tmp_path / "opensearch-2.19.6"
    netty = install / "modules" / "transport-netty4"
    netty.mkdir(parents=True)
    (netty / "plugin-descriptor.properties").write_text("name=transport-netty4\njava.version=11\n")
    assembly = modules.ModuleAssembly(install, engine.OPENSEARCH, "2.19.6")
    assert [s.name for s in assembly.missing()] == [
        "mapper-extras",
        "lang-painless",
        "analysis-common",
    ]
    assert assembly.java_version() == "11"
    for spec in engine.OPENSEARCH_MODULES:
        (install / "modules" / spec.name).mkdir()
    assert assembly.missing() == []
    assert assembly.ensure(tmp_path / "run") == []  # nothing to fetch: Maven is not called
    assert modules.ModuleAssembly(install, engine.ELASTICSEARCH, "9.5.4").missing() == []


def test_the_module_pom_leaves_the_engine_core_out():
    pom = maven.dependency_pom("org.opensearch.plugin", "lang-painless", "2.19.6", "org.opensearch")
    assert "<artifactId>lang-painless</artifactId><version>2.19.6</version>" in pom
    assert "<exclusion><groupId>org.opensearch</groupId><artifactId>*</artifactId>" in pom
    assert "exclusion" not in maven.dependency_pom("g", "a", "1")
