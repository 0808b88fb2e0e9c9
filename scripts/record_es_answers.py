#!/usr/bin/env python
"""Record real Elasticsearch answers for the unit tests of the write side's pure core.

The unit tests of bulk sending, ingestion accounting, deletion and alias moves
(``tests/unit/test_bulk.py``, ``test_ingest_core.py``, ``test_alias_moves.py``) replay answers
that a real node gave, stored as JSON under ``tests/unit/recorded/``: no mocking framework, no
fake server. This script makes them again, against ``$ES_URL`` (default the local runner's
node), each from the request es-scm would send:

* ``bulk_created.json``, ``bulk_updated.json`` — a bulk request into a new index, the same
  request again (as a retry after a lost answer: ``updated``), and other ids (``updated``, and an
  item rejected for its metadata);
* ``bulk_refused_400.json`` — a bulk request refused as a whole (an id over 512 bytes), then
  each half of it alone, as es-scm sends them;
* ``bulk_refused_413.json`` — a request over ``http.max_content_length`` (100 MB by default);
* ``bulk_unavailable_503.json`` — documents whose shard has no primary (a red index), with the
  cluster's health then, and the same documents once the primary is back;
* ``bulk_flood_stage.json`` — documents of an index blocked by the flood-stage watermark;
* ``bulk_oversize_429.json`` — a ~30 MB document beside a small one, over the node's indexing
  memory (``indexing_pressure.memory.limit``, 10% of the heap), then each alone;
* ``bulk_deleted_index.json`` — writes through a write alias (``require_alias``) after the index
  was deleted: refused, nothing created;
* ``mget_existing.json`` — which of some ids an index holds (no source);
* ``bulk_delete.json`` — deleting ids by bulk: ``deleted`` and ``not_found``;
* ``aliases.json`` — the get-mapping and get-index answers of an alias and of an index, and the
  get-alias answers of the indices an alias leaves, with one more alias on one of them and
  without.

Each file holds ``{"recorded": provenance, "answers": {name: {"request": …, "status": …,
"body": …}}}``. The indices are named ``es-scm-record-*`` and deleted at the end.

Usage::

    ES_URL=http://127.0.0.1:9200 python scripts/record_es_answers.py
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from elasticsearch import ApiError, Elasticsearch

from es_scm import SoftCosineModel
from es_scm.elastic.connection import client_from_env, node_version
from es_scm.index.indices import new_write_alias
from es_scm.index.schema import (
    encode_documents,
    feature_keys,
    index_mapping,
    settings_for_version,
)

OUT = Path(__file__).resolve().parents[1] / "tests" / "unit" / "recorded"
PREFIX = "es-scm-record"
TEXTS = [
    "boundary layer on a swept wing",
    "supersonic flow past a cone",
    "heat transfer in the boundary layer",
    "pressure on a flat plate in supersonic flow",
]
MODEL = SoftCosineModel.build(TEXTS)


def sources(texts: list[str], metadata: list[dict | None] | None = None) -> list[dict[str, Any]]:
    """The ``_source`` es-scm sends for ``texts`` (S = identity)."""
    weights = MODEL.vectorize_many(texts, role="document")
    normalized = MODEL.similarity_matrix.normalize(weights)
    keys = feature_keys(len(MODEL.terms))
    return encode_documents(texts, normalized, metadata or [None] * len(texts), keys)


def operations(target: str, documents: list[tuple[str, dict[str, Any]]]) -> list[dict]:
    lines: list[dict] = []
    for doc_id, source in documents:
        lines += [{"index": {"_index": target, "_id": doc_id}}, source]
    return lines


def answer(call: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The status and body of ``call()`` (an error's too)."""
    try:
        response = call()
    except ApiError as error:
        return {"request": request, "status": error.meta.status, "body": error.body}
    return {"request": request, "status": response.meta.status, "body": response.body}


def shown(operations_: list[dict]) -> list[dict]:
    """The request's lines as recorded: the action lines, and each source's size."""
    return [
        line if "index" in line or "delete" in line else {"source_bytes": len(json.dumps(line))}
        for line in operations_
    ]


