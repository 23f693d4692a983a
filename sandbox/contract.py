"""The types both sides of the sandbox share: limits, the job description and the run result.

The harness never imports this module (it reads the job as plain JSON); the trusted side builds
the job with these models so that its shape is checked in one place.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

GiB = 1 << 30
MiB = 1 << 20


class DeviceMode(str, enum.Enum):
    gpu = "gpu"
    interpreter = "interpreter"


# Tasks (processes and threads) the runtime itself holds before a submission runs: measured 2 on
# the interpreter and 18 on an H200 after CUDA init and a first compile (SECURITY.md), with room.
# A sandbox's process cap is `Limits.processes` on top of these, the same number on every
# backend, so a submission gets the same budget on every device.
RUNTIME_TASKS: dict[DeviceMode, int] = {DeviceMode.interpreter: 16, DeviceMode.gpu: 64}

# Pin the runtime's CPU thread pools to one thread: the number of tasks the runtime holds must not
# depend on the host's core count (it is part of the process cap), and the sandbox computes on the
# GPU or in the interpreter, not in torch's CPU pools.
RUNTIME_THREAD_ENV: dict[str, str] = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}

# Set by backends whose sandbox has a pid namespace of its own (bwrap, docker): only there may the
# harness end every other process it sees after a case (never on the unsafe local backend).
OWN_PID_NAMESPACE_ENV = "KERNELGRADE_OWN_PID_NAMESPACE"


class Limits(BaseModel):
    """Every limit of one sandboxed run; units in the names."""

    model_config = ConfigDict(extra="forbid")

    startup_timeout_s: float = Field(120.0, gt=0, description="until the harness is ready (imports, CUDA, canary)")
    case_timeout_s: float = Field(60.0, gt=0, description="one call of the entry point, or the given check")
    speed_timeout_s: float = Field(30.0, gt=0, description=(
        "the speed phase (GPU): from its start until the `speed` frame; a sandbox that has not sent it by then "
        "is killed and the speed card says so"))
    run_timeout_s: float = Field(600.0, gt=0, description="all attempts of one submission together")
    kill_grace_s: float = Field(5.0, gt=0, description="watchdog: how long after the kill we wait for the exit")
    exit_grace_s: float = Field(5.0, gt=0, description=(
        "after the harness's `done`, how long a sandbox whose output is relayed (docker) may take to exit "
        "before it is killed: its output's last bytes come through, an exit that never ends costs no more"))
    cpu_time_s: int = Field(900, gt=0, description="RLIMIT_CPU of the sandbox")
    memory_bytes: int = Field(16 * GiB, gt=0,
                              description="bwrap: RLIMIT_AS on the interpreter, unset on GPU (CUDA reserves huge "
                                          "address ranges); docker: the container's memory cgroup limit "
                                          "(mem_limit = memswap_limit), on GPU and interpreter alike")
    memory_cgroup_bytes: int = Field(8 * GiB, gt=0, description=(
        "bwrap: memory limit of the sandbox's own memory cgroup where the service can write one, on GPU and "
        "interpreter alike (resident memory, page cache, /tmp and /dev/shm; no swap where swap is accounted); "
        "its OOM kill ends the sandbox"))
    file_size_bytes: int = Field(64 * MiB, gt=0, description="RLIMIT_FSIZE")
    open_files: int = Field(256, gt=0, description="RLIMIT_NOFILE")
    processes: int = Field(512, gt=0, description=(
        "processes and threads the submission may start, on top of the runtime's own (RUNTIME_TASKS): the cap "
        "`process_cap(mode)` is bwrap's pids.max of the sandbox's own pids cgroup where the service can write "
        "one, and RLIMIT_NPROC always (counted per host user; the kernel does not apply it to root); docker's "
        "pids_limit"))
    timeout_cpu_fraction: float = Field(0.25, gt=0, le=1, description=(
        "a deterministic program's timeout is memoised only if the sandbox used at least this fraction of the "
        "phase's time limit in CPU time over that phase, as the trusted side measures it (sandbox/cpu_time.py)"))
    tmpfs_bytes: int = Field(512 * MiB, gt=0, description="size of the private /tmp, and of /dev/shm")
    tmpfs_files: int = Field(10_000, gt=1, description=(
        "inodes (files, folders and links, the root included) of the private /tmp, and of /dev/shm: their "
        "`nr_inodes` where the sandbox's tmpfs can take it (the fork server's children, docker); plain bwrap's "
        "--tmpfs takes only a size (SECURITY.md)"))
    output_bytes: int = Field(64 * MiB, gt=0, description="cap of the whole verdict channel")
    case_output_bytes: int = Field(16 * MiB, gt=0, description="cap of one case's tensors")
    log_bytes: int = Field(64 * 1024, gt=0, description="stdout/stderr kept from the sandbox")
    max_restarts: int = Field(3, ge=0, description="fresh sandboxes after a crash or a timeout")

    def process_cap(self, mode: DeviceMode) -> int:
        """The sandbox's cap on processes and threads: the submission's budget plus the runtime's own."""
        return self.processes + RUNTIME_TASKS[mode]


