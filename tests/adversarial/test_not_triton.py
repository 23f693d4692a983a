"""Whole-body puzzle fills that are not Triton (issue 16, item 1; issue 15, item 4).

Under the Triton interpreter a kernel body runs as Python, so a body could walk up the frames and
compute the answer with torch, write through numpy/ctypes on the raw pointers, or use constructs
that Triton's compiler rejects (`tl.static_range` with a runtime bound, a loop variable first
defined inside a `while`), and earn 10/10 on the CPU while a GPU compile refuses it. The sandbox
now compiles every launch for a GPU target first (sandbox/gpu_compile.py): each body below must
fail on every case, with the compiler's message in the case's error, and earn no code points.
The same bodies fail to compile on a GPU, so these tests run in both modes; the gate's bilingual
preamble is checked on the interpreter only (on a GPU the error is Triton's own).
"""
from __future__ import annotations

import textwrap

import pytest

from sandbox.contract import DeviceMode, Limits
from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.submission import Submission
from tests.adversarial.kit import (
    QUICK,
    SECRET_SEED,
    assert_graded_normally,
    close_started,
    device_mode,
    started,
)

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial]

PUZZLE = "puzzle_long_sum"
TEMPLATE = (REPO_ROOT / "exercises" / PUZZLE / "template.py").read_text(encoding="utf-8")
GATE_WORDS = ("无法为 GPU 编译", "does not compile for a GPU")

# The frames of long_sum (the template's wrapper) hold x and z; `buf` names that frame.
FRAME_WALK = ("import sys\nf = sys._getframe(1)\nwhile f is not None and 'buf' not in f.f_locals:\n"
              "    f = f.f_back\nf.f_locals['z'].copy_(f.f_locals['x'].sum(1))\n")

BODIES = {
    # (body, a phrase of Triton's own message)
    "static-range-runtime-bound": ('''
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
acc = tl.zeros((B0,), dtype=tl.float32)
for start in tl.static_range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    acc += tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0), axis=1)
tl.store(z_ptr + rows, acc, mask=row_mask)
''', "static_range end value is not a constexpr"),
    "accumulator-first-defined-in-while": ('''
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
start = 0
while start < T:
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    part = tl.sum(tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0), axis=1)
    if start == 0:
        acc = part
    else:
        acc += part
    start += B1
tl.store(z_ptr + rows, acc, mask=row_mask)
''', "acc is not defined"),
    "frame-walking-torch": ('''
import sys
frame = sys._getframe(1)
while frame is not None and "buf" not in frame.f_locals:
    frame = frame.f_back
frame.f_locals["z"].copy_(frame.f_locals["x"].sum(1))
''', "unsupported AST node type: Import"),
    # The same walk run by the compiler itself (Triton calls what it does not know while it
    # compiles, on a GPU too): refused as a call of plain Python.
    "frame-walking-at-compile-time": (f'''
tl.core.builtins.exec({FRAME_WALK!r})
''', "calling the Python function `exec`"),
    # Writes through the raw pointers (the interpreter passes tensors' addresses in `.handle`). One
    # expression each: the interpreter wraps every assigned value as a tensor. Both earn full
    # marks on the interpreter without the GPU compile.
    "ctypes-pointer-write": ("""
import ctypes
[setattr(ctypes.c_float.from_address(int(z_ptr.handle.data.item()) + 4 * r), "value", sum(ctypes.c_float.from_address(int(x_ptr.handle.data.item()) + 4 * (r * int(T.handle.data.item()) + j)).value for j in range(int(T.handle.data.item())))) for r in range(int(tl.program_id(0).handle.data.item()) * B0, min(int(N0.handle.data.item()), int(tl.program_id(0).handle.data.item()) * B0 + B0))]
""", "unsupported AST node type: Import"),
    "numpy-pointer-write": ("""
import ctypes
import numpy
[numpy.copyto(numpy.frombuffer((ctypes.c_float * int(N0.handle.data.item())).from_address(int(z_ptr.handle.data.item())), numpy.float32), numpy.frombuffer((ctypes.c_float * (int(N0.handle.data.item()) * int(T.handle.data.item()))).from_address(int(x_ptr.handle.data.item())), numpy.float32).reshape(int(N0.handle.data.item()), int(T.handle.data.item())).sum(1)) for _ in range(1)]
""", "unsupported AST node type: Import"),
}


@pytest.fixture(scope="module")
def grader():
    grader = started(build_grader(Settings(limits=Limits(**QUICK))))  # KERNELGRADE_TEST_WARM_POOL (kit.py)
    yield grader
    close_started(grader)


