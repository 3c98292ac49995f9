"""The benchmarks' common parts: launching the trainer as a user would, the results schema and the report built
from it, and the figures every suite shows."""
