"""What a worker does for one case: train as the plan says and report gradients, losses, weights.

Every task returns {"grads": {stage: [tensor]} after the first step (the last one when gradients
accumulate), "losses": [{mb: loss} per step], "params": {stage: [tensor]} after the last step
(PlanRunner with an optimizer) or None} for this rank's stages; a stage reports its own copy of its
model part.
"""

import torch

from . import model


def run(rank, task):
    kind = task["kind"]
    if kind == "runner":
        return plan_runner(rank, task)
    if kind == "schedule":
        return torch_schedule(rank, task)
    if kind == "csv":
        return torch_csv(rank, task)
    if kind == "mistake":
        from . import mistakes

        return mistakes.run(rank, task)
    if kind == "evaluate":
        return evaluate(rank, task)
    if kind == "torch_eval":
        return torch_eval(rank, task)
    if kind == "errors":
        from . import errors

        return errors.run(rank, task)
    raise ValueError(f"unknown task kind {kind}")


def plan_runner(rank, task):
    """PlanRunner over `task["steps"]` training steps.

    The suite's model trains with its optimizer; the tuple model (`"model": "tuple"`) accumulates
    the gradients of every step without an optimizer, with `scale_grads=False`.
    With `"replicas": d` the world holds d copies of the pipeline group (data parallelism): each
    runs the plan in its own process group and reports `"replica"`.
    """
    import torch.distributed as dist
    from pipeweave.torch import JsonPlan, PlanRunner, parts_of

    class UnsummedRunner(PlanRunner):
        """A runner that never sums the gradients of replicated parts (a negative case)."""

        def _make_part_groups(self):
            pass

    plan = JsonPlan.load(task["path"])
    s_per, m = plan.stages_per_pipeline, plan.microbatches
    replicas = task.get("replicas", 1)
    groups = [dist.new_group(list(range(i * plan.ranks, (i + 1) * plan.ranks))) for i in range(replicas)]
    groups = groups if replicas > 1 else []
    replica, plan_rank = divmod(rank, plan.ranks)
    group = groups[replica] if groups else None
    tuple_model = task.get("model") == "tuple"
    if task.get("cut"):
        # the whole model (an "embedding" layer, the plan's layers, a "head" layer) cut by the
        # plan's own split with pipeweave.torch.split: no part table by hand
        from pipeweave.torch import split

        built = model.build_parts(sum(plan.split) + 2)
        parts = split(torch.nn.ModuleList(built), plan, plan_rank)
    else:
        built = model.build_tuple_parts(s_per) if tuple_model else model.build_parts(s_per)
        parts = {q: built[q] for q in parts_of(plan, plan_rank)}
    runner_class = UnsummedRunner if task.get("unsummed") else PlanRunner
    runner = runner_class(plan, plan_rank, parts, model.loss_fn, group, scale_grads=not tuple_model)
    opt = model.optimizer([p for part in parts.values() for p in part.parameters()])
    out = {"grads": None, "losses": [], "params": None, "replica": replica, "step_losses": []}
    try:
        for step in range(task["steps"]):
            if tuple_model:
                x, y = model.tuple_batch(m, step)
            else:
                opt.zero_grad(set_to_none=True)
                x, y = model.batch(m, step)
            if task.get("sparse"):
                # As PyTorch's runtime allows: inputs only where part 0 runs, targets where the loss is.
                x = x if 0 in parts else None
                y = y if s_per - 1 in parts else None
            loss = runner.step(x, y)
            out["step_losses"].append(loss.item())
            out["losses"].append({mb: loss.item() for mb, loss in runner.losses.items()})
            if step == 0 or tuple_model:
                out["grads"] = {s: _grads(parts[s % s_per]) for s in runner.stages}
            if not tuple_model:
                opt.step()
    finally:
        runner.close()
        for g in groups:
            dist.destroy_process_group(g)
    if not tuple_model:
        out["params"] = {s: [p.detach().clone() for p in parts[s % s_per].parameters()] for s in runner.stages}
    return out


def evaluate(rank, task):
    """An evaluation step through PlanRunner: its loss, every micro-batch's output, no gradient.

    `"how"`: "plan" (an evaluation plan), "no_grad" (the training plan under torch.no_grad()) or
    "eval" (the training plan with every part in eval()). Inputs and targets are given only where
    they are needed. Returns the step's loss, each micro-batch's loss, the outputs this rank
    computed (`forward`) and every micro-batch's output gathered (`forward(gather=True)`).
    """
    from pipeweave.torch import JsonPlan, PlanRunner, parts_of

    plan = JsonPlan.load(task["path"])
    s_per, m = plan.stages_per_pipeline, plan.microbatches
    built = model.build_parts(s_per)
    parts = {q: built[q] for q in parts_of(plan, rank)}
    runner = PlanRunner(plan, rank, parts, model.loss_fn)
    x, y = model.batch(m)
    x = x if 0 in parts else None
    y = y if s_per - 1 in parts else None
    how = task["how"]
    try:
        if how == "no_grad":
            with torch.no_grad():
                loss = runner.step(x, y)
        elif how == "eval":
            for part in parts.values():
                part.eval()
            loss = runner.step(x, y)
        else:
            loss = runner.step(x, y)
        losses = {mb: v.item() for mb, v in runner.losses.items()}
        local = runner.forward(x)
        gathered = runner.forward(x, gather=True)
    finally:
        runner.close()
    untouched = all(p.grad is None for part in parts.values() for p in part.parameters())
    return {
        "loss": loss.item(),
        "losses": losses,
        "local": {mb: t.detach().clone() for mb, t in local.items()},
        "gathered": {mb: t.detach().clone() for mb, t in gathered.items()},
        "untouched": untouched,
    }


