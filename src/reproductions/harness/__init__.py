"""What the tests and benchmarks start for themselves (a local redis-server); not packaged."""
