"""Runs inside the sandbox (copied into every job, like harness.py): one verdict on every device.

Under the Triton interpreter a kernel body runs as Python, so code that Triton's compiler rejects
(a `tl.static_range` with a runtime bound, a loop variable first defined inside a `while`, a body
that walks up the Python frames and computes the answer with torch, or writes through
numpy/ctypes) would run and could pass, while the same program fails to compile on a GPU. So in
interpreter mode, before each launch, the kernel is compiled with Triton's own (non-interpreter)
front end for a GPU target, with the launch's real argument types and constexprs, once per
specialization; a rejection becomes the launch's error, with the compiler's message, and the
kernel does not run. No GPU is needed: the stages up to PTX run in this process, and the PTX is
assembled by the `ptxas` that Triton's wheel carries, as on a GPU (it rejects PTX that the stages
before it accept: `cache_modifier=".cg"` with `eviction_policy="evict_first"` passed on the CPU and
failed every case on the H200). Nothing goes through Triton's cache; ptxas's files are in the
sandbox's private /tmp.

The same front end also runs any plain Python callable a kernel calls at compile time (it calls
what it does not know), on the GPU as well: `tl.core.builtins.exec(...)` would run arbitrary code.
`restrict_compile_time_calls` makes such a call a compile error, in both modes.

Compiling first is not enough if the interpreter then runs other code than the compiler compiled.
A static condition (`if hasattr(x_ptr.handle, "data"):`, `isinstance`, a `tl.static_range` whose
bound is such a fact, `fact and <python>`) is decided in Python by both, and the two see different
values (the interpreter's tensors hold numpy arrays in `.handle`; its constexprs are plain ints), so
a body could compile as an empty kernel and run frame-walking torch code under the interpreter. The
gate therefore records which syntax nodes of the student's kernels the compiler visited for each
launch's specialization, and the interpreter's copy of each such kernel (Triton rewrites its source
anyway) checks before each statement, and before each lazily evaluated operand (either side of
`a if c else b`, the later operands of `and`/`or` and of a chained comparison, a comprehension's
element, an assert's message), that the compiler visited it; if not, the launch fails
(INTERPRETER_ONLY_CODE). The interpreter parses exactly the source the compiler parsed (Triton's
interpreter takes the *last* line that starts with `def `, so a docstring holding a second `def`
would give it another function). Reading `.handle` or a private attribute (`_x`, dunders) in a
kernel is refused at compile time (PYTHON_ATTRIBUTE_CODE): with those, a value (not a branch) could differ between the
two, e.g. `getattr(x.handle, "data", int)()`.

Standard library plus triton only. The trusted side never imports this file's callers' code.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import io
import json
import os
import re
import sys
import tempfile
import textwrap
import threading
import traceback
import types

TARGET = ("cuda", 90, 32)  # sm_90 (H100/H200), warp size 32: the GPU the lesson's course grades on
LAST_STAGE = "cubin"  # ttir (the front end) -> ttgir -> llir -> ptx -> cubin (ptxas, a subprocess: ~30 ms)
MAX_MESSAGE = 4000
MAX_DIAGNOSTICS = 1500  # characters of the compiler's own diagnostics (its fd-2 `error:` lines) kept in a message
MAX_STDERR_SCAN = 8 << 20  # bytes of what a failed compile wrote to fd 2 that are read for them
MAX_VERDICT_BYTES = 64 << 20  # what a forked compile sends back (its message, the nodes it visited)

# The words around a rejection are the trusted side's (service/messages/sandbox.yaml): this module, which runs in
# the student's process, writes only their codes, inline: «kg:<code>|key=value|...» (service/grading/sandbox_text.py).
PREFIX_CODE, PYTHON_CALL_CODE = "sandbox.gpu_compile", "sandbox.python_call"
PYTHON_ATTRIBUTE_CODE = "sandbox.python_attribute"  # `.handle`, a dunder: the interpreter's internals, not Triton
INTERPRETER_ONLY_CODE = "sandbox.interpreter_only"  # the interpreter ran code the GPU compile did not compile
# A compile error that wanted a constexpr where the kernel passed a name it had assigned (`XBLOCK = B0`, then
# tl.arange(0, XBLOCK)): the code generator makes a tensor of every assigned value, on every device.
CONSTEXPR_ASSIGNED_CODE = "sandbox.constexpr_assigned"
# The compiler crashed (LLVM's UNREACHABLE, a failed C++ assertion, a segfault) instead of raising: a compile error.
COMPILER_CRASH_CODE, COMPILER_CRASH_ASM_CODE = "sandbox.compiler_crashed", "sandbox.compiler_crashed.inline_asm"
NO_LAUNCH_CODE = "sandbox.no_kernel_launch"  # written by the harness (harness.py, LaunchCounter)
# The kernel compiled for the GPU with inline PTX (tt.elementwise_inline_asm), which the interpreter cannot run (3.9
# raises `inline_asm not supported in interpreter mode`): the launch is refused with exactly this mark, and the
# trusted side makes the grading not_gradable (service/grading/pipeline.py, gpu_only_shown): only a GPU grades it.
GPU_ONLY_ASM_CODE = "sandbox.gpu_only.inline_asm"
# The kernel compiled for the GPU needs global scratch memory at launch (tl.make_tensor_descriptor in a kernel: its
# TMA descriptor, 128 bytes a program on sm_90), which Triton's GPU launcher takes from the allocator set with
# triton.set_allocator and, with none set, fails: "Kernel requires a runtime memory allocation, but no allocator was
# set". The interpreter needs no such memory and ran it: the launch is refused with this mark, as a GPU's fails.
NEEDS_ALLOCATOR_CODE = "sandbox.needs_allocator"
INLINE_ASM_OP = "tt.elementwise_inline_asm"  # the op Triton's front end makes of tl.inline_asm_elementwise
MARK_OPEN, MARK_SEP, MARK_CLOSE = "«kg:", "|", "»"


def mark(code: str, **params: object) -> str:
    """A message code and its parameters, inline in text (values lose line breaks and the mark's own characters)."""
    def plain(value: object) -> str:
        return "".join(" " if ch in "\n\r" else ch for ch in str(value) if ch not in "«»|=")
    return MARK_OPEN + MARK_SEP.join([code, *(f"{key}={plain(value)}" for key, value in params.items())]) + MARK_CLOSE


def _language_namespaces() -> list:
    """What the interpreter patches (triton/runtime/interpreter.py, _patch_lang): triton.language,
    its core and math modules, and the tensor, dtype, condition and descriptor classes."""
    import triton.language as tl

    return [tl, tl.core, tl.math, tl.tensor, tl.dtype, tl.core.condition, tl.core.tensor_descriptor_base]


def _language_snapshot() -> list:
    return [(space, dict(vars(space))) for space in _language_namespaces()]


class _pristine:
    """triton.language as it was before the interpreter patched it, for the duration of a compile.

    The interpreter swaps tl's builtins for numpy versions while a kernel runs and restores them
    after, except when a kernel calls another @jit function (tl.sum is one): that patch is never
    undone, and the compiler would then build IR with the interpreter's semantics. Whatever the
    interpreter left is put back afterwards, so the interpreter runs as it would without us."""

    def __init__(self, snapshot: list) -> None:
        self.snapshot = snapshot
        self.saved: list = []

    def __enter__(self):
        for space, original in self.snapshot:
            current = dict(vars(space))
            self.saved.append((space, current))
            for name, value in original.items():
                if current.get(name, _ABSENT) is not value:
                    setattr(space, name, value)
            for name in current.keys() - original.keys():
                delattr(space, name)
        return self

    def __exit__(self, *exc) -> None:
        for space, current in reversed(self.saved):
            now = dict(vars(space))
            for name, value in current.items():
                if now.get(name, _ABSENT) is not value:
                    setattr(space, name, value)
            for name in now.keys() - current.keys():
                delattr(space, name)
        self.saved.clear()


_ABSENT = object()
# The wrapper triton.language.core._tensor_member_fn puts on tl.tensor for a function that is not a JITFunction.
MEMBER_WRAPPER = "_tensor_member_fn.<locals>.wrapper"
_GATE = None  # the installed CompileGate (interpreter mode), which the code generator asks for twins


class GPUCompileError(Exception):
    """A kernel that Triton's compiler rejects for the GPU target (the student's error, not ours).
    `gpu_only`: the gate itself refused the launch because the kernel compiled with inline asm, which
    only a GPU runs (set here, never from text: the harness reports it as a field of the phase's frame,
    and the trusted side makes the grading not_gradable only on that field, gpu_only_shown)."""

    gpu_only = False


def _refused(message: str) -> GPUCompileError:
    """The gate's refusal of a launch with `message` (a compile error's, or gpu_only_asm_message()'s)."""
    error = GPUCompileError(message)
    error.gpu_only = message == gpu_only_asm_message()  # a compile error's message starts with PREFIX_CODE's mark
    return error



def allocator_set() -> bool:
    """Whether the program has set an allocator (triton.set_allocator) that a GPU launch would take a kernel's
    global scratch memory from (triton/runtime/_allocation.py; the GPU launcher calls it, NullAllocator raises)."""
    try:
        from triton.runtime import _allocation
    except ImportError:
        return False
    return not isinstance(_allocation._allocator.get(), _allocation.NullAllocator)

def _target_name() -> str:
    return f"{TARGET[0]} sm_{TARGET[1]}"


_DISCARD = io.TextIOWrapper(io.FileIO(os.devnull, "w")) if os.path.exists(os.devnull) else io.StringIO()


def _ptxas_errors(text: str) -> str:
    """What ptxas said was wrong (its `error :` lines, without the temporary file's path), not
    Triton's wrapper around it (the repro command, a request to report the PTX to Triton)."""
    said = [line.split("error", 1)[1].lstrip(" :") for line in text.splitlines()
            if "error" in line and ".ptx" in line.split("error", 1)[0]]
    return "ptxas: " + "; ".join(dict.fromkeys(said)) if said else text


def _words(exc: BaseException) -> str:
    """What `exc` says, not where: a Triton CompilationError's message (`error_message`, None when it
    was raised only to point at a call whose callee failed), not its source excerpt and caret."""
    if hasattr(exc, "error_message") and hasattr(exc, "src"):
        return str(exc.error_message or "").strip()
    return str(exc).strip()


def _cause(exc: BaseException) -> str:
    """What the compiler's message leaves out. Triton raises `CompilationError(src, node, None) from`
    the real error, so a bare assertion in its semantics (`boundary_check=(ROWS, D)`: `assert
    isinstance(dim, int) and 0 <= dim < len(block_shape)`) showed only the source and a caret: the
    cause's type and words, or, when it has none, the assertion's own line and function. The cause
    is the innermost of the chain: an error in a @jit function that the kernel calls (tl.sort calls
    sort_impl) is a CompilationError at the call from one at the callee from the real error, and
    the two outer ones say only where (Triton 3.6 on a GPU: `srt = tl.sort(x, dim=1)` and a caret)."""
    chain: list[BaseException] = []
    current = exc.__cause__
    while current is not None and current is not exc and current not in chain and len(chain) < 32:
        chain.append(current)
        current = current.__cause__
    if not chain:
        return ""
    cause = chain[-1]
    said = _words(cause)
    if not said:  # an innermost CompilationError without words: the deepest one that has some
        said, cause = next(((_words(c), c) for c in reversed(chain) if _words(c)), ("", cause))
    if said:
        return "" if said in str(exc) else f"\n{type(cause).__name__}: {said}"
    frames = traceback.extract_tb(cause.__traceback__)
    if frames and frames[-1].line:
        return f"\n{type(cause).__name__} in Triton's {frames[-1].name}: {frames[-1].line}"
    return f"\n{type(cause).__name__}"


def compile_cause(exc: BaseException) -> str:
    """`_cause` for a Triton compile error raised where no gate words it (a GPU's own compile in the
    harness): "" for any other exception, whose traceback is the student's to read as Python shows it."""
    return _cause(exc) if type(exc).__module__.startswith("triton") else ""


# An MLIR diagnostic as its default handler prints it: `<file>:<line>:<col>: error: <words>`.
_DIAGNOSTIC = re.compile(r"^(?:(?P<where>\S.*?): )?(?P<severity>error|note): (?P<said>.*\S)\s*$")
_LOCATION = re.compile(r"^(?P<file>.*?):(?P<line>\d+)(?::(?P<col>\d+))?$")
# A failed C++ assertion inside a pass (Triton 3.6's RewriteTensorPointer on a 1-offset advance of a
# 2-D block pointer): `python: /project/lib/.../X.cpp:262: <signature>: Assertion `...' failed.`
_ASSERTION = re.compile(r"(?P<file>[^/\s:]+\.(?:cpp|cc|h|hpp|inc)):(?P<line>\d+): .*?(?P<said>Assertion `.*' failed)")
_REPRODUCER = re.compile(r"\s*reproducer generated at `[^`]*`"
                         r"|\s*please share the reproducer above with Triton project\.?")
_NOTE_LIMIT = 160  # a longer note is an IR dump (`see current operation: ...`), not words
_LINE_LIMIT = 400


def compiler_diagnostics(written: str, known: str = "") -> str:
    """The compiler's own words in what a failed compile wrote to fd 2, which the Python exception
    leaves out: MLIR prints a verifier's or a pass's diagnostic there (`'tt.reduce' op type mismatch
    on combine operation ...`) and raises only `PassManager::run failed`, `error encountered during
    parsing` or `assert reduce_op.verify()`. Kept: its `error:` lines, its short `note:` lines and
    a failed C++ assertion, each once, with the source file's name and line (not its path); left
    out: IR dumps (the reproducer, `see current operation`), anything `known` already says. A failed
    assertion, the cause of the `error:` lines around it, comes last (the line a case's summary shows)."""
    kept: list[str] = []
    asserted: list[str] = []
    for raw in written.splitlines():
        line = raw.strip()
        found = _DIAGNOSTIC.match(line)
        if found is not None:
            said = " ".join(_REPRODUCER.sub("", found["said"]).split()).replace(":;", ";").rstrip(":; ")
            if not said or (found["severity"] == "note" and (
                    len(said) > _NOTE_LIMIT or said.startswith("see current operation"))):
                continue
            where = _LOCATION.match(found["where"] or "")
            place = (f"{os.path.basename(where['file'])}:{where['line']}" + (f":{where['col']}" if where["col"] else "")
                     if where is not None else "")
            shown = f"{place + ': ' if place else ''}{found['severity']}: {said}"
        else:
            found = _ASSERTION.search(line)
            if found is None:
                continue
            said = found["said"]
            shown = f"{said} (Triton's {found['file']}:{found['line']})"
        shown = shown[:_LINE_LIMIT] + (" …" if len(shown) > _LINE_LIMIT else "")
        into = kept if found.re is _DIAGNOSTIC else asserted
        if said not in known and shown not in into:
            into.append(shown)
    last = "\n".join(asserted)[:MAX_DIAGNOSTICS // 2]  # bounded: the first lines give way, not the cause
    first = "\n".join(kept)
    if len(first) + len(last) + 1 > MAX_DIAGNOSTICS:
        first = first[:MAX_DIAGNOSTICS - len(last) - 3] + " …"
    return "\n".join(part for part in (first, last) if part)


def _constexpr_assignment_hint(exc: BaseException) -> str:
    """Where a compile error asks for a constexpr (`arange's arguments must be of type tl.constexpr`, a
    tl.static_range bound that `is not a constexpr`) and an argument of the failing call is a name the kernel
    bound by a plain assignment of a compile-time value (`XBLOCK = B0`, `BLOCK = 64`, `R = 2 * B1`: Triton's code
    generator turns an assigned value into a tensor, 3.6 and 3.9 alike), the mark that says so and how to keep
    it a constexpr; else "". A name assigned a run-time value (`n = tl.load(...)`) gets no such advice."""
    node, src = getattr(exc, "node", None), getattr(exc, "src", None)
    said = str(getattr(exc, "error_message", None) or "") + _cause(exc)  # the words, not the source excerpt
    if not isinstance(node, ast.AST) or not isinstance(src, str) or "constexpr" not in said:
        return ""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return ""
    function = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if function is None:
        return ""

    def is_constexpr(annotation: ast.expr | None) -> bool:
        return annotation is not None and "constexpr" in ast.unparse(annotation)

    static = {a.arg for a in function.args.args if is_constexpr(a.annotation)}
    assigned: dict[str, int] = {}
    simple = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load)
    for stmt in ast.walk(function):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and is_constexpr(stmt.annotation):
            static.add(stmt.target.id)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and all(isinstance(n, simple) or isinstance(n, ast.Name) and (n.id in static or n.id in assigned)
                        for n in ast.walk(stmt.value)):
            assigned.setdefault(stmt.targets[0].id, stmt.lineno)
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        for argument in [*call.args, *(k.value for k in call.keywords)]:
            for name in (n for n in ast.walk(argument) if isinstance(n, ast.Name)):
                if name.id in assigned:
                    return "\n" + mark(CONSTEXPR_ASSIGNED_CODE, name=name.id[:80], line=assigned[name.id])
    return ""


def compile_error_message(exc: BaseException, stderr: str = "") -> str:
    """The student's message for a compile that failed with `exc`, with the compiler's own
    diagnostics from `stderr` (what the compile wrote to fd 2) where the exception lacks them."""
    text = str(exc).strip() or type(exc).__name__
    if type(exc).__name__ == "PTXASError":
        text = _ptxas_errors(text)
    cause = _cause(exc)[:MAX_MESSAGE // 4]
    said = compiler_diagnostics(stderr, text + cause) if stderr else ""
    cause += "\n" + said if said else ""
    cause += _constexpr_assignment_hint(exc)
    if len(text) + len(cause) > MAX_MESSAGE:  # the source excerpt gives way, never the cause
        text = text[:MAX_MESSAGE - len(cause)] + " …"
    return mark(PREFIX_CODE, target=_target_name()) + f"{type(exc).__name__}: {text}{cause}"


# What a compiler says as it crashes: LLVM's `UNREACHABLE executed at <file>:<line>!` (after the reason, e.g. inline
# asm whose constraints do not match its operands: `number of input constraints does not match number of
# parameters`), `LLVM ERROR: ...`, a failed C++ assertion, an MLIR `error:` line.
_CRASH_MARKER = re.compile(r"UNREACHABLE executed at|LLVM ERROR:|Assertion `.*' failed|(?:^|\s)error: ")
# What follows a crash's words and is no compiler's words: LLVM's stack dump, Python's faulthandler.
_CRASH_TRAILER = re.compile(r"^(?:PLEASE submit a bug report|Stack dump:|#\d+ 0x|\d+\.\s+Program arguments:"
                            r"|Fatal Python error|Python runtime state|Current thread 0x|Thread 0x|Extension modules:"
                            r"|File \"[^\"]*\", line \d+ in )")
_CRASH_NOISE = re.compile(r"^(?:Traceback |File \"|\S+:\d+: \w*Warning: |warn)")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:/[^\s/:!'\"`]+)+/(?=[^\s/:!'\"`]+)")
_CRASH_CONTEXT = 3  # lines the compiler wrote before its last marker line (the reason it gives)
# A compiler that ran out of memory or processes (RLIMIT_AS: `LLVM ERROR: out of memory`, std::bad_alloc) did not
# crash on the kernel: the sandbox's limit did it, and that is told as such (out of memory), not as a compile error.
_EXHAUSTED = re.compile(r"out of memory|bad_alloc|Cannot allocate memory|Resource temporarily unavailable", re.I)
# Signals a crashing compiler ends a process with: LLVM's UNREACHABLE and failed assertions abort, a bad pointer faults.
# Not SIGKILL: that is the OOM killer's or the runner's (a timeout).
COMPILER_CRASH_SIGNALS = frozenset({"SIGABRT", "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP"})


def crash_diagnostics(written: str, *, at_end: bool = False) -> str:
    """The compiler's last words before it crashed, in what it wrote to fd 2 (the gate's capture, or
    the sandbox's log on a GPU): the last line that says a compiler gave up (`_CRASH_MARKER`) and up to
    `_CRASH_CONTEXT` lines before it, without paths (a file's name stays), stack dumps or Python's
    own lines. Empty when nothing there is a compiler's (a segfault that printed nothing), and with
    `at_end` (a whole process's log) also when anything but a stack dump came after that line."""
    lines = []
    for raw in written.splitlines():
        line = raw.strip()
        if line and not _CRASH_TRAILER.match(line) and not _CRASH_NOISE.match(line):
            line = _PATH.sub("", line)
            lines.append(line[:_LINE_LIMIT] + (" …" if len(line) > _LINE_LIMIT else ""))
    last = max((i for i, line in enumerate(lines) if _CRASH_MARKER.search(line)), default=None)
    if last is None or (at_end and last != len(lines) - 1):
        return ""
    if any(_EXHAUSTED.search(line) for line in lines[max(0, last - _CRASH_CONTEXT):]):
        return ""
    kept = list(dict.fromkeys(lines[max(0, last - _CRASH_CONTEXT):last + 1]))
    if "UNREACHABLE executed at" in kept[-1]:  # a place, not a reason: the reason before it goes last
        kept = kept[-1:] + kept[:-1]  # (the line a case's summary shows)
    said = "\n".join(kept)
    return said if len(said) <= MAX_DIAGNOSTICS else "… " + said[-MAX_DIAGNOSTICS:]


def compiler_crash_message(written: str, ended: str, inline_asm: bool, *, at_end: bool = False) -> str:
    """The student's message for a compile that crashed the compiler (`ended`: its signal's name), as
    a compile error: the crash's own mark, then the compiler's last words (crash_diagnostics)."""
    said = crash_diagnostics(written, at_end=at_end)
    code = COMPILER_CRASH_ASM_CODE if inline_asm else COMPILER_CRASH_CODE
    return mark(code, target=_target_name(), signal=ended) + (said or "—")


def status_name(status: int) -> str:
    """A waitpid status in words: the signal's name (SIGABRT) or `exit code N`."""
    import signal

    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return signal.Signals(number).name
        except ValueError:
            return f"signal {number}"
    return f"exit code {os.WEXITSTATUS(status)}"


def gpu_only_asm_message() -> str:
    """A launch refused because its kernel compiled with inline asm: the mark alone (nothing else in the
    message, so that text a kernel writes into another error cannot pass for it: gpu_only_shown)."""
    return mark(GPU_ONLY_ASM_CODE, target=_target_name())


def _holds_inline_asm(module) -> bool:
    """The front end's module (ttir) holds an inline asm op: what the kernel's code, or a triton.language function
    it calls, made of tl.inline_asm_elementwise. Read from the ops' names (never from the printed IR, where a
    tl.device_print prefix or the asm's own text could hold the op's name)."""
    found: list[bool] = []

    def visit(op) -> None:
        if not found and op.get_name() == INLINE_ASM_OP:
            found.append(True)

    module.walk(visit)
    return bool(found)


_FD2_LOCK = threading.RLock()  # one capture of fd 2 at a time (a kernel launched from two threads)


class _CompilerStderr:
    """What the process writes to fd 2 (where MLIR prints its diagnostics) while the compiler runs,
    into a private temporary file; fd 2 is put back however the block ends. `text` is what was
    written (the first MAX_STDERR_SCAN bytes), read only when asked for (a failed compile).

    Python's own sys.stderr is left where it writes: if it is fd 2 itself (not the harness's
    redirect of a given check), it writes through a copy of the real fd 2 meanwhile. Another thread
    writing to fd 2 meanwhile (only a submission starts one) writes into the file, which the gate
    reads only for a failed compile's `error:` lines. Without the file or the descriptors (a full
    /tmp, no free descriptor), the compile runs without the capture."""

    def __init__(self) -> None:
        self.sink = None  # the temporary file, made at the first compile and kept (emptied after each)
        self.unavailable = False

    @contextlib.contextmanager
    def captured(self):
        with _FD2_LOCK:
            saved, sink, python_stderr = None, None, None
            try:
                if self.sink is None and not self.unavailable:
                    self.sink = tempfile.TemporaryFile(prefix="kernelgrade-compile-")
                sink = self.sink
                if sink is not None:
                    _flush(sys.stderr)  # what Python wrote before goes where it was going
                    saved = os.dup(2)
                    os.dup2(sink.fileno(), 2)
            except OSError:
                self.unavailable = self.sink is None
                if saved is not None:
                    os.close(saved)
                saved = None
            try:
                if saved is not None and _writes_to_fd2(sys.stderr):
                    python_stderr = sys.stderr
                    sys.stderr = open(saved, "w", buffering=1, closefd=False,  # noqa: SIM115 - closed below
                                      encoding=getattr(python_stderr, "encoding", None) or "utf-8",
                                      errors="backslashreplace")
                yield self
            finally:
                if saved is not None:
                    try:
                        if python_stderr is not None:
                            ours, sys.stderr = sys.stderr, python_stderr
                            with contextlib.suppress(Exception):
                                ours.close()
                    finally:
                        os.dup2(saved, 2)
                        os.close(saved)

    def peek(self) -> str:
        """What the capture holds, left there (read at an offset: a forked compile's child shares the file's)."""
        sink = self.sink
        if sink is None:
            return ""
        try:
            return os.pread(sink.fileno(), MAX_STDERR_SCAN, 0).decode("utf-8", "replace")
        except OSError:
            return ""

    def text(self) -> str:
        """What the last capture holds; the file is emptied after."""
        sink = self.sink
        if sink is None:
            return ""
        try:
            sink.seek(0)
            return sink.read(MAX_STDERR_SCAN).decode("utf-8", "replace")
        except OSError:
            return ""
        finally:
            self.empty()

    def empty(self) -> None:
        if self.sink is not None:
            with contextlib.suppress(OSError):
                self.sink.seek(0)
                self.sink.truncate()


def _flush(stream) -> None:
    with contextlib.suppress(Exception):
        stream.flush()


def _writes_to_fd2(stream) -> bool:
    try:
        return stream.fileno() == 2
    except Exception:  # noqa: BLE001 - a StringIO (the harness's redirect), a closed or odd stream
        return False


class CompileGate:
    """Compiles interpreter kernels for the GPU target before they run (interpreter mode only)."""

    def __init__(self) -> None:
        import triton  # noqa: F401  (imported by the harness already, with TRITON_INTERPRET=1)
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import make_backend

        self.target = GPUTarget(*TARGET)
        self.backend = make_backend(self.target)
        # Keyed by id, with the object kept alongside (an id is reused only once its object is gone).
        self.twins: dict[int, tuple] = {}  # id(InterpretedFunction) -> (it, its JITFunction twin)
        self.scopes: dict[int, tuple] = {}  # id(module globals) -> (them, the copy the twins see)
        self.binders: dict[int, tuple] = {}  # id(launched InterpretedFunction) -> (it, twin, binder)
        # Per launch specialization: None (it compiled) or the failed compile's message (with what it wrote to fd 2).
        self.verdicts: dict[tuple, str | None] = {}
        self.compiler_stderr = _CompilerStderr()
        # What the compiler visited, per launch specialization: {id(code object): (meta, node keys)} (_RECORD).
        self.reached: dict[tuple, dict] = {}
        self.active: dict | None = None  # the launch being interpreted now: its `reached`
        # Kernels (id of the interpreted function; `binders` keeps it alive) one of whose compiles
        # succeeded in a forked child: their further compiles run here (_compile_apart).
        self.compiled_before: set[int] = set()
        self.pristine = _language_snapshot()  # before any interpreter run patched triton.language
        self.compiles = 0
        self.compile_s = 0.0
        # Told before and after each compile (the harness sends it to the runner as a `compile` frame), so
        # that a compile that runs into the case's time or memory limit is said as such (a large
        # `tl.static_range` unrolled, a huge block): ("start", the kernel's name) then ("end", None).
        self.on_compile = None
        # Whether the program says `inline_asm` (the job's, Job.inline_asm; the harness sets it once
        # the job is read): a compile that crashes the compiler then names the asm's constraints.
        self.inline_asm = False

    # -- the JITFunction twin of an interpreter kernel -------------------------------------------
    def _scope(self, module_globals: dict) -> dict:
        """A copy of a module's globals in which every interpreter kernel is its JITFunction twin
        (one copy per module, shared by its twins, so mutually calling helpers resolve)."""
        from triton.runtime.interpreter import InterpretedFunction

        known = self.scopes.get(id(module_globals))
        if known is not None and known[0] is module_globals:
            return known[1]
        scope = dict(module_globals)
        self.scopes[id(module_globals)] = (module_globals, scope)
        for name, value in list(module_globals.items()):
            if isinstance(value, InterpretedFunction):
                scope[name] = self.jit_twin(value)
        return scope

    def jit_twin(self, value):
        """`value`'s JITFunction twin if it is an interpreter kernel (triton.language's own @jit
        functions, tl.sum, tl.zeros, ..., are interpreter kernels too under TRITON_INTERPRET=1);
        anything else as it is."""
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        if not isinstance(value, InterpretedFunction):
            return value
        known = self.twins.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        fn = value.fn
        scope = self._scope(fn.__globals__)
        known = self.twins.get(id(value))  # made while the module's scope was built
        if known is not None and known[0] is value:
            return known[1]
        copy = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
        copy.__qualname__, copy.__module__, copy.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
        copy.__kwdefaults__ = fn.__kwdefaults__
        copy.__annotations__ = dict(getattr(fn, "__annotations__", {}))  # tl.constexpr parameters
        options = {k: v for k, v in value.kwargs.items() if k in (
            "version", "do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline")}
        twin = JITFunction(copy, **options)
        self.twins[id(value)] = (value, twin)
        return twin

    def _binder(self, interpreted):
        from triton.runtime.jit import create_function_from_signature

        known = self.binders.get(id(interpreted))
        if known is not None and known[0] is interpreted:
            return known[1], known[2]
        jit = self.jit_twin(interpreted)
        binder = create_function_from_signature(jit.signature, jit.params, self.backend)
        self.binders[id(interpreted)] = (interpreted, jit, binder)
        return jit, binder

    # -- one launch ------------------------------------------------------------------------------
    def check(self, interpreted, args: tuple, kwargs: dict) -> None:
        """Raise GPUCompileError if the launch's specialization does not compile for the target."""
        import time

        from triton import knobs

        kwargs = dict(kwargs)
        kwargs["debug"] = kwargs.get("debug", interpreted.kwargs.get("debug")) or knobs.runtime.debug
        try:
            jit, binder = self._binder(interpreted)
            bound_args, specialization, options = binder(*args, **kwargs)
            key = (id(interpreted), str(specialization), str(options), allocator_set())
        except Exception as exc:  # noqa: BLE001 - the launch's arguments do not fit the kernel
            raise GPUCompileError(compile_error_message(exc)) from None
        self.active = None
        if key in self.verdicts:
            known = self.verdicts[key]
            if known is not None:
                raise _refused(known) from None
            self.active = self.reached[key]
            return
        started = time.perf_counter()
        told = self.on_compile
        if told is not None:
            told("start", getattr(interpreted.fn, "__name__", "?"))
        try:
            with self.compiler_stderr.captured():
                message, record = self._compile_apart(interpreted, jit, kwargs, bound_args, specialization, options)
        finally:
            self.compiles += 1
            self.compile_s += time.perf_counter() - started
            if told is not None:
                told("end", None)
        if message is not None:
            self.verdicts[key] = message
            raise _refused(message) from None
        self.verdicts[key] = None
        self.reached[key] = record
        self.active = record

    def _compile_once(self, jit, kwargs, bound_args, specialization, options) -> tuple[str | None, dict]:
        """Compile one launch's specialization in this process (fd 2 already captured): (None, the
        nodes visited) or (the failed compile's message, {})."""
        global _RECORD
        _RECORD = {}
        try:
            options, signature, constexprs, attrs = jit._pack_args(self.backend, kwargs, bound_args,
                                                                   specialization, options)
            inline_asm, scratch = self._compile(jit, signature, constexprs, attrs, options)
        except Exception as exc:  # noqa: BLE001 - whatever the compiler raised is the verdict
            # MLIR's diagnostic (`error: 'tt.reduce' op ...`) is on fd 2; the exception says only
            # `PassManager::run failed` or the like.
            return compile_error_message(exc, self.compiler_stderr.peek()), {}
        finally:
            record, _RECORD = _RECORD, None
        if inline_asm:  # it compiles for the GPU (its asm passed ptxas too), and only a GPU runs it
            return gpu_only_asm_message(), {}
        if scratch and not allocator_set():  # a GPU's launch fails before the kernel runs
            return mark(NEEDS_ALLOCATOR_CODE, target=_target_name(), size=scratch), {}
        return None, record

    def _compile_here(self, jit, kwargs, bound_args, specialization, options) -> tuple[str | None, dict]:
        """`_compile_once` in this process, the capture emptied after."""
        try:
            return self._compile_once(jit, kwargs, bound_args, specialization, options)
        finally:
            self.compiler_stderr.empty()

    def _compile_apart(self, interpreted, jit, kwargs, bound_args, specialization, options) -> tuple[str | None, dict]:
        """`_compile_once` in a forked child, so that a compiler that crashes (LLVM's `UNREACHABLE`
        or a failed C++ assertion abort the process; a segfault) ends the child, not the sandbox:
        the crash is then the launch's compile error, with what the compiler wrote to fd 2 (the
        capture's file is shared with the child), as a compile that raised is. On a GPU the same
        compile runs inside the harness's process and ends it (the runner reads it from the log:
        sandbox/runner.py, compiler_crash). Without a fork (no process left), it compiles here.

        A fork costs about 70 ms in a process that has imported torch (lesson 6 on the interpreter:
        15 compiles, 1.1 s more a grading), so only a kernel's compiles until one has succeeded
        are forked: a compiler crash on the kernel's code (inline asm's constraints, an assertion
        on a construct) crashes its first compile. A later specialization that alone crashes the
        compiler ends the sandbox as it did before the fork (a crash, told as such)."""
        if id(interpreted) in self.compiled_before:
            return self._compile_here(jit, kwargs, bound_args, specialization, options)
        try:
            read_fd, write_fd = os.pipe()
        except OSError:
            return self._compile_here(jit, kwargs, bound_args, specialization, options)
        _flush(sys.stdout)
        _flush(sys.stderr)
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            return self._compile_here(jit, kwargs, bound_args, specialization, options)
        if pid == 0:  # the child: compile, send the verdict, and end without Python's exit handlers
            code = 1
            try:
                os.close(read_fd)
                message, record = self._compile_once(jit, kwargs, bound_args, specialization, options)
                payload = json.dumps({"message": message, "record": [
                    [code_id, list(meta), [list(k) for k in keys]] for code_id, (meta, keys) in record.items()]})
                with open(write_fd, "w", encoding="utf-8") as out:
                    out.write(payload)
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        with open(read_fd, "rb") as channel:
            raw = channel.read(MAX_VERDICT_BYTES)
        _, status = os.waitpid(pid, 0)
        try:
            verdict = json.loads(raw) if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else None
        except ValueError:
            verdict = None
        if verdict is None:
            written = self.compiler_stderr.text()
            if status_name(status) in COMPILER_CRASH_SIGNALS and not any(
                    _EXHAUSTED.search(line) for line in written.splitlines()[-2 * _CRASH_CONTEXT - 2:]):
                return compiler_crash_message(written, status_name(status), self.inline_asm), {}
            # Killed (the OOM killer: SIGKILL), out of memory or processes, or ended otherwise: not the
            # compiler's crash. Compile here, as without a fork: the sandbox meets the same limit itself
            # and the runner tells it as such (out of memory, a timeout, the process's end).
            return self._compile_here(jit, kwargs, bound_args, specialization, options)
        self.compiler_stderr.empty()  # a failed compile's words are in its message; a good one's warnings are nobody's
        if verdict["message"] is not None:
            return verdict["message"], {}
        self.compiled_before.add(id(interpreted))
        return None, {int(code_id): (tuple(meta), {tuple(k) for k in keys})
                      for code_id, meta, keys in verdict["record"]}

    def reach(self, code, key: tuple, line: int) -> None:
        """The interpreter is about to run the node `key` of the kernel whose code object is `code`:
        fail the launch unless the compile of this launch visited it."""
        active = self.active
        visited = active.get(id(code)) if active is not None else None
        if visited is None or visited[0] != _code_meta(code) or key not in visited[1]:
            raise GPUCompileError(mark(INTERPRETER_ONLY_CODE, line=line))

    def _compile(self, jit, signature, constexprs, attrs, options) -> tuple[bool, int]:
        """triton.compile's stages up to LAST_STAGE (no cache); whether the kernel as its front end
        made it (before any pass could drop an unused result) holds inline asm (_holds_inline_asm),
        and the global scratch memory (bytes a program) its launch needs (the compiled metadata's)."""
        from triton.compiler import ASTSource

        # Triton prints a failed assembly's whole PTX to stdout: the student's output, not ours.
        with _pristine(self.pristine), contextlib.redirect_stdout(_DISCARD):
            return self._stages(ASTSource(jit, signature, constexprs, attrs), options)

    def _stages(self, src, options) -> tuple[bool, int]:
        from triton._C.libtriton import ir

        backend = self.backend
        options = backend.parse_options(dict(options.__dict__, **src.parse_options()))
        stages: dict = {}
        backend.add_stages(stages, options, src.language)
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        module = src.make_ir(self.target, options, backend.get_codegen_implementation(options),
                             backend.get_module_map(), context)
        inline_asm = _holds_inline_asm(module)
        metadata = {"hash": "kernelgrade-gpu-compile-check", "target": self.target, **options.__dict__}
        for ext, stage in stages.items():
            module = stage(module, metadata)
            if ext == LAST_STAGE:
                break
        return inline_asm, int(metadata.get("global_scratch_size") or 0)

    def install(self) -> None:
        """Check every interpreter launch (`kernel[grid](...)`) before it runs."""
        import launch_hook  # from the job folder
        from triton.runtime.interpreter import InterpretedFunction

        global _GATE
        _GATE = self
        launch_hook.on_launch(lambda kernel, args, kwargs, grid: self.check(kernel, args, kwargs),
                              classes=[InterpretedFunction])
        _record_visits()
        _check_interpreted_source(self)
        _boolean_splats()



def _boolean_splats() -> None:
    """A scalar condition broadcast into a block stays boolean under the interpreter, as it is on a GPU
    (an i1 splat). The interpreter's comparison of scalars keeps its operands' type on the handle (int32,
    holding a numpy bool), and its splat converts to that type, so `(cols < T) & (row < N0)` with a scalar
    `row` (a row loop's guard, Liger's `if row < N0`-free form) was an int32 block: Triton 3.9's masked
    load and store refuse such a mask ("mask has unsupported dtype") and a right kernel failed every case.
    A splat whose result type is int1 now holds booleans; every other splat is left as it was."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import InterpreterBuilder, TensorHandle

    if getattr(InterpreterBuilder, "_kernelgrade_boolean_splat", False):
        return
    original = InterpreterBuilder.create_splat

    def create_splat(self, ret_ty, arg):
        handle = original(self, ret_ty, arg)
        scalar = getattr(ret_ty, "scalar", ret_ty)
        if scalar == tl.int1 and handle.data.dtype != np.bool_:
            return TensorHandle(handle.data.astype(np.bool_), tl.int1)
        return handle

    InterpreterBuilder.create_splat = create_splat
    InterpreterBuilder._kernelgrade_boolean_splat = True

# While the gate compiles a launch: {id(code object): (_code_meta(code), keys of the nodes visited)}. By id, since
# the compile runs in a forked child and sends it back (the parent's code objects are the child's, at the same ids);
# the meta tells a code object made after the fork (whose id the parent may give to another) from the parent's.
_RECORD: dict | None = None


def _code_meta(code) -> tuple:
    return (code.co_filename, code.co_firstlineno, code.co_name, code.co_qualname)


def _node_key(node: ast.AST) -> tuple:
    return (type(node).__name__, getattr(node, "lineno", 0), getattr(node, "col_offset", 0),
            getattr(node, "end_lineno", 0), getattr(node, "end_col_offset", 0))


def _record_visits() -> None:
    """Record every node Triton's code generator visits while the gate compiles (into _RECORD)."""
    from triton.compiler import code_generator as cg

    generator = cg.CodeGenerator
    if getattr(generator, "_kernelgrade_recording", False):
        return
    original = generator.visit

    def visit(self, node):
        record = _RECORD
        if record is not None and node is not None:
            code = getattr(getattr(getattr(self, "jit_fn", None), "fn", None), "__code__", None)
            if code is not None:
                record.setdefault(id(code), (_code_meta(code), set()))[1].add(_node_key(node))
        return original(self, node)

    generator.visit = visit
    generator._kernelgrade_recording = True


_REACH_NAME = "_kernelgrade_reached_"  # the check's name in the kernel module's globals (as Triton puts its own there)


class _ReachChecks(ast.NodeTransformer):
    """Inserts `_kernelgrade_reached_(index, key, line)` before every statement of a kernel, and
    before every operand that Python evaluates lazily, where the compiler may have skipped it."""

    _BODIES = ("body", "orelse", "finalbody")

    def __init__(self, index: int, first_line: int) -> None:
        self.index = index
        self.first_line = first_line

    def _call(self, node: ast.AST) -> ast.expr:
        key = ast.Tuple(elts=[ast.Constant(part) for part in _node_key(node)], ctx=ast.Load())
        call = ast.Call(func=ast.Name(id=_REACH_NAME, ctx=ast.Load()),
                        args=[ast.Constant(self.index), key,
                              ast.Constant(self.first_line + getattr(node, "lineno", 1) - 1)], keywords=[])
        return ast.copy_location(call, node)

    def _guarded(self, node: ast.expr) -> ast.expr:
        """`(check, node)[1]`: the check runs first, then the operand, only where Python evaluates it."""
        pair = ast.copy_location(ast.Tuple(elts=[self._call(node), node], ctx=ast.Load()), node)
        return ast.copy_location(ast.Subscript(value=pair, slice=ast.Constant(1), ctx=ast.Load()), node)

    def _statements(self, stmts: list) -> list:
        out: list = []
        for stmt in stmts:
            self.visit(stmt)  # in place: every visitor here returns its node
            if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):  # a docstring runs nothing
                out.append(ast.copy_location(ast.Expr(self._call(stmt)), stmt))
            out.append(stmt)
        return out

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for name, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt) and name in self._BODIES:
                if not isinstance(node, ast.Module):
                    setattr(node, name, self._statements(value))
                else:
                    for stmt in value:
                        self.visit(stmt)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        node.body, node.orelse = self._guarded(node.body), self._guarded(node.orelse)
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        node.values = node.values[:1] + [self._guarded(v) for v in node.values[1:]]
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        node.comparators = node.comparators[:1] + [self._guarded(v) for v in node.comparators[1:]]
        return node

    def visit_ListComp(self, node: ast.ListComp) -> ast.AST:
        self.generic_visit(node)
        node.elt = self._guarded(node.elt)
        for comp in node.generators:
            comp.ifs = comp.ifs[:1] + [self._guarded(c) for c in comp.ifs[1:]]
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        self.generic_visit(node)
        if node.msg is not None and not isinstance(node.msg, ast.Constant):
            node.msg = self._guarded(node.msg)
        return node


