"""The written-answer calibration set (tests/calibration/answers/*.yaml): loading, the held-out rule,
grading one answer as the pipeline does, and the figures. `python -m tests.calibration.calibration`
prints the in-band rate per exercise, tuning part and held-out part apart, and every miss."""
from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import sys
import textwrap
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from service.config import REPO_ROOT
from service.exercises import Exercise, ExerciseCatalog
from service.grading.assemble import assemble
from service.grading.extract import extract
from service.grading.freetext import TextScore, score_answer
from service.grading.rubric import EXPLANATION_QUESTION, expression_fills
from service.grading.stated_fill import fill_scope

ANSWERS_DIR = Path(__file__).parent / "answers"
CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")


def held_out(answer_id: str) -> bool:
    """The README's rule, which nobody tunes: the first byte of sha256(id) below 86."""
    return hashlib.sha256(answer_id.encode("utf-8")).digest()[0] < 86


@dataclass(frozen=True)
class Entry:
    exercise: str
    data: dict

    @property
    def id(self) -> str:
        return self.data["id"]

    @property
    def held_out(self) -> bool:
        return held_out(self.id)

    @property
    def band(self) -> tuple[float, float]:
        low, high = self.data["band"]
        return float(low), float(high)


def exercise_of(path: Path) -> str:
    """lesson06_mean_var_older.yaml holds lesson 6's older answers."""
    name = path.stem
    return name.removesuffix("_older")


def load() -> list[Entry]:
    entries = []
    for path in sorted(ANSWERS_DIR.glob("*.yaml")):
        entries += [Entry(exercise_of(path), e) for e in yaml.safe_load(path.read_text(encoding="utf-8"))]
    return entries


def _points(exercise: Exercise, question: str) -> float:
    return next(item.points for item in exercise.spec.rubric if item.source == "text" and item.question == question)


def canonical(fill: str) -> str:
    """As the pipeline sees a fill: its canonical unparse (an expression, or a block's statements)."""
    try:
        return ast.unparse(ast.parse(fill.strip(), mode="eval"))
    except SyntaxError:
        return "\n".join(ast.unparse(stmt) for stmt in ast.parse(textwrap.dedent(fill)).body)


# The answer files' `fill` lists in the order their header gives, where it is not the template's blank
# order: {exercise: for each template blank, its place in the entry's list}. fused_mean_var_atomic's
# header says [atomic_add operand, pre-launch statements, host variance]; its template's blanks are the
# operand, the host variance, then the pre-launch statements.
FILL_ORDER: dict[str, tuple[int, ...]] = {"fused_mean_var_atomic": (0, 2, 1)}


def submitted_fills(entry: Entry) -> list[str] | None:
    """The entry's fills as the pipeline passes them (extraction.fill_sources): canonical, in the
    template's blank order."""
    if not entry.data.get("fill"):
        return None
    fills = [canonical(f) for f in entry.data["fill"]]
    return [fills[i] for i in _blank_order(entry, fills)]


def _blank_order(entry: Entry, fills: list[str]) -> list[int]:
    """For each template blank, the place of its fill in the entry's list (FILL_ORDER)."""
    order = FILL_ORDER.get(entry.exercise)
    if order is not None and len(order) == len(fills):
        reordered = [fills[i] for i in order]
        # an entry written in the template's order already (a statement where the header puts the host
        # variance, an expression where it puts the statements) keeps its order
        if _fits_blanks(entry.exercise, reordered) or not _fits_blanks(entry.exercise, fills):
            return list(order)
    return list(range(len(fills)))


def spilled_blanks(entry: Entry) -> tuple[int, ...]:
    """The blanks whose fill, as the entry wrote it, spills past the blank (`mask, 0.0` in
    `tl.where(______, …)`): the extraction's own `spills`, which rubric.score_items passes as `spilled`."""
    if not entry.data.get("fill"):
        return ()
    raw = [textwrap.dedent(f).strip() for f in entry.data["fill"]]
    order = _blank_order(entry, [canonical(f) for f in entry.data["fill"]])
    template = CATALOG.get(entry.exercise).template
    try:
        program = assemble(template, [raw[i] for i in order])
    except (ValueError, SyntaxError):
        return ()
    return tuple(extract(template, program.source).spills)


