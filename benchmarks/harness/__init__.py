"""The benchmarks' common parts: the results schema and the report built from it."""
