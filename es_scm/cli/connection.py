"""The command line's connection options: the official client's, each falling back to its variable,
and the cluster's engine (Elasticsearch or OpenSearch: detected, or named with ``--engine``).

Also every secret those options and variables hold, so that no message shows one
(:func:`secrets`, used by the redacting stderr of :mod:`es_scm.cli.main`).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from es_scm.options.validation import Interval, argparse_type

if TYPE_CHECKING:  # pragma: no cover
    from elasticsearch import Elasticsearch

__all__ = ["client_from_args", "connection_kwargs", "connection_parent", "es_url", "secrets"]


def connection_parent() -> argparse.ArgumentParser:
    """The official client's connection options, each falling back to its variable."""
    parent = argparse.ArgumentParser(add_help=False)
    from es_scm.engines import ENGINE_CHOICES

    group = parent.add_argument_group(
        "Cluster connection (Elasticsearch or OpenSearch)",
        "Each option falls back to its environment variable.",
    )
    group.add_argument(
        "--es-url",
        metavar="URL",
        help="the cluster's URL, Elasticsearch or OpenSearch (default: $ES_URL, else the local "
        "runner's http://127.0.0.1:9200)",
    )
    group.add_argument(
        "--engine",
        choices=ENGINE_CHOICES,
        default=None,
        help="the cluster's engine (default: $ES_SCM_ENGINE, else auto: asked of the cluster; "
        "OpenSearch needs pip install 'es-scm[opensearch]')",
    )
    group.add_argument(
        "--api-key", metavar="KEY", help="an encoded API key or id:key ($ES_API_KEY)"
    )
    group.add_argument("--username", help="basic-auth user ($ES_USERNAME)")
    group.add_argument("--password", help="basic-auth password ($ES_PASSWORD; prefer the variable)")
    group.add_argument("--ca-certs", metavar="PEM", help="CA bundle to verify TLS ($ES_CA_CERTS)")
    group.add_argument(
        "--no-verify-certs",
        dest="verify_certs",
        action="store_false",
        default=None,
        help="skip TLS certificate verification (testing only; $ES_VERIFY_CERTS=false)",
    )
    group.add_argument(
        "--timeout",
        type=argparse_type(Interval(float, 0.0, None, closed="neither"), float),
        default=30.0,
        metavar="S",
        help="request timeout in seconds (default 30)",
    )
    return parent


def es_url(args: argparse.Namespace) -> str:
    """The cluster's URL: ``--es-url``, ``$ES_URL``, else the local runner's."""
    given = getattr(args, "es_url", None) or os.environ.get("ES_URL")
    if given:
        return str(given)
    from es_scm.tools.node import LocalElasticsearch  # the runner's modules: only when asked

    return LocalElasticsearch().url


def secrets(args: argparse.Namespace) -> list[str]:
    """Every credential a message might show, from the options and the variables: never printed
    (see :func:`~es_scm.elastic.credentials.redact`)."""
    from es_scm.elastic.credentials import credential_forms, parse_url

    found = []
    urls = [getattr(args, "es_url", None), os.environ.get("ES_URL")]
    usernames = [getattr(args, "username", None), os.environ.get("ES_USERNAME")]
    passwords = [getattr(args, "password", None), os.environ.get("ES_PASSWORD")]
    for url in filter(None, urls):
        parts = parse_url(url)
        usernames.append(parts.username)
        passwords += [parts.password, parts.written_secret]
    for api_key in (getattr(args, "api_key", None), os.environ.get("ES_API_KEY")):
        found += credential_forms(api_key=api_key)
    for username in set(usernames):
        for password in passwords:
            found += credential_forms(username=username, password=password)
    return found


def connection_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The connection options given on the command line, for :func:`client_from_env`."""
    keys = ("api_key", "username", "password", "ca_certs", "verify_certs")
    options = {key: getattr(args, key) for key in keys if getattr(args, key, None) is not None}
    options["request_timeout"] = args.timeout
    return options


def client_from_args(args: argparse.Namespace) -> Elasticsearch:
    """A client of the cluster's engine from the connection options (an ``Elasticsearch``, or
    es-scm's OpenSearch client with its surface). Its engine's title is kept in
    ``args.engine_title``, for the error messages (:func:`~es_scm.cli.errors.describe`)."""
    from es_scm.elastic.connection import client_from_env
    from es_scm.engines import engine_named, engine_of

    engine = getattr(args, "engine", None)
    named = engine_named(engine)
    if named is not None:  # said even if the client cannot be made (opensearch-py missing)
        args.engine_title = named.title
    client = client_from_env(es_url(args), engine=engine, **connection_kwargs(args), max_retries=1)
    args.engine_title = engine_of(client).title
    return client
