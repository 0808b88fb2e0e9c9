#!/usr/bin/env python
"""Generate es_scm/elastic/_sync/ from es_scm/elastic/_async/ with unasync, or check it is current.

Every Elasticsearch operation is written once, as straight-line asyncio code in
``es_scm/elastic/_async/``; its sync twin in ``es_scm/elastic/_sync/`` is generated from it, as
elasticsearch-py generates its own sync client: ``async def`` becomes ``def``, ``await x``
becomes ``x``, ``async for``/``async with`` lose their ``async``, and the names of
:data:`REPLACEMENTS` are replaced (the asyncio client by the sync one, each asyncio class and
function by its sync twin, each hand-written concurrency primitive of
``es_scm/elastic/concurrency.py`` by its sync twin). The output is then sorted and formatted by
ruff with the project's settings, and starts with a comment that says it is generated.

Usage::

    python scripts/generate_sync.py          # (re)write es_scm/elastic/_sync/
    python scripts/generate_sync.py --check  # exit 1, in one line, if it is not current

``make lint`` and ``make test`` run ``--check`` first.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "es_scm" / "elastic" / "_async"
TARGET = REPO / "es_scm" / "elastic" / "_sync"
COMMAND = "python scripts/generate_sync.py"

#: asyncio name → sync name: the one table of the generation (besides unasync's own, e.g.
#: ``AsyncIterator`` → ``Iterator``). A name that starts with ``Async`` and is not here would
#: become ``Sync…``: give every asyncio class its sync name here.
REPLACEMENTS = {
    # the client and its helpers
    "AsyncElasticsearch": "Elasticsearch",
    "AsyncOpenSearch": "OpenSearch",  # opensearch-py's client (es_scm/elastic/_async/opensearch.py)
    "AsyncTransport": "Transport",  # elastic_transport's (es_scm/elastic/_async/transport.py)
    "async_streaming_bulk": "streaming_bulk",
    # the package of the generated code
    "_async": "_sync",
    # es-scm's classes and functions
    "AsyncSearcher": "Searcher",
    "AsyncIndexHandle": "IndexHandle",
    "AsyncSCMIndex": "SCMIndex",
    "AsyncAliasSearcher": "AliasSearcher",
    "async_reindex_into_alias": "reindex_into_alias",
    "async_remove_swap_leftovers": "remove_swap_leftovers",
    "AsyncIngestion": "Ingestion",
    "AsyncBatchSender": "BatchSender",
    "AsyncOpenSearchClient": "OpenSearchClient",
    "AsyncOpenSearchTransport": "OpenSearchTransport",
    "AsyncElasticsearchTransport": "ElasticsearchTransport",
    # builtins
    "anext": "next",
    # the hand-written pairs of es_scm/elastic/concurrency.py
    "AsyncWorkers": "Workers",
    "AsyncHeartbeat": "Heartbeat",
    "AsyncStop": "Stop",
    "async_compute": "compute",
    "async_batches": "batches",
    "async_map_concurrently": "map_concurrently",
}


def header(source: Path) -> str:
    """The comment that opens a generated file."""
    relative = source.relative_to(REPO).as_posix()
    return (
        f"# Generated from {relative} by scripts/generate_sync.py: do not edit.\n"
        f"# Change the asyncio source and run `{COMMAND}`.\n"
    )


def unasynced(source: Path) -> str:
    """The sync text of one asyncio module: unasync's token rewriting with :data:`REPLACEMENTS`,
    the imports sorted and the code formatted by ruff (as ``ruff`` would leave it)."""
    import tokenize_rt
    import unasync

    rule = unasync.Rule(str(SOURCE), str(TARGET), additional_replacements=REPLACEMENTS)
    tokens = tokenize_rt.src_to_tokens(source.read_text(encoding="utf-8"))
    text = header(source) + tokenize_rt.tokens_to_src(list(rule._unasync_tokens(tokens)))
    target = TARGET / source.relative_to(SOURCE)
    for command in (["check", "--select", "I", "--fix-only", "--quiet"], ["format", "--quiet"]):
        text = _ruff([*command, "--stdin-filename", str(target), "-"], text)
    return text


def _ruff(arguments: list[str], text: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *arguments],
        input=text,
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"generate_sync: ruff {arguments[0]} failed: {done.stderr.strip()}")
    return done.stdout


def generated() -> dict[Path, str]:
    """Every file of ``_sync/`` as it should be: path → text."""
    return {
        TARGET / source.relative_to(SOURCE): unasynced(source)
        for source in sorted(SOURCE.rglob("*.py"))
    }


def stale(expected: dict[Path, str]) -> list[Path]:
    """The files of ``_sync/`` that differ from ``expected``, are missing, or have no source."""
    present = set(TARGET.rglob("*.py")) if TARGET.is_dir() else set()
    differing = [
        path
        for path, text in expected.items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]
    return sorted([*differing, *(present - set(expected))])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if _sync/ is not current"
    )
    args = parser.parse_args(argv)
    expected = generated()
    outdated = stale(expected)
    if args.check:
        if outdated:
            names = ", ".join(path.relative_to(REPO).as_posix() for path in outdated)
            print(f"not current: {names}; run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    for path in outdated:
        if path in expected:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(expected[path], encoding="utf-8")
        else:
            path.unlink()
        print(
            f"wrote {path.relative_to(REPO).as_posix()}" if path in expected else f"deleted {path}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
