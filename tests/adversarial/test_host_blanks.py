"""Host blanks that do the kernel's work (fill_policy any, blanks outside the kernel).

fused_mean_var_atomic has a kernel blank (the second atomic's value) and two host blanks (zero the
scratch buffers, the host combine), and `fill_policy: any`: a host blank is plain Python that
nothing restricts. Each submission below leaves the kernel blank wrong (`0.0`) and computes the
answer on the host instead: with torch, by filling the accumulator the kernel should fill, or by
walking up to the caller's frame from the combine. Without the kernel-alone run
(service/grading/host_blanks.py) each earned every code point and passed the given check. A
correct submission whose host fills are written otherwise than the solution's still earns them.
The same holds for a whitelisted expression in host code (adv_host_expr, at the end).

The exercise now declares what its host code may do (`host_code`, service/grading/host_fills.py),
and each of these is refused before anything runs, as is SECURITY.md item 5 (the right kernel
launched, torch's answer returned: no second run grades that). The runs behind the rule are proven
on a copy of the exercise without the declaration (`runs_grader`, tests/support/catalogs.py).
"""
from __future__ import annotations

import pytest

from sandbox.contract import Limits
from service.bootstrap import build_grader
from service.config import REPO_ROOT, Settings
from service.submission import Submission
from tests.adversarial.kit import ADV_EXERCISES, QUICK, SECRET_SEED, close_started, grade, make_grader, started
from tests.support.catalogs import without_host_rule

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial]

EXERCISE = "fused_mean_var_atomic"
TEMPLATE = (REPO_ROOT / "exercises" / EXERCISE / "template.py").read_text(encoding="utf-8")
RIGHT_ATOMIC = "tl.sum(values * values, axis=0)"
RIGHT_COMBINE = "sumsqs / N - mean * mean"
RIGHT_ZEROING = "sums.zero_()\nsumsqs.zero_()"

LAUNCH = "sum_sumsq_kernel[(M, triton.cdiv(N, block))](x, sums, sumsqs, N, x.stride(0), BLOCK=block)"
# SECURITY.md item 5: the kernel fills are the solution's, so the kernel-alone program is the solution
# and is skipped; the launch count is met; the answer is torch's, the zeroing missing, the combine junk.
ITEM5 = (RIGHT_ATOMIC, "sumsqs * 0", LAUNCH + "\nreturn x.mean(1), x.var(1, unbiased=False)")

# (the atomic's value, the host combine, the block before the launch)
ATTACKS = {
    # The whole answer from torch, returned before the launch.
    "return-torch-answer": ("0.0", "sumsqs * 0",
                            "return x.double().mean(1).float(), x.double().var(1, unbiased=False).float()"),
    # The kernel's accumulator filled on the host; the template's own combine then reads it.
    "host-fills-the-accumulator": ("0.0", RIGHT_COMBINE,
                                   "sums.zero_()\nsumsqs.copy_((x.double() ** 2).sum(1).float())"),
    # The combine walks up to the caller's frame, where x is.
    "combine-reads-the-callers-frame": (
        "0.0", "__import__('sys')._getframe(1).f_locals['x'].double().var(1, unbiased=False).float()",
        RIGHT_ZEROING),
}


def program(atomic: str, combine: str, block: str) -> str:
    parts = TEMPLATE.split("______")
    assert len(parts) == 4
    block = block.replace("\n", "\n    ")
    return parts[0] + atomic + parts[1] + combine + parts[2] + block + parts[3]


# Host code that calibrates itself to its wrong kernel (one per block): it uses the kernel's contribution.
CALIBRATED = ("1.0", RIGHT_COMBINE,
              "sums.zero_()\nsumsqs.copy_((x.double() ** 2).sum(1).float() - triton.cdiv(N, block))")
# Red team 8: the right kernel fill (so no kernel-alone run), a junk combine (`var = sumsqs`), and a block
# that replaces the launch through the kernel's class (not an attribute of the kernel's own name, no import,
# no underscore, no class statement): the real launch runs, then torch's variance of x lands in sumsqs.
MONKEYPATCHED_LAUNCH = (RIGHT_ATOMIC, "sumsqs",
                        "sums.zero_()\nsumsqs.zero_()\nK = type(sum_sumsq_kernel)\nrun = K.run\n"
                        "K.run = lambda self, *a, **k: (run(self, *a, **k), "
                        "a[2].copy_(a[0].double().var(1, unbiased=False).float()))[0]")
