"""The documentation site is checked with the code: it builds strictly, its reference tables match what the
code writes, and the examples of its Getting started page run."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from a3c.config.presets import format_presets
from a3c.config.settings import STRUCTURAL_FIELDS, option_name
from a3c.run.console import Console
from a3c.run.metrics import EVAL_COLUMNS, TRAIN_COLUMNS, MetricsSettings, MetricsWriter
from a3c.run.phases import MILESTONES

from .conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs"
SETUP_MARK = "<!-- setup:"  # a block after this comment installs things: the tests run in the installed venv
RAY_SUMMARY_KEYS = {"node_groups", "global_model_calls", "sync_megabytes", "group_figures"}  # RayBackend.report()'s


def table_rows(page: Path, heading: str) -> list[str]:
    """The first column of the table under `## heading`, without backquotes."""
    section = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", page.read_text(), re.S | re.M).group(1)
    rows = [line.split("|")[1].strip().strip("`") for line in section.splitlines() if line.startswith("| ")]
    return rows[2:] if rows[1].startswith("---") else rows[1:]  # after the header and its rule


def test_the_run_directory_page_lists_every_column_the_code_writes(tmp_path):
    page = DOCS / "reference" / "run-directory.md"
    assert table_rows(page, "metrics.csv") == TRAIN_COLUMNS
    assert table_rows(page, "eval.csv") == EVAL_COLUMNS
    writer = MetricsWriter(
        MetricsSettings(tmp_path, 1000, 1.0, lambda steps, seconds: 0.0, lambda steps, seconds: 0.0),
        0.0,
        Console(lambda *a, **k: None),
    )
    local_keys = set(writer.summary("CartPole-v1", 0, 475.0, "max_steps")) | {"phases", "quit_at_once"}  # the trainer's
    writer.close()
    assert set(table_rows(page, "summary.json")) == local_keys | RAY_SUMMARY_KEYS
    phases_row = next(line for line in page.read_text().splitlines() if line.startswith("| `phases`"))
    for name in (*MILESTONES, "stop_to_exit"):
        assert f"`{name}`" in phases_row


def test_the_code_layout_page_names_every_module():
    layout = (DOCS / "design" / "layout.md").read_text()
    modules = sorted(str(path.relative_to(REPO_ROOT)) for path in (REPO_ROOT / "a3c").rglob("*.py"))
    assert [module for module in modules if not re.search(rf"^{re.escape(module)} ", layout, re.M)] == []


def getting_started_blocks() -> list[tuple[str, str]]:
    """(language, code) of every fenced block of Getting started that the tests run."""
    text = (DOCS / "getting-started.md").read_text()
    blocks = []
    for match in re.finditer(r"^```(\w+)\n(.*?)^```", text, re.S | re.M):
        before = text[: match.start()].rstrip().splitlines()[-1]
        if match.group(1) in ("bash", "python") and not before.startswith(SETUP_MARK):
            blocks.append((match.group(1), match.group(2)))
    return blocks


def shell_commands(code: str) -> list[list[str]]:
    """`python main.py ...` lines as argument lists run with this interpreter and this checkout's main.py."""
    commands = []
    for line in code.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            assert words[:2] == ["python", "main.py"], f"Getting started runs only main.py: {line}"
            commands.append([sys.executable, str(REPO_ROOT / "main.py"), *words[2:]])
    return commands


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_getting_started_examples_run_as_written(tmp_path):
    """In order, from a fresh folder, as a user would: train, evaluate, plot, then the Python example."""
    blocks = getting_started_blocks()
    assert [language for language, _ in blocks] == ["bash", "bash", "python"]
    for language, code in blocks:
        if language == "bash":
            for command in shell_commands(code):
                result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
                assert result.returncode == 0, (command, result.stdout, result.stderr)
        else:
            script = tmp_path / "example.py"
            script.write_text(code)
            # the package as `pip install -e .` makes it importable, whether or not this interpreter has it installed
            path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
            result = subprocess.run(
                [sys.executable, str(script)],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=120,
                env={**os.environ, "PYTHONPATH": path},
            )
            assert result.returncode == 0, result.stderr
            assert "solved" in result.stdout and "action for the upright pole at rest:" in result.stdout
    assert (tmp_path / "runs" / "cartpole" / "summary.json").exists() and (tmp_path / "cartpole.png").exists()


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None, reason="the site needs its extra: pip install -r requirements-docs.txt"
)
@pytest.mark.timeout(180)
def test_the_site_builds_without_a_warning(tmp_path):
    """mkdocs build --strict: a broken link, a page missing from the nav or an API reference that does
    not resolve fails."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr
    cli_page = (tmp_path / "reference" / "cli" / "index.html").read_text()
    assert "--center-values" in cli_page and "--confirm-episodes" in cli_page  # generated from click
    presets_page = (tmp_path / "guides" / "environments" / "index.html").read_text()
    pong = next(line for line in format_presets().splitlines() if line.startswith("ALE/Pong-v5"))
    assert html.escape(pong, quote=False) in presets_page and "a3c presets -->" not in presets_page  # from the code


def test_the_faults_guide_names_every_setting_a_resume_refuses_to_change():
    resuming = (DOCS / "guides" / "faults.md").read_text().split("**`--resume RUN_DIR`**")[1].split("\n- ")[0]
    for name in STRUCTURAL_FIELDS:
        assert f"`{option_name(name)}`" in resuming, name
