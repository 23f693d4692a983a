"""The report contract, `kernelgrade.report/v1`: one model for the CLI, the API, the database
and the pages. Fields named in DESIGN.md never change meaning; fields may be added."""
from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA: Final = "kernelgrade.report/v1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExerciseRef(_Model):
    id: str
    version: int


class Requirement(_Model):
    """One requirement of the exercise's pass rule (DESIGN.md): met or not, and why."""

    id: str
    met: bool
    evidence: dict[str, Any] = {}
    title: str = Field("", description="the requirement in the report's language")
    message: str = Field("", description="why it is met or not, in the report's language")


class Score(_Model):
    total: float
    max: float
    pass_threshold: float
    passed: bool
    provisional: bool = Field(description="some points wait for a TA (needs_review items or suspected vetoes)")
    requirements: list[Requirement] = Field([], description="the exercise's pass rule, one entry per requirement")


class Item(_Model):
    id: str
    title: str
    points: float
    max_points: float
    status: Literal["pass", "fail", "partial", "needs_review"]
    feedback: str
    evidence: dict[str, Any] = {}


def points_total(items: list[Item]) -> float:
    """The items' points added up as a person would: a TA's tenths (1.7 + 1.1 + 1.9 + 1.2 + 0.3 + 1.8)
    make 8, not the 7.999999999999999 of float addition that would miss a pass line of 8."""
    return round(math.fsum(i.points for i in items), 6)


class Mismatch(_Model):
    output: str
    index: list[int]
    observed: float | None
    expected: float
    allowed_error: float


class OutOfBounds(_Model):
    """A guard region next to a buffer of the case that the kernel changed: a write out of bounds.
    The harness puts every input, and every tensor the entry point allocates with a torch factory,
    inside a larger buffer with guard elements before and after its data (docs/grading.md)."""

    buffer: str = Field(description="the input's name, or 'a tensor allocated in <entry point>'")
    kind: Literal["input", "allocated"]
    output: str | None = Field(None, description="the output this buffer was returned as, if it was")
    side: Literal["before", "after"]
    changed: int = Field(description="guard elements changed on that side")
    distance: int = Field(description="of the changed element nearest the data: 0 = adjacent to it")
    index: int = Field(description="that element's index counted from the first element of the data (-1: just before "
                                   "it)")
    guard: int = Field(description="guard elements checked on that side")
    value: str = Field("", description="the value written there")
    shape: list[int] = []
    dtype: str = ""


class CaseReport(_Model):
    id: str
    kind: Literal["regular", "boundary", "probe", "given"]
    description: str
    shape: list[int]
    stride: int | None = None
    layout: dict[str, dict[str, Any]] = Field({}, description="inputs given as strided views: their shape, strides "
                                                              "and offset in elements (the case's layout)")
    seed: int
    passed: bool
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    error_ratio: float | None = Field(None, description="largest error / allowed error (<= 1 passes)")
    tolerance: dict[str, dict[str, float]] = {}
    first_mismatch: Mismatch | None = None
    error: str | None = None
    targets: str | None = None
    elapsed_s: float | None = None
    out_of_bounds: list[OutOfBounds] = Field([], description="guards the kernel changed (the case is then an error)")
    drawn: str | None = Field(None, description="the shape family this case's width was drawn from with the secret "
                                                "seed (ragged, prime, past_pow2, wide); None: a fixed shape")


class Diagnosis(_Model):
    id: str
    message: str
    evidence: dict[str, Any] = {}

    def said_in(self, language: str) -> Diagnosis | None:
        """This diagnosis in `language`, from the messages every language of it was rendered into
        (evidence `messages`: the kit and the inputs check); None without them."""
        said = self.evidence.get("messages")
        text = said.get(language) if isinstance(said, dict) else None
        return self.model_copy(update={"message": text}) if isinstance(text, str) else None


