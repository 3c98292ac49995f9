"""The throughput, clusters and faults suites' old results, as records: one a run (a timing's repeat, a seed, a try).

Converted, the files the 0.26 results page (now docs/results/history.md) presented as the current figures:
- throughput: `throughput.json` (CartPole's pipeline by processes x envs, and classic A3C, version 0.1) and
  `atari-0.23-vs-0.14.json` (the Atari preset against 0.14.0's, version 0.23.2: the page's Atari throughput;
  `atari.json` is version 0.15's table, now in the history);
- clusters: `cluster-links-cpu-groups.json` (the hosts as CPU groups, version 0.24.0), `cluster-auth.json` (and
  `cluster-auth-2.json` where it exists: token authentication against none), and the learning of
  `cluster-learn-{acrobot,lunarlander}-averaged.json` (deltas averaged, version 0.25.0);
- faults: `cluster-faults-host-back.json` (link cut, raylet killed: version 0.23), the head host lost of
  `cluster-faults.json` (0.20.1) and `cluster-faults-head-lost-3.json` (its third try, 0.23.1), and
  `stops-all.json` and `stops-pong.json` (version 0.19).
The other files of these suites chose a setting or were superseded (sync-interval sweeps, CPU groups on and off,
deltas added, the link-cut tries before the hosts came back, an earlier sitting of stops): history.

    cd benchmarks && ../.venv/bin/python -m harness.legacy.scale
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from harness.records import Record, write

RESULTS = Path(__file__).resolve().parents[2] / "results"
LOCAL = "a3c, local backend (8 processes)"
GROUPS = "a3c, 2 node groups x 4"
LAN = "LAN (1 ms, 1 Gbit/s)"
# cluster_bench.py's throughput runs: CartPole's pipeline (not its preset), 8 processes locally, two groups of 4
PIPELINE = {"envs_per_process": 32, "t_max": 10, "replay_ratio": 0}
LOCAL_OPTIONS = {"num_processes": 8, **PIPELINE}
GROUP_OPTIONS = {"backend": "ray", "nodes": 2, "num_processes": 4, "active_workers": 1}
CLUSTER = 'make bench-cluster CLUSTER_ARGS="{}"'
# cluster_bench.py --learn: the preset's --max-steps, and the bench's timeout of a run
LEARN_BUDGETS = {
    "Acrobot-v1": {"env_steps": 500_000, "minutes": 10.0},
    "LunarLander-v3": {"env_steps": 3_000_000, "minutes": 30.0},
}


def load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def record(data: dict, source: str, base: dict, env: str, contender: str, seed: int, final: dict, **rest) -> Record:
    """A record of `data`'s file (its date and machine); `base`: the file's suite, version, command and budget."""
    machine = {"cores": data["cores"], "cpu": data.get("cpu", {})}
    final = {key: value for key, value in final.items() if value is not None}  # a figure the file lacks: left out
    fields = dict(date=data["date"], machine=machine, source=source, final=final)
    return Record(env=env, contender=contender, seed=seed, **fields, **base, **rest)


def count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 'es' if noun.endswith('s') else 's'}"


def rate(steps: float, alone: float, reference: float | None = None) -> dict:
    ratio = None if reference is None else round(steps / reference, 4)
    return {"steps_per_second": round(steps, 1), "env_alone_steps_per_second": round(alone, 1), "ratio": ratio}


def cartpole_throughput(name: str = "throughput.json") -> list[Record]:
    """Every run of each cell, seeded by its repeat. The env alone: the plain loop for one env a process, else
    gymnasium's vectorised CartPole (the file's only vectorised ceiling, at 128 envs a process)."""
    data = load(name)
    plain, vectorised = data["ceilings"]["plain loop, 1 env/process"], data["ceilings"]["vectorised, 128 envs/process"]
    records = []
    for cell in [*data["cells"], data["classic"]]:
        processes, envs = count(cell["num_processes"], "process"), count(cell["envs_per_process"], "env")
        contender = "a3c, classic A3C: 1 env x t-max 20" if "t_max" in cell else f"a3c, {processes} x {envs}"
        base = dict(suite="throughput", version="a3c 0.1.0", command="make bench-throughput")
        base["budget"] = {"env_steps": cell["max_steps"]}
        settings = {key: cell[key] for key in ("num_processes", "envs_per_process", "t_max") if key in cell}
        alone = plain if cell["envs_per_process"] == 1 else vectorised
        for repeat, run in enumerate(cell["runs"]):
            final = rate(run["steady"], alone)
            records.append(record(data, name, base, data["env"], contender, repeat, final, settings=settings))
    return records


# atari_bench.py's labels (the first text found in one) -> the contender and its options
FOUR = {"num_processes": 4}
ATARI = [
    ("--precision float32", "a3c, 4 processes, --precision float32", {**FOUR, "precision": "float32"}),
    ("--frames 4", "a3c, 4 processes, --frames 4", {**FOUR, "frames": 4}),
    ("--convnet small", "a3c, 4 processes, --convnet small", {**FOUR, "convnet": "small"}),
    ("feed-forward", "a3c, feed-forward: 16 envs x t-max 5, 4 processes", {**FOUR, "core": "none", "t_max": 5}),
    ("4 processes", "a3c, 4 processes", FOUR),
    ("2 processes", "a3c", {"num_processes": 2}),  # the default on these 2 cores: the preset as a user launches it
    ("baseline", "a3c, version 0.14's preset, 8 processes", {"num_processes": 8}),  # named apart: the reference
    ("", "a3c, 8 processes", {"num_processes": 8}),  # the bench's own default
]
ATARI_ARGS = "--repeats 2 --steps 40000 --baseline <a git worktree of 0.14.0> --out atari-0.23-vs-0.14"


def atari_throughput(name: str = "atari-0.23-vs-0.14.json") -> list[Record]:
    """Each contender's runs against the baseline's run of the same repeat (the page's "x 0.14's preset"), beside
    ALE's vector env alone (the workers' env)."""
    data = load(name)
    baseline = next(runs for label, runs in data["runs"].items() if label.startswith("baseline"))
    records = []
    for label, runs in data["runs"].items():
        _, contender, settings = next(entry for entry in ATARI if entry[0] in label)
        version = "a3c 0.14.0" if label.startswith("baseline") else "a3c 0.23.2"
        command = f'make bench-atari ATARI_ARGS="{ATARI_ARGS}"'
        base = dict(suite="throughput", version=version, command=command, budget={"env_steps": data["steps"]})
        for repeat, run in enumerate(runs):
            final = rate(run["steady"], data["env_alone"]["ALE vector env"], baseline[repeat]["steady"])
            records.append(record(data, name, base, data["env"], contender, repeat, final, settings=settings))
    return records


def cluster_rate(data: dict, name: str, base: dict, contender: str, seed: int, run: dict, local: dict, settings: dict):
    """A throughput run of cluster_bench.py against `local`, the local backend's run beside it."""
    final = rate(run["env_steps_per_second"], data["env_alone_steps_per_second"], local["env_steps_per_second"])
    fields = dict(settings=settings, stop_reason=run["stop_reason"])
    return record(data, name, base, "CartPole-v1", contender, seed, final, **fields)