# x's values as text, through a StringIO of the io module that torch imported (red team 8): print is harmless only
# to the standard output, and a standard-library module is not reached through torch's attributes.
PRINTED_INTO_A_BUFFER = (RIGHT_ATOMIC, "sumsqs",
                         "torch.set_printoptions(profile='full', precision=12)\n"
                         "buf = torch.serialization.io.StringIO()\nprint(x, file=buf)\n"
                         "rows = [[float(v) for v in r.replace('tensor(', '').replace('[', '').split(',') if v.strip()]\n"
                         "        for r in buf.getvalue().split(']')[:M]]\n"
                         "sums.zero_()\nsumsqs.copy_(torch.tensor([sum(v * v for v in r) / N - (sum(r) / N) ** 2 "
                         "- sum(v * v for v in r) for r in rows]))")
# Red team 9, each with the right kernel fill (so no kernel-alone run), no zeroing and a junk combine, and each 3/3
# code points before the fix, every case and the given check passed:
# x handed to the tensor class's own method (`t.to(x)` lends t only x's dtype: rule 2 let x be any call's argument
# there), which is x again, in float64, for torch's variance;
UNBOUND_METHOD = (RIGHT_ATOMIC, "sumsqs * 0",
                  "sums.zero_()\nsumsqs.zero_()\n" + LAUNCH
                  + "\nreturn sums / N, torch.Tensor.to(x, torch.float64).var(1, unbiased=False).float() + 0 * sumsqs")
# a dict under the kernel's name, whose entry for the template's grid is a host function: the template's launch,
# trusted by its name, hands it x (a parameter of its own, so no input by name) and torch fills the buffers; the
# launch count is met by a launch of the real kernel from the combine, where the name is still the cell's;
DICT_KERNEL = (RIGHT_ATOMIC, "(sum_sumsq_kernel[(1,)](sums, sums, sums, 0, 1, BLOCK=16), sumsqs)[1]",
               "def f(a, s, q, n, st, BLOCK):\n    s.copy_(a.sum(1))\n    q.copy_(a.var(1, unbiased=False))\n"
               "sum_sumsq_kernel = {(M, triton.cdiv(N, block)): f}")
# a kernel of the block's own under the kernel's name (two passes over each row in its first program, stores, no
# atomics: no zeroing needed), which the template's launch runs in the cell's place (SECURITY.md item 4's note);
OWN_KERNEL = (RIGHT_ATOMIC, "(sum_sumsq_kernel[(1,)](sums, sums, sums, 0, 1, BLOCK=16), sumsqs)[1]", """@triton.jit
def sum_sumsq_kernel(x, sums, sumsqs, N, stride_m, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if tl.program_id(1) == 0:
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for start in range(0, N, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            acc += tl.where(cols < N, tl.atomic_add(x + row * stride_m + cols, 0.0, mask=cols < N), 0.0)
        mean = tl.sum(acc, axis=0) / N
        dev = tl.zeros((BLOCK,), dtype=tl.float32)
        for start in range(0, N, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            v = tl.where(cols < N, tl.atomic_add(x + row * stride_m + cols, 0.0, mask=cols < N), 0.0)
            d = tl.where(cols < N, v - mean, 0.0)
            dev += d * d
        tl.store(sums + row, mean * N)
        tl.store(sumsqs + row, tl.sum(dev, axis=0) / N)""")
# the cell's kernel launched by the block with other arguments, one element per row: the kernel copies x out into a
# buffer the rules take as the kernel's output, and torch computes on the copy.
COPY_ENGINE = (RIGHT_ATOMIC, "sumsqs * 0",
               "S = x.stride(0)\nL = (M - 1) * S + N\ncp = torch.zeros(L, device=x.device)\n"
               "cp2 = torch.zeros(L, device=x.device)\nsum_sumsq_kernel[(L, 1)](x, cp, cp2, 1, 1, BLOCK=16)\n"
               "v = cp.as_strided((M, N), (S, 1))\nreturn v.mean(1), v.var(1, unbiased=False)")