def _fits_blanks(exercise_id: str, fills: list[str]) -> bool:
    """Whether each expression blank of the template gets a fill that parses as an expression."""
    scope = fill_scope(CATALOG.get(exercise_id).template)
    if scope is None or len(scope.expression) != len(fills):
        return True
    for expression, fill in zip(scope.expression, fills):
        try:
            if expression:
                ast.parse(fill, mode="eval")
        except SyntaxError:
            return False
    return True


@functools.lru_cache(maxsize=None)
def correct_fills(exercise_id: str) -> frozenset[tuple[str | None, ...]]:
    """The fills the exercise's data knows to be correct, canonical in blank order: the reference
    solution's, and each `correct.*` mutant's that the grader passes outright (mutants.yaml: no failing
    case, no diagnosis, no veto, not refused). An answer that submitted one of them is graded as the
    pipeline grades a submission whose cases all pass: with the reference's expression fills."""
    exercise = CATALOG.get(exercise_id)
    known = {tuple(extract(exercise.template, exercise.solution).fill_sources)}
    for mutant in exercise.mutants:
        expect = mutant.expect
        if not mutant.id.startswith("correct.") or expect.failing_cases or expect.diagnoses or expect.vetoes \
                or expect.vetoes_may or expect.rejected:
            continue
        extraction = extract(exercise.template, exercise.mutant_code(mutant))
        if extraction.error is None and not extraction.edits:
            known.add(tuple(extraction.fill_sources))
    return frozenset(known)


def reference_fills(entry: Entry, fills: list[str] | None) -> tuple[str | None, ...] | None:
    """What rubric.score_items passes as `reference_fills`: the reference solution's expression fills
    where the submitted fills behave as them on every case (here: they are fills the exercise's data
    knows to be correct, correct_fills), else None. A right fill the data does not list (another
    spelling, a puzzle body with other names) is not known here: None, as for a wrong one."""
    if fills is None or tuple(fills) not in correct_fills(entry.exercise):
        return None
    exercise = CATALOG.get(entry.exercise)
    return expression_fills(exercise.template, exercise.solution)


def grade(entry: Entry) -> TextScore:
    exercise = CATALOG.get(entry.exercise)
    question = entry.data["question"]
    fills = submitted_fills(entry)
    # as rubric.score_items does: the explanation is read against the template's scope (the stated fill)
    scope = fill_scope(exercise.template) if question == EXPLANATION_QUESTION else None
    return score_answer(exercise.question(question), entry.data.get("answer") or "", _points(exercise, question),
                        fills=fills, reference_fills=reference_fills(entry, fills),
                        course_text=exercise.spec.course_text, scope=scope, spilled=spilled_blanks(entry))


def in_band(entry: Entry, result: TextScore) -> bool:
    low, high = entry.band
    return low <= result.points <= high


def must_flag(entry: Entry) -> bool:
    """Misconception and keyword-stuffed answers: the grader must flag every one."""
    return entry.data["kind"] in ("misconception", "stuffed")


def figures(entries: list[Entry]) -> dict[str, dict[str, tuple[int, int]]]:
    """{exercise: {"tuning": (in band, total), "held_out": (...), "<part>_flagged": (misconception and
    stuffed answers flagged, their number), "<part>_readers": (answers every reader flagged that are
    flagged, their number), "<part>_unflagged": (answers no reader flagged left unflagged, their
    number)}}, plus "all"."""
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for entry in entries:
        result = grade(entry)
        part = "held_out" if entry.held_out else "tuning"
        for key in (entry.exercise, "all"):
            row = table[key][part]
            row[0] += in_band(entry, result)
            row[1] += 1
            if must_flag(entry):
                flagged = table[key][part + "_flagged"]
                flagged[0] += bool(result.flags)
                flagged[1] += 1
            if entry.data.get("flag") is True:
                readers = table[key][part + "_readers"]
                readers[0] += bool(result.flags)
                readers[1] += 1
            if entry.data.get("flag") is False:
                unflagged = table[key][part + "_unflagged"]
                unflagged[0] += not result.flags
                unflagged[1] += 1
    return {k: {p: (v[0], v[1]) for p, v in parts.items()} for k, parts in table.items()}


