"""Command line: `a3c [OPTIONS]` (or `python main.py [OPTIONS]`) trains; `a3c evaluate` plays a checkpoint."""

from __future__ import annotations

import gc
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch loads: more threads per process deadlock or crawl

import sys
from contextlib import contextmanager

import click

from a3c.config.options import field_name, option_value
from a3c.config.settings import Config
from a3c.errors import USAGE_ERRORS, ConfigError, WriteError, check_output_file

DEFAULTS = Config()


def option(name: str, help: str, **kwargs):
    """A training option whose default is the Config default of the same name (a flag's auto: not given)."""
    field = field_name(name)
    default = getattr(DEFAULTS, field)
    default = option_value(default) if isinstance(default, tuple) else default
    if "/" in name and default == "auto":
        return click.option(name, field, default=None, show_default="auto", help=help, **kwargs)
    return click.option(name, field, default=default, show_default=True, help=help, **kwargs)


class TargetReturn(click.ParamType):
    name = "FLOAT|auto|none"

    def convert(self, value, param, ctx):
        if value is None or value in ("auto", "none"):
            return None if value == "none" else value
        try:
            return float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number, 'auto' or 'none'", param, ctx)


class AutoFloat(click.ParamType):
    name = "FLOAT|auto"

    def convert(self, value, param, ctx):
        if value == "auto":
            return value
        try:
            return float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number or 'auto'", param, ctx)


class Widths(click.ParamType):
    name = "N[,N...]"

    def convert(self, value, param, ctx):
        try:
            return tuple(int(width) for width in str(value).split(","))
        except ValueError:
            self.fail(f"{value!r} is not a comma-separated list of integers, like 64,64", param, ctx)


