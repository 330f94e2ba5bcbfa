"""Work a test module starts as the session starts and its tests read last.

Most of the test command runs on one core; a module whose tests wait on long
subprocesses (the numerical-environment matrix, the second clean build, the engine
tests on each chapter's snapshot, the PDF and the downloaded notebooks' run, which
first wait for the session's site) defines `reads_background(item)` and
`start_in_background(build)`, and tests/conftest.py calls the second once the session
is collected and runs the tests the first names last. `start` runs a function in a
daemon thread (a session that stops early does not wait for it) and returns its future.
"""

import concurrent.futures
import threading


def start(function, *args):
    """A future of `function(*args)`, run in a daemon thread from now on."""
    future = concurrent.futures.Future()

    def run():
        try:
            future.set_result(function(*args))
        except BaseException as error:  # raised again by future.result(), in the test
            future.set_exception(error)

    threading.Thread(target=run, daemon=True).start()
    return future


def start_each(function, argument_lists):
    """Futures of `function(*args)` for each args, run one after another in one thread."""
    futures = [concurrent.futures.Future() for _ in argument_lists]

    def run():
        for future, args in zip(futures, argument_lists):
            try:
                future.set_result(function(*args))
            except BaseException as error:
                future.set_exception(error)

    threading.Thread(target=run, daemon=True).start()
    return futures
