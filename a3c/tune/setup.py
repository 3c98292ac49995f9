"""`a3c tune`'s settings, from the command line's values to a checked Study, before any trial runs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

from a3c.config.presets import preset_for
from a3c.config.settings import Config
from a3c.errors import ConfigError
from a3c.tune.space import load_space


def require_optuna() -> None:
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise ConfigError("a3c tune needs Optuna: pip install -r requirements-tune.txt") from None


def study_settings(
    env: str,
    trials: int,
    seeds: int,
    max_steps: Optional[int],
    space_file: Optional[str],
    use_preset: bool,
    jobs: int,
    num_processes: Optional[int],
    pruner: str,
    prune_startup: int,
    storage: Optional[str],
    study_name: Optional[str],
    seed: int,
    out: Optional[str],
):
    from a3c.envs.make import env_spec
    from a3c.tune.study import Study, cores_per_job, make_study

    require_optuna()
    env_spec(env)  # an env that cannot be made is refused now, not in every trial
    load_space(space_file)
    base = preset_for(env) if use_preset else {}
    out = out or str(Path("tunes") / f"{env.replace('/', '-').replace(':', '-')}-{time.strftime('%Y%m%d-%H%M%S')}")
    study = Study(
        env=env,
        trials=trials,
        seeds=seeds,
        max_steps=max_steps or base.get("max_steps", Config.max_steps),
        out=out,
        storage=storage or f"sqlite:///{Path(out).resolve() / 'study.db'}",
        study_name=study_name or f"a3c-{env}",
        space_file=space_file,
        use_preset=use_preset,
        jobs=jobs,
        num_processes=num_processes or cores_per_job(jobs),
        pruner=pruner,
        prune_startup=prune_startup,
        seed=seed,
    )
    if Path(out).exists() and not Path(out).is_dir():
        raise ConfigError(f"--out {out} is a file")
    Path(out).mkdir(parents=True, exist_ok=True)
    try:
        make_study(study, seed)
    except Exception as error:  # Optuna's and SQLAlchemy's many errors of a bad URL or an unreachable database
        raise ConfigError(f"--storage {study.storage}: {str(error).splitlines()[0]}") from None
    return study