def cluster_links(name: str = "cluster-links-cpu-groups.json") -> list[Record]:
    """The hosts at `--sync-interval 200`, each run against the local run of its link and repeat (the bench ran
    the local backend first in each link's repeats, so the local runs are link-major); the local runs seeded by
    their place in the file, the others by their repeat."""
    data = load(name)
    local, links = data["rates"]["local"], ("unshaped", LAN, "WAN (20 ms, 100 Mbit/s)")
    command = CLUSTER.format("--seconds 20 --repeats 2 --intervals 200 --out cluster-links-cpu-groups")
    base = dict(suite="clusters", version="a3c 0.24.0", command=command, budget={"minutes": round(20 / 60, 4)})
    records = [cluster_rate(data, name, base, LOCAL, i, run, run, LOCAL_OPTIONS) for i, run in enumerate(local)]
    repeats, settings = len(local) // len(links), {**PIPELINE, **GROUP_OPTIONS, "sync_interval": 200}
    for place, link in enumerate(links):
        contender = f"{GROUPS}, {'unshaped (veth)' if link == 'unshaped' else link}"
        for repeat, run in enumerate(data["rates"][f"{link}, --sync-interval 200"]):
            local_run = local[place * repeats + repeat]
            records.append(cluster_rate(data, name, base, contender, repeat, run, local_run, settings))
    return records


