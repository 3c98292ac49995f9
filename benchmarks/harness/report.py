"""`make report`: the results page (docs/results/index.md), its plots and the README's results table, built from
the run records (records.py) alone, so that every figure shown is one a file holds.

    python benchmarks/harness/report.py           # write them
    python benchmarks/harness/report.py --check   # exit 1, naming the file, where a page differs from the records
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the benchmarks folder is where `harness` is found
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.atari5 import GAMES, medians, opening, overview, published_table, summary_table  # noqa: E402
from harness.records import RUNS, SUITES, Record, read_all  # noqa: E402
from harness.tables import cell, rows, table  # noqa: E402

REPO = Path(__file__).resolve().parent.parent.parent
PAGE = REPO / "docs" / "results" / "index.md"
README = REPO / "README.md"
PLOTS = REPO / "benchmarks" / "results"  # the docs' hook serves its PNG files as results/plots/
LEARNING_SUITES = ("classic-control", "box2d", "mujoco", "minatar", "atari", "atari-5", "exploration")
README_BEGIN = "<!-- results table: made by make report from benchmarks/results/records -->"
README_END = "<!-- end of the results table -->"
OPENING = """# Results

Every figure on this page is made by `make report` from the run records in `benchmarks/results/records/`
(one JSON file a run: its env, contender, settings, version, seed, machine, budget, curve and final
figures), and each section names the command that measures its runs again. The rules:

- **Runs are seeds**, interleaved between contenders on the same machine; a cell is the median over
  them with the range in brackets, and a seed that one contender lacks against the others is said.
- **Solved** means confirmed: an evaluation that reached the env's target counts only once new greedy
  episodes of the same weights hold it. Where runs were to solve, env steps and minutes are the solved
  runs', to their solve; elsewhere, the runs' at their end.
- **Returns are greedy**, over new episodes, never training episodes.
- **Minutes are wall-clock from launch**, start-up included, on the machine named in each run's record.
- **Rates** come with the env stepped alone on the same cores, their ceiling.

Machines: {machines}.

How each default was chosen, with its measurements: [measured choices](../design/choices.md). Every
measurement as it was made, dated: the [history](history.md).
"""


def machines(records: list[Record]) -> str:
    """The machines the records ran on: cores, CPU model and vector flags."""
    seen = sorted(
        {
            f"{record.machine.get('cores', '?')} cores"
            + (f", {record.machine['cpu'].get('model')}" if record.machine.get("cpu", {}).get("model") else "")
            + (f" ({' '.join(record.machine['cpu']['flags'])})" if record.machine.get("cpu", {}).get("flags") else "")
            for record in records
        }
    )
    return "; ".join(seen) or "none yet"


def plot(suite: str, records: list[Record]) -> str | None:
    """The suite's curves (greedy return against env steps and against minutes, every run, a colour a
    contender) as report-<suite>.png; its name, or None where no record has a curve."""
    with_curves = [record for record in records if record.curve]
    if not with_curves:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = sorted({record.env for record in with_curves})
    contenders = sorted({record.contender for record in with_curves})
    colours = {name: f"C{index % 10}" for index, name in enumerate(contenders)}
    figure, axes = plt.subplots(len(envs), 2, figsize=(11, 3.2 * len(envs)), squeeze=False)
    for (by_steps, by_minutes), env in zip(axes, envs):
        for record in (record for record in with_curves if record.env == env):
            steps, seconds, returns = zip(*record.curve)
            label = record.contender if record.seed == min(r.seed for r in with_curves if r.env == env) else None
            by_steps.plot(steps, returns, color=colours[record.contender], alpha=0.7, lw=1, label=label)
            by_minutes.plot([s / 60 for s in seconds], returns, color=colours[record.contender], alpha=0.7, lw=1)
        by_steps.set(title=env, xlabel="env steps", ylabel="greedy return")
        by_minutes.set(title=env, xlabel="minutes from launch", ylabel="greedy return")
        by_steps.legend(fontsize=8)
    figure.tight_layout()
    name = f"report-{suite}.png"
    figure.savefig(PLOTS / name, dpi=80, metadata={"Software": None})
    plt.close(figure)
    return name


def section(suite: str, records: list[Record], plots: bool) -> list[str]:
    lines = [f"## {SUITES[suite]}", "", *table(records), ""]
    if suite == "atari-5":
        lines += [opening(), "", *summary_table(records), "", *published_table(), ""]
    name = plot(suite, records) if plots else f"report-{suite}.png"
    if name is not None and any(record.curve for record in records):
        lines += [f"![{SUITES[suite]}: greedy return against env steps and minutes](plots/{name})", ""]
    commands = sorted({record.command for record in records})
    lines += ["Measured again with:", "", "```bash", *commands, "```", ""]
    return lines


def page(records: list[Record], plots: bool = True) -> str:
    by_suite = {suite: [record for record in records if record.suite == suite] for suite in SUITES}
    lines = [OPENING.format(machines=machines(records))]
    for suite, found in by_suite.items():
        if found:
            lines += section(suite, found, plots)
    missing = [SUITES[suite] for suite, found in by_suite.items() if not found]
    if missing:
        lines += [f"Not measured yet: {', '.join(missing)}.", ""]
    return "\n".join(lines).rstrip() + "\n"


def headline(records: list[Record]) -> str:
    """A row's figure for the README: solves where the runs had a target, else the greedy return or the rate."""
    row = rows(records)[0]
    if any(run.final.get("solved") is not None for run in row.runs):
        return f"{cell(row, 'solved')} solved, {cell(row, 'minutes')} min"
    if any(run.final.get("return") is not None for run in row.runs):
        return f"return {cell(row, 'return')}"
    if any(run.final.get("steps_per_second") is not None for run in row.runs):
        return f"{cell(row, 'steps_per_second')} env steps/s"
    return f"{cell(row, 'ok')} as promised"


