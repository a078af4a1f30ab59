"""The `pipeweave` command the wheel installs: the command line's own binary, which the package's
build puts beside the native module and the plugins (where it looks for them), run with the
arguments as given. The same program as a `cargo build` of the workspace, so every command and its
bytes are the same."""

import os
import subprocess
import sys


def binary() -> str:
    """The path of the shipped binary."""
    name = "pipeweave.exe" if sys.platform == "win32" else "pipeweave"
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), name)


def main() -> None:
    """Runs the command line with this process's arguments and exits with its exit code."""
    path = binary()
    if not os.path.isfile(path):
        sys.stderr.write(
            f"pipeweave: the command's binary is missing from the package ({path}); "
            "install the package with `pip install ./python` from the repository\n"
        )
        sys.exit(2)
    args = ["pipeweave", *sys.argv[1:]]
    if os.name == "posix":
        # This process becomes the command: its signals, exit code and standard streams.
        os.execv(path, args)
    sys.exit(subprocess.call([path, *args[1:]]))
