"""Tests against a real Elasticsearch."""
