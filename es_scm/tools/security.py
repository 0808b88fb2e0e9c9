"""The secured local node's files: a CA, a node certificate, file-realm users and a role.

Everything is made once per runner home with the distribution's own tools and kept in
``$HOME/secure`` (folder 0700, files 0600):

``ca/ca.crt``, ``ca/ca.key``
    A CA made by ``bin/elasticsearch-certutil ca --pem``; clients verify the node with
    ``ca/ca.crt`` (``ES_CA_CERTS``).
``node/node.crt``, ``node/node.key``
    The node's certificate, signed by that CA, for ``127.0.0.1`` and ``localhost``
    (``bin/elasticsearch-certutil cert --pem``); every node of the home uses it for HTTPS and
    for the transport layer.
``es-scm-admin.password``, ``es-scm-writer.password``, ``es-scm-nobody.password``
    Generated passwords of the three file-realm users, added with ``bin/elasticsearch-users``
    (the password goes to the tool on stdin, never on a command line):
    ``es-scm-admin`` has the ``superuser`` role; ``es-scm-writer`` has ``es_scm_writer``, which
    may create, write to and read the mapping of ``es-scm-*`` indices (and read the cluster's
    version: ``monitor``) but not search them, nor refresh them (no ``read``, no
    ``maintenance``); ``es-scm-nobody`` has no role at all (every request but the login is
    refused), and its password holds the characters a URL reserves (``/ # @ : ? %``), so that
    it checks how a client parses and hides such a password.

The node reads copies of the certificate, its key and the CA certificate from its config folder
(``config/es-scm-certs``), and the role from ``config/roles.yml``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import zipfile
from pathlib import Path

from es_scm.tools.launch import run_tool

__all__ = [
    "ADMIN_USER",
    "CERTS_FOLDER",
    "NOBODY_USER",
    "ROLES",
    "USERS",
    "WRITER_ROLE",
    "WRITER_USER",
    "SecurityFiles",
    "security_settings",
]

ADMIN_USER = "es-scm-admin"
WRITER_USER = "es-scm-writer"
WRITER_ROLE = "es_scm_writer"
NOBODY_USER = "es-scm-nobody"
USERS: dict[str, str | None] = {
    ADMIN_USER: "superuser",
    WRITER_USER: WRITER_ROLE,
    NOBODY_USER: None,
}
# Appended to es-scm-nobody's generated password: what a URL's userinfo must percent-encode.
URL_RESERVED = "/#@:?%"
CERTS_FOLDER = "es-scm-certs"  # inside the node's config folder
ROLES = f"""# Written by es-scm's local runner for `es-scm es start --secure`.
# {WRITER_ROLE}: may create, write to and read the mapping of es-scm-* indices, and read the
# cluster's version; may neither search them (no `read`) nor refresh them (no `maintenance`).
{WRITER_ROLE}:
  cluster: ["monitor"]
  indices:
    - names: ["es-scm-*"]
      privileges: ["index", "create_index", "view_index_metadata"]
