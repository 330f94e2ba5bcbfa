"""Acceptance test of Part II: 200 random programs, engine gradients against HIPS autograd.

The programs come from the one generator of tests/support/programs.py (the PyTorch
comparison draws its own seeds from it): broadcasting, matrix products (1-D, 2-D and
batched), reductions over an int, a tuple or every axis, reshapes, transposes, indexing
(basic and advanced, with repeats and masks), the softmax family, powers, and relu, abs
and max on exact values, with their ties and zeros. Each program runs on engine Tensors
and on autograd's traced NumPy; the gradients of the output, seeded with ones, with
respect to every input must agree to 1e-10, relative to the size of that gradient.
"""

import autograd
import numpy as np
import pytest

from engine import Tensor
from support import programs
from support.programs import Program

N_PROGRAMS = 200
FIRST_SEED = 10_000  # seeds the PyTorch comparison (0 to 399) does not use


def seeds(block, blocks=10):
    return range(FIRST_SEED + block * N_PROGRAMS // blocks,
                 FIRST_SEED + (block + 1) * N_PROGRAMS // blocks)


def engine_gradients(program):
    leaves = [Tensor(x) for x in program.inputs]
    y = program.run(leaves, programs.ENGINE)
    y.backward(gradient=np.ones(y.shape))
    return [leaf.grad for leaf in leaves]


def autograd_gradients(program):
    def total(xs):
        return autograd.numpy.sum(program.run(xs, programs.AUTOGRAD))

    return autograd.grad(total)(list(program.inputs))


def test_the_programs_cover_every_operation():
    seen = set().union(*(Program(seed).names() for block in range(10) for seed in seeds(block)))
    assert seen == programs.every_name() | {"input"}


@pytest.mark.parametrize("block", range(10))
def test_engine_matches_autograd_on_random_programs(block):
    for seed in seeds(block):
        program = Program(seed)
        for k, (mine, theirs) in enumerate(zip(engine_gradients(program),
                                               autograd_gradients(program))):
            assert mine.shape == program.inputs[k].shape
            scale = max(1.0, float(np.max(np.abs(theirs), initial=0.0)))
            np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-10 * scale,
                                       err_msg=f"program {seed}, input {k}: {program.labels()}")
