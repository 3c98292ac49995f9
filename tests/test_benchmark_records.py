"""The benchmarks write a record a run (benchmarks/harness/records.py) as the run ends: each script's run, with the
trainer's CLI and SB3's scripts faked by hand-made run directories and JSON lines, writes the suite, env, contender,
seed, final figures and command the results tables expect, under the names the converted records of its older
results files have (benchmarks/harness/legacy), so that new runs land in the same rows."""

from __future__ import annotations

import csv
import json
import sys
from importlib import metadata
from pathlib import Path

import pytest
from harness import records

A3C_VERSION = f"a3c {__import__('a3c').__version__}"
EVALS = [  # eval.csv: two evaluations, the last confirmed on 100 new episodes
    {"env_steps": 5_000, "wall_seconds": 30.0, "mean_return": 1.5, "episodes": 10, "confirmation": 0},
    {"env_steps": 10_000, "wall_seconds": 60.0, "mean_return": 2.5, "episodes": 10, "confirmation": 0},
    {"env_steps": 10_000, "wall_seconds": 61.0, "mean_return": 2.25, "episodes": 100, "confirmation": 1},
]
METRICS = [  # metrics.csv: 2,000 env steps a second; the last row the one written at the stop
    {"env_steps": steps, "wall_seconds": steps / 2_000, "mean_return": 1.0, "entropy": 0.5}
    for steps in (2_000, 4_000, 6_000, 8_000, 10_000, 12_000)
]
SUMMARY = {  # summary.json of a run solved at 10,000 env steps, the solve confirmed
    "env_steps": 12_000,
    "solved_env_steps": 10_000,
    "solved_wall_seconds": 61.0,
    "target_return": 2.0,
    "solved": True,
    "confirmed_return": 2.25,
    "confirmed_episodes": 100,
    "last_eval_return": 2.5,
    "best_eval_return": 2.5,
    "stop_reason": "target_reached",
    "steps_per_second": 1_900.0,
    "wall_seconds": 6.0,
}
UNSOLVED = {
    **SUMMARY,
    "solved_env_steps": None,
    "solved": False,
    "confirmed_return": None,
    "stop_reason": "interrupted",
}
WALL = 90.0  # every faked process's seconds from launch to exit: 1.5 minutes
try:
    metadata.version("stable-baselines3")
    HAS_SB3 = True
except metadata.PackageNotFoundError:
    HAS_SB3 = False
SB3 = pytest.mark.skipif(not HAS_SB3, reason="SB3's records name its version: pip install -r requirements-bench.txt")


def write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def after(command: list[str], option: str) -> str:
    return command[command.index(option) + 1]


def fake_processes(summary: dict = SUMMARY, outputs: dict | None = None):
    """run_timed for a benchmark: the trainer (or sb3_atari.py) leaves a run directory as its runs do, max_steps
    500,000 in config.json; another script prints what `outputs` gives for a word of its command."""

    def run_timed(command, timeout, cwd=None):
        for word, output in (outputs or {}).items():
            if any(word in part for part in command):
                return WALL, output, False
        run_dir = Path(after(command, "--run-dir"))
        (run_dir / "checkpoints").mkdir(parents=True)
        (run_dir / "checkpoints" / "best.pt").write_bytes(b"")
        write_csv(run_dir / "eval.csv", EVALS)
        write_csv(run_dir / "metrics.csv", METRICS)
        if "--env" in command:  # the trainer's; sb3_atari.py writes no summary
            (run_dir / "summary.json").write_text(json.dumps({**summary, "env": after(command, "--env")}))
            (run_dir / "config.json").write_text(json.dumps({"max_steps": 500_000}))
        return WALL, "", False

    return run_timed


@pytest.fixture
def written(tmp_path, monkeypatch):
    """`written(module, ...)` points the modules' record writes at tmp_path; `written.all()` gives the records
    written there, `written.found()` by contender and seed."""

    def point(*modules):
        for module in modules:
            monkeypatch.setattr(module, "write", lambda record: records.write(record, tmp_path))

    point.all = lambda: records.read_all(tmp_path)
    point.found = lambda: {(each.contender, each.seed): each for each in point.all()}
    return point


