"""What a sandbox's memory cgroup says about its limit, and how the trusted side decides that a
sandbox ran out of memory: the cgroup files as the kernel writes them (v1 and v2, in a folder
laid out like one), the docker launcher's report line and the pipe it travels on, where the
launcher finds a container's cgroup, and the decision for a timeout at the limit
(sandbox/limit_watch.py) on given samples with a given clock. The real engine and real cgroups:
tests/integration/test_docker_backend.py, tests/adversarial/test_resources.py."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox.backends.base import Confinement
from sandbox.backends.docker.memory import LauncherMemoryReport, container_memory_cgroup, decode, decode_cpu, encode
from sandbox.cgroups import MemoryEvents, read_cpu_seconds, read_memory_events
from sandbox.limit_watch import SAMPLE_EVERY_S, WINDOW_S, LimitWatch

MiB = 1 << 20
CONTAINER = "4e2e48848de1ef4e853e7a04d2bd8e3a07ca1c907a0f6d8e4642feb33d6ac170"

V2_STAT = "anon 1000\nfile 2000\nworkingset_refault_anon 3\nworkingset_refault_file 40\npgscan 7\n"
V1_STAT = ("cache 65011712\nrss 1000\nworkingset_refault_anon 0\nworkingset_refault_file 1507328\n"
           "pgmajfault 0\ntotal_workingset_refault_file 99\n")


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def v2(folder: Path, *, events: str = "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n", current: int = 10 * MiB,
       limit: str = str(64 * MiB)) -> Path:
    return write(folder, {"memory.events": events, "memory.stat": V2_STAT, "memory.current": str(current),
                          "memory.max": limit})


def v1(folder: Path, *, failcnt: int = 0, oom_kill: int = 0, usage: int = 10 * MiB, limit: int = 128 * MiB) -> Path:
    return write(folder, {"memory.failcnt": str(failcnt), "memory.memsw.failcnt": "0", "memory.stat": V1_STAT,
                          "memory.oom_control": f"oom_kill_disable 0\nunder_oom 0\noom_kill {oom_kill}\n",
                          "memory.usage_in_bytes": str(usage), "memory.limit_in_bytes": str(limit)})


# --- the cgroup files --------------------------------------------------------------------------


def test_v2_memory_events_and_refaults(tmp_path):
    events = read_memory_events(v2(tmp_path, events="low 0\nhigh 2\nmax 17\noom 1\noom_kill 1\noom_group_kill 1\n"))
    assert events == MemoryEvents(limit_hits=17, ooms=1, oom_kills=1, refaults=43, full=False)
    assert events.at_limit == 19


def test_v2_full_only_near_a_real_limit(tmp_path):
    assert read_memory_events(v2(tmp_path / "a", current=63 * MiB)).full  # within 4 MiB of 64 MiB
    assert not read_memory_events(v2(tmp_path / "b", current=59 * MiB)).full
    assert not read_memory_events(v2(tmp_path / "c", current=64 * MiB, limit="max")).full  # no limit at all


def test_v1_failcnt_oom_kill_and_refaults(tmp_path):
    events = read_memory_events(v1(tmp_path, failcnt=5, oom_kill=1, usage=132386816, limit=128 * MiB))
    assert events == MemoryEvents(limit_hits=5, ooms=0, oom_kills=1, refaults=1507328, full=True)


def test_a_folder_without_memory_files_or_gone_says_nothing(tmp_path):
    assert read_memory_events(write(tmp_path / "pids", {"pids.max": "16"})) is None
    assert read_memory_events(tmp_path / "gone") is None


def test_events_add_up_over_children():
    total = MemoryEvents(1, 0, 1, 10, False) + MemoryEvents(2, 3, 0, 5, True)
    assert total == MemoryEvents(3, 3, 1, 15, True)


def test_a_confinement_without_cgroups_or_report_knows_nothing():
    confinement = Confinement()
    assert confinement.memory_events() is None and not confinement.oom_killed()


# --- the launcher's report ------------------------------------------------------------------------


def test_a_report_line_round_trips():
    events = MemoryEvents(limit_hits=3, ooms=1, oom_kills=1, refaults=99, full=True)
    assert decode(encode(events).rstrip(b"\n")) == events


@pytest.mark.parametrize("line", [
    b"", b"not json", b"[1, 2]", b'{"limit_hits": 1}',
    b'{"limit_hits": -1, "ooms": 0, "oom_kills": 0, "refaults": 0, "full": false}',
    b'{"limit_hits": true, "ooms": 0, "oom_kills": 0, "refaults": 0, "full": false}',
    b'{"limit_hits": 1, "ooms": 0, "oom_kills": 0, "refaults": 0, "full": 1}',
])
def test_a_line_that_is_not_a_report_is_none(line):
    assert decode(line) is None


def test_the_runner_keeps_the_last_whole_line_and_never_waits():
    report = LauncherMemoryReport.pipe()
    write_fd = report.take_write_fd()
    assert write_fd is not None and report.take_write_fd() is None  # handed over once
    try:
        assert report.events() is None  # nothing written yet: no wait either
        os.write(write_fd, encode(MemoryEvents(limit_hits=1)) + encode(MemoryEvents(limit_hits=2)) + b"garbage\n")
        assert report.events() == MemoryEvents(limit_hits=2)  # a bad line changes nothing
        half = encode(MemoryEvents(oom_kills=1))
        os.write(write_fd, half[:10])
        assert report.events() == MemoryEvents(limit_hits=2)  # not a whole line yet
        os.write(write_fd, half[10:])
        assert report.events() == MemoryEvents(oom_kills=1)
    finally:
        os.close(write_fd)
    assert report.events() == MemoryEvents(oom_kills=1)  # the launcher is gone: the last line stays
    report.close()


def test_the_containers_cpu_time_rides_on_the_report_lines():
    """The launcher's lines also carry the container's CPU time (sandbox/cpu_time.py): the runner
    keeps the last one told; a line without it, or with a bad one, tells none."""
    line = encode(MemoryEvents(refaults=3), cpu_us=2_500_000)
    assert decode(line) == MemoryEvents(refaults=3) and decode_cpu(line) == 2_500_000
    assert decode_cpu(encode(MemoryEvents())) is None
    assert decode_cpu(b'{"cpu_us":-1}') is None and decode_cpu(b'{"cpu_us":1.5}') is None and decode_cpu(b"[]") is None
    report = LauncherMemoryReport.pipe()
    write_fd = report.take_write_fd()
    assert write_fd is not None
    try:
        assert report.cpu_seconds() is None
        os.write(write_fd, line + encode(MemoryEvents(refaults=4)))
        assert report.cpu_seconds() == 2.5  # the later line told no CPU time: the last one told stands
        os.write(write_fd, encode(MemoryEvents(refaults=4), cpu_us=7_000_000))
        assert report.cpu_seconds() == 7.0 and Confinement(memory_report=report).cpu_seconds() == 7.0
    finally:
        os.close(write_fd)
        report.close()


def test_cpu_time_of_a_cgroup_v1_and_v2(tmp_path):
    assert read_cpu_seconds(write(tmp_path / "v1", {"cpuacct.usage": "1500000000\n"})) == 1.5
    assert read_cpu_seconds(write(tmp_path / "v2", {"cpu.stat": "usage_usec 2500000\nuser_usec 2000000\n"})) == 2.5
    assert read_cpu_seconds(write(tmp_path / "v1cpu", {"cpu.stat": "nr_periods 0\nnr_throttled 0\n"})) is None
    assert read_cpu_seconds(tmp_path / "gone") is None


def test_a_report_never_handed_over_closes_both_ends():
    report = LauncherMemoryReport.pipe()
    write_fd = report._write_fd
    report.close()
    with pytest.raises(OSError):
        os.fstat(write_fd)


# --- where the launcher finds the container's cgroup ----------------------------------------------


def fake_proc(tmp_path: Path, pid: int, cgroup_lines: str, *, v2_host: bool = False) -> Path:
    proc = tmp_path / "proc"
    mount = tmp_path / "cgroup"
    write(proc / str(pid), {"cgroup": cgroup_lines})
    if v2_host:
        mountinfo = f"30 23 0:26 / {mount} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
    else:
        mountinfo = f"35 31 0:32 / {mount / 'memory'} rw,relatime - cgroup cgroup rw,memory\n"
    write(proc / "self", {"mountinfo": mountinfo})
    return proc


def test_the_containers_cgroup_v1_under_docker(tmp_path):
    lines = f"8:pids:/docker/{CONTAINER}\n4:memory:/docker/{CONTAINER}\n0::/docker/{CONTAINER}\n"
    proc = fake_proc(tmp_path, 4242, lines)
    folder = v1(tmp_path / "cgroup" / "memory" / "docker" / CONTAINER)
    assert container_memory_cgroup(4242, CONTAINER, proc=proc) == folder


def test_the_containers_cgroup_v2_under_systemd(tmp_path):
    path = f"/system.slice/docker-{CONTAINER}.scope"
    proc = fake_proc(tmp_path, 4242, f"0::{path}\n", v2_host=True)
    folder = v2(tmp_path / "cgroup" / "system.slice" / f"docker-{CONTAINER}.scope")
    assert container_memory_cgroup(4242, CONTAINER, proc=proc) == folder


def test_another_process_or_a_path_outside_the_view_is_never_taken(tmp_path):
    other = "f" * 64
    proc = fake_proc(tmp_path, 4242, f"4:memory:/docker/{other}\n")
    v1(tmp_path / "cgroup" / "memory" / "docker" / other)
    assert container_memory_cgroup(4242, CONTAINER, proc=proc) is None  # a pid of another pid namespace
    proc = fake_proc(tmp_path, 4343, f"4:memory:/../../docker/{CONTAINER}\n")
    assert container_memory_cgroup(4343, CONTAINER, proc=proc) is None  # outside this cgroup namespace
    assert container_memory_cgroup(9999, CONTAINER, proc=proc) is None  # no such process
    assert container_memory_cgroup(0, CONTAINER, proc=proc) is None


# --- a timeout at the limit -----------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def watch_of(readings: list[MemoryEvents | None], clock: Clock, step: float = 0.5) -> LimitWatch:
    """A phase whose cgroup read `readings` in turn, `step` seconds apart; the last read is at its end."""
    assert step >= SAMPLE_EVERY_S
    source = iter(readings)
    watch = LimitWatch(lambda: next(source), clock=clock)
    watch.restart()
    for _ in readings[1:-1]:
        clock.now += step
        watch.sample()
    clock.now += step
    return watch


def test_hits_of_the_limit_at_the_end_of_the_phase_are_out_of_memory():
    readings = [MemoryEvents(limit_hits=n) for n in (0, 0, 0, 0, 0, 0, 3, 9)]
    assert watch_of(readings, Clock()).held_at_limit()


def test_an_oom_kill_at_the_end_counts():
    assert watch_of([MemoryEvents(), MemoryEvents(), MemoryEvents(oom_kills=1)], Clock()).held_at_limit()


def test_the_limit_met_early_in_the_phase_then_nothing_is_a_plain_timeout():
    readings = [MemoryEvents(limit_hits=n) for n in (0, 4, 4, 4, 4, 4, 4, 4, 4)]  # 4 s of nothing after
    assert 0.5 * (len(readings) - 2) > WINDOW_S
    assert not watch_of(readings, Clock()).held_at_limit()


def test_hits_before_the_phase_are_not_its_doing():
    assert not watch_of([MemoryEvents(limit_hits=50)] * 3, Clock()).held_at_limit()


def test_thrashing_at_a_full_limit_without_counted_hits_is_out_of_memory():
    """cgroup v1 with a failcnt that stays 0: refaults grow while the usage is at the limit."""
    readings = [MemoryEvents(refaults=n, full=True) for n in (0, 100, 900, 5000, 20000)]
    assert watch_of(readings, Clock()).held_at_limit()


def test_refaults_below_the_limit_are_the_hosts_pressure_not_the_sandboxs():
    readings = [MemoryEvents(refaults=n, full=False) for n in (0, 100, 900, 5000, 20000)]
    assert not watch_of(readings, Clock()).held_at_limit()


def test_nothing_known_is_a_plain_timeout():
    assert not watch_of([None, None, None], Clock()).held_at_limit()
    assert not watch_of([None, None, MemoryEvents(limit_hits=9)], Clock()).held_at_limit()  # one reading: no change


def test_a_new_phase_forgets_the_last_ones_hits():
    clock = Clock()
    readings = iter([MemoryEvents(limit_hits=1), MemoryEvents(limit_hits=8), MemoryEvents(limit_hits=8),
                     MemoryEvents(limit_hits=8)])
    watch = LimitWatch(lambda: next(readings), clock=clock)
    watch.restart()
    clock.now += 1
    watch.sample()  # 1 -> 8 in the first phase
    clock.now += 1
    watch.restart()  # the next phase starts at 8
    clock.now += 1
    assert not watch.held_at_limit()


def test_samples_closer_than_the_interval_are_not_taken():
    clock, reads = Clock(), []

    def source() -> MemoryEvents:
        reads.append(clock.now)
        return MemoryEvents()

    watch = LimitWatch(source, clock=clock)
    watch.restart()
    for _ in range(9):
        clock.now += SAMPLE_EVERY_S / 10
        watch.sample()
    assert len(reads) == 1  # the phase's first only
    clock.now += SAMPLE_EVERY_S
    watch.sample()
    assert len(reads) == 2
