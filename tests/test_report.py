"""`make report` (benchmarks/harness): the results schema's checks, the tables from hand-made records (medians and
ranges as stated, a missing seed said), and the repository's results page and README table as the records give
them."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, replace

import pytest
from harness import records, report, tables

from .conftest import REPO_ROOT

RUN = records.Record(
    suite="classic-control",
    env="CartPole-v1",
    contender="a3c",
    seed=0,
    version="a3c 0.26.0",
    command="make bench-solve",
    date="2026-12-07T05:00:00+00:00",
    machine={"cores": 2, "cpu": {"model": "Test CPU", "flags": ["avx2"]}},
    budget={"minutes": 10},
    final={"solved": True, "env_steps": 10_000, "minutes": 1.0},
)


def runs(contender: str, figures: list[dict], version: str = "a3c 0.26.0", seeds=None) -> list[records.Record]:
    return [
        replace(RUN, contender=contender, version=version, seed=seed, final=final)
        for seed, final in zip(seeds or range(len(figures)), figures)
    ]


def test_a_record_is_written_and_read_back_and_a_broken_one_is_named(tmp_path):
    path = records.write(RUN, tmp_path)
    assert path == tmp_path / "classic-control" / "cartpole-v1--a3c--a3c-0.26.0--seed0.json"
    assert records.read_all(tmp_path) == [RUN]
    broken = {**asdict(RUN), "final": {"solved": "yes"}}
    path.write_text(json.dumps(broken))
    with pytest.raises(records.RecordError, match="final solved is 'yes', not a bool"):
        records.read_all(tmp_path)
    with pytest.raises(records.RecordError, match="suite 'go' is none of"):
        records.validate({**asdict(RUN), "suite": "go"}, "here")
    with pytest.raises(records.RecordError, match=r"missing \['seed'\]"):
        records.validate({k: v for k, v in asdict(RUN).items() if k != "seed"}, "here")


def test_the_table_gives_median_and_range_of_the_solved_runs_and_says_a_missing_seed():
    ours = runs(
        "a3c",
        [
            {"solved": True, "env_steps": 10_000, "minutes": 1.0},
            {"solved": True, "env_steps": 30_000, "minutes": 3.0},
            {"solved": False, "env_steps": 500_000, "minutes": 10.0},  # its budget: no time to solve
            {"solved": True, "env_steps": 20_000, "minutes": 2.5},
        ],
    )
    theirs = runs("SB3 PPO", [{"solved": True, "env_steps": 50_000, "minutes": 4.0}] * 3, "stable-baselines3 2.9.0")
    theirs = [replace(run, seed=seed) for run, seed in zip(theirs, (0, 1, 3))]  # seed 2 never ran
    lines = tables.table(ours + theirs)
    assert lines[0] == "| env | contender | runs | solved | env steps | minutes | version |"
    assert lines[2] == "| CartPole-v1 | a3c | 4 | 3/4 | 20,000 (10,000-30,000) | 2.5 (1.0-3.0) | a3c 0.26.0 |"
    assert lines[3] == (
        "| CartPole-v1 | SB3 PPO | 3 (seed 2 missing) | 3/3 | 50,000 (50,000-50,000) | 4.0 (4.0-4.0) "
        "| stable-baselines3 2.9.0 |"
    )


def test_each_version_of_a_contender_is_a_row_of_its_own_the_newest_first():
    old = runs("a3c", [{"return": 10.0}], "a3c 0.9.0")
    new = runs("a3c", [{"return": 20.0}, {"return": 40.0}], "a3c 0.10.0")
    assert tables.table(old + new)[2:] == [
        "| CartPole-v1 | a3c | 2 | 30.0 (20.0-40.0) | a3c 0.10.0 |",
        "| CartPole-v1 | a3c | 1 (seed 1 missing) | 10.0 | a3c 0.9.0 |",
    ]


def test_the_repeats_of_a_timing_are_no_seeds_to_miss():
    timed = runs("a3c", [{"steps_per_second": 100.0}] * 3) + runs("a3c, other", [{"steps_per_second": 50.0}])
    assert [line.split(" | ")[2] for line in tables.table(timed)[2:]] == ["3", "1"]


def test_the_page_has_a_section_a_suite_with_its_command_and_names_those_not_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "PLOTS", tmp_path)
    curve = [[0, 0.0, 10.0], [5000, 30.0, 200.0]]
    made = report.page([replace(RUN, curve=curve), replace(RUN, seed=1, suite="atari", env="ALE/Pong-v5")])
    assert "## Classic control\n\n| env | contender |" in made
    assert "![Classic control: greedy return against env steps and minutes](plots/report-classic-control.png)" in made
    assert (tmp_path / "report-classic-control.png").stat().st_size > 0
    assert "```bash\nmake bench-solve\n```" in made
    assert "Not measured yet: Box2D, MuJoCo, MinAtar, Atari-5, Exploration (sparse rewards)," in made
    assert "2 cores, Test CPU (avx2)" in made
    assert report.page([replace(RUN, curve=curve)], plots=False) == report.page([replace(RUN, curve=curve)])


def test_the_readme_row_puts_the_contenders_beside_a3c():
    found = runs("a3c", [{"solved": True, "minutes": 1.0}, {"solved": True, "minutes": 3.0}])
    found += runs("SB3 A2C", [{"solved": False, "minutes": 10.0}], "stable-baselines3 2.9.0")
    assert report.readme_table(found).splitlines()[2] == (
        "| [Classic control](docs/results/index.md#classic-control) | CartPole-v1 | 2/2 solved, 2.0 (1.0-3.0) min "
        "| SB3 A2C: 0/1 solved, - min |"
    )


def test_the_results_page_and_the_readme_table_are_what_the_records_give():
    checked = subprocess.run(
        [sys.executable, str(REPO_ROOT / "benchmarks" / "harness" / "report.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_trainer_runs_record_has_its_solve_its_curve_without_confirmations_and_the_checkout(tmp_path):
    from harness import trainer_runs

    summary = {
        "env": "CartPole-v1",
        "env_steps": 12_000,
        "solved_env_steps": 10_000,
        "target_return": 475.0,
        "solved": True,
        "confirmed_return": 490.5,
        "confirmed_episodes": 100,
        "last_eval_return": 500.0,
        "stop_reason": "target_reached",
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "eval.csv").write_text(
        "env_steps,wall_seconds,mean_return,confirmation\n5000,2.5,120.0,0\n10000,5.0,500.0,0\n10000,6.0,490.5,1\n"
    )
    made = trainer_runs.learning_record(
        tmp_path, launch_seconds=9.0, suite="classic-control", contender="a3c", seed=3, command="make x", budget={}
    )
    assert made.final == {"env_steps": 10_000, "minutes": 0.15, "solved": True, "return": 490.5, "return_episodes": 100}
    assert made.curve == [[5000, 2.5, 120.0], [10000, 5.0, 500.0]]
    assert made.version == f"a3c {__import__('a3c').__version__}" and made.machine["cores"] >= 1
    assert records.validate(asdict(made), "made") == made


def test_an_sb3_runs_record_keeps_its_solve_and_the_package_version():
    pytest.importorskip("stable_baselines3", reason="SB3's runs need pip install -r requirements-bench.txt")
    from harness import trainer_runs

    fields = dict(suite="classic-control", env="CartPole-v1", contender="SB3 A2C", command="make x", budget={})
    result = {"solved": True, "env_steps": 20_000, "final_eval": 480.0, "curve": [[10_000, 5.0, 100.0]]}
    made = trainer_runs.sb3_record(result, launch_seconds=30.0, episodes=10, seed=0, **fields)
    assert made.final == {"solved": True, "minutes": 0.5, "env_steps": 20_000, "return": 480.0, "return_episodes": 10}
    assert made.version.startswith("stable-baselines3 ") and made.commit == ""
    unsolved = {"solved": False, "env_steps": None, "final_eval": float("nan"), "curve": []}
    unsolved = trainer_runs.sb3_record(unsolved, launch_seconds=60.0, episodes=10, seed=1, **fields)
    assert unsolved.final == {"solved": False, "minutes": 1.0}


def test_the_command_of_a_record_quotes_what_the_benchmark_was_given():
    from harness.trainer_runs import make_command

    given = ["--env", "LunarLander-v3", "--only", "ours (preset)"]
    assert make_command("bench-zoo", "ZOO_ARGS", given) == (
        "make bench-zoo ZOO_ARGS=\"--env LunarLander-v3 --only 'ours (preset)'\""
    )
    assert make_command("bench-zoo", "ZOO_ARGS", []) == "make bench-zoo"
