"""The asyncio implementation of every Elasticsearch operation, as straight-line code.

Each operation is written once, here, as ``await client.…`` calls read top-down in the order
they run; ``es_scm/elastic/_sync/`` is generated from it by ``scripts/generate_sync.py`` (unasync),
so the sync API and the asyncio API are the same code. What is not I/O — the query and its
bound, the window schedule, the fusion, the checks of every answer — is pure code in
``es_scm/elastic/`` that both import.
"""