class Veto(_Model):
    rule: Literal["modified_outside_blank", "boundary_check_removed", "unverified_claim", "coincidental_pass"]
    status: Literal["suspected", "confirmed", "dismissed"]
    evidence: dict[str, Any] = {}
    needs_review: bool


class Environment(_Model):
    backend: Literal["gpu", "interpreter"]
    sandbox: str
    device: str = ""
    torch: str = ""
    triton: str = ""
    python: str = ""
    # What capped the sandbox's processes: "pids cgroup" (bwrap where the service can write a pids
    # cgroup), "RLIMIT_NPROC" (bwrap elsewhere; does not bind when the worker runs as root),
    # "docker pids_limit", "none" (local); "" in reports from before this field.
    process_limit: str = ""
    # What capped the sandbox's memory: "memory cgroup 8 GiB, no swap" (bwrap where the service
    # can write a memory cgroup), "RLIMIT_AS 16 GiB" (interpreter elsewhere), "none (...)" (GPU
    # without a memory cgroup); "" where nothing ran, and in reports from before this field.
    memory_limit: str = ""
    # How the (last) sandbox of the grading started: "fresh" (a bwrap or docker sandbox of its
    # own) or "forked" (a child of the fork-server template, KERNELGRADE_SANDBOX_START=fork:
    # SECURITY.md); "" where nothing ran, and in reports from before this field.
    sandbox_start: str = ""


class EditReport(_Model):
    kind: Literal["changed", "inserted", "deleted"]
    rule: str
    reason: str
    template_line: int | None
    submission_line: int | None
    template_text: str
    submission_text: str
    hint: str | None = None


class ProgramReport(_Model):
    digest: str | None = Field(None, description="sha256 of the canonical program that ran")
    fills: list[str | None] = []
    ran: bool
    not_run_reason: str | None = None
    fill_policy: Literal["expression", "any"] = Field(
        "expression", description="any: whitelisting was off; the fill (a whole body) ran as written, in the sandbox")
    edits: list[EditReport] = []
    reused: bool = Field(False,
                         description="the code results (cases, given check, diagnoses, seeds) were reused from an "
                                     "earlier run of this byte-identical program (verdict memo); written "
                                     "answers are always scored afresh")
    memo_key: str | None = Field(None,
                                 description="the verdict memo entry these code results were stored under or read from")


class GivenCheckReport(_Model):
    status: Literal["passed", "failed", "crashed", "timeout", "skipped", "not_run"]
    output: str
    claimed_output: str = ""


class Seeds(_Model):
    secret: int
    given: int
    cases: dict[str, int]


class BenchTiming(_Model):
    """One timed function: milliseconds over `reps` repetitions (CUDA events, L2 flushed before each)."""

    median_ms: float
    p20_ms: float
    p80_ms: float
    min_ms: float
    max_ms: float
    reps: int


