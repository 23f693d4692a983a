"""Shapes drawn from the secret seed (issue 16.2) and diagnoses only where their evidence holds
(issue 15.5), with real kernels through the real bwrap sandbox on the Triton interpreter (or the GPU).

- A kernel fitted to the widths an earlier report showed, and the expression fill
  `(cols < N) | (N > 4096)`, earned full marks while shapes were fixed; now they fail.
- Replaying with the secret seed draws the same shapes (and the same verdicts).
- A NameError on the ragged-rows probe is no `store_out_of_bounds`; a store without its row mask is.
- A kernel that handles one row per program and ignores its block of rows is diagnosed as such.
- A kernel that overwrites its input is diagnosed on two exercises (the check is the pipeline's).
- A kernel built on block pointers is not the student's fail where this Triton has removed them.
"""
from __future__ import annotations

import pytest

from service.exercises import ExerciseSpec
from sandbox.contract import DeviceMode
from service.exercises import shape_candidates
from service.grading.fills import block_pointers_removed
from service.grading.validate import code_points
from service.report import Report
from service.submission import Submission
from tests.support.backends import warm_grader

pytestmark = [pytest.mark.sandbox]

SEED = 20261201
# The widths every lesson-6 report listed before shapes were drawn; correct exactly there.
FITTED = "(cols < N) | ((N != 17) & (N != 20) & (N != 33) & (N != 257) & (N != 2049))"
WIDE_ONLY = "(cols < N) | (N > 4096)"


@pytest.fixture(scope="module")
def grader():
    with warm_grader("bwrap") as grader:
        yield grader


def _fill(grader, exercise_id: str, fill: str) -> str:
    return grader.catalog.get(exercise_id).template.replace("______", fill, 1)


def _edit(grader, exercise_id: str, *replacements: tuple[str, str]) -> str:
    code = grader.catalog.get(exercise_id).solution
    for old, new in replacements:
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    return code


def _grade(grader, exercise_id: str, code: str, seed: int = SEED) -> Report:
    report = grader.grade(Submission(exercise=exercise_id, code=code), secret_seed=seed)
    assert report.status == "graded", report.message
    assert report.program.ran, report.program.not_run_reason
    return report


def _drawn(spec: ExerciseSpec) -> set[str]:
    return {c.id for c in spec.cases if c.draw is not None}


def test_every_exercise_declares_a_shape_family(grader):
    for exercise_id in grader.catalog.ids():
        spec = grader.catalog.get(exercise_id).spec
        assert _drawn(spec), f"{exercise_id} draws no shape from the secret seed"
        for case in spec.cases:
            if case.draw is None:
                continue
            widths = {next(c.cols for c in spec.cases_for(seed) if c.id == case.id) for seed in range(40)}
            allowed = set(shape_candidates(case.draw, spec.fixed_widths))
            assert widths <= allowed, (exercise_id, case.id)
            assert not widths & spec.fixed_widths, (exercise_id, case.id)
            assert len(widths) >= 5, f"{exercise_id} {case.id}: 40 seeds drew only {sorted(widths)}"
            assert max(widths) <= case.draw.cols[1]  # the declared bound holds (cost)


def test_shape_fitted_kernel_fails_and_replay_is_exact(grader):
    spec = grader.catalog.get("lesson06_mean_var").spec
    full = sum(i.points for i in spec.rubric if i.source == "cases")
    report = _grade(grader, "lesson06_mean_var", _fill(grader, "lesson06_mean_var", FITTED))
    cases = {c.id: c for c in report.cases}
    # Right on every width it was fitted to, wrong on the widths drawn for this submission.
    assert cases["given"].passed and cases["boundary.n17"].passed and cases["boundary.n2049"].passed
    assert not any(cases[case_id].passed for case_id in _drawn(spec))
    assert code_points(report, grader.catalog.get("lesson06_mean_var")) < full
    assert "missing_remask" in {d.id for d in report.diagnoses}
    drawn = {c.id: c for c in spec.cases_for(SEED)}
    for case_id in _drawn(spec):
        assert cases[case_id].shape == [drawn[case_id].rows, drawn[case_id].cols]
        assert str(drawn[case_id].cols) in cases[case_id].description
        assert cases[case_id].drawn == drawn[case_id].draw.family
    assert cases["boundary.n17"].drawn is None

    replay = _grade(grader, "lesson06_mean_var", _fill(grader, "lesson06_mean_var", FITTED), seed=report.seeds.secret)
    assert [(c.id, c.shape, c.seed, c.passed, c.max_abs_err) for c in replay.cases] == \
        [(c.id, c.shape, c.seed, c.passed, c.max_abs_err) for c in report.cases]
    assert replay.seeds == report.seeds


def test_fill_keyed_to_the_widest_graded_width_fails(grader):
    report = _grade(grader, "lesson06_mean_var", _fill(grader, "lesson06_mean_var", WIDE_ONLY))
    cases = {c.id: c for c in report.cases}
    assert cases["given"].passed and cases["boundary.n2049"].passed
    wide = cases["probe.wide"]
    assert not wide.passed and wide.shape[1] > 4096 and wide.error_ratio >= 100
    found = {d.id: d for d in report.diagnoses}
    assert "probe.wide" in {c["case"] for c in found["missing_remask"].evidence["cases"]}
    assert any(v.rule == "coincidental_pass" for v in report.vetoes)


