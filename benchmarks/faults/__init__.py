"""Faults: a cluster's faults (a link cut, a raylet killed, the head's host lost) and stops as schedulers send them."""