def test_solve_records_the_preset_as_a3c_and_its_other_contenders_by_what_they_change(written, monkeypatch):
    from learning import solve

    written(solve)
    monkeypatch.setattr(solve, "run_timed", fake_processes())
    solve.CONTENDERS[solve.OURS](3, 120.0)
    solve.CONTENDERS["ours, 8 proc x 8 envs, t-max 10, no replay (the defaults)"](3, 120.0)
    found = written.found()
    ours = found["a3c", 3]
    assert (ours.suite, ours.env, ours.version) == ("classic-control", "CartPole-v1", A3C_VERSION)
    assert ours.final == {"env_steps": 10_000, "minutes": 1.5, "solved": True, "return": 2.25, "return_episodes": 100}
    assert ours.budget == {"minutes": 2.0} and ours.settings == {"num_processes": 8}
    assert ours.curve == [[5_000, 30.0, 1.5], [10_000, 60.0, 2.5]] and ours.stop_reason == "target_reached"
    assert ours.command == solve.COMMAND and solve.COMMAND.startswith("make bench-solve")
    defaults = found["a3c, 8 envs a process, t-max 10, no replay (the defaults without the preset)", 3]
    assert defaults.settings == {"num_processes": 8, "envs_per_process": 8, "t_max": 10, "replay_ratio": 0}
    assert len(found) == 2


def test_a_solve_run_killed_before_its_summary_writes_no_record(written, monkeypatch):
    from learning import solve

    written(solve)
    monkeypatch.setattr(solve, "run_timed", lambda command, timeout: (WALL, "", True))
    assert solve.ours(0, 120.0) == {"solved": False, "wall_seconds": WALL, "env_steps": None}
    assert written.found() == {}


def test_holdout_records_the_confirmed_runs_with_best_pt_held_out_and_not_the_unconfirmed(written, monkeypatch):
    from learning import holdout

    written(holdout)
    monkeypatch.setattr(holdout, "run_timed", fake_processes())
    monkeypatch.setattr(holdout, "held_out_mean", lambda checkpoint, seed: 2.125)
    suite = holdout.SUITES["LunarLander-v3"]
    for name, options in holdout.CONTENDERS.items():
        holdout.run("LunarLander-v3", 2, suite, holdout.RECORDED.get(name), **options)
    (ours,) = written.found().values()
    assert (ours.suite, ours.env, ours.contender, ours.seed) == ("box2d", "LunarLander-v3", "a3c", 2)
    assert ours.final == {"env_steps": 10_000, "minutes": 1.5, "solved": True, "return": 2.125, "return_episodes": 100}
    assert ours.budget == {"minutes": 30.0} and ours.settings == {"num_processes": 8}
    assert ours.command == holdout.COMMAND and holdout.COMMAND.startswith("make bench-holdout")


def test_explore_records_its_contenders_in_the_exploration_suite_under_their_table_names(written, monkeypatch):
    from harness.legacy import exploration
    from learning import explore, zoo

    written(zoo)
    monkeypatch.setattr(zoo, "COMMAND", zoo.COMMAND)  # main() points zoo.py's runs at its own command
    monkeypatch.setattr(zoo, "run_timed", fake_processes(UNSOLVED))
    monkeypatch.setattr(explore, "report", lambda *args: None)
    argv = ["--env", "MountainCar-v0", "--seeds", "1", "--only", "no novelty, no noise", "--only", "novelty 0.3"]
    monkeypatch.setattr(sys, "argv", ["explore.py", *argv])
    monkeypatch.setattr(explore, "COMMAND", explore.make_command("bench-explore", "EXPLORE_ARGS", argv))
    explore.main()
    found = written.found()
    ours = found["a3c, no novelty bonus, no noise", 0]
    assert (ours.suite, ours.env, ours.version) == ("exploration", "MountainCar-v0", A3C_VERSION)
    assert ours.settings == {"num_processes": 8, "novelty_coef": 0.0, "noise": False}
    assert ours.final == {"env_steps": 12_000, "minutes": 1.5, "solved": False, "return": 2.5}
    assert ours.budget == {"minutes": 20.0} and ours.stop_reason == "interrupted"
    assert ours.command == (
        "make bench-explore EXPLORE_ARGS=\"--env MountainCar-v0 --seeds 1 --only 'no novelty, no noise' "
        "--only 'novelty 0.3'\""
    )
    assert found["a3c, novelty 0.3", 0].settings == {"num_processes": 8, "novelty_coef": 0.3}
    assert len(found) == 2
    # the names of the converted records' contenders: new runs land in their rows
    ours_converted = {name: table for name, (table, _) in exploration.CONTENDERS.items() if table.startswith("a3c")}
    assert {name: explore.table_name(name) for name in ours_converted} == ours_converted


def test_minatar_records_ours_by_the_options_beside_the_preset_with_last_pt_s_final_games(written, monkeypatch):
    from learning import minatar_bench

    written(minatar_bench)
    outputs = {"evaluate": "mean return 7.5 over 10 episodes"}
    monkeypatch.setattr(minatar_bench, "run_timed", fake_processes(UNSOLVED, outputs))
    minatar_bench.ours("Breakout", 1, 120.0, [])
    minatar_bench.ours("Breakout", 1, 120.0, ["--lr", "0.002", "--eval-episodes", "5"])  # 5: the preset's
    found = written.found()
    ours = found["a3c", 1]
    assert (ours.suite, ours.env, ours.version) == ("minatar", "MinAtar/Breakout-v1", A3C_VERSION)
    assert ours.final == {"env_steps": 12_000, "minutes": 1.5, "solved": False, "return": 7.5, "return_episodes": 10}
    assert ours.budget == {"env_steps": 500_000, "minutes": 2.0} and ours.settings == {"num_processes": 8}
    assert ours.command == minatar_bench.COMMAND and minatar_bench.COMMAND.startswith("make bench-minatar")
    assert found["a3c, --lr 0.002", 1].settings == {"num_processes": 8, "lr": 0.002}