def create(client: Elasticsearch, name: str, version: str, **settings: Any) -> str:
    """An es-scm index of ``MODEL`` with its write alias, as es-scm makes them; the alias."""
    client.options(ignore_status=404).indices.delete(index=name)
    alias = new_write_alias(name)
    client.indices.create(
        index=name,
        settings={**settings_for_version(version), **settings},
        mappings=index_mapping(MODEL, version=version, metadata_mapping={"n": {"type": "integer"}}),
        aliases={alias: {"is_hidden": True}},
        wait_for_active_shards="0" if settings else None,
    )
    return alias


def bulk(client: Elasticsearch, lines: list[dict], **params: Any) -> dict[str, Any]:
    request = {"method": "bulk", "params": params, "operations": shown(lines)}
    return answer(lambda: client.options(max_retries=0).bulk(operations=lines, **params), request)


def record_writes(client: Elasticsearch, version: str) -> dict[str, dict[str, Any]]:
    name = f"{PREFIX}-writes"
    writer = create(client, name, version)
    first = sources(TEXTS[:3], [{"n": 1}, None, None])
    created_lines = operations(writer, list(zip(["d1", "d2", "d3"], first, strict=True)))
    created = bulk(client, created_lines, require_alias=True, timeout="10s")
    retried = bulk(client, created_lines, require_alias=True, timeout="10s")
    again = sources([TEXTS[0], TEXTS[3], TEXTS[1]], [None, {"n": "not a number"}, None])
    updated = bulk(
        client, operations(writer, list(zip(["d1", "d4", "d2"], again, strict=True))),
        require_alias=True, timeout="10s", refresh="true",
    )  # fmt: skip
    mget = {"method": "mget", "params": {"index": name, "ids": ["d1", "d4", "nope"]}}
    existing = answer(lambda: client.mget(index=name, ids=["d1", "d4", "nope"], source=False), mget)
    long_id = operations(writer, [("L" * 600, sources(TEXTS[:1])[0]), ("ok", first[1])])
    refused = bulk(client, long_id, require_alias=True)
    first_half = bulk(client, long_id[:2], require_alias=True)
    second_half = bulk(client, long_id[2:], require_alias=True)
    deleting = [{"delete": {"_index": name, "_id": doc_id}} for doc_id in ("d1", "d9")]
    deleted = bulk(client, deleting, refresh="true")
    client.indices.delete(index=name)
    after = bulk(client, operations(writer, [("d5", first[0])]), require_alias=True, timeout="10s")
    assert not client.indices.exists(index=name), "a bulk request created the index"
    return {
        "bulk_created": {"created": created, "retried": retried},
        "bulk_updated": {"updated": updated},
        "mget_existing": {"mget": existing},
        "bulk_refused_400": {
            "refused": refused,
            "first_half": first_half,
            "second_half": second_half,
        },
        "bulk_delete": {"deleted": deleted},
        "bulk_deleted_index": {"after_delete": after},
    }


def record_refusals(client: Elasticsearch, version: str) -> dict[str, dict[str, Any]]:
    """A red index, a flood-stage block and a request over the content length."""
    red = f"{PREFIX}-red"
    writer = create(
        client, red, version, **{"index.routing.allocation.require._name": "no-such-node"}
    )
    lines = operations(writer, list(zip(["r1", "r2"], sources(TEXTS[:2]), strict=True)))
    unavailable = bulk(client, lines, require_alias=True, timeout="1s")
    health = answer(
        lambda: client.cluster.health(index=red),
        {"method": "cluster.health", "params": {"index": red}},
    )
    client.indices.put_settings(
        index=red, settings={"index.routing.allocation.require._name": None}
    )
    client.cluster.health(index=red, wait_for_status="yellow", timeout="60s")
    recovered = bulk(client, lines, require_alias=True, timeout="10s")
    client.indices.delete(index=red)

    blocked = f"{PREFIX}-blocked"
    writer = create(client, blocked, version)
    client.indices.put_settings(
        index=blocked, settings={"index.blocks.read_only_allow_delete": True}
    )
    lines = operations(writer, list(zip(["b1", "b2"], sources(TEXTS[:2]), strict=True)))
    flood = bulk(client, lines, require_alias=True, timeout="10s")
    client.indices.put_settings(
        index=blocked, settings={"index.blocks.read_only_allow_delete": None}
    )
    client.indices.delete(index=blocked)

    big = f"{PREFIX}-big"
    writer = create(client, big, version)
    text = " ".join(TEXTS[i % 4] for i in range(1_000_000))  # ~32 MB of text
    lines = operations(
        writer, list(zip(["small", "large"], sources([TEXTS[0], text]), strict=True))
    )
    oversize = bulk(client, lines, require_alias=True, timeout="10s")
    small_alone = bulk(client, lines[:2], require_alias=True, timeout="10s")
    large_alone = bulk(client, lines[2:], require_alias=True, timeout="10s")
    huge = [{"index": {"_index": writer, "_id": "huge"}}, {"text": "x" * (101 * 2**20)}]
    too_long = bulk(client, huge, require_alias=True)
    client.indices.delete(index=big)
    return {
        "bulk_unavailable_503": {
            "unavailable": unavailable,
            "health": health,
            "recovered": recovered,
        },
        "bulk_flood_stage": {"flood_stage": flood},
        "bulk_oversize_429": {
            "oversize": oversize,
            "small_alone": small_alone,
            "large_alone": large_alone,
        },
        "bulk_refused_413": {"too_long": too_long},
    }


