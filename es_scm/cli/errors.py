"""Exit codes, the user-facing error, and how any exception becomes one line of output.

Every command, ``eval`` included, reports an error the same way: one line
``es-scm: error: ...`` and an exit code (``--verbose`` adds the traceback).
"""

from __future__ import annotations

import re

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PARTIAL",
    "EXIT_USAGE",
    "CLIError",
    "describe",
    "one_line",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3
EXIT_INTERRUPTED = 130


class CLIError(Exception):
    """A user-facing error: printed as one line, exit code ``code``."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


def one_line(error: BaseException) -> str:
    """The error's message on one line (its type's name when it has none)."""
    text = " ".join(str(error).split())
    return text or type(error).__name__


def describe(error: BaseException, url: str = "Elasticsearch") -> tuple[str, int]:
    """The one-line message and exit code of an error; ``url`` names the cluster (redacted)."""
    from elastic_transport import ConnectionError as TransportConnectionError
    from elastic_transport import ConnectionTimeout, TlsError
    from elasticsearch import ApiError, AuthenticationException, AuthorizationException

    from es_scm.corpus import CorpusError
    from es_scm.elastic.connection import error_reason
    from es_scm.elastic.schema import IndexNotFoundError, ModelMismatchError
    from es_scm.tools.es_local import LocalElasticsearchError

    if isinstance(error, CLIError):
        return one_line(error), error.code
    if isinstance(error, ConnectionTimeout):
        return f"Elasticsearch at {url} timed out ({one_line(error)}); try --timeout", EXIT_ERROR
    if isinstance(error, TlsError) or "CERTIFICATE_VERIFY_FAILED" in str(error):
        return (
            f"TLS certificate verification failed for {url} ({_tls_detail(error)}); pass the "
            "cluster's CA certificate with --ca-certs PEM (or $ES_CA_CERTS), or --no-verify-certs "
            "for testing",
            EXIT_ERROR,
        )
    if isinstance(error, TransportConnectionError):
        return (
            f"cannot reach Elasticsearch at {url} ({_connection_detail(error)}); start one with "
            "`es-scm es start` or set --es-url / ES_URL",
            EXIT_ERROR,
        )
    if isinstance(error, AuthenticationException):
        return (
            f"Elasticsearch at {url} refused the credentials (HTTP 401: {error_reason(error)}); "
            "check --username/--password or --api-key",
            EXIT_ERROR,
        )
    if isinstance(error, AuthorizationException):
        return (
            f"not allowed by Elasticsearch at {url} (HTTP 403: {error_reason(error)})",
            EXIT_ERROR,
        )
    if isinstance(error, ApiError):
        return f"Elasticsearch error (HTTP {error.meta.status}): {error_reason(error)}", EXIT_ERROR
    if isinstance(error, IndexNotFoundError):
        return f"{one_line(error)} (create it with `es-scm index`)", EXIT_ERROR
    if isinstance(error, ModelMismatchError | CorpusError | LocalElasticsearchError):
        return one_line(error), EXIT_ERROR
    if isinstance(error, FileNotFoundError):
        name = error.filename or one_line(error)
        return f"file not found: {name}", EXIT_ERROR
    if isinstance(error, ValueError | ImportError | OSError | RuntimeError):
        return one_line(error), EXIT_ERROR
    return f"unexpected {type(error).__name__}: {one_line(error)}", EXIT_ERROR


#: How a connection fails, as the client's errors say it (the first one found is reported).
_CONNECTION_FAILURES = (
    "Connection refused",
    "Name or service not known",
    "No route to host",
    "Connection reset",
    "timed out",
    "Network is unreachable",
)


def _connection_detail(error: BaseException) -> str:
    """What went wrong with a connection, in words, not cut in the middle of one."""
    text = one_line(error)
    for phrase in _CONNECTION_FAILURES:
        if phrase.lower() in text.lower():
            return phrase.lower()
    return shorten_words(text, 160)


#: OpenSSL's place in its own source, e.g. ``(_ssl.c:1010)``: no help to a user.
_OPENSSL_PLACE = re.compile(r"\s*\(_ssl\.c:\d+\)")


def _tls_detail(error: BaseException) -> str:
    """OpenSSL's reason, from the verification failure on: the client nests it in its errors'
    representations (``TlsError(… SSLError([SSL: …] certificate verify failed: … (_ssl.c:1010)))``),
    so a slice of that text has their closing parentheses but not the opening ones."""
    text = _OPENSSL_PLACE.sub("", one_line(error))
    marker = "certificate verify failed:"
    if marker in text:
        text = text[text.index(marker) :]
    return balanced(shorten_words(text, 120))


def balanced(text: str) -> str:
    """``text`` without the closing parentheses it does not open, and cut before an opening one
    it does not close (so that it reads whole inside parentheses of its own)."""
    kept: list[str] = []
    opened: list[int] = []  # where, in ``kept``, each open parenthesis is
    for character in text:
        if character == ")":
            if not opened:
                continue
            opened.pop()
        elif character == "(":
            opened.append(len(kept))
        kept.append(character)
    if opened:
        kept = kept[: opened[0]]
    return "".join(kept).rstrip(" ,;:")


def shorten_words(text: str, width: int) -> str:
    """``text`` cut at a word boundary to at most ``width`` characters, with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:") + "…"