def test_name_error_on_the_ragged_rows_probe_is_no_store_out_of_bounds(grader):
    code = _edit(grader, "puzzle_long_sum", ("    tl.store(z_ptr + rows, acc, mask=row_mask)",
                                             "    tl.store(z_ptr + rows, acc + not_defined_anywhere, mask=row_mask)"))
    report = _grade(grader, "puzzle_long_sum", code)
    tail = next(c for c in report.cases if c.id == "probe.rows_tail")
    assert not tail.passed and "NameError" in tail.error and tail.out_of_bounds == []
    assert "store_out_of_bounds" not in {d.id for d in report.diagnoses}


def test_store_without_row_mask_is_out_of_bounds_from_the_bytes(grader):
    code = _edit(grader, "puzzle_long_sum", ("tl.store(z_ptr + rows, acc, mask=row_mask)", "tl.store(z_ptr + rows, acc)"))
    report = _grade(grader, "puzzle_long_sum", code)
    found = {d.id: d for d in report.diagnoses}
    evidence = found["store_out_of_bounds"].evidence["cases"]
    assert {e["case"] for e in evidence} == {"probe.rows_tail"}
    assert evidence[0]["source"] == "sentinel" and evidence[0]["changed"] == 3  # N0 = 9, B0 = 4: 3 rows past z
    assert "past the end of z" in found["store_out_of_bounds"].evidence["messages"]["en"]


def test_one_row_per_program_is_diagnosed(grader):
    code = _edit(grader, "puzzle_long_sum", ("rows = pid * B0 + tl.arange(0, B0)", "rows = pid + tl.arange(0, B0) * 0"))
    report = _grade(grader, "puzzle_long_sum", code)
    cases = {c.id: c for c in report.cases}
    assert cases["given"].passed and cases["regular.b0_1"].passed and not cases["regular.aligned"].passed
    found = {d.id: d for d in report.diagnoses}
    diagnosis = found["one_row_per_program"]
    aligned = next(e for e in diagnosis.evidence["cases"] if e["case"] == "regular.aligned")
    assert aligned["form"] == "row = pid" and aligned["rows_written"] == 2 and aligned["rows_unwritten"] == 6
    assert "B0" in diagnosis.message and "one row" in diagnosis.evidence["messages"]["en"]


@pytest.mark.parametrize("exercise_id, replacements", [
    ("puzzle_long_sum", [("    tl.store(z_ptr + rows, acc, mask=row_mask)",
                          "    tl.store(z_ptr + rows, acc, mask=row_mask)\n    tl.store(x_ptr + rows * T, acc, mask=row_mask)")]),
    ("puzzle_long_softmax", [("        tl.store(z_ptr + rows[:, None] * T + cols2[None, :], z, mask=mask2)",
                              "        tl.store(z_ptr + rows[:, None] * T + cols2[None, :], z, mask=mask2)\n"
                              "        tl.store(x_ptr + rows[:, None] * T + cols2[None, :], z, mask=mask2)")]),
])
def test_input_overwritten_is_diagnosed(grader, exercise_id, replacements):
    report = _grade(grader, exercise_id, _edit(grader, exercise_id, *replacements))
    assert all(c.passed for c in report.cases if c.kind != "given")  # the outputs are right: only the input tells
    found = {d.id: d for d in report.diagnoses}
    diagnosis = found["input_overwritten"]
    first = diagnosis.evidence["cases"][0]
    assert first["input"] == "x" and first["changed"] > 0 and first["before"] != first["after"]
    assert "输入" in diagnosis.evidence["messages"]["zh"] and "overwrote its input" in diagnosis.evidence["messages"]["en"]


def test_correct_kernel_has_no_input_overwritten(grader):
    report = _grade(grader, "puzzle_long_sum", grader.catalog.get("puzzle_long_sum").solution)
    assert report.diagnoses == [] and all(c.passed for c in report.cases)


BLOCK_POINTER_BODY = """
    pid = tl.program_id(0)
    x_bp = tl.make_block_ptr(x_ptr, shape=(N0, T), strides=(T, 1), offsets=(pid * B0, 0),
                             block_shape=(B0, B1), order=(1, 0))
    acc = tl.zeros((B0,), dtype=tl.float32)
    for _ in range(0, T, B1):
        acc += tl.sum(tl.load(x_bp, boundary_check=(0, 1), padding_option="zero"), axis=1)
        x_bp = tl.advance(x_bp, (0, B1))
    rows = pid * B0 + tl.arange(0, B0)
    tl.store(z_ptr + rows, acc, mask=rows < N0)
"""


def test_a_block_pointer_kernel_is_ours_to_refuse_where_triton_removed_them(grader):
    """Triton 3.9 (the interpreter here) removed block pointers; the GPU hosts' 3.6 runs this kernel
    right. It was graded 0 with "on a real GPU it fails to compile the same way"; now the interpreter
    says it cannot run it here, at no cost to the student, and a GPU grades it."""
    template = grader.catalog.get("puzzle_long_sum").template
    code = template.replace("    ______\n", BLOCK_POINTER_BODY.lstrip("\n"), 1)
    report = grader.grade(Submission(exercise="puzzle_long_sum", code=code), secret_seed=SEED)
    if grader.mode is DeviceMode.interpreter and block_pointers_removed():
        assert report.status == "not_gradable" and report.program is None
        assert "tl.make_block_ptr" in report.message and "不算一次尝试" in report.message
        assert "does not count as an attempt" in report.translations["en"].message
    else:
        assert report.status == "graded" and all(c.passed for c in report.cases), report.message
