"""LaTeX as students type it in markdown answers (issue 15 item 6, branch `misc11`): a fraction is a division,
\\bar{x} the mean, \\text{…} its words, \\infty, \\sum, \\delta, \\le, \\max … the rubric's signs and names
(folding.LATEX_FOLD). "\\delta^2 \\cdot \\frac{n_a n_b}{n_a + n_b}" did not state Welford's weight, and
"$\\max(a, -\\infty) = a$" no identity. Written for this change; not from the calibration set."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading import folding
from service.grading.freetext import TextScore, _Text, score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _scored(exercise: str, question: str, answer: str) -> tuple[TextScore, float]:
    ex = CATALOG.get(exercise)
    points = next(item.points for item in ex.spec.rubric if item.source == "text" and item.question == question)
    return score_answer(ex.question(question), answer, points, course_text=ex.spec.course_text), points


@pytest.mark.parametrize(("latex", "read"), [
    (r"$\delta^2 \cdot \frac{n_a n_b}{n_a + n_b}$", "$δ^2 · n_a n_b/(n_a + n_b)$"),
    (r"\frac{a - b}{c}", "(a - b)/(c)"),
    (r"\dfrac{x}{n}", "x/(n)"),
    (r"$\delta = \bar x_b - \bar{x}_a$", "$δ = mean_b - mean_a$"),
    (r"$\max(a, -\infty) = a$", "$max(a, -inf) = a$"),
    (r"$\sum_{i<N} x_i + (\text{BLOCK} - N)\,c$", "$Σ_i<n x_i + (block - n) c$"),
    (r"\left( a \right) \le b, c \ll d", "( a ) ≤ b, c ≪ d"),
    (r"\lesssim \deltax", r"\lesssim \deltax"),  # not one of the names: left as typed
])
def test_latex_is_read_as_the_rubric_writes(latex: str, read: str) -> None:
    assert str(_Text.of(latex)) == read


def test_a_quote_still_shows_the_students_latex() -> None:
    result, _ = _scored("welford_merge", "q2", WELFORD)
    weight = next(f for f in result.found if f["concept"] == "weight")
    assert "\\frac" in weight["quote"]


WELFORD = ("Each $M_2$ is taken about its own chunk mean $\\bar x_a$ or $\\bar x_b$. When the means differ every point "
           "sits further from the merged mean, so the merge adds $\\delta^2 \\, \\frac{n_a n_b}{n_a + n_b}$ with "
           "$\\delta = \\bar x_b - \\bar x_a$; without it the variance comes out too small.")


def test_the_weight_written_as_a_fraction_is_stated() -> None:
    result, points = _scored("welford_merge", "q2", WELFORD)
    assert "weight" in {f["concept"] for f in result.found}
    assert result.points == points


def test_latex_scores_as_the_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    latex = ("The store mask only guards the write; tl.max and tl.sum still see the padding lanes. With $-\\infty$: "
             "$\\max(a, -\\infty) = a$ and $e^{-\\infty - m} = 0$, so both reductions are unchanged.")
    plain = ("The store mask only guards the write; tl.max and tl.sum still see the padding lanes. With -inf: "
             "max(a, -inf) = a and exp(-inf - m) = 0, so both reductions are unchanged.")
    assert _scored("lesson07_softmax", "q2", latex)[0].points == _scored("lesson07_softmax", "q2", plain)[0].points > 0
    monkeypatch.setattr(folding, "LATEX_FOLD", False)
    assert "weight" not in {f["concept"] for f in _scored("welford_merge", "q2", WELFORD)[0].found}


@pytest.mark.parametrize("answer", [
    "padding lane 照样参与归约，值就是 other，所以 other 要取单位元：求和：0；求最大值：-inf。填错 c 会让和多出 (BLOCK − N)·c。",
    "The masked lanes still go into the reduction with the value of other, so other must be the identity e with "
    "f(a, e) = a: for sum $e = 0$ since $a + 0 = a$, for max $e = -\\infty$ since $\\max(a, -\\infty) = a$.",
])
def test_the_identities_written_as_math_or_headings(answer: str) -> None:
    result, _ = _scored("lesson05_row_sum", "q2", answer)
    assert {"sum_zero", "max_neg_inf"} <= {f["concept"] for f in result.found}
