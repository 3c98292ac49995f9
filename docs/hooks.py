"""MkDocs hooks: the benchmark plots and films under benchmarks/results/ appear in the site as
results/plots/*.png and *.mp4, so the results pages show the files the benchmarks write, not copies
that could go stale; and the
marker PRESETS_MARKER in a page becomes what `a3c presets` prints, from the code."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
PRESETS_MARKER = "<!-- a3c presets -->"


def on_files(files, config):
    for artifact in sorted([*RESULTS.glob("*.png"), *RESULTS.glob("*.mp4")]):
        files.append(File.generated(config, f"results/plots/{artifact.name}", abs_src_path=str(artifact)))
    return files


def on_page_markdown(markdown, page, config, files):
    if PRESETS_MARKER not in markdown:
        return markdown
    from a3c.config.presets import format_presets

    return markdown.replace(PRESETS_MARKER, f"```text\n{format_presets()}\n```")
