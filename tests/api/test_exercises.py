"""/v1/exercises: what a student may see (template, questions, rubric points) and never what
grades them (the solution, reference answers, concepts, mutants, the cases' data)."""
from __future__ import annotations

import json
import re

import pytest

from service.exercises import ExerciseCatalog
from tests.api.support import BLANK, EXERCISE

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def exercise(service):
    return ExerciseCatalog(service.settings.exercises_dir).get(EXERCISE)


@pytest.fixture(scope="module")
def reader(service):
    return service.new_course().client("read")


def both(text) -> list[str]:
    """An authored text in each of its languages."""
    return [t for t in (text.zh, text.en) if t]


def public_text(exercise) -> str:
    """What the student is shown anyway: a secret that is a substring of this is no secret."""
    spec = exercise.spec
    parts = [exercise.template, *both(spec.title), *(t for q in spec.questions for t in both(q.prompt)),
             *(t for i in spec.rubric for t in both(i.title))]
    return "\n".join(parts)


def secrets_of(exercise) -> list[str]:
    """Every piece of grading material that must never reach a student."""
    template_lines = set(exercise.template.splitlines())
    found = [line.strip() for line in exercise.solution.splitlines() if line not in template_lines and line.strip()]
    for question in exercise.spec.questions:
        found.append(question.reference_answer)
        for concept in question.concepts:
            found += [concept.label.zh or "", concept.label.en or "", *concept.patterns]
        for misconception in getattr(question, "misconceptions", []):
            found += [misconception.label.zh or "", misconception.label.en or "", *misconception.patterns]
    mutants = exercise.mutants() if callable(exercise.mutants) else exercise.mutants
    for mutant in mutants:
        found.append(mutant.description)
        if mutant.fill:
            found.append(mutant.fill)
        found += [edit.new for edit in (mutant.edits or [])]
        found.append(exercise.mutant_code(mutant))
    for case in exercise.spec.cases:
        found += [*both(case.description), *(both(case.targets) if case.targets else [])]
    public = public_text(exercise)
    return [s for s in {s.strip() for s in found} if len(s) >= 4 and s not in public]


def test_list_exercises(reader, exercise):
    response = reader.get("/v1/exercises")
    assert response.status_code == 200, response.text
    listed = {e["id"]: e for e in response.json()}
    assert EXERCISE in listed
    summary = listed[EXERCISE]
    assert summary["title"] == exercise.spec.title.zh  # the lesson's own language unless asked
    assert summary["max_points"] == exercise.spec.max_points == sum(i.points for i in exercise.spec.rubric)
    assert summary["pass_threshold"] == exercise.spec.pass_threshold
    assert summary["version"] == exercise.spec.version


def test_exercise_shows_template_questions_and_rubric(reader, exercise):
    response = reader.get(f"/v1/exercises/{EXERCISE}")
    assert response.status_code == 200, response.text
    view = response.json()
    assert view["template"] == exercise.template and BLANK in view["template"]
    assert view["entry_point"] == exercise.spec.entry_point
    assert [(q["id"], q["prompt"]) for q in view["questions"]] == [(q.id, q.prompt.zh) for q in exercise.spec.questions]
    assert len(view["questions"]) >= 1
    assert [(r["id"], r["points"]) for r in view["rubric"]] == [(i.id, i.points) for i in exercise.spec.rubric]
    assert sum(r["points"] for r in view["rubric"]) == view["max_points"]
    kinds = view["case_kinds"]
    assert kinds["given"] == 1
    assert sum(kinds.values()) == 1 + len(exercise.spec.cases)


def test_exercise_in_english_on_request(reader, exercise):
    """?lang=en: the title, the questions and the rubric in English (the lesson is Chinese)."""
    listed = {e["id"]: e for e in reader.get("/v1/exercises", params={"lang": "en"}).json()}
    assert listed[EXERCISE]["title"] == exercise.spec.title.en and listed[EXERCISE]["language"] == "zh"
    view = reader.get(f"/v1/exercises/{EXERCISE}", params={"lang": "en"}).json()
    shown = [view["title"], *(q["prompt"] for q in view["questions"]), *(r["title"] for r in view["rubric"])]
    assert shown[0] == exercise.spec.title.en and [q["prompt"] for q in view["questions"]] == \
        [q.prompt.en for q in exercise.spec.questions]
    assert not [s for s in shown if re.search(r"[\u3400-\u9fff]", s)]
    assert reader.get(f"/v1/exercises/{EXERCISE}", params={"lang": "fr"}).status_code == 422


@pytest.mark.parametrize("path", ["/v1/exercises", f"/v1/exercises/{EXERCISE}"])
def test_exercise_never_shows_the_solution_or_grading_material(reader, exercise, path):
    response = reader.get(path)
    assert response.status_code == 200
    text = response.text
    decoded = json.dumps(response.json(), ensure_ascii=False)  # the same, with non-ASCII unescaped
    assert "tl.where(mask," not in text and "tl.where(mask," not in decoded
    assert exercise.solution not in decoded
    for question in exercise.spec.questions:
        assert question.reference_answer not in decoded
    secrets = secrets_of(exercise)
    assert len(secrets) > 20, "the exercise should have plenty of grading material to keep secret"
    # The list shows every exercise: lesson 6's secrets that are another exercise's public words
    # (a concept pattern `welford` beside the exercise `welford_merge`) are no secret there.
    catalog = ExerciseCatalog(exercise.root.parent)
    others = "\n".join(public_text(catalog.get(i)) + "\n" + i for i in catalog.ids() if i != exercise.id)
    leaked = [s for s in secrets if s in decoded and s not in others]
    assert leaked == [], f"grading material in {path}: {leaked[:5]}"
    for field in ("reference_answer", "concepts", "patterns", "mutants", "solution", "seed", "targets", "misconceptions"):
        assert f'"{field}"' not in decoded


def test_unknown_exercise_is_404(reader):
    for exercise_id in ("lesson99_nope", "..", "lesson06_mean_var.bak", "a" * 1000):
        response = reader.get(f"/v1/exercises/{exercise_id}")
        assert response.status_code == 404, (exercise_id, response.text)
    traversal = reader.get("/v1/exercises/..%2F..%2Fexercises%2Flesson06_mean_var")
    assert traversal.status_code == 404
