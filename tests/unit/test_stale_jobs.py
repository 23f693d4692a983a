from __future__ import annotations

import os

from sandbox.runner import JOB_PREFIX, remove_stale_jobs


def test_job_folders_of_dead_runners_are_removed(tmp_path):
    dead = tmp_path / f"{JOB_PREFIX}999999999-abc"  # no such pid
    alive = tmp_path / f"{JOB_PREFIX}{os.getppid()}-def"
    other = tmp_path / "kg-job-unrelated"
    for folder in (dead, alive, other):
        folder.mkdir()
        (folder / "submission.py").write_text("x = 1\n")
    assert remove_stale_jobs(tmp_path) == 1
    assert not dead.exists() and alive.exists() and other.exists()