# the caller's frame walked in a format string, out of rule 1's sight (it reads attribute names, not strings): the
# case's x printed in full as text, parsed back, its variance returned beside what the launch wrote.
FORMAT_STRING = (RIGHT_ATOMIC, "sumsqs * 0",
                 "sums.zero_()\nsumsqs.zero_()\ntorch.set_printoptions(profile='full', precision=12, sci_mode=True)\n"
                 "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n"
                 "    text = '{0.__traceback__.tb_frame.f_locals[x]}'.format(e)\n"
                 "torch.set_printoptions(profile='default')\n"
                 "rows = [[float(v) for v in r.replace('tensor(', '').replace('[', '').replace(')', '').split(',')\n"
                 "         if v.strip()] for r in text.split(']')[:M]]\n" + LAUNCH + "\n"
                 "return sums / N, torch.tensor([sum(v * v for v in r) / N - (sum(r) / N) ** 2 for r in rows]) "
                 "+ 0 * sumsqs")
# a builtin that rule 2 trusts with x (len, print, isinstance) bound to a lambda of the block's own.
TRUSTED_BUILTIN = (RIGHT_ATOMIC, "sumsqs * 0", "sums.zero_()\nsumsqs.zero_()\n"
                   "len = lambda t: t.double().var(1, unbiased=False).float()\n" + LAUNCH
                   + "\nreturn sums / N, len(x) + 0 * sumsqs")
# Red team 10, each with the right kernel fill (so no kernel-alone run), and each 3/3 code points at aed9969, every
# case and the given check passed: the caller's frame reached by attribute names in a string through operator's
# attrgetter, which torch.autograd.profiler_util imported (no name rule 1 listed: a module of torch as an attribute);
ATTRGETTER = (RIGHT_ATOMIC, "sumsqs * 0",
              "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n"
              "    loc = torch.autograd.profiler_util.attrgetter('__traceback__.tb_frame.f_locals')(e)\n"
              "v = loc['x'].double()\n" + LAUNCH
              + "\nreturn v.mean(1).float() + 0 * sums, v.var(1, unbiased=False).float() + 0 * sumsqs")
# the same frame through a match statement's class patterns, whose attribute names are no Attribute nodes.
MATCH_PATTERN = (RIGHT_ATOMIC, "sumsqs * 0",
                 "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    err = e\n"
                 "match err:\n    case object(__traceback__=object(tb_frame=object(f_locals=loc))):\n        pass\n"
                 "v = loc['x'].double()\n" + LAUNCH
                 + "\nreturn v.mean(1).float() + 0 * sums, v.var(1, unbiased=False).float() + 0 * sumsqs")
REFUSED = {**ATTACKS, "item5-launch-then-torch": ITEM5, "calibrated-to-its-kernel": CALIBRATED,
           "monkeypatched-launch": MONKEYPATCHED_LAUNCH, "printed-into-a-buffer": PRINTED_INTO_A_BUFFER,
           "unbound-method-of-the-class": UNBOUND_METHOD, "dict-under-the-kernels-name": DICT_KERNEL,
           "own-kernel-under-the-kernels-name": OWN_KERNEL, "kernel-as-a-copy-engine": COPY_ENGINE,
           "frame-walk-in-a-format-string": FORMAT_STRING, "a-trusted-builtin-rebound": TRUSTED_BUILTIN,
           "attrgetter-through-a-torch-module": ATTRGETTER, "frame-walk-in-match-patterns": MATCH_PATTERN}


@pytest.fixture(scope="module")
def grader():
    grader = started(build_grader(Settings(limits=Limits(**QUICK))))  # KERNELGRADE_TEST_WARM_POOL (kit.py)
    yield grader
    close_started(grader)


@pytest.fixture(scope="module")
def runs_grader(tmp_path_factory):
    """The exercise without its host_code: only the runs decide, as for an exercise that declares none."""
    catalog = without_host_rule(tmp_path_factory.mktemp("catalog"))
    grader = started(build_grader(Settings(exercises_dir=catalog, limits=Limits(**QUICK))))
    yield grader
    close_started(grader)


def code_points(report) -> tuple[float, float]:
    items = [i for i in report.items if i.id.startswith("code.") and i.id != "code.explanation"]
    return sum(i.points for i in items), sum(i.max_points for i in items)


