"""The exercise schema: what `exercise.yaml` and `mutants.yaml` may say, checked on load, and how a
case's drawn shape resolves under a secret seed (replay gives the same). A leaf: no grading import.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import math
import re
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sandbox.contract import Scalar  # what a case passes through to the sandbox: one definition
from service import syntax

CaseKind = Literal["regular", "boundary", "probe"]
ReportCaseKind = Literal["given", "regular", "boundary", "probe"]
_ID = r"^[a-z0-9][a-z0-9_.\-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Text(_Strict):
    """Text that reaches a student or a TA (a report, a page), in each language of the course:
    `{zh: …, en: …}` in YAML. A plain string (the old form) is the same text in every language, so
    an English report shows it as written: give both for anything a student reads."""

    zh: str | None = None
    en: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _plain(cls, data: object) -> object:
        return {"zh": data, "en": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _some(self) -> Text:
        if not (self.zh or self.en):
            raise ValueError("a text needs zh or en")
        return self

    def in_(self, language: str | None) -> str:
        """The text in `language` (a report's, a page's), else in the other one."""
        own = self.en if language == "en" else self.zh if language == "zh" else None
        return own or self.lesson

    @property
    def lesson(self) -> str:
        """The lesson's own words (zh where given): what matching a student's answer compares with, the
        same whatever the report's language, so that a zh and an en report of one answer score alike."""
        return self.zh or self.en or ""

    def filled(self, **values: object) -> Text:
        """Both languages with `{name}` replaced by `values[name]` (a drawn case's shape)."""
        def fill(text: str | None) -> str | None:
            for name, value in values.items():
                text = text.replace("{" + name + "}", str(value)) if text is not None else None
            return text
        return Text(zh=fill(self.zh), en=fill(self.en))


class NamedIdea(_Strict):
    """What naming a correctness boundary (or a performance trade-off) looks like in this exercise:
    concepts of its questions (`question:concept`, found by the concept rubric) or patterns matched
    against every written answer and the explanation (NFKC-normalised, lower-case)."""

    label: Text = Field(description="what counts, shown in the pass rule's requirement")
    concepts: list[str] = Field([], description="question:concept ids whose finding counts")
    patterns: list[str] = []
    # What else the sentence must say (service/grading/named.py): a boundary's effect (what breaks or
    # must be handled), a trade-off's gain and cost; each adds to the generic words there.
    effect: list[str] = Field([], description="a boundary: more words for what goes wrong or must be handled")
    gain: list[str] = Field([], description="a trade-off: more words for what it buys")
    cost: list[str] = Field([], description="a trade-off: more words for what it costs")

    @field_validator("patterns", "effect", "gain", "cost")
    @classmethod
    def _valid(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            re.compile(pattern)
        return patterns

    @field_validator("concepts")
    @classmethod
    def _qualified(cls, concepts: list[str]) -> list[str]:
        if bad := [c for c in concepts if c.count(":") != 1]:
            raise ValueError(f"concepts are question:concept ids, got {bad}")
        return concepts


class PassRuleSpec(_Strict):
    """`pass_rule:` of exercise.yaml, written from the lesson's own pass criteria (`source`)."""

    source: str = Field(description="where the lesson states it, quoted")
    given_check: bool = Field(True, description="the lesson's given check must pass in our run")
    run_output: bool = Field(True, description="the submission states the check's real output, or says it is a "
                                               "static review only")
    causal_chains: list[str] = Field([], description="questions whose answer must explain the causal chain")
    chain_share: float = Field(0.5, gt=0, le=1, description="share of a question's chain links that must be stated")
    correctness_boundary: NamedIdea | None = None
    performance_tradeoff: NamedIdea | None = None


class Tolerance(_Strict):
    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)


class DataSpec(_Strict):
    """How one case's input rows are drawn: per-row offset and scale, then optional shaping."""

    loc: tuple[float, float] = (0.0, 0.0)
    scale: tuple[float, float] = (1.0, 1.0)
    zeros_fraction: float = Field(0.0, ge=0, le=1, description="valid lanes set to exactly 0.0")
    sign: Literal["any", "negative", "positive"] = "any"


ShapeFamily = Literal["ragged", "prime", "past_pow2", "wide"]
MIN_DRAW_CANDIDATES = 8  # a family with fewer widths could be enumerated and fitted


