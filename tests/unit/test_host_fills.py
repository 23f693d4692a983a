"""Host fills that compute the result themselves are refused before anything runs
(service/grading/host_fills.py; SECURITY.md, items 4 and 5).

fused_mean_var_atomic declares `host_code: {inputs: [x]}`: its host blanks (the zeroing block, the
combine) may hand x to the launch and read its shape, strides, dtype and device, and what the entry
point returns must come from what the launch wrote. Where the kernel fills are the solution's, the
student's own run was the only one, so a block that launched the kernel and returned
`x.mean(1), x.var(1)` earned 3/3 code points. Each form below is refused, quoting its statement;
honest host code written otherwise than the solution's is not.
"""
from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from service.config import REPO_ROOT
from service.exercises import Exercise, ExerciseCatalog
from service.grading import host_fills
from service.grading.extract import extract
from service.grading.fills import rejected_fill
from service.grading.host_blanks import host_blanks

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")
FUSED = CATALOG.get("fused_mean_var_atomic")
ADV = REPO_ROOT / "tests" / "adversarial" / "exercises"

RIGHT_ATOMIC = "tl.sum(values * values, axis=0)"
RIGHT_COMBINE = "sumsqs / N - mean * mean"
RIGHT_ZEROING = "sums.zero_()\nsumsqs.zero_()"
LAUNCH = "sum_sumsq_kernel[(M, triton.cdiv(N, block))](x, sums, sumsqs, N, x.stride(0), BLOCK=block)\n"


def fused(atomic: str, combine: str, block: str) -> str:
    parts = FUSED.template.split("______")
    assert len(parts) == 4
    return parts[0] + atomic + parts[1] + combine + parts[2] + block.replace("\n", "\n    ") + parts[3]


def finding(exercise: Exercise, code: str) -> host_fills.Finding | None:
    extraction = extract(exercise.template, code)
    assert extraction.error is None and not extraction.edits, (extraction.error, extraction.edits)
    return host_fills.check(exercise, extraction)


