"""Exercise folders: `exercise.yaml` (with `questions.yaml` and `course_text.yaml`) checked against the schema,
the template, the reference solution, the trusted `checks.py` and its `messages.yaml`, and the known answers.

No exercise id appears in the pipeline: everything specific to an exercise lives in its folder.
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import re
import textwrap
from functools import cached_property
from pathlib import Path

import numpy as np
import yaml

from service import syntax
from service.exercises import kit
from service.exercises.blanks import BLANK, blank_count, names_in_scope
from service.exercises.spec import _ID, CaseSpec, ExerciseSpec, Mutant, Question
from service.messages import Catalogue
from service.report import Diagnosis


class ExerciseNotFound(LookupError):
    pass


class Exercise:
    """A loaded exercise folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        data = yaml.safe_load((root / "exercise.yaml").read_text(encoding="utf-8"))
        if (root / "questions.yaml").is_file() and "questions" not in data:
            questions = yaml.safe_load((root / "questions.yaml").read_text(encoding="utf-8"))
            # Keys other than `questions` (x-patterns, ...) hold YAML anchors shared between questions.
            data["questions"] = questions["questions"] if isinstance(questions, dict) else questions
        if (root / "course_text.yaml").is_file() and "course_text" not in data:
            course = yaml.safe_load((root / "course_text.yaml").read_text(encoding="utf-8"))
            data["course_text"] = course.get("passages") if isinstance(course, dict) else course
        self.spec = ExerciseSpec.model_validate(data)
        if self.spec.id != root.name:
            raise ValueError(f"exercise id {self.spec.id!r} does not match its folder {root.name!r}")

    @property
    def id(self) -> str:
        return self.spec.id

    @cached_property
    def template(self) -> str:
        return (self.root / self.spec.template).read_text(encoding="utf-8")

    @cached_property
    def blank_scopes(self) -> tuple[frozenset[str], ...]:
        """The names a fill may use at each blank, in template order (`blanks.names_in_scope`):
        the template is parsed once per loaded exercise, not once per submission."""
        tree = syntax.parse(self.template)
        assert isinstance(tree, ast.Module)
        return tuple(frozenset(names_in_scope(tree, index)) for index in range(blank_count(tree)))

    @cached_property
    def solution(self) -> str:
        return (self.root / self.spec.solution).read_text(encoding="utf-8")

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of what decides a run's results besides the program (the memo key's exercise part,
        service/grading/memo.py): cases, tolerances, the call, the given check, the speed section where
        there is one, and the trusted checks.py with its messages.yaml, as this exercise loaded them."""
        spec = self.spec
        shape = spec.model_dump(mode="json", include={"entry_point", "args", "backward", "outputs", "given_check",
                                                      "cases", "fill_policy", "requires_gpu", "written_args"})
        if spec.speed is not None:  # only then: the keys of exercises without one stay as they were
            shape["speed"] = spec.speed.model_dump(mode="json")
        digest = hashlib.sha256(json.dumps(shape, sort_keys=True).encode())
        digest.update((self.root / spec.checks).read_bytes())
        if (messages := self.root / "messages.yaml").is_file():
            digest.update(messages.read_bytes())
        return digest.hexdigest()

    @cached_property
    def checks(self) -> kit.Checks:
        """The exercise's trusted module (reference and diagnoses): our code, never the student's."""
        path = self.root / self.spec.checks
        spec = importlib.util.spec_from_file_location(f"kernelgrade_exercise_{self.id}", path)
        if spec is None or spec.loader is None:
            raise ValueError(f"{path} cannot be loaded as a module")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if not isinstance(module, kit.Checks) or not callable(module.reference) or not callable(module.diagnose):
            raise ValueError(f"{path} must define reference() and diagnose() (service.exercises.kit.Checks)")
        return module

    @cached_property
    def messages(self) -> kit.Messages:
        """The diagnosis messages: the folder's `messages.yaml` over the kit's shared ones."""
        return kit.Messages(Catalogue.load(self.root / "messages.yaml"))

    def diagnose(self, evidence: list[kit.CaseEvidence], language: str | None = None) -> list[Diagnosis]:
        """The failed cases' diagnoses, in `language` (the exercise's own unless given)."""
        return kit.render(self.checks.diagnose(evidence), self.messages, language or self.spec.language)

    def make_inputs(self, case: CaseSpec, seed: int) -> dict[str, np.ndarray]:
        """The case's inputs by name, as the kernel sees them (no stride padding): the exercise's
        own `make_inputs(case, seed)` when checks.py has one, else rows drawn from `case.data` as `x`."""
        checks = self.checks
        if isinstance(checks, kit.MakesInputs):
            arrays = checks.make_inputs(case, seed)
        else:
            arrays = {"x": kit.draw_rows(case, seed)}
        needed = list(self.spec.args) + (list(self.spec.backward.grad_outputs.values()) if self.spec.backward else [])
        if missing := [name for name in needed if name not in arrays]:
            raise ValueError(f"{self.id}: make_inputs gave {sorted(arrays)} for case {case.id}, missing {missing}")
        return arrays

    @cached_property
    def mutants(self) -> list[Mutant]:
        path = self.root / "mutants.yaml"
        if not path.exists():
            return []
        return [Mutant.model_validate(m) for m in yaml.safe_load(path.read_text(encoding="utf-8"))]

    def mutant_code(self, mutant: Mutant) -> str:
        if mutant.file is not None:
            return (self.root / mutant.file).read_text(encoding="utf-8")
        if mutant.edits is not None:
            code = self.solution
            for edit in mutant.edits:
                if code.count(edit.old) != 1:
                    raise ValueError(f"mutant {mutant.id}: {edit.old!r} must occur exactly once in the solution")
                code = code.replace(edit.old, edit.new)
            return code
        parts = self.template.split(BLANK)
        if mutant.fills is not None:
            if len(parts) - 1 != len(mutant.fills):
                raise ValueError(f"mutant {mutant.id}: {len(mutant.fills)} fills for {len(parts) - 1} blanks")
            return parts[0] + "".join(_at_blank(fill, before) + rest
                                      for fill, before, rest in zip(mutant.fills, parts, parts[1:]))
        assert mutant.fill is not None  # the schema asks for exactly one source
        return parts[0] + _at_blank(mutant.fill, parts[0]) + BLANK.join(parts[1:])

    def question(self, question_id: str) -> Question:
        return next(q for q in self.spec.questions if q.id == question_id)


def _at_blank(fill: str, before: str) -> str:
    """A fill of several lines, written unindented (a block blank's statements), at the blank's
    indentation: the first line where the blank is, the others under it."""
    line = before.rsplit("\n", 1)[-1]
    body = fill.strip("\n")
    if "\n" not in body or line.strip():
        return fill
    return textwrap.indent(body, line)[len(line):]


class ExerciseCatalog:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, Exercise] = {}

    def ids(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir() if (p / "exercise.yaml").is_file())

    def get(self, exercise_id: str) -> Exercise:
        valid = len(exercise_id) <= 100 and re.fullmatch(_ID, exercise_id) is not None
        if not valid or not (self.root / exercise_id / "exercise.yaml").is_file():
            known = ", ".join(self.ids()) or "none"
            raise ExerciseNotFound(f"unknown exercise {exercise_id!r} (known: {known})")
        if exercise_id not in self._cache:
            self._cache[exercise_id] = Exercise(self.root / exercise_id)
        return self._cache[exercise_id]
