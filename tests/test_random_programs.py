"""Acceptance test of Part II: 200 random programs, engine gradients against HIPS autograd.

A seeded generator writes small programs that mix broadcasting, matrix products
(1-D, 2-D and batched), reductions, reshapes, transposes and indexing (basic and
advanced, with repeats). Each program is run twice: on engine Tensors and on
autograd's traced NumPy. The gradients of the summed output with respect to every
input must agree to 1e-10, relative to the size of that input's gradient.
"""

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from engine import Tensor

N_PROGRAMS = 200
MAX_STEPS = 8


# -- one program = a list of steps on a pool of values with known shapes -------------


def random_shape(rng, min_dims=1, max_dims=3):
    return tuple(int(n) for n in rng.integers(1, 4, size=rng.integers(min_dims, max_dims + 1)))


def broadcast_partner(rng, shape):
    """A shape that broadcasts with `shape`: some axes set to 1, maybe fewer or more axes."""
    partner = [1 if rng.random() < 0.4 else n for n in shape]
    if partner and rng.random() < 0.3:
        partner = partner[rng.integers(0, len(partner)):]  # drop leading axes
    if len(partner) + len(shape) < 5 and rng.random() < 0.2:
        partner = [int(rng.integers(2, 4))] + [1] * (len(shape) - len(partner)) + partner
    return tuple(partner)


def make_program(seed):
    """Inputs (name -> array) and steps (op, argument indices, parameters)."""
    rng = np.random.default_rng(seed)
    inputs, shapes, steps = [], [], []

    def new_input(shape):
        inputs.append(rng.normal(size=shape))
        shapes.append(shape)
        steps.append(("input", (), len(inputs) - 1))
        return len(shapes) - 1

    new_input(random_shape(rng))
    for _ in range(rng.integers(3, MAX_STEPS + 1)):
        usable = [k for k, s in enumerate(shapes) if s]  # any earlier value but a 0-d one
        i = int(rng.choice(usable))  # graphs branch and share values
        shape = shapes[i]
        kind = rng.choice(["unary", "binary", "matmul", "reduce", "reshape", "transpose",
                           "index"], p=[0.15, 0.25, 0.15, 0.15, 0.1, 0.1, 0.1])
        if kind == "unary":
            op = str(rng.choice(["tanh", "sin", "exp_tanh", "sqrt1", "log1", "abs", "relu"]))
            steps.append((op, (i,), None))
            out = shape
        elif kind == "binary":
            j = new_input(broadcast_partner(rng, shape))
            if rng.random() < 0.5:  # sometimes the partner is computed, not a leaf
                steps.append(("sin", (j,), None))
                shapes.append(shapes[j])
                j = len(shapes) - 1
            op = str(rng.choice(["+", "-", "*", "/"]))
            out = np.broadcast_shapes(shape, shapes[j])
            if len(out) > 4:
                continue
            steps.append((op, (i, j), None))
        elif kind == "matmul":
            k = shape[-1]
            form = rng.integers(0, 3)
            if form == 0:
                other = (k,)
            elif form == 1:
                other = (k, int(rng.integers(1, 4)))
            else:
                other = (int(rng.integers(1, 3)), k, int(rng.integers(1, 4)))
            on_the_right = rng.random() < 0.5 and len(shape) >= 2
            if on_the_right:
                other = other[:-2] + (other[-1], shape[-2]) if len(other) >= 2 else (shape[-2],)
            pair = (other, shape) if on_the_right else (shape, other)
            try:
                out = np.matmul(np.zeros(pair[0]), np.zeros(pair[1])).shape
            except ValueError:  # batch axes that do not broadcast: skip this step
                continue
            j = new_input(other)
            steps.append(("@", (j, i) if on_the_right else (i, j), None))
            if len(out) == 0:
                steps.append(("reshape", (len(shapes),), (1,)))
                shapes.append(())
                out = (1,)
        elif kind == "reduce":
            ndim = len(shape)
            form = rng.integers(0, 3)
            axis = (None if form == 0 else int(rng.integers(-ndim, ndim)) if form == 1
                    else tuple(int(a) for a in rng.choice(ndim, size=rng.integers(1, ndim + 1),
                                                          replace=False)))
            keepdims = bool(rng.random() < 0.5)
            op = str(rng.choice(["sum", "mean", "max"]))
            steps.append((op, (i,), (axis, keepdims)))
            out = getattr(np, op)(np.zeros(shape), axis=axis, keepdims=keepdims).shape
            if len(out) == 0:
                steps.append(("reshape", (len(shapes),), (1,)))
                shapes.append(())
                out = (1,)
        elif kind == "reshape":
            size = int(np.prod(shape))
            out = [(size,), (1, size), (size, 1)][rng.integers(0, 3)]
            steps.append(("reshape", (i,), out))
        elif kind == "transpose":
            perm = tuple(int(a) for a in rng.permutation(len(shape)))
            steps.append(("transpose", (i,), perm))
            out = tuple(shape[a] for a in perm)
        else:
            n = shape[0]
            form = rng.integers(0, 3)
            if form == 0:
                index = (slice(int(rng.integers(0, n)), None),)
            elif form == 1:
                index = (rng.integers(0, n, size=int(rng.integers(1, 5))),)  # repeats likely
            else:
                index = (Ellipsis, rng.integers(0, shape[-1], size=3))
            steps.append(("index", (i,), index))
            out = np.zeros(shape)[index].shape
        shapes.append(tuple(out))
    return inputs, steps


