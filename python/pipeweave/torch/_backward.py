"""The split backward of one stage: I computes the input gradients, W later the weight gradients.

W must not go through the part's graph again. During I, the gradient that reaches each node of the
graph where a weight's branch leaves the path to the inputs (a linear layer's matmul, whose other
branch leads to its weight) is kept; W starts from those nodes with those gradients and runs only
the weights' branches. This is the method of PyTorch's `stage_backward_input` and
`stage_backward_weight` (torch/distributed/pipelining/_backward.py); the graph is walked once, in
one pass that finds both the nodes that lead to an input and those that lead to a weight.

Nodes that lead to a weight only through other such nodes are grouped with them (a weight shared
by two layers), and each group runs as one `autograd.grad` call, so no weight branch runs twice and
no call runs the input path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch.autograd.graph import GradientEdge, Node

# Gradients kept for W: per group, the (node, output index) edges with their gradients, and the
# parameters the group reaches, in the order of `params`.
_Group = tuple[list[GradientEdge], list[torch.Tensor], list[torch.nn.Parameter]]


class WeightWork:
    """What W needs from its I: the gradient groups, nothing of the input path."""

    def __init__(self, groups: list[_Group]):
        self.groups = groups

    def run(self) -> None:
        """Adds the weight gradients to each parameter's `.grad` and frees the graph they used."""
        for edges, grads, params in self.groups:
            found = torch.autograd.grad(edges, params, grads, allow_unused=True)
            for p, g in zip(params, found, strict=True):
                if g is None:
                    continue
                if p.grad is None:
                    p.grad = g
                else:
                    p.grad += g
        self.groups = []


def backward_input(
    outputs: Sequence[torch.Tensor],
    grads: Sequence[torch.Tensor | None],
    inputs: Sequence[torch.Tensor],
    params: Sequence[torch.nn.Parameter],
) -> tuple[list[torch.Tensor | None], WeightWork]:
    """The gradients of `inputs` (None where unused) and the work left for W.

    `outputs` are the stage's outputs (or its loss, with a None gradient), `inputs` the leaves the
    stage's forward received, `params` the part's trainable parameters.
    """
    roots = [(o, g) for o, g in zip(outputs, grads, strict=True) if o.grad_fn is not None]
    graph = _Graph([o.grad_fn for o, _ in roots if o.grad_fn is not None], inputs, params)
    kept: dict[Node, tuple[torch.Tensor | None, ...]] = {}
    handles = [node.register_prehook(_keeper(kept, node)) for node in graph.forks]
    try:
        input_grads: list[torch.Tensor | None] = [None] * len(inputs)
        wanted = [i for i, t in enumerate(inputs) if graph.reaches_input(t)]
        if wanted and outputs:
            found = torch.autograd.grad(
                list(outputs),
                [inputs[i] for i in wanted],
                [g for g in grads],
                retain_graph=True,
                allow_unused=True,
            )
            for i, g in zip(wanted, found, strict=True):
                input_grads[i] = g
    finally:
        for handle in handles:
            handle.remove()
    starts: list[tuple[GradientEdge, torch.Tensor]] = []
    for fork in graph.forks:
        for index, kept_grad in enumerate(kept.get(fork, ())):
            if kept_grad is not None:
                starts.append((GradientEdge(fork, index), kept_grad))
    # Outputs that do not depend on the inputs (the first stage's) start W with their own gradient.
    for out, out_grad in roots:
        root = out.grad_fn
        if root is not None and not graph.leads_to_input[root] and graph.leads_to_param[root]:
            starts.append((GradientEdge(root, out.output_nr), torch.ones_like(out) if out_grad is None else out_grad))
    return input_grads, WeightWork(graph.groups(starts, params))


def _keeper(
    kept: dict[Node, tuple[torch.Tensor | None, ...]], node: Node
) -> Callable[[tuple[torch.Tensor, ...]], None]:
    def keep(grad_outputs: tuple[torch.Tensor, ...]) -> None:
        kept[node] = tuple(grad_outputs)

    return keep


class _Graph:
    """One walk of the autograd graph from the outputs: which nodes lead to an input, to a weight."""

    def __init__(self, roots: list[Node], inputs: Sequence[torch.Tensor], params: Sequence[torch.nn.Parameter]):
        input_ids = {id(t) for t in inputs}
        self.param_of: dict[Node, int] = {}
        param_index = {id(p): i for i, p in enumerate(params)}
        self.input_nodes: set[int] = set()
        self.leads_to_input: dict[Node, bool] = {}
        self.leads_to_param: dict[Node, bool] = {}
        self.children: dict[Node, list[Node]] = {}
        # Post-order without recursion: a node is decided once its children are.
        stack: list[tuple[Node, bool]] = [(r, False) for r in roots]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                variable = getattr(node, "variable", None)
                to_input = to_param = False
                if variable is not None:
                    to_input = id(variable) in input_ids
                    if to_input:
                        self.input_nodes.add(id(variable))
                    index = param_index.get(id(variable))
                    if index is not None:
                        self.param_of[node] = index
                        to_param = True
                for child in self.children[node]:
                    to_input = to_input or self.leads_to_input[child]
                    to_param = to_param or self.leads_to_param[child]
                self.leads_to_input[node] = to_input
                self.leads_to_param[node] = to_param
            elif node not in self.children:
                children = [c for c, _ in node.next_functions if c is not None]
                self.children[node] = children
                stack.append((node, True))
                stack.extend((c, False) for c in children if c not in self.children)
        # The nodes on the path to an input from which a branch leads to weights only.
        self.forks = [
            n
            for n, to_input in self.leads_to_input.items()
            if to_input and any(not self.leads_to_input[c] and self.leads_to_param[c] for c in self.children[n])
        ]

    def reaches_input(self, t: torch.Tensor) -> bool:
        return id(t) in self.input_nodes

    def weights_below(self, node: Node, include_input_path: bool) -> set[int]:
        """The parameters reached from `node` through nodes that lead to no input."""
        found: set[int] = set()
        seen: set[Node] = set()
        stack = [
            c for c in self.children[node] if include_input_path or not self.leads_to_input[c]
        ]
        while stack:
            n = stack.pop()
            if n in seen or self.leads_to_input.get(n, False) or not self.leads_to_param.get(n, False):
                continue
            seen.add(n)
            if n in self.param_of:
                found.add(self.param_of[n])
            stack.extend(self.children[n])
        return found

    def groups(
        self, starts: list[tuple[GradientEdge, torch.Tensor]], params: Sequence[torch.nn.Parameter]
    ) -> list[_Group]:
        """The starts grouped by the weights they reach: starts sharing a weight run together."""
        reach = [self.weights_below(edge.node, False) | self._own(edge.node) for edge, _ in starts]
        owner = list(range(len(starts)))

        def find(i: int) -> int:
            while owner[i] != i:
                owner[i] = owner[owner[i]]
                i = owner[i]
            return i

        by_param: dict[int, int] = {}
        for i, weights in enumerate(reach):
            for w in weights:
                if w in by_param:
                    owner[find(i)] = find(by_param[w])
                else:
                    by_param[w] = i
        merged: dict[int, tuple[list[GradientEdge], list[torch.Tensor], set[int]]] = {}
        for i, (edge, g) in enumerate(starts):
            edges, grads, weights = merged.setdefault(find(i), ([], [], set()))
            edges.append(edge)
            grads.append(g)
            weights |= reach[i]
        return [(edges, grads, [params[w] for w in sorted(weights)]) for edges, grads, weights in merged.values() if weights]

    def _own(self, node: Node) -> set[int]:
        return {self.param_of[node]} if node in self.param_of else set()
