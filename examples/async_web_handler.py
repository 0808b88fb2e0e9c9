"""Soft cosine search behind an aiohttp web handler, on es-scm's asyncio API.

One ``AsyncElasticsearch`` client and one :class:`~es_scm.elastic.aio.AsyncSCMIndex` (whose
``searcher`` searches) serve every request; a search awaits Elasticsearch instead of holding a
thread, so one process answers many requests at once.

Run it (needs ``pip install 'es-scm[async,glove]'`` and an Elasticsearch at ``$ES_URL``)::

    python examples/async_web_handler.py --index es-scm-web --ingest-demo --port 8080
    curl 'http://127.0.0.1:8080/search?q=president+greets+the+press&k=3'

``--ingest-demo`` builds a model of es-scm's demo corpus (250 short documents) and indexes it
first; ``--model DIR`` serves an index built with ``es-scm index`` and its saved model instead.

Ctrl-C or SIGTERM (``kill``, a container stopping) stops the server, also in the middle of the
demo's ingestion, and deletes the index if this run created it (``--keep`` keeps it); an index
that was there before is never deleted. ``--port 0`` takes a free port.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from typing import Any

from aiohttp import web

from es_scm import SoftCosineModel, WordEmbeddings
from es_scm.corpus import read_corpus
from es_scm.demo import demo_corpus_path
from es_scm.elastic import NotProvenError
from es_scm.elastic.aio import AsyncSCMIndex, async_client_from_env

INDEX_KEY = web.AppKey("index", AsyncSCMIndex)
#: ``mode=`` → the searcher's method.
MODES = {"exact": "search", "native": "native", "hybrid": "hybrid", "bm25": "bm25"}


async def search(request: web.Request) -> web.Response:
    """``GET /search?q=TEXT[&k=10][&mode=exact|native|hybrid|bm25]``: the top k hits as JSON."""
    query = request.query.get("q", "").strip()
    mode = request.query.get("mode", "exact")
    if not query or mode not in MODES:
        raise web.HTTPBadRequest(text=f"give q=TEXT and mode in {tuple(MODES)}")
    try:
        k = int(request.query.get("k", "10"))
        method = getattr(request.app[INDEX_KEY].searcher, MODES[mode])
        result = await method(query, k)
    except NotProvenError as error:  # a deep page in exact mode
        raise web.HTTPUnprocessableEntity(text=str(error)) from None
    except ValueError as error:  # a bad k
        raise web.HTTPBadRequest(text=str(error)) from None
    body: dict[str, Any] = {
        "query": query,
        "mode": result.mode,
        "exact_guarantee": result.exact_guarantee,
        "took_ms": round(result.took_ms, 2),
        "hits": [hit.to_dict() for hit in result.hits],
    }
    return web.json_response(body)


def make_app(index: AsyncSCMIndex) -> web.Application:
    """The web application: ``/search`` on ``index``; the client is closed on shutdown."""
    app = web.Application()
    app[INDEX_KEY] = index
    app.router.add_get("/search", search)

    async def close_client(app: web.Application) -> None:
        await app[INDEX_KEY].client.close()

    app.on_cleanup.append(close_client)
    return app


def demo_model() -> SoftCosineModel:
    """A model of the demo corpus with GloVe 6B 50d and the default S options (a few seconds)."""
    texts = [document.text for document in read_corpus(demo_corpus_path())]
    return SoftCosineModel.build(texts, WordEmbeddings.glove_6b_50d())


async def ingest_demo(index: AsyncSCMIndex) -> None:
    """Index the demo corpus (ids make a rerun overwrite, not duplicate)."""
    report = await index.index_documents(read_corpus(demo_corpus_path()))
    print(f"indexed: {report.summary()}")


async def serve(args: argparse.Namespace, model: SoftCosineModel) -> None:
    """Serve ``/search`` until SIGTERM or Ctrl-C, then clean up (see the module docstring)."""
    stop_on_signals(asyncio.current_task())
    index = AsyncSCMIndex(async_client_from_env(), args.index, model)
    runner = web.AppRunner(make_app(index), handle_signals=False)
    created = started = False
    try:
        if args.ingest_demo:
            created = not await index.exists()
            print(f"indexing the demo corpus into {args.index}", flush=True)
            await ingest_demo(index)
        await runner.setup()
        started = True
        await web.TCPSite(runner, "127.0.0.1", args.port).start()
        host, port = runner.addresses[0][:2]
        print(f"serving http://{host}:{port}/search (Ctrl-C or SIGTERM stops)", flush=True)
        await asyncio.Event().wait()
    finally:
        stop_on_signals(None)  # a second signal does not interrupt the cleanup
        try:
            if created and not args.keep:
                await index.delete()
                print(f"deleted the index {args.index} that this run created", flush=True)
        finally:
            if started:
                await runner.cleanup()  # closes the client too (make_app)
            else:
                await index.client.close()


def stop_on_signals(task: asyncio.Task | None) -> None:
    """SIGTERM and SIGINT cancel ``task`` (None: they are ignored)."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, task.cancel if task else lambda: None)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", default="es-scm-web", help="the es-scm index to search")
    parser.add_argument("--model", help="a model saved by es-scm (default: the demo's)")
    parser.add_argument("--ingest-demo", action="store_true", help="index the demo corpus first")
    parser.add_argument(
        "--keep", action="store_true", help="keep the index this run created when it stops"
    )
    parser.add_argument("--port", type=int, default=8080, help="0: a free port")
    args = parser.parse_args(argv)
    model = SoftCosineModel.load(args.model) if args.model else demo_model()
    try:
        asyncio.run(serve(args, model))
    except (asyncio.CancelledError, KeyboardInterrupt):
        print("stopped")


if __name__ == "__main__":
    main()