class _TensorInductionVariables(ast.NodeTransformer):
    """Makes the induction variable of a `range(...)` / `tl.range(...)` loop a Triton tensor under the
    interpreter, as the compiler makes it (an scf.for's int32 or int64 value): the interpreter iterates a
    Python range, so `for rb in tl.range(pid, n, step): rb.to(tl.int64)` (the persistent loops of the
    tutorials and Liger) raised "'int' object has no attribute 'to'" here and ran on a GPU. Inserted
    after the reach checks (it is not student code the compiler must have visited) as the loop body's
    first statement, `rb = interpreter_semantic.to_tensor(rb, False)`, Triton's own conversion of an
    assigned value. `tl.static_range` (the compiler unrolls it: the variable is a constexpr, an int
    here too), other iterators and tuple targets are left as they are."""

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        func = node.iter.func if isinstance(node.iter, ast.Call) else None
        ranged = isinstance(func, ast.Name) and func.id == "range" \
            or isinstance(func, ast.Attribute) and func.attr == "range"
        if ranged and isinstance(node.target, ast.Name):
            name = node.target.id
            convert = ast.Call(
                func=ast.Attribute(value=ast.Name(id="interpreter_semantic", ctx=ast.Load()), attr="to_tensor",
                                   ctx=ast.Load()),
                args=[ast.Name(id=name, ctx=ast.Load()), ast.Constant(False)], keywords=[])
            assign = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=convert)
            node.body.insert(0, ast.copy_location(assign, node))
        return node


