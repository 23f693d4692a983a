"""What the student reads says what failed, on which input and by how much (the feedback audit,
2026-12-05): lesson 6 submissions graded for real (bwrap sandbox, interpreter), and the words of
their report, its translation, the student's view and the CLI's text asserted."""
from __future__ import annotations

import json
import re
import shutil

import pytest
from rich.console import Console

from service.cli import print_report
from service.config import REPO_ROOT
from service.student_view import student_report
from service.submission import Submission
from tests.support.backends import warm_grader

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")]

EXAMPLE = json.loads((REPO_ROOT / "exercises/lesson06_mean_var/example_submission.json").read_text(encoding="utf-8"))
SEED = 12345
CJK = re.compile(r"[\u3400-\u9fff]")


@pytest.fixture(scope="module")
def grader():
    with warm_grader("bwrap") as grader:
        yield grader


@pytest.fixture(scope="module")
def exercise(grader):
    return grader.catalog.get("lesson06_mean_var")


def submit(grader, exercise, fill: str, **fields):
    """The example's written answers (all good) with this fill and these fields."""
    data = {**EXAMPLE, "code": exercise.template.replace("______", fill, 1), **fields}
    return grader.grade(Submission.model_validate(data), secret_seed=SEED)


def text_of(report) -> str:
    console = Console(width=400, record=True)
    print_report(report, console)
    return console.export_text()


@pytest.fixture(scope="module")
def missing_remask(grader, exercise):
    """`True` in the blank (no second mask), claiming the check passed."""
    return submit(grader, exercise, "True")


def test_a_failed_given_check_says_which_call_which_output_and_by_how_much(missing_remask):
    """Before: "- given (…): Greatest relative difference: 0.15 at index (2,) (up to 0.0002 allowed)",
    the assert's last line, in English in a Chinese report, naming neither the shape nor the output."""
    report = missing_remask
    given = next(c for c in report.cases if c.id == "given")
    said = re.compile(r"第 1 次调用 mean_var 的输入（形状 3×17）重新计算：输出 var\[\d+\] 是 [-\d.e+]+，应为 [-\d.e+]+"
                      r"（允许误差 [\d.e+-]+）。$")
    assert said.search(given.error.strip()), given.error
    regular = next(i for i in report.items if i.id == "code.regular")
    assert said.search(regular.feedback.splitlines()[1]), regular.feedback
    requirement = next(r for r in report.score.requirements if r.id == "given_check")
    assert "AssertionError" in requirement.message and "（形状 3×17）" in requirement.message, requirement.message
    en = report.translations["en"]
    assert re.search(r"call 1 of mean_var \(shape 3×17\): output var\[\d+\] is [-\d.e+]+, should be",
                     en.cases["given"].error), en.cases["given"].error
    assert "(shape 3×17)" in en.requirements["given_check"].message
    assert not CJK.search(en.cases["given"].error)


def test_the_text_report_says_why_a_submission_did_not_pass(grader, exercise, missing_remask):
    """Before: "10/10 (pass ≥ 8) NOT PASSED" and nothing that said why (the run output was missing);
    a confirmed unverified_claim said "side by side below" with nothing below it."""
    no_claim = submit(grader, exercise, "mask", claimed_output="")
    assert no_claim.score.total == 10 and not no_claim.score.passed
    text = text_of(no_claim)
    assert "NOT PASSED 未通过" in text and "没有通过，因为这些通过要求没有满足：" in text
    assert "- 给出了实际运行输出（或注明“仅静态审查”）：没有给出实际运行输出" in text, text

    text = text_of(missing_remask)
    assert "- 给定检查通过：给定检查在我们的运行中没有通过" in text and "- 没有否决项：" in text
    claim = text[text.index("veto unverified_claim"):]
    assert "你写的运行输出:\n    | （无输出：两个 assert_close 都通过）" in claim, claim
    assert "我们的实际运行输出:\n" in claim and "    | AssertionError: Tensor-likes are not close!" in claim

    passed = text_of(grader.grade(Submission.model_validate(EXAMPLE), secret_seed=SEED))
    assert "PASS 已通过" in passed and "通过要求没有满足" not in passed


def test_a_coincidental_pass_names_the_probe_what_it_targets_and_how_far_off(grader, exercise):
    """Before: "给定检查通过，但针对具体误区的探针失败：结果可能是碰巧正确。" with no probe named."""
    report = submit(grader, exercise, "values != 0")
    veto = next(v for v in report.vetoes if v.rule == "coincidental_pass")
    note = veto.evidence["note"]
    assert re.search(r"probe\.zeros（针对：按数值定义掩码[^；]*；最大误差是允许值的 [\d.e+]+ 倍）", note), note
    assert re.search(r"probe\.zeros \(the largest error is [\d.e+]+ times the allowed one\)", veto.evidence["note_en"])
    assert not CJK.search(veto.evidence["note_en"]), "the English note names no Chinese target"
    en = report.translations["en"].vetoes["coincidental_pass"]
    assert "probe.zeros (it targets: A mask defined by value" in en and not CJK.search(en), en
    # the student reading it in English gets the translation's words, also under note_en
    view = student_report(report.model_dump(mode="json", by_alias=True), "en")
    shown = next(v for v in view["vetoes"] if v["rule"] == "coincidental_pass")["evidence"]
    assert shown["note"] == shown["note_en"] == en