TRAIN_OPTIONS = [
    option("--env", "gymnasium id, also 'module:EnvId'"),
    option("--num-processes", "worker processes (default: CPU cores)", type=int),
    option("--envs-per-process", "environments each worker steps together", type=int),
    option(
        "--active-workers",
        "at most this many workers act and update at once, the others wait their turn (default 0: one per CPU core)",
        type=int,
    ),
    option("--t-max", "rollout length: steps per environment per update", type=int),
    option("--max-steps", "budget of env steps over all workers; the lr reaches 0 here", type=int),
    option(
        "--max-minutes",
        "wall-clock budget from the trainer's start (0: none): the run stops there, and the lr reaches 0 there "
        "if that comes before --max-steps",
        type=float,
    ),
    option("--seed", "every seed of the run derives from this one (docs/guides/reproducibility.md)", type=int),
    option(
        "--hidden-sizes",
        "widths of the encoder's layers, comma-separated; the LSTM is as wide as the last",
        type=Widths(),
    ),
    option("--core", "lstm, or none: a feed-forward network", type=click.Choice(["lstm", "none"])),
    option("--noise/--no-noise", "NoisyNet heads (off: plain linear layers)"),
    option("--sigma-init", "NoisyNet sigma_0", type=float),
    option("--log-std-init", "a Box action's Gaussian: the log std each action dimension starts from", type=float),
    option(
        "--policy-init-scale",
        "the stock policy head's initial weights times this, its biases zero (0.01: the same policy in every state)",
        type=float,
    ),
    option(
        "--std-limit",
        "a Box action's Gaussian: range, its std at most half the action's range (where bounded); none: unlimited",
        type=click.Choice(["range", "none"]),
    ),
    option(
        "--noise-draw",
        "NoisyNet's draw: one a rollout for all of a worker's envs, one a rollout for each env, or one for each "
        "env held until its episode ends",
        type=click.Choice(["worker", "env", "episode"]),
    ),
    option(
        "--noise-kl-target",
        "NoisyNet: the mean KL (nats) a draw should move the policy by; each worker scales its draws to hold it "
        "(0: the draws as sigma makes them)",
        type=float,
    ),
    option(
        "--novelty-coef",
        "weight of a bonus reward for reaching observations a random network's trained predictor gets wrong "
        "(random network distillation: any observation, pictures through convolutions; 0: none; auto: 0.1 on "
        "flat observations, 0.03 on pictures, 0 on Dict or Tuple ones)",
        type=AutoFloat(),
    ),
    option(
        "--novelty-value",
        "which value learns the bonus's return: shared (the bonus joins the reward), episodic (a value head of its "
        "own, its return ending with the episode) or non-episodic (running on across episodes); auto: "
        "non-episodic on pictures where the run has a bonus and learns two values, else shared",
        type=click.Choice(["auto", "shared", "episodic", "non-episodic"]),
    ),
    option(
        "--novelty-scale",
        "what the bonus is divided by, a running spread: step, its errors' root mean square (the weight: about a "
        "step's bonus on new ground); return, its discounted sum's standard deviation (the weight: about the spread "
        "of the bonus's return); auto: return on pictures, step elsewhere",
        type=click.Choice(["auto", "step", "return"]),
    ),
    option(
        "--model",
        "module:function returning your own torch network instead of the stock one (docs/guides/own-network.md)",
    ),
    option(
        "--learner",
        "numpy: the stock network's fast path; torch: autograd, any network; auto: numpy where it covers the network",
        type=click.Choice(["auto", "numpy", "torch"]),
    ),
    option("--gamma", "discount factor", type=float),
    option("--reward-scale", "multiply rewards by this in the loss (logs keep them unscaled)", type=float),
    option(
        "--normalize-obs/--no-normalize-obs",
        "normalise observations by a running mean and std (auto: on for flat observations, off for frames and "
        "Dict or Tuple ones)",
    ),
    option(
        "--normalize-returns/--no-normalize-returns",
        "divide rewards by the running std of the discounted return (before --reward-scale)",
    ),
    option(
        "--center-frames/--no-center-frames",
        "frames: each frame less its own mean pixel before the convnet (on for Atari)",
    ),
    option(
        "--convnet",
        "frames: the A3C paper's convolutions on 84 x 84 (a3c), or four 3 x 3 stride-2 convolutions of 32 on "
        "frames averaged to 42 x 42 (small: a quarter of the work)",
        type=click.Choice(["a3c", "small"]),
    ),
    option(
        "--frames",
        "Atari: how many of the four stacked frames the convnet reads, the newest (0: all; 1: the LSTM carries "
        "the motion)",
        type=int,
    ),
    option(
        "--center-values",
        "on: the value head learns the return less the running mean of the value "
        "targets; auto: on where the value head reads the LSTM's output (--critic shared)",
        type=click.Choice(["auto", "on", "off"]),
    ),
    option(
        "--critic",
        "the stock network's value head: own: an encoder of its own beside the LSTM's output, "
        "which its error does not train (Acrobot's preset); shared: what the policy head reads",
        type=click.Choice(["own", "shared"]),
    ),
    option(
        "--precision",
        "the frames encoder's convolutions: bfloat16 (autocast), float32, or auto: bfloat16 where the CPU has "
        "native bfloat16 instructions",
        type=click.Choice(["auto", "float32", "bfloat16"]),
    ),
    option("--clip-rewards/--no-clip-rewards", "the loss sees only each reward's sign (on for Atari)"),
    option("--gae-lambda", "GAE lambda; 1.0 = plain n-step returns", type=float),
    option("--value-loss-coef", "weight of the value loss", type=float),
    option("--entropy-coef", "weight of the entropy bonus", type=float),
    option("--max-grad-norm", "clip the gradient norm of each update", type=float),
    option("--replay-ratio", "replayed updates after each on-policy one, on average (0: pure A3C)", type=float),
    option("--replay-capacity", "rollouts each worker keeps for replay", type=int),
    option("--replay-priority", "prioritised replay's alpha (0: uniform)", type=float),
    option("--rho-bar", "V-trace: truncation of the importance weights", type=float),
    option("--c-bar", "V-trace: truncation of the traces", type=float),
    option("--optimizer", "shared optimizer", type=click.Choice(["adam", "rmsprop"])),
    option("--lr", "initial learning rate", type=float),
    option(
        "--lr-decay/--no-lr-decay",
        "decay the lr linearly to 0 at the budget's end: --max-steps, or --max-minutes if sooner",
    ),
    option("--eval-interval", "seconds between greedy evaluations", type=float),
    option("--eval-episodes", "greedy episodes per evaluation (0: no evaluator)", type=int),
    option(
        "--confirm-episodes",
        "new greedy episodes whose mean must reach the target with 90% confidence "
        "before an evaluation at the target counts as solved (0: the evaluation alone)",
        type=int,
    ),
    option(
        "--video-interval",
        "seconds between videos of the greedy policy in RUN_DIR/videos (0: none; "
        "pip install -r requirements-video.txt)",
        type=float,
    ),
    option(
        "--target-return",
        "stop when the eval mean reaches this (auto: the env's reward_threshold)",
        type=TargetReturn(),
    ),
    option("--log-interval", "env steps between rows of metrics.csv", type=int),
    option("--print-interval", "seconds between progress lines", type=float),
    option("--tensorboard/--no-tensorboard", "write TensorBoard event files to RUN_DIR/tb"),
    option(
        "--track",
        "log the config, every CSV row and the run's files to MLflow or Weights & Biases "
        "(pip install -r requirements-track.txt)",
        type=click.Choice(["none", "mlflow", "wandb"]),
    ),
    option("--checkpoint-interval", "seconds between writes of checkpoints/last.pt", type=float),
    option("--max-worker-restarts", "restarts of a dead worker before the run stops", type=int),
    option(
        "--worker-timeout",
        "seconds a worker or the evaluator may show no progress (a hung env) before it is "
        "killed and restarted (0: never)",
        type=float,
    ),
    option("--run-dir", "output folder (default: runs/<env>-<timestamp>)"),
    option(
        "--start-method",
        "multiprocessing start method (default: fork on Linux, else spawn)",
        type=click.Choice(["", "fork", "spawn", "forkserver"]),
    ),
    option(
        "--backend",
        "local: worker processes sharing memory; ray: a group of such workers per node of a "
        "Ray cluster, synced now and then (pip install -r requirements-ray.txt)",
        type=click.Choice(["local", "ray"]),
    ),
    option(
        "--ray-address",
        "with --backend ray: 'auto' or HOST:PORT of a running Ray cluster (default: start a local Ray instance)",
    ),
    option(
        "--ray-allow-unauthenticated",
        "with --ray-address: join a cluster that requires no token, though whoever reaches its ports can run "
        "code on its machines (docs/guides/clusters.md, Security)",
        is_flag=True,
    ),
    option("--nodes", "with --backend ray: node groups of --num-processes workers (0: one per node)", type=int),
    option(
        "--sync-interval", "with --backend ray: a group's updates between its exchanges with the global model", type=int
    ),
    option(
        "--global-shards", "with --backend ray: actors holding the global weights (0: one per 4M parameters)", type=int
    ),
    option(
        "--placement-timeout",
        "with --backend ray: seconds a node group may take to find free CPUs and start; past them a run with "
        "other groups training trains on and starts it where a node has room, one with none stops",
        type=float,
    ),
]