# The names under which a kernel's `min`/`max` reach _builtin_extremum under the interpreter (in the
# kernel module's globals, as _REACH_NAME is).
_BUILTIN_NAMES = {"min": "_kernelgrade_builtin_min_", "max": "_kernelgrade_builtin_max_"}


def _builtin_extremum(name: str):
    """`min`/`max` as Triton's compiler reads them in a kernel (its builtin_namespace maps them to
    tl.core.builtin_min/builtin_max): of numbers, Python's; with a tensor among the arguments, element-wise
    (tl.minimum/tl.maximum, NaN not propagated, left to right). The interpreter ran Python's own, which
    compares a whole block with `<` and returns one of the arguments as it is: `min(cols, T - 1)` (a CUDA
    port's clamp) gave T - 1 in every lane, where a GPU gives each lane its own minimum."""
    import builtins

    python = getattr(builtins, name)

    def extremum(*args, **kwargs):
        import triton.language as tl

        values = [tl.core._unwrap_if_constexpr(a) for a in args]
        if kwargs or len(values) < 2 or not any(isinstance(v, tl.core.base_value) for v in values):
            return python(*values, **kwargs)
        combine = tl.minimum if name == "min" else tl.maximum
        result = values[0]
        for value in values[1:]:
            result = combine(result, value)
        return result

    extremum.__name__ = extremum.__qualname__ = f"builtin_{name}"
    return extremum


