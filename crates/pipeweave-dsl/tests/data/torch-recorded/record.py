"""Records the per-rank action orders of PyTorch's pipelining schedule classes.

Run with the torch the files were recorded from (see TORCH_VERSION in each file's header):
    python3 record.py
The orders come from each class's own `_calculate_single_rank_operations` (and, for
ScheduleInterleavedZeroBubble, its `_add_bubbles_to_actions`), called on an instance whose
attributes are set exactly as its `__init__` sets them, so no process group is needed.
Configurations the class's `__init__` rejects are skipped, with the same checks.
Idle cells (None) are dropped. Output: one file per class and v, blocks of
`# P=<ranks> M=<micro-batches>` followed by one line per rank (the actions format).
"""

import os

import torch
from torch.distributed.pipelining import schedules as S

HERE = os.path.dirname(os.path.abspath(__file__))
P_RANGE = range(2, 9)


def make(cls, p, m, v):
    """An instance with the attributes __init__ would set, or None when __init__ would raise."""
    self = object.__new__(cls)
    self.pp_group_size = p
    self._n_microbatches = m
    self.n_local_stages = v
    self._num_stages = p * v
    self.num_stages = p * v
    # Only the count of local stages is read from the stage objects.
    self._stages = [None] * v
    if cls in (S.ScheduleInterleaved1F1B, S.ScheduleInterleavedZeroBubble):
        self.number_of_rounds = max(1, m // p)
        self.microbatches_per_round = m // self.number_of_rounds
        if m % self.number_of_rounds != 0:
            return None
    if cls in (S.ScheduleZBVZeroBubble, S.ScheduleDualPipeV) and v != 2:
        return None
    if cls is S.ScheduleDualPipeV and m < p * v:
        return None
    return self


def order(cls, p, m, v):
    self = make(cls, p, m, v)
    if self is None:
        return None
    self.pipeline_order = {r: self._calculate_single_rank_operations(r) for r in range(p)}
    if cls is S.ScheduleInterleavedZeroBubble:
        self.pipeline_order = self._add_bubbles_to_actions(p * v)
    return [[str(a) for a in self.pipeline_order[r] if a is not None] for r in range(p)]


def main():
    jobs = [
        ("Interleaved1F1B", S.ScheduleInterleaved1F1B, (2, 3, 4)),
        ("LoopedBFS", S.ScheduleLoopedBFS, (2, 3)),
        ("InterleavedZeroBubble", S.ScheduleInterleavedZeroBubble, (1, 2, 3)),
        ("ZBVZeroBubble", S.ScheduleZBVZeroBubble, (2,)),
        ("DualPipeV", S.ScheduleDualPipeV, (2,)),
    ]
    for name, cls, vs in jobs:
        for v in vs:
            lines = [
                f"# {name} v={v}: torch {torch.__version__}, {cls.__name__}, idle cells dropped",
            ]
            for p in P_RANGE:
                for m in range(1, 4 * p + 1):
                    rows = order(cls, p, m, v)
                    if rows is None:
                        continue
                    lines.append(f"# P={p} M={m}")
                    lines.extend(",".join(row) for row in rows)
            with open(os.path.join(HERE, f"{name}_v{v}.txt"), "w") as f:
                f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
