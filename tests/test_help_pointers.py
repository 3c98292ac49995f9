"""Every pointer in the command line's help names a page of this repository that exists."""

from __future__ import annotations

import re

import click

from a3c.cli import cli

from .conftest import REPO_ROOT

POINTER = re.compile(r"\b(?:docs|examples|benchmarks)/[\w./-]+\.(?:md|py)\b|requirements-\w+\.txt")


def help_texts(command: click.Command, path: str = "a3c"):
    """(where, text) of the command's help, each option's help, and the same of its subcommands."""
    yield path, command.help or ""
    for param in command.params:
        yield f"{path} {param.opts[0]}", getattr(param, "help", None) or ""
    for name, sub in getattr(command, "commands", {}).items():
        yield from help_texts(sub, f"{path} {name}")


def test_every_help_pointer_names_a_file_that_exists():
    pointers = [(where, found) for where, text in help_texts(cli) for found in POINTER.findall(text)]
    assert ("a3c --seed", "docs/guides/reproducibility.md") in pointers  # the scan sees the options' help
    assert [(where, found) for where, found in pointers if not (REPO_ROOT / found).is_file()] == []


def test_no_help_sends_the_reader_to_the_readme():
    """The README is the front door; the manual is the docs site, where each page has a path."""
    assert [where for where, text in help_texts(cli) if "README" in text] == []
