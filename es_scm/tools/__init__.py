"""Developer tools, not part of the library's API: the local Elasticsearch (and OpenSearch) runner.

``es-scm es start|stop|status|install`` and ``python -m es_scm.tools.es_local`` run it; the test
suite and ``make test`` use it when no ``ES_URL`` is given.
"""