class _CompilerBuiltins(ast.NodeTransformer):
    """Makes a kernel's `min`/`max` under the interpreter the compiler's (_builtin_extremum): each load
    of the name becomes _BUILTIN_NAMES' name, unless the kernel binds it (an argument, an assignment, a
    loop target) or its module defines it (the compiler's lookup takes the module's name first)."""

    def __init__(self, module_globals: dict, tree: ast.AST) -> None:
        nodes = list(ast.walk(tree))
        bound = {node.id for node in nodes if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}
        bound |= {node.arg for node in nodes if isinstance(node, ast.arg)}
        self.names = {name: alias for name, alias in _BUILTIN_NAMES.items()
                      if name not in bound and name not in module_globals}

    def visit_Name(self, node: ast.Name) -> ast.AST:
        alias = self.names.get(node.id)
        if alias is None or not isinstance(node.ctx, ast.Load):
            return node
        return ast.copy_location(ast.Name(id=alias, ctx=ast.Load()), node)


_BOOLOP_NAME = "_kernelgrade_boolop_"
_NOT_NAME = "_kernelgrade_not_"


def _compiler_boolop(is_and: bool, *operands):
    """`a and b and ...` / `a or b or ...` as Triton's compiler reads them in a kernel (CodeGenerator.visit_BoolOp):
    each operand evaluated in order (`operands` are thunks); a non-tensor (a constexpr, a number) short-circuits
    as in Python when it decides the result and is otherwise left out; the tensors are combined element-wise
    with logical_and/logical_or. The interpreter ran Python's, which asks a whole block for its truth (always
    True there) and returned an operand as it was: `(rows < N0) and (cols < T)` was the column mask alone."""
    import triton.language as tl

    tensors: list = []
    value = None
    for operand in operands:
        value = operand()
        if isinstance(value, tl.tensor):
            tensors.append(value)
        elif bool(value) is not is_and:
            return value
    if not tensors:
        return value
    while len(tensors) >= 2:
        rhs, lhs = tensors.pop(), tensors.pop()
        tensors.append(lhs.logical_and(rhs) if is_and else lhs.logical_or(rhs))
    return tensors[0]


