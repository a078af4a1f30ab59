"""Plans and runners broken on purpose: each must fail the comparison with the unpipelined model.

They show that the suite can fail: a wrong order, a missing backward, receives matched to the wrong
message (among them PyTorch's own `defer_pp_recv` lowering of ZB-V, which `pipeweave validate`
reports), replicas whose gradients are not summed.
"""

import json
import os


def derive(plans_dir, by_name, work_dir):
    """(name, source case, path of the broken file or None, task changes, what was broken)."""
    out = []

    def write(source, suffix, text):
        path = os.path.join(work_dir, by_name[source]["file"] + suffix)
        with open(path, "w") as f:
            f.write(text)
        return path

    def edit_file(name, source, suffix, edit, what):
        with open(os.path.join(plans_dir, by_name[source]["file"])) as f:
            text = f.read()
        broken = edit(text)
        if broken == text:
            raise RuntimeError(f"the mutation for {name} changed nothing")
        out.append((name, source, write(source, suffix, broken), {}, what))

    edit_file(
        "negative: 1f1b-p2/pytorch with a forward and a backward swapped",
        "1f1b-p2/pytorch",
        ".swapped",
        _swap_cells(1, "1F1", "1B1"),
        "rank 1 runs 1B1 before 1F1",
    )
    edit_file(
        "negative: gpipe-p2/pytorch-comms with two receives swapped",
        "gpipe-p2/pytorch-comms",
        ".swapped",
        _move_before(1, "1RECV_F1", "1RECV_F0"),
        "rank 1 posts the receive of micro-batch 1 before that of micro-batch 0",
    )
    edit_file(
        "negative: zb-h1-p2/pytorch with a missing backward",
        "zb-h1-p2/pytorch",
        ".missing",
        _drop_cell(0, "0W3"),
        "rank 0 never runs 0W3",
    )
    edit_file(
        "negative: dualpipe-p4-m8/json through PlanRunner with a missing backward",
        "dualpipe-p4-m8/json",
        ".missing",
        _drop_first_w(0),
        "rank 0 drops its first W (a weight gradient) and the step that runs it",
    )
    edit_file(
        "negative: dualpipe-p4-m8/json through PlanRunner with two receives swapped",
        "dualpipe-p4-m8/json",
        ".swapped",
        _swap_receives(1),
        "rank 1 posts two receives from one peer in the wrong order (messages are matched in posting order)",
    )
    out.append(
        (
            "negative: zb-v-p2/pytorch through PyTorch's defer_pp_recv",
            "zb-v-p2/pytorch",
            None,
            {"defer_pp_recv": True},
            "PyTorch's own _defer_recv_ops posts rank 1's receive of 2RECV_B0 before 1RECV_F2 while rank 0 "
            "sends 0SEND_F2 first; `pipeweave validate` reports that lowering as out of order",
        )
    )
    for source in ("dualpipe-p4-m8/json", "chimera-k4-p4-m8/json"):
        out.append(
            (
                f"negative: {source} through a PlanRunner that does not sum replica gradients",
                source,
                None,
                {"unsummed": True},
                "every copy keeps the gradient of its own pipeline's micro-batches",
            )
        )
    return out


def _swap_cells(row, a, b):
    def edit(text):
        rows = text.split("\n")
        cells = rows[row].split(",")
        i, j = cells.index(a), cells.index(b)
        cells[i], cells[j] = cells[j], cells[i]
        rows[row] = ",".join(cells)
        return "\n".join(rows)

    return edit


def _move_before(row, cell, anchor):
    def edit(text):
        rows = text.split("\n")
        cells = rows[row].split(",")
        cells.remove(cell)
        cells.insert(cells.index(anchor), cell)
        rows[row] = ",".join(cells)
        return "\n".join(rows)

    return edit


def _drop_cell(row, cell):
    def edit(text):
        rows = text.split("\n")
        cells = rows[row].split(",")
        cells.remove(cell)
        rows[row] = ",".join(cells)
        return "\n".join(rows)

    return edit


def _drop_first_w(rank):
    def edit(text):
        plan = json.loads(text)
        prog = plan["programs"][rank]
        index = next(i for i, a in enumerate(prog["actions"]) if a["kind"] == "W")
        del prog["actions"][index]
        steps = []
        for s in prog["steps"]:
            if s["kind"] == "compute":
                if s["action"] == index:
                    continue
                if s["action"] > index:
                    s = dict(s, action=s["action"] - 1)
            steps.append(s)
        prog["steps"] = steps
        return json.dumps(plan)

    return edit


def _swap_receives(rank):
    """Swaps the micro-batches of two receives of one stage from one peer with no compute between them."""

    def edit(text):
        plan = json.loads(text)
        steps = plan["programs"][rank]["steps"]
        for i, a in enumerate(steps):
            if a["kind"] != "recv":
                continue
            for j in range(i + 1, len(steps)):
                b = steps[j]
                if b["kind"] == "compute":
                    break
                if b["kind"] == "recv" and (b["dir"], b["stage"], b["peer"]) == (a["dir"], a["stage"], a["peer"]):
                    a["mb"], b["mb"] = b["mb"], a["mb"]
                    return json.dumps(plan)
        raise RuntimeError(f"rank {rank} has no two receives of one stage and peer in a row")

    return edit