class StridedView(BaseModel):
    """The entry point's argument as a view of the stored (1-D) tensor: shape, strides and offset
    in elements (`torch.as_strided`), which the harness checks lie inside it."""

    model_config = ConfigDict(extra="forbid")

    shape: list[int] = Field(max_length=8)
    strides: list[int] = Field(max_length=8)
    offset: int = Field(0, ge=0)


class TensorArg(BaseModel):
    """An input tensor stored under `key`; `columns` makes it a view of the first columns, `view`
    a strided view of it (a case's `layout`); `requires_grad` makes it a leaf whose gradient the
    case returns (see `CaseJob.grads`)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    columns: int | None = None
    view: StridedView | None = None
    requires_grad: bool = False


Scalar = int | float | bool | str


class GradJob(BaseModel):
    """After the forward call: `torch.autograd.backward(outputs, grad_outputs)`, then each named
    argument's `.grad` is returned under its output name."""

    model_config = ConfigDict(extra="forbid")

    grad_outputs: dict[str, str] = Field(description="forward output name -> input key of its upstream gradient")
    grads: dict[str, str] = Field(description="argument key -> output name of its gradient")


class CaseJob(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    args: list[TensorArg]
    kwargs: dict[str, Scalar] = {}
    outputs: list[str] = Field(description="the forward outputs, in the order the entry point returns them")
    calls: int = Field(1, ge=1, le=8,
                       description="call the entry point this often on the same tensors; the last call's outputs count")
    backward: GradJob | None = None


class SpeedJob(BaseModel):
    """GPU only, informational: after the cases, time the entry point on one large input, then the
    exercise author's torch baseline and a plain copy on the same input (warm-up, L2 flushed before
    every repetition, CUDA events; `triton.testing.do_bench`). Each argument is stacked `repeat`
    times along its first dimension in the sandbox."""

    model_config = ConfigDict(extra="forbid")

    args: list[TensorArg]
    names: list[str] = Field(description="the arguments' names, as the baseline expression uses them")
    repeat: int = Field(1, ge=1, le=1 << 16)
    kwargs: dict[str, Scalar] = {}
    baseline: str = Field(description="a torch expression over `names` (the exercise author's code)")
    warmup_ms: int = Field(25, ge=1, le=1000, description="do_bench's warm-up time per timed function")
    rep_ms: int = Field(100, ge=1, le=2000, description="do_bench's repetition time per timed function")
    cpu_timer: bool = Field(False, description=(
        "tests only: on the interpreter, time the entry point with a plain clock instead of skipping the phase, "
        "so the speed phase's plumbing (sandbox/speed_phase.py) can be tested without a GPU"))


class CompileAhead(BaseModel):
    """GPU: before the given check and the cases, the harness starts compiling every case's kernels at once
    (sandbox/harness.py `_compile_ahead`); they run on beside the given check and the cases, each launch
    waiting for its own kernel only: a speed-up only, never a change in what a case reports."""

    model_config = ConfigDict(extra="forbid")

    threads: int = Field(4, ge=1, le=16, description="compiles at the same time")
    wait_s: float = Field(10.0, gt=0, le=60, description="the most the phase's calls of the entry point take")


class Job(BaseModel):
    """What the harness reads from /job/job.json."""

    model_config = ConfigDict(extra="forbid")

    mode: DeviceMode
    entry_point: str
    run_given_check: bool
    given_seed: int
    cases: list[CaseJob]
    speed: SpeedJob | None = None
    compile_ahead: CompileAhead | None = None
    # The program's text says `inline_asm`: a compile that crashes the compiler names inline asm's
    # constraints as the likely cause, whether the interpreter's gate tells it (its forked compile
    # died, sandbox/gpu_compile.py) or the runner (the harness's process died compiling on a GPU).
    inline_asm: bool = False


@dataclass(frozen=True)
class Said:
    """What the runner has to say about a phase, as a message code and its numbers (never prose): the
    trusted side renders it in the report's language (service/grading/sandbox_text.py) into `error`/`output`."""

    code: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class CaseRun:
    """One case as it came back from the sandbox (tensors already parsed, not yet compared)."""

    id: str
    status: Literal["ok", "error", "crashed", "timeout", "skipped"]
    error: str | None = None
    said: Said | None = None  # the runner's own account (a crash, a timeout, ...), rendered into `error`
    raw_error: str | None = None  # `error` as the sandbox wrote it, its «kg:» marks not yet said (other languages)
    outputs: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float | None = None
    # Guards around the case's buffers that the kernel changed (a write out of bounds), as the
    # runner validated them from the harness's evidence: see `sandbox.runner._out_of_bounds`.
    out_of_bounds: list[dict[str, Any]] = field(default_factory=list)
    # The case's inputs as the harness found them after the call (`__input__.<key>`), by input key:
    # the trusted side compares them with what it sent (service/grading/overwrite.py).
    inputs_after: dict[str, Any] = field(default_factory=dict)
    # A case that raised: the data of the buffers its entry point allocated, as the harness found
    # them (dtype, shape and the array, by guard record index), for exercise checks that compare a
    # wrapper's own sentinel region on the trusted side (e.g. the puzzles' z buffers).
    allocations: list[dict[str, Any]] = field(default_factory=list)
    # The case ended on the interpreter's gate refusing a launch whose kernel compiled with inline asm (the
    # harness's `gpu_only` field, from the gate's own exception: gpu_compile.GPUCompileError.gpu_only).
    gpu_only: bool = False
    # The reprs of the exception chain the case raised (the harness's `raised` field, from the objects): how the
    # trusted side tells an interpreter gap's own error (service/grading/pipeline.py, _gap_shown).
    raised: list[str] = field(default_factory=list)


@dataclass
class GivenRun:
    """The template's own module-level check, run as written."""

    status: Literal["passed", "failed", "crashed", "timeout", "skipped"]
    output: str = ""
    said: Said | None = None  # the runner's own account, rendered into `output`
    raw_output: str | None = None  # `output` as the sandbox wrote it, its «kg:» marks not yet said (other languages)
    elapsed_s: float | None = None
    # Each recorded call of the entry point during the check: (tensor arguments, tensor outputs).
    calls: list[tuple[list[Any], list[Any]]] = field(default_factory=list)
    gpu_only: bool = False  # as CaseRun.gpu_only: the check failed on the gate's inline-asm refusal
    raised: list[str] = field(default_factory=list)  # as CaseRun.raised: the chain that failed the check
    # The check failed because a call of the entry point returned without launching the cell's kernel
    # (harness.LaunchCounter's own error, told by the harness's `no_launch` field, never read from the output)
    no_launch: bool = False


@dataclass
class SpeedRun:
    """The speed phase as it came back: timings in ms (median_ms, p20_ms, p80_ms, min_ms, max_ms,
    reps) of the kernel, the baseline and a copy of the first argument; the device's own figures."""

    status: Literal["ok", "error", "crashed", "timeout", "skipped"]
    error: str | None = None
    said: Said | None = None  # the runner's own account, rendered into `error`
    shape: list[int] = field(default_factory=list)
    kernel: dict[str, float] = field(default_factory=dict)
    baseline: dict[str, float] = field(default_factory=dict)
    copy: dict[str, float] = field(default_factory=dict)
    copy_bytes: int | None = None
    device: dict[str, Any] = field(default_factory=dict)
    method: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float | None = None


@dataclass
class RunResult:
    """Everything one submission's sandbox runs produced. `infra_error` means *we* failed."""

    backend: str
    mode: DeviceMode
    infra_error: str | None = None
    environment: dict[str, str] = field(default_factory=dict)
    process_limit: str = ""  # what capped the sandbox's processes: "pids cgroup", "RLIMIT_NPROC", ...
    memory_limit: str = ""  # what capped its memory: "memory cgroup 8 GiB, no swap", "RLIMIT_AS 16 GiB", ...
    sandbox_start: str = ""  # how its (last) sandbox started: "fresh" or "forked" (KERNELGRADE_SANDBOX_START)
    given: GivenRun | None = None
    cases: list[CaseRun] = field(default_factory=list)
    speed: SpeedRun | None = None  # only when the job asked for it (GPU, an exercise with `speed:`)
    attempts: int = 0
    # A deterministic run stopped at its first timeout: the phases after it are `skipped` for that
    # reason, which the program decides (so they may be memoised), not the machine.
    ended_by_timeout: bool = False
    # Attempts that ended because Triton's compiler crashed on the kernel (runner.compiler_crash): each
    # settled its phase as a compile error, so none counts against `Limits.max_restarts`.
    compile_crashes: int = 0
    # The sandbox's CPU time over the phase that timed out (the last one), measured on the trusted
    # side (sandbox/cpu_time.py; None: it could not be read), and whether it shows the program was
    # running (`cpu_time.busy`): only then is a deterministic program's timeout memoised.
    timeout_cpu_s: float | None = None
    timeout_busy: bool = False
    startup_s: list[float] = field(default_factory=list)
    elapsed_s: float = 0.0
    log_tail: str = ""
    # Kernels found in the shared compile cache / compiled in the sandbox (GPU with the cache only).
    triton_cache: dict[str, int] = field(default_factory=dict)
    # Interpreter: seconds the sandbox spent compiling kernels for the GPU target before launching
    # them (sandbox/gpu_compile.py; their number is triton_cache["gpu_compile_checks"]). Told by the
    # sandbox: shown in timing, never graded.
    gpu_compile_s: float = 0.0
    # Where the run's time went, measured on the trusted side (seconds by phase, summed over attempts):
    # prepare (the job folder), handover (taking a sandbox, handing it the job), startup (a cold start's
    # wait for hello), load (the job handed -> the first phase frame: the harness reads the job, imports
    # the program, loads the inputs), given, cases, speed (a phase's start frame -> its result frame),
    # between (between phases), frames (this side's reading of the frames: safetensors, guards), exit
    # (`done` -> the channel closed), kill (the sandbox killed and its confinement undone), cleanup.
    phases: dict[str, float] = field(default_factory=dict)
    # The harness's own split of its work (the `done` frame's `split`: warm_up, job, program, inputs,
    # compile_ahead (GPU: the phase's calls), sweep, send, given_calls, given_record, case_setup, case_calls,
    # case_evidence; GPU: compile_wait, the launches' waits for the phase's compiles, and compile_ahead_done, from the
    # phase's start until its last compile ended, beside the given check and the cases).
    # Told by the sandbox: shown in timing, never graded.
    split: dict[str, float] = field(default_factory=dict)
    # `run(detach_speed=True)`: the sandbox still timing the kernel after it sent every case result
    # (a sandbox.speed_phase.SpeedPhase, which the caller must collect or cancel); `speed` is then None.
    speed_pending: Any = None
