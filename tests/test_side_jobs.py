"""The side jobs (tests/support/side_jobs.py): one run per session, one at a time, in a
folder of their own; what a job raises fails the test that reads it."""

import threading

import pytest

from support.side_jobs import Job, Line


def test_a_job_runs_once_in_its_own_folder_and_one_job_at_a_time():
    runs, running, overlapped = [], [], []

    def work(folder):
        overlapped.append(bool(running))
        running.append(folder)
        runs.append(folder)
        threading.Event().wait(0.05)
        running.remove(folder)
        return folder

    line = Line()  # not the session's, whose jobs would run first
    first, second = Job("first", work, line=line), Job("second", work, line=line)
    for job in (first, second, first):
        job.start()
    assert first.result() != second.result() and first.result().is_dir()
    assert len(runs) == 2 and first.result() == runs[0]
    assert overlapped == [False, False]


def test_what_a_job_raises_is_raised_by_its_result():
    def fails(folder):
        raise AssertionError("inside the job")  # as a failed assert in a probe

    with pytest.raises(AssertionError, match="inside the job"):
        Job("fails", fails, line=Line()).result()
