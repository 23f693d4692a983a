"""Written answers copied from the reference answer or from the course text an exercise draws on
(exercises/<id>/course_text.yaml) are flagged `copied_text` for a TA, with the source named and the
copied stretch quoted; the points stand (half a point off a copy of the course text lost held-out
answers). Real answers, real exercises, through score_answer and
through rubric.score_items (the pipeline's text step)."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import Exercise, ExerciseCatalog
from service.grading import freetext, rubric
from service.grading.freetext import COPIED_TEXT, COPY_QUOTE, score_answer, score_text
from service.submission import MAX_TEXT_CHARS, Submission

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")
LESSON = CATALOG.get("lesson06_mean_var")
LONG_SUM = CATALOG.get("puzzle_long_sum")


def _passage(exercise: Exercise, passage_id: str) -> str:
    return next(p.text for p in exercise.spec.course_text if p.id == passage_id)


def _points(exercise: Exercise, question: str) -> float:
    return next(i.points for i in exercise.spec.rubric if i.question == question)


def _score(exercise: Exercise, question: str, answer: str, *, course: bool = True) -> freetext.TextScore:
    return score_answer(exercise.question(question), answer, _points(exercise, question),
                        course_text=exercise.spec.course_text if course else ())


def test_a_paragraph_pasted_from_the_lesson_is_flagged_and_keeps_its_points():
    pasted = _passage(LESSON, "l6_perf").split("\n")[1]  # 数值稳定性与 Welford 算法：本课的两遍算法……
    answer = "我的回答：\n" + pasted
    result = _score(LESSON, "q3", answer)
    alone = _score(LESSON, "q3", answer, course=False)  # the same answer, no course text given
    assert COPIED_TEXT in result.flags and COPIED_TEXT not in alone.flags
    assert result.points == alone.points > 0  # the points stand: a TA decides
    [main, *_] = result.copied
    assert main["source"] == "course" and main["passage"] == "l6_perf"
    assert main["where"] == "shared/seeds/000_bbd5487358501849.txt"
    assert main["label"] == "第 6 课 · 核心心智模型 · 4. 性能与工程取舍"
    assert main["quote"].rstrip("…") in answer and len(main["quote"]) <= COPY_QUOTE + 1
    assert result.copied_share >= freetext.COPY_SHARE


def test_the_blogs_solution_pasted_into_a_puzzle_answer_goes_to_a_ta_with_the_source_named():
    """Through the pipeline's text step: the item goes to a TA, and its feedback says in the student's
    language what was found and why a TA looks; the report's evidence names the passage and quotes it."""
    pasted = _passage(LONG_SUM, "blog_puzzle_7").split("\n")[4]  # 这是一个二维的张量，……需要使用for循环。
    submission = Submission(exercise=LONG_SUM.id, code=LONG_SUM.solution, answers={"q1": pasted},
                            explanation="每个 program 负责 B0 行。")
    for language, says in (("zh", "课程材料“博客 · Puzzles 7 Long Sum”"),
                           ("en", 'the course text "Blog · puzzle 7: long sum"')):
        items = {i.id: i for i in rubric.score_items(LONG_SUM, submission, [], not_run_reason=None, diagnoses=[],
                                                       language=language)}
        q1 = items["q1"]
        assert q1.status == "needs_review" and COPIED_TEXT in q1.evidence["flags"]
        assert says in q1.feedback and ("照抄" in q1.feedback if language == "zh" else "not explaining" in q1.feedback)
        [main] = q1.evidence["copied_text"]
        assert main["passage"] == "blog_puzzle_7" and main["quote"].startswith("这是一个二维的张量")
        assert q1.evidence["copied_share"] == 1.0 and q1.evidence["copied_reference"] is False
        assert COPIED_TEXT not in items["code.explanation"].evidence["flags"]


def test_the_reference_answer_pasted_is_flagged_as_the_reference():
    question = LESSON.question("q2")
    item = score_text(item_id="q2", title="Q2", max_points=2.0, question=question, answer=question.reference_answer,
                      language="en", result=_score(LESSON, "q2", question.reference_answer))
    assert item.points == 2.0 and item.status == "needs_review"
    assert item.evidence["copied_reference"] is True and item.evidence["copied_text"][0]["source"] == "reference_answer"
    assert "the question's reference answer" in item.feedback


@pytest.mark.parametrize("answer", [
    # the chain in the student's own words, with the lesson's terms and code quoted
    "load 的时候 other=0.0 让多出来的 padding lane 读成 0，第一遍 tl.sum 求均值没问题。可是接着算 values - mean，"
    "这些 lane 就成了 −mean，平方以后每个贡献 mean²，于是第二遍求和多出 (BLOCK−N)·mean²，方差偏大。"
    "所以平方之后要 tl.where(mask, …, 0.0) 把它们重新清零。",
    # one sentence of the lesson quoted inside an answer of one's own
    "课上说“masked load 的 0 对 sum 安全，但减 mean 后 padding lane 变成 -mean”。我的理解：求均值时补的 0 不影响总和，"
    "但减完均值每个补位都是 −μ，平方成 μ²，N < BLOCK 时第二次求和就多算了 (BLOCK − N) 个 μ²，所以要再 mask 一次。",
])
def test_an_answer_of_ones_own_that_quotes_a_few_terms_is_not_flagged(answer):
    result = _score(LESSON, "q2", answer)
    assert COPIED_TEXT not in result.flags and result.copied == [] and result.copied_share == 0.0
    assert result.points == 2.0


def test_the_longest_answer_allowed_is_checked_in_one_pass_and_quoted_briefly():
    pasted = _passage(LESSON, "l6_how")
    answer = (pasted * (MAX_TEXT_CHARS // len(pasted) + 1))[:MAX_TEXT_CHARS]
    result = _score(LESSON, "q1", answer)
    assert COPIED_TEXT in result.flags and result.copied[0]["passage"] == "l6_how"
    assert len(result.copied[0]["quote"]) <= COPY_QUOTE + 1