@pytest.mark.parametrize(("name", "rule"), [("item5-launch-then-torch", "host_reads_input"),
                                            ("return-torch-answer", "host_reads_input"),
                                            ("host-fills-the-accumulator", "host_reads_input"),
                                            ("combine-reads-the-callers-frame", "host_introspects"),
                                            ("calibrated-to-its-kernel", "host_reads_input"),
                                            ("monkeypatched-launch", "host_introspects"),
                                            ("printed-into-a-buffer", "host_introspects"),
                                            ("unbound-method-of-the-class", "host_reads_input"),
                                            ("dict-under-the-kernels-name", "host_changes_launch"),
                                            ("own-kernel-under-the-kernels-name", "host_changes_launch"),
                                            ("kernel-as-a-copy-engine", "host_changes_launch"),
                                            ("frame-walk-in-a-format-string", "host_introspects"),
                                            ("a-trusted-builtin-rebound", "host_introspects"),
                                            ("attrgetter-through-a-torch-module", "host_introspects"),
                                            ("frame-walk-in-match-patterns", "host_introspects")])
def test_host_code_that_computes_the_result_is_refused_before_it_runs(grader, host, name, rule):
    """Through the real pipeline: refused like an expression outside the allow-list (nothing runs, no
    code point, the given check not run), the statement quoted, in zh and en, with its diagnosis."""
    report = grader.grade(Submission(exercise=EXERCISE, code=program(*REFUSED[name])), secret_seed=SECRET_SEED)
    assert report.status == "graded" and report.program is not None and not report.program.ran, report.program
    assert "sandbox_s" not in report.timing and "kernel_alone_sandbox_s" not in report.timing, report.timing
    points, most = code_points(report)
    assert points == 0 and most == 3, [(i.id, i.points) for i in report.items]
    assert not report.score.passed and not report.score.provisional
    assert all(not c.passed for c in report.cases)
    assert [d.id for d in report.diagnoses] == [rule], report.diagnoses
    diagnosis = report.diagnoses[0]
    zh, en = report.program.not_run_reason, report.translations["en"].not_run_reason
    assert zh == diagnosis.message and "没有运行" in zh and diagnosis.evidence["code"] in zh
    assert en == report.translations["en"].diagnoses[rule] and "was not run" in en and diagnosis.evidence["code"] in en
    assert diagnosis.evidence["blank"] in (2, 3) and report.vetoes == []
    assert report.given_check is None or report.given_check.status == "not_run", report.given_check
    host.assert_untouched()


def test_without_the_rule_item5_earns_every_code_point(runs_grader, host):
    """Why the rule: with the kernel fills the solution's, the student's own run is the only one, and
    it passes (SECURITY.md item 5, measured at 8ab6323: 3/3, not provisional)."""
    report = runs_grader.grade(Submission(exercise=EXERCISE, code=program(*ITEM5)), secret_seed=SECRET_SEED)
    assert report.status == "graded" and report.program.ran, report.to_json()[:2000]
    assert "kernel_alone_sandbox_s" not in report.timing, report.timing
    points, most = code_points(report)
    assert points == most == 3 and not report.score.provisional, [(i.id, i.points) for i in report.items]
    host.assert_untouched()


def test_without_the_rule_a_monkeypatched_launch_earns_every_code_point(runs_grader, host):
    """Why rule 1 refuses `type` and assignments to attributes (red team 8): the launch replaced through
    the kernel's class writes torch's variance where the junk combine reads it; with the kernel fill the
    solution's, no kernel-alone run follows, and every case passed with no diagnosis and no veto."""
    report = runs_grader.grade(Submission(exercise=EXERCISE, code=program(*MONKEYPATCHED_LAUNCH)),
                               secret_seed=SECRET_SEED)
    assert report.status == "graded" and report.program.ran, report.to_json()[:2000]
    assert "kernel_alone_sandbox_s" not in report.timing, report.timing
    points, most = code_points(report)
    assert points == most == 3 and report.given_check.status == "passed", [(i.id, i.points) for i in report.items]
    host.assert_untouched()


@pytest.mark.parametrize("name", ["unbound-method-of-the-class", "dict-under-the-kernels-name",
                                  "own-kernel-under-the-kernels-name", "frame-walk-in-a-format-string",
                                  "a-trusted-builtin-rebound"])
