"""The package as a user installs it: a wheel and an sdist that `python -m build` makes, whose dependencies
are what the package runs (the test tools only in its `test` extra), and whose wheel, installed into a
clean venv, trains from outside the checkout."""

from __future__ import annotations

import importlib.util
import re
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from .conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("build") is None, reason="building the package needs pip install -r requirements-test.txt"
)


def requirement_name(requirement: str) -> str:
    """ "torch==2.13.0", "tomli>=1.1; python_version < '3.11'", "pytest>=8; extra == 'test'" -> the package."""
    return re.split(r"[;=<>\[ ]", requirement.strip(), maxsplit=1)[0].lower()


def requirement_names(path: Path) -> set[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {requirement_name(line) for line in lines if line}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO_ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return out


def wheel_metadata(dist: Path) -> list[str]:
    (wheel,) = dist.glob("a3c-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return archive.read(name).decode().splitlines()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_package_depends_on_what_it_runs_and_puts_the_test_tools_in_an_extra(dist):
    assert len(list(dist.glob("a3c-*.tar.gz"))) == 1  # the sdist beside the wheel
    requires = [line.split(":", 1)[1].strip() for line in wheel_metadata(dist) if line.startswith("Requires-Dist:")]
    runtime = {requirement_name(r) for r in requires if "extra ==" not in r}
    assert runtime == requirement_names(REPO_ROOT / "requirements-runtime.txt")
    assert not runtime & {"pytest", "pytest-timeout", "hypothesis"}
    test_extra = {requirement_name(r) for r in requires if 'extra == "test"' in r}
    assert {"pytest", "pytest-timeout", "hypothesis"} <= test_extra


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_wheel_installed_in_a_clean_venv_trains_from_outside_the_checkout(dist, tmp_path):
    """The venv gets the wheel alone (--no-deps); its dependencies come from this interpreter's
    site-packages through a .pth file, so no multi-GB torch is downloaded."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    (wheel,) = dist.glob("a3c-*.whl")
    subprocess.run(
        [python, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)], check=True, timeout=120
    )
    away = tmp_path / "elsewhere"
    away.mkdir()
    where = subprocess.run(
        [python, "-c", "import a3c; print(a3c.__file__)"], cwd=away, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert where.startswith(purelib), where  # the installed wheel's package, not the checkout's
    a3c_command = env_dir / "bin" / "a3c"
    helped = subprocess.run([a3c_command, "--help"], cwd=away, capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "--num-processes" in helped.stdout
    trained = subprocess.run(
        [a3c_command, "--env", "CartPole-v1", "--num-processes", "2", "--max-steps", "3000", "--run-dir", "run"],
        cwd=away,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert trained.returncode == 0, trained.stderr
    assert (away / "run" / "summary.json").exists() and (away / "run" / "checkpoints" / "last.pt").exists()