def body_submission(body: str) -> str:
    assert TEMPLATE.count("______") == 1
    return TEMPLATE.replace("______", textwrap.indent(body.strip("\n"), "    ").lstrip(), 1)


@pytest.mark.parametrize("name", list(BODIES))
def test_a_body_that_a_gpu_compile_rejects_fails_everywhere(grader, host, name):
    body, triton_says = BODIES[name]
    report = grader.grade(Submission(exercise=PUZZLE, code=body_submission(body)), secret_seed=SECRET_SEED)
    assert report.status == "graded" and report.program.ran, report.to_json()[:2000]
    assert not report.score.passed
    code_items = [i for i in report.items if i.id.startswith("code.") and i.id != "code.explanation"]
    assert code_items and all(i.points == 0 for i in code_items), [(i.id, i.points) for i in code_items]
    assert report.given_check.status == "failed" and triton_says in report.given_check.output, report.given_check
    for c in report.cases:
        if c.kind == "given":
            continue
        if c.passed:
            # T = 1: Triton specializes an integer argument equal to 1 as a constant, so there the
            # static_range bound is a constexpr and the kernel compiles (and is right) on a GPU too.
            assert name == "static-range-runtime-bound" and c.id == "boundary.t_one", c
            continue
        assert c.error and triton_says in c.error, (c.id, c.error)
        if device_mode() is DeviceMode.interpreter:
            assert all(w in c.error for w in GATE_WORDS), c.error
    host.assert_untouched()


def test_the_reference_body_still_compiles_and_earns_full_marks(grader, host):
    solution = (REPO_ROOT / "exercises" / PUZZLE / "solution.py").read_text(encoding="utf-8")
    report = grader.grade(Submission(exercise=PUZZLE, code=solution), secret_seed=SECRET_SEED)
    code_items = [i for i in report.items if i.id.startswith("code.") and i.id != "code.explanation"]
    assert all(i.points == i.max_points for i in code_items), [(i.id, i.points, i.feedback) for i in code_items]
    assert all(c.passed for c in report.cases), [(c.id, c.error) for c in report.cases if not c.passed]
    host.assert_untouched()
    assert_graded_normally()


# --- bodies that compile as one kernel and run as another on the interpreter -------------------
# A static condition is decided in Python by the compiler and by the interpreter, and the two see
# different things: under the interpreter tl.arange is its numpy twin (not tl.core.arange), a
# tensor's `.handle` holds numpy arrays instead of IR values. So the GPU compile took the empty
# branch (nothing to refuse) and the interpreter ran the frame walk: each earned 10/10 before the
# interpreter was made to run only what the compile of the same launch visited (gpu_compile.py).
# On a GPU these bodies store nothing and fail by their values.
DIVERGE = "tl.arange is not tl.core.arange"  # False when compiled, True while interpreted
INTERPRETER_ONLY_WORDS = ("GPU 编译从未编译这段代码", "GPU compile of the same launch never compiled it")
INTERPRETER_ONLY = {
    "static-if": f"if {DIVERGE}:\n    exec({FRAME_WALK!r})\n",
    "static-range": f"for _ in tl.static_range(0, ({DIVERGE}) * 1):\n    exec({FRAME_WALK!r})\n",
    "and": f"{DIVERGE} and exec({FRAME_WALK!r})\n",
    "conditional-expression": f"exec({FRAME_WALK!r}) if {DIVERGE} else 0\n",
    "comprehension-filter": f"[exec({FRAME_WALK!r}) for _ in (1,) if {DIVERGE}]\n",
}


def code_points(report) -> float:
    items = [i for i in report.items if i.id.startswith("code.") and i.id != "code.explanation"]
    assert items
    return sum(i.points for i in items)


@pytest.mark.parametrize("name", list(INTERPRETER_ONLY))
def test_code_only_the_interpreter_runs_fails(grader, host, name):
    report = grader.grade(Submission(exercise=PUZZLE, code=body_submission(INTERPRETER_ONLY[name])),
                          secret_seed=SECRET_SEED)
    assert report.status == "graded" and report.program.ran, report.to_json()[:2000]
    assert not report.score.passed and code_points(report) == 0, [(i.id, i.points) for i in report.items]
    assert report.given_check.status == "failed", report.given_check
    passed = [c.id for c in report.cases if c.passed]
    assert not passed, passed
    if device_mode() is DeviceMode.interpreter:
        english = report.translations["en"]
        for c in report.cases:
            if c.kind != "given":
                assert INTERPRETER_ONLY_WORDS[0] in (c.error or ""), (c.id, c.error)
                assert INTERPRETER_ONLY_WORDS[1] in (english.cases[c.id].error or ""), english.cases[c.id]
    host.assert_untouched()