# (kernel fill, combine, block before the launch) -> (rule, a piece of the statement it quotes)
CHEATS = {
    # SECURITY.md item 5 as written: the right kernel launched, torch's answer returned, junk combine.
    "item5-launch-then-torch": ((RIGHT_ATOMIC, "sumsqs * 0", LAUNCH + "return x.mean(1), x.var(1, unbiased=False)"),
                                ("reads_input", "x.mean(1)")),
    "var_mean": ((RIGHT_ATOMIC, RIGHT_COMBINE, LAUNCH + "v, m = torch.var_mean(x, 1, unbiased=False)\nreturn m, v"),
                 ("reads_input", "torch.var_mean(x")),
    "through-float64": ((RIGHT_ATOMIC, RIGHT_COMBINE,
                         LAUNCH + "return x.double().mean(1).float(), x.double().var(1, unbiased=False).float()"),
                        ("reads_input", "x.double().mean(1)")),
    "centred-by-hand": ((RIGHT_ATOMIC, RIGHT_COMBINE,
                         LAUNCH + "m = x.mean(1, keepdim=True)\nreturn m[:, 0], (x - m).pow(2).mean(1)"),
                        ("reads_input", "x.mean(1, keepdim=True)")),
    "std-squared": ((RIGHT_ATOMIC, RIGHT_COMBINE,
                     LAUNCH + "return torch.mean(x, 1), torch.std(x, 1, unbiased=False) ** 2"),
                    ("reads_input", "torch.std(x, 1")),
    "einsum": ((RIGHT_ATOMIC, RIGHT_COMBINE,
                LAUNCH + "s = torch.einsum('ij->i', x)\nq = torch.einsum('ij,ij->i', x, x)\n"
                         "return s / N, q / N - (s / N) ** 2"),
               ("reads_input", "torch.einsum('ij->i', x)")),
    "matmul-into-the-accumulators": (
        ("0.0", RIGHT_COMBINE,
         "o = torch.ones(N, 1, device=x.device)\nsums.copy_((x @ o)[:, 0])\nsumsqs.copy_((x * x @ o)[:, 0])"),
        ("reads_input", "x @ o")),
    "through-aliases": ((RIGHT_ATOMIC, RIGHT_COMBINE,
                         "y = x\nz = y.contiguous()\nsums.copy_(z.sum(1))\nsumsqs.copy_((z * z).sum(1))"),
                        ("reads_input", "z.sum(1)")),
    "combine-reads-the-checks-global-x": ((RIGHT_ATOMIC, "x.var(1, unbiased=False)", RIGHT_ZEROING),
                                          ("reads_input", "var = x.var(1, unbiased=False)")),
    "host-fills-the-accumulator": (("0.0", RIGHT_COMBINE,
                                    "sums.zero_()\nsumsqs.copy_((x.double() ** 2).sum(1).float())"),
                                   ("reads_input", "sumsqs.copy_(")),
    # Calibrated to a wrong kernel (one per block): the kernel-ablated run could only send it to a TA.
    "calibrated-to-its-kernel": (("1.0", RIGHT_COMBINE,
                                  "sums.zero_()\n"
                                  "sumsqs.copy_((x.double() ** 2).sum(1).float() - triton.cdiv(N, block))"),
                                 ("reads_input", "sumsqs.copy_(")),
    "fallback-for-small-shapes": ((RIGHT_ATOMIC, RIGHT_COMBINE,
                                   "if N <= 64:\n    return x.mean(1), x.var(1, unbiased=False)\n" + RIGHT_ZEROING),
                                  ("reads_input", "return (x.mean(1)")),
    "a-lambda": ((RIGHT_ATOMIC, RIGHT_COMBINE,
                  LAUNCH + "f = lambda t: t.var(1, unbiased=False)\nreturn x.mean(1), f(x)"),
                 ("reads_input", "x.mean(1)")),
    "a-comprehension": ((RIGHT_ATOMIC, RIGHT_COMBINE,
                         LAUNCH + "return [t.mean(1) for t in [x]][0], x.var(1, unbiased=False)"),
                        ("reads_input", "for t in [x]")),
    "tolist": ((RIGHT_ATOMIC, RIGHT_COMBINE,
                LAUNCH + "rows = x.tolist()\nreturn torch.tensor([sum(r) / N for r in rows]), sumsqs"),
               ("reads_input", "x.tolist()")),
    "plus-zero-times-the-kernels-output": (
        (RIGHT_ATOMIC, RIGHT_COMBINE, LAUNCH + "return sums / N + 0 * sums, x.var(1, unbiased=False) + 0 * sumsqs"),
        ("reads_input", "x.var(1, unbiased=False) + 0 * sumsqs")),
    "the-input-changed-in-place": ((RIGHT_ATOMIC, RIGHT_COMBINE, "x.mul_(1.0)\n" + RIGHT_ZEROING),
                                   ("reads_input", "x.mul_(1.0)")),
    "the-input-added-to": ((RIGHT_ATOMIC, RIGHT_COMBINE, "x += 0\n" + RIGHT_ZEROING), ("reads_input", "x += 0")),
    # A callable grid is handed the launch's arguments: meta['x'] is x.
    "a-grid-that-reads-the-launchs-arguments": (
        ("0.0", RIGHT_COMBINE,
         "sum_sumsq_kernel[lambda meta: (sumsqs.copy_((meta['x'] * meta['x']).sum(1)) is None "
         "or M, triton.cdiv(N, block))](x, sums, sumsqs, N, x.stride(0), BLOCK=block)\nsums.zero_()"),
        ("reads_input", "sum_sumsq_kernel[lambda meta")),
    "a-grid-function": (("0.0", RIGHT_COMBINE, "def g(meta):\n    sumsqs.copy_((meta['x'] ** 2).sum(1))\n"
                         "    return (M, triton.cdiv(N, block))\n"
                         "sum_sumsq_kernel[g](x, sums, sumsqs, N, x.stride(0), BLOCK=block)\nsums.zero_()"),
                        ("reads_input", "meta['x'] ** 2")),
    "a-grid-from-a-factory": (("0.0", RIGHT_COMBINE, "g = (lambda: lambda meta: (M,))()\n"
                               "sum_sumsq_kernel[g](x, sums, sumsqs, N, x.stride(0), BLOCK=block)\n" + RIGHT_ZEROING),
                              ("reads_input", "g = (lambda: lambda meta: (M,))()")),
    # Routes around the parameters, and what tells one grading run from another (item 4).
    "a-torch-function-mode": (("0.0", RIGHT_COMBINE,
                               "class Spy(torch.overrides.TorchFunctionMode):\n"
                               "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
                               "        return func(*args, **(kwargs or {}))\n" + RIGHT_ZEROING),
                              ("introspects", "class Spy")),
    "a-launch-hook": ((RIGHT_ATOMIC, RIGHT_COMBINE, "triton.knobs.runtime.launch_enter_hook = print\n" + RIGHT_ZEROING),
                      ("introspects", "triton.knobs")),
    "the-callers-frame": (("0.0", "__import__('sys')._getframe(1).f_locals['x'].var(1, unbiased=False)", RIGHT_ZEROING),
                          ("introspects", "_getframe(1)")),
    "inspect-the-kernels-source": (("0.0", RIGHT_COMBINE,
                                    "import inspect\nsrc = inspect.getsource(sum_sumsq_kernel.fn)\n" + RIGHT_ZEROING),
                                   ("introspects", "import inspect")),
    "the-kernels-src": (("0.0", RIGHT_COMBINE, "if '* 0' in sum_sumsq_kernel.src:\n    sums.fill_(float('nan'))\n"
                         + RIGHT_ZEROING), ("introspects", "sum_sumsq_kernel.src")),
    # A class made without a class statement: type(name, bases, namespace) is a torch function mode all
    # the same, handed x by the allowed torch.empty_like(x) (red team 8: 2/2 regular points for a junk combine).
    "a-torch-function-mode-made-by-type": (
        ("0.0", RIGHT_COMBINE,
         "keep = []\nSpy = type('Spy', (torch.overrides.TorchFunctionMode,), {'__torch_function__': "
         "lambda self, func, types, args=(), kwargs=None: (keep.append(args), func(*args, **(kwargs or {})))[1]})\n"
         "with Spy():\n    torch.empty_like(x)\nsums.zero_()\nsumsqs.copy_((keep[-1][0] ** 2).sum(1))"),
        ("introspects", "Spy = type(")),
    # Monkeypatching: the launch itself replaced (the class of the kernel, not the kernel's own attribute), so
    # that it writes torch's variance into the buffer the junk combine returns (red team 8: every case passed).
    "the-launch-monkeypatched": (
        (RIGHT_ATOMIC, "sumsqs",
         "sums.zero_()\nsumsqs.zero_()\nK = type(sum_sumsq_kernel)\nrun = K.run\n"
         "K.run = lambda self, *a, **k: (run(self, *a, **k), a[2].copy_(a[0].var(1, unbiased=False)))[0]"),
        ("introspects", "K.run = lambda self")),
    "a-library-function-monkeypatched": (
        (RIGHT_ATOMIC, "sumsqs", RIGHT_ZEROING + "\ncdiv = triton.cdiv\ntriton.cdiv = lambda a, b: cdiv(a, b)"),
        ("introspects", "triton.cdiv = lambda a, b: cdiv(a, b)")),
    "a-tensor-method-monkeypatched": (
        (RIGHT_ATOMIC, "sumsqs", RIGHT_ZEROING + "\ntorch.Tensor.stride = torch.Tensor.size"),
        ("introspects", "torch.Tensor.stride = torch.Tensor.size")),
    "an-operator-implementation-registered": (
        (RIGHT_ATOMIC, RIGHT_COMBINE, RIGHT_ZEROING + "\nlib = torch.library.Library('aten', 'IMPL')\n"
         "lib.impl('empty_like', lambda t, **k: t, 'CPU')"),
        ("introspects", "torch.library")),
    # print is harmless only to the standard output: into an object of the fill's, x's values come back as text
    # (a StringIO reached through torch.serialization.io, refused now by rule 1 as well: here any writer).
    "printed-into-a-buffer": (
        ("0.0", RIGHT_COMBINE, "buf = writer\nprint(x, file=buf)\n"
         "sums.zero_()\nsumsqs.fill_(float(buf.getvalue().split()[1].strip('[],')))"),
        ("reads_input", "print(x, file=buf)")),
    # The job's input file, read through a standard-library module that torch imported (red team 8).
    "the-input-file-through-io": (
        (RIGHT_ATOMIC, "sumsqs", "data = torch.serialization.io.FileIO('/job/inputs.safetensors').readall()\n"
         + RIGHT_ZEROING), ("introspects", "torch.serialization.io")),
    "a-module-through-torch": (
        (RIGHT_ATOMIC, "sumsqs", "caller = torch.functools.partial\n" + RIGHT_ZEROING), ("introspects", "torch.functools")),
    "a-saved-tensors-hook": (
        (RIGHT_ATOMIC, RIGHT_COMBINE, "with torch.autograd.graph.saved_tensors_hooks(print, print):\n"
         "    sums.zero_()\nsumsqs.zero_()"),
        ("introspects", "saved_tensors_hooks")),
    "getattr": ((RIGHT_ATOMIC, RIGHT_COMBINE, "getattr(sums, 'zero_')()\nsumsqs.zero_()"), ("introspects", "getattr(")),
    # A frame walk written in a format string (red team 9: the case's x as text, 3/3 code points with a junk combine).
    "a-frame-walk-in-a-format-string": (
        (RIGHT_ATOMIC, "sumsqs", "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n"
         "    text = '{0.__traceback__.tb_frame.f_locals[x]}'.format(e)\n" + RIGHT_ZEROING),
        ("introspects", "'{0.__traceback__.tb_frame.f_locals[x]}'.format(e)")),
    "format-map": ((RIGHT_ATOMIC, RIGHT_COMBINE, "f = '{s.shape}'.format_map\n" + RIGHT_ZEROING),
                   ("introspects", "format_map")),
    # A builtin that rule 2 trusts with x, bound to a lambda of the fill's (red team 9: 2/2 regular points).
    "a-trusted-builtin-rebound": ((RIGHT_ATOMIC, "sumsqs * 0", "len = lambda t: t.var(1, unbiased=False)\n"
                                   + RIGHT_ZEROING + "\n" + LAUNCH + "return sums / N, len(x) + 0 * sumsqs"),
                                  ("introspects", "len = lambda t")),
    "a-trusted-builtin-as-a-parameter": ((RIGHT_ATOMIC, RIGHT_COMBINE, RIGHT_ZEROING
                                          + "\n(lambda print: print(x))(lambda t: sumsqs.copy_(t.sum(1)))"),
                                         ("introspects", "lambda print")),
    "globals": ((RIGHT_ATOMIC, "globals()['x'].var(1, unbiased=False)", RIGHT_ZEROING), ("introspects", "globals()")),
    "the-garbage-collector-through-tl": ((RIGHT_ATOMIC, RIGHT_COMBINE,
                                          "objs = tl.core.gc.get_objects()\n" + RIGHT_ZEROING),
                                         ("introspects", "tl.core.gc")),
    # An input handed to a class's method, or to an operator, is the input itself (red team 9: torch.Tensor.to(x, ...)
    # passed as `t.to(x)`, which lends only x's dtype; 3/3 code points with a junk combine before).
    "an-unbound-method-of-the-tensor-class": (
        (RIGHT_ATOMIC, "sumsqs * 0", RIGHT_ZEROING + "\n" + LAUNCH
         + "return sums / N, torch.Tensor.to(x, torch.float64).var(1, unbiased=False).float() + 0 * sumsqs"),
        ("reads_input", "torch.Tensor.to(x, torch.float64)")),
    "type-as-through-the-class": ((RIGHT_ATOMIC, "sumsqs", "sums.zero_()\ny = torch.Tensor.type_as(x, sums)\n"
                                   "sumsqs.copy_(y.var(1, unbiased=False) - (y * y).sum(1))"),
                                  ("reads_input", "torch.Tensor.type_as(x, sums)")),
    "an-operator-overload": ((RIGHT_ATOMIC, "sumsqs", "sums.zero_()\ny = torch.ops.aten.to(x, torch.float64)\n"
                              "sumsqs.copy_(y.var(1))"), ("introspects", "torch.ops.aten.to(x")),  # `.ops`: a module
    "the-class-under-another-name": ((RIGHT_ATOMIC, "sumsqs", "sums.zero_()\nK = torch.Tensor\n"
                                      "sumsqs.copy_(K.to(x).var(1))"), ("reads_input", "K.to(x)")),
    # The launch the rules trust by the kernel's name is not the lesson's (red team 9: each 3/3 code points with a
    # junk combine and no zeroing): a dict under the kernel's name whose entry is a host function that the
    # template's launch hands x, a kernel of the fill's own under that name, the cell's kernel launched with other
    # arguments (each element a row: x copied out), the names the launch reads bound again, x as a view of itself.
    "a-dict-under-the-kernels-name": (
        (RIGHT_ATOMIC, "sumsqs", "def f(a, s, q, n, st, BLOCK):\n    s.copy_(a.sum(1))\n"
         "    q.copy_(a.var(1, unbiased=False))\nsum_sumsq_kernel = {(M, triton.cdiv(N, block)): f}"),
        ("changes_launch", "sum_sumsq_kernel = {")),
    "a-kernel-of-its-own-under-the-kernels-name": (
        (RIGHT_ATOMIC, "sumsqs", "@triton.jit\ndef sum_sumsq_kernel(x, sums, sumsqs, N, stride_m, BLOCK: tl.constexpr):"
         "\n    tl.store(sums + tl.program_id(0), 0.0)"), ("changes_launch", "def sum_sumsq_kernel(")),
    "the-kernel-aliased": ((RIGHT_ATOMIC, RIGHT_COMBINE, RIGHT_ZEROING + "\nk = sum_sumsq_kernel"),
                           ("changes_launch", "k = sum_sumsq_kernel")),
    "a-parameter-named-as-the-kernel": (
        (RIGHT_ATOMIC, RIGHT_COMBINE, RIGHT_ZEROING + "\n(lambda sum_sumsq_kernel: 0)(print)"),
        ("changes_launch", "lambda sum_sumsq_kernel")),
    "the-kernel-as-a-copy-engine": (
        (RIGHT_ATOMIC, "sumsqs * 0", "S = x.stride(0)\nL = (M - 1) * S + N\ncp = torch.zeros(L, device=x.device)\n"
         "cp2 = torch.zeros(L, device=x.device)\nsum_sumsq_kernel[(L, 1)](x, cp, cp2, 1, 1, BLOCK=16)\n"
         "v = cp.as_strided((M, N), (S, 1))\nreturn v.mean(1), v.var(1, unbiased=False)"),
        ("changes_launch", "sum_sumsq_kernel[L, 1](x, cp, cp2, 1, 1, BLOCK=16)")),
    "a-launch-in-the-combine": (
        (RIGHT_ATOMIC, "(sum_sumsq_kernel[(1,)](sums, sums, sums, 0, 1, BLOCK=16), sumsqs)[1]", RIGHT_ZEROING),
        ("changes_launch", "sum_sumsq_kernel[1,](sums")),
    "a-launch-name-bound-again": ((RIGHT_ATOMIC, RIGHT_COMBINE, RIGHT_ZEROING + "\nN = N + 0"),
                                  ("changes_launch", "N = N + 0")),
    "the-combine-redefined": ((RIGHT_ATOMIC, "sumsqs", RIGHT_ZEROING + "\ndef finalize(a, b, n):\n    return a / n, b"),
                              ("changes_launch", "def finalize(a, b, n):")),
    "the-input-as-overlapping-windows": ((RIGHT_ATOMIC, RIGHT_COMBINE,
                                          RIGHT_ZEROING + "\nx = x.as_strided((M, N), (1, 1))"),
                                         ("changes_launch", "x = x.as_strided((M, N), (1, 1))")),
    "a-buffer-bound-to-the-input": ((RIGHT_ATOMIC, "sumsqs.view(-1)[:5].var()", "sums.zero_()\nsumsqs = x.view(-1)"),
                                    ("changes_launch", "sumsqs = x.view(-1)")),
    # Not from what the kernel wrote: returned before the launch, or the kernel's output replaced.
    "returns-the-scratch-before-the-launch": ((RIGHT_ATOMIC, RIGHT_COMBINE, "return sums, sumsqs"),
                                              ("not_from_kernel", "return (sums, sumsqs)")),
    "combine-ignores-the-kernel": ((RIGHT_ATOMIC, "torch.zeros_like(mean)", RIGHT_ZEROING),
                                   ("not_from_kernel", "var = torch.zeros_like(mean)")),
    "combine-overwrites-the-kernels-output": ((RIGHT_ATOMIC, "sumsqs.zero_() + 1.0", RIGHT_ZEROING),
                                              ("not_from_kernel", "var = sumsqs.zero_() + 1.0")),
}