def test_a_wrong_chain_names_the_question_and_the_misconception(grader, exercise):
    """Before: "代码全部通过，但书面回答里的因果链是错的" without saying which answer or what is wrong."""
    q2 = "因为 load 时 other=0.0 已经足够，padding 已经是 0 了所以不会污染方差。"
    report = submit(grader, exercise, "mask", answers={**EXAMPLE["answers"], "q2": q2})
    veto = next(v for v in report.vetoes if v.rule == "coincidental_pass")
    assert "（Q2：以为 load 时 other=0.0 已经足够（不需要二次 mask）" in veto.evidence["note"], veto.evidence["note"]
    assert "(Q2: other=0.0 at the load is enough" in veto.evidence["note_en"]


def test_a_claimed_failure_is_quoted_as_the_student_wrote_it(grader, exercise):
    """Before: "提交声称给定检查失败（assertionerror）": the lower-cased form the claim is read in."""
    report = submit(grader, exercise, "mask", claimed_output="AssertionError: Tensor-likes are not close!")
    veto = next(v for v in report.vetoes if v.rule == "unverified_claim")
    assert veto.status == "suspected"
    assert "失败（AssertionError）" in veto.evidence["note"] and "failed (AssertionError)" in veto.evidence["note_en"]


def test_words_about_a_run_are_not_called_a_run_output(grader, exercise):
    """Before: "给出了运行输出。" for "跑了一下，好像没什么问题吧", which shows no output and no verdict.
    The requirement stays met (no points off), its words say what is missing."""
    report = submit(grader, exercise, "mask", claimed_output="跑了一下，好像没什么问题吧")
    run_output = next(r for r in report.score.requirements if r.id == "run_output")
    assert run_output.met and run_output.evidence["claim"] == "unclear" and report.score.passed
    assert run_output.message.startswith("你写的是“跑了一下，好像没什么问题吧”：这不是给定检查打印的内容"), run_output.message
    en = report.translations["en"].requirements["run_output"].message
    assert en.startswith('You wrote "跑了一下，好像没什么问题吧": that is not what the given check printed'), en


def test_the_student_view_names_no_folder_of_the_grader(grader):
    """Before: the given check's output, quoted in given_check, the requirement's evidence and the
    claim's side by side, began "/work/main/.venv/lib/python3.11/site-packages/triton/knobs.py:504:
    UserWarning" (the interpreter's Triton warns): the grader's own folders."""
    report = grader.grade(Submission.model_validate({**EXAMPLE, "claimed_output": "Traceback: AssertionError"}),
                          secret_seed=SEED)
    stored = report.model_dump(mode="json", by_alias=True)
    view = json.dumps(student_report(stored), ensure_ascii=False)
    warned = re.findall(r'(/[^\s"]*/site-packages/[^\s":]+\.py):\d+: \w*Warning', json.dumps(stored))
    for path in set(warned):
        assert path not in view
        assert path.split("site-packages/", 1)[1] in view
    assert not re.search(r'/[^\s"]*/(site|dist)-packages/', view)


def test_a_wide_rows_padding_value_is_named_with_the_others(grader):
    """lesson 5, other=1.0: on probe.wide (this seed draws N = 4088, BLOCK = 4096: 8 padding lanes) each
    sum is 8 too large, inside the comparison's slack per lane. Before, beside padding_not_identity on
    the other cases, it was unexplained_sum: "matches none of the lesson's known misconceptions"."""
    exercise = grader.catalog.get("lesson05_row_sum")
    example = json.loads((REPO_ROOT / "exercises/lesson05_row_sum/example_submission.json").read_text(encoding="utf-8"))
    code = exercise.solution.replace("other=0.0", "other=1.0")
    assert code != exercise.solution
    report = grader.grade(Submission.model_validate({**example, "code": code}), secret_seed=SEED)
    wide = next(c for c in report.cases if c.id == "probe.wide")
    assert not wide.passed and wide.shape[1] == 4088, wide.shape
    assert [d.id for d in report.diagnoses] == ["padding_not_identity"], [d.message for d in report.diagnoses]
    found = next(d for d in report.diagnoses if d.id == "padding_not_identity")
    wide_found = next(w for w in found.evidence["cases"] if w["case"] == "probe.wide")
    assert wide_found["padding"] == 8 and abs(wide_found["offset"] - 8) < 0.01 and abs(wide_found["other"] - 1) < 1e-3
    assert "probe.wide" in found.message and "probe.wide" in report.translations["en"].diagnoses["padding_not_identity"]


def test_the_off_by_one_diagnosis_names_the_row_its_figure_is_from(grader, exercise):
    """Before: "…（多出 mean²/N，probe.large_mean 上 ≈ 9559）" beside the case's own line "输出 var[0] 得到
    7356"; the 9559 is row 4's, which the message did not say, so the two figures read as contradictory."""
    report = submit(grader, exercise, "cols <= N")
    found = next(d for d in report.diagnoses if d.id == "off_by_one_le")
    example = max(found.evidence["cases"], key=lambda d: abs(d["excess"]))
    said = (f"以 {example['case']} 第 {example['row']} 行为例（N={example['N']}，均值 ≈ {example['mean']:.4g}）："
            f"方差多出 {example['excess']:.4g}，与 mean²/N ≈ {example['predicted_excess']:.4g} 吻合")
    assert said in found.message, found.message
    en = report.translations["en"].diagnoses["off_by_one_le"]
    assert f"On {example['case']}, row {example['row']} (N={example['N']}, mean ≈ {example['mean']:.4g})" in en, en
