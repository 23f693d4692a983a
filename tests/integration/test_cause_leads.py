"""The cause leads (issue 15): where one simulated mistake explains every failed case of
puzzle_outer_add (named across the cases), the report and the feedback lead with it, not with what
it did on one case (a write past z). Real wrong kernels through the real bwrap sandbox on the
Triton interpreter (or the GPU).
"""
from __future__ import annotations

import pytest

from service.hints import hints_of, ladders_for
from service.messages import render
from service.report import Report
from service.submission import Submission
from tests.support.backends import warm_grader

pytestmark = [pytest.mark.sandbox]

SEED = 20261215
OUTER_ADD = "puzzle_outer_add"
STORE = "tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :]"


@pytest.fixture(scope="module")
def grader():
    with warm_grader("bwrap") as grader:
        yield grader


def _edit(grader, exercise_id: str, old: str, new: str) -> str:
    code = grader.catalog.get(exercise_id).solution
    assert code.count(old) == 1, old
    return code.replace(old, new)


def _grade(grader, exercise_id: str, code: str, language: str) -> Report:
    report = grader.grade(Submission(exercise=exercise_id, code=code, language=language), secret_seed=SEED)
    assert report.status == "graded", report.message
    assert report.program.ran, report.program.not_run_reason
    return report


# (the edit, the cause, the finding of one case it also causes; racy: rows overlap, so on a GPU
# which program's store lands last varies: checks.py's simulation accepts any store to a cell).
# row_stride_n1 writes up to 1487 elements past buf (2576) on regular.tall: with 64-element guards
# those writes landed in the interpreter's heap and aborted the sandbox in 6 of 20 gradings (no
# evidence, no store_address_out_of_bounds); the guard is now as wide as the data (sandbox/harness.py).
KERNELS = {
    # (every value it writes past z is a valid x[i] + y[j]: the addresses are wrong, not the mask)
    "row_stride_b0": ((STORE, STORE.replace("* N0", "* B0")), "row_stride_b0", "valid_lanes_out_of_bounds", True),
    "row_stride_n1": ((STORE, STORE.replace("* N0", "* N1")), "row_stride_n1", "store_address_out_of_bounds", True),
    "mask_y_bound_n0": (("mask_y = offs_y < N1", "mask_y = offs_y < N0"), "mask_bound_swapped",
                        "store_out_of_bounds", False),
}


@pytest.mark.parametrize("language", ["zh", "en"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_the_mistake_that_explains_every_case_leads(grader, name: str, language: str):
    (old, new), cause, symptom, _racy = KERNELS[name]
    report = _grade(grader, OUTER_ADD, _edit(grader, OUTER_ADD, old, new), language)
    ids = [d.id for d in report.diagnoses]
    # the kernel made both: the cause on the cases with outputs, the write past z where one raised
    assert ids[0] == cause and symptom in ids, ids
    by_id = {d.id: d for d in report.diagnoses}
    cause_cases = {e["case"] for e in by_id[cause].evidence["cases"]}
    assert cause_cases and not cause_cases & {e["case"] for e in by_id[symptom].evidence["cases"]}
    failed = {c.id for c in report.cases if not c.passed and c.kind != "given"}
    assert cause_cases <= failed
    # every item that names it names it first, and its feedback says it before anything else
    named = [i for i in report.items if cause in i.evidence.get("diagnoses", [])]
    assert named, [(i.id, i.evidence.get("diagnoses")) for i in report.items]
    for item in named:
        assert item.evidence["diagnoses"][0] == cause, (item.id, item.evidence["diagnoses"])
        lines = item.feedback.splitlines()
        heading = lines.index(render("rubric.diagnoses_heading", language))
        assert lines[heading + 1] == f"- {by_id[cause].message}", item.feedback
    # the page's lead diagnosis is report.diagnoses[0]; the first hint ladder offered is the cause's
    hints = hints_of(grader.catalog.get(OUTER_ADD).root)
    assert hints is not None and ladders_for(hints, ids)[0] == cause


def test_without_a_cause_the_order_is_as_found(grader):
    # a store without its row mask: the write past z is the finding itself, no simulation names a cause
    report = _grade(grader, OUTER_ADD, _edit(grader, OUTER_ADD, "z, mask=mask_y[:, None] & mask_x[None, :])",
                                             "z, mask=mask_x[None, :])"), "en")
    assert [d.id for d in report.diagnoses] == ["store_out_of_bounds"]