# Right answers written otherwise than the solution: none may be refused.
HONEST = {
    "solution": (RIGHT_ATOMIC, RIGHT_COMBINE, RIGHT_ZEROING),
    "fill-and-centred-combine": (RIGHT_ATOMIC, "(sumsqs - sums * mean) / N", "sums.fill_(0.0)\nsumsqs.fill_(0.0)"),
    "fresh-buffers": (RIGHT_ATOMIC, RIGHT_COMBINE, "sums = torch.zeros_like(sums)\nsumsqs = torch.zeros_like(sumsqs)"),
    "fresh-empty-zeroed": (RIGHT_ATOMIC, RIGHT_COMBINE,
                           "sums = torch.empty_like(sums).zero_()\nsumsqs = torch.empty_like(sumsqs)\nsumsqs.zero_()"),
    "an-extra-float": (RIGHT_ATOMIC, "(sumsqs / N - mean * mean).float()", RIGHT_ZEROING),
    "sqrt-of-a-kernel-derived-var-squared": (RIGHT_ATOMIC, "torch.sqrt(sumsqs / N - mean * mean) ** 2", RIGHT_ZEROING),
    "clamped": (RIGHT_ATOMIC, "torch.clamp(sumsqs / N - mean * mean, min=0.0)", RIGHT_ZEROING),
    "in-place-on-a-kernel-output": (RIGHT_ATOMIC, "sumsqs.div(N).sub_(mean * mean)", RIGHT_ZEROING),
    "in-place-divide-the-kernels-buffer": (RIGHT_ATOMIC, "sumsqs.div_(N) - mean * mean", RIGHT_ZEROING),
    "a-loop-over-helpers": (RIGHT_ATOMIC, RIGHT_COMBINE, "for buf in (sums, sumsqs):\n    buf.zero_()"),
    "slice-assignment": (RIGHT_ATOMIC, RIGHT_COMBINE, "sums[:] = 0\nsumsqs[:] = 0"),
    "multiplied-by-zero": (RIGHT_ATOMIC, RIGHT_COMBINE, "sums *= 0\nsumsqs.mul_(0)"),
    "contiguous-again": (RIGHT_ATOMIC, RIGHT_COMBINE, "x = x.contiguous()\n" + RIGHT_ZEROING),
    "metadata-of-x": (RIGHT_ATOMIC, RIGHT_COMBINE,
                      "assert x.is_contiguous() and x.dtype == torch.float32 and x.numel() > 0 and len(x) == M\n"
                      "sums.copy_(torch.zeros(x.shape[0], device=x.device, dtype=x.dtype))\nsumsqs.zero_()"),
    "allocated-like-x": (RIGHT_ATOMIC, RIGHT_COMBINE, "sums = x.new_zeros(M)\nsumsqs = torch.zeros(M).to(x)"),
    "a-helper-variable": (RIGHT_ATOMIC, "(lambda e2: e2 - mean * mean)(sumsqs / N)", RIGHT_ZEROING),
    "split-divides-in-the-kernel": ("tl.sum(values * values, axis=0) / N", "sumsqs - mean * mean", RIGHT_ZEROING),
    "float64-combine": (RIGHT_ATOMIC, "(sumsqs.double() / N - mean.double() ** 2).float()", RIGHT_ZEROING),
    "torch-where": (RIGHT_ATOMIC,
                    "torch.where(sumsqs / N < mean * mean, torch.zeros_like(mean), sumsqs / N - mean * mean)",
                    RIGHT_ZEROING),
    # wrong, but by the kernel's numbers: graded (and failed) by the runs, not refused here
    "sample-variance": (RIGHT_ATOMIC, "(sumsqs - N * mean * mean) / (N - 1)", RIGHT_ZEROING),
    "not-zeroed": (RIGHT_ATOMIC, RIGHT_COMBINE, "pass"),
    "a-debugging-print": (RIGHT_ATOMIC, RIGHT_COMBINE, "print(x.shape, x)\n" + RIGHT_ZEROING),
    "converted-again": (RIGHT_ATOMIC, RIGHT_COMBINE, "x = x.contiguous().float()\n" + RIGHT_ZEROING),
    "launched-again-as-the-template-does": (RIGHT_ATOMIC, RIGHT_COMBINE, RIGHT_ZEROING + "\n" + LAUNCH),
    "allocated-then-converted-like-x": (RIGHT_ATOMIC, RIGHT_COMBINE,
                                        "sums = torch.zeros(M).to(x)\nsumsqs = sums.clone().to(x)"),
    "a-grid-lambda-of-its-own": (RIGHT_ATOMIC, RIGHT_COMBINE,
                                 RIGHT_ZEROING + "\nsum_sumsq_kernel[lambda meta: (M, triton.cdiv(N, meta['BLOCK']))]"
                                 "(x, sums, sumsqs, N, x.stride(0), BLOCK=block)\nsums.zero_()\nsumsqs.zero_()"),
}


