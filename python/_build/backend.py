"""The package's build backend: maturin, after the schedule plugins and the command are built beside it.

DualPipe, DualPipeV and Chimera are plugins (`plugins/` in the workspace): `cdylib`s that the
command line finds next to its executable and runs in worker processes.
The Python package ships the same libraries beside its native module, where it looks for them
the same way, so `pipeweave.compile("dualpipe", ...)` works in any environment the wheel is
installed in.
The wheel also installs the `pipeweave` command: the command line's own binary, built here and
shipped beside the plugins (where it looks for them), run by the console script
`pipeweave._command:main`.
maturin builds one crate; this backend builds the plugins and the command first (same Cargo
profile, same target folder), copies them into `pipeweave/`, and hands every hook to maturin.
"""

import json
import os
import shutil
import subprocess
import sys

import maturin
from maturin import *  # noqa: F403 (every PEP 517 hook maturin has)

PLUGINS = ("dualpipe", "dualpipev", "chimera")
PYTHON = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(PYTHON)


def _profile(config_settings):
    """The Cargo profile maturin builds with: `--profile NAME` in its arguments, else release."""
    args = maturin.get_maturin_pep517_args(config_settings)
    for i, arg in enumerate(args):
        if arg == "--profile" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--profile="):
            return arg.split("=", 1)[1]
    return "release"


def _library(name):
    if sys.platform == "win32":
        return f"pipeweave_plugin_{name}.dll"
    suffix = ".dylib" if sys.platform == "darwin" else ".so"
    return f"libpipeweave_plugin_{name}{suffix}"


def _command():
    return "pipeweave.exe" if sys.platform == "win32" else "pipeweave"


def _plugins(config_settings):
    profile = _profile(config_settings)
    packages = [arg for name in PLUGINS for arg in ("-p", f"pipeweave-plugin-{name}")]
    packages += ["-p", "pipeweave-cli"]
    # Cargo's progress goes to standard error; pip shows it with -v.
    subprocess.run(["cargo", "build", "--locked", "--profile", profile, *packages], cwd=ROOT, check=True)
    metadata = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--locked"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    target = json.loads(metadata.stdout)["target_directory"]
    built = os.path.join(target, "debug" if profile == "dev" else profile)
    for name in PLUGINS:
        library = _library(name)
        shutil.copy2(os.path.join(built, library), os.path.join(PYTHON, "pipeweave", library))
    shutil.copy2(os.path.join(built, _command()), os.path.join(PYTHON, "pipeweave", _command()))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _plugins(config_settings)
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _plugins(config_settings)
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)
