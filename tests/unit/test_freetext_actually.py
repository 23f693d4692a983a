"""其实就是 ("is in fact") identifies, it waves nothing away (issue 15 item 6, branch `misc11`): "越过行尾的列其实就是下一行
开头的元素" explains what the overrun reads, and a full Long Sum Q1 so told was flagged `dismissal`. 其实就够了, 其实就
可以不加 still wave a step away. Written for this change; not from the calibration set."""
from __future__ import annotations

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import TextScore, score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _scored(answer: str) -> tuple[TextScore, float]:
    ex = CATALOG.get("puzzle_long_sum")
    points = next(item.points for item in ex.spec.rubric if item.source == "text" and item.question == "q1")
    return score_answer(ex.question("q1"), answer, points, course_text=ex.spec.course_text), points


def test_in_fact_it_is_names_what_the_overrun_reads() -> None:
    result, points = _scored("B1 < T，一个块放不下整行，所以循环 cdiv(T, B1) 次。x 按行连续存放，越过行尾的列其实就是下一行开头的"
                             "元素，不加 mask 会把它们加进这一行的和，结果偏大；所以 load 用 cols < T 作 mask、other=0.0。")
    assert not result.flags, result.suspected
    assert result.points == points


def test_in_fact_enough_still_waves_a_step_away() -> None:
    for answer in ("B1 < T，一个块放不下整行，所以循环 cdiv(T, B1) 次。最后一块越界读到下一行，其实就可以不加 mask，反正结果差不多。",
                   "B1 < T，所以循环 cdiv(T, B1) 次；最后一块越界读到下一行的数，加进行和；mask 其实就够了一半，other 无所谓。"):
        result, _ = _scored(answer)
        assert result.flags, answer