@contextmanager
def usage_errors():
    """Errors a user can fix become click usage errors: one line, exit code 2."""
    try:
        yield
    except USAGE_ERRORS as error:
        raise click.UsageError(str(error)) from None


@click.option(
    "--config",
    "config_file",
    metavar="FILE",
    default=None,
    type=click.Path(exists=True, dir_okay=False),
    help="training options from a TOML file (or a run's config.json, to repeat it): the env's preset, "
    "then the file, then the command line",
)
@click.option(
    "--resume",
    metavar="RUN_DIR|CHECKPOINT",
    default=None,
    help="continue a run from its last checkpoint; options given again override the saved ones",
)
@click.pass_context
def cli(ctx, config_file, resume, **settings):
    """Train an A3C agent (Hogwild workers, LSTM + NoisyNet, shared Adam) on a gymnasium env."""
    if ctx.invoked_subcommand is not None:
        gc.enable()
        return
    from a3c.run.phases import process_start_time
    from a3c.run.tracking import prestart

    given = {
        name: value
        for name, value in settings.items()
        if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE
    }
    try:
        with usage_errors():
            config = training_config(settings["env"], given, config_file, resume)
            # its library's import runs beside torch's, on the other core
            prestart(config.track if config else given.get("track", "none"))
            from a3c.run.trainer import EXIT_CODES, train

            gc.enable()  # off since main(); train() freezes what the imports made
            summary = train(config, resume=resume, overrides=given, launched_at=process_start_time()).summary
    except WriteError as error:  # before the run started (config.json, a resume's CSVs): a full disk
        click.echo(f"Error: {error}", err=True)
        exit_now(1)
    exit_now(EXIT_CODES.get(summary["stop_reason"], 0))