def test_reading_a_values_handle_is_refused_by_the_compile(grader, host):
    """`hasattr(x_ptr.handle, "data")` is False when compiled and True when interpreted; the handle
    (numpy arrays, raw addresses) is refused in a kernel on every device."""
    body = f"if hasattr(x_ptr.handle, 'data'):\n    exec({FRAME_WALK!r})\n"
    report = grader.grade(Submission(exercise=PUZZLE, code=body_submission(body)), secret_seed=SECRET_SEED)
    assert report.status == "graded" and code_points(report) == 0, report.to_json()[:2000]
    for c in report.cases:
        assert not c.passed and "`.handle`" in (c.error or ""), (c.id, c.error)
    host.assert_untouched()


def test_static_branches_on_constexprs_still_earn_full_marks(grader, host):
    """What an honest body does with static Python: a docstring, `if`/`and`/`x if c else y` on
    constexprs, an assert with a message, tl.static_range, a runtime `if` on a tensor."""
    body = '''
"""Row sums: one program per B0 rows, B1 columns at a time."""
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0 if B0 > 1 else rows < N0 + 0
acc = tl.zeros((B0,), dtype=tl.float32)
assert B1 > 0, "B1 must be positive"
if B0 > 1 and B1 > 1:
    step: tl.constexpr = B1
else:
    step: tl.constexpr = B1 * 1
for start in range(0, T, step):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
    if start >= 0:
        acc += tl.sum(x, axis=1)
    else:
        acc += 0.0
for _ in tl.static_range(2):
    acc = acc * 1.0
tl.store(z_ptr + rows, acc, mask=row_mask)
'''
    report = grader.grade(Submission(exercise=PUZZLE, code=body_submission(body)), secret_seed=SECRET_SEED)
    items = [i for i in report.items if i.id.startswith("code.") and i.id != "code.explanation"]
    assert all(i.points == i.max_points for i in items), [(i.id, i.points, i.feedback) for i in items]
    assert all(c.passed for c in report.cases), [(c.id, c.error) for c in report.cases if not c.passed]
    host.assert_untouched()


# inline asm whose constraints do not match its arguments ("=r,r,r": one output, two inputs, for one argument).
# Triton passes it to LLVM, which aborts the process (`number of input constraints does not match number of
# parameters`, `UNREACHABLE executed at ...Error.h`) instead of raising: on a GPU the compile kills the sandbox's
# process the same way. It is the student's compile error (every case fails with the compiler's words and a hint
# about the constraints), not a crash of the sandbox: no "process ended abnormally", no restarts, no skipped case.
ASM_CRASH_BODY = '''
pid = tl.program_id(0)
rows = pid * B0 + tl.arange(0, B0)
row_mask = rows < N0
acc = tl.zeros((B0,), dtype=tl.float32)
for start in range(0, T, B1):
    cols = start + tl.arange(0, B1)
    mask = row_mask[:, None] & (cols[None, :] < T)
    x = tl.load(x_ptr + rows[:, None] * T + cols[None, :], mask=mask, other=0.0)
    acc += tl.sum(x, axis=1)
acc = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r", [acc], dtype=tl.float32, is_pure=True, pack=1)
tl.store(z_ptr + rows, acc, mask=row_mask)
'''
CRASH_WORDS = ("编译器在为 GPU 编译你的 kernel 时崩溃", "Triton's compiler crashed compiling your kernel")
ASM_HINT = "inline_asm_elementwise's constraints: one output plus one input per argument"
LLVM_SAYS = "number of input constraints does not match number of parameters"