def test_without_the_rule_red_team_9s_routes_earn_every_code_point(runs_grader, host, name):
    """Why rule 2 takes `t.to(x)` only on a tensor, the launch must be the template's and rule 1 refuses str.format
    (red team 9): with the kernel fill the solution's, no kernel-alone run follows, and each passed every case and
    the given check with no zeroing and a junk combine, no diagnosis, not provisional. (The copy engine, refused in the test above, did
    the same: 3/3, measured once by hand at b445282; its L programs per case make it a minute's grading.)"""
    report = runs_grader.grade(Submission(exercise=EXERCISE, code=program(*REFUSED[name])), secret_seed=SECRET_SEED)
    assert report.status == "graded" and report.program.ran, report.to_json()[:2000]
    assert "kernel_alone_sandbox_s" not in report.timing, report.timing
    points, most = code_points(report)
    assert points == most == 3 and not report.score.provisional, [(i.id, i.points) for i in report.items]
    assert report.given_check.status == "passed" and not report.diagnoses, report.diagnoses
    host.assert_untouched()


@pytest.mark.parametrize("name", ["attrgetter-through-a-torch-module", "frame-walk-in-match-patterns"])
def test_without_the_rule_red_team_10s_routes_earn_every_code_point(runs_grader, host, name):
    """Why rule 1 refuses torch's modules as attributes, attrgetter and match (red team 10): with the kernel fill the
    solution's, no kernel-alone run follows, and each passed every case and the given check with torch's mean and
    variance of x, read from the frame, no zeroing and a junk combine; not provisional."""
    report = runs_grader.grade(Submission(exercise=EXERCISE, code=program(*REFUSED[name])), secret_seed=SECRET_SEED)
    assert report.status == "graded" and report.program.ran, report.to_json()[:2000]
    assert "kernel_alone_sandbox_s" not in report.timing, report.timing
    points, most = code_points(report)
    assert points == most == 3 and not report.score.provisional, [(i.id, i.points) for i in report.items]
    assert report.given_check.status == "passed", report.given_check
    host.assert_untouched()


# Red team 10: host_fills.check took a RecursionError for "nothing found". A combine that reads x in a branch never
# taken, beside dicts within dicts, made the finding's quote (ast.unparse, six frames a dict) exhaust the recursion
# limit, every host rule was skipped, and the block returned torch's answer after the right kernel's launch: 3/3
# code points at aed9969 where the depth met the stack (one or two of these; deeper ones raised RecursionError out
# of Grader.grade instead, in the extraction's unparse: a crash). Both depend on the stack the grading runs on, so
# the test sweeps the depths: each must be refused before anything runs.
DEEP_DICTS = [(depth, minuses) for depth in range(150, 171) for minuses in range(3)]


def deep_dict_attack(depth: int, minuses: int) -> str:
    deep = "-" * minuses + "{0: " * depth + "0" + "}" * depth
    return program(RIGHT_ATOMIC, f"sumsqs / N - mean * mean if True else [x, {deep}]",
                   LAUNCH + "\nreturn x.mean(1), x.var(1, unbiased=False)")


def test_host_code_too_deep_to_check_is_refused_not_run_unchecked(grader, host):
    """Every depth is refused before it runs (nested past extract.MAX_FILL_NESTING, or too deep to compare), says
    so in zh and en, and earns no code point; none crashes the grading."""
    reports, crashed = {}, {}
    for depth, minuses in DEEP_DICTS:
        try:
            reports[depth, minuses] = grader.grade(Submission(exercise=EXERCISE, code=deep_dict_attack(depth, minuses)),
                                                   secret_seed=SECRET_SEED)
        except RecursionError as exc:  # (at aed9969: out of Grader.grade, the extraction's unparse)
            crashed[depth, minuses] = repr(exc)[:80]
    ran = {key: code_points(r) for key, r in reports.items() if r.program is None or r.program.ran}
    assert not ran and not crashed, (ran, crashed)
    for (depth, minuses), report in reports.items():
        assert report.status == "graded" and code_points(report)[0] == 0, (depth, minuses)
        zh, en = report.program.not_run_reason or "", report.translations["en"].not_run_reason or ""
        assert ("嵌套太深" in zh or "嵌套过深" in zh) and "nested too deeply" in en, (depth, minuses, zh, en)
    host.assert_untouched()


