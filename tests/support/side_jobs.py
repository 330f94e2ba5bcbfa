"""Tests that mostly wait on a child process, run beside the session in one thread.

A probe book's builds, the quick benchmark run, the child that builds a graph a million
operations deep: the test process only waits on them, one after another, while a core
is often idle (the README's test command used about 1.3 of the two cores). A module
defines `side_jobs(item)`, the `Job`s a test reads; tests/conftest.py starts every
selected test's jobs as the session starts, in one thread, one job at a time, and runs
those tests last, when their jobs are done. A test, or a fixture, calls `job.result()`:
the job's value, or the exception it raised (an assertion inside it fails the test
that reads it). Run alone, a test starts its job and waits for it, as before.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import queue
import shutil
import tempfile
import threading
from pathlib import Path

_queue: queue.Queue = queue.Queue()
_lock = threading.Lock()
_worker: list = []
_folders: list = []
atexit.register(lambda: [shutil.rmtree(f, ignore_errors=True) for f in _folders])


class Job:
    """`function(folder)`, run once per session in the side thread, in a fresh folder;
    `guess`: about how many seconds it takes (the longest start first)."""

    def __init__(self, name, function, guess=0.0):
        self.name, self.function, self.guess = name, function, guess
        self.future = None

    def start(self):
        with _lock:
            if self.future is None:
                self.future = concurrent.futures.Future()
                _queue.put(self)
                if not _worker:
                    _worker.append(threading.Thread(target=_run, daemon=True))
                    _worker[0].start()
        return self.future

    def result(self):
        return self.start().result()


def _run():
    while True:
        job = _queue.get()
        folder = Path(tempfile.mkdtemp(prefix=f"side-{job.name}-"))
        _folders.append(folder)
        try:
            job.future.set_result(job.function(folder))
        except BaseException as error:  # raised again by job.result(), in the test
            job.future.set_exception(error)