def test_a_kernel_that_crashes_the_compiler_is_a_compile_error(grader, host):
    report = grader.grade(Submission(exercise=PUZZLE, code=body_submission(ASM_CRASH_BODY)), secret_seed=SECRET_SEED)
    assert report.status == "graded" and report.program.ran, report.to_json()[:2000]
    assert not report.score.passed
    code_items = [i for i in report.items if i.id.startswith("code.") and i.id != "code.explanation"]
    assert code_items and all(i.points == 0 for i in code_items), [(i.id, i.points) for i in code_items]
    given = report.given_check
    assert given.status == "failed", given  # a compile error, not "crashed"
    assert LLVM_SAYS in given.output and "进程异常退出" not in given.output, given.output
    for c in report.cases:
        if c.kind == "given":
            continue
        assert not c.passed and c.error, c
        assert LLVM_SAYS in c.error and all(w in c.error for w in CRASH_WORDS) and ASM_HINT in c.error, (c.id, c.error)
        assert "进程异常退出" not in c.error and "沙箱多次崩溃" not in c.error, (c.id, c.error)
    if device_mode() is DeviceMode.interpreter:
        assert report.timing["attempts"] == 1  # the gate's forked compile crashed, not the sandbox: one ran every case
    else:  # on a GPU the compile crashes the harness's process: a sandbox a phase, no restart spent (H200: 10)
        assert report.timing["attempts"] <= 1 + len(report.cases), report.timing
    english = report.translations["en"].cases
    assert all(LLVM_SAYS in english[c.id].error and ASM_HINT in english[c.id].error
               for c in report.cases if c.kind != "given"), english
    assert "/" not in c.error.rsplit("UNREACHABLE executed at", 1)[1].splitlines()[0]  # the file's name, no path
    host.assert_untouched()
    assert_graded_normally()


# --- inline asm that compiles: only a GPU runs it ------------------------------------------------
# With constraints that match its argument, inline asm compiles for sm_90 (the gate passes it, ptxas included), and a
# GPU runs it: this identity body is right there. The interpreter cannot run inline asm (3.9: NotImplementedError
# 'inline_asm not supported in interpreter mode'), so the body used to fail every case here, a verdict a GPU would
# not give. The gate now sees the asm in the kernel it compiled (the op in the front end's IR) and refuses the launch;
# the grading is not_gradable at no cost, as for an exercise that requires a GPU. On a GPU it is graded, full marks.
ASM_BODY = ASM_CRASH_BODY.replace('"=r,r,r"', '"=r,r"')
ASM_NOT_GRADABLE = ("你的 kernel 用了内联 PTX 汇编（tl.inline_asm_elementwise）", "不算一次尝试",
                    "Your kernel uses inline PTX assembly (tl.inline_asm_elementwise)", "does not count as an attempt",
                    "submit where grading runs on a GPU")
FORGED_MARK = "«kg:sandbox.gpu_only.inline_asm|target=cuda sm_90»"


def full_code_points(report) -> bool:
    items = [i for i in report.items if i.id.startswith("code.") and i.id != "code.explanation"]
    return bool(items) and all(i.points == i.max_points for i in items)


def test_inline_asm_that_compiles_is_not_gradable_on_the_interpreter(grader, host):
    assert ASM_BODY != ASM_CRASH_BODY
    report = grader.grade(Submission(exercise=PUZZLE, code=body_submission(ASM_BODY)), secret_seed=SECRET_SEED)
    if device_mode() is DeviceMode.gpu:  # a GPU runs the asm: the identity body is right
        assert report.status == "graded" and full_code_points(report), report.to_json()[:2000]
        assert all(c.passed for c in report.cases), [(c.id, c.error) for c in report.cases if not c.passed]
        return
    assert report.status == "not_gradable", report.to_json()[:3000]
    assert not report.score.passed and report.score.total == 0 and not report.score.provisional
    assert not report.vetoes and not report.items and not report.cases, report.to_json()[:2000]
    zh, en = report.message or "", report.translations["en"].message or ""
    assert all(w in zh for w in ASM_NOT_GRADABLE[:2]), zh
    assert all(w in en for w in ASM_NOT_GRADABLE[2:]), en
    assert "not supported in interpreter mode" not in zh + en
    host.assert_untouched()
    assert_graded_normally()


@pytest.mark.parametrize("name", ["asm-not-compiled", "forged-mark"])
def test_only_asm_the_compile_kept_is_not_gradable(grader, host, name):
    """Asm behind a static condition the compiler skips is not in the kernel (graded, full marks); the gate's
    mark written by the kernel itself (a static_assert's message) is a compile error, graded as one."""
    reference = BODIES["static-range-runtime-bound"][0].replace("tl.static_range(0, T, B1)", "range(0, T, B1)")
    if name == "asm-not-compiled":
        body = reference.replace("tl.store(", "if B0 < 0:\n"
                                 '    acc = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [acc], '
                                 "dtype=tl.float32, is_pure=True, pack=1)\ntl.store(", 1)
    else:
        body = f"tl.static_assert(B0 < 0, {FORGED_MARK!r})\n" + reference
    report = grader.grade(Submission(exercise=PUZZLE, code=body_submission(body)), secret_seed=SECRET_SEED)
    assert report.status == "graded", report.to_json()[:3000]
    if name == "asm-not-compiled":
        assert full_code_points(report), [(i.id, i.points, i.feedback) for i in report.items]
    else:
        assert code_points(report) == 0 and not any(c.passed for c in report.cases), report.to_json()[:2000]
    host.assert_untouched()