def test_atari_records_the_preset_with_its_evaluator_as_a3c_and_without_it_apart(written, monkeypatch):
    from argparse import Namespace

    from learning import atari_learn

    written(atari_learn)
    monkeypatch.setattr(atari_learn, "run_timed", fake_processes(UNSOLVED))
    settings = {"frames-1": "--eval-episodes 4 --frames 1", "preset": ""}  # legacy/games.py's and the default
    atari_learn.train(settings, Namespace(game="Pong", seeds=1, first_seed=2, minutes=60.0, runs_dir=None))
    found = written.found()
    ours = found["a3c", 2]
    assert (ours.suite, ours.env, ours.version) == ("atari", "ALE/Pong-v5", A3C_VERSION)
    assert ours.final == {"env_steps": 12_000, "minutes": 1.5, "solved": False, "return": 2.5}
    assert ours.budget == {"env_steps": 500_000, "minutes": 60.0} and ours.settings == {"num_processes": 4}
    assert ours.command == atari_learn.COMMAND and atari_learn.COMMAND.startswith("make bench-atari-learn")
    assert found["a3c, --eval-episodes 0", 2].settings == {"num_processes": 4, "eval_episodes": 0}


@SB3
def test_sb3s_runs_are_recorded_under_the_converted_records_names(written, monkeypatch):
    from argparse import Namespace

    from harness.legacy import classic, games
    from learning import atari_learn, minatar_bench, solve

    written(solve, minatar_bench, atari_learn)
    sb3_result = {"solved": True, "env_steps": 30_000, "final_eval": 500.0, "curve": [[30_000, 12.0, 500.0]]}
    monkeypatch.setattr(solve, "run_sb3", lambda *args, **kwargs: (WALL, sb3_result))
    solve.CONTENDERS["SB3 PPO (Zoo)"](4, 120.0)
    sb3_line = {"env_steps": 300_000, "final_returns": [4.0, 6.0], "curve": [[100_000, 30.0, 3.0]]}
    monkeypatch.setattr(minatar_bench, "run_timed", fake_processes(outputs={"sb3_minatar.py": json.dumps(sb3_line)}))
    minatar_bench.sb3("Breakout", 4, 120.0)
    monkeypatch.setattr(atari_learn, "run_timed", fake_processes())
    args = Namespace(game="Breakout", seeds=1, first_seed=4, minutes=60.0, runs_dir=None)
    atari_learn.train({atari_learn.SB3_SETTING: ""}, args)
    found = {(each.suite, each.contender): each for each in written.all()}
    assert len(found) == 3
    assert all(each.version.startswith("stable-baselines3 ") and each.seed == 4 for each in found.values())
    cartpole = found["classic-control", classic.CONTENDERS["SB3 PPO (Zoo)"][0]]
    assert cartpole.final == {
        "minutes": 1.5,
        "solved": True,
        "env_steps": 30_000,
        "return": 500.0,
        "return_episodes": 10,
    }
    assert cartpole.command == solve.COMMAND and cartpole.budget == {"minutes": 2.0}
    minatar = found["minatar", games.SB3_MINATAR]
    assert minatar.final == {"minutes": 1.5, "env_steps": 300_000, "return": 5.0, "return_episodes": 10}
    assert minatar.budget == {"minutes": 2.0} and minatar.curve == [[100_000, 30.0, 3.0]]
    atari = found["atari", games.SB3_ATARI]  # no target confirmed: no solve
    assert atari.env == "ALE/Breakout-v5" and atari.curve == [[5_000, 30.0, 1.5], [10_000, 60.0, 2.5]]
    # the env steps of the last full metrics row (atari_runs.py leaves out the short one of the stop), as converted
    assert atari.final == {"minutes": 1.5, "env_steps": 10_000, "return": 2.5, "return_episodes": 10}
    assert atari.budget == {"env_steps": 10_000_000, "minutes": 60.0}


