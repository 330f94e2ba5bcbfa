"""The shared strategies (tests/support/strategies.py) reach the edges they promise."""

import numpy as np
import pytest
from hypothesis import Phase, find, given, settings
from hypothesis.errors import NoSuchExample

from support import strategies as s

SEARCH = settings(max_examples=500, derandomize=True, database=None)


def frequency(strategy, condition, n=200):
    """The share of the first `n` derandomized examples for which `condition` holds."""
    hits = []

    @settings(max_examples=n, derandomize=True, database=None, phases=[Phase.generate])
    @given(strategy)
    def draw(example):
        hits.append(bool(condition(example)))

    draw()
    return sum(hits) / len(hits)


@pytest.mark.parametrize("what, strategy, condition, share", [
    ("an exact zero", s.values((4,)), lambda x: (x == 0.0).any(), 0.1),
    ("a tie", s.values((4,)), lambda x: len(set(x.tolist())) < 4, 0.3),
    ("a three-way tie", s.values((4,)),
     lambda x: max(np.unique(x, return_counts=True)[1]) >= 3, 0.1),
    ("an empty array", s.shapes(empty=True), lambda shape: 0 in shape, 0.1),
    ("a size-1 axis", s.shapes(min_dims=2), lambda shape: 1 in shape, 0.3),
    ("a 0-d shape", s.shapes(), lambda shape: shape == (), 0.02),
    ("broadcasting with fewer axes", s.pairs(),
     lambda two: len(two.input_shapes[0]) != len(two.input_shapes[1]), 0.1),
    ("a tie in logits", s.logits_and_axis(),
     lambda case: len(set(case[0].ravel())) < case[0].size, 0.1),
    ("an ignored row", s.classification(), lambda case: (case[1] == case[2]).any(), 0.2),
    ("a scalar at a kink", s.scalars(-1, 1), lambda x: x == 0.0, 0.005),
])
def test_the_strategies_reach_the_edges_often(what, strategy, condition, share):
    got = frequency(strategy, condition)
    assert got >= share, f"{what} in {got:.1%} of the examples, fewer than {share:.0%}"


@pytest.mark.parametrize("strategy, outside", [
    (s.positive((3,)), lambda x: (x < 0.25).any() or (x > 3).any()),
    (s.nonzero((3,)), lambda x: (np.abs(x) < 0.25).any()),
    (s.values((3,), -1.0, 0.5), lambda x: (x < -1.0).any() or (x > 0.5).any()),
])
def test_domains_hold(strategy, outside):
    with pytest.raises(NoSuchExample):
        find(strategy, outside, settings=SEARCH)