def training_config(env: str, given: dict, config_file, resume) -> Config | None:
    """The env's preset, then the --config file's options, then those given on the command line. None for
    --resume: the trainer checks the options given again against the saved settings, not the defaults (a
    --ray-address given again goes with the saved --backend ray)."""
    if resume is not None:
        if config_file is not None:
            raise ConfigError(
                "--config with --resume: a resumed run keeps its saved settings; give the changes on the command line"
            )
        return None
    if config_file is None:
        return Config.for_env(env, **{k: v for k, v in given.items() if k != "env"})
    return Config.from_file(config_file, **given)


def exit_now(code: int) -> None:
    """End a finished run without the interpreter's teardown of torch (about 0.4 s of a short run).

    train() has joined every process and closed every file it wrote; only the
    console streams may still hold output.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


for decorator in reversed(TRAIN_OPTIONS):
    cli = decorator(cli)
cli = click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})(cli)


@cli.command()
@click.option("--checkpoint", required=True, type=click.Path(dir_okay=False), help="a .pt file of a run")
@click.option("--episodes", default=10, show_default=True, type=click.IntRange(min=1))
@click.option("--env", "env_id", default=None, help="play on this env instead of the checkpoint's")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0))
@click.option(
    "--video",
    default=None,
    type=click.Path(dir_okay=False),
    help="film the episodes into this .mp4 or .gif (pip install -r requirements-video.txt)",
)
def evaluate(checkpoint, episodes, env_id, seed, video):
    """Play greedy episodes with a checkpoint's weights; print mean and std of the return."""
    import statistics

    from a3c.agent import load_agent
    from a3c.parallel.evaluation import evaluate_agent
    from a3c.tools.video import check_video_path, record_episodes, require_writer

    with usage_errors():
        if video is not None:
            require_writer("--video", check_video_path(video).suffix)
        agent = load_agent(checkpoint, env_id)
        if video is None:
            returns = evaluate_agent(agent, episodes, seed)
        else:
            returns, frames = record_episodes(agent, agent.config.env, episodes, seed, video)
    click.echo(
        f"{agent.config.env}: mean return {statistics.fmean(returns):.2f} +- {statistics.pstdev(returns):.2f} "
        f"over {episodes} episodes"
    )
    if video is not None:
        click.echo(f"wrote {video} ({frames} frames)")


@cli.command()
@click.option("--checkpoint", required=True, type=click.Path(dir_okay=False), help="a .pt file of a run")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="the .onnx file to write")
def export(checkpoint, out):
    """Write a checkpoint's network as an ONNX file, for ONNX Runtime (pip install -r requirements-export.txt):
    raw observations (and the LSTM's h, c) in; the env's action, the value, the distribution's
    parameters (and h_out, c_out) out."""
    from a3c.agent import model_from_checkpoint
    from a3c.learn.checkpoint import load_checkpoint
    from a3c.tools.export import export_onnx, require_onnx

    with usage_errors():
        require_onnx()
        check_output_file("--out", out, (".onnx",))
        model, config, spec = model_from_checkpoint(load_checkpoint(checkpoint))
        metadata = export_onnx(model, spec, config, out)
    click.echo(
        f"wrote {out}: {metadata['env']}, opset {metadata['opset']}; inputs {metadata['inputs']}; "
        f"outputs {metadata['outputs']}"
    )


