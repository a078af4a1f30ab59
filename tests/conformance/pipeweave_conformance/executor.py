"""A small launcher for pipeweave's JSON plan: runs one rank's `steps` exactly as written.

It is deliberately literal, so that a launcher author can read what the JSON asks for:
- `recv` posts a receive from `peer` and `compute` waits for it before using the data;
- `send` posts a send of the stage's output (activation for `fwd`, input gradient for `bwd`);
- `wait_send` waits for that send;
- `reduce_grad` starts the exchange of the stage's gradients with the other replicas of its model
  part (the `parts` section), `wait_reduce_grad` waits for it; the sums are taken when the
  program ends.
Pipeline messages between two ranks travel untagged, matched in posting order as with NCCL or
PyTorch's own runtime, so a plan that orders its receives wrongly gets the wrong data.
Between two stages on the same rank (the turn of a V) data is handed over locally.
"""

import torch
import torch.distributed as dist

from . import model

REDUCE_TAG = 1 << 20


def channel(stage, direction):
    # One ordered channel per pair of ranks, whatever the stage and direction.
    return 0


def run(rank, plan):
    s_per = plan["stages_per_pipeline"]
    pipelines = plan["pipelines"]
    m_total = sum(len(p["microbatches"]) for p in pipelines)
    m_bound = max(max(p["microbatches"], default=-1) for p in pipelines) + 1
    x, y = model.batch(m_bound)
    stage_rank = {}
    for j, p in enumerate(pipelines):
        for q, r in enumerate(p["placement"]):
            stage_rank[j * s_per + q] = r
    parts = model.build_parts(s_per)
    # Every stage this rank hosts gets its own replica of its model part.
    modules = {}
    for s, r in stage_rank.items():
        if r == rank:
            modules[s] = model.build_parts(s_per)[s % s_per]
    del parts

    program = plan["programs"][rank]
    actions = program["actions"]
    pending_recv = {}  # (dir, stage, mb) -> (work, tensor)
    pending_send = {}  # (dir, stage, mb) -> work
    saved = {}  # (stage, mb) -> (input, output or loss)
    grad_out_for_w = {}  # (stage, mb) -> gradient of the output, kept for W
    input_grad = {}  # (stage, mb) -> gradient of the input, to send or hand over
    local_fwd = {}  # (stage, mb) -> activation handed over on this rank
    local_bwd = {}  # (stage, mb) -> gradient handed over on this rank
    losses = {}
    reductions = []  # (stage, [(work, buffer, other stage)])
    waited = set()  # stages whose reduction was waited for

    def take_recv(direction, stage, mb):
        key = (direction, stage, mb)
        if key not in pending_recv:
            raise RuntimeError(f"rank {rank}: {stage}{direction} of micro-batch {mb} used before it was received")
        work, tensor = pending_recv.pop(key)
        work.wait()
        return tensor

    def forward(stage, mb):
        q = stage % s_per
        if q == 0:
            inp = model.chunk(x, mb).clone()
        elif stage_rank[stage - 1] == rank:
            inp = local_fwd.pop((stage, mb))
        else:
            inp = take_recv("fwd", stage, mb)
        inp = inp.detach().requires_grad_(q != 0)
        out = modules[stage](inp)
        if q == s_per - 1:
            loss = model.loss_fn(out, model.chunk(y, mb))
            losses[mb] = loss.item()
            saved[(stage, mb)] = (inp, loss)
        else:
            saved[(stage, mb)] = (inp, out)
            if stage_rank[stage + 1] == rank:
                local_fwd[(stage + 1, mb)] = out.detach()

    def output_grad(stage, mb):
        q = stage % s_per
        if q == s_per - 1:
            return None
        if stage_rank[stage + 1] == rank:
            return local_bwd.pop((stage, mb))
        return take_recv("bwd", stage, mb)

    def hand_input_grad(stage, mb, grad):
        input_grad[(stage, mb)] = grad
        if stage % s_per > 0 and stage_rank[stage - 1] == rank:
            local_bwd[(stage - 1, mb)] = grad

    def backward(stage, mb, kind):
        inp, out = saved[(stage, mb)]
        g = output_grad(stage, mb)
        params = list(modules[stage].parameters())
        if kind == "B":
            targets = params + ([inp] if inp.requires_grad else [])
            torch.autograd.backward(out, g, inputs=targets)
            del saved[(stage, mb)]
            if inp.requires_grad:
                hand_input_grad(stage, mb, inp.grad.detach().clone())
        else:  # I: the input gradient now, the weight gradient at its W
            if inp.requires_grad:
                (gi,) = torch.autograd.grad(out, [inp], g, retain_graph=True)
                hand_input_grad(stage, mb, gi.detach())
            grad_out_for_w[(stage, mb)] = g

    def weight(stage, mb):
        inp, out = saved.pop((stage, mb))
        g = grad_out_for_w.pop((stage, mb))
        torch.autograd.backward(out, g, inputs=list(modules[stage].parameters()))

    def run_op(op):
        kind, stage, mb = op["kind"], op["stage"], op["mb"]
        if kind == "F":
            forward(stage, mb)
        elif kind in ("B", "I"):
            backward(stage, mb, kind)
        elif kind == "W":
            weight(stage, mb)
        else:
            raise RuntimeError(f"unknown action kind {kind}")

    for step in program["steps"]:
        kind = step["kind"]
        if kind == "compute":
            action = actions[step["action"]]
            if action["kind"] == "pair":
                run_op(action["f"])
                run_op(action["b"])
            else:
                run_op(action)
        elif kind == "recv":
            d, stage, mb, peer = step["dir"], step["stage"], step["mb"], step["peer"]
            sender = stage - 1 if d == "fwd" else stage + 1
            buf = torch.empty(model.ROWS_PER_MICROBATCH, model.WIDTH)
            work = dist.irecv(buf, src=peer, tag=channel(sender, d))
            pending_recv[(d, stage, mb)] = (work, buf)
        elif kind == "send":
            d, stage, mb, peer = step["dir"], step["stage"], step["mb"], step["peer"]
            if d == "fwd":
                data = saved[(stage, mb)][1].detach().clone()
            else:
                data = input_grad.pop((stage, mb)).clone()
            pending_send[(d, stage, mb)] = dist.isend(data, dst=peer, tag=channel(stage, d))
        elif kind == "wait_send":
            pending_send.pop((step["dir"], step["stage"], step["mb"])).wait()
        elif kind == "reduce_grad":
            stage = step["stage"]
            q = stage % s_per
            flat = torch.cat([p.grad.reshape(-1) for p in modules[stage].parameters()])
            exchanges = []
            for j in range(len(pipelines)):
                other = j * s_per + q
                if other == stage:
                    continue
                peer = stage_rank[other]
                if peer == rank:
                    exchanges.append((None, None, other))
                    continue
                send = dist.isend(flat.clone(), dst=peer, tag=REDUCE_TAG + stage)
                buf = torch.empty_like(flat)
                recv = dist.irecv(buf, src=peer, tag=REDUCE_TAG + other)
                exchanges.append(((send, recv), buf, other))
            reductions.append((stage, flat, exchanges))
        elif kind == "wait_reduce_grad":
            stage = step["stage"]
            if stage in waited or stage not in {s for s, _, _ in reductions}:
                raise RuntimeError(f"rank {rank}: wait_reduce_grad {stage} without its reduce_grad")
            for s, _, exchanges in reductions:
                if s == stage:
                    for works, _, _ in exchanges:
                        if works is not None:
                            works[0].wait()
                            works[1].wait()
            waited.add(stage)
        else:
            raise RuntimeError(f"unknown step kind {kind}")

    if pending_recv:
        raise RuntimeError(f"rank {rank}: receives never used: {sorted(pending_recv)}")
    if pending_send:
        raise RuntimeError(f"rank {rank}: sends never waited for: {sorted(pending_send)}")
    unwaited = sorted(s for s, _, _ in reductions if s not in waited)
    if unwaited:
        raise RuntimeError(f"rank {rank}: reductions never waited for: {unwaited}")
    own = {stage: flat for stage, flat, _ in reductions}
    grads = {}
    for stage, flat, exchanges in reductions:
        total = flat.clone()
        for works, buf, other in exchanges:
            # Every exchange was waited for by its `wait_reduce_grad` (checked above).
            total += own[other] if works is None else buf
        total /= m_total
        shaped, at = [], 0
        for p in modules[stage].parameters():
            shaped.append(total[at : at + p.numel()].reshape(p.shape))
            at += p.numel()
        grads[stage] = shaped
    return grads, losses
