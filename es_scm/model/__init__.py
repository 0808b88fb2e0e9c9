"""The model side: text → terms → vocabulary → weighting W, bundled with S as a model.

Data flows one way: :class:`Tokenizer` (text → terms), :class:`Vocabulary` (terms → ids and
document frequencies), :class:`TermWeighting` (counts → W x), and :class:`SoftCosineModel`, which
adds the term similarity matrix S (:mod:`es_scm.similarity`) and is saved as one bundle.
"""

from es_scm.model.brute_force import BruteForceSearch
from es_scm.model.explanation import Explanation, TermPair
from es_scm.model.soft_cosine import SoftCosineModel, TokenCounts
from es_scm.model.text import TermWeighting, Tokenizer, Vocabulary

__all__ = [
    "BruteForceSearch",
    "Explanation",
    "SoftCosineModel",
    "TermPair",
    "TermWeighting",
    "TokenCounts",
    "Tokenizer",
    "Vocabulary",
]
