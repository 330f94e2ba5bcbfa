"""engine: the small NumPy autodiff package that the book builds chapter by chapter.

Each module is introduced by one chapter and says which in its docstring:

    numeric numerical_grad, numerical_jacobian: central differences  (chapter `chain-rule`)
    scalar  Var, one float with a grad and a backward closure  (chapter `scalar-engine`)
    dual    Dual, a value and a tangent: forward mode  (chapter `forward-mode`)
    tensor  Tensor, a NumPy array with a grad and a backward closure  (chapter `tensors`)
    shapes  broadcast_shape, unbroadcast: broadcasting and its VJP  (chapter `shapes`)
    gradcheck  gradcheck, GradcheckError: Jacobians against central differences  (chapter `gradcheck`)
    functional  logsumexp, log_softmax, softmax, cross_entropy, nll_loss  (chapter `losses`)
    nn      Module, Parameter, Linear, ReLU, Tanh, Sigmoid, Sequential, MLP  (chapter `training`)
    optim   SGD, Adam with PyTorch's update rules  (chapter `training`)
    memory  no_grad, VersionedArray, saved_arrays, checkpoint: memory and in-place safety  (chapter `memory`)
    figures drawing helpers for the book's figures, not part of autodiff
"""

from .numeric import numerical_grad, numerical_jacobian
from .scalar import Var
from .dual import Dual
from .tensor import Tensor
from .shapes import broadcast_shape, unbroadcast
from .gradcheck import gradcheck, GradcheckError
from . import functional

__all__ = ["numerical_grad", "numerical_jacobian", "Var", "Dual", "Tensor"]
__all__ += ["broadcast_shape", "unbroadcast", "gradcheck", "GradcheckError", "functional"]
from .memory import no_grad, checkpoint, saved_arrays, saved_nbytes
from . import nn, optim, memory

__all__ += ["no_grad", "checkpoint", "saved_arrays", "saved_nbytes", "nn", "optim", "memory"]
