"""Exercises are folders: the schema (`spec`), loading a folder (`loader`), and the kit that an
exercise's trusted `checks.py` is written against (`kit`). Grading imports this package, never the reverse.
"""
from __future__ import annotations

from service.exercises import kit
from service.exercises.loader import Exercise, ExerciseCatalog, ExerciseNotFound
from service.exercises.spec import (
    MIN_DRAW_CANDIDATES,
    BaselineSpec,
    CaseKind,
    CaseSpec,
    Concept,
    CoursePassage,
    DataSpec,
    ExerciseSpec,
    FillClaim,
    GivenCheck,
    GradSpec,
    Layout,
    Misconception,
    Mutant,
    MutantExpectation,
    NamedIdea,
    PassRuleSpec,
    Question,
    Replacement,
    ReportCaseKind,
    RubricItem,
    Scalar,
    ShapeDraw,
    ShapeFamily,
    SpeedSpec,
    Text,
    Tolerance,
    bytes_moved,
    resolve_case,
    shape_candidates,
    shape_seed,
    with_shape,
)

__all__ = [
    "MIN_DRAW_CANDIDATES", "BaselineSpec", "CaseKind", "CaseSpec", "Concept", "CoursePassage", "DataSpec", "Exercise",
    "ExerciseCatalog", "ExerciseNotFound", "ExerciseSpec", "FillClaim", "GivenCheck", "GradSpec", "Layout",
    "Misconception",
    "Mutant", "MutantExpectation", "NamedIdea", "PassRuleSpec", "Question", "Replacement", "ReportCaseKind",
    "RubricItem", "Scalar", "ShapeDraw", "ShapeFamily", "SpeedSpec", "Text", "Tolerance", "bytes_moved", "kit",
    "resolve_case", "shape_candidates", "shape_seed", "with_shape",
]
