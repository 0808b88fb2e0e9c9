"""es-scm against a secured node: HTTPS with the runner's CA, file-realm users, and every error a
user of a secured cluster meets, as the command line prints it.

One secured node (``es-scm es start --secure``, port ``$ES_SCM_SECURE_TEST_PORT``, default
``$ES_SCM_PORT`` + 65) is started for the module and stopped after. Its users: ``es-scm-admin``
(superuser), ``es-scm-writer`` (may index ``es-scm-*``; may neither search nor refresh it) and
``es-scm-nobody`` (no role; its password holds ``/ # @ : ? %``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import stat
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import certifi
import pytest
from elasticsearch import ApiError

from es_scm.cli.errors import EXIT_ERROR, EXIT_OK
from es_scm.elastic import SCMIndex
from es_scm.elastic.aio import AsyncSCMIndex, async_client_from_env
from es_scm.elastic.connection import client_from_env, error_reason
from es_scm.tools import es_local
from es_scm.tools.es_local import LocalCluster, LocalElasticsearch
from es_scm.tools.node import port_from_env

PORT = port_from_env("ES_SCM_SECURE_TEST_PORT", offset=65)
ADMIN, WRITER, NOBODY = "es-scm-admin", "es-scm-writer", "es-scm-nobody"
DOCUMENTS = [
    {"id": f"doc-{i}", "text": text}
    for i, text in enumerate(
        [
            "supersonic flow over a swept wing",
            "boundary layer transition on a flat plate",
            "heat transfer in a hypersonic boundary layer",
            "shock waves on a cone at angle of attack",
            "pressure distribution on a slender body",
            "flutter of a thin wing in supersonic flow",
        ]
    )
]
TEXTS = [d["text"] for d in DOCUMENTS]  # conftest.py's ``model``: S = identity
CONNECTION_VARIABLES = ("ES_URL", "ES_API_KEY", "ES_USERNAME", "ES_PASSWORD", "ES_CA_CERTS")
URL_RESERVED = "/#@:?%"


@pytest.fixture(scope="module")
def node(es_url) -> Iterator[LocalElasticsearch]:
    """A fresh secured node of this home, stopped after the module."""
    cluster = LocalCluster(1, PORT, heap="512m", secure=True)
    cluster.stop()
    cluster.delete_data()
    cluster.start()
    yield cluster.nodes[0]
    cluster.stop()


@pytest.fixture(scope="module")
def admin(node):
    client = client_from_env(node.url, **node.credentials(ADMIN))
    yield client
    client.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("secure-corpus") / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCUMENTS))
    return path


@pytest.fixture(scope="module")
def searchable(admin, model) -> str:
    """An index that the admin filled (the writer may not read it)."""
    index = SCMIndex(admin, "es-scm-test-secure", model)
    index.delete()
    assert index.index_documents(DOCUMENTS).ok
    return index.name


@pytest.fixture
def connect(node, monkeypatch):
    """Set the connection variables for the command line (nothing else from the caller's)."""
    for variable in CONNECTION_VARIABLES:
        monkeypatch.delenv(variable, raising=False)

    def setenv(user: str | None = ADMIN, ca: str | None = "node", url: str | None = None):
        monkeypatch.setenv("ES_URL", url or node.url)
        if user:
            monkeypatch.setenv("ES_USERNAME", user)
            monkeypatch.setenv("ES_PASSWORD", node.credentials(user)["password"])
        if ca:
            monkeypatch.setenv(
                "ES_CA_CERTS", node.credentials()["ca_certs"] if ca == "node" else ca
            )

    return setenv


def written_forms(secret: str) -> list[str]:
    """How a secret may be written: as is, percent-encoded, and (with :func:`basic_token`) in a
    header."""
    return [secret, quote(secret, safe=""), quote(secret)]


def basic_token(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def assert_hidden(secret: str, text: str, user: str = ADMIN) -> None:
    for form in [*written_forms(secret), basic_token(user, secret)]:
        assert form not in text, f"a secret ({form[:2]}...) is shown in: {text}"


def one_error_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("es-scm: error: ")]
    assert len(lines) == 1, err
    return lines[0]


def test_the_secrets_stay_private_in_the_home(node):
    folder = node.security.folder
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    secrets = [
        node.security.ca_key,
        node.security.node_key,
        *(node.security.password_file(user) for user in (ADMIN, WRITER)),
    ]
    for path in secrets:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert node.credentials()["ca_certs"] == str(folder / "ca" / "ca.crt")


def test_basic_auth_with_the_ca_indexes_and_searches(admin, model, searchable):
    index = SCMIndex(admin, searchable, model)
    assert index.count() == len(DOCUMENTS)
    result = index.searcher.search("supersonic wing", k=3)
    assert result.exact_guarantee
    assert result.ids()[0] in ("doc-0", "doc-5")


def test_start_reuses_the_node_and_never_prints_a_password(node, capsys):
    passwords = [node.credentials(user)["password"] for user in (ADMIN, WRITER)]
    assert es_local.main(["start", "--port", str(PORT), "--secure"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == node.url
    assert f"ES_URL={node.url}" in err
    assert f"ES_CA_CERTS={node.credentials()['ca_certs']}" in err
    assert not any(password in out + err for password in passwords)
    assert es_local.main(["status", "--port", str(PORT)]) == 0
    out, err = capsys.readouterr()
    assert "secure: True" in out
    assert not any(password in out + err for password in passwords)


@pytest.mark.parametrize("ca", [None, certifi.where()], ids=["no-ca", "wrong-ca"])
def test_a_missing_or_wrong_ca_is_a_tls_error(cli, connect, model_dir, searchable, ca):
    connect(ca=ca)
    code, _, err = cli("search", "--model", model_dir, "--index", searchable, "wing")
    assert code == EXIT_ERROR
    line = one_error_line(err)
    assert line.startswith("es-scm: error: TLS certificate verification failed")
    # issue 34: the reason was cut out of the client's nested errors with their ")))"
    assert parentheses_balance(line), line
    assert "_ssl.c" not in line


def parentheses_balance(text: str) -> bool:
    depth = 0
    for character in text:
        depth += {"(": 1, ")": -1}.get(character, 0)
        if depth < 0:
            return False
    return depth == 0


def test_bad_credentials_are_a_401(cli, connect, model_dir, searchable, monkeypatch):
    connect()
    monkeypatch.setenv("ES_PASSWORD", "not-the-password")
    code, _, err = cli("search", "--model", model_dir, "--index", searchable, "wing")
    assert code == EXIT_ERROR
    line = one_error_line(err)
    assert "refused the credentials (HTTP 401" in line
    assert "not-the-password" not in err


def test_the_writer_indexes_everything_and_is_told_the_count_was_refused(
    cli, connect, admin, model_dir, corpus
):
    name = "es-scm-test-writer"
    admin.options(ignore_status=404).indices.delete(index=name)
    connect(user=WRITER)
    code, out, err = cli(
        "index", "--model", model_dir, "--index", name, "--corpus", corpus, "--no-progress"
    )
    assert code == EXIT_OK, err
    assert f"indexed {len(DOCUMENTS)} (created {len(DOCUMENTS)}," in out
    # the last bulk request refreshes the index (a writer may); counting needs read rights
    counting = [line for line in err.splitlines() if "could not be counted" in line]
    assert len(counting) == 1, err
    assert counting[0].startswith("warning: ")
    assert "HTTP 403" in counting[0]
    assert "indices:data/read/search" in counting[0]  # Elasticsearch's reason
    assert admin.count(index=name)["count"] == len(DOCUMENTS)  # searchable without a refresh
    # a writer may not make aliases: the index has no write alias, and the run says so
    assert f"warning: the index '{name}' has no es-scm write alias" in err
    assert admin.indices.get_alias(index=name)[name]["aliases"] == {}
    admin.indices.delete(index=name)


@pytest.mark.parametrize(
    ("mode", "action"),
    [([], "indices:data/read/msearch"), (["--mode", "exact"], "indices:data/read/search")],
    ids=["hybrid", "exact"],
)
def test_an_unauthorized_search_is_a_403_with_the_reason(
    cli, connect, model_dir, searchable, mode, action
):
    """The reason names the action refused: hybrid search (the default) sends its legs in one
    _msearch, exact search a _search."""
    connect(user=WRITER)
    code, _, err = cli("search", "--model", model_dir, "--index", searchable, *mode, "wing")
    assert code == EXIT_ERROR
    line = one_error_line(err)
    assert "not allowed by Elasticsearch" in line
    assert "HTTP 403" in line
    assert f"action [{action}]" in line
    assert WRITER in line


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
def test_credentials_in_the_url_work_and_never_show(
    cli, connect, node, model_dir, searchable, verbose
):
    password = node.credentials(ADMIN)["password"]
    assert password
    connect(user=None, url=f"https://{ADMIN}:{password}@127.0.0.1:{PORT}")
    flags = ["-v"] if verbose else []
    code, out, err = cli(*flags, "search", "--model", model_dir, "--index", searchable, "wing")
    assert code == EXIT_OK, err
    assert "doc-" in out
    assert password not in out + err
    failures = [
        ["search", "--model", model_dir, "--index", "es-scm-test-missing", "wing"],
        ["search", "--model", model_dir, "--index", searchable, "--es-url",
         f"https://{ADMIN}:{password}@127.0.0.1:{PORT}", "--ca-certs", certifi.where(), "wing"],
    ]  # fmt: skip
    for argv in failures:
        code, out, err = cli(*flags, *argv)
        assert code == EXIT_ERROR
        assert password not in out + err, argv
        assert "es-scm: error: " in err


def test_api_keys_cannot_be_created_on_this_distribution(admin):
    """What the README says: the .security index needs analysis-common, which this zip lacks."""
    with pytest.raises(ApiError) as refused:
        admin.security.create_api_key(name="es-scm-test")
    assert refused.value.meta.status == 400
    assert "pattern_capture" in str(refused.value), (
        "API keys fail for another reason now (or work): update the README and test them here"
    )


# -- credentials in every shape of URL (issue 22, items 5 and 9) -------------------------------


def test_the_nobody_users_password_holds_what_a_url_reserves(node):
    password = node.credentials(NOBODY)["password"]
    assert password
    assert set(URL_RESERVED) <= set(password)


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
@pytest.mark.parametrize("encoded", [False, True], ids=["as-is", "percent-encoded"])
def test_a_password_with_url_characters_logs_in_from_the_url(
    cli, connect, node, model_dir, searchable, encoded, verbose
):
    """``/ # @ : ? %`` in the password, written as is or percent-encoded: the login works (the
    user is refused the search, not the login) and the password never shows."""
    password = node.credentials(NOBODY)["password"]
    written = quote(password, safe="") if encoded else password
    connect(user=None, url=f"https://{NOBODY}:{written}@127.0.0.1:{PORT}")
    flags = ["-v"] if verbose else []
    code, out, err = cli(*flags, "search", "--model", model_dir, "--index", searchable, "wing")
    assert code == EXIT_ERROR
    line = err.splitlines()[-1] if verbose else one_error_line(err)
    assert "HTTP 403" in line, err
    assert f"for user [{NOBODY}]" in line
    assert_hidden(password, out + err, NOBODY)


def url_shapes(password: str) -> dict[str, tuple[str, str]]:
    """URL shapes with the admin's password → (the URL, what its one error line says)."""
    return {
        "no-scheme": (
            f"{ADMIN}:{password}@127.0.0.1:{PORT}",
            f"must start with http:// or https://, got '{ADMIN}:***@127.0.0.1:{PORT}'",
        ),
        "port-not-a-number": (
            f"https://{ADMIN}:{password}@127.0.0.1:92OO",
            "port must be a number from 1 to 65535, got '92OO'",
        ),
        "reserved-characters-and-bad-port": (
            f"https://{ADMIN}:{password}/#@:?%@127.0.0.1:x",
            "port must be a number from 1 to 65535, got 'x'",
        ),
        "ipv6-unbracketed": (
            f"https://{ADMIN}:{password}@::1:{PORT}",
            "an IPv6 address goes in brackets",
        ),
        "ipv6": (f"https://{ADMIN}:{password}@[::1]:{PORT}", "[::1]"),
        "empty-host": (f"https://{ADMIN}:{password}@:{PORT}", "has no host"),
    }


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
@pytest.mark.parametrize(
    "shape",
    ["no-scheme", "port-not-a-number", "reserved-characters-and-bad-port", "ipv6-unbracketed",
     "ipv6", "empty-host"],
)  # fmt: skip
def test_every_url_shape_is_one_line_without_the_password(
    cli, connect, node, model_dir, corpus, searchable, shape, verbose
):
    password = node.credentials(ADMIN)["password"]
    url, expected = url_shapes(password)[shape]
    connect(user=None, url=url)
    flags = ["-v"] if verbose else []
    commands = [
        ["search", "--model", model_dir, "--index", searchable, "wing"],
        ["index", "--model", model_dir, "--index", "es-scm-test-shapes", "--corpus", corpus],
    ]
    for command in commands:
        code, out, err = cli(*flags, *command)
        assert code == EXIT_ERROR, err
        assert_hidden(password, out + err)
        line = err.splitlines()[-1] if verbose else one_error_line(err)
        assert line.startswith("es-scm: error: ")
        assert expected in line, line


def test_an_api_key_never_shows(cli, connect, model_dir, searchable, monkeypatch):
    connect(user=None)
    key_id, key = "es-scm-test-key-id", "es-scm-test-api-key-secret"
    encoded = base64.b64encode(f"{key_id}:{key}".encode()).decode()
    for given in (["--api-key", f"{key_id}:{key}"], ["--api-key", encoded]):
        for verbose in ([], ["-v"]):
            code, out, err = cli(
                *verbose, "search", *given, "--model", model_dir, "--index", searchable, "w"
            )
            assert code == EXIT_ERROR
            assert "HTTP 401" in err
            for form in (key, encoded):
                assert form not in out + err
    monkeypatch.setenv("ES_API_KEY", encoded)
    code, out, err = cli("-v", "search", "--model", model_dir, "--index", searchable, "w")
    assert code == EXIT_ERROR
    assert key not in out + err
    assert encoded not in out + err


@pytest.fixture
def debug_records() -> Iterator[list[str]]:
    """Every record of es-scm's and the transport's loggers at DEBUG, formatted (tracebacks
    included)."""
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Keep(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    names = ["es_scm", "elastic_transport", "elastic_transport.node", "urllib3"]
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    yield records
    for logger, level in zip(loggers, levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_debug_logs_show_no_secret(
    cli, connect, node, model_dir, corpus, searchable, debug_records
):
    """With --verbose and DEBUG logging on es-scm's, the transport's and urllib3's loggers."""
    password = node.credentials(ADMIN)["password"]
    connect(user=None, url=f"https://{ADMIN}:{password}@127.0.0.1:{PORT}")
    code, out, err = cli("-v", "search", "--model", model_dir, "--index", searchable, "w")
    assert code == EXIT_OK, err
    name = "es-scm-test-debug-logs"
    code, out, err = cli("-v", "index", "--model", model_dir, "--index", name, "--corpus", corpus)
    assert code == EXIT_OK, err
    cli("-v", "search", "--model", model_dir, "--index", "es-scm-test-none", "w")
    logged = "\n".join(debug_records)
    assert "> GET /" in logged or "> POST /" in logged  # the transport logged its requests
    assert f"{name}: indexing" in logged or "es_scm" in logged
    assert_hidden(password, logged + out + err)


# -- Elasticsearch's reasons (issue 22, item 11) ------------------------------------------------


def test_a_refused_head_request_names_the_user_and_the_privilege(
    cli, connect, node, model, model_dir, corpus
):
    """A HEAD request's answer has no body, hence no reason: es-scm asks again to give it."""
    outside = "test-outside-es-scm-names"  # es-scm-writer may not even see it exists
    connect(user=WRITER)
    code, _, err = cli("index", "--model", model_dir, "--index", outside, "--corpus", corpus)
    assert code == EXIT_ERROR
    line = one_error_line(err)
    assert "HTTP 403" in line
    assert "None" not in line
    assert f"for user [{WRITER}]" in line
    assert "indices:admin/get" in line
    assert "view_index_metadata" in line
    writer = client_from_env(node.url, **node.credentials(WRITER))
    with pytest.raises(ApiError) as refused:
        SCMIndex(writer, outside, model).exists()
    assert f"for user [{WRITER}]" in error_reason(refused.value)
    writer.close()

    async def exists_async() -> None:
        client = async_client_from_env(node.url, **node.credentials(WRITER))
        try:
            await AsyncSCMIndex(client, outside, model).exists()
        finally:
            await client.close()

    with pytest.raises(ApiError) as refused:
        asyncio.run(exists_async())
    assert f"for user [{WRITER}]" in error_reason(refused.value)
