"""es-scm's tests: ``unit`` (no server) and ``integration`` (a real Elasticsearch)."""