def by_style(entries: list[Entry], grader: Callable[[Entry], TextScore] | None = None) -> dict[str, dict[str, tuple[int, int]]]:
    """{style or kind: {"tuning"/"held_out": (in band, total), "<part>_flagged": (...)}}: aggregated
    figures only, so the held-out part can be reported per style without reading its answers."""
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for entry in entries:
        result = (grader or grade)(entry)
        part = "held_out" if entry.held_out else "tuning"
        for key in (f"style:{entry.data['style']}", f"kind:{entry.data['kind']}", f"lang:{entry.data['lang']}"):
            row = table[key][part]
            row[0] += in_band(entry, result)
            row[1] += 1
            if must_flag(entry):
                flagged = table[key][part + "_flagged"]
                flagged[0] += bool(result.flags)
                flagged[1] += 1
    return {k: {p: (v[0], v[1]) for p, v in parts.items()} for k, parts in table.items()}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.calibration.calibration", description=__doc__)
    parser.add_argument("--tuning", action="store_true",
                        help="the tuning part only: no held-out figure is printed, even summed (for whoever tunes)")
    parser.add_argument("--misses", action="store_true", help="also list each miss (with --tuning: the tuning part's)")
    parser.add_argument("--styles", action="store_true",
                        help="also the rates per style, kind and language (both parts)")
    args = parser.parse_args(argv)  # an unknown option stops here: it must not fall through to the full table
    entries = load()
    if args.styles and not args.tuning:  # aggregated per style, kind and language: no answer text is shown
        for key, row in sorted(by_style(entries).items()):
            print(f"{key:24} {_rate(row.get('tuning')):>16} {_rate(row.get('held_out')):>12} "
                  f"{_rate(row.get('tuning_flagged')):>30} {_rate(row.get('held_out_flagged')):>10}")
    show, only_tuning = args.misses, args.tuning
    for entry in entries:
        if not show or (only_tuning and entry.held_out):
            continue
        result = grade(entry)
        bad_band = not in_band(entry, result)
        bad_flag = (must_flag(entry) and not result.flags) or (entry.data.get("flag") is False and result.flags)
        if bad_band or bad_flag:
            print(f"{'H' if entry.held_out else 'T'} {entry.id}: {result.points} band {list(entry.band)} "
                  f"flags {result.flags} (want flag {entry.data.get('flag')}, kind {entry.data['kind']})")
            print("    answer:", (entry.data.get("answer") or "").replace("\n", " | ")[:400])
            print("    found:", [f["concept"] for f in result.found], "links:", [(li["from"], li["to"]) for li in result.links],
                  "mis:", [m["misconception"] for m in result.misconceptions])
            print("    why:", entry.data["reading_1"].get("why", "")[:300])
    table = figures(entries)
    if only_tuning:  # the tuning part's figures only: who tunes never sees the held-out part's, even summed
        print(f"{'exercise':24} {'in band: tuning':>16} {'misc./stuffed flagged: tuning':>30} "
              f"{'unflagged left unflagged: tuning':>33}")
        for key in sorted(table, key=lambda k: (k == "all", k)):
            row = table[key]
            print(f"{key:24} {_rate(row.get('tuning')):>16} {_rate(row.get('tuning_flagged')):>30} "
                  f"{_rate(row.get('tuning_unflagged')):>33}")
        return
    print(f"{'exercise':24} {'in band: tuning':>16} {'held-out':>12} {'misc./stuffed flagged: tuning':>30} "
          f"{'held-out':>10} {'reader-flagged flagged: held-out':>33} {'unflagged left unflagged: tuning':>33} "
          f"{'held-out':>10}")
    for key in sorted(table, key=lambda k: (k == "all", k)):
        row = table[key]
        print(f"{key:24} {_rate(row.get('tuning')):>16} {_rate(row.get('held_out')):>12} "
              f"{_rate(row.get('tuning_flagged')):>30} {_rate(row.get('held_out_flagged')):>10} "
              f"{_rate(row.get('held_out_readers')):>33} {_rate(row.get('tuning_unflagged')):>33} "
              f"{_rate(row.get('held_out_unflagged')):>10}")


def _rate(pair: tuple[int, int] | None) -> str:
    return f"{pair[0]}/{pair[1]} {pair[0] / pair[1]:.0%}" if pair and pair[1] else "-"


if __name__ == "__main__":
    main(sys.argv[1:])
