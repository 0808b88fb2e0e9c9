"""es-scm inside the frameworks people build retrieval-augmented generation with.

One module per framework, each needing its extra (``pip install 'es-scm[langchain]'``,
``'es-scm[llamaindex]'``) and importing the framework through :func:`es_scm.extras.require`, so a
missing extra is one line that says what to install:

* :mod:`es_scm.integrations.langchain` — ``SCMRetriever``, a LangChain ``BaseRetriever``
  (``invoke``/``ainvoke`` give ``Document`` objects);
* :mod:`es_scm.integrations.llamaindex` — ``SCMRetriever``, a LlamaIndex ``BaseRetriever``
  (``retrieve``/``aretrieve`` give a ``NodeWithScore`` of a ``TextNode`` per hit).

Both search through an es-scm searcher (:mod:`es_scm.integrations.retrieval`, what they share):
hybrid search's top k by default (BM25 fused with the SCM), ``mode="exact"`` (the SCM alone),
``"native"``, ``"bm25"`` or ``"dense"`` on request, filters,
and each hit's scores and (``explain=True``) explanation in the document's metadata
(docs/INTEGRATIONS.md). This package imports neither framework: import the module of yours.
"""
