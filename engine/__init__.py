"""engine: the small NumPy autodiff package that the book builds chapter by chapter.

Each module is introduced by one chapter and says which in its docstring:

    tensor  Tensor, a NumPy array with a grad and a backward closure  (chapter `tensors`)
    figures drawing helpers for the book's figures, not part of autodiff
"""

from .tensor import Tensor

__all__ = ["Tensor"]
