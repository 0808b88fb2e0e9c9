"""Tests that start Elasticsearch nodes of their own beside the main one."""
