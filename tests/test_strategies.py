"""The shared strategies (tests/support/strategies.py) reach the edges they promise."""

import numpy as np
import pytest
from hypothesis import find, settings
from hypothesis.errors import NoSuchExample

from support import strategies as s

SEARCH = settings(max_examples=500, derandomize=True, database=None)


@pytest.mark.parametrize("what, strategy, condition", [
    ("an exact zero", s.values((4,)), lambda x: (x == 0.0).any()),
    ("a tie", s.values((4,)), lambda x: len(set(x.tolist())) < 4),
    ("a three-way tie", s.values((4,)), lambda x: max(np.unique(x, return_counts=True)[1]) >= 3),
    ("an empty array", s.shapes(empty=True), lambda shape: 0 in shape),
    ("a size-1 axis", s.shapes(min_dims=2), lambda shape: 1 in shape),
    ("a 0-d shape", s.shapes(), lambda shape: shape == ()),
    ("broadcasting with fewer axes", s.pairs(),
     lambda two: len(two.input_shapes[0]) != len(two.input_shapes[1])),
    ("a tie in logits", s.logits_and_axis(), lambda case: len(set(case[0].ravel())) < case[0].size),
    ("an ignored row", s.classification(), lambda case: (case[1] == case[2]).any()),
    ("a scalar at a kink", s.scalars(-1, 1), lambda x: x == 0.0),
])
def test_the_strategies_reach_the_edges(what, strategy, condition):
    assert condition(find(strategy, condition, settings=SEARCH)), what


@pytest.mark.parametrize("strategy, outside", [
    (s.positive((3,)), lambda x: (x < 0.25).any() or (x > 3).any()),
    (s.nonzero((3,)), lambda x: (np.abs(x) < 0.25).any()),
    (s.values((3,), -1.0, 0.5), lambda x: (x < -1.0).any() or (x > 0.5).any()),
])
def test_domains_hold(strategy, outside):
    with pytest.raises(NoSuchExample):
        find(strategy, outside, settings=SEARCH)
