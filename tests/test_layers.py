"""The package's architecture, checked: every module sits in a layer of the import contract
(pyproject.toml), the contract holds, no import circle, and nothing but the public face at the top."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

from .conftest import REPO_ROOT

grimp = pytest.importorskip("grimp", reason="the lint tools: pip install -r requirements-lint.txt")

PUBLIC_FACE = {"__init__", "_version", "api", "agent", "cli", "errors"}


def contract_layers() -> list[str]:
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [layers] = [contract["layers"] for contract in config["contracts"] if contract["type"] == "layers"]
    return [name.strip() for layer in layers for name in layer.split("|")]


def modules() -> list[str]:
    return sorted(
        ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts) for path in (REPO_ROOT / "a3c").rglob("*.py")
    )


def import_cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return cycles


def test_every_module_is_in_a_layer_and_only_the_public_face_is_at_the_top():
    layers = contract_layers()
    outside = [
        m
        for m in modules()
        if m != "a3c.__init__" and not any(m == layer or m.startswith(layer + ".") for layer in layers)
    ]
    assert outside == []
    top_level = {path.stem for path in (REPO_ROOT / "a3c").glob("*.py")}
    assert top_level == PUBLIC_FACE


def test_no_import_circle():
    assert import_cycles(grimp.build_graph("a3c")) == []


def test_an_import_circle_is_found():
    """The check itself: two modules that import each other are one circle."""
    graph = grimp.ImportGraph()
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")):
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == [["p.a", "p.b", "p.c"]]


@pytest.mark.skipif(
    shutil.which("lint-imports", path=str(Path(sys.executable).parent)) is None,
    reason="the lint tools: pip install -r requirements-lint.txt",
)
def test_imports_only_go_down_the_layers():
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-2000:]
