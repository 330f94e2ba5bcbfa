"""Hypothesis strategies shared by every property test, and the one profile they run under.

They reach the edges a gradient has: entries that are exactly equal (ties for max),
exactly 0 (the kinks of relu and abs), axes of size 1 (broadcasting), and, where an
operation allows it, arrays with no entries at all. `PROFILE` is derandomized: the same
examples on every run and every machine, nothing read from or written to .hypothesis/.
"""

import numpy as np
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.extra.numpy import array_shapes, arrays, mutually_broadcastable_shapes

# no deadline: the machine is shared, and a slow example is not a wrong one
PROFILE = dict(derandomize=True, database=None, deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def examples(n):
    """The shared profile with `n` examples."""
    return settings(max_examples=n, **PROFILE)


FEW, SOME, MANY = examples(25), examples(40), examples(80)

TIES = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0)  # exact: ties, zeros, halves


def values(shape, low=-3.0, high=3.0, ties=TIES):
    """Arrays of `shape` whose entries are often exactly equal, and often exactly 0."""
    anything = st.floats(low, high, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    exact = [t for t in ties if low <= t <= high]
    elements = st.one_of(st.sampled_from(exact), anything) if exact else anything
    return arrays(np.float64, shape, elements=elements)


def positive(shape, low=0.25, high=3.0):
    """Entries in [low, high] (domains of log and sqrt), ties included."""
    return values(shape, low, high, ties=tuple(t for t in (0.5, 1.0, 2.0) if low <= t <= high))


def nonzero(shape):
    """Entries away from 0 (denominators), ties included."""
    magnitude = arrays(np.float64, shape, elements=st.one_of(
        st.sampled_from([0.5, 1.0, 2.0]), st.floats(0.25, 3.0)))
    signs = arrays(np.float64, shape, elements=st.sampled_from([-1.0, 1.0]))
    return st.tuples(magnitude, signs).map(lambda ms: ms[0] * ms[1])


def shapes(min_dims=0, max_dims=3, max_side=3, empty=False):
    """Shapes with axes of size 1 often; with `empty`, sometimes an axis of size 0."""
    return array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0 if empty else 1,
                        max_side=max_side)


def pairs(max_dims=3, max_side=3, empty=False):
    """Two shapes that broadcast together (size-1 axes, fewer axes, 0-d)."""
    return mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=max_dims,
                                         min_side=0 if empty else 1, max_side=max_side)


SHAPES = shapes()
PAIRS = pairs()
SEEDS = st.integers(0, 2**31)


@st.composite
def logits_and_axis(draw, far=True):
    """Logits of 1 to 3 axes with ties, and an axis; with `far`, sometimes shifted by
    -1000 or +800, where only the stable formulas stay finite."""
    shape = draw(shapes(min_dims=1, max_side=4))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    x = draw(values(shape, -4.0, 4.0))
    if far and draw(st.booleans()):
        x = x + draw(st.sampled_from([-1000.0, 800.0]))
    return x, axis


@st.composite
def classification(draw, ignore=True):
    """Logits (N, C) with ties and targets; with `ignore`, some rows' targets set to an
    ignore_index (-100, 7, or 0, a class that exists), returned third (else None)."""
    n, c = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    logits = draw(values((n, c), -5.0, 5.0))
    targets = draw(st.lists(st.integers(0, c - 1), min_size=n, max_size=n))
    if not ignore:
        return logits, np.array(targets), None
    ignore_index = draw(st.sampled_from([-100, 0, 7]))
    dropped = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    targets = np.array([ignore_index if d else t for t, d in zip(targets, dropped)])
    return logits, targets, ignore_index


def scalars(low, high, ties=TIES):
    """Floats in [low, high], often one of the exact values `ties` (0 among them)."""
    anything = st.floats(low, high, allow_nan=False, allow_infinity=False)
    exact = [t for t in ties if low <= t <= high]
    return st.one_of(st.sampled_from(exact), anything) if exact else anything
