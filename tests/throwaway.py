"""Pieces for the throwaway books that tests build in temporary folders."""

# The front matter that makes a .md file a MyST notebook for myst-nb.
FRONT = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""
