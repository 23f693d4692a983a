"""The lanes' queue of runs (service/worker/lanes.py, FairRuns): fast threads claim up to
max_waiting_runs ahead of the sandbox lanes, so one course's burst filled that queue and another
course's run, claimed at once by the fair claim, still waited behind all of it."""
from __future__ import annotations

import threading
from typing import Any

from service.worker.lanes import FairRuns


def _queue(*runs: tuple[str, str]) -> FairRuns:
    queue = FairRuns()
    for course, name in runs:
        grading: Any = name  # the queue only hands back what it was given
        queue.put(course, grading)
    return queue


def test_one_lane_takes_turns_between_courses_and_keeps_each_course_in_order():
    queue = _queue(("a", "a1"), ("a", "a2"), ("a", "a3"), ("a", "a4"), ("b", "b1"), ("b", "b2"))
    order = []
    for _ in range(6):  # one lane thread: each run ends before the next starts
        order.append(run := queue.get())
        queue.done(str(run)[0])
    assert order == ["a1", "b1", "a2", "b2", "a3", "a4"]


def test_a_free_lane_takes_the_course_with_fewest_runs_in_a_lane():
    queue = _queue(("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"))
    assert [queue.get(), queue.get()] == ["a1", "b1"]  # two lanes busy, one run of each course
    queue.done("b")  # b's run ends first: a has one in a lane, nothing of b waits
    assert queue.get() == "a2"


def test_stop_one_wakes_one_waiting_lane_thread_with_none():
    queue = FairRuns()
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.append(queue.get()))
    thread.start()
    queue.stop_one()
    thread.join(timeout=10)
    assert not thread.is_alive() and got == [None]
