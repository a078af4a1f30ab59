"""Records PyTorch 2.15's own lowering of a compute-only schedule CSV.

Usage: python record.py ACTIONS_FILE [--fsdp] [--defer-recv] > OUT.comms   (needs torch 2.15.0)

Runs the passes `_PipelineScheduleRuntime._load_actions(format="compute_only")` runs:
`_add_reduce_grad` (wait right after each reduction), `_add_send_recv`, `_add_wait_send`, and prints
one line per rank, comma-separated, in PyTorch's action spelling. pipeweave's lowering must give the
same lines (tests/it/reference.rs).

--fsdp first runs `_add_unshard_reshard` with the runtime's default `max_active_stages=3`, as the
runtime does for every compute-only schedule (`NAME.fsdp.comms`); --defer-recv then runs
`_defer_recv_ops`, as `defer_pp_recv=True` does (`NAME.defer-recv.comms`). pipeweave reads both back
as the plan (tests/it/torch_lowered.rs) and checks their communication against its own lowering.
"""
import sys
from torch.distributed.pipelining.schedules import _Action, _add_reduce_grad, _add_send_recv, _add_wait_send, _add_unshard_reshard, _defer_recv_ops
flags=[a for a in sys.argv[1:] if a.startswith('--')]
path=[a for a in sys.argv[1:] if not a.startswith('--')][0]
lines=[l.rstrip('\n') for l in open(path)]
while lines and not lines[-1].strip(): lines.pop()
actions={r:[_Action.from_str(c) for c in l.split(',') if c.strip()] for r,l in enumerate(lines)}
stage_to_rank={}
for r,acts in actions.items():
    for a in acts:
        for p in (a.sub_actions or (a,)): stage_to_rank[p.stage_index]=r
num_stages=max(stage_to_rank)+1
n_mb=len({p.microbatch_index for acts in actions.values() for a in acts for p in (a.sub_actions or (a,))})
out={}
for r in actions:
    acts=_add_unshard_reshard(actions[r], max_active_stages=3) if '--fsdp' in flags else actions[r]
    out[r]=_add_reduce_grad(acts, n_mb)
out=_add_send_recv(out, stage_to_rank=lambda s: stage_to_rank[s], num_stages=num_stages)
out=_add_wait_send(out)
if '--defer-recv' in flags:
    out=_defer_recv_ops(out, stage_to_rank=lambda s: stage_to_rank[s])
for r in sorted(out):
    print(",".join(str(a) for a in out[r] if a is not None))
