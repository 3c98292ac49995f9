"""MkDocs hook: the benchmark plots under benchmarks/results/ appear in the site as results/plots/*.png,
so the results pages show the files the benchmarks write, not copies that could go stale."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def on_files(files, config):
    for plot in sorted(RESULTS.glob("*.png")):
        files.append(File.generated(config, f"results/plots/{plot.name}", abs_src_path=str(plot)))
    return files
