"""The term similarity layer: S, its sources, and the SCM math that runs on it.

Data flows one way: sources of similarities (word embeddings, edit distance, a thesaurus) →
the greedy builder → :class:`TermSimilarityMatrix`, whose cached float64 rows serve the math of
the search path (:mod:`es_scm.similarity.scm`).
"""

from es_scm.similarity.embeddings import WordEmbeddings
from es_scm.similarity.matrix import TermSimilarityMatrix

__all__ = ["TermSimilarityMatrix", "WordEmbeddings"]
