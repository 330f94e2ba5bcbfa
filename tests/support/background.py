"""Work a test module starts as the session starts and its tests read last.

Most of the test command runs on one core; a module whose tests wait on long
subprocesses (the numerical-environment matrix, the second clean build, the engine
tests on each chapter's snapshot, the PDF and the downloaded notebooks' run, which
first wait for the session's site) defines `reads_background(item)` and
`start_in_background(build)`, and tests/conftest.py calls the second once the session
is collected and runs the tests the first names last. `start` runs a function in a
daemon thread (a session that stops early does not wait for it) and returns its future.

The session's own tests are the test command's longest path: the site's build, then the
tests that read the site. Work beside them runs at a lower priority (`BESIDE`; the matrix
of tests/test_numerics.py lower still), so that it takes the CPU they leave idle instead
of slowing them down, and ends while they run.
"""

import concurrent.futures
import os
import sys
import threading

BESIDE = 5  # the niceness of work beside the session (CFS: about a third of a busy core's share)


def lower(niceness=BESIDE):
    """Lower the calling thread's priority, and so that of every process it starts from now
    on (Linux keeps a nice value per thread, and a child inherits its thread's); never the
    session's main thread, and nowhere else (elsewhere it is the whole process's)."""
    main = threading.current_thread() is threading.main_thread()
    if niceness and sys.platform == "linux" and not main:
        os.nice(niceness)


def start(function, *args, niceness=0):
    """A future of `function(*args)`, run in a daemon thread from now on, lowered by
    `niceness`."""
    future = concurrent.futures.Future()

    def run():
        lower(niceness)
        try:
            future.set_result(function(*args))
        except BaseException as error:  # raised again by future.result(), in the test
            future.set_exception(error)

    threading.Thread(target=run, daemon=True).start()
    return future


def start_each(function, argument_lists, niceness=0):
    """Futures of `function(*args)` for each args, run one after another in one thread,
    lowered by `niceness`."""
    futures = [concurrent.futures.Future() for _ in argument_lists]

    def run():
        lower(niceness)
        for future, args in zip(futures, argument_lists):
            try:
                future.set_result(function(*args))
            except BaseException as error:
                future.set_exception(error)

    threading.Thread(target=run, daemon=True).start()
    return futures