def cluster_auth(name: str, first_seed: int) -> list[Record]:
    """Token authentication against none on the LAN hosts, each run against the local run of its repeat; seeded by
    the repeat (from `first_seed` in a later file of the same measurement)."""
    data = load(name)
    local = data["rates"]["local"]
    out = "" if name == "cluster-auth.json" else f" --out {Path(name).stem}"
    # The file records no version: the code measured is version 0.26.0's (its authentication)
    # cluster_bench.py's default --seconds 30 a run.
    command = CLUSTER.format(f"--auth --repeats {len(local)}{out}")
    base = dict(suite="clusters", version="a3c 0.26.0", command=command, budget={"minutes": 0.5})
    records = []
    for key, runs in data["rates"].items():
        contender = LOCAL if key == "local" else f"{GROUPS}, {key}"
        settings = LOCAL_OPTIONS if key == "local" else {**PIPELINE, **GROUP_OPTIONS}
        if key.endswith("no authentication"):  # the trainer joins a cluster without a token only when told to
            settings = {**settings, "ray_allow_unauthenticated": True}
        for repeat, run in enumerate(runs):
            records.append(cluster_rate(data, name, base, contender, first_seed + repeat, run, local[repeat], settings))
    return records


def cluster_learning(name: str, seeds: int) -> list[Record]:
    """Each seed (from 0) to a confirmed solve, locally and on two groups over the LAN-like links."""
    data = load(name)
    records = []
    for env, by in data["runs"].items():
        command = CLUSTER.format(f"--learn --env {env} --seeds {seeds} --out {Path(name).stem}")
        base = dict(suite="clusters", version="a3c 0.25.0", command=command, budget=LEARN_BUDGETS[env])
        for key, runs in by.items():
            local = key.startswith("local")
            contender, settings = (LOCAL, {"num_processes": 8}) if local else (f"{GROUPS}, {LAN}", GROUP_OPTIONS)
            for seed, run in enumerate(runs):
                minutes = round(run["wall_seconds"] / 60, 4)
                final = {"solved": run["solved"], "env_steps": run["env_steps"], "minutes": minutes}
                records.append(record(data, name, base, env, contender, seed, final, settings=settings))
    return records


def recovered(fault: str, found: dict) -> bool:
    """The clusters guide's promise: last.pt loads and resumes with metrics.csv going on; and where a worker host
    failed, the run trained on (exit 130 at the bench's SIGINT) with a new group running."""
    kept = found["last_pt_loads"] and found["resumed_exit_code"] == 130 and found["metrics_continue"]
    if fault == "head host lost":  # the trainer dies with its host: what it kept is the promise
        return kept
    return kept and found["exit_code"] == 130 and found.get("replacement_runs_after") is not None


def faults_args(args: dict) -> str:
    """cluster_faults.py's options as the page gives them, from those the file records."""
    faults = "".join(f'--fault "{fault}" ' for fault in args["fault"] or [])
    out = f" --out {args['out']}" if args.get("out") else ""
    return f"{faults}--tries {args['tries']} --watch {args['watch']:g} --restore-after {args['restore_after']:g}{out}"


