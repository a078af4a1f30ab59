"""`pipeweave.torch.split`: a model's modules cut into a plan's parts by its layer split, the
embedding on the first part and the head on the last, the parts composing to the model."""

import json

import pytest

torch = pytest.importorskip("torch")

import pipeweave as pw  # noqa: E402
from pipeweave.torch import JsonPlan, even_split, parts_of, split  # noqa: E402


def model(layers=8):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(4, 16),  # the "embedding"
        *[torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU()) for _ in range(layers)],
        torch.nn.Linear(16, 3),  # the "head"
    )


def plan_on_unit(split_text):
    # the built-in unit spec's model has 8 layers
    text = pw.compile("1f1b", ranks=2, microbatches=4).to_json(spec="unit", split=split_text)
    return JsonPlan.load(json.loads(text))


def test_the_json_plan_carries_the_split_and_split_cuts_by_it():
    plan = plan_on_unit("3,5")
    assert plan.split == [3, 5]
    m = model()
    parts = split(m, plan)
    assert sorted(parts) == [0, 1]
    assert len(parts[0]) == 1 + 3 and len(parts[1]) == 5 + 1
    assert parts[0][0] is m[0] and parts[1][-1] is m[-1]
    x = torch.randn(5, 4)
    torch.testing.assert_close(parts[1](parts[0](x)), m(x))
    # a rank gets the parts it hosts, the keys PlanRunner expects
    assert list(split(m, plan, 1)) == parts_of(plan, 1)


def test_embedding_only_and_head_only_parts():
    plan = plan_on_unit("0,8")
    parts = split(model(), plan)
    assert len(parts[0]) == 1 and len(parts[1]) == 9


def test_without_a_split_the_even_one_and_layers_given():
    plan = pw.compile("1f1b", ranks=4, microbatches=4)
    assert even_split(10, 4) == [2, 3, 3, 2]
    parts = split(model(10), plan)
    assert [len(parts[q]) for q in range(4)] == [3, 3, 3, 3]
    given = split(model(10), plan, layers=[1, 4, 4, 1])
    assert [len(given[q]) for q in range(4)] == [2, 4, 4, 2]
    layers_only = split(torch.nn.ModuleList(model(10)[1:-1]), plan, embedding=False, head=False)
    assert [len(layers_only[q]) for q in range(4)] == [2, 3, 3, 2]


def test_misuse_is_said_in_words():
    plan = pw.compile("1f1b", ranks=4, microbatches=4)
    with pytest.raises(ValueError, match="holds 9 layers but the model has 10"):
        split(model(10), plan, layers=[2, 3, 3, 1])
    with pytest.raises(ValueError, match="3 parts but the plan has 4"):
        split(model(10), plan, layers=[4, 3, 3])
    with pytest.raises(ValueError, match="part 1 without a layer"):
        split(model(10), plan, layers=[5, 0, 3, 2])
    with pytest.raises(TypeError, match="not a torch.nn.Module"):
        split([torch.nn.Linear(1, 1), "layer"], plan)
    with pytest.raises(ValueError, match="split: expected `auto`"):
        pw.compile("1f1b", ranks=2, microbatches=4).to_json(spec="unit", split="three")