@cli.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option(
    "--out",
    default="learning_curves.png",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="image to write (.png, .pdf, .svg)",
)
def plot(run_dirs, out):
    """Draw learning curves (return against env steps and wall time) of one or more runs."""
    from a3c.tools.plot import plot_runs

    with usage_errors():
        path = plot_runs(list(run_dirs), out)
    click.echo(f"wrote {path}")


@cli.command()
def presets():
    """Print the per-environment settings applied when training on these envs."""
    from a3c.config.presets import format_presets

    click.echo(format_presets())


@cli.command()
@click.option("--env", default=DEFAULTS.env, show_default=True, help="gymnasium id, also 'module:EnvId'")
@click.option(
    "--trials",
    default=20,
    show_default=True,
    type=click.IntRange(min=1),
    help="finished trials (complete or pruned) the study holds at the end, counting a resumed study's",
)
@click.option(
    "--seeds",
    default=2,
    show_default=True,
    type=click.IntRange(min=1),
    help="training runs a trial makes, seeds 0 to N-1, one after another",
)
@click.option(
    "--max-steps",
    default=None,
    type=click.IntRange(min=1),
    help="env steps of each run: the budget the learning area is measured over (default: the preset's)",
)
@click.option(
    "--space",
    "space_file",
    default=None,
    type=click.Path(exists=True, dir_okay=False),
    help="a TOML file of search-space entries on top of the default space (see the tuning guide)",
)
@click.option(
    "--preset/--no-preset",
    default=True,
    show_default=True,
    help="trials start from the env's preset; --no-preset: from the plain defaults",
)
@click.option(
    "--jobs",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="trials side by side, each in its own process with a share of the cores",
)
@click.option(
    "--num-processes",
    default=None,
    type=click.IntRange(min=1),
    help="worker processes of each run (default: CPU cores / jobs)",
)
@click.option(
    "--pruner",
    default="median",
    show_default=True,
    type=click.Choice(["median", "none"]),
    help="median: stop a trial whose partial learning area is below the median of earlier trials",
)
@click.option(
    "--prune-startup",
    default=3,
    show_default=True,
    type=click.IntRange(min=0),
    help="trials that finish before the pruner stops any",
)
@click.option(
    "--storage",
    default=None,
    help="Optuna storage URL, like sqlite:///study.db: resume a study, or "
    "join it from several machines (default: sqlite in --out)",
)
@click.option("--study-name", default=None, help="the study's name in its storage (default: a3c-<env>)")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0), help="the sampler's seed")
@click.option("--out", default=None, help="output folder (default: tunes/<env>-<timestamp>)")
def tune(**options):
    """Search hyperparameters with Optuna: each trial trains --seeds runs of sampled settings; writes
    trials.csv, best.toml (for --config) and plots into --out."""
    from a3c.tune.setup import study_settings

    with usage_errors():
        use_preset = options.pop("preset")
        study = study_settings(**options, use_preset=use_preset)
        from a3c.tune.runner import tune as run_study

        click.echo(
            f"tuning {study.env}: {study.trials} trials of {study.seeds} seeds x {study.max_steps:,} env steps, "
            f"{study.jobs} job(s) x {study.num_processes} processes; study {study.study_name!r} in {study.storage}"
        )
        written, interrupted = run_study(study)
    click.echo(f"wrote {written['trials']}" + "".join(f", {path}" for path in written["plots"]))
    if written["best"] is not None:
        best = written["best_trial"]
        click.echo(
            f"best: trial {best.number}, objective {best.value:.2f}; train with it: a3c --config {written['best']}"
        )
    exit_now(130 if interrupted else 0)


def main() -> None:
    """The console script's entry point (and main.py's)."""
    # until torch is imported: collecting among its new objects slows a launch
    # (docs/design/choices.md, "Start-up: where the first seconds go")
    gc.disable()
    cli()
