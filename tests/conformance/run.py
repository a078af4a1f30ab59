#!/usr/bin/env python3
"""Conformance suite driver: exported pipeweave plans must train exactly like the unpipelined model.

1. Makes sure a virtual environment with the pinned torch exists at
   ${PIPEWEAVE_VENV:-~/.cache/pipeweave/torch-2.15.0} (creates it with pip when missing;
   PIPEWEAVE_TORCH_INDEX_URL picks another package index, e.g. PyTorch's CPU wheels).
2. Exports the suite's plans with pipeweave (`cargo run -p pipeweave-export --example
   conformance_plans`), unless PIPEWEAVE_CONFORMANCE_PLANS names a folder that already holds them.
3. Writes the evaluation form of every exported JSON plan with the command line
   (`pipeweave export PLAN --forward-only --to json`), as a user gets an evaluation plan.
4. Runs `python -m pipeweave_conformance PLANS EVAL_PLANS` in that environment, with pipeweave's
   Python package (python/) on the path; its last line is `N passed, N failed` and its exit code is
   non-zero on any failure.
"""

import json

import os
import subprocess
import sys
import tempfile
import venv

TORCH = "torch==2.15.0"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def venv_python():
    path = os.environ.get("PIPEWEAVE_VENV") or os.path.expanduser("~/.cache/pipeweave/torch-2.15.0")
    python = os.path.join(path, "bin", "python")
    check = "import torch, numpy, sys; sys.exit(0 if torch.__version__.split('+')[0] == '2.15.0' else 1)"
    if os.path.exists(python) and subprocess.run([python, "-c", check]).returncode == 0:
        return python
    print(f"installing {TORCH} into {path}", flush=True)
    if not os.path.exists(python):
        venv.EnvBuilder(with_pip=True).create(path)
    cmd = [python, "-m", "pip", "install", "--quiet", TORCH, "numpy"]
    index = os.environ.get("PIPEWEAVE_TORCH_INDEX_URL")
    if index:
        cmd[4:4] = ["--index-url", index]
    subprocess.run(cmd, check=True)
    if subprocess.run([python, "-c", check]).returncode != 0:
        sys.exit(f"error: {python} does not import {TORCH}")
    return python


def export_plans(out_dir):
    cmd = ["cargo", "run", "--quiet", "--locked", "-p", "pipeweave-export", "--example", "conformance_plans", "--", out_dir]
    subprocess.run(cmd, check=True, cwd=ROOT)


def export_evaluation_plans(plans_dir, out_dir):
    """`pipeweave export PLAN --forward-only --to json` of every JSON plan, under the same file name."""
    subprocess.run(["cargo", "build", "--quiet", "--locked", "-p", "pipeweave-cli"], check=True, cwd=ROOT)
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    binary = os.path.join(ROOT, target, "debug", "pipeweave")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(plans_dir, "manifest.json")) as f:
        manifest = json.load(f)
    for entry in manifest:
        if entry["format"] == "json" and not entry.get("refused"):
            path = os.path.join(plans_dir, entry["file"])
            out = os.path.join(out_dir, entry["file"])
            cmd = [binary, "export", path, "--forward-only", "--to", "json", "-o", out]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


# A plan whose split the search chose (uneven: 16, 17, 17, 14 layers of GPT-2's 64 on 4 ranks),
# for the case that cuts a whole model with pipeweave.torch.split (the file name is the suite's).
SPLIT_PLAN = ["export", "1f1b", "-p", "4", "-m", "8", "--spec", "gpt2-1.3b-p100-32", "--split", "auto", "--to", "json"]


def export_split_plan(out_dir):
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    binary = os.path.join(ROOT, target, "debug", "pipeweave")
    out = os.path.join(out_dir, "split-searched.json")
    subprocess.run([binary, *SPLIT_PLAN, "-o", out], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    python = venv_python()
    with tempfile.TemporaryDirectory(prefix="pipeweave-conformance-") as tmp:
        plans = os.environ.get("PIPEWEAVE_CONFORMANCE_PLANS")
        if not plans:
            plans = os.path.join(tmp, "plans")
            export_plans(plans)
        evaluation = os.path.join(tmp, "evaluation")
        export_evaluation_plans(plans, evaluation)
        export_split_plan(evaluation)
        # The suite imports pipeweave's Python package from the source tree (python/).
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.path.join(ROOT, "python")]))
        return subprocess.run([python, "-m", "pipeweave_conformance", plans, evaluation], env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
