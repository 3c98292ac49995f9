"""One-line error messages."""

from __future__ import annotations


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
