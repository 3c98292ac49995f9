PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: lint venv atari-venv box2d-venv ray-venv video-venv minatar-venv mujoco-venv docs-venv docs docs-serve train test bench-venv bench-throughput bench-learners bench-solve bench-zoo bench-mujoco bench-env-speed bench-explore bench-ray bench-cluster bench-cluster-faults bench-stops bench-minatar bench-atari bench-atari-learn bench-atari-suite bench-soak bench-holdout bench-startup bench-tune tune-venv track-venv export-venv bench-track report clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-runtime.txt requirements-test.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

train: venv
	$(PY) main.py --env CartPole-v1 --num-processes 8

# The extras: requirements-<extra>.txt on top of the base install, e.g. make ray-venv
EXTRAS := atari box2d ray video minatar mujoco docs tune track export lint

$(EXTRAS:%=%-venv): %-venv: $(VENV)/.%-installed

$(EXTRAS:%=$(VENV)/.%-installed): $(VENV)/.%-installed: requirements-%.txt $(VENV)/.installed
	$(PY) -m pip install --quiet -r $<
	touch $@

test: atari-venv box2d-venv ray-venv video-venv minatar-venv mujoco-venv docs-venv tune-venv track-venv export-venv lint-venv
	$(PY) -m pytest -q -m "not machine_wide" --numprocesses auto --durations=10   # a worker a core (pytest-xdist)
	$(PY) -m pytest -q -m machine_wide --durations=10   # Ray and network namespaces are the machine's: one at a time

# ruff's checks and format, and the layers contract (pyproject.toml): imports only go down
lint: lint-venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

# the documentation site: MkDocs (Material), the CLI and API reference generated from the code
docs: docs-venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: docs-venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve

# the results page (docs/results/index.md), its plots and the README's results table, from benchmarks/results/records
report: venv
	$(PY) benchmarks/harness/report.py

bench-venv: $(VENV)/.bench-installed

$(VENV)/.bench-installed: requirements-bench.txt $(VENV)/.installed
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-bench.txt
	touch $@

bench-throughput: bench-venv
	$(PY) benchmarks/speed/throughput.py

bench-learners: bench-venv
	$(PY) benchmarks/speed/learners.py

# SOLVE_ARGS="--seeds 10 --baseline /tmp/old": more seeds, and another checkout side by side
bench-solve: bench-venv
	$(PY) benchmarks/learning/solve.py $(SOLVE_ARGS)

# ZOO_ARGS="--env Acrobot-v1 --seeds 3": a part of the suite (the whole of it takes hours on 2 cores)
bench-zoo: bench-venv box2d-venv
	$(PY) benchmarks/learning/zoo.py $(ZOO_ARGS)

# MuJoCo's tasks at 1M env steps, a3c against SB3 A2C and PPO at the Zoo's settings, 5 seeds (many hours on 2 cores);
# MUJOCO_ARGS="--seeds 2 --first-seed 3" for more seeds of one sitting
MUJOCO_TASKS := HalfCheetah-v5 Hopper-v5 Ant-v5 InvertedPendulum-v5 InvertedDoublePendulum-v5 Reacher-v5 Swimmer-v5
bench-mujoco: bench-venv mujoco-venv
	$(PY) benchmarks/learning/zoo.py $(MUJOCO_TASKS:%=--env %) --out mujoco $(MUJOCO_ARGS)

# env steps a second of the MuJoCo preset beside each task alone on the same cores (minutes)
ENV_SPEED_ARGS ?= --env HalfCheetah-v5 --env Hopper-v5 --env Ant-v5
bench-env-speed: bench-venv mujoco-venv
	$(PY) benchmarks/speed/env_speed.py $(ENV_SPEED_ARGS)

# NoisyNet against no noise and entropy dithering where random play rarely finds the reward (hours on 2 cores);
# EXPLORE_ARGS="--env a3c/DeepSea20-v0 --seeds 3" for a part
bench-explore: bench-venv
	$(PY) benchmarks/learning/explore.py $(EXPLORE_ARGS)

