#> training
"""Modules: layers that own their parameters, and models built from layers.

Introduced in chapter `training` (Modules, parameters and optimizers).

    Module      finds its parameters (and buffers) in its attributes, recursively
    Parameter   a leaf Tensor that an optimizer should train
    Linear      z = x W + b, with W stored (in, out): PyTorch stores (out, in)
    ReLU, Tanh, Sigmoid, Sequential, MLP

A module's `forward(x)` is ordinary engine code: calling the module records
the graph like any other operation, so `loss.backward()` reaches every
parameter and an optimizer updates them.
"""

import numpy as np

from .tensor import Tensor


def zero_grad(parameters, set_to_none=True):
    """Forget the grads: None (PyTorch's default), so the next backward makes them
    without adding to zeros; or, with set_to_none=False, arrays of zeros. Leaves
    accumulate, so a training loop calls this before every backward."""
    for p in parameters:
        p.grad = None if set_to_none else np.zeros(p.shape)


class Parameter(Tensor):
    """A leaf that needs a grad and belongs to a module: what optimizers update."""

    def __init__(self, data):
        super().__init__(data, requires_grad=True)


class Module:
    """A layer or a model: parameters and sub-modules are found in its attributes."""

    def __init__(self):
        self.training = True
        self.buffers = {}  # arrays saved with the model but never trained

    def __call__(self, x):
        return self.forward(x)

    def forward(self, x):
        raise NotImplementedError(f"{type(self).__name__} must define forward(x)")

    def named_modules(self, prefix=""):
        """(name, module) for this module and every sub-module, depth first, in attribute order.

        Sub-modules are found in attributes and in lists or tuples of them (`layers.0.`).
        """
        named = [(prefix, self)]
        for name, value in vars(self).items():
            if isinstance(value, Module):
                named.extend(value.named_modules(prefix + name + "."))
            elif isinstance(value, (list, tuple)):
                for i, item in enumerate(value):
                    if isinstance(item, Module):
                        named.extend(item.named_modules(f"{prefix}{name}.{i}."))
        return named

    def named_parameters(self, prefix=""):
        """(name, parameter) pairs: each module's own, module by module, as PyTorch orders them."""
        return [(module_name + name, value)
                for module_name, module in self.named_modules(prefix)
                for name, value in vars(module).items() if isinstance(value, Parameter)]

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def modules(self):
        """This module and every sub-module, depth first."""
        return [module for _, module in self.named_modules()]

    def zero_grad(self, set_to_none=True):
        """Forget the grads of every parameter (`zero_grad` above)."""
        zero_grad(self.parameters(), set_to_none)

    def train(self, mode=True):
        for module in self.modules():
            module.training = mode
        return self

    def eval(self):
        return self.train(False)

    # -- saving and loading ------------------------------------------------------

    def state_dict(self):
        """{name: array}: copies of every parameter and buffer, sub-modules' names dotted."""
        state = {name: np.array(p.data) for name, p in self.named_parameters()}
        for module_name, module in self.named_modules():
            for name, array in module.buffers.items():
                state[module_name + name] = np.array(array)
        return state

    def load_state_dict(self, state):
        """Copy arrays into parameters and buffers; names and shapes must match."""
        own = self.state_dict()
        missing = sorted(set(own) - set(state))
        unexpected = sorted(set(state) - set(own))
        if missing or unexpected:
            raise KeyError(f"load_state_dict: missing {missing}, "
                           f"unexpected {unexpected}")
        for name, array in own.items():
            if np.shape(state[name]) != array.shape:
                raise ValueError(
                    f"load_state_dict: '{name}' has shape {array.shape} in the "
                    f"model and {np.shape(state[name])} in the file")
        for name, p in self.named_parameters():
            p.data[...] = state[name]  # in place: the parameter keeps its array
        for module_name, module in self.named_modules():
            for name in module.buffers:
                array = state[module_name + name]
                module.buffers[name] = np.array(array, dtype=np.float64)

    def save(self, path):
        np.savez(path, **self.state_dict())

    def load(self, path):
        with np.load(path, allow_pickle=False) as file:  # arrays only, never code
            self.load_state_dict({name: file[name] for name in file.files})


class Linear(Module):
    """z = x W + b for x of shape (batch, fan_in).

    W is stored (fan_in, fan_out), so that the forward pass is `x @ W` with no
    transpose, as in chapter `shapes`; torch.nn.Linear stores its weight
    (fan_out, fan_in) and computes x W^T + b, so a PyTorch weight loads here
    transposed. Initialisation is PyTorch's default: W and b drawn from
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)), W first, from the Generator `rng`.
    """

    def __init__(self, fan_in, fan_out, rng, bias=True):
        super().__init__()
        #> errors
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"Linear: rng must be a NumPy Generator, such as "
                            f"np.random.default_rng(0); got {type(rng).__name__}")
        #> training
        bound = 1.0 / np.sqrt(fan_in)
        self.weight = Parameter(rng.uniform(-bound, bound, size=(fan_in, fan_out)))
        self.bias = None
        if bias:
            self.bias = Parameter(rng.uniform(-bound, bound, size=fan_out))

    def forward(self, x):
        y = x @ self.weight
        return y + self.bias if self.bias is not None else y


class ReLU(Module):
    def forward(self, x):
        return x.relu()


class Tanh(Module):
    def forward(self, x):
        return x.tanh()


class Sigmoid(Module):
    def forward(self, x):
        return x.sigmoid()


class Standardize(Module):
    """(x - mean) / std with mean and std stored as buffers: saved, never trained."""

    def __init__(self, mean, std):
        super().__init__()
        self.buffers["mean"] = np.array(mean, dtype=np.float64)
        self.buffers["std"] = np.array(std, dtype=np.float64)

    def forward(self, x):
        return (x - self.buffers["mean"]) / self.buffers["std"]


class Sequential(Module):
    """Layers applied one after the other; parameters named layers.0.weight, ..."""

    def __init__(self, *layers):
        super().__init__()
        self.layers = list(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def MLP(sizes, rng, activation=ReLU):
    """Linear layers of the given sizes with `activation` between them (none after the last)."""
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(Linear(fan_in, fan_out, rng))
        if i < len(sizes) - 2:
            layers.append(activation())
    return Sequential(*layers)
