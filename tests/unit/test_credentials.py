"""Cluster URLs read whatever their shape, and secrets redacted (issue 22, items 5 and 9).

The logins themselves (passwords with ``/ # @ : ? %`` included) are tested against the secured
node in ``tests/test_secure.py``; here, what a URL is read as, and the command line's stderr.
"""

from __future__ import annotations

import base64

import pytest

from es_scm.cli import main
from es_scm.cli.errors import EXIT_ERROR
from es_scm.elastic.connection import connection_options
from es_scm.elastic.credentials import check_url, credential_forms, parse_url, redact, redact_url

# URL → (username, password, the URL without credentials, the URL as shown)
SHAPES = {
    "https://elastic:pw-123@es.example.com:9243": (
        "elastic", "pw-123", "https://es.example.com:9243", "https://elastic:***@es.example.com:9243"
    ),
    "elastic:pw-123@127.0.0.1:9200": (
        "elastic", "pw-123", "127.0.0.1:9200", "elastic:***@127.0.0.1:9200"
    ),
    "http://elastic:a/b#c@d:e?f@127.0.0.1:9200": (
        "elastic", "a/b#c@d:e?f", "http://127.0.0.1:9200", "http://elastic:***@127.0.0.1:9200"
    ),
    "http://elastic:a%2Fb%23c%40d%3Ae@127.0.0.1:9200": (
        "elastic", "a/b#c@d:e", "http://127.0.0.1:9200", "http://elastic:***@127.0.0.1:9200"
    ),
    "http://el%40stic:pw-123@[::1]:9200/prefix": (
        "el@stic", "pw-123", "http://[::1]:9200/prefix", "http://el%40stic:***@[::1]:9200/prefix"
    ),
    "HTTPS://elastic:pw-123@[fe80::1%25eth0]:9200": (
        "elastic", "pw-123", "https://[fe80::1%25eth0]:9200",
        "https://elastic:***@[fe80::1%25eth0]:9200",
    ),
    "http://token-only@127.0.0.1:9200": (
        "token-only", None, "http://127.0.0.1:9200", "http://***@127.0.0.1:9200"
    ),
    "http://127.0.0.1:9200": (None, None, "http://127.0.0.1:9200", "http://127.0.0.1:9200"),
}  # fmt: skip


@pytest.mark.parametrize("url", list(SHAPES))
def test_every_shape_of_url_is_read(url):
    parts = parse_url(url)
    assert (parts.username, parts.password, parts.bare, parts.shown) == SHAPES[url]
    assert redact_url(url) == SHAPES[url][3]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("elastic:pw-123@127.0.0.1:9200", "must start with http:// or https://"),
        ("ftp://elastic:pw-123@127.0.0.1:9200", "must start with http:// or https://"),
        ("http://elastic:pw-123@127.0.0.1:92OO", "from 1 to 65535, got '92OO'"),
        ("http://elastic:pw/1#2@127.0.0.1:", "port must be a number from 1 to 65535, got ''"),
        ("http://elastic:pw-123@127.0.0.1:70000", "got '70000'"),
        ("http://elastic:pw-123@::1:9200", "an IPv6 address goes in brackets"),
        ("http://elastic:pw-123@:9200", "has no host"),
        ("http://elastic:pw-123@[]:9200", "has no host"),
    ],
)  # fmt: skip
def test_a_bad_url_is_one_line_without_the_password(url, message):
    with pytest.raises(ValueError, match="Elasticsearch URL") as refused:
        check_url(url)
    text = str(refused.value)
    assert message in text
    assert "pw" not in text.replace("pw-123", "")  # nothing of the password...
    assert "pw-123" not in text
    assert "***" in text
    with pytest.raises(ValueError, match="Elasticsearch URL") as again:
        connection_options(url)
    assert str(again.value) == text


def test_the_client_gets_the_url_without_credentials():
    options = connection_options("https://elastic:a/b#c@d@127.0.0.1:9243")
    assert options["hosts"] == ["https://127.0.0.1:9243"]
    assert options["basic_auth"] == ("elastic", "a/b#c@d")


def test_redact_every_written_form():
    password = "a/b#c@d:e"
    text = f"got a/b#c@d:e, a%2Fb%23c%40d%3Ae and a/b%23c%40d%3Ae in {password!r}"
    assert redact(text, [password]) == "got ***, *** and *** in '***'"
    assert redact("ab and abc", ["ab"]) == "ab and abc"  # too short to be told from text


def test_the_secrets_of_credentials():
    encoded = base64.b64encode(b"key-id:key-secret").decode()
    assert set(credential_forms(api_key=encoded)) == {encoded, "key-id:key-secret", "key-secret"}
    assert set(credential_forms(api_key="key-id:key-secret")) == {"key-id:key-secret", "key-secret"}
    token = base64.b64encode(b"elastic:pw-123").decode()
    assert set(credential_forms(username="elastic", password="pw-123")) == {"pw-123", token}


@pytest.mark.parametrize("verbose", [[], ["-v"]], ids=["quiet", "verbose"])
def test_no_message_shows_the_password(capsys, monkeypatch, tmp_path, verbose):
    """Here the password is in a path a message names: stderr is redacted whatever the source."""
    password = "pw-in-a-path#1@2"
    monkeypatch.setenv("ES_URL", f"http://elastic:{password}@127.0.0.1:1")
    missing = tmp_path / f"{password}.jsonl"
    code = main([*verbose, "model", "build", "--corpus", str(missing), "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == EXIT_ERROR
    assert captured.err.splitlines()[-1].startswith("es-scm: error: ")
    assert "***.jsonl" in captured.err
    assert password not in captured.out + captured.err
