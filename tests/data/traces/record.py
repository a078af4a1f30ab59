#!/usr/bin/env python3
"""Records the traces in this folder again: `python3 tests/data/traces/record.py` (see README.md).

Runs tests/fidelity/worker.py on two processes (torchrun, gloo, one thread each) for every
schedule below, in the conformance suite's environment (${PIPEWEAVE_VENV:-~/.cache/pipeweave/torch-2.15.0},
with pipeweave installed: `python3 tests/python/run.py` installs it), and keeps the traces only.
"""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
WORKER = os.path.join(ROOT, "tests", "fidelity", "worker.py")

COMMON = ["--size", "fidelity", "--microbatches", "8", "--warmup", "2", "--gzip"]
# folder: worker arguments
RECORDS = {
    "1f1b": ["--schedule", "1f1b", "--steps", "3", "--no-operators"],
    # With the link probe (`profile(..., probe=True)`, the default since it was added) and the
    # receives' postings.
    "1f1b-probe": ["--schedule", "1f1b", "--steps", "2", "--no-operators"],
    "1f1b-operators": ["--schedule", "1f1b", "--steps", "1", "--microbatches", "4"],
    "gpipe": ["--schedule", "gpipe", "--steps", "2", "--no-operators"],
    "zb-h1": ["--schedule", "zb-h1", "--steps", "2", "--no-operators"],
    "interleaved-1f1b": ["--schedule", "interleaved-1f1b", "--stages-per-rank", "2", "--steps", "2", "--no-operators"],
    "dualpipev": ["--schedule", "dualpipev", "--steps", "2", "--no-operators"],
    "dualpipe": ["--schedule", "dualpipe", "--steps", "2", "--no-operators"],
    "chimera": ["--schedule", "chimera", "--steps", "2", "--no-operators"],
    # PyTorch's own _PipelineScheduleRuntime on the same plan: its `PP:<cell>` spans.
    "pytorch-1f1b": ["--schedule", "1f1b", "--runtime", "pytorch", "--steps", "2", "--no-operators"],
    "pytorch-dualpipev": ["--schedule", "dualpipev", "--runtime", "pytorch", "--steps", "2", "--no-operators"],
}
# The folders recorded since PlanRunner names each receive's posting (`pw post <cell>`); the others
# time only the waits for the data.
POSTED = {"1f1b-probe"}


def python():
    path = os.environ.get("PIPEWEAVE_VENV") or os.path.expanduser("~/.cache/pipeweave/torch-2.15.0")
    return os.path.join(path, "bin", "python")


def main():
    only = sys.argv[1:]
    for name, args in RECORDS.items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory(prefix="pipeweave-record-") as tmp:
            cmd = [python(), "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", WORKER,
                   *COMMON, *args, "--out", tmp]
            print(" ".join(cmd[1:]), flush=True)
            subprocess.run(cmd, check=True, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out = os.path.join(HERE, name)
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            for f in sorted(os.listdir(tmp)):
                if ".pt.trace.json" in f:
                    shutil.copy(os.path.join(tmp, f), os.path.join(out, f))


if __name__ == "__main__":
    main()