def torch_schedule(rank, task):
    """One step of PyTorch's runtime as `pipeweave.torch.schedule` builds it from the JSON plan."""
    import pipeweave.torch as pwt
    from torch.distributed.pipelining import PipelineStage

    plan = pwt.JsonPlan.load(task["path"])
    (placement,) = plan.placement
    mine = [s for s, r in enumerate(placement) if r == rank]
    return _pytorch_step(
        rank,
        plan.stages_per_pipeline,
        plan.microbatches,
        mine,
        lambda stages: pwt.schedule(plan, stages, loss_fn=model.loss_fn, format=task["format"]),
        PipelineStage,
    )


def torch_csv(rank, task):
    """One step of PyTorch's runtime loading the exported CSV itself (`_load_csv`).

    `"defer_pp_recv": True` asks the runtime to move each receive next to its consumer (a negative
    case: on a V schedule that reorders the messages between two ranks).
    """
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

    (placement,) = task["placements"]
    m = task["microbatches"]
    mine = [s for s, r in enumerate(placement) if r == rank]

    def build(stages):
        defer = task.get("defer_pp_recv", False)
        schedule = _PipelineScheduleRuntime(stages, m, loss_fn=model.loss_fn, defer_pp_recv=defer)
        schedule._load_csv(task["path"], format=task["format"])
        return schedule

    return _pytorch_step(rank, len(placement), m, mine, build, PipelineStage)


def _pytorch_step(rank, num_stages, m, mine, build, stage_class):
    parts = model.build_parts(num_stages)
    x, y = model.batch(m)
    # Shapes are inferred by the runtime on the first step.
    stages = [stage_class(parts[s], s, num_stages, torch.device("cpu")) for s in mine]
    schedule = build(stages)
    losses = []
    args = (x,) if 0 in mine else ()
    kwargs = {"target": y, "losses": losses} if num_stages - 1 in mine else {}
    schedule.step(*args, **kwargs)
    # PyTorch returns the losses of the micro-batches in order 0..M-1.
    return {
        "grads": {s: _grads(parts[s]) for s in mine},
        "losses": [{mb: loss.detach().item() for mb, loss in enumerate(losses)}],
        "params": None,
    }


def _grads(module):
    return [p.grad.detach().clone() for p in module.parameters()]


def torch_eval(rank, task):
    """PyTorch 2.15's own schedule class `task["schedule"]` evaluating with `eval()` at P = 2.

    The schedule runs in a process group of its own, dropped when `eval()` raises, so that the
    peer's transfers fail at once instead of waiting for the timeout. Returns the losses, or the
    error this rank saw.
    """
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining import schedules

    import logging

    # PyTorch logs the failing eval()'s traceback; the case reports the error itself.
    logging.getLogger("torch.distributed.pipelining").setLevel(logging.CRITICAL)
    name = task["schedule"]
    cls = getattr(schedules, name)
    v = name in ("ScheduleZBVZeroBubble", "ScheduleDualPipeV")
    looped = v or name in ("ScheduleInterleaved1F1B", "ScheduleLoopedBFS", "ScheduleInterleavedZeroBubble")
    n = 4 if looped else 2
    mine = [rank, 3 - rank] if v else ([rank, rank + 2] if looped else [rank])
    m = 4
    group = dist.new_group([0, 1], use_local_synchronization=True)
    parts = model.build_parts(n)
    stages = [PipelineStage(parts[s], s, n, torch.device("cpu"), group=group) for s in mine]
    sched = cls(stages if looped else stages[0], m, loss_fn=model.loss_fn)
    x, y = model.batch(m)
    losses = []
    try:
        sched.eval(*((x,) if 0 in mine else ()), target=y if n - 1 in mine else None, losses=losses if n - 1 in mine else None)
        error = None
    except Exception as e:
        error = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}"
    if error is None:
        dist.destroy_process_group(group)
    else:
        del sched, stages
        dist.distributed_c10d._abort_process_group(group)
    return {"error": error, "losses": [loss.item() for loss in losses], "stages": n}