def record_aliases(client: Elasticsearch, version: str) -> dict[str, dict[str, Any]]:
    """An alias over two es-scm indices, one of them in another alias too, and a foreign index."""
    old, new, foreign = f"{PREFIX}-old", f"{PREFIX}-new", f"{PREFIX}-foreign"
    alias = f"{PREFIX}-alias"
    for name in (old, new):
        create(client, name, version)
    client.options(ignore_status=404).indices.delete(index=foreign)
    client.indices.create(index=foreign)
    client.indices.update_aliases(
        actions=[
            {"add": {"index": old, "alias": alias}},
            {"add": {"index": foreign, "alias": alias}},
            {"add": {"index": old, "alias": f"{alias}-reports"}},
        ]
    )
    mappings = answer(
        lambda: client.options(ignore_status=404).indices.get_mapping(index=alias),
        {"method": "indices.get_mapping", "params": {"index": alias}},
    )
    concrete = answer(
        lambda: client.options(ignore_status=404).indices.get_mapping(index=new),
        {"method": "indices.get_mapping", "params": {"index": new}},
    )
    missing = answer(
        lambda: client.options(ignore_status=404).indices.get_mapping(index=f"{alias}-none"),
        {"method": "indices.get_mapping", "params": {"index": f"{alias}-none"}},
    )
    got = answer(
        lambda: client.indices.get(index=alias),
        {"method": "indices.get", "params": {"index": alias}},
    )
    got_index = answer(
        lambda: client.indices.get(index=new),
        {"method": "indices.get", "params": {"index": new}},
    )
    # the alias moves to the new index, as es-scm moves it; the indices it left, then
    client.indices.update_aliases(
        actions=[
            {"remove": {"index": old, "alias": alias, "must_exist": True}},
            {"remove": {"index": foreign, "alias": alias, "must_exist": True}},
            {"add": {"index": new, "alias": alias, "is_write_index": True}},
        ]
    )
    aliases = answer(
        lambda: client.options(ignore_status=404).indices.get_alias(index=f"{old},{foreign}"),
        {"method": "indices.get_alias", "params": {"index": f"{old},{foreign}"}},
    )
    client.indices.delete_alias(index=old, name=f"{alias}-reports")
    alone = answer(
        lambda: client.options(ignore_status=404).indices.get_alias(index=f"{old},{foreign}"),
        {"method": "indices.get_alias", "params": {"index": f"{old},{foreign}"}},
    )
    client.indices.delete(index=f"{old},{new},{foreign}")
    return {
        "aliases": {
            "alias_mappings": mappings,
            "index_mappings": concrete,
            "missing_mappings": missing,
            "left_indices": aliases,
            "left_indices_alone": alone,
            "get_alias_target": got,
            "get_index_target": got_index,
        }
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="the cluster (default $ES_URL, else the local runner's)")
    args = parser.parse_args(argv)
    client = client_from_env(args.url, request_timeout=120)
    version = node_version(client.nodes.info(filter_path="nodes.*.version"))
    recorded = {
        "elasticsearch": version,
        "date": dt.date.today().isoformat(),
        "command": "python scripts/record_es_answers.py",
    }
    OUT.mkdir(parents=True, exist_ok=True)
    files = {
        **record_writes(client, version),
        **record_refusals(client, version),
        **record_aliases(client, version),
    }
    for name, answers in files.items():
        path = OUT / f"{name}.json"
        text = json.dumps({"recorded": recorded, "answers": answers}, indent=1, sort_keys=True)
        path.write_text(text + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(OUT.parents[2])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
