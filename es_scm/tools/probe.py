"""Ask a local node over HTTP(S) with the standard library: health, version, its own settings.

The runner must not depend on the Elasticsearch client (it starts the node the client talks to),
so it reads a handful of JSON endpoints with :mod:`urllib`, with a CA and basic authentication
for a secured node.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

__all__ = ["NodeProbe"]


@dataclass(frozen=True)
class NodeProbe:
    """Read JSON from one node; every method returns None when the node does not answer.

    Parameters
    ----------
    url : str
        ``http://127.0.0.1:PORT`` or ``https://…``.
    ca_certs : str, optional
        The PEM CA that signed the node's certificate (HTTPS).
    username, password : str, optional
        Basic authentication (a secured node).
    """

    url: str
    ca_certs: str | None = None
    username: str | None = None
    password: str | None = None

    def get_json(self, path: str, timeout: float = 2.0) -> Any:
        """``GET url/path`` as parsed JSON, or None (no answer, an HTTP error, not JSON)."""
        request = urllib.request.Request(f"{self.url}/{path.lstrip('/')}")
        if self.username is not None and self.password is not None:
            token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            context = None
            if self.url.startswith("https://"):
                context = ssl.create_default_context(cafile=self.ca_certs)
            with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
                return json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError, ssl.SSLError):
            return None

    def health(self, timeout: float = 2.0) -> dict | None:
        """``_cluster/health`` as answered by this node."""
        health = self.get_json("_cluster/health", timeout)
        return health if isinstance(health, dict) else None

    def _local_node(self, path: str) -> dict | None:
        answer = self.get_json(path)
        nodes = answer.get("nodes") if isinstance(answer, dict) else None
        if not nodes:
            return None
        return next(iter(nodes.values()))

    def version(self) -> str | None:
        """The version of the node answering at the URL."""
        reported = self.engine()
        return reported[1] if reported else None

    def engine(self) -> tuple[str, str] | None:
        """The engine (``"elasticsearch"`` or ``"opensearch"``) and the version of the node
        answering at the URL, as it reports them: Elasticsearch gives its nodes a
        ``build_flavor``, OpenSearch does not (as :func:`es_scm.engines.engine_of_answer`
        tells them apart; docs/OPENSEARCH-NOTES.md)."""
        node = self._local_node("_nodes/_local?filter_path=nodes.*.version,nodes.*.build_flavor")
        if not node or "version" not in node:
            return None
        return ("elasticsearch" if "build_flavor" in node else "opensearch"), str(node["version"])

    def data_paths(self) -> list[str] | None:
        """The ``path.data`` that the answering node uses (None when it cannot be read)."""
        node = self._local_node("_nodes/_local/settings?filter_path=nodes.*.settings.path.data")
        if not node:
            return None
        data = node.get("settings", {}).get("path", {}).get("data")
        if isinstance(data, str):
            return [data]
        if isinstance(data, list):
            return [str(path) for path in data]
        return None