class Performance(_Model):
    """GPU only and informational: the kernel's speed on the exercise's large input, next to the
    lesson's claim about its memory traffic. It never changes points. Present for every graded
    report of an exercise with a `speed:` section; `status` says whether figures are in it."""

    status: Literal["measured", "not_measured", "failed", "pending"] = Field(
        description="measured: figures below; not_measured: on the interpreter, the kernel did not pass, the run "
                    "never got there, no figures came back within the phase's budget, or the timing was interrupted "
                    "(reason); failed: the kernel "
                    "failed or crashed on the large input (reason); "
                    "pending: the grade is final and the measurement follows as a report revision (reason `speed`)")
    reason: str | None = None
    informational: Literal[True] = Field(True, description="never graded")
    shape: list[int] = Field(description="the timed shape [M, N] the formula is evaluated at")
    timed_shape: list[int] = Field([], description="the first argument's shape as the sandbox timed it")
    ideal_bytes: int = Field(description="bytes the ideal kernel moves to and from HBM at this shape")
    bytes_formula: str
    bytes_note: str
    device: str = ""
    kernel: BenchTiming | None = None
    achieved_gbps: float | None = Field(None, description="ideal_bytes / kernel median, GB/s (1e9 B/s)")
    peak_gbps: float | None = Field(None, description="the device's HBM ceiling, GB/s")
    peak_source: str | None = None
    percent_of_peak: float | None = None
    copy_timing: BenchTiming | None = Field(None, description="torch copy_ of the first argument (read + write): "
                                                              "an achievable ceiling")
    copy_gbps: float | None = None
    percent_of_copy: float | None = None
    baseline_label: str
    baseline: BenchTiming | None = None
    baseline_gbps: float | None = Field(None,
                                        description="ideal_bytes / baseline median: the baseline's effective bandwidth")
    speedup_vs_baseline: float | None = Field(None, description="baseline median / kernel median")
    predicted_speedup: float | None = Field(None, description="the speed-up the claim implies")
    claim: str
    claim_source: str
    method: dict[str, Any] = {}
    cases_passed: bool | None = Field(None,
                                      description="every case of this report passed (a wrong kernel's speed means "
                                                  "little)")
    plausible: bool = Field(True, description="false: faster than the device's HBM ceiling allows")
    note: str | None = None
    reused: bool = Field(False, description="reused with the code results of a byte-identical program (same exercise "
                                            "version, device name and Triton version): measured on that run")


SPEED_TEXTS: Final = ("reason", "note", "bytes_note", "baseline_label", "claim", "claim_source")  # its words


class CarriedDecision(_Model):
    """What a regrade did with a TA decision made on an earlier report (service/db/carry.py)."""

    decision_id: int
    target: str = Field(description="item:<id> | veto:<rule>")
    outcome: Literal["reapplied", "returned", "lapsed", "superseded"] = Field(
        description="reapplied: the evidence it decided on is unchanged; returned: the evidence changed, a TA "
                    "decides again (the case is back in the queue); lapsed: the regrade no longer has the target; "
                    "superseded: a TA decided on it again")
    decided_by: str
    decided_at: datetime
    decision: dict[str, Any] = Field(description="what was decided (the audit's `after`)")
    reason: str = Field(description="the TA's reason")


class CaseTexts(_Model):
    description: str
    targets: str | None = None
    error: str | None = None


class ItemTexts(_Model):
    title: str
    feedback: str


class RequirementTexts(_Model):
    title: str = ""
    message: str = ""
    evidence: dict[str, Any] = Field({}, description="where its evidence has words of its own (the labels looked "
                                                     "for): the evidence in this language; empty: the report's")


class EditTexts(_Model):
    reason: str
    hint: str | None = None


class ReportTexts(_Model):
    """Every text of a report that the student reads, in one more language: rendered at grading by the
    same message functions from the same facts as the report's own (service/grading/translate.py), so
    that the student can switch language without another run. Keyed like the report's lists (items,
    cases, diagnoses and requirements by id, vetoes by rule; edits in the report's order); `in_language`
    puts them in place. Written answers are quoted as the student wrote them, in either language."""

    message: str | None = None
    items: dict[str, ItemTexts] = {}
    cases: dict[str, CaseTexts] = {}
    diagnoses: dict[str, str] = {}
    vetoes: dict[str, str] = Field({}, description="rule -> the veto's note")
    requirements: dict[str, RequirementTexts] = {}
    not_run_reason: str | None = None
    edits: list[EditTexts] = []
    given_output: str | None = Field(None, description="the given check's output with our verdict on it")
    performance: Performance | None = Field(
        None, description="the speed card in this language (the same figures); replaced with the report's own by "
                          "its speed revision; None: the card stays in the report's language")


