"""Retrieval-quality evaluation: test collections, SemEval CQA, metrics and reports."""
