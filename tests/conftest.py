"""Shared pytest options and the chapter marker. (Browser fixtures: tests/browser/conftest.py.)

`slow` marks what builds a book, drives the browser or runs the book in every
numerical environment (every browser test is slow too): `pytest -m "not slow"` is the quick run while
developing; plain `pytest` (the README's command, and CI) runs everything. The order
is random (pytest-randomly, tests/requirements.txt): `--randomly-seed=N` repeats the
order a run printed, `-p no:randomly` keeps the files' order.

An engine test says which chapter's engine it needs: `pytestmark =
pytest.mark.chapter("tensors")` for a module, `@pytest.mark.chapter("errors")` for one
test. The whole suite runs on the installed package (the engine as of the last
chapter), as always; tests/test_snapshots.py also runs every marked test on the
snapshot of its own chapter (`--engine-chapter tensors`, with the snapshot first on
PYTHONPATH), where only the tests marked for that chapter are kept. A test marked
`chapter("tensors", only=True)` checks something the later engine no longer does
(two shapes that raise before broadcasting exists), so it runs on its snapshot only.
"""

import os

import pytest
from hypothesis import settings

from support.strategies import PROFILE

# Every hypothesis test, whatever its own @settings, inherits the shared profile:
# derandomized (the same examples on every run and machine), no example database.
settings.register_profile("book", **PROFILE)
settings.load_profile("book")


def pytest_addoption(parser):
    parser.addoption(
        "--update-expect",
        action="store_true",
        default=False,
        help="chapter verifier: rewrite each differing or missing `expect:` block in place "
        "with what the cell printed (only those lines change), then re-check",
    )
    parser.addoption(
        "--engine-chapter",
        default=None,
        help="keep only the tests marked chapter(NAME): the snapshot of that chapter is the "
        "`engine` on PYTHONPATH (tests/test_snapshots.py runs this)",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "chapter(name, only=False): the engine of chapter `name` is what this "
        "test needs (tests/conftest.py)")


def chapter_of(item):
    marker = item.get_closest_marker("chapter")
    return (marker.args[0], marker.kwargs.get("only", False)) if marker else (None, False)


@pytest.hookimpl(tryfirst=True)  # before -m reads the markers
def pytest_collection_modifyitems(config, items):
    wanted = config.getoption("--engine-chapter")
    kept, dropped = [], []
    for item in items:
        if item.get_closest_marker("browser") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)  # the browser tests build the site first
        chapter, only = chapter_of(item)
        keep = chapter == wanted if wanted else not only
        (kept if keep else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    # what a test module starts in the background as the session starts (the matrix of
    # tests/test_numerics.py, the second build of tests/test_determinism.py, the side jobs
    # of tests/support/side_jobs.py) is read by its tests last; before them come the tests
    # that read the session's site, after those that do not, so that the site builds in a
    # thread while those run instead of the session waiting for it (a stable sort keeps
    # the random order within each group)
    items.sort(key=lambda item: (reads_background(item), reads_build(item)))


def reads_background(item):
    return starts_background(item) or bool(side_jobs_of(item))


def starts_background(item):
    """The test reads what its module's `start_in_background` starts."""
    check = getattr(getattr(item, "module", None), "reads_background", None)
    return bool(check and check(item))


def side_jobs_of(item):
    """The jobs (tests/support/side_jobs.py) the test reads, run beside the session."""
    jobs = getattr(getattr(item, "module", None), "side_jobs", None)
    return list(jobs(item)) if callable(jobs) else []


# the fixtures that build the session's site (tests/browser/site_pages.py) or read it
SITE_FIXTURES = {"site", "server", "archive", "two_builds", "fresh_run", "pdf_text"}
# the chapter tests read the build's execution cache: run while the session's site
# builds, one would run its chapter a second time, beside the build
READS_BUILD_CACHE = {"test_chapters"}
_site_build = []  # the future of the session's site build, once started


def needs_site(item):
    """The test reads the session's site: through a fixture, or by calling build_site."""
    if SITE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    code = getattr(getattr(item, "function", None), "__code__", None)
    return bool(code and "build_site" in code.co_names)


def reads_build(item):
    """The test reads the session's site, or the execution cache its build fills."""
    module = getattr(getattr(item, "module", None), "__name__", None)
    return needs_site(item) or module in READS_BUILD_CACHE


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    modules = {item.module for item in session.items if starts_background(item)}
    for module in sorted(modules, key=lambda m: m.__name__):
        module.start_in_background(session.config.rootpath / "_build")
    # the tests that wait on a child process (probe builds, the quick benchmark run), one
    # job at a time in a thread of their own: a core is often idle while the tests run
    jobs = {id(job): job for item in session.items for job in side_jobs_of(item)}
    for job in sorted(jobs.values(), key=lambda job: -job.guess):  # the longest first
        job.start()
    # the site, built in a thread from now on for the tests that read it (they run after
    # the others); the PDF and the downloads' runs ask for it from their threads and wait
    # for this build (tests/browser/site_pages.py builds once per process)
    if not os.environ.get("BOOK_SITE_DIR") and any(needs_site(i) for i in session.items):
        from site_pages import build_site
        from support import background

        _site_build.append(background.start(build_site))


def pytest_runtest_setup(item):
    """A chapter test waits for a site build under way, then reads the chapter it stored
    (if the build failed, the verifier runs the chapter itself, as without a build)."""
    module = getattr(getattr(item, "module", None), "__name__", None)
    if _site_build and module in READS_BUILD_CACHE:
        _site_build[0].exception()  # waits; the build's failure is the site tests' to report
