"""Records the per-rank orders of Megatron-Core's interleaved pipeline schedule.

Run with the package the files were recorded from (megatron-core 0.16.1, see each file's header):
    python3 record.py [SITE_PACKAGES]
The orders come from Megatron-Core's own order functions, run unmodified:
`get_pp_rank_microbatches` and `get_schedule_table` (megatron/core/pipeline_parallel/schedules.py)
and `convert_schedule_table_to_order` (megatron/core/transformer/cuda_graphs.py). They are plain
Python; importing their modules needs torch with CUDA, so this script reads the installed source
files and executes exactly those function definitions (their text is not changed).

`forward_backward_pipelining_with_interleaving` runs, on every rank:
  warm-up:  forward of virtual micro-batch k for k < num_warmup_microbatches;
  steady:   forward_backward_helper_wrapper(f_virtual_microbatch_id=k + warmup,
            b_virtual_microbatch_id=k) for k < num_microbatches_remaining;
  cool-down: backward of virtual micro-batch k for the rest.
`convert_schedule_table_to_order` writes exactly that sequence as model-chunk numbers (forward c+1,
backward c-v for table chunk c). A backward runs chunk v-1-c (`get_model_chunk_id(.., forward=False)`)
and both directions take micro-batch `schedule_table[k][0]`.
With `overlap_moe_expert_parallel_comm`, the warm-up has one more forward (`get_pp_rank_microbatches`)
and each steady step is one `combined_1f1b_schedule_for_interleaved_pipelining` call: the forward
and the backward run as one overlapped pair, written `(F;B)OVERLAP_F_B`.

Configurations `forward_backward_pipelining_with_interleaving` rejects are skipped, with its checks:
P <= G <= M (microbatch_group_size_per_vp_stage), and M % G is 0 or at least P.
Output: actions format, global stage = chunk * P + rank (Megatron's interleaving), one block of
`# P=<ranks> M=<micro-batches> v=<chunks> G=<group>` then one line per rank.
"""

import ast
import datetime
import glob
import os
import sys
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = "0.16.1"


def site_packages():
    if len(sys.argv) > 1:
        return sys.argv[1]
    found = glob.glob("/work/venv-megatron/lib/python3*/site-packages")
    return found[0]


def load_functions(path, names):
    """The named top-level functions of a source file, executed from their unchanged text."""
    with open(path) as f:
        source = f.read()
    tree = ast.parse(source)
    namespace = {"Optional": Optional, "P2PCommunicator": object, "parallel_state": None}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            module = ast.Module(body=[node], type_ignores=[])
            exec(compile(module, path, "exec"), namespace)
    missing = [n for n in names if n not in namespace]
    assert not missing, f"{path} has no {missing}"
    return namespace


class Group:
    def __init__(self, size, rank):
        self._size, self._rank = size, rank

    def size(self):
        return self._size

    def rank(self):
        return self._rank


class Communicator:
    """What get_pp_rank_microbatches reads of a P2PCommunicator."""

    def __init__(self, size, rank, vp):
        self.pp_group = Group(size, rank)
        self.virtual_pipeline_model_parallel_size = vp


def accepted(p, m, g):
    # forward_backward_pipelining_with_interleaving's two checks.
    if g > m or g < p:
        return False
    final = m % g
    return not (0 < final < p)


def rank_order(fns, p, rank, m, v, g, overlap):
    _, _, warmup, _ = fns["get_pp_rank_microbatches"](
        m, v, g, forward_only=False, overlap_moe_expert_parallel_comm=overlap,
        p2p_communicator=Communicator(p, rank, v),
    )
    table = fns["get_schedule_table"](m, v, g)
    order = fns["convert_schedule_table_to_order"](warmup, v, table)
    forwards, backwards = iter(table), iter(table)
    cells = []
    for c in order:
        if c > 0:
            mb, chunk = next(forwards)
            assert chunk == c - 1
            cells.append(f"{chunk * p + rank}F{mb}")
        else:
            mb, chunk = next(backwards)
            assert c == chunk - v
            cells.append(f"{(v - 1 - chunk) * p + rank}B{mb}")
    if overlap:
        # Steady state: the order alternates forward, backward for len(order) - 2 * warmup cells.
        steady = len(order) - 2 * warmup
        head, mid, tail = cells[:warmup], cells[warmup:warmup + steady], cells[warmup + steady:]
        pairs = [f"({mid[i]};{mid[i + 1]})OVERLAP_F_B" for i in range(0, steady, 2)]
        cells = head + pairs + tail
    return ",".join(cells)


def main():
    sp = site_packages()
    core = os.path.join(sp, "megatron", "core")
    fns = load_functions(
        os.path.join(core, "pipeline_parallel", "schedules.py"),
        ["get_pp_rank_microbatches", "get_schedule_table"],
    )
    fns.update(load_functions(
        os.path.join(core, "transformer", "cuda_graphs.py"), ["convert_schedule_table_to_order"]
    ))
    today = datetime.date.today().isoformat()
    for overlap, name in [(False, "Interleaved"), (True, "InterleavedA2AOverlap")]:
        for v in (2, 3, 4) if not overlap else (1, 2, 3):
            lines = [
                f"# Megatron-Core {name} v={v}: megatron-core {VERSION} (PyPI), "
                "get_pp_rank_microbatches + get_schedule_table + convert_schedule_table_to_order, "
                f"overlap_moe_expert_parallel_comm={overlap}; recorded {today} by record.py",
            ]
            count = 0
            for p in range(2, 9):
                for m in range(p, 4 * p + 1):
                    for g in sorted({p, p + 1, 2 * p, m}):
                        if not accepted(p, m, g):
                            continue
                        lines.append(f"# P={p} M={m} v={v} G={g}")
                        lines.extend(rank_order(fns, p, r, m, v, g, overlap) for r in range(p))
                        count += 1
            path = os.path.join(HERE, f"{name}_v{v}.txt")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            print(f"{path}: {count} configurations")


if __name__ == "__main__":
    main()