def _compiler_not(value):
    """`not x` as the compiler reads it (CodeGenerator.visit_UnaryOp): a tensor's logical not, element-wise;
    anything else Python's `not`. The interpreter's `not` of a block was always False."""
    import triton.language as tl

    return value.__not__() if isinstance(value, tl.tensor) else not value


class _CompilerBooleans(ast.NodeTransformer):
    """Makes a kernel's `and`/`or`/`not` under the interpreter the compiler's (_compiler_boolop,
    _compiler_not). Each operand after the first stays lazy (a thunk), as the reach checks expect: the
    compiler evaluates it unless a constexpr before it decided the result."""

    @staticmethod
    def _thunk(node: ast.expr) -> ast.expr:
        arguments = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                                  defaults=[])
        return ast.copy_location(ast.Lambda(args=arguments, body=node), node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        call = ast.Call(func=ast.Name(id=_BOOLOP_NAME, ctx=ast.Load()),
                        args=[ast.Constant(isinstance(node.op, ast.And)), *map(self._thunk, node.values)], keywords=[])
        return ast.copy_location(call, node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        return ast.copy_location(ast.Call(func=ast.Name(id=_NOT_NAME, ctx=ast.Load()), args=[node.operand],
                                          keywords=[]), node)


def _check_interpreted_source(gate: CompileGate) -> None:
    """Make Triton's interpreter run the cell's kernels from the source its compiler parses, with
    the reach checks (_ReachChecks) in it. Triton's own functions (tl.sum, ...) are left as they are."""
    import inspect

    from triton.runtime.interpreter import FunctionRewriter

    if getattr(FunctionRewriter, "_kernelgrade_checked", False):
        return
    original = FunctionRewriter.rewrite_ast
    codes: list = []  # index -> code object of the kernel the checks belong to

    def reached(index: int, key: tuple, line: int) -> None:
        gate.reach(codes[index], key, line)

    def rewrite_ast(self):
        fn = self.fn
        if not _student_function(fn):
            return original(self)
        lines, _ = inspect.getsourcelines(fn)
        src = textwrap.dedent("".join(lines))  # as JITFunction does: dedent, then from the first `def`
        found = re.search(r"^def\s+\w+\s*\(", src, re.MULTILINE)
        if found is None:
            raise GPUCompileError(mark(INTERPRETER_ONLY_CODE, line=fn.__code__.co_firstlineno))
        self.filename, self.def_file_lineno = self._get_jit_fn_file_line()
        tree = ast.parse(src[found.start():])
        codes.append(fn.__code__)
        tree = _ReachChecks(len(codes) - 1, self.def_file_lineno).visit(tree)
        tree = _TensorInductionVariables().visit(tree)
        tree = _CompilerBuiltins(fn.__globals__, tree).visit(tree)
        tree = _CompilerBooleans().visit(tree)
        tree = self.ast_transformer.visit(tree)
        ast.fix_missing_locations(tree)
        ast.increment_lineno(tree, self.def_file_lineno - 1)
        fn.__globals__[_REACH_NAME] = reached
        for name, alias in _BUILTIN_NAMES.items():
            fn.__globals__.setdefault(alias, _builtin_extremum(name))
        fn.__globals__.setdefault(_BOOLOP_NAME, _compiler_boolop)
        fn.__globals__.setdefault(_NOT_NAME, _compiler_not)
        return self._compile_and_exec(tree)

    FunctionRewriter.rewrite_ast = rewrite_ast
    FunctionRewriter._kernelgrade_checked = True


def _forbidden_attribute(name: str) -> bool:
    """An attribute a kernel may not read: the interpreter's storage behind a value (`handle`:
    numpy arrays and raw addresses there, IR values in the compiler) or any private one (`_x`,
    dunders): through them the interpreter's objects (`tl.sum.rewriter._compile_and_exec`, a
    function's `__globals__`) differ from the compiler's. Triton code reads neither."""
    return name == "handle" or name.startswith("_")


@functools.lru_cache(maxsize=256)
def _outside_triton(filename: str) -> bool:
    import triton

    package = os.path.join(os.path.dirname(os.path.realpath(triton.__file__)), "")
    return not os.path.realpath(filename).startswith(package)


def _attribute(value, name: str, default=None):
    """`getattr(value, name, default)` for a value the student's code reaches at compile time: the
    default also when the value's own `__getattr__` raises other than AttributeError (Triton 3.6's
    tl.tuple raises ValueError), so the compile hooks refuse or pass it instead of failing on it."""
    try:
        return getattr(value, name, default)
    except Exception:  # noqa: BLE001  (whatever a value's __getattr__ raises)
        return default


def _student_function(fn) -> bool:
    """`fn` (a function, or a JITFunction/InterpretedFunction around one) is defined outside Triton's
    own package: the cell's kernels and helpers (and the harness's canary), not triton.language's."""
    inner = _attribute(fn, "fn", fn)
    code = _attribute(inner, "__code__", None)
    return code is not None and _outside_triton(code.co_filename)


def restrict_compile_time_calls() -> bool:
    """Make Triton's front end refuse to call plain Python at compile time (both modes).

    The code generator calls any callable it does not recognise (`ret = fn(*args, **kws)`), so a
    kernel can reach `tl.core.builtins.exec` or `torch.sys._getframe` and run arbitrary Python
    while it compiles, on a GPU too. What stays allowed is what Triton code calls: @triton.jit
    functions, triton.language builtins, constexpr functions, methods of Triton values, Python's
    builtins that Triton lists (len, range, min, max, int, float, isinstance, getattr, hasattr,
    print), triton.language's and triton's own pure helpers (triton.cdiv, triton.next_power_of_2),
    and methods of plain numbers and strings (constexpr arithmetic).

    Returns whether the restriction is in place: a Triton whose code generator lacks the hooks
    used here (another version than the one this was written against, 3.9) is left as it is.
    """
    try:
        from triton.compiler import code_generator as cg
        from triton.runtime import jit as jit_module

        generator = cg.CodeGenerator
        if getattr(generator, "_kernelgrade_restricted", False):
            return True
        original = generator.call_Function
        original_attribute = generator.get_Attribute
        allowed_builtins = tuple(generator.builtin_namespace.values())
        is_triton_value = cg._is_triton_value
        bound_method = cg.BoundJITMethod
        unsupported = cg.UnsupportedLanguageConstruct
    except (ImportError, AttributeError):
        return False
    jit_callable = getattr(jit_module, "JITCallable", jit_module.JITFunction)
    plain = (int, float, bool, str, tuple, type(None))

    def is_allowed(fn) -> bool:
        from triton import language

        inner = _attribute(fn, "__func__", fn)
        try:
            builtin = bool(language.core.is_builtin(fn))  # getattr(fn, "__triton_builtin__", False)
        except Exception:  # noqa: BLE001  (the value's own __getattr__, as in _attribute)
            builtin = False
        if isinstance(fn, jit_callable) or builtin or any(fn is b for b in allowed_builtins):
            return True
        if type(fn).__name__ in ("BoundJITMethod", "BoundConstexprFunction", "ConstexprFunction"):
            return True
        owner = _attribute(fn, "__self__", None)
        if owner is not None and not isinstance(owner, types.ModuleType) and (
                is_triton_value(owner) or isinstance(owner, (*plain, language.dtype, language.constexpr))):
            return True
        module = _attribute(inner, "__module__", None)
        module = module if isinstance(module, str) else ""
        if isinstance(fn, type) and (module.startswith("triton.language") or fn in plain):
            return True  # tl.constexpr(...), tl.tuple(...), dtype constructors, int(...)
        helper = _attribute(inner, "__qualname__", None) in ("cdiv", "next_power_of_2") and module.startswith("triton")
        return isinstance(inner, types.FunctionType) and (module.startswith("triton.language") or helper)

    def twin(value):
        return _GATE.jit_twin(value) if _GATE is not None else value

    def refuse_attribute(self, attr) -> None:
        if isinstance(attr, str) and _forbidden_attribute(attr) and _student_function(_attribute(self, "jit_fn", None)):
            raise unsupported(self.jit_fn.src, self.cur_node, mark(PYTHON_ATTRIBUTE_CODE, name=attr[:80]))

    def member_twin(lhs, value):
        """A tensor method that triton.language adds from a @jit function (`x.max(0)`, `x.sum(axis=1)`,
        `x.cumsum(1)`: tl.core._tensor_member_fn): on a GPU the class holds the JITFunction itself and the
        code generator binds it (BoundJITMethod). Under TRITON_INTERPRET=1 the @jit function was an
        InterpretedFunction when the class got it, so the class holds a plain wrapper calling the
        interpreter's version, which the compile would run on IR values ("'value' object has no
        attribute 'data'"). Bound here to the function's JITFunction twin, as on a GPU. Only a bound method
        is looked into: any other value is left as it is without asking it for an attribute, since a
        Triton value's own `__getattr__` may raise other than AttributeError (Triton 3.6's tl.tuple, which
        `x.shape` is, raises ValueError for `__func__`: every `x.shape` of a tensor, a kernel's own or tl.sort's, failed
        the compile on a GPU too, where this hook is installed as well)."""
        if not isinstance(value, types.MethodType):
            return value
        func = value.__func__
        if (value.__self__ is not lhs or getattr(func, "__qualname__", "") != MEMBER_WRAPPER
                or getattr(func, "__module__", "") != "triton.language.core"):
            return value
        for cell in func.__closure__ or ():
            inner = twin(cell.cell_contents)
            if isinstance(inner, jit_module.JITFunction):
                return bound_method(lhs, inner)
        return value

    def get_Attribute(self, lhs, attr):
        refuse_attribute(self, attr)
        value = twin(original_attribute(self, lhs, attr))
        if is_triton_value(lhs):
            value = member_twin(lhs, value)
        if is_triton_value(lhs) and isinstance(value, jit_module.JITFunction) and not isinstance(value, bound_method):
            return bound_method(lhs, value)
        return value

    def call_Function(self, node, fn, args, kws):
        fn = twin(fn)
        if not is_allowed(fn):
            name = _attribute(fn, "__qualname__", None) or _attribute(fn, "__name__", None) or type(fn).__name__
            module = _attribute(fn, "__module__", None) or ""
            shown = f"{module}.{name}" if module and module != "builtins" else str(name)
            raise unsupported(self.jit_fn.src, node, mark(PYTHON_CALL_CODE, name=shown[:80]))
        if (fn is getattr or fn is hasattr) and len(args) >= 2:
            refuse_attribute(self, _attribute(args[1], "value", args[1]))
        return original(self, node, fn, args, kws)

    generator.call_Function = call_Function
    generator.get_Attribute = get_Attribute
    generator._kernelgrade_restricted = True
    return True