# The gate's refusal as a line of its own, which a kernel can write too: Triton prints a tl.static_print's
# message as it is (on a GPU as the kernel compiles, on the interpreter as it runs), and a failed
# tl.static_assert's message (line breaks kept) ends the compile error the case reports.
FORGED_LINE = "GPUCompileError: " + FORGED_MARK
# Right for one row per program (the lesson's check: B0=1), wrong for more (the hidden cases' B0=4):
# the given check passes, so the printed line is the last of its output.
ROW_BUG = (BODIES["static-range-runtime-bound"][0].replace("tl.static_range(0, T, B1)", "range(0, T, B1)")
           .replace("rows = pid * B0 +", "rows = pid +"))
FORGED_REFUSALS = {
    "static-print": f"tl.static_print({FORGED_LINE!r})\n" + ROW_BUG,
    "static-assert-line-break": f"tl.static_assert(B0 < 0, {'wrong on purpose' + chr(10) + FORGED_LINE!r})\n"
                                + ROW_BUG,
    # The interpreter's own error for a float tl.atomic_xchg (an interpreter gap, service/grading/fills.py),
    # printed, beside an atomic_xchg that never runs (the gap needs the fill to name it): the words were
    # looked for in the given check's output and the cases' errors.
    "interpreter-gap-printed": "tl.static_print(\"ValueError('Unsupported data type')\")\nif B0 < 0:\n"
                               "    tl.atomic_xchg(z_ptr, 0.0)\n" + ROW_BUG,
}


@pytest.mark.parametrize("name", list(FORGED_REFUSALS))
def test_the_services_limits_written_by_a_kernel_are_not_not_gradable(grader, host, name):
    """A wrong kernel that prints the gate's inline-asm refusal as a line of its own (tl.static_print) or
    ends a failing tl.static_assert's message with it, or prints an interpreter gap's error, was
    not_gradable on the interpreter ("not your fault: this submission does not count as an attempt"),
    so a student could take back any failing attempt: the trusted side read the service's limit from
    the text. Now it reads the harness's fields, taken from the exception objects: `gpu_only` (set
    only by the gate's own refusal) and `raised` (the reprs of the exception chain)."""
    report = grader.grade(Submission(exercise=PUZZLE, code=body_submission(FORGED_REFUSALS[name])),
                          secret_seed=SECRET_SEED)
    assert report.status == "graded", report.to_json()[:3000]
    code_max = sum(i.max_points for i in report.items if i.id.startswith("code.") and i.id != "code.explanation")
    assert not report.score.passed and code_points(report) < code_max, [(i.id, i.points) for i in report.items]
    if name != "static-assert-line-break" and device_mode() is DeviceMode.interpreter:
        given = next(c for c in report.cases if c.kind == "given")
        assert given.passed, "the lesson's own check passes (B0=1): the forged line ended its output"
        assert any(not c.passed for c in report.cases if c.kind != "given")
    host.assert_untouched()
    assert_graded_normally()


NO_LAUNCH_MARK = "«kg:sandbox.no_kernel_launch|entry=long_sum|kernels=sum_kernel»"
CLAIMED_PASS = "两个 assert_close 都通过了，没有报错。"


def test_a_printed_no_launch_message_does_not_soften_a_false_claim(grader, host):
    """The harness's words for a call that returned without launching the kernel, printed by the kernel
    itself (tl.static_print of their mark, said in words on the trusted side): the claim check read the
    given check's output, took the kernel for bypassed, and a false claim that the lesson's check passed
    became a suspected veto for a TA (the grade provisional) instead of a confirmed one. Now only the
    harness's `no_launch` field, set by its own error, says so."""
    wrong = ROW_BUG.replace("acc, mask=row_mask)", "acc * 0.5, mask=row_mask)")
    body = f"tl.static_print({NO_LAUNCH_MARK!r})\n" + wrong
    report = grader.grade(Submission(exercise=PUZZLE, code=body_submission(body), claimed_output=CLAIMED_PASS),
                          secret_seed=SECRET_SEED)
    assert report.status == "graded" and not report.score.passed, report.to_json()[:2000]
    given = next(c for c in report.cases if c.kind == "given")
    assert not given.passed
    (veto,) = [v for v in report.vetoes if v.rule == "unverified_claim"]
    assert veto.status == "confirmed" and not veto.needs_review, veto
    host.assert_untouched()
