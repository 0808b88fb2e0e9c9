"""Secrets kept out of whatever es-scm writes to stderr: messages, warnings, log records,
progress and tracebacks alike."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from es_scm.elastic.credentials import redact

__all__ = ["RedactingStream", "redacted_stderr"]


class RedactingStream:
    """A text stream that writes to ``target`` with every secret replaced by ``***``."""

    def __init__(self, target: TextIO, secrets: Iterable[str]) -> None:
        self.target = target
        self.secrets = list(secrets)

    def write(self, text: str) -> int:
        self.target.write(redact(text, self.secrets))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, ...
        return getattr(self.target, name)


@contextmanager
def redacted_stderr(secrets: Iterable[str]) -> Iterator[None]:
    """``sys.stderr`` redacts ``secrets`` inside the block (whoever writes to it then)."""
    secrets = [secret for secret in secrets if secret]
    if not secrets:
        yield
        return
    original = sys.stderr
    sys.stderr = RedactingStream(original, secrets)
    try:
        yield
    finally:
        sys.stderr = original
