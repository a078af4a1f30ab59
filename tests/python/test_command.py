"""The wheel installs the `pipeweave` command: the command line's own binary, beside the package's
plugins, so its output is the workspace build's byte for byte and it finds the plugins."""

import os
import shutil
import subprocess
import sys

import pipeweave._command


def installed():
    """The `pipeweave` console script of the environment the tests run in."""
    script = os.path.join(os.path.dirname(sys.executable), "pipeweave")
    assert os.path.isfile(script), f"{script}: pip install ./python installs the command"
    return script


def test_the_command_is_the_command_lines_binary(cli):
    script = installed()
    assert os.path.isfile(pipeweave._command.binary())
    for args in (
        ["--version"],
        ["compare", "dualpipe", "chimera", "zb-v", "-p", "4", "-m", "8", "--format", "json"],
        ["list", "--format", "json"],
    ):
        done = subprocess.run([script, *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        want = cli.out(*args)
        if args[0] == "list":
            # The plugins' files are the package's, not the workspace's.
            assert '"source": "plugin"' in done.stdout and "site-packages" in done.stdout
        else:
            assert done.stdout == want


def test_the_commands_exit_codes_pass_through():
    done = subprocess.run([installed(), "validate", "1f1b"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "give --ranks/-p and --microbatches/-m" in done.stderr
    assert shutil.which("pipeweave", path=os.path.dirname(sys.executable))
