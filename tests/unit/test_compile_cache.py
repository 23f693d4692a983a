"""The shared compile cache: what publish accepts from a staging folder, and how the in-sandbox
cache manager layers the shared folder under the private one (with Triton's real FileCacheManager)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sandbox.compile_cache import STAGING, SharedCompileCache

KEY = "A" * 52
OTHER = "B" * 52


def _key_folder(parent: Path, name: str, files: dict[str, bytes]) -> Path:
    folder = parent / name
    folder.mkdir()
    for filename, data in files.items():
        (folder / filename).write_bytes(data)
    return folder


def test_publish_moves_new_key_folders_and_drops_everything_else(tmp_path):
    cache = SharedCompileCache(tmp_path / "cache")
    staging = cache.new_staging()
    _key_folder(staging, KEY, {"kernel.cubin": b"\x7fELF", "__grp__kernel.json": b"{}"})
    planted = _key_folder(staging, OTHER, {"kernel.cubin": b"x"})
    os.symlink("/etc/passwd", planted / "kernel.json")  # a link inside a key folder
    os.symlink(str(tmp_path), staging / ("C" * 52))  # a link as a key folder
    os.mkfifo(staging / ("D" * 52))
    _key_folder(staging, "not a key", {"x": b"y"})
    nested = _key_folder(staging, "E" * 52, {})
    (nested / "tmp.pid_1_x").mkdir()  # Triton's unfinished write

    published = cache.publish(staging)

    assert (published.added, published.refused) == (1, 5)
    assert sorted(p.name for p in cache.root.iterdir() if p.name != STAGING) == [KEY]
    assert (cache.root / KEY / "kernel.cubin").read_bytes() == b"\x7fELF"
    assert not staging.exists(), "the staging folder is removed after publishing"
    assert Path("/etc/passwd").exists() and tmp_path.exists(), "nothing a link pointed at was touched"


def test_the_first_published_folder_for_a_key_stays(tmp_path):
    cache = SharedCompileCache(tmp_path / "cache")
    first, second = cache.new_staging(), cache.new_staging()
    _key_folder(first, KEY, {"kernel.cubin": b"first"})
    _key_folder(second, KEY, {"kernel.cubin": b"second"})
    assert cache.publish(first).added == 1
    assert cache.publish(second).already == 1
    assert (cache.root / KEY / "kernel.cubin").read_bytes() == b"first"


def test_publish_keeps_to_the_size_caps(tmp_path):
    cache = SharedCompileCache(tmp_path / "cache", max_total_bytes=100, max_entry_bytes=60)
    staging = cache.new_staging()
    _key_folder(staging, KEY, {"a": b"x" * 50})
    _key_folder(staging, OTHER, {"a": b"x" * 70})  # over the entry cap
    assert cache.publish(staging).added == 1
    staging = cache.new_staging()
    _key_folder(staging, "C" * 52, {"a": b"x" * 55})  # would pass the total cap
    assert cache.publish(staging).refused == 1
    assert cache.entries() == 1 and cache.size_bytes() == 50


def test_staging_folders_of_dead_processes_are_removed(tmp_path):
    root = tmp_path / "cache"
    SharedCompileCache(root)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = root / STAGING / f"{dead.pid}-abc"
    stale.mkdir()
    mine = root / STAGING / f"{os.getpid()}-abc"
    mine.mkdir()
    SharedCompileCache(root)
    assert not stale.exists() and mine.exists()


def test_the_sandbox_cache_manager_reads_the_shared_folder_first(tmp_path):
    """Run in a child with the environment the bwrap backend sets, against Triton itself."""
    shared, private = tmp_path / "shared", tmp_path / "private"
    script = f'''
import json, os, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2] / "sandbox")!r})
os.environ["TRITON_CACHE_DIR"] = {str(shared)!r}
from triton.runtime.cache import FileCacheManager
writer = FileCacheManager("{KEY}")  # the trusted compile run writes straight into the shared folder
path = writer.put(b"cubin", "k.cubin")
meta = writer.put("{{}}", "k.json")
writer.put_group("k.json", {{"k.cubin": path, "k.json": meta}})  # as Triton's compile(): the metadata file too
relocated = FileCacheManager("{OTHER}")  # a group whose paths do not lead here (a compile run reads elsewhere)
relocated.put_group("r.json", {{"r.json": "/triton-shared/{OTHER}/r.json"}})
os.environ["TRITON_CACHE_DIR"] = {str(private)!r}
os.environ["KERNELGRADE_SHARED_TRITON_CACHE"] = {str(shared)!r}
import shared_triton_cache as c
reader = c.SharedFirstCacheManager("{KEY}")
found = reader.get_group("k.json")
missing = reader.get_group("other.json")
unresolved = c.SharedFirstCacheManager("{OTHER}").get_group("r.json")
written = reader.put(b"mine", "other.cubin")
reader.put_group("other.json", {{"other.cubin": written}})
print(json.dumps({{"found": found, "file": reader.get_file("k.cubin"), "missing": missing, "unresolved": unresolved,
                  "written": written, "own": reader.get_group("other.json"), "counts": c.counts}}))
'''
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    result = json.loads(out)
    assert result["found"] == {"k.cubin": str(shared / KEY / "k.cubin"), "k.json": str(shared / KEY / "k.json")}
    assert result["file"] == str(shared / KEY / "k.cubin")
    assert result["missing"] is None
    assert result["unresolved"] is None, "a group whose metadata does not resolve is a miss, not a hit"
    assert result["written"].startswith(str(private / KEY)), "writes go to the private cache only"
    assert result["own"] == {"other.cubin": result["written"]}
    assert result["counts"] == {"shared_hits": 1, "compiled": 1}


def _run_in(backend, job_dir: Path, mode, command: list[str]) -> subprocess.CompletedProcess:
    """`command` under the backend's real command line (the harness swapped for it), with the
    file descriptors it passes (the seccomp filter)."""
    from sandbox.contract import Limits

    spec = backend.launch_spec(job_dir=job_dir, verdict_fd=1, mode=mode, device_index=0, limits=Limits())
    try:
        return subprocess.run([*spec.argv[: spec.argv.index(backend.python)], *command], capture_output=True,
                              text=True, timeout=60, pass_fds=spec.pass_fds)
    finally:
        for fd in spec.pass_fds:
            os.close(fd)


def test_grading_sandboxes_see_the_shared_cache_read_only(tmp_path):
    import shutil

    import pytest

    from sandbox.backends.base import TritonCacheMount
    from sandbox.backends.bwrap import BwrapBackend
    from sandbox.contract import DeviceMode

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    cache = SharedCompileCache(tmp_path / "cache")
    _key_folder(cache.root, KEY, {"k.cubin": b"shared"})
    job = tmp_path / "job"
    job.mkdir()
    base = BwrapBackend(python=sys.executable, hidden_paths=[])
    probe = ("cat /triton-shared/" + KEY + "/k.cubin; echo; "
             "touch /triton-shared/planted 2>/dev/null && echo WROTE; "
             "echo $TRITON_CACHE_DIR $KERNELGRADE_SHARED_TRITON_CACHE $TRITON_CACHE_MANAGER")

    reader = base.with_triton_cache(TritonCacheMount(cache.root))
    out = _run_in(reader, job, DeviceMode.gpu, ["/bin/sh", "-c", probe])
    assert out.stdout.split("\n") == [
        "shared", "/tmp/triton-cache /triton-shared shared_triton_cache:SharedFirstCacheManager", ""], out
    assert not (cache.root / "planted").exists()

    staging = cache.new_staging()  # a trusted compile run: Triton's own cache is the staging folder
    writer = base.with_triton_cache(TritonCacheMount(staging, writable=True))
    out = _run_in(writer, job, DeviceMode.gpu, ["/bin/sh", "-c", "touch /triton-shared/k && echo $TRITON_CACHE_DIR"])
    assert out.stdout.strip() == "/triton-shared" and (staging / "k").exists(), out

    # ... that reads the shared cache first (launchers and kernels already there), read-only, elsewhere.
    staging = cache.new_staging()
    writer = base.with_triton_cache(TritonCacheMount(staging, writable=True, reads=cache.root))
    probe = ("cat /triton-shared-read/" + KEY + "/k.cubin; echo; touch /triton-shared-read/planted 2>/dev/null "
             "&& echo WROTE; touch /triton-shared/k && echo $TRITON_CACHE_DIR $KERNELGRADE_SHARED_TRITON_CACHE "
             "$TRITON_CACHE_MANAGER")
    out = _run_in(writer, job, DeviceMode.gpu, ["/bin/sh", "-c", probe])
    assert out.stdout.split("\n") == [
        "shared", "/triton-shared /triton-shared-read shared_triton_cache:SharedFirstCacheManager", ""], out
    assert (staging / "k").exists() and not (cache.root / "planted").exists()

    out = _run_in(reader, job, DeviceMode.interpreter, ["/bin/sh", "-c", "ls /triton-shared; echo $TRITON_CACHE_DIR"])
    assert out.stdout.strip() == "/tmp/triton-cache", "the interpreter compiles nothing: no shared cache"


def test_a_docker_compile_run_reads_the_shared_cache_read_only_and_writes_its_staging_folder(tmp_path):
    """The docker backend's container specification (a pure function: no engine needed)."""
    from sandbox.backends.base import TritonCacheMount
    from sandbox.backends.docker.options import DockerOptions
    from sandbox.backends.docker.spec import ContainerView, container_spec
    from sandbox.contract import DeviceMode, Limits

    cache = SharedCompileCache(tmp_path / "cache")
    staging = cache.new_staging()
    view = ContainerView(python="/opt/venv/bin/python",
                         triton_cache=TritonCacheMount(staging, writable=True, reads=cache.root))
    kwargs = container_spec(job_dir=tmp_path / "job", mode=DeviceMode.gpu, device_index=0, limits=Limits(),
                            options=DockerOptions(image="kernelgrade:test"), view=view)["kwargs"]
    mounts = {m["Target"]: (m["Source"], m["ReadOnly"]) for m in kwargs["mounts"]}
    assert mounts["/triton-shared"] == (str(staging), False)
    assert mounts["/triton-shared-read"] == (str(cache.root), True)
    env = kwargs["environment"]
    assert env["TRITON_CACHE_DIR"] == "/triton-shared"
    assert env["KERNELGRADE_SHARED_TRITON_CACHE"] == "/triton-shared-read"


