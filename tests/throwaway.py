"""Kept so that `from throwaway import FRONT` still works: the helpers for throwaway books
live in tests/support/books.py (FRONT, make_book, run_build, line_of, fence_of)."""

from support.books import FRONT  # noqa: F401
