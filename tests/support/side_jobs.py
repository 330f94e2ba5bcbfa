"""Tests that mostly wait on a child process, run beside the session in one thread.

A probe book's builds, the quick benchmark run, the child that builds a graph a million
operations deep: the test process would only wait on them, one after another, while
other tests could run. A module
defines `side_jobs(item)`, the `Job`s a test reads; tests/conftest.py starts every
selected test's jobs as the session starts, in one thread, one job at a time, and runs
those tests last, when their jobs are done. A test, or a fixture, calls `job.result()`:
the job's value, or the exception it raised (an assertion inside it fails the test
that reads it). Run alone, a test starts its job and waits for it.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import queue
import shutil
import tempfile
import threading
from pathlib import Path

_folders: list = []
atexit.register(lambda: [shutil.rmtree(f, ignore_errors=True) for f in _folders])


class Line:
    """A queue of jobs and the one thread that runs them in turn."""

    def __init__(self):
        self.queue, self.lock, self.thread = queue.Queue(), threading.Lock(), None

    def put(self, job):
        with self.lock:
            self.queue.put(job)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, daemon=True)
                self.thread.start()

    def _run(self):
        while True:
            job = self.queue.get()
            folder = Path(tempfile.mkdtemp(prefix=f"side-{job.name}-"))
            _folders.append(folder)
            try:
                job.future.set_result(job.function(folder))
            except BaseException as error:  # raised again by job.result(), in the test
                job.future.set_exception(error)


SESSION = Line()  # the session's jobs; a test of this module makes a line of its own


class Job:
    """`function(folder)`, run once per session in the side thread, in a fresh folder;
    `guess`: about how many seconds it takes (the longest start first)."""

    def __init__(self, name, function, guess=0.0, line=SESSION):
        self.name, self.function, self.guess, self.line = name, function, guess, line
        self.future = None
        self._lock = threading.Lock()

    def start(self):
        with self._lock:
            if self.future is None:
                self.future = concurrent.futures.Future()
                self.line.put(self)
        return self.future

    def result(self):
        return self.start().result()