"""
CERTIFICATE_DAYS = "3650"


def security_settings(secure: bool) -> dict[str, str]:
    """The node settings: security off, or on with TLS on HTTP and transport."""
    if not secure:
        return {"xpack.security.enabled": "false"}
    settings = {"xpack.security.enabled": "true"}
    for layer in ("http", "transport"):
        prefix = f"xpack.security.{layer}.ssl"
        settings |= {
            f"{prefix}.enabled": "true",
            f"{prefix}.key": f"{CERTS_FOLDER}/node.key",
            f"{prefix}.certificate": f"{CERTS_FOLDER}/node.crt",
            f"{prefix}.certificate_authorities": f"{CERTS_FOLDER}/ca.crt",
        }
    settings["xpack.security.transport.ssl.verification_mode"] = "full"
    return settings


class SecurityFiles:
    """The CA, certificate and users of one runner home (see the module docstring).

    Parameters
    ----------
    home : path
        The runner's home; the secrets go to ``home/secure``.
    install_dir : path
        The unpacked distribution, whose tools make them and whose config folder the node reads.
    """

    def __init__(self, home: Path, install_dir: Path) -> None:
        self.folder = home / "secure"
        self.install_dir = install_dir
        self.config_dir = install_dir / "config"

    @property
    def ca_cert(self) -> Path:
        return self.folder / "ca" / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.folder / "ca" / "ca.key"

    @property
    def node_cert(self) -> Path:
        return self.folder / "node" / "node.crt"

    @property
    def node_key(self) -> Path:
        return self.folder / "node" / "node.key"

    def password_file(self, user: str = ADMIN_USER) -> Path:
        return self.folder / f"{user}.password"

    def password(self, user: str = ADMIN_USER) -> str | None:
        """The generated password of ``user``, or None before :meth:`ensure` made it."""
        try:
            return self.password_file(user).read_text().strip()
        except OSError:
            return None

    def credentials(self, user: str = ADMIN_USER) -> dict[str, str | None]:
        """``ca_certs``, ``username`` and ``password`` for a client (a secured node's)."""
        return {"ca_certs": str(self.ca_cert), "username": user, "password": self.password(user)}

    def ensure(self, java_home: Path) -> None:
        """Make whatever is missing (CA, certificate, passwords, users) and install it."""
        _private_folder(self.folder)
        if not (self.ca_cert.is_file() and self.ca_key.is_file()):
            self._certutil("ca", ["ca", "--pem"], java_home)
        if not (self.node_cert.is_file() and self.node_key.is_file()):
            self._certutil(
                "node",
                [
                    "cert",
                    "--pem",
                    "--ca-cert",
                    str(self.ca_cert),
                    "--ca-key",
                    str(self.ca_key),
                    "--name",
                    "node",
                    "--ip",
                    "127.0.0.1",
                    "--dns",
                    "localhost",
                ],
                java_home,
            )
        for user in USERS:
            if self.password(user) is None:
                suffix = URL_RESERVED if user == NOBODY_USER else ""
                _write_private(self.password_file(user), secrets.token_urlsafe(24) + suffix + "\n")
        self._install_certificates()
        (self.config_dir / "roles.yml").write_text(ROLES)
        self._install_users(java_home)

    # -- the distribution's tools ------------------------------------------------------------

    def run_tool(self, name: str, arguments: list[str], java_home: Path, stdin: str = "") -> str:
        """Run the distribution's ``bin/<name>`` on its config folder; return its output."""
        return run_tool(self.install_dir, name, arguments, java_home, stdin=stdin)

    def _certutil(self, name: str, arguments: list[str], java_home: Path) -> None:
        """Run certutil into ``folder/name.zip`` and unpack ``name/`` (0600) from it."""
        archive = self.folder / f"{name}.zip"
        archive.unlink(missing_ok=True)
        self.run_tool(
            "elasticsearch-certutil",
            [*arguments, "--silent", "--days", CERTIFICATE_DAYS, "--out", str(archive)],
            java_home,
        )
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(self.folder)
        archive.unlink()
        _private_folder(self.folder / name)
        for path in (self.folder / name).iterdir():
            path.chmod(0o600)

    def _install_certificates(self) -> None:
        target = self.config_dir / CERTS_FOLDER
        _private_folder(target)
        for source in (self.ca_cert, self.node_cert, self.node_key):
            shutil.copyfile(source, target / source.name)
            (target / source.name).chmod(0o600)

    def _install_users(self, java_home: Path) -> None:
        """(Re)add the users whose entry is missing or older than their password file."""
        users_file = self.config_dir / "users"
        present = _usernames(users_file)
        stamp = users_file.stat().st_mtime_ns if users_file.is_file() else 0
        for user, role in USERS.items():
            if user in present and self.password_file(user).stat().st_mtime_ns <= stamp:
                continue
            if user in present:
                self.run_tool("elasticsearch-users", ["userdel", user], java_home)
            password = self.password(user) or ""
            roles = ["-r", role] if role else []
            self.run_tool(
                "elasticsearch-users",
                ["useradd", user, *roles],
                java_home,
                stdin=f"{password}\n{password}\n",
            )


def _usernames(users_file: Path) -> set[str]:
    if not users_file.is_file():
        return set()
    lines = users_file.read_text().splitlines()
    return {line.split(":", 1)[0] for line in lines if ":" in line}


def _private_folder(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)


def _write_private(path: Path, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