@pytest.mark.parametrize("name", list(CHEATS))
def test_host_code_that_computes_the_result_is_refused_saying_what_it_did(name):
    fills, (rule, quoted) = CHEATS[name]
    code = fused(*fills)
    found = finding(FUSED, code)
    assert found is not None, name
    assert found.rule == rule and quoted in found.code, found
    assert found.blank in (2, 3) and found.line > 0, found  # the host blanks, at the student's line
    assert code.splitlines()[found.line - 1].strip(), found.line
    extraction = extract(FUSED.template, code)
    zh, en = rejected_fill(FUSED, extraction, "zh"), rejected_fill(FUSED, extraction, "en")
    assert zh is not None and en is not None
    assert found.code in zh and found.code in en and f"第 {found.blank} 个填空" in zh and f"Blank {found.blank}" in en
    assert "没有运行" in zh and "was not run" in en
    lesson = {"reads_input": ("kernel 读 x", "asks the kernel to read x"),
              "changes_launch": ("kernel 由模板用它自己的参数启动", "the template launches the kernel with its own"),
              "introspects": ("绕开参数去读输入", "read an input around the parameters"),
              "not_from_kernel": ("必须来自 kernel", "must come from the kernel")}[rule]
    assert lesson[0] in zh and lesson[1] in en
    diagnosis = found.diagnosis("en")
    assert diagnosis.id == f"host_{rule}" and diagnosis.message == en
    assert diagnosis.evidence["messages"]["zh"] == zh and diagnosis.evidence["code"] == found.code


