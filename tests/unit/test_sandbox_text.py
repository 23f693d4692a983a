"""The sandbox's codes rendered on the trusted side: the runner's accounts and the in-sandbox marks."""
from __future__ import annotations

import linecache

from sandbox.contract import CaseRun, DeviceMode, GivenRun, RunResult, Said, SpeedRun
from sandbox.gpu_compile import compile_error_message, mark
from service.grading.sandbox_text import expand_marks, render_run


def _run() -> RunResult:
    result = RunResult(backend="test", mode=DeviceMode.interpreter)
    result.cases = [CaseRun(id="a", status="timeout", said=Said("sandbox.timeout", {"elapsed": 12.34, "limit": 10.0})),
                    CaseRun(id="b", status="error", error="Traceback …\nValueError: x"),
                    CaseRun(id="c", status="error", error=compile_error_message(TypeError("bad type")))]
    result.given = GivenRun(status="skipped", said=Said("sandbox.skipped.budget_spent"))
    result.speed = SpeedRun(status="error", said=Said("sandbox.speed_unparsable"))
    return result


def test_the_runners_codes_read_as_before_in_chinese_and_in_english():
    zh = render_run(_run(), "zh")
    assert zh.cases[0].error == "超时：运行 12.3 秒仍未结束，已强制终止（单个用例上限 10 秒）"
    assert zh.cases[1].error == "Traceback …\nValueError: x"  # the sandbox's own traceback, as it came
    assert zh.given.output == "未运行：运行时间预算已用完"
    assert zh.speed.error == "测速结果无法解析"
    en = render_run(_run(), "en")
    assert en.cases[0].error == "Timed out: still running after 12.3 s, so it was stopped (the limit is 10 s per case)"
    assert en.given.output == "Not run: the run's time budget is spent"


def test_a_gpu_compile_rejection_is_worded_on_the_trusted_side():
    zh, en = render_run(_run(), "zh").cases[2].error, render_run(_run(), "en").cases[2].error
    assert zh.startswith("这个 kernel 无法为 GPU 编译（Triton 编译器，目标 cuda sm_90）")
    assert zh.endswith("TypeError: bad type")
    assert en.startswith("This kernel does not compile for a GPU (Triton's compiler, target cuda sm_90)")
    assert "无法" not in en and "«kg:" not in en


def test_an_assigned_constexpr_is_said_in_both_languages():
    """The mark a compile error gets when a name it needed as a constexpr was assigned (sandbox/gpu_compile.py,
    _constexpr_assignment_hint): in words on the trusted side, with the name, the line and the fix."""
    hint = mark("sandbox.constexpr_assigned", name="XBLOCK", line=2)
    text = "arange's arguments must be of type tl.constexpr\n" + hint
    en, zh = expand_marks(text, "en"), expand_marks(text, "zh")
    assert en.endswith(
        "`XBLOCK` is assigned on line 2 of the kernel (`XBLOCK = ...`): Triton's compiler turns every value "
        "assigned in a kernel into a tensor, so it is no longer a constexpr where one is needed (tl.arange's "
        "arguments, a shape, a tl.static_range bound). Write `XBLOCK: tl.constexpr = ...`, or use the "
        "constexpr parameter itself."), en
    assert "`XBLOCK` 在 kernel 第 2 行是普通赋值" in zh and "`XBLOCK: tl.constexpr = ...`" in zh
    assert "«kg:" not in zh + en



def test_a_launch_that_needs_an_allocator_is_said_in_both_languages():
    """The gate's refusal of a launch whose GPU compile needs global scratch memory and no allocator is set
    (sandbox/gpu_compile.py, NEEDS_ALLOCATOR_CODE): the size, the target, the GPU launcher's own error and the fix."""
    text = mark("sandbox.needs_allocator", target="cuda sm_90", size=128)
    en, zh = expand_marks(text, "en"), expand_marks(text, "zh")
    assert en.startswith("Compiled for a GPU (target cuda sm_90), this kernel needs 128 bytes of global scratch"), en
    assert "no allocator was set" in en and "triton.set_allocator" in en and "tl.make_tensor_descriptor" in en
    assert "128 字节的全局 scratch 内存" in zh and "triton.set_allocator" in zh
    assert "«kg:" not in zh + en