class Report(_Model):
    schema_: Literal["kernelgrade.report/v1"] = Field(SCHEMA, alias="schema")
    submission_id: str
    exercise: ExerciseRef
    status: Literal["graded", "not_gradable"]
    message: str | None = Field(None, description="for not_gradable: what failed on our side")
    language: Literal["zh", "en"] = "zh"
    score: Score
    items: list[Item] = []
    cases: list[CaseReport] = []
    diagnoses: list[Diagnosis] = []
    vetoes: list[Veto] = []
    environment: Environment
    timing: dict[str, float] = {}
    seeds: Seeds | None = None
    program: ProgramReport | None = None
    given_check: GivenCheckReport | None = None
    performance: Performance | None = Field(None, description="GPU speed, informational (exercises with `speed:`)")
    carried_decisions: list[CarriedDecision] = Field([], description="TA decisions of earlier reports, after a regrade")
    translations: dict[Literal["zh", "en"], ReportTexts] = Field(
        {}, description="the student-facing texts in the other language (empty in reports graded before them)")
    created_at: datetime

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)

    def to_record(self) -> dict[str, Any]:
        """The report as the database's JSON column stores it. Through JSON text, not
        `model_dump(mode="json")`, which keeps inf and NaN (an error ratio can be inf) where a JSON
        column needs null; without to_json's indentation (15% of the round trip, on every report written)."""
        return json.loads(self.model_dump_json(by_alias=True))


def in_language(report: Report, language: str) -> Report:
    """The report with its student-facing texts in `language` (its `language` then says so), from
    `translations`; the report itself when it is already in it, or has no texts in it (graded before
    translations: the caller says the texts stay in `report.language`). Points, statuses, evidence
    and everything else are the report's own."""
    texts = report.translations.get(language)  # type: ignore[call-overload]
    if language == report.language or texts is None:
        return report

    def item(i: Item) -> Item:
        t = texts.items.get(i.id)
        return i.model_copy(update={"title": t.title, "feedback": t.feedback}) if t else i

    def case(c: CaseReport) -> CaseReport:
        t = texts.cases.get(c.id)
        return c.model_copy(update=t.model_dump()) if t else c

    def diagnosis(d: Diagnosis) -> Diagnosis:
        said = texts.diagnoses.get(d.id)
        return d.model_copy(update={"message": said}) if said is not None else d

    def veto(v: Veto) -> Veto:
        evidence = dict(v.evidence)
        if (note := texts.vetoes.get(v.rule)) is not None:
            evidence["note"] = note
            evidence[f"note_{language}"] = note  # the page reads note_<lang> first: the translation's words
        if isinstance(probes := evidence.get("failed_probes"), list):  # what each failed probe targets
            evidence["failed_probes"] = [{**p, "targets": texts.cases[p["case"]].targets}
                                         if isinstance(p, dict) and p.get("case") in texts.cases else p for p in probes]
        return v.model_copy(update={"evidence": evidence})

    def requirement(r: Requirement) -> Requirement:
        t = texts.requirements.get(r.id)
        return r.model_copy(update={"title": t.title, "message": t.message,
                                    "evidence": t.evidence or r.evidence}) if t else r

    update: dict[str, Any] = {
        "language": language, "items": [item(i) for i in report.items], "cases": [case(c) for c in report.cases],
        "diagnoses": [diagnosis(d) for d in report.diagnoses], "vetoes": [veto(v) for v in report.vetoes],
        "score": report.score.model_copy(update={"requirements": [requirement(r) for r in report.score.requirements]}),
    }
    if texts.message is not None:
        update["message"] = texts.message
    if report.program is not None:
        edits = [e.model_copy(update=t.model_dump()) for e, t in zip(report.program.edits, texts.edits)]
        update["program"] = report.program.model_copy(update={
            "not_run_reason": texts.not_run_reason if report.program.not_run_reason is not None
            else None, "edits": edits + report.program.edits[len(edits):]})
    if report.given_check is not None and texts.given_output is not None:
        update["given_check"] = report.given_check.model_copy(update={"output": texts.given_output})
    card = texts.performance
    if report.performance is not None and card is not None and card.status == report.performance.status:
        # only its words: the figures are the report's (a card of another status is stale: not used)
        update["performance"] = report.performance.model_copy(update=card.model_dump(include=set(SPEED_TEXTS)))
    return report.model_copy(update=update)
