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


def describe(
    error: BaseException, url: str = "the cluster", engine: str = "Elasticsearch"
) -> tuple[str, int]:
    """The one-line message and exit code of an error; ``url`` names the cluster (redacted),
    ``engine`` the engine of the client in use (``OpenSearch`` on OpenSearch: every message
    names it, never Elasticsearch there)."""
    from elastic_transport import ConnectionError as TransportConnectionError
    from elastic_transport import ConnectionTimeout, TlsError
    from elasticsearch import (
        ApiError,
        AuthenticationException,
        AuthorizationException,
        UnsupportedProductError,
    )

    from es_scm.corpus import CorpusError
    from es_scm.elastic.connection import error_reason
    from es_scm.index.schema import IndexNotFoundError, ModelMismatchError
    from es_scm.tools.es_local import LocalElasticsearchError

    if isinstance(error, CLIError):
        return one_line(error), error.code
    if isinstance(error, ConnectionTimeout):
        return f"{engine} at {url} timed out ({one_line(error)}); try --timeout", EXIT_ERROR
    if isinstance(error, TlsError) or "CERTIFICATE_VERIFY_FAILED" in str(error):
        return (
            f"TLS certificate verification failed for {url} ({_tls_detail(error)}); pass the "
            "cluster's CA certificate with --ca-certs PEM (or $ES_CA_CERTS), or --no-verify-certs "
            "for testing",
            EXIT_ERROR,
        )
    if isinstance(error, TransportConnectionError):
        return (
            f"cannot reach {engine} at {url} ({_connection_detail(error)}); start one with "
            "`es-scm es start` or set --es-url / ES_URL",
            EXIT_ERROR,
        )
    if isinstance(error, AuthenticationException):
        return (
            f"{engine} at {url} refused the credentials (HTTP 401: {error_reason(error)}); "
            "check --username/--password or --api-key",
            EXIT_ERROR,
        )
    if isinstance(error, AuthorizationException):
        return (
            f"not allowed by {engine} at {url} (HTTP 403: {error_reason(error)})",
            EXIT_ERROR,
        )
    if isinstance(error, UnsupportedProductError):  # a 2xx answer without Elastic's header
        return (
            f"the server at {url} is not Elasticsearch: its answer (HTTP {error.meta.status}) "
            "lacks Elasticsearch's X-Elastic-Product header; for OpenSearch give --engine "
            "opensearch, or auto to ask the cluster",
            EXIT_ERROR,
        )
    if isinstance(error, ApiError):
        return f"{engine} error (HTTP {error.meta.status}): {error_reason(error)}", EXIT_ERROR
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


def _connection_detail(error: BaseException) -> str:
    """What went wrong with a connection, in words, not cut in the middle of one."""
    from es_scm.engines import connection_detail

    return connection_detail(error)


#: OpenSSL's place in its own source, e.g. ``(_ssl.c:1010)``: no help to a user.
_OPENSSL_PLACE = re.compile(r"\s*\(_ssl\.c:\d+\)")


def _tls_detail(error: BaseException) -> str:
    """OpenSSL's reason, from the verification failure on: the client nests it in its errors'
    representations (``TlsError(… SSLError([SSL: …] certificate verify failed: … (_ssl.c:1010)))``),
    so a slice of that text has their closing parentheses but not the opening ones."""
    from es_scm.engines import balanced, shorten_words

    text = _OPENSSL_PLACE.sub("", one_line(error))
    marker = "certificate verify failed:"
    if marker in text:
        text = text[text.index(marker) :]
    return balanced(shorten_words(text, 120))