class ShapeDraw(_Strict):
    """Part of a case's shape drawn from the per-submission secret seed (`resolve_case` below), so
    that no kernel can be fitted to the shapes an earlier report showed. The width is drawn from
    `family` within `cols` (inclusive); `rows`, when given, uniformly within it. Every width the
    exercise's fixed cases use is left out, so a drawn case is never one already shown.

    ragged: not a power of two. prime: a prime. past_pow2: 2^k + d with 1 <= d <= max(1, 2^k / 8),
    so BLOCK = 2^(k+1) is almost half padding. wide: wider than every fixed case of the exercise."""

    family: ShapeFamily
    cols: tuple[int, int] = Field(description="inclusive range of the drawn width (the cost bound)")
    rows: tuple[int, int] | None = Field(None, description="inclusive range of the drawn row count")
    params: dict[str, Literal["cols", "rows"]] = Field(
        {}, description="case params that take the drawn value (e.g. T: cols, N0: rows for exercises that read params)")

    @model_validator(mode="after")
    def _ranges(self) -> ShapeDraw:
        for name, (lo, hi) in (("cols", self.cols), ("rows", self.rows or (1, 1))):
            if not 1 <= lo <= hi <= 1 << 16:
                raise ValueError(f"draw.{name} {lo}..{hi}: need 1 <= low <= high <= 65536")
        return self


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    return all(n % d for d in range(2, int(n ** 0.5) + 1))


