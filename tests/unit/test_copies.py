"""The comparison itself (service/grades/copies.py) on real Submission rows and the real exercises:
renaming hides nothing, short answers and small or reference fills are never flagged."""
from __future__ import annotations

import ast

from service.config import REPO_ROOT
from service.db.models import Submission
from service.exercises import ExerciseCatalog
from service.grades import copies
from tests.support import copies_class

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def _row(student: str, body: dict) -> Submission:
    return Submission(id=f"id-{student}", student_id=student, student_name=None, exercise_id=body["exercise"], body=body)


def _fingerprint(fill: str) -> str:
    return copies.fill_fingerprint(ast.parse(fill.replace("\n    ", "\n").strip()).body)[0]


def test_renaming_and_spacing_hide_nothing_but_structure_counts():
    assert _fingerprint(copies_class.OWN_FILL) == _fingerprint(copies_class.RENAMED_FILL)
    assert _fingerprint(copies_class.OWN_FILL) != _fingerprint(copies_class.OTHER_FILL)
    assert _fingerprint("a = x_ptr + 1") != _fingerprint("a = y_ptr + 1"), "the kernel's parameters are not renamed"


def test_text_normalisation_folds_width_case_and_punctuation():
    assert copies.normalise_text("Ｍask, THE store！") == copies.normalise_text("mask the  store") == "maskthestore"


def test_homoglyphs_and_invisible_characters_hide_no_copy():
    plain = copies.normalise_text("The padding becomes -mean, so squared it is mean^2")
    disguised = "The pаdding bеcomes -mеаn, sо squ\u200bared it is mеаn^2"  # Cyrillic а е о, a zero-width space
    assert copies.normalise_text(disguised) == plain


def test_code_clusters_skip_the_reference_and_small_fills():
    exercise = CATALOG.get(copies_class.EXERCISE)
    rows = [_row("a", copies_class.body("a", copies_class.OWN_FILL, "")),
            _row("b", copies_class.body("b", copies_class.RENAMED_FILL, "")),
            _row("c", copies_class.body("c", copies_class.REFERENCE_FILL, "")),
            _row("d", copies_class.body("d", copies_class.REFERENCE_FILL, "")),
            _row("e", copies_class.body("e", "    tl.store(z_ptr, tl.load(x_ptr))", "")),
            _row("f", copies_class.body("f", "    tl.store(z_ptr, tl.load(x_ptr))", ""))]
    found = copies._code_clusters(exercise.id, rows, exercise.template, exercise.solution)
    assert [[m.student_id for m in c.members] for c in found] == [["a", "b"]]


def test_one_line_blanks_are_never_compared():
    exercise = CATALOG.get("lesson06_mean_var")
    code = exercise.template.replace("______", "cols < N")
    rows = [_row(s, {"exercise": exercise.id, "code": code}) for s in "abc"]
    assert copies._code_clusters(exercise.id, rows, exercise.template, exercise.solution) == []


def test_a_block_among_statements_goes_through_the_extractor():
    exercise = CATALOG.get("fused_mean_var_atomic")
    assert copies._block_blanks(ast.parse(exercise.template)) == {2: None}
    rows = [_row(s, {"exercise": exercise.id, "code": exercise.solution}) for s in "ab"]
    assert copies._code_clusters(exercise.id, rows, exercise.template, exercise.solution) == []


def test_short_answers_are_not_compared_and_near_copies_are():
    rows = {s: _row(s, {"exercise": "x"}) for s in "abcd"}
    texts = {"id-a": (rows["a"], copies_class.COPIED_ANSWER), "id-b": (rows["b"], copies_class.COPIED_ANSWER_EDITED),
             "id-c": (rows["c"], copies_class.SHORT_ANSWER), "id-d": (rows["d"], copies_class.SHORT_ANSWER)}
    found = copies._text_clusters("x", "answers.q1", texts)
    assert [[m.student_id for m in c.members] for c in found] == [["a", "b"]]
    assert 0.8 <= found[0].similarity < 1
