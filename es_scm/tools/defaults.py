"""The local runner's defaults, in a module that imports nothing else of the runner: the
command line's parser reads them for ``es-scm es --help``, which loads no more of the runner
than that (:mod:`es_scm.tools.es_local`)."""

from __future__ import annotations

from es_scm.tools.engine import ELASTICSEARCH

__all__ = ["DEFAULT_HEAP", "DEFAULT_PORT", "DEFAULT_TIMEOUT", "DEFAULT_VERSION", "MAX_NODES"]

DEFAULT_VERSION = ELASTICSEARCH.default_version
DEFAULT_PORT = 9200
DEFAULT_HEAP = "1g"
#: The most nodes of a local cluster (``--nodes``), on ports PORT..PORT+N-1.
MAX_NODES = 9
#: Seconds that ``start`` waits for the nodes to be healthy.
DEFAULT_TIMEOUT = 240.0
