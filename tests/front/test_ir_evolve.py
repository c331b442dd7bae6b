"""ir.evolve: dataclasses.replace without the trip through __init__, for the searches' variants."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import effspec
from effspec.front.ir import Block, Entry, Run, Samples, Spec, evolve

EXAMPLE_A = Path(__file__).resolve().parents[2] / "examples" / "example_a_measured.eff"


def _spec() -> Spec:
    result = effspec.load(EXAMPLE_A)
    assert result.spec is not None
    return result.spec


def test_evolve_equals_replace_on_every_node_of_a_spec():
    spec = _spec()
    nodes: list[object] = [spec]
    for run in spec.runs:
        nodes.append(run)
        for block in run.blocks:
            nodes.append(block)
            nodes.extend(block.entries)
            nodes.extend(e.value for e in block.entries if isinstance(e.value, Samples))
    assert {type(n) for n in nodes} >= {Spec, Run, Block, Entry, Samples}
    for node in nodes:
        for f in dataclasses.fields(node):  # each field changed alone, to a value of another identity
            value = getattr(node, f.name)
            other = (value, "x") if isinstance(value, tuple) else ["changed"]
            ours, theirs = evolve(node, **{f.name: other}), dataclasses.replace(node, **{f.name: other})
            assert type(ours) is type(theirs) and ours == theirs
            assert getattr(ours, f.name) is other
            assert all(getattr(ours, g.name) is getattr(node, g.name) for g in dataclasses.fields(node) if g is not f)
        assert evolve(node) == node and evolve(node) is not node


def test_evolve_leaves_a_cached_property_behind():
    spec = _spec()
    first = spec.runs[0]
    assert spec.run(first.id) is first  # fills Spec._runs_by_id
    renamed = evolve(first, id="renamed")
    changed = evolve(spec, runs=(renamed, *spec.runs[1:]))
    assert changed.run("renamed") is renamed and changed.run(first.id) is None


def test_evolve_refuses_a_field_the_class_has_not():
    run = _spec().runs[0]
    with pytest.raises(TypeError, match="no field 'blocks_'"):
        evolve(run, blocks_=())


def test_evolve_leaves_post_init_classes_to_replace():
    @dataclasses.dataclass(frozen=True)
    class Derived:
        a: float
        twice: float = dataclasses.field(init=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "twice", 2 * self.a)

    assert evolve(Derived(1.0), a=3.0).twice == 6.0