def _past_pow2(n: int) -> bool:
    if n < 3:
        return False
    p = 1 << (n - 1).bit_length() - 1  # the largest power of two below n
    return p < n <= p + max(1, p // 8)


def shape_candidates(draw: ShapeDraw, fixed: frozenset[int] | set[int]) -> list[int]:
    """Every width the family allows in its range, less the fixed cases' widths."""
    return list(_candidates(draw.family, *draw.cols, frozenset(fixed)))


@functools.lru_cache(maxsize=256)  # drawn for every grading from a handful of catalog ranges
def _candidates(family: str, lo: int, hi: int, fixed: frozenset[int]) -> tuple[int, ...]:
    keep = {
        "ragged": lambda n: n & (n - 1) != 0,
        "wide": lambda n: n & (n - 1) != 0,
        "prime": _is_prime,
        "past_pow2": _past_pow2,
    }[family]
    return tuple(n for n in range(lo, hi + 1) if keep(n) and n not in fixed)


class Layout(_Strict):
    """How one input of a case lies in memory: a strided view into a larger storage whose other
    elements hold NaN (integers: the dtype's minimum), so a kernel that ignores a stride it was
    given reads them or the wrong elements. 2-D (rows, cols): strides (row_stride, col_stride),
    by default those of a contiguous tensor, or with `transposed` of the transpose of a
    contiguous (cols, rows) tensor (row_stride 1, col_stride rows); 1-D: `col_stride` is its one
    stride. `offset`: elements of storage before the view's first element (a slice of a larger
    tensor). The view's elements never overlap (checked on the shapes the case draws)."""

    row_stride: int | None = Field(None, ge=1, le=1 << 20, description="x.stride(0) of a 2-D input")
    col_stride: int | None = Field(None, ge=1, le=1 << 20,
                                   description="x.stride(1) of a 2-D input; a 1-D input's stride")
    transposed: bool = Field(False, description="defaults of a transposed view: x = s.t() for a contiguous s")
    offset: int = Field(0, ge=0, le=1 << 16, description="storage elements before the view's first element")

    def strides(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The view's strides (elements) for an input of `shape` (1-D or 2-D)."""
        if len(shape) == 1:
            if self.row_stride is not None or self.transposed:
                raise ValueError("a 1-D input takes only col_stride and offset")
            return (self.col_stride or 1,)
        if len(shape) != 2:
            raise ValueError(f"a layout applies to 1-D and 2-D inputs, not shape {list(shape)}")
        rows, cols = shape
        if self.transposed:
            rs = self.row_stride or 1
            return rs, self.col_stride or rows * rs
        cs = self.col_stride or 1
        return self.row_stride or cols * cs, cs

    def check(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The strides for `shape`, refused where two of the view's elements would share memory."""
        strides = self.strides(shape)
        span = 0  # the last element the smaller strides reach
        for n, s in sorted(zip(shape, strides), key=lambda p: p[1]):
            if n > 1:
                if s <= span:
                    raise ValueError(f"layout strides {list(strides)} overlap for shape {list(shape)}")
                span += (n - 1) * s
        return strides

    @property
    def contiguous(self) -> bool:
        return not self.transposed and self.offset == 0 and self.row_stride is None and (self.col_stride or 1) == 1


class CaseSpec(_Strict):
    id: str = Field(pattern=_ID)
    kind: CaseKind
    rows: int = Field(1, ge=1, le=1 << 16)
    cols: int = Field(ge=1, le=1 << 20)
    stride: int | None = Field(None, description="row stride > cols: the first argument is a view of a wider tensor")
    layout: dict[str, Layout] = Field({}, description="inputs given as strided views (transposed, column stride, "
                                                      "padded rows, offset); see Layout")
    seed: int = Field(ge=0)
    secret: bool = Field(True, description="mix the per-submission secret seed into this case's data")
    data: DataSpec = DataSpec()
    params: dict[str, Scalar | list[Scalar]] = Field({}, description="read by the exercise's make_inputs()")
    kwargs: dict[str, Scalar] = Field({}, description="keyword arguments of the entry point for this case")
    calls: int = Field(1, ge=1, le=8,
                       description="call the entry point this often on the same tensors; the last call counts")
    description: Text
    targets: Text | None = Field(None, description="the misconception a probe is built to expose")
    draw: ShapeDraw | None = Field(None, description="part of the shape drawn from the secret seed; `cols`/`rows` and "
                                                     "`description` ({cols}, {rows}, {block}) are then its defaults")

    @model_validator(mode="after")
    def _check(self) -> CaseSpec:
        if self.stride is not None and self.stride <= self.cols:
            raise ValueError(f"case {self.id}: stride {self.stride} must exceed cols {self.cols}")
        if self.stride is not None and self.layout:
            raise ValueError(f"case {self.id}: give the row stride in `layout`, not beside it in `stride`")
        if self.kind == "probe" and not self.targets:
            raise ValueError(f"probe {self.id} must name the misconception it targets")
        return self

    @property
    def row_stride(self) -> int:
        return self.stride or self.cols

    @property
    def block(self) -> int:
        return 1 << max(0, math.ceil(math.log2(self.cols)))


def shape_seed(case: CaseSpec, secret_seed: int) -> int:
    """The seed a drawn case's shape comes from: separate from its data's, same recorded inputs."""
    digest = hashlib.sha256(f"shape:{case.id}:{case.seed}:{secret_seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def resolve_case(case: CaseSpec, secret_seed: int, fixed: frozenset[int] | set[int]) -> CaseSpec:
    """`case` with its drawn shape filled in (a case without `draw`, or not secret, as it is)."""
    draw = case.draw
    if draw is None or not case.secret:
        return case
    rng = np.random.default_rng(shape_seed(case, secret_seed))
    candidates = shape_candidates(draw, fixed)
    cols = int(candidates[int(rng.integers(len(candidates)))])
    rows = int(rng.integers(draw.rows[0], draw.rows[1] + 1)) if draw.rows else case.rows
    return with_shape(case, cols, rows)


def with_shape(case: CaseSpec, cols: int, rows: int) -> CaseSpec:
    """A drawn case at the shape `cols` x `rows` (one its draw allows): what resolve_case gives for
    a seed that draws it."""
    assert case.draw is not None
    draw = case.draw
    params = dict(case.params)
    for name, source in draw.params.items():
        params[name] = cols if source == "cols" else rows
    block = 1 << max(0, (cols - 1).bit_length())
    description = case.description.filled(cols=cols, rows=rows, block=block)
    return case.model_copy(update={"cols": cols, "rows": rows, "params": params, "description": description})


class GivenCheck(_Strict):
    seed: int = Field(ge=0)
    description: Text
    calls: int | None = Field(None, ge=1, description="how often the check calls the entry point; when set, a check "
                                                      "that recorded another number of calls does not count as passed")


def _compiles(patterns: list[str]) -> list[str]:
    for p in patterns:
        re.compile(p)
    return patterns


class _Labelled(_Strict):
    """A concept or a misconception: `label` is a Text. The old form, `label` in the lesson's words beside
    `label_en`, still loads (an exercise folder written before the two became one): as `{zh: label, en: label_en}`."""

    @model_validator(mode="before")
    @classmethod
    def _old_label_en(cls, data: object) -> object:
        if isinstance(data, dict) and "label_en" in data and isinstance(data.get("label"), str):
            data = dict(data)
            english = data.pop("label_en")
            data["label"] = {"zh": data["label"], "en": english} if english else data["label"]
        return data


class Concept(_Labelled):
    id: str = Field(pattern=_ID)
    label: Text = Field(description="what the concept is, `{zh: …, en: …}`: feedback names it in the report's "
                                    "language, and the scorer matches an answer against both (similarity.py)")
    weight: float = Field(1.0, gt=0)
    patterns: list[str] = Field(min_length=1, description="regular expressions on NFKC-normalised lower-case text")

    @field_validator("patterns")
    @classmethod
    def _valid_patterns(cls, patterns: list[str]) -> list[str]:
        return _compiles(patterns)


class ClauseTerms(_Strict):
    """A misconception said in any order and wording within one clause: every one of `terms` (regexes, each a
    set of synonyms: what is combined, how, into what) matches inside one clause of the answer (between
    punctuation or a contrast word) and none of `not_with` does. Unless `negated`, a clause that holds a
    negation, a condition or a correction word ("不", "not", "if", "wrong", "其实") states nothing."""
    terms: list[str] = Field(min_length=2)
    not_with: list[str] = Field(default_factory=list)
    negated: bool = Field(False, description="the statement is itself a denial (\"no need to rescale\"): "
                                             "the clause's negations do not cancel it")
    sentence: bool = Field(False, description="the terms together in one sentence, not one clause (a reason "
                                              "after a comma: \"不能加方差，因为 atomic 顺序不确定\")")

    @field_validator("terms", "not_with")
    @classmethod
    def _valid_patterns(cls, patterns: list[str]) -> list[str]:
        return _compiles(patterns)


class Misconception(_Labelled):
    id: str = Field(pattern=_ID)
    label: Text = Field(description="the wrong idea, `{zh: …, en: …}`, its correction in parentheses: shown in the "
                                    "report's language, and both are matched (a clause close to either is flagged "
                                    "for a TA)")
    patterns: list[str] = Field(min_length=1)
    clauses: list[ClauseTerms] = Field(default_factory=list,
                                       description="the misconception's parts, each a synonym set, together in a "
                                                   "clause in any order (ClauseTerms): what single patterns miss")
    penalty: float = Field(0.25, ge=0, le=1, description="share of the question's points taken off")
    negatable: bool = Field(True, description="'不能除以 BLOCK' does not state the misconception")
    unless: list[str] = Field(default_factory=list,
                              description="regexes on the answer (NFKC, lower-case) that say the condition under which "
                                          "the statement is right: where one matches, it is not this misconception "
                                          "(Long Softmax: no rescale is needed where the max has a pass of its own)")
    mechanism: bool = Field(False, description="a wrong mechanism (stale registers, an out-of-bounds read, NaN "
                                               "dropped by the store): the failure said after it (\"所以方差偏大\") is "
                                               "the symptom it wrongly explains, so it is stated all the same; "
                                               "false: a wrong choice, which a failure said after it refutes")

    @field_validator("patterns", "unless")
    @classmethod
    def _valid_patterns(cls, patterns: list[str]) -> list[str]:
        return _compiles(patterns)


class FillClaim(_Strict):
    """Something an explanation may say the code does, and what in the submitted fill shows it: an
    explanation that says it over a fill that does not show it describes a different fill."""

    id: str = Field(pattern=_ID)
    label: Text
    says: list[str] = Field(min_length=1, description="regexes on the explanation (NFKC, lower-case)")
    shown_by: list[str] = Field(min_length=1, description="regexes on the fill's canonical source (ast.unparse)")
    blank: int | None = Field(None, ge=1, description="the blank (1-based) it is about; none: every fill joined")
    said_by: list[str] = Field([], description="the question's concept ids that also state it, as what the code "
                                               "does (freetext.DESCRIBES_BY_CONCEPTS)")
    in_each: str | None = Field(None, description="a call (tl.load, tl.store): shown_by must hold in each of the "
                                                  "fill's calls of it (fill_sites.py)")
    argument: str | None = Field(None, description="with in_each: the call's argument shown_by is read on (mask, "
                                                   "other), its names read through their definitions")

    @field_validator("says", "shown_by")
    @classmethod
    def _valid_patterns(cls, patterns: list[str]) -> list[str]:
        return _compiles(patterns)


class Question(_Strict):
    id: str = Field(pattern=_ID)
    prompt: Text
    reference_answer: str
    concepts: list[Concept] = Field(min_length=1)
    chain: list[str] = Field(default_factory=list, description="concept ids in causal order")
    more_chains: list[list[str]] = Field([], description="the chains of the question's other parts "
                                                       "(\"…? and what if …?\"), scored like `chain`")
    misconceptions: list[Misconception] = []
    describes: list[FillClaim] = Field([], description="explanation only: what it may say about the fill")

    @model_validator(mode="after")
    def _chain_known(self) -> Question:
        known = {c.id for c in self.concepts}
        if unknown := [c for chain in (self.chain, *self.more_chains) for c in chain if c not in known]:
            raise ValueError(f"question {self.id}: chain names unknown concepts {unknown}")
        if unknown := [c for claim in self.describes for c in claim.said_by if c not in known]:
            raise ValueError(f"question {self.id}: describes' said_by names unknown concepts {unknown}")
        return self


# course_text.yaml: the passages an exercise draws on, read by the written-answer scorer's copy check
# (service/grading/freetext.py). Bounded so that their grams stay small (built once per exercise).
COURSE_MIN_CHARS = 20
COURSE_MAX_CHARS = 64 * 1024  # all passages of one exercise together
COURSE_MAX_PASSAGES = 32


class CoursePassage(_Strict):
    """A passage of the course text an exercise draws on, quoted from its seed as students read it
    (code cells left out, formulas rendered): an answer made mostly of it is flagged for a TA."""

    id: str = Field(pattern=_ID)
    title: Text = Field(description="where in the course it is (lesson, section), as a report names it")
    source: str | None = Field(None, description="the seed it is quoted from (unset in course_text.yaml: the "
                                                 "exercise's `source`)")
    text: str = Field(min_length=COURSE_MIN_CHARS)


class RubricItem(_Strict):
    id: str = Field(pattern=_ID)
    title: Text
    points: float = Field(gt=0)
    source: Literal["cases", "text"]
    case_kinds: list[ReportCaseKind] = []
    scoring: Literal["all", "fraction"] = "all"
    question: str | None = Field(None, description="for text items: the question (or 'explanation') it grades")

    @model_validator(mode="after")
    def _check(self) -> RubricItem:
        if self.source == "cases" and not self.case_kinds:
            raise ValueError(f"rubric item {self.id}: a cases item needs case_kinds")
        if self.source == "text" and not self.question:
            raise ValueError(f"rubric item {self.id}: a text item needs the question it grades")
        return self


class GradSpec(_Strict):
    """Backward grading: upstream gradients are inputs, the arguments' gradients are outputs."""

    grad_outputs: dict[str, str] = Field(min_length=1,
                                         description="forward output -> input holding its upstream gradient")
    grads: dict[str, str] = Field(min_length=1, description="argument -> output name of its gradient")


_BYTES_OPS = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mult": lambda a, b: a * b,
              "FloorDiv": lambda a, b: a // b}


def bytes_moved(formula: str, *, M: int, N: int) -> int:
    """Evaluate an exercise's `speed.bytes` formula: integers, M, N, + - * // and parentheses only."""
    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and node.id in ("M", "N"):
            return M if node.id == "M" else N
        if isinstance(node, ast.BinOp) and type(node.op).__name__ in _BYTES_OPS:
            return _BYTES_OPS[type(node.op).__name__](value(node.left), value(node.right))
        raise ValueError(f"speed.bytes {formula!r}: only integers, M, N, + - * // and parentheses are allowed")

    try:
        tree = _bytes_tree(formula)
    except SyntaxError as exc:
        raise ValueError(f"speed.bytes {formula!r} is not an expression: {exc}") from None
    assert isinstance(tree, ast.Expression)
    return value(tree.body)


@functools.lru_cache(maxsize=64)
def _bytes_tree(formula: str) -> ast.AST:
    """An exercise's `speed.bytes` formula parsed once (the exercise's data, read on every speed card;
    nothing writes to the tree)."""
    return syntax.parse(formula, mode="eval")


class BaselineSpec(_Strict):
    label: Text = Field(description="what the baseline is, as the report shows it")
    code: str = Field(description="a Python expression over `torch` and the entry point's arguments (by their names in "
                                  "`args`), run in the sandbox on the same GPU: the exercise author's code, never the "
                                  "student's")

    @field_validator("code")
    @classmethod
    def _expression(cls, code: str) -> str:
        try:
            compile(code, "<speed.baseline>", "eval")
        except SyntaxError as exc:
            raise ValueError(f"speed.baseline.code must be one Python expression: {exc}") from None
        return code


class SpeedSpec(_Strict):
    """GPU only, informational (no points): time the entry point on one large input against the
    HBM ceiling and a torch baseline. The input is drawn like a case's (make_inputs), `draw_rows`
    rows at a time; the sandbox stacks `rows // draw_rows` copies of each argument along its first
    dimension, so a large shape costs no large file."""

    rows: int = Field(ge=1, le=1 << 24, description="M of the timed shape")
    cols: int = Field(ge=1, le=1 << 20, description="N of the timed shape")
    draw_rows: int = Field(ge=1, le=1 << 16, description="rows drawn on the trusted side (a divisor of rows)")
    seed: int = Field(ge=0)
    data: DataSpec = DataSpec()
    params: dict[str, Scalar | list[Scalar]] = {}
    kwargs: dict[str, Scalar] = {}
    bytes: str = Field(description="bytes the ideal kernel moves to and from HBM, over M and N (e.g. 4*M*N + 2*4*M)")
    bytes_note: Text = Field(description="what the formula counts, in the lesson's language")
    baseline: BaselineSpec
    claim: Text = Field(description="the lesson's own words on this kernel's memory traffic, shown beside the figures "
                                    "(en: translated)")
    claim_source: Text = Field(description="where the claim is written")
    predicted_speedup: float | None = Field(None, gt=0, description="the speed-up over the baseline the claim implies "
                                                                    "(reads once where the baseline reads twice: 2)")

    @model_validator(mode="after")
    def _check(self) -> SpeedSpec:
        if self.rows % self.draw_rows:
            raise ValueError(f"speed: draw_rows {self.draw_rows} must divide rows {self.rows}")
        if self.ideal_bytes <= 0:
            raise ValueError(f"speed.bytes {self.bytes!r} gives {self.ideal_bytes} bytes for the timed shape")
        return self

    @property
    def repeat(self) -> int:
        return self.rows // self.draw_rows

    @property
    def ideal_bytes(self) -> int:
        return bytes_moved(self.bytes, M=self.rows, N=self.cols)

    def case(self) -> CaseSpec:
        """The drawn block as a case (never graded): what make_inputs() builds the timed input from."""
        return CaseSpec(id="speed", kind="regular", rows=self.draw_rows, cols=self.cols, seed=self.seed, secret=False,
                        data=self.data, params=self.params, kwargs=self.kwargs,
                        description=Text(en=f"speed: {self.draw_rows} rows drawn, stacked to "
                                            f"{self.rows} × {self.cols}"))


class HostCodeSpec(_Strict):
    """What the host code around the kernel may do (service/grading/host_fills.py): for an exercise
    with blanks outside the kernel, checked on the fills before anything runs."""

    inputs: list[str] = Field(min_length=1, description="the entry point's tensors whose values only a kernel may "
                                                        "read: host code may pass them to a launch and read their "
                                                        "shape, strides, dtype and device; what it returns must come "
                                                        "from what a launch wrote")


class ExerciseSpec(_Strict):
    id: str = Field(pattern=_ID)
    version: int = Field(ge=1)
    title: Text
    language: Literal["zh", "en"]
    source: str | None = None
    template: str = "template.py"
    solution: str = "solution.py"
    checks: str = "checks.py"
    entry_point: str
    args: list[str] = Field(["x"], min_length=1, description="inputs passed to the entry point, in order")
    backward: GradSpec | None = None
    written_args: list[str] = Field([], description="arguments the entry point is meant to write (caller-owned "
                                                     "scratch buffers); every other input is compared bit for bit "
                                                     "after the call (diagnosis input_overwritten)")
    host_code: HostCodeSpec | None = Field(None, description="blanks outside the kernel: what their host code may do "
                                                             "(unset: only the runs decide, host_blanks.py)")
    requires_gpu: Text | None = Field(None, description="why the Triton interpreter cannot grade this exercise; "
                                                       "unset: the interpreter grades it like the GPU")
    deterministic: bool = Field(True, description="identical programs give identical outputs (false: atomics, ...)")
    fill_policy: Literal["expression", "any"] = Field(
        "expression", description="expression: a fill is a restricted expression; any: whitelisting is off (a whole "
                                  "body may be the blank) and the sandbox is the only defence")
    outputs: dict[str, Tolerance] = Field(min_length=1)
    given_check: GivenCheck
    pass_threshold: float
    pass_rule: PassRuleSpec | None = Field(None, description="what the lesson says passing needs besides the total "
                                                             "(service/grading/passrule.py); unset: total and no veto")
    rubric: list[RubricItem] = Field(min_length=1)
    questions: list[Question] = Field([], description="inline, or in questions.yaml beside exercise.yaml")
    course_text: list[CoursePassage] = Field([], description="the course text the exercise draws on: inline, or "
                                                             "in course_text.yaml beside exercise.yaml")
    cases: list[CaseSpec] = Field(min_length=1)
    speed: SpeedSpec | None = Field(None, description="GPU only, informational: time the kernel on a large shape")

    @model_validator(mode="before")
    @classmethod
    def _course_text_source(cls, data: object) -> object:
        """A course passage without `source` is quoted from the exercise's."""
        if isinstance(data, dict) and isinstance(data.get("course_text"), list) and data.get("source"):
            data = {**data, "course_text": [{**p, "source": p.get("source") or data["source"]} if isinstance(p, dict)
                                            else p for p in data["course_text"]]}
        return data

    @model_validator(mode="after")
    def _check(self) -> ExerciseSpec:
        ids = [c.id for c in self.cases]
        if len(ids) != len(set(ids)):
            raise ValueError("case ids must be unique")
        known_questions = {q.id for q in self.questions}
        for item in self.rubric:
            if item.source == "text" and item.question not in known_questions:
                raise ValueError(f"rubric item {item.id} grades unknown question {item.question!r}")
        passages = [p.id for p in self.course_text]
        if len(passages) != len(set(passages)):
            raise ValueError("course_text: passage ids must be unique")
        if len(passages) > COURSE_MAX_PASSAGES or sum(len(p.text) for p in self.course_text) > COURSE_MAX_CHARS:
            raise ValueError(f"course_text: at most {COURSE_MAX_PASSAGES} passages of {COURSE_MAX_CHARS} characters "
                             "together (the passages the exercise draws on, not the whole seed)")
        if self.source is None and (unsourced := [p.id for p in self.course_text if p.source is None]):
            raise ValueError(f"course_text: passages {unsourced} name no source, and the exercise has none")
        if self.pass_threshold > sum(i.points for i in self.rubric):
            raise ValueError("pass_threshold exceeds the total points")
        if unknown := [a for a in self.written_args if a not in self.args]:
            raise ValueError(f"written_args names {unknown}, which are not in args {self.args}")
        if self.host_code is not None and (unknown := [a for a in self.host_code.inputs if a not in self.args]):
            raise ValueError(f"host_code.inputs names {unknown}, which are not in args {self.args}")
        if self.pass_rule is not None:
            questions = {q.id: q for q in self.questions}
            chains = self.pass_rule.causal_chains
            if unknown := [q for q in chains if q not in questions or len(questions[q].chain) < 2]:
                raise ValueError(f"pass_rule.causal_chains names {unknown}: "
                                 "not questions with a chain of two or more concepts")
            for idea in (self.pass_rule.correctness_boundary, self.pass_rule.performance_tradeoff):
                for ref in idea.concepts if idea is not None else []:
                    question, concept = ref.split(":")
                    if question not in questions or concept not in {c.id for c in questions[question].concepts}:
                        raise ValueError(f"pass_rule names unknown concept {ref!r}")
        if self.backward is not None:
            if unknown := [o for o in self.backward.grad_outputs if o not in self.forward_outputs]:
                raise ValueError(f"backward.grad_outputs names unknown forward outputs {unknown}")
            if unknown := [a for a in self.backward.grads if a not in self.args]:
                raise ValueError(f"backward.grads names {unknown}, which are not in args {self.args}")
            if unknown := [o for o in self.backward.grads.values() if o not in self.outputs]:
                raise ValueError(f"backward.grads outputs {unknown} need a tolerance under outputs")
        fixed = self.fixed_widths
        for case in self.cases:
            if unknown := [a for a in case.layout if a not in self.args]:
                raise ValueError(f"case {case.id}: layout names {unknown}, which are not in args {self.args}")
            for name, layout in case.layout.items():  # the first argument's 2-D shape, at every drawable size
                if name == self.args[0]:
                    widths = range(case.draw.cols[0], case.draw.cols[1] + 1) if case.draw else (case.cols,)
                    heights = range(case.draw.rows[0], case.draw.rows[1] + 1) if case.draw and case.draw.rows \
                        else (case.rows,)
                    for cols in (min(widths), max(widths)):
                        for rows in (min(heights), max(heights)):
                            try:
                                layout.check((rows, cols))
                            except ValueError as exc:
                                raise ValueError(f"case {case.id}, input {name}: {exc}") from None
            if case.draw is None:
                continue
            if case.draw.family == "wide" and case.draw.cols[0] <= max(fixed, default=0):
                raise ValueError(f"case {case.id}: a 'wide' family must start above every fixed width "
                                 f"(the widest is {max(fixed)})")
            if case.stride is not None and case.draw.cols[1] >= case.stride:
                raise ValueError(f"case {case.id}: drawn widths must stay below the row stride {case.stride}")
            if (count := len(shape_candidates(case.draw, fixed))) < MIN_DRAW_CANDIDATES:
                raise ValueError(f"case {case.id}: family {case.draw.family} in {case.draw.cols} has {count} widths "
                                 f"besides the fixed ones (at least {MIN_DRAW_CANDIDATES} needed)")
        if self.speed is not None:
            tree = syntax.parse(self.speed.baseline.code, mode="eval")
            lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
            bound = {"torch", *self.args} | {a.arg for n in lambdas for a in n.args.args}
            if unknown := sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - bound):
                raise ValueError(f"speed.baseline.code names {unknown}: "
                                 f"it sees only torch and the arguments {self.args}")
        return self

    @property
    def fixed_widths(self) -> frozenset[int]:
        """The widths of the cases whose shape is not drawn (drawn cases avoid them)."""
        return frozenset(c.cols for c in self.cases if c.draw is None)

    def cases_for(self, secret_seed: int) -> list[CaseSpec]:
        """The cases as graded under `secret_seed`: drawn shapes resolved (replay gives the same)."""
        fixed = self.fixed_widths
        return [resolve_case(c, secret_seed, fixed) for c in self.cases]

    @property
    def forward_outputs(self) -> list[str]:
        """What the entry point returns, in order: the outputs that are not gradients."""
        grads = set(self.backward.grads.values()) if self.backward else set()
        return [name for name in self.outputs if name not in grads]

    @property
    def max_points(self) -> float:
        return sum(i.points for i in self.rubric)


class MutantExpectation(_Strict):
    code_points: float = Field(description="points of the cases items together")
    code_points_min: float | None = Field(None, description="where a case fails for some runs only (a width "
                                                            "drawn from the secret seed; memory a wrong kernel "
                                                            "reads out of bounds): the fewest points expected "
                                                            "(code_points is then the most)")
    vetoes: list[str] = []
    vetoes_may: list[str] = Field([], description="vetoes raised in some runs only (with code_points_min): "
                                                  "coincidental_pass where the given check itself may fail")
    diagnoses: list[str] = []
    not_diagnosed: list[str] = Field([], description="diagnoses that must not be reported (their evidence "
                                                     "does not hold for this answer)")
    failing_cases: list[str] = Field([], description="case ids or kinds that must fail")
    rejected: bool = Field(False, description="the fill is refused before anything runs")


class Replacement(_Strict):
    old: str = Field(min_length=1)
    new: str


class Mutant(_Strict):
    """A known answer: a fill for the (first) blank, fills for every blank in order, edits applied
    to the reference solution, or a whole file."""

    id: str = Field(pattern=_ID)
    description: str
    fill: str | None = None
    fills: list[str] | None = Field(None, min_length=1)
    edits: list[Replacement] | None = None
    file: str | None = None
    expect: MutantExpectation

    @model_validator(mode="after")
    def _one_source(self) -> Mutant:
        if sum(x is not None for x in (self.fill, self.fills, self.edits, self.file)) != 1:
            raise ValueError(f"mutant {self.id}: give exactly one of fill, fills, edits or file")
        return self