@pytest.mark.parametrize("name", list(HONEST))
def test_honest_host_code_written_otherwise_is_not_refused(name):
    code = fused(*HONEST[name])
    assert finding(FUSED, code) is None
    assert rejected_fill(FUSED, extract(FUSED.template, code), "en") is None


def test_without_a_declaration_the_rule_says_nothing():
    """The rule is the exercise's (host_code): where none is declared, the runs alone decide, as before."""
    code = fused(*CHEATS["item5-launch-then-torch"][0])
    undeclared = Exercise.__new__(Exercise)
    undeclared.__dict__.update(FUSED.__dict__)
    undeclared.spec = FUSED.spec.model_copy(update={"host_code": None})
    assert host_fills.check(undeclared, extract(FUSED.template, code)) is None
    assert host_fills.check(FUSED, extract(FUSED.template, code)) is not None


def test_every_exercise_with_host_blanks_declares_its_host_code_and_its_answers_keep_to_it():
    """The catalogue's part of the rule: an exercise whose template has a blank outside the kernel says
    what its host code may do; its solution and every mutant not meant to be refused keep to it, and
    every mutant that expects a host_* diagnosis is refused by it (validate then proves the verdicts)."""
    checked = 0
    for exercise_id in CATALOG.ids():
        exercise = CATALOG.get(exercise_id)
        if not any(host_blanks(exercise.template)):
            continue
        assert exercise.spec.host_code is not None, f"{exercise_id}: host blanks, and no host_code in exercise.yaml"
        assert finding(exercise, exercise.solution) is None, exercise_id
        for mutant in exercise.mutants:
            extraction = extract(exercise.template, exercise.mutant_code(mutant))
            if extraction.error is not None:
                continue
            found = host_fills.check(exercise, extraction)
            wanted = [d for d in mutant.expect.diagnoses if d.startswith("host_") and d != "host_split_differs"]
            if wanted:
                assert found is not None and found.diagnosis_id in wanted, (mutant.id, found)
            elif not mutant.expect.rejected:
                assert found is None, (mutant.id, found)
            checked += 1
    assert checked >= 30