def readme_table(records: list[Record]) -> str:
    """Each learning suite's env: a3c as a user gets it beside the other trainers measured with it."""
    lines = ["| suite | env | a3c | other trainers, same machine |", "| --- | --- | --- | --- |"]
    for suite in LEARNING_SUITES:
        found = [record for record in records if record.suite == suite]
        link = f"[{SUITES[suite]}](docs/results/index.md#{anchor(SUITES[suite])})"
        if suite == "atari-5":  # one row for the five games: the suite's estimate
            lines += atari5_row(found, link)
            continue
        for env in sorted({record.env for record in found}):
            ours = [record for record in found if record.env == env and record.contender == "a3c"]
            others = sorted({r.contender for r in found if r.env == env and not r.contender.startswith("a3c")})
            if not ours:
                continue
            beside = "; ".join(
                f"{name}: {headline([r for r in found if r.env == env and r.contender == name])}" for name in others
            )
            lines.append(f"| {link} | {env} | {headline(ours)} | {beside or '-'} |")
    return "\n".join(lines)


def atari5_row(records: list[Record], link: str) -> list[str]:
    """The Atari-5 suite's README row, where a3c has runs: each contender's overview of the five games."""
    by_contender = medians(records)
    if "a3c" not in by_contender:
        return []
    ours = overview(by_contender.pop("a3c"))
    beside = "; ".join(
        f"{name}: {overview(by_game)}" for name, by_game in by_contender.items() if not name.startswith("a3c")
    )
    return [f"| {link} | the five games ({', '.join(GAMES)}) | {ours} | {beside or '-'} |"]


def anchor(heading: str) -> str:
    """MkDocs' anchor of a heading."""
    kept = "".join(char for char in heading.lower() if char.isalnum() or char in " -")
    return "-".join(kept.split())


def with_readme_table(readme: str, records: list[Record]) -> str:
    before, rest = readme.split(README_BEGIN, 1)
    _, after = rest.split(README_END, 1)
    return f"{before}{README_BEGIN}\n{readme_table(records)}\n{README_END}{after}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing (no plots are drawn)")
    args = parser.parse_args()
    records = read_all(RUNS)
    made = {PAGE: page(records, plots=not args.check), README: with_readme_table(README.read_text(), records)}
    stale = [path for path, text in made.items() if not path.exists() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(REPO)} differs from what the records give: run make report")
        sys.exit(1 if stale else 0)
    for path in stale:
        path.write_text(made[path])
    print(f"{len(records)} records; wrote {', '.join(str(p.relative_to(REPO)) for p in stale) or 'nothing new'}")


if __name__ == "__main__":
    main()