# Ray node groups on hosts made of network namespaces (root), against the local backend; CLUSTER_ARGS="--learn",
# CLUSTER_ARGS="--auth --repeats 5": with Ray's token against without
bench-cluster: bench-venv ray-venv box2d-venv
	$(PY) benchmarks/scale/cluster_bench.py $(CLUSTER_ARGS)

# faults across namespace hosts (root): a link cut, a raylet killed, the head's host lost; 3 tries each
bench-cluster-faults: bench-venv ray-venv
	$(PY) benchmarks/faults/cluster_faults.py $(FAULTS_ARGS)

# stops as schedulers send them (a process group's SIGTERM, GNU timeout), 10 tries each; STOPS_ARGS picks a part
bench-stops: bench-venv minatar-venv
	$(PY) benchmarks/faults/stops.py $(STOPS_ARGS)

bench-ray: bench-venv ray-venv
	$(PY) benchmarks/speed/ray_bench.py

# MINATAR_ARGS="--game Breakout --seeds 1 --minutes 2": a part (the whole takes about 40 minutes on 2 cores)
bench-minatar: bench-venv minatar-venv
	$(PY) benchmarks/learning/minatar_bench.py $(MINATAR_ARGS)

# where a worker's second goes (speed/atari_phases.py), then the trainer's rate beside the env alone;
# ATARI_ARGS="--baseline /tmp/old": also run another checkout (git worktree add /tmp/old <commit>) side by side
bench-atari: bench-venv atari-venv
	$(PY) benchmarks/speed/atari_phases.py
	$(PY) benchmarks/speed/atari_bench.py $(ATARI_ARGS)

# 5 seeds of Breakout, 10 minutes each; ATARI_LEARN_ARGS="--game Pong --seeds 1 --minutes 60" for Pong
bench-atari-learn: bench-venv atari-venv
	$(PY) benchmarks/learning/atari_learn.py $(ATARI_LEARN_ARGS)

# Atari-5 (BattleZone, DoubleDunk, NameThisGame, Phoenix, Qbert): 2 seeds of an hour a game for a3c and SB3 PPO,
# 20 hours on 2 cores; ATARI_SUITE_ARGS="--game Qbert --seeds 1 --first-seed 2" adds a part in another sitting
bench-atari-suite: bench-venv atari-venv
	$(PY) benchmarks/learning/atari_suite.py $(ATARI_SUITE_ARGS)

# best.pt of each preset's runs replayed on 100 new episodes; HOLDOUT_ARGS="--env CartPole-v1 --seeds 3" for a part
bench-holdout: bench-venv box2d-venv
	$(PY) benchmarks/learning/holdout.py $(HOLDOUT_ARGS)

# a3c tune from the plain defaults for 30 minutes, then its best.toml against the preset on 5 new seeds;
# TUNE_ARGS="--env LunarLander-v3 --minutes 90 --max-steps 1000000"
bench-tune: bench-venv tune-venv box2d-venv
	$(PY) benchmarks/learning/tune_bench.py $(TUNE_ARGS)

# what --track mlflow and --track wandb add to CartPole runs, seeds 0-4; TRACK_ARGS="--seeds 3 --fixed-steps 0"
bench-track: bench-venv track-venv
	$(PY) benchmarks/speed/tracking.py $(TRACK_ARGS)

# the phase timings of CartPole's and Breakout's launches beside `import torch`; STARTUP_ARGS="--baseline /tmp/old"
bench-startup: bench-venv atari-venv
	$(PY) benchmarks/speed/startup.py $(STARTUP_ARGS)

# SOAK_ARGS="--minutes 5": a shorter soak (the default is 30 minutes)
bench-soak: bench-venv
	$(PY) benchmarks/speed/soak.py $(SOAK_ARGS)

clean:
	rm -rf $(VENV) runs site dist .pytest_cache build *.egg-info