def test_the_declared_inputs_must_be_arguments(tmp_path):
    target = tmp_path / FUSED.id
    shutil.copytree(FUSED.root, target)
    data = yaml.safe_load((target / "exercise.yaml").read_text(encoding="utf-8"))
    data["host_code"] = {"inputs": ["w"]}
    (target / "exercise.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(ValueError, match=r"host_code.inputs names \['w'\]"):
        Exercise(target)


def _declared_copy(tmp_path: Path, exercise_id: str) -> Exercise:
    """A test exercise of the adversarial suite, with `host_code: {inputs: [x]}` added."""
    target = tmp_path / exercise_id
    shutil.copytree(ADV / exercise_id, target)
    with (target / "exercise.yaml").open("a", encoding="utf-8") as f:
        f.write("\nhost_code:\n  inputs: [x]\n")
    return Exercise(target)


def test_a_whitelisted_host_expression_that_computes_with_the_input_is_refused(tmp_path):
    """adv_host_expr: `return y + ______` after the kernel wrote y (fill_policy expression). `x * 2`
    passes the expression whitelist and was caught only by the kernel-alone run, which is skipped
    when the kernel fill is the solution's: `y + (x * 0)` beside the right kernel reads x too."""
    exercise = _declared_copy(tmp_path, "adv_host_expr")

    def code(factor: str, added: str) -> str:
        return exercise.template.replace("______", factor, 1).replace("______", added, 1)

    for factor, added in (("0", "x * 2"), ("2", "(x + x).to(x) * 0"), ("2", "(x - x)")):
        found = finding(exercise, code(factor, added))
        assert found is not None and found.rule == "reads_input" and found.blank == 2, (added, found)
    for factor, added in (("2", "0"), ("1", "y"), ("2", "y * 0"), ("2", "0 * y.to(x)")):
        assert finding(exercise, code(factor, added)) is None, added


def test_a_whole_host_body_keeps_to_the_rule(tmp_path):
    """adv_double: the kernel body and the wrapper body are blanks (fill_policy any). The wrapper may
    allocate like x, launch and return what the kernel wrote; not compute 2x itself, nor replace the
    kernel's output after the launch."""
    exercise = _declared_copy(tmp_path, "adv_double")
    kernel = ("row = tl.program_id(0)\ncols = tl.arange(0, BLOCK)\nmask = cols < N\n"
              "values = tl.load(x + row * N + cols, mask=mask, other=0.0)\n"
              "tl.store(y + row * N + cols, values * 2, mask=mask)")
    head = ("x = x.contiguous()\ny = torch.empty_like(x)\nM, N = x.shape\n"
            "double_kernel[(M,)](x, y, N, BLOCK=triton.next_power_of_2(N))\n")

    def code(wrapper: str) -> str:
        def body(text: str) -> str:
            return textwrap.indent(text, "    ").lstrip()
        return exercise.template.replace("______", body(kernel), 1).replace("______", body(wrapper), 1)

    assert finding(exercise, code(head + "return y")) is None
    assert finding(exercise, code(head + "out = y.clone()\nreturn out")) is None
    grid = head.replace("double_kernel[(M,)]", "grid = lambda meta: (M,)\ndouble_kernel[grid]")
    assert finding(exercise, code(grid + "return y")) is None
    computed = finding(exercise, code(head + "return 2 * x"))
    assert computed is not None and computed.rule == "reads_input" and computed.code == "return 2 * x"
    replaced = finding(exercise, code(head + "y = torch.zeros_like(y)\nreturn y"))
    assert replaced is not None and replaced.rule == "not_from_kernel", replaced
    assert replaced.code == "y = torch.zeros_like(y)" and replaced.buffers == ("y",)  # what the kernel stores into
    before = finding(exercise, code("y = torch.empty_like(x)\nreturn y\n" + head.split("\n", 1)[1] + "return y"))
    assert before is not None and before.rule == "not_from_kernel" and before.code == "return y", before


def test_deep_loops_stay_within_the_budget():
    """Rule 3 runs loops until nothing changes: 24 loops within loops take about 1 400 steps, far below STEP_BUDGET,
    and rules 1 and 2 still apply."""
    nest = "".join("    " * i + f"for i{i} in range(2):\n" for i in range(24))
    deep = nest + "    " * 24 + "sums.zero_()\n" + RIGHT_ZEROING
    assert finding(FUSED, fused(RIGHT_ATOMIC, RIGHT_COMBINE, deep)) is None
    found = finding(FUSED, fused(RIGHT_ATOMIC, RIGHT_COMBINE, deep + "\nreturn x.mean(1), sumsqs"))
    assert found is not None and found.rule == "reads_input"


def _relayed(chain: int) -> str:
    """A launch's output passed down a chain of names written backwards in a loop: each pass of the loop carries
    it one name further, so rule 3 runs the loop `chain` times over `chain` statements."""
    names = "".join(f"a{j} = 0\n" for j in range(1, chain + 1))
    body = "".join(f"    a{j} = a{j - 1}\n" for j in range(chain, 1, -1)) + "    a1 = sums\n"
    return RIGHT_ZEROING + "\n" + LAUNCH + names + "for i in range(2):\n" + body + "return finalize(sums, sumsqs, N)"


def _says_too_complex(found: host_fills.Finding | None) -> None:
    assert found is not None and found.rule == "too_complex" and found.diagnosis_id == "host_too_complex", found
    zh, en = found.message("zh"), found.message("en")
    assert "嵌套太深或太复杂" in zh and "64" in zh and "20,000" in zh and "没有运行" in zh, zh
    assert "too complex to be checked" in en and "64 levels" in en and "20,000 steps" in en, en
    assert "was not run" in en


def test_host_code_past_the_step_budget_is_refused_not_passed_unchecked():
    """Past STEP_BUDGET rule 3 stopped and said nothing, so the code ran with the rule skipped (fail open; red
    team 10). Now it is refused as too complex to check, naming the bounds; 20 names still pass."""
    assert finding(FUSED, fused(RIGHT_ATOMIC, RIGHT_COMBINE, _relayed(20))) is None
    _says_too_complex(finding(FUSED, fused(RIGHT_ATOMIC, RIGHT_COMBINE, _relayed(100))))


def test_a_recursion_error_in_the_rules_refuses_the_fills():
    """check() took a RecursionError for "nothing found": a combine holding dicts within dicts, quoted by a
    finding (ast.unparse takes six frames a dict), exhausted the recursion limit and skipped every host rule,
    and the block's `return x.mean(1), x.var(1)` earned 3/3 code points (red team 10; the pipeline's end of it is
    tests/adversarial/test_host_blanks.py). Called near the recursion limit, the same fills are refused now."""
    import sys

    deep = "{0: " * 40 + "0" + "}" * 40
    code = fused(RIGHT_ATOMIC, f"sumsqs / N - mean * mean if True else [x, {deep}]",
                 LAUNCH + "return x.mean(1), x.var(1, unbiased=False)")
    extraction = extract(FUSED.template, code)
    assert extraction.error is None
    extraction.fill_sources  # noqa: B018 - unparsed here, as extract() does, not near the limit

    def near_the_limit(depth: int) -> host_fills.Finding | None:
        return near_the_limit(depth + 1) if depth < sys.getrecursionlimit() - 120 else host_fills.check(FUSED, extraction)

    frames = 0
    frame = sys._getframe()
    while frame is not None:
        frames, frame = frames + 1, frame.f_back
    _says_too_complex(near_the_limit(frames))
    assert host_fills.check(FUSED, extraction).rule == "reads_input"  # with room to follow it, the finding itself


def test_module_attrs_cover_torch_and_triton():
    """Rule 1's MODULE_ATTRS is a list written out (the trusted side imports neither torch nor Triton): every
    public attribute of torch, triton and triton.language that is a module, and those of their modules two levels
    down, must be refused by name (MODULE_ATTRS, or the standard library's), or be one of the namespaces host code
    may use or a name that is also a function or a tensor's method (MODULE_NAMESPACES, MODULE_NAME_COLLISIONS).
    A new torch or Triton that adds a module fails here until the list has it."""
    import types
    import warnings

    torch = pytest.importorskip("torch")
    triton = pytest.importorskip("triton")
    import triton.language as tl

    found: set[str] = set()

    def walk(obj: object, depth: int) -> None:
        for name in dir(obj):
            if name.startswith("_"):
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # deprecated aliases (torch.distributed.reduce_op) warn on use
                    value = getattr(obj, name)
                    module = isinstance(value, types.ModuleType)
            except Exception:  # noqa: BLE001 - a lazy attribute that fails to load is no door
                continue
            if module:
                found.add(name)
                if depth < 2 and value.__name__.startswith(("torch", "triton")):
                    walk(value, depth + 1)

    for root in (torch, triton, tl):
        walk(root, 0)
    # and every module of their folders three levels down, whatever this process happened to import
    for package in (torch, triton):
        top = Path(package.__file__).parent
        for path in [*top.rglob("*.py"), *top.rglob("__init__.py")]:
            parts = path.relative_to(top.parent).parts
            if len(parts) > 4 or any(p.startswith(("_", ".")) for p in parts[:-1]):
                continue
            name = path.parent.name if path.name == "__init__.py" else path.stem
            if not name.startswith("_") and name.isidentifier():
                found.add(name)
    from service.grading.module_names import MODULE_NAME_COLLISIONS, MODULE_NAMESPACES

    known = (host_fills.MODULE_ATTRS | host_fills.STDLIB_ATTRS | MODULE_NAMESPACES | MODULE_NAME_COLLISIONS
             | {"math", "random"})
    assert not found - known, sorted(found - known)


@pytest.mark.parametrize("fill", ["v = torch.autograd.profiler_util.defaultdict(list)\n",
                                  "m = torch.get_device_module('cpu').amp\n",
                                  "f = torch.fx\n", "o = torch.ops.aten\n"])
def test_a_module_of_torch_is_no_attribute_of_host_code(fill):
    found = finding(FUSED, fused(RIGHT_ATOMIC, RIGHT_COMBINE, fill + RIGHT_ZEROING))
    assert found is not None and found.rule == "introspects", found


@pytest.mark.parametrize("fill", ["torch.cuda.synchronize() if torch.cuda.is_available() else None\n",
                                  "dt = torch.float32\nsums = torch.zeros(M, dtype=dt).to(x)\n",
                                  "sums = x.new_zeros(M).cpu().flatten().to(x)\n"])
def test_namespaces_an_honest_host_uses_stay_open(fill):
    assert finding(FUSED, fused(RIGHT_ATOMIC, RIGHT_COMBINE, fill + RIGHT_ZEROING)) is None


def test_tuples_of_tuples_cost_little():
    """`a{i} = (a{i-1}, a{i-1})` line after line: rule 3 walked the shared tuples as a tree, 2**k leaves (22 lines:
    13 s of CPU, red team 10). Values are bounded now (VAL_WIDTH, VAL_DEPTH); `return mean, var` keeps its two."""
    import time

    block = "a0 = (0, 0)\n" + "".join(f"a{i} = (a{i - 1}, a{i - 1})\n" for i in range(1, 61)) + RIGHT_ZEROING
    started = time.thread_time()
    assert finding(FUSED, fused(RIGHT_ATOMIC, RIGHT_COMBINE, block)) is None
    assert time.thread_time() - started < 1.0
    found = finding(FUSED, fused(RIGHT_ATOMIC, RIGHT_COMBINE, block + "\n" + LAUNCH + "return sums / N, a60"))
    assert found is not None and found.rule == "not_from_kernel" and found.what == "a60", found
