"""Converters of the results files written before the schema (benchmarks/harness/records.py): one module a
suite, each with convert(), the records of the files that still matter; python -m harness.legacy.<module>
(from benchmarks/) writes them."""