@pytest.mark.parametrize("name", list(ATTACKS))
def test_host_code_that_does_the_kernels_work_earns_nothing(runs_grader, host, name):
    """The runs behind the rule, on the exercise without it."""
    report = runs_grader.grade(Submission(exercise=EXERCISE, code=program(*ATTACKS[name])), secret_seed=SECRET_SEED)
    assert report.status == "graded" and report.program.ran, report.to_json()[:2000]
    assert "kernel_alone_sandbox_s" in report.timing, report.timing
    points, _ = code_points(report)
    assert points == 0, [(i.id, i.points) for i in report.items]
    assert report.given_check.status == "failed", report.given_check
    # An answer returned before any launch fails in the student's own run already: the harness
    # says no kernel of the cell was launched (sandbox.no_kernel_launch); the others pass there
    # and fail only in the kernel-alone run.
    zh, en = (("没有启动这个 cell 里的任何 kernel", "without launching any kernel of the cell") if name == "return-torch-answer"
              else ("只在你自己的 host 端代码下通过", "only with your own host code"))
    assert zh in report.given_check.output, report.given_check.output
    english = report.translations["en"]
    for c in report.cases:
        assert en in (english.cases[c.id].error or ""), (c.id, english.cases[c.id])
    for c in report.cases:
        assert not c.passed, c.id
        if c.kind != "given":
            assert zh in (c.error or ""), (c.id, c.error)
    host.assert_untouched()


def test_a_correct_kernel_with_host_code_of_its_own_earns_every_point(grader, host):
    """Kernel and host fills written otherwise than the solution's (so the kernel-alone run happens),
    and right."""
    code = program("tl.sum(values * values, 0)", "sumsqs / N - mean ** 2", "sums.fill_(0.0)\nsumsqs.mul_(0.0)")
    report = grader.grade(Submission(exercise=EXERCISE, code=code), secret_seed=SECRET_SEED)
    assert "kernel_alone_sandbox_s" in report.timing, report.timing
    points, most = code_points(report)
    assert points == most, [(i.id, i.points, i.feedback) for i in report.items]
    assert all(c.passed for c in report.cases), [(c.id, c.error) for c in report.cases if not c.passed]
    assert report.given_check.status == "passed"
    host.assert_untouched()


def test_a_consistent_split_of_the_work_otherwise_than_the_solution_goes_to_a_ta(grader, host):
    """The kernel adds Σx²/N and the host no longer divides: right, and wrong with the solution's
    host code. With the kernel's contribution zeroed the student's host code fails too (it uses what
    the kernel computed), so the points stand provisionally and a TA confirms them: no silent fail."""
    code = program("tl.sum(values * values, axis=0) / N", "sumsqs - mean * mean", RIGHT_ZEROING)
    report = grader.grade(Submission(exercise=EXERCISE, code=code), secret_seed=SECRET_SEED)
    assert "kernel_alone_sandbox_s" in report.timing and "kernel_ablated_sandbox_s" in report.timing, report.timing
    assert all(c.passed for c in report.cases), [(c.id, c.error) for c in report.cases if not c.passed]
    assert report.given_check.status == "passed", report.given_check
    split = next(d for d in report.diagnoses if d.id == "host_split_differs")
    named = {e["case"] for e in split.evidence["cases"]}  # (a width of 1 divides by N = 1: both agree)
    assert "given" in named and named <= {c.id for c in report.cases} and len(named) > len(report.cases) // 2, named
    assert "助教确认" in split.message and "TA confirms" in split.evidence["messages"]["en"]
    code_items = [i for i in report.items if i.id.startswith("code.") and i.id != "code.explanation"]
    assert code_items and all(i.status == "needs_review" and i.points == i.max_points for i in code_items)
    assert report.score.provisional
    host.assert_untouched()