def test_throughput_records_each_run_beside_the_env_alone_and_a_smoke_run_none(written, monkeypatch):
    pytest.importorskip("psutil", reason="the throughput benchmark needs pip install -r requirements-bench.txt")
    from speed import throughput

    written(throughput)
    monkeypatch.setattr(throughput, "run_timed", fake_processes(UNSOLVED))
    cell = throughput.measure_cell(2, 8, 10_000, 2, alone=50_000.0)
    throughput.measure_cell(8, 1, 10_000, 1, alone=9_000.0, t_max=20)
    throughput.measure_cell(1, 1, 10_000, 1)  # no env alone: a smoke run, no record
    assert cell["steady_median"] == 2_000.0
    found = written.found()
    # legacy/scale.py's names
    assert sorted(found) == [
        ("a3c, 2 processes x 8 envs", 0),
        ("a3c, 2 processes x 8 envs", 1),
        ("a3c, classic A3C: 1 env x t-max 20", 0),
    ]
    ours = found["a3c, 2 processes x 8 envs", 1]
    assert (ours.suite, ours.env, ours.version) == ("throughput", "CartPole-v1", A3C_VERSION)
    assert ours.final == {"steps_per_second": 2_000.0, "env_alone_steps_per_second": 50_000.0}
    assert ours.budget == {"env_steps": 10_000} and ours.settings == {"num_processes": 2, "envs_per_process": 8}
    assert ours.command == throughput.COMMAND and ours.stop_reason == "interrupted"
    classic = found["a3c, classic A3C: 1 env x t-max 20", 0]
    assert classic.settings == {"num_processes": 8, "envs_per_process": 1, "t_max": 20}
    assert classic.final["env_alone_steps_per_second"] == 9_000.0


def test_a_trainer_contender_is_named_by_the_options_that_differ_from_the_preset():
    from harness.trainer_runs import variant

    preset = {"lr": 0.0005, "hidden_sizes": (256,), "center_frames": True, "eval_episodes": 4}
    assert variant(["--lr", "5e-4", "--hidden-sizes", "256", "--center-frames"], preset) == ("a3c", {})
    assert variant(["--eval-episodes", "0", "--eval-episodes", "4"], preset) == ("a3c", {})  # the last one wins
    assert variant(["--no-center-frames", "--core", "lstm", "--lr", "0.001"], preset) == (
        "a3c, --no-center-frames, --core lstm, --lr 0.001",
        {"center_frames": False, "core": "lstm", "lr": 0.001},
    )


def test_zoo_records_make_bench_mujocos_command_for_its_tasks_and_bench_zoos_for_the_rest():
    from learning import zoo

    tasks = [part for task in zoo.MUJOCO_SUITE[:-1] for part in ("--env", task.split("=", 1)[1])]
    assert zoo.command_of([*tasks, "--out", "mujoco", "--seeds", "2"]) == 'make bench-mujoco MUJOCO_ARGS="--seeds 2"'
    assert zoo.command_of(["--env", "HalfCheetah-v5"]) == 'make bench-zoo ZOO_ARGS="--env HalfCheetah-v5"'
    assert zoo.command_of([*tasks[2:], "--out", "mujoco"]).startswith("make bench-zoo")  # a task short


def test_an_atari5_runs_final_score_is_the_mean_of_its_last_evaluations_games_from_ten_up():
    from learning.atari_suite import final_score

    rows = [  # four games an evaluation; the confirmation's new games are no evaluation
        {"return": score, "episodes": 4, "confirmation": False} for score in (100.0, 10.0, 20.0, 30.0)
    ] + [{"return": 999.0, "episodes": 100, "confirmation": True}]
    assert final_score(rows) == (20.0, 12)  # the last three: 12 games
    assert final_score(rows[-2:]) == (30.0, 4)  # fewer games than ten: all there are
    assert final_score([]) == (None, 0)


@SB3
def test_the_atari5_suite_records_each_contender_and_game_with_its_final_score(written, monkeypatch, tmp_path_factory):
    from learning import atari_suite

    written(atari_suite)
    monkeypatch.setattr(atari_suite, "run_timed", fake_processes(UNSOLVED))
    runs = tmp_path_factory.mktemp("runs")  # apart from the records
    atari_suite.run_ours("Qbert", 3, 60.0, runs / "ours")
    atari_suite.run_sb3("Qbert", 3, 60.0, runs / "sb3")
    found = written.found()
    ours, sb3 = found["a3c", 3], found[atari_suite.SB3_CONTENDER, 3]
    assert {(each.suite, each.env) for each in (ours, sb3)} == {("atari-5", "ALE/Qbert-v5")}
    assert ours.version == A3C_VERSION and sb3.version.startswith("stable-baselines3 ")
    assert ours.final["return"] == sb3.final["return"] == 2.5  # the last evaluation's 10 games
    assert ours.budget["minutes"] == sb3.budget["minutes"] == 60.0  # the same wall clock
    assert sb3.budget["env_steps"] == 10_000_000  # the Zoo's schedules' horizon
    assert ours.command == sb3.command == atari_suite.COMMAND and len(found) == 2
