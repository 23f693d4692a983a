"""The pass rule's requirements where people read them: the feedback page (zh, en), the Gradescope and
PrairieLearn exports, and the report after a TA decision."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grades.platforms import gradescope, prairielearn
from service.grades.policy import CoursePolicy
from service.grading import passrule
from service.grading.claims import unverified_claim
from service.report import Item, Report, Score
from service.review import DecisionRequest, apply_decision
from service.web.i18n import texts
from service.web.pages import templates

LESSON = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")
REAL = "Traceback (most recent call last):\nAssertionError: Tensor-likes are not close!"
CLAIM = "两个 assert_close 都通过了"


def chain_item(question: str, links: int, missing: int, points: float) -> Item:
    return Item(id=question, title=question.upper(), points=points, max_points=2, status="partial", feedback="",
                evidence={"links": [{"quote": f"link {i}"} for i in range(links)],
                          "missing_links": [{"label": f"gap {i}"} for i in range(missing)], "flags": [],
                          "misconceptions": [], "found": []})


def report(language: str, *, claim: str = CLAIM, given: str = "failed") -> Report:
    items = [Item(id="code.regular", title="regular", points=1, max_points=2, status="partial", feedback=""),
             Item(id="code.boundary", title="boundary", points=0, max_points=1, status="fail", feedback=""),
             Item(id="code.explanation", title="explanation", points=1, max_points=1, status="pass", feedback=""),
             chain_item("q1", 5, 0, 2), chain_item("q2", 1, 3, 1), chain_item("q3", 2, 0, 2)]
    veto = unverified_claim(claimed_output=claim, program_ran=True, given_status=given, real_output=REAL,
                            not_run_reason=None, language=language)
    vetoes = [veto] if veto is not None else []
    requirements = passrule.requirements(
        LESSON.spec.pass_rule, items=items, vetoes=vetoes, threshold=8, given_status=given, given_output=REAL,
        not_run_reason=None, claim_kind="pass" if claim else "missing", claimed_output=claim,
        written="两遍计算只读一次 HBM；N < BLOCK 时要重新 mask", language=language)
    return Report(submission_id="s", exercise={"id": LESSON.id, "version": 1}, status="graded", language=language,
                  score=Score(total=7, max=10, pass_threshold=8, passed=all(r.met for r in requirements),
                              provisional=False, requirements=requirements),
                  items=items, vetoes=vetoes, environment={"backend": "interpreter", "sandbox": "bwrap"},
                  created_at=datetime.now(timezone.utc))


def render(r: Report) -> str:
    from service.web.feedback import reasons

    t = texts(r.language)
    return templates().get_template("feedback.html").render(
        t=t, row=type("Row", (), {"exercise_id": LESSON.id, "status": "graded"})(), report=r,
        title="", exercise_title="", score_svg="", cases=[], pending=[], reasons=reasons(r, t, r.language),
        language=r.language, lead=None, ladders=[], hint_cost=None, lang_asked="", switch=[], performance=None)


@pytest.mark.parametrize(("language", "words"), [
    ("zh", ["通过要求", "给定检查通过", "未满足", "你写的运行输出", "我们的实际运行输出", "Q2 说明了因果链"]),
    ("en", ["Pass requirements", "The given check passes", "not met", "The run output you gave", "Our real run output",
            "Q2 explains the causal chain"]),
])
def test_the_page_lists_every_requirement_and_shows_the_claim_beside_the_run(language, words):
    r = report(language)
    by_id = {q.id: q for q in r.score.requirements}
    assert not by_id["given_check"].met and not by_id["causal_chain.q2"].met and by_id["causal_chain.q1"].met
    assert by_id["correctness_boundary"].met and by_id["performance_tradeoff"].met
    html = render(r)
    for word in words:
        assert word in html, word
    assert html.count('class="requirement ') == len(r.score.requirements)
    assert 'data-id="given_check" data-met="false"' in html and 'id="held"' in html
    assert "Tensor-likes are not close" in html and CLAIM in html


@pytest.mark.parametrize("language", ["zh", "en"])
def test_exports_name_the_requirement_that_failed(language):
    r = report(language, claim="仅静态审查", given="failed")
    assert r.vetoes == [] and not r.score.passed
    policy = CoursePolicy()
    results = gradescope(r, policy=policy)
    informational = [t for t in results["tests"] if "score" not in t]
    names = " ".join(t["name"] for t in informational)
    assert "given_check" in names and "causal_chain.q2" in names and "total" in names
    title = passrule.given_check_requirement(status="failed", output=REAL, not_run_reason=None, language=language).title
    assert title in names
    given = next(t for t in informational if "given_check" in t["name"])
    assert "AssertionError" in given["output"]
    pl = prairielearn(r, policy=policy)
    assert any("given_check" in t["name"] and t["points"] == 0 for t in pl["tests"])


def test_a_ta_decision_rescores_the_chain_the_total_and_the_vetoes():
    r = report("zh")
    assert {v.rule: v.status for v in r.vetoes} == {"unverified_claim": "confirmed"}
    after, _, _ = apply_decision(r, DecisionRequest(item="q2", points=2, reason="terse but the chain is there"),
                                 actor="ta")
    by_id = {q.id: q for q in after.score.requirements}
    assert by_id["causal_chain.q2"].met and by_id["causal_chain.q2"].evidence["ta_decision"]
    assert by_id["total"].evidence["total"] == 8 and by_id["total"].met
    assert not by_id["no_blocking_veto"].met and not after.score.passed
    final, _, _ = apply_decision(after, DecisionRequest(veto="unverified_claim", action="dismiss", reason="pasted late"),
                                 actor="ta")
    by_id = {q.id: q for q in final.score.requirements}
    assert by_id["no_blocking_veto"].met
    assert not final.score.passed and not by_id["given_check"].met, "the given check still failed in our run"


@pytest.mark.parametrize("language, words, status", [("zh", "声称的运行结果与实际不符", "已确认"),
                                                     ("en", "The claimed run output does not match", "confirmed")])
def test_a_blocking_veto_is_named_in_the_students_words(language, words, status):
    veto = unverified_claim(claimed_output=CLAIM, program_ran=True, given_status="failed", real_output=REAL,
                            not_run_reason=None, language=language)
    assert veto is not None and veto.status == "confirmed"
    requirement = passrule.veto_requirement([veto], language)
    assert not requirement.met and words in requirement.message and status in requirement.message
    assert "unverified_claim" not in requirement.message  # the rule id stays in the evidence, for programs
    assert requirement.evidence["vetoes"] == ["unverified_claim (confirmed)"]