def test_a_mark_naming_an_unknown_code_or_wrong_parameters_is_left_as_written():
    forged = [mark("not_gradable"), mark("sandbox.python_call", other="x"), "«kg:sandbox.python_call|name=f"]
    for text in forged:
        assert expand_marks(text, "en") == text
    assert expand_marks("x " + mark("sandbox.python_call", name="os.system") + " y", "en") == (
        "x calling the Python function `os.system` inside a Triton kernel is not supported: a kernel may call "
        "@triton.jit functions and triton.language (tl.*) functions only y")


def _chained(inner: BaseException | None = None, *, check=None) -> Exception:
    """A compiler error raised `from` another, as Triton's CompilationError(src, node, None) is."""
    try:
        try:
            if check is not None:
                check()
            raise inner  # type: ignore[misc]
        except Exception as cause:
            raise RuntimeError("at 22:14:\n    row = tl.load(p, boundary_check=(ROWS, D))\n          ^") from cause
    except RuntimeError as exc:
        return exc


# Triton's semantics, compiled here without pytest's assertion rewriting (which would give the bare
# assert a message), its source where tracebacks read it (linecache).
_SEMANTIC = "triton-semantic-stand-in.py"
_SOURCE = ('def _canonicalize_boundary_check(dim="ROWS", block_shape=(16, 16)):\n'
           '    assert isinstance(dim, int) and 0 <= dim < len(block_shape)\n')
linecache.cache[_SEMANTIC] = (len(_SOURCE), None, _SOURCE.splitlines(True), _SEMANTIC)
_NAMESPACE: dict = {}
exec(compile(_SOURCE, _SEMANTIC, "exec"), _NAMESPACE)
_canonicalize_boundary_check = _NAMESPACE["_canonicalize_boundary_check"]


def test_a_bare_assertion_in_the_compiler_is_quoted_after_the_caret():
    message = compile_error_message(_chained(check=_canonicalize_boundary_check))
    assert message.endswith("          ^\nAssertionError in Triton's _canonicalize_boundary_check: "
                            "assert isinstance(dim, int) and 0 <= dim < len(block_shape)"), message


def test_a_cause_with_words_is_said_once():
    assert compile_error_message(_chained(ValueError("boundary_check dims must be ints"))).endswith(
        "\nValueError: boundary_check dims must be ints")
    said = RuntimeError("at 1:1: ValueError('x')")
    said.__cause__ = ValueError("x")
    assert compile_error_message(said).count("ValueError") == 1


def test_a_long_excerpt_gives_way_to_the_cause():
    long = RuntimeError("at 1:1:\n" + "x = 1\n" * 2000)
    long.__cause__ = TypeError("the real reason")
    message = compile_error_message(long)
    assert message.endswith(" …\nTypeError: the real reason") and len(message) < 4600


# What Triton 3.6 wrote to fd 2 for a 1-offset advance of a 2-D block pointer (shortened IR dump).
_PASS_FAILED = """python: /project/lib/Dialect/Triton/Transforms/RewriteTensorPointer.cpp:262: Operation *mlir::triton::\
RewriteTensorPointerPass::rewriteAdvanceOp(OpBuilder &, triton::AdvanceOp, std::stack<Operation *> &): Assertion \
`info.length() == op.getOffsets().size()' failed.
module {
  tt.func public @k(%arg0: !tt.ptr<f32>) attributes {noinline = false} {
    %18 = tt.advance %arg5, [%c16_i32] : <tensor<16x16xf32>>
  }
}
/job/tmp/work/submission.py:9:0: error: A signal was caught while processing the MLIR module:reproducer generated \
at `std::errs, please share the reproducer above with Triton project.`; marking pass as failed
/job/tmp/work/submission.py:9:0: error: Failures have been detected while processing an MLIR pass pipeline
/job/tmp/work/submission.py:9:0: note: Pipeline failed while executing [`TritonRewriteTensorPointer` on \
'builtin.module' operation]: reproducer generated at `std::errs, please share the reproducer above with Triton project.`
/job/submission.py:12:5: note: see current operation: %18 = "tt.advance"(%arg5, %c16_i32) : (!tt.ptr<tensor<16x16xf32>>)
"""


