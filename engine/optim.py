#> training
"""Optimizers: SGD (with momentum) and Adam, with PyTorch's update rules.

Introduced in chapter `training` (Modules, parameters and optimizers).

An optimizer holds a list of parameters and, for each, the state its rule
needs (a momentum buffer; Adam's two moment estimates). `step()` reads every
`p.grad` and changes `p.data` in place, skipping a parameter whose grad is None;
`zero_grad()` forgets the grads (sets them to None, as PyTorch does by default),
because leaves accumulate across backward sweeps.
"""

import numpy as np

from .nn import zero_grad


class Optimizer:
    def __init__(self, params):
        #< training, replaced in errors
        # self.params = list(params)
        #> errors
        name = type(self).__name__
        if callable(params) or hasattr(params, "parameters"):  # the method, or the model
            what = (f"the method {params.__qualname__}, not its result" if callable(params)
                    and not hasattr(params, "parameters") else f"a {type(params).__name__} module")
            raise TypeError(f"{name}: params must be a list of tensors, such as "
                            f"model.parameters() with the brackets; got {what}")
        try:
            self.params = list(params)
        except TypeError:
            raise TypeError(f"{name}: params must be a list of tensors, such as "
                            f"model.parameters(); got {type(params).__name__}") from None
        if not self.params:
            raise ValueError(f"{name} got an empty list of parameters: a Module finds the "
                             "parameters and layers kept in its attributes, and layers in "
                             "lists or tuples, but not parameters in a list, nor anything in a dict")
        for i, p in enumerate(self.params):
            if not hasattr(p, "grad") or not hasattr(p, "data"):
                raise TypeError(f"{name}: parameter {i} is a {type(p).__name__}, not a tensor")

    #> errors
    def _number(self, name, value):
        """`value` as a float, or a TypeError naming the optimizer and the hyperparameter."""
        if (isinstance(value, (bool, str)) or np.ndim(value) != 0
                or not np.issubdtype(np.asarray(value).dtype, np.number)):
            raise TypeError(f"{type(self).__name__}: {name} must be a number, got {value!r}")
        return float(value)

    #> training
    def zero_grad(self, set_to_none=True):
        """Forget the grads of every parameter (`engine.nn.zero_grad`)."""
        zero_grad(self.params, set_to_none)


class SGD(Optimizer):
    """torch.optim.SGD: g = grad + wd p; m = mu m + (1 - dampening) g; p -= lr (g + mu m or m).

    The momentum buffer m starts as the first g itself (not zero), as in PyTorch.
    """

    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
        super().__init__(params)
        #< training, replaced in errors
        # self.lr, self.momentum, self.dampening = float(lr), float(momentum), float(dampening)
        #> errors
        self.lr, self.momentum = self._number("lr", lr), self._number("momentum", momentum)
        self.dampening = self._number("dampening", dampening)
        #> training
        if nesterov and (self.momentum <= 0 or self.dampening != 0):
            raise ValueError("Nesterov momentum needs momentum > 0 and dampening = 0")
        #< training, replaced in errors
        # self.weight_decay, self.nesterov = float(weight_decay), nesterov
        #> errors
        self.weight_decay, self.nesterov = self._number("weight_decay", weight_decay), nesterov
        #> training
        self.buffers = [None] * len(self.params)

    def step(self):
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue  # no gradient reached it: left alone, as in PyTorch
            g = p.grad + self.weight_decay * p.data  # the gradient of wd/2 |p|^2 added
            if self.momentum != 0:
                if self.buffers[i] is None:
                    self.buffers[i] = np.array(g)  # the first step: the buffer is g
                else:
                    self.buffers[i] = (self.momentum * self.buffers[i]
                                       + (1 - self.dampening) * g)
                m = self.buffers[i]
                g = g + self.momentum * m if self.nesterov else m
            p.data -= self.lr * g


class Adam(Optimizer):
    """torch.optim.Adam (amsgrad off): moments of g = grad + wd p, with bias correction.

    m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g^2,  t = the parameter's steps so far,
    p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params)
        #< training, replaced in errors
        # self.lr, self.eps, self.betas = float(lr), float(eps), tuple(float(b) for b in betas)
        # self.weight_decay = float(weight_decay)
        #> errors
        self.lr, self.eps = self._number("lr", lr), self._number("eps", eps)
        self.betas = tuple(self._number("betas", b) for b in betas)
        self.weight_decay = self._number("weight_decay", weight_decay)
        #> training
        self.m = [np.zeros(p.shape) for p in self.params]
        self.v = [np.zeros(p.shape) for p in self.params]
        self.steps = [0] * len(self.params)  # per parameter, as in PyTorch

    def step(self):
        beta1, beta2 = self.betas
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue  # no gradient reached it: left alone, its step count too
            self.steps[i] += 1
            t = self.steps[i]
            correction1 = 1 - beta1**t  # the moments start at 0: undo that bias
            correction2 = 1 - beta2**t
            g = p.grad + self.weight_decay * p.data
            self.m[i] = beta1 * self.m[i] + (1 - beta1) * g
            self.v[i] = beta2 * self.v[i] + (1 - beta2) * g * g
            denominator = np.sqrt(self.v[i]) / np.sqrt(correction2) + self.eps
            p.data -= (self.lr / correction1) * self.m[i] / denominator