def run(program, inputs, backend):
    """Execute the steps; the result is the sum of the last value and of every other one."""
    _, steps = program
    values = []
    for op, args, param in steps:
        x = [values[a] for a in args]
        if op == "input":
            values.append(inputs[param])
        else:
            values.append(backend[op](*x, param))
    total = backend["sum"](values[-1], (None, False))
    for v in values[:-1]:  # fan-out: every value also feeds the output
        total = total + 0.1 * backend["sum"](v, (None, False))
    return total


ENGINE = {
    "tanh": lambda x, _: x.tanh(),
    "sin": lambda x, _: x.sin(),
    "exp_tanh": lambda x, _: x.tanh().exp(),
    "sqrt1": lambda x, _: (x * x + 1.0).sqrt(),
    "log1": lambda x, _: (x * x + 1.0).log(),
    "abs": lambda x, _: x.abs(),
    "relu": lambda x, _: x.relu(),
    "+": lambda a, b, _: a + b,
    "-": lambda a, b, _: a - b,
    "*": lambda a, b, _: a * b,
    "/": lambda a, b, _: a / (b * b + 1.0),
    "@": lambda a, b, _: a @ b,
    "sum": lambda x, p: x.sum(axis=p[0], keepdims=p[1]),
    "mean": lambda x, p: x.mean(axis=p[0], keepdims=p[1]),
    "max": lambda x, p: x.max(axis=p[0], keepdims=p[1]),
    "reshape": lambda x, shape: x.reshape(shape),
    "transpose": lambda x, perm: x.transpose(perm),
    "index": lambda x, index: x[index],
}

AUTOGRAD = {
    "tanh": lambda x, _: anp.tanh(x),
    "sin": lambda x, _: anp.sin(x),
    "exp_tanh": lambda x, _: anp.exp(anp.tanh(x)),
    "sqrt1": lambda x, _: anp.sqrt(x * x + 1.0),
    "log1": lambda x, _: anp.log(x * x + 1.0),
    "abs": lambda x, _: anp.abs(x),
    "relu": lambda x, _: anp.where(x > 0, x, 0.0),  # anp.maximum splits the slope at 0
    "+": lambda a, b, _: a + b,
    "-": lambda a, b, _: a - b,
    "*": lambda a, b, _: a * b,
    "/": lambda a, b, _: a / (b * b + 1.0),
    "@": lambda a, b, _: anp.matmul(a, b),
    "sum": lambda x, p: anp.sum(x, axis=p[0], keepdims=p[1]),
    "mean": lambda x, p: anp.mean(x, axis=p[0], keepdims=p[1]),
    "max": lambda x, p: anp.max(x, axis=p[0], keepdims=p[1]),
    "reshape": lambda x, shape: anp.reshape(x, shape),
    "transpose": lambda x, perm: anp.transpose(x, perm),
    "index": lambda x, index: x[index],
}


def engine_gradients(program):
    leaves = [Tensor(x) for x in program[0]]
    run(program, leaves, ENGINE).backward()
    return [leaf.grad for leaf in leaves]


def autograd_gradients(program):
    return autograd.grad(lambda xs: run(program, xs, AUTOGRAD))(list(program[0]))


def test_the_generator_covers_every_operation():
    seen = {op for seed in range(N_PROGRAMS) for op, _, _ in make_program(seed)[1]}
    assert set(ENGINE) | {"input"} == seen


@pytest.mark.parametrize("block", range(10))
def test_engine_matches_autograd_on_random_programs(block):
    for seed in range(block * N_PROGRAMS // 10, (block + 1) * N_PROGRAMS // 10):
        program = make_program(seed)
        for k, (mine, theirs) in enumerate(zip(engine_gradients(program),
                                               autograd_gradients(program))):
            assert mine.shape == program[0][k].shape
            scale = max(1.0, float(np.max(np.abs(theirs))))
            np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-10 * scale,
                                       err_msg=f"program {seed}, input {k}: {program[1]}")