def test_the_compilers_fd2_words_follow_the_exception_without_paths_dumps_or_repeats():
    message = compile_error_message(RuntimeError("PassManager::run failed"), _PASS_FAILED)
    assert message.endswith(
        "RuntimeError: PassManager::run failed\n"
        "submission.py:9:0: error: A signal was caught while processing the MLIR module; marking pass as failed\n"
        "submission.py:9:0: error: Failures have been detected while processing an MLIR pass pipeline\n"
        "submission.py:9:0: note: Pipeline failed while executing [`TritonRewriteTensorPointer` on 'builtin.module' "
        "operation]\n"
        "Assertion `info.length() == op.getOffsets().size()' failed (Triton's RewriteTensorPointer.cpp:262)"), message
    said = RuntimeError("at 1:1: 'tt.reduce' op type mismatch")
    assert "error:" not in compile_error_message(said, "x.py:1:1: error: 'tt.reduce' op type mismatch\n")
    assert compile_error_message(RuntimeError("x"), "UserWarning: TRITON_DEFAULT_FP_FUSION is unset\n").endswith(
        "RuntimeError: x")


def test_a_long_excerpt_and_a_flood_of_diagnostics_give_way_to_the_assertion():
    long = RuntimeError("at 1:1:\n" + "x = 1\n" * 2000)
    flood = "".join(f"a.py:{i}:1: error: {'w' * 100}\n" for i in range(200)) + _PASS_FAILED.splitlines()[0]
    message = compile_error_message(long, flood)
    assert message.endswith("(Triton's RewriteTensorPointer.cpp:262)") and len(message) < 4600
    assert "a.py:1:1: error: " in message and " …\n" in message  # the first lines kept, the rest cut


def test_fd2_is_put_back_however_a_capture_ends():
    import os

    from sandbox.gpu_compile import _CompilerStderr

    before = os.fstat(2)
    capture = _CompilerStderr()
    for stop in (ValueError, KeyboardInterrupt):
        try:
            with capture.captured():
                os.write(2, b"a.py:1:1: error: inside\n")
                assert os.fstat(2).st_ino != before.st_ino
                raise stop
        except stop:
            pass
        after = os.fstat(2)
        assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)
        assert "error: inside" in capture.text()
        assert capture.text() == ""  # emptied once read


def test_a_limit_met_while_compiling_is_said_as_the_compiles_in_both_languages():
    from sandbox.limit_watch import timeout_said

    def run() -> RunResult:
        result = RunResult(backend="test", mode=DeviceMode.interpreter)
        result.cases = [
            CaseRun(id="t", status="timeout", said=timeout_said(held_at_limit=False, memory_limit="memory cgroup 1 GiB",
                                                                elapsed=5.04, time_limit=5.0, compiling="my_kernel")),
            CaseRun(id="m", status="timeout", said=timeout_said(held_at_limit=True, memory_limit="memory cgroup 1 GiB",
                                                                elapsed=5.04, time_limit=5.0, compiling="my_kernel")),
            CaseRun(id="r", status="timeout", said=timeout_said(held_at_limit=False, memory_limit="memory cgroup 1 GiB",
                                                                elapsed=5.04, time_limit=5.0)),
        ]
        return result

    zh, en = render_run(run(), "zh"), render_run(run(), "en")
    assert zh.cases[0].error.startswith("超时：为 GPU 编译 kernel my_kernel（Triton 编译器）5.0 秒仍未结束")
    assert en.cases[0].error.startswith("Timed out while compiling kernel my_kernel for the GPU (Triton's compiler): "
                                        "still compiling after 5.0 s")
    assert "tl.static_range" in en.cases[0].error and "the limit is 5 s per case" in en.cases[0].error
    assert zh.cases[1].error.startswith("超出内存上限：为 GPU 编译 kernel my_kernel")
    assert en.cases[1].error.startswith("Out of memory while compiling kernel my_kernel for the GPU")
    assert "memory cgroup 1 GiB" in en.cases[1].error
    assert en.cases[2].error == "Timed out: still running after 5.0 s, so it was stopped (the limit is 5 s per case)"
