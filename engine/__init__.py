#> chain-rule
"""engine: the small NumPy autodiff package that the book builds chapter by chapter.

Each module says in its docstring which chapter introduces it, and every line of
the package belongs to one chapter (the `#>` markers): the engine as of a chapter
is the package with only the lines of that chapter and the ones before it.
"""

from .numeric import numerical_grad, numerical_jacobian

__all__ = ["numerical_grad", "numerical_jacobian"]
#> scalar-engine
from .scalar import Var

__all__ += ["Var"]
#> forward-mode
from .dual import Dual

__all__ += ["Dual"]
#> tensors
from .tensor import Tensor

__all__ += ["Tensor"]
#> shapes
from .shapes import broadcast_shape, unbroadcast

__all__ += ["broadcast_shape", "unbroadcast"]
#> gradcheck
from .gradcheck import gradcheck, GradcheckError

__all__ += ["gradcheck", "GradcheckError"]
#> losses
from . import functional

__all__ += ["functional"]
#> higher-order
from .higher import grad
from . import higher
from .gradcheck import gradgradcheck

__all__ += ["grad", "higher", "gradgradcheck"]
#> training
from . import nn, optim

__all__ += ["nn", "optim"]
#> memory
from .memory import no_grad, checkpoint, saved_arrays, saved_nbytes
from . import memory

__all__ += ["no_grad", "checkpoint", "saved_arrays", "saved_nbytes", "memory"]
#> catalogue
from .catalogue import concatenate, maximum, minimum, stack, where

__all__ += ["concatenate", "maximum", "minimum", "stack", "where"]
