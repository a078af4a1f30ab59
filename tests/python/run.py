#!/usr/bin/env python3
"""The Python package's test driver (part of `cargo xtask test`): `python3 tests/python/run.py [PYTEST ARGS]`.

1. Makes sure the conformance suite's virtual environment exists
   (${PIPEWEAVE_VENV:-~/.cache/pipeweave/torch-2.15.0}, torch 2.15.0; see tests/conformance/run.py)
   and holds torchtitan 0.3.0 (installed with torch kept at 2.15.0), pytest and mypy (pinned).
2. Builds the workspace (the `pipeweave` binary whose bytes the package must reproduce, and the
   fault plugins), then installs the package into that environment as a user does,
   `pip install ./python`, in Cargo's dev profile so that it reuses the workspace's build
   (MATURIN_PEP517_ARGS="--profile dev"; a user's install builds in release).
3. Checks the package's types: `mypy --strict` on python/pipeweave (its stubs included) and on
   tests/python/typed_usage.py (what a user's typed code may write, and what it may not), then
   `python -m mypy.stubtest pipeweave`: the stubs (`_native.pyi`, `__init__.pyi`) against the
   installed package and its extension, allowing only what tests/python/stubtest-allowlist.txt
   lists with its reason (stubtest-mypy.ini spares it an analysis of torch's sources).
4. Runs pytest on tests/python in that environment.
The exit code is non-zero when any of 3 or 4 failed.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TORCHTITAN = "torchtitan==0.3.0"
MYPY_VERSION = "2.4.1"

sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
from run import TORCH, venv_python  # noqa: E402 (the conformance suite's environment)


def ensure(python, check, packages):
    if subprocess.run([python, "-c", check], capture_output=True).returncode == 0:
        return
    print(f"installing {' '.join(packages)} into {os.path.dirname(os.path.dirname(python))}", flush=True)
    # torch stays the suite's pinned version whatever the packages ask for.
    cmd = [python, "-m", "pip", "install", "--quiet", *packages, TORCH]
    subprocess.run(cmd, check=True)


def target_dir():
    """Cargo's target folder, where the build's binaries are and mypy keeps its cache."""
    return os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR") or "target")


def type_checks(python, env):
    """mypy --strict on the package and the typed usage, then stubtest; True when both pass."""
    cache = os.path.join(target_dir(), "mypy-cache")
    sources = [os.path.join(ROOT, "python", "pipeweave"), os.path.join(HERE, "typed_usage.py")]
    mypy = [python, "-m", "mypy", "--strict", "--cache-dir", cache, *sources]
    print("mypy --strict python/pipeweave tests/python/typed_usage.py", flush=True)
    checked = subprocess.run(mypy, cwd=ROOT, env=env).returncode == 0
    allowlist = os.path.join(HERE, "stubtest-allowlist.txt")
    config = os.path.join(HERE, "stubtest-mypy.ini")
    stubtest = [python, "-m", "mypy.stubtest", "--mypy-config-file", config, "--allowlist", allowlist, "pipeweave"]
    print("stubtest pipeweave (pipeweave._native included)", flush=True)
    # From a folder without a `pipeweave` in it, so that stubtest reads the installed package.
    stubbed = subprocess.run(stubtest, cwd=HERE, env=env).returncode == 0
    return checked and stubbed


def main():
    python = venv_python()
    ensure(python, "import pytest", ["pytest"])
    ensure(python, "import importlib.metadata as m; assert m.version('torchtitan') == '0.3.0'", [TORCHTITAN])
    check = f"import importlib.metadata as m; assert m.version('mypy') == '{MYPY_VERSION}'"
    ensure(python, check, [f"mypy=={MYPY_VERSION}"])
    subprocess.run(["cargo", "build", "--quiet", "--workspace", "--locked"], cwd=ROOT, check=True)
    env = dict(os.environ, MATURIN_PEP517_ARGS="--profile dev")
    install = [python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps", os.path.join(ROOT, "python")]
    subprocess.run(install, cwd=ROOT, env=env, check=True)
    env = dict(os.environ, PIPEWEAVE_BIN=os.path.join(target_dir(), "debug", "pipeweave"))
    env.pop("PYTHONPATH", None)
    typed = type_checks(python, env)
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", HERE, *sys.argv[1:]]
    tested = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    if not typed:
        print("error: the type checks failed (mypy or stubtest, above)", file=sys.stderr)
    return tested or (0 if typed else 1)


if __name__ == "__main__":
    sys.exit(main())
