"""Processes on one machine: shared state, counters, turns, messages, the worker and the evaluator."""
