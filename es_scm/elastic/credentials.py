"""A cluster URL read whatever its shape, and secrets kept out of every message.

A URL's credentials are everything between ``scheme://`` (or the start, when the URL has no
scheme) and its *last* ``@``; the username ends at the first ``:`` of them, and the password is
the rest. So a password may hold ``/ # @ : ?`` as they are, though the standard wants them
percent-encoded (both forms work; the parts are percent-decoded). A URL is read without ever
raising, so that even a malformed one is shown redacted: :func:`check_url` then says, in one line
without the password, what is wrong with it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import NamedTuple
from urllib.parse import quote, unquote

__all__ = [
    "REDACTED",
    "ClusterURL",
    "check_url",
    "credential_forms",
    "parse_url",
    "redact",
    "redact_url",
]

REDACTED = "***"
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_MAX_PORT = 65535
# Secrets shorter than this are left alone: replacing them would garble every message.
_SHORTEST_SECRET = 3


class ClusterURL(NamedTuple):
    """The parts of a cluster URL, as written; ``username`` and ``password`` percent-decoded.

    Attributes
    ----------
    scheme : str
        ``http`` or ``https`` (lower case); ``""`` when the URL has none.
    userinfo : str or None
        The credentials as written; None when the URL has none.
    host : str
        The host; an IPv6 address in its brackets.
    port : str or None
        The port as written (maybe not a number); None when the URL has none.
    rest : str
        The path, query and fragment, as written.
    """

    scheme: str
    userinfo: str | None
    host: str
    port: str | None
    rest: str

    @property
    def username(self) -> str | None:
        if self.userinfo is None:
            return None
        return unquote(self.userinfo.partition(":")[0]) or None

    @property
    def password(self) -> str | None:
        if self.userinfo is None or ":" not in self.userinfo:
            return None
        return unquote(self.userinfo.partition(":")[2]) or None

    @property
    def written_secret(self) -> str | None:
        """The password as written (the whole credentials when they have no ``:``)."""
        if self.userinfo is None:
            return None
        user, colon, password = self.userinfo.partition(":")
        return password if colon else user

    def _join(self, userinfo: str | None) -> str:
        prefix = f"{self.scheme}://" if self.scheme else ""
        credentials = f"{userinfo}@" if userinfo is not None else ""
        port = f":{self.port}" if self.port is not None else ""
        return f"{prefix}{credentials}{self.host}{port}{self.rest}"

    @property
    def bare(self) -> str:
        """The URL without its credentials."""
        return self._join(None)

    @property
    def shown(self) -> str:
        """The URL to show people: the username stays, the password is ``***``."""
        if self.userinfo is None:
            return self.bare
        user, colon, _ = self.userinfo.partition(":")
        return self._join(f"{user}:{REDACTED}" if colon else REDACTED)


def parse_url(url: str) -> ClusterURL:
    """Split ``url`` into its parts, whatever its shape; never raises (see the module)."""
    text = url.strip()
    scheme_match = _SCHEME.match(text)
    scheme = scheme_match.group()[:-3].lower() if scheme_match else ""
    rest = text[scheme_match.end() :] if scheme_match else text
    userinfo: str | None = None
    if "@" in rest:
        userinfo, _, rest = rest.rpartition("@")
    if rest.startswith("["):  # an IPv6 address
        end = rest.find("]") + 1 or len(rest)
        host, rest = rest[:end], rest[end:]
    else:
        host_end = _end_of(rest, ":/?#")
        host, rest = rest[:host_end], rest[host_end:]
    port = None
    if rest.startswith(":"):
        port_end = _end_of(rest, "/?#", 1)
        port, rest = rest[1:port_end], rest[port_end:]
    return ClusterURL(scheme, userinfo, host, port, rest)


def check_url(url: str) -> ClusterURL:
    """The parts of ``url`` if a client can connect with it.

    Raises
    ------
    ValueError
        One line that names what is wrong (the scheme, the host, the port) and shows the URL
        without its password.
    """
    parts = parse_url(url)
    shown = parts.shown
    if parts.scheme not in ("http", "https"):
        raise ValueError(
            f"the Elasticsearch URL must start with http:// or https://, got {shown!r}"
        )
    if parts.port is not None and ":" in parts.port:
        raise ValueError(
            f"the Elasticsearch URL {shown!r}: an IPv6 address goes in brackets, "
            f"e.g. {parts.scheme}://[::1]:9200"
        )
    if not parts.host.strip("[]"):
        raise ValueError(f"the Elasticsearch URL {shown!r} has no host")
    if parts.port is not None and not (parts.port.isdigit() and 0 < int(parts.port) <= _MAX_PORT):
        raise ValueError(
            f"the Elasticsearch URL {shown!r}: its port must be a number from 1 to {_MAX_PORT}, "
            f"got {parts.port!r}"
        )
    return parts


def redact_url(url: str) -> str:
    """The URL to show people: its password (or its whole credentials) as ``***``."""
    return parse_url(url).shown


def credential_forms(
    *,
    username: str | None = None,
    password: str | None = None,
    api_key: str | None = None,
) -> list[str]:
    """The secrets of these credentials: the password and the API key, their parts (an encoded
    key's ``id:key``), and the ``Authorization`` header's token of the basic-auth pair."""
    secrets = [password, api_key]
    if api_key:
        secrets += _api_key_parts(api_key)
    if username and password:
        secrets.append(base64.b64encode(f"{username}:{password}".encode()).decode())
    return [secret for secret in secrets if secret]


def _api_key_parts(api_key: str) -> list[str]:
    """``id:key`` → its key; an encoded key → its ``id:key`` and key."""
    if ":" in api_key:
        return [api_key.partition(":")[2]]
    try:
        decoded = base64.b64decode(api_key, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return []
    return [decoded, decoded.partition(":")[2]] if ":" in decoded else []


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every secret replaced by ``***``, as it is or percent-encoded (as in a
    URL)."""
    forms = set()
    for secret in secrets:
        if secret and len(secret) >= _SHORTEST_SECRET:
            forms |= {secret, quote(secret, safe=""), quote(secret)}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, REDACTED)
    return text


def _end_of(text: str, stops: str, start: int = 0) -> int:
    """The position of ``text``'s first character of ``stops`` from ``start`` (else its end)."""
    return next((i for i in range(start, len(text)) if text[i] in stops), len(text))
