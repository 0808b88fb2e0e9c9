"""What the ``es-scm`` process skips at start: the client's transports that it never uses.

``elastic_transport`` imports every HTTP library it could use when it is itself imported —
aiohttp (its asyncio node), httpx and requests (optional nodes) — and ``elasticsearch`` imports
pyarrow (an Arrow serializer for ES|QL answers), whether or not a client ever uses them. The
command line talks to the cluster only through the sync client's default urllib3 node with JSON,
so in its own process those four imports are refused while the client's packages are being
imported, as if they were not installed: that saves a third of a second to a second of every
``es-scm search`` (measured with ``python -X importtime``, ``scripts/bench_cli.py``).
Once the client is imported, the libraries import as usual again (pyarrow for the packaged
GloVe vectors, httpx for a sentence encoder's hub client).

This is only for the ``es-scm`` process (:func:`~es_scm.cli.main.run`):
:func:`~es_scm.cli.main.main` run inside another program (a notebook, a test session) leaves the
imports as they are, since that program may use the asyncio client.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from importlib.machinery import ModuleSpec
    from types import ModuleType

__all__ = ["CLIENT_PACKAGES", "UNUSED_BY_CLIENT", "SyncClientOnly", "skip_unused_transports"]

#: The packages whose own imports of :data:`UNUSED_BY_CLIENT` are refused.
CLIENT_PACKAGES = ("elastic_transport", "elasticsearch")
#: What the command line's client never uses: the asyncio node's library, the optional sync
#: nodes' and the Arrow serializer's.
UNUSED_BY_CLIENT = frozenset({"aiohttp", "httpx", "requests", "pyarrow"})


def _initializing(name: str) -> bool:
    """Whether the module ``name`` is being imported (its body runs) right now."""
    module = sys.modules.get(name)
    # importlib marks a module's spec while the module executes (CPython's ``_initializing``);
    # without the mark nothing is refused, which only costs the time saved
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


class SyncClientOnly:
    """A finder (``sys.meta_path``'s protocol: ``find_spec``; not a subclass of
    ``importlib.abc.MetaPathFinder``, whose module costs ``--help`` a few ms) that refuses
    :data:`UNUSED_BY_CLIENT` while a package of :data:`CLIENT_PACKAGES` is being imported, and
    finds nothing itself otherwise (the next finders do); it leaves ``sys.meta_path`` once both
    client packages are imported."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if all(name in sys.modules for name in CLIENT_PACKAGES) and not any(
            map(_initializing, CLIENT_PACKAGES)
        ):
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            return None
        if fullname.partition(".")[0] in UNUSED_BY_CLIENT and any(
            map(_initializing, CLIENT_PACKAGES)
        ):
            raise ModuleNotFoundError(
                f"{fullname} is not used by the es-scm command's client", name=fullname
            )
        return None


def skip_unused_transports() -> None:
    """Put a :class:`SyncClientOnly` first in ``sys.meta_path`` unless the client is imported
    already (then it is too late, and nothing changes)."""
    if any(name in sys.modules for name in CLIENT_PACKAGES):
        return
    if not any(isinstance(finder, SyncClientOnly) for finder in sys.meta_path):
        sys.meta_path.insert(0, SyncClientOnly())