def test_the_staging_folders_of_compile_runs_share_one_unprivileged_probe(monkeypatch, tmp_path):
    """Root without a pids cgroup probes whether an unprivileged uid can start each distinct launch;
    compile runs differ only in their staging folder's name, so one probe answers for all of them
    (a warm compile sandbox per new program would otherwise add a probe each, kept forever)."""
    import shutil

    import pytest

    import sandbox.backends.bwrap as bwrap
    from sandbox.backends.base import TritonCacheMount
    from sandbox.contract import DeviceMode

    if os.geteuid() != 0 or shutil.which("bwrap") is None:
        pytest.skip("the probe is for a worker running as root, with bubblewrap")
    monkeypatch.setattr(bwrap, "host_pids_cgroups", lambda: None)
    monkeypatch.setattr(bwrap, "_unprivileged", {})
    probed: list[tuple] = []
    real = bwrap.BwrapBackend._probe_unprivileged
    monkeypatch.setattr(bwrap.BwrapBackend, "_probe_unprivileged",
                        lambda self, *args: probed.append(args) or real(self, *args))
    cache = SharedCompileCache(tmp_path / "cache")
    base = bwrap.BwrapBackend(python=sys.executable, hidden_paths=[])
    answers = {base.with_triton_cache(TritonCacheMount(cache.new_staging(), writable=True, reads=cache.root))
               .unprivileged(DeviceMode.gpu) for _ in range(3)}
    assert len(probed) == 1 and len(answers) == 1
    base.with_triton_cache(TritonCacheMount(cache.root)).unprivileged(DeviceMode.gpu)  # a grading launch: its own
    assert len(probed) == 2
