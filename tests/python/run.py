#!/usr/bin/env python3
"""The Python package's test driver (part of `cargo xtask test`): `python3 tests/python/run.py [PYTEST ARGS]`.

1. Makes sure the conformance suite's virtual environment exists
   (${PIPEWEAVE_VENV:-~/.cache/pipeweave/torch-2.15.0}, torch 2.15.0; see tests/conformance/run.py)
   and holds torchtitan 0.3.0 (installed with torch kept at 2.15.0) and pytest.
2. Builds the workspace (the `pipeweave` binary whose bytes the package must reproduce, and the
   fault plugins), then installs the package into that environment as a user does,
   `pip install ./python`, in Cargo's dev profile so that it reuses the workspace's build
   (MATURIN_PEP517_ARGS="--profile dev"; a user's install builds in release).
3. Runs pytest on tests/python in that environment; its exit code is pytest's.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TORCHTITAN = "torchtitan==0.3.0"

sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
from run import TORCH, venv_python  # noqa: E402 (the conformance suite's environment)


def ensure(python, check, packages):
    if subprocess.run([python, "-c", check], capture_output=True).returncode == 0:
        return
    print(f"installing {' '.join(packages)} into {os.path.dirname(os.path.dirname(python))}", flush=True)
    # torch stays the suite's pinned version whatever the packages ask for.
    cmd = [python, "-m", "pip", "install", "--quiet", *packages, TORCH]
    subprocess.run(cmd, check=True)


def main():
    python = venv_python()
    ensure(python, "import pytest", ["pytest"])
    ensure(python, "import importlib.metadata as m; assert m.version('torchtitan') == '0.3.0'", [TORCHTITAN])
    subprocess.run(["cargo", "build", "--quiet", "--workspace", "--locked"], cwd=ROOT, check=True)
    env = dict(os.environ, MATURIN_PEP517_ARGS="--profile dev")
    install = [python, "-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps", os.path.join(ROOT, "python")]
    subprocess.run(install, cwd=ROOT, env=env, check=True)
    env = dict(os.environ, PIPEWEAVE_BIN=os.path.join(ROOT, "target", "debug", "pipeweave"))
    env.pop("PYTHONPATH", None)
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", HERE, *sys.argv[1:]]
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