def test_host_code_calibrated_to_its_kernel_is_not_passed_unreviewed(runs_grader, host):
    """Host code that fills the accumulator itself less what its (wrong) kernel adds, one per block:
    it uses the kernel's contribution, so zeroing that fails too. Nothing the runs see tells this from
    an honest split: a TA decides, and the report says so (provisional, flagged). On the exercise as
    it is, the rule refuses it first (it computes Σx² from x on the host)."""
    report = runs_grader.grade(Submission(exercise=EXERCISE, code=program(*CALIBRATED)), secret_seed=SECRET_SEED)
    assert report.status == "graded"
    assert report.score.provisional, report.to_json()[:2000]
    assert any(d.id == "host_split_differs" for d in report.diagnoses)
    assert any(i.status == "needs_review" for i in report.items)
    host.assert_untouched()


def test_a_correct_kernel_with_wrong_host_code_still_fails(grader, host):
    """The kernel-alone run only takes points away: a host combine that is wrong (the sample
    variance) fails as before, although the kernel alone is right."""
    code = program(RIGHT_ATOMIC, "(sumsqs - N * mean * mean) / (N - 1)", RIGHT_ZEROING)
    report = grader.grade(Submission(exercise=EXERCISE, code=code), secret_seed=SECRET_SEED)
    assert report.status == "graded"
    assert not all(c.passed for c in report.cases)
    assert all("host 端代码" not in (c.error or "") for c in report.cases)
    host.assert_untouched()


# --- a whitelisted host expression (fill_policy expression) ------------------------------------

HOST_EXPR = "adv_host_expr"
HOST_EXPR_TEMPLATE = (ADV_EXERCISES / HOST_EXPR / "template.py").read_text(encoding="utf-8")


def host_expr(factor: str, added: str) -> str:
    return HOST_EXPR_TEMPLATE.replace("______", factor, 1).replace("______", added, 1)


def test_a_whitelisted_host_expression_cannot_do_the_kernels_work(host):
    """`y + x * 2` passes the expression whitelist (names in scope, operators) and is torch on the
    host: with the kernel's factor 0 it earned every point."""
    grader = make_grader()
    report = grade(host_expr("0", "x * 2"), exercise=HOST_EXPR, grader=grader)
    assert report.status == "graded" and report.program.ran and report.program.not_run_reason is None
    assert not report.score.passed and report.score.total == 0, report.to_json()[:2000]
    assert report.given_check.status == "failed"
    for c in report.cases:
        assert not c.passed and "只在你自己的 host 端代码下通过" in (c.error or ""), (c.id, c.error)
    right = grade(host_expr("2.0", "x * 0"), exercise=HOST_EXPR, grader=grader)  # neither fill the solution's
    assert "kernel_alone_sandbox_s" in right.timing, right.timing
    assert right.score.passed and right.score.total == right.score.max, right.to_json()[:2000]
    host.assert_untouched()


def test_a_tensor_method_of_a_result_in_host_code_cannot_do_the_kernels_work(host):
    """A method on a result (`(x + x).to(x)`, allowed since issue 15 item 4) is torch on the host
    too: the kernel-alone run still takes the points of a kernel that contributes nothing."""
    report = grade(host_expr("0", "(x + x).to(x)"), exercise=HOST_EXPR, grader=make_grader())
    assert report.status == "graded" and report.program.ran and report.program.not_run_reason is None
    assert "kernel_alone_sandbox_s" in report.timing, report.timing
    assert not report.score.passed and report.score.total == 0, report.to_json()[:2000]
    for c in report.cases:
        assert not c.passed and "只在你自己的 host 端代码下通过" in (c.error or ""), (c.id, c.error)
    host.assert_untouched()


def test_a_claimed_pass_of_a_call_that_launched_nothing_is_for_a_ta(runs_grader, host):
    """The harness's own no-launch error (its `no_launch` field, not the words of the output) still makes
    a claimed pass of the lesson's check a suspected veto: its asserts may well have passed, as said."""
    report = runs_grader.grade(Submission(exercise=EXERCISE, code=program(*ATTACKS["return-torch-answer"]),
                                          claimed_output="两个 assert_close 都通过了，没有报错。"),
                               secret_seed=SECRET_SEED)
    assert report.status == "graded" and report.given_check.status == "failed", report.to_json()[:2000]
    (veto,) = [v for v in report.vetoes if v.rule == "unverified_claim"]
    assert veto.status == "suspected" and veto.needs_review, veto
    host.assert_untouched()
