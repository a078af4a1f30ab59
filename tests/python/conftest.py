"""Shared fixtures of the Python package's tests: the repository, the `pipeweave` binary whose bytes
the package must reproduce, and the bad inputs."""

import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
# The workspace's debug build, where Cargo puts it ($CARGO_TARGET_DIR, else target/).
DEBUG = os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR") or "target", "debug")


def binary():
    """The command line the package is compared with: $PIPEWEAVE_BIN, else the workspace's debug build."""
    path = os.environ.get("PIPEWEAVE_BIN") or os.path.join(DEBUG, "pipeweave")
    if not os.path.isfile(path):
        pytest.fail(f"no pipeweave binary at {path}: run `cargo build --workspace` (or set PIPEWEAVE_BIN)")
    return path


class Cli:
    """Runs `pipeweave ARGS` in `cwd`."""

    def __init__(self, path):
        self.path = path

    def run(self, *args, cwd=None):
        return subprocess.run([self.path, *map(str, args)], capture_output=True, text=True, cwd=cwd)

    def out(self, *args, cwd=None):
        done = self.run(*args, cwd=cwd)
        assert done.returncode == 0, f"pipeweave {' '.join(map(str, args))}: {done.stderr}"
        return done.stdout

    def json(self, *args, cwd=None):
        return json.loads(self.out(*args, cwd=cwd))

    def error(self, *args, cwd=None):
        """The failure's text on standard error (as an exception carries it) and the exit code."""
        done = self.run(*args, cwd=cwd)
        assert done.returncode != 0, f"pipeweave {' '.join(map(str, args))} succeeded"
        return done.stderr.rstrip("\n"), done.returncode


@pytest.fixture(scope="session")
def cli():
    return Cli(binary())


@pytest.fixture
def data():
    return DATA