def fault_tries(name: str, version: str, faults: list[str], first_try: int = 0) -> list[Record]:
    """One record a try of each of `faults`, seeded by the try; the seconds: from the fault to a new group running
    (none where the head's host was lost)."""
    data = load(name)
    command = f"make bench-cluster-faults FAULTS_ARGS='{faults_args(data['args'])}'"
    base = dict(suite="faults", version=version, command=command, budget={})
    settings = {key: data["args"][key] for key in ("fault_at", "restore_after", "watch", "resume_for")}
    records = []
    for fault in faults:
        for index, found in enumerate(data["results"][fault]):
            seconds = found.get("replacement_runs_after")
            final = {"ok": recovered(fault, found), "seconds": None if seconds is None else round(seconds, 3)}
            fields = dict(settings=settings, stop_reason=found["stop_reason"] or "")  # none: the trainer was killed
            # cluster_faults.py trains CartPole-v1
            records.append(record(data, name, base, "CartPole-v1", fault, first_try + index, final, **fields))
    return records


def cluster_faults() -> list[Record]:
    """A worker host's faults since the host comes back (0.23); the head's host lost in both sittings (2 + 1 tries)."""
    return [
        *fault_tries("cluster-faults-host-back.json", "a3c 0.23.0", ["link cut", "raylet killed"]),
        *fault_tries("cluster-faults.json", "a3c 0.20.1", ["head host lost"]),
        *fault_tries("cluster-faults-head-lost-3.json", "a3c 0.23.1", ["head host lost"], first_try=2),
    ]


STOP_WAYS = {  # stops.py's ways -> the contender, and the option that set when the signal came
    "timeout -s INT": ("timeout -s INT (the trainer, then its group)", "timeout"),
    "timeout -s TERM": ("timeout -s TERM (the trainer, then its group)", "timeout"),
    "group SIGTERM": ("SIGTERM to the process group", "train_for"),
}
STOPS_ARGS = {
    "stops-all.json": '--way "timeout -s INT" --way "timeout -s TERM" --way "group SIGTERM" --env CartPole-v1 '
    "--env MinAtar/Breakout-v1 --tries 5 --timeout 20 --out stops-all",
    "stops-pong.json": '--way "group SIGTERM" --env ALE/Pong-v5 --tries 3 --train-for 30 --out stops-pong',
}


def stops(name: str) -> list[Record]:
    """One record a try: passed (the way's exit code and stop reason, last.pt loads), the signal to the exit."""
    data = load(name)
    base = dict(suite="faults", version="a3c 0.19.0", command=f"make bench-stops STOPS_ARGS='{STOPS_ARGS[name]}'")
    base["budget"] = {}
    records = []
    for key, tries in data["results"].items():
        way, env = key.split(", ", 1)
        contender, option = STOP_WAYS[way]
        for index, found in enumerate(tries):
            final = {"ok": found["passed"], "seconds": round(found["stop_seconds"], 4)}
            fields = dict(settings={option: data["args"][option]}, stop_reason=found["stop_reason"] or "")
            records.append(record(data, name, base, env, contender, index, final, **fields))
    return records


def convert() -> list[Record]:
    auth = [("cluster-auth.json", 0), ("cluster-auth-2.json", 5)]  # the second: further repeats of the same
    return [
        *cartpole_throughput(),
        *atari_throughput(),
        *cluster_links(),
        *(item for name, first in auth if (RESULTS / name).exists() for item in cluster_auth(name, first)),
        *cluster_learning("cluster-learn-acrobot-averaged.json", 10),
        *cluster_learning("cluster-learn-lunarlander-averaged.json", 5),
        *cluster_faults(),
        *stops("stops-all.json"),
        *stops("stops-pong.json"),
    ]


if __name__ == "__main__":
    records = convert()
    if len({(item.suite, item.file_name()) for item in records}) < len(records):
        raise SystemExit("two records would share a file")
    for item in records:
        write(item)
    for suite, count in Counter(item.suite for item in records).items():
        print(f"{suite}: {count} records")
