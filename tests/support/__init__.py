"""Helpers the tests share, one of each: hypothesis strategies and their profile
(`strategies`), gradient checks at float64 precision (`checks`), random programs
(`programs`), throwaway books and builds (`books`), work started as the session starts
(`background`) and the PDF command's run (`pdf_job`). `tests/` is on sys.path (pytest's
rootdir conftest), so a test says `from support.strategies import values`.
"""
