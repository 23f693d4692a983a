"""The one module an exercise's `checks.py` imports: what `diagnose()` receives (`CaseEvidence`) and
returns (`Finding`: a diagnosis id, its message as code + parameters, each case's numbers), the
`Checks` protocol, input drawing, the diagnose skeleton, and evidence helpers shared by exercises.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from service.exercises.spec import CaseSpec, Tolerance
from service.messages import LANGUAGES, Catalogue
from service.report import Diagnosis

__all__ = [
    "ACROSS", "ROW_BLOCK_IGNORED", "STORE_OUT_OF_BOUNDS", "Across", "Arrays", "CaseEvidence", "CaseSpec", "Checks",
    "Classify", "Finding", "Found", "MakesInputs", "Messages", "Numbers", "Say", "Words", "case_numbers", "collect",
    "draw_rows", "int_param", "make_diagnose", "outputs", "render", "report", "row_block_ignored", "say", "say_about",
    "sentinel_breach", "store_out_of_bounds",
]

Arrays = dict[str, np.ndarray]
Numbers = dict[str, Any]  # one case's evidence: ids and numbers, JSON-able
Found = tuple[str, Numbers]  # a diagnosis id and the numbers of the case that shows it


@dataclass
class CaseEvidence:
    case: CaseSpec
    inputs: np.ndarray  # the first argument's valid data, as float64 (for row exercises: rows x cols)
    observed: dict[str, np.ndarray] | None  # None when the case did not return outputs
    expected: dict[str, np.ndarray]
    passed: bool
    arrays: dict[str, np.ndarray] = field(default_factory=dict)  # every input by name, float ones as float64
    # A case that raised: its error text (never evidence by itself: any error reads the same), the
    # guard regions it changed (compared on the trusted side: the only evidence of an out-of-bounds
    # write) and the data of the buffers its entry point allocated (sandbox.contract.CaseRun).
    error: str | None = None
    out_of_bounds: list[dict] = field(default_factory=list)
    allocations: list[dict] = field(default_factory=list)
    # Each output's tolerance as the exercise declares it (`outputs:` in exercise.yaml).
    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)


@dataclass(frozen=True)
class Say:
    """A message of the exercise's catalogue (`messages.yaml`) and its parameters. A parameter may
    itself be a `Say`: a phrase rendered in the same language first."""

    code: str
    params: Mapping[str, Any] = field(default_factory=dict)


def say(code: str, **params: Any) -> Say:
    return Say(code, params)


@dataclass(frozen=True)
class Finding:
    """One diagnosis as checks.py states it: its id, its message, every case's evidence numbers."""

    id: str
    message: Say
    cases: list[Numbers]


@runtime_checkable
class Checks(Protocol):
    """What an exercise's checks.py defines: the float64 reference of every output, and the
    diagnoses of the failed cases. `make_inputs` is optional (`MakesInputs`)."""

    @property
    def reference(self) -> Callable[..., Arrays]: ...

    def diagnose(self, evidence: list[CaseEvidence], /) -> list[Finding]: ...


@runtime_checkable
class MakesInputs(Protocol):
    """A checks.py that draws its own inputs (by argument name) instead of `draw_rows` as `x`."""

    def make_inputs(self, case: CaseSpec, seed: int, /) -> Arrays: ...


# The diagnose skeleton: classify each failed case, gather the numbers under the id they show,
# turn each id's cases into its message.
Classify = Callable[[CaseEvidence], Iterable[Found]]
Words = Callable[[str, list[Numbers]], Say]
Across = Callable[[list[Numbers]], Iterable[Found]]
ACROSS = "_across"  # classify yields a case under this id when its diagnosis depends on the other cases


def say_about(code: str, cases: list[Numbers], example: Numbers | None = None, /, **params: Any) -> Say:
    """The message `code` about `cases`: `{names}` lists their ids, the example case's numbers (the
    first case unless given) and `params` are the other parameters."""
    return Say(code, {"names": [d["case"] for d in cases], **(cases[0] if example is None else example), **params})


def collect(evidence: Iterable[CaseEvidence], classify: Classify, *, with_outputs: bool = True,
            across: Across | None = None, causes: Collection[str] = ()) -> dict[str, list[Numbers]]:
    """Each failed case's findings (of those with outputs, unless `with_outputs` is false), the
    numbers of every case under the id it shows, ids in the order first found. The cases classify
    put under ACROSS are named last, by `across`, which sees them all at once.

    `causes` (opt-in, per exercise): ids that name a mistake. One that `across` gave to every case
    it saw explains them all, so it leads, before the findings of single cases (a write past z is
    what a wrong row stride does on one case, not the mistake): the student reads the cause first.
    Without `causes` the order is as found."""
    evidence = list(evidence)
    findings = _classify_failed(evidence, classify, with_outputs=with_outputs)
    explained = {numbers["case"] for numbers in findings.get(ROW_BLOCK_IGNORED, [])}
    if explained and any(not ev.passed and ev.case.id not in explained for ev in evidence):
        # One row per program predicts every failed case (those with one row per program pass): a
        # failed case it does not explain says the NaN rows came from elsewhere (a read past the
        # input), so the cases are read again without it.
        off = _ROW_BLOCK_OFF.set(True)
        try:
            findings = _classify_failed(evidence, classify, with_outputs=with_outputs)
        finally:
            _ROW_BLOCK_OFF.reset(off)
    pending = findings.pop(ACROSS, [])
    if pending:
        if across is None:
            raise ValueError(f"findings under {ACROSS!r} need an `across` to name them")
        seen: dict[str, set[Any]] = {}
        for key, numbers in across(pending):
            findings.setdefault(key, []).append(numbers)
            seen.setdefault(key, set()).add(numbers.get("case"))
        every = {numbers.get("case") for numbers in pending}
        lead = [key for key, cases in seen.items() if key in causes and cases >= every]
        if lead:  # the same numbers, the cause's id first
            findings = {**{key: findings[key] for key in lead}, **findings}
    return findings


def _classify_failed(evidence: list[CaseEvidence], classify: Classify, *,
                     with_outputs: bool) -> dict[str, list[Numbers]]:
    findings: dict[str, list[Numbers]] = {}
    for ev in evidence:
        if ev.passed or (with_outputs and ev.observed is None):
            continue
        for key, numbers in classify(ev):
            findings.setdefault(key, []).append(numbers)
    return findings


def report(findings: Mapping[str, list[Numbers]], words: Words = say_about) -> list[Finding]:
    """One Finding per id. Its message has the id as code (so messages.yaml lists every diagnosis an
    exercise can report); a phrase inside it is a parameter with a dotted code (`part.at`)."""
    out = []
    for key, cases in findings.items():
        message = words(key, cases)
        if message.code != key:
            raise ValueError(f"the message of diagnosis {key!r} has the code {message.code!r}: it must be the id")
        out.append(Finding(id=key, message=message, cases=cases))
    return out


def make_diagnose(classify: Classify, words: Words = say_about, *, with_outputs: bool = True,
                  across: Across | None = None,
                  causes: Collection[str] = ()) -> Callable[[list[CaseEvidence]], list[Finding]]:
    """A whole `diagnose()` from its exercise-specific parts (cf. GPU MODE's make_match_reference);
    `causes` as in `collect`."""
    def diagnose(evidence: list[CaseEvidence]) -> list[Finding]:
        return report(collect(evidence, classify, with_outputs=with_outputs, across=across, causes=causes), words)
    return diagnose


class Messages:
    """An exercise's catalogue over the kit's shared one (`service/exercises/messages.yaml`)."""

    def __init__(self, own: Catalogue) -> None:
        self._catalogues = (own, _SHARED)

    def render(self, message: Say, lang: str) -> str:
        params = {k: self.render(v, lang) if isinstance(v, Say) else v for k, v in message.params.items()}
        catalogue = next((c for c in self._catalogues if message.code in c), self._catalogues[0])
        return catalogue.render(message.code, lang, **params)

    def check(self, findings: Iterable[Finding]) -> None:
        """Render every finding in every language (raises on an unknown code or a missing parameter)."""
        for finding in findings:
            for lang in LANGUAGES:
                self.render(finding.message, lang)


_SHARED = Catalogue.load(Path(__file__).with_name("messages.yaml"))


def render(findings: list[Finding], messages: Messages, language: str) -> list[Diagnosis]:
    """The findings as the report's diagnoses: the message in `language`, every language in the evidence."""
    out = []
    for f in findings:
        said: dict[str, str] = {lang: messages.render(f.message, lang) for lang in LANGUAGES}
        out.append(Diagnosis(id=f.id, message=said.get(language, said["en"]),
                             evidence={"cases": f.cases, "messages": said}))
    return out


def int_param(case: CaseSpec, name: str) -> int:
    """An integer parameter of the case (`params:` in exercise.yaml, or drawn: `draw.params`)."""
    value = case.params[name]
    if isinstance(value, list):
        raise TypeError(f"case {case.id}: params.{name} is a list, an integer was expected")
    return int(value)


def case_numbers(case: CaseSpec, *, params: tuple[str, ...] = (), kwargs: Mapping[str, int] | None = None) -> Numbers:
    """A finding's first numbers: the case id, the integer `params` named, and the integer keyword
    arguments named in `kwargs` (with their defaults: the entry point's)."""
    numbers: Numbers = {"case": case.id, **{name: int_param(case, name) for name in params}}
    for name, default in (kwargs or {}).items():
        numbers[name] = int(case.kwargs.get(name, default))
    return numbers


def outputs(ev: CaseEvidence, *names: str) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
    """The named outputs as observed (float64, flattened) and as expected; None when the case gave
    no outputs or one of another shape (nothing to read a signature from)."""
    if ev.observed is None:
        return None
    observed = [ev.observed[name].astype(np.float64).reshape(-1) for name in names]
    expected = [ev.expected[name] for name in names]
    if any(o.shape != e.shape for o, e in zip(observed, expected)):
        return None
    return observed, expected


def off_by_tolerances(ev: CaseEvidence, name: str, predicted: np.ndarray, truth: np.ndarray, times: float) -> bool:
    """Whether `predicted` misses `truth` somewhere by `times` the output's declared tolerance or more
    (atol + rtol·|truth|, the comparison's rule): a passed case where a simulated mistake is that far
    off rules the mistake out. False where the case carries no tolerance for `name`."""
    tol = ev.tolerances.get(name)
    if tol is None:
        return False
    return bool(np.any(np.abs(predicted - truth) > times * (tol.atol + tol.rtol * np.abs(truth))))


def draw_rows(case: CaseSpec, seed: int) -> np.ndarray:
    """The case's valid data, float32 (what the kernel sees), shape (rows, cols)."""
    rng = np.random.default_rng(seed)
    data = case.data
    loc = rng.uniform(*data.loc, size=(case.rows, 1))
    scale = rng.uniform(*data.scale, size=(case.rows, 1))
    x = loc + scale * rng.standard_normal((case.rows, case.cols))
    if data.sign == "negative":
        x = -np.abs(x)
    elif data.sign == "positive":
        x = np.abs(x)
    if data.zeros_fraction > 0:
        count = max(1, round(data.zeros_fraction * case.cols))
        for row in x:
            row[rng.choice(case.cols, size=min(count, case.cols), replace=False)] = 0.0
    return x.astype(np.float32)


def sentinel_breach(ev: CaseEvidence, *, data_len: int, total_len: int, sentinel: float) -> Numbers | None:
    """Out-of-bounds evidence for a wrapper that keeps `sentinel` values after its output inside one
    allocated float32 buffer of `total_len` elements (the puzzles' `buf`, output `buf[:data_len]`):
    the sentinel tail of that buffer as the sandbox returned it, compared bit for bit here, or a
    guard region the trusted side found changed. None when neither changed: then the case's error
    was something else (a NameError, a shape error, ...) and no out-of-bounds diagnosis is true."""
    want = np.array([sentinel], dtype=np.float32).view(np.int32)[0]
    for alloc in ev.allocations:
        data = alloc.get("data")
        if alloc.get("dtype") != "float32" or data is None or data.size != total_len:
            continue
        tail = np.asarray(data[data_len:], dtype=np.float32)
        changed = tail.view(np.int32) != want
        if changed.any():
            first = int(np.flatnonzero(changed)[0])
            return {"changed": int(changed.sum()), "first_past_end": first, "value": float(tail[first]),
                    "source": "sentinel"}
    past_end = [b for b in ev.out_of_bounds if b.get("side") == "after" and b.get("kind") == "allocated"]
    if past_end:  # written past the whole buffer: past the sentinel tail too
        guard = past_end[0]
        return {"changed": int(guard.get("changed", 0)), "first_past_end": int(guard.get("distance", 0)),
                "value": guard.get("value"), "source": "guard", "buffer": guard.get("output") or guard.get("buffer")}
    return None


def store_out_of_bounds(ev: CaseEvidence, where: Numbers, *, data_len: int, total_len: int,
                        sentinel: float) -> Iterator[Found]:
    """`store_out_of_bounds` with `where` and the breach's numbers, when `sentinel_breach` finds one."""
    breach = sentinel_breach(ev, data_len=data_len, total_len=total_len, sentinel=sentinel)
    if breach is not None:  # evidence in the bytes, not in the error's text
        yield STORE_OUT_OF_BOUNDS, {**where, **breach}


STORE_OUT_OF_BOUNDS = "store_out_of_bounds"  # what store_out_of_bounds() yields (the words are the exercise's)
ROW_BLOCK_IGNORED = "one_row_per_program"  # its message is the kit's (messages.yaml beside this file)
_ROW_BLOCK_OFF: ContextVar[bool] = ContextVar("row_block_off", default=False)  # collect's second reading


def _to_bfloat16(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to bfloat16 (to nearest, ties to even), as float32."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return np.asarray(rounded, dtype=np.uint64).astype(np.uint32).view(np.float32)


# (dtype, rounding of float32 values to it, significant bits, the smallest spacing: its subnormals')
_HALVES = (("float16", lambda a: a.astype(np.float16).astype(np.float32), 11, 2.0 ** -24),
           ("bfloat16", _to_bfloat16, 8, 2.0 ** -133))


def half_rounded(observed: np.ndarray, expected: np.ndarray) -> Numbers | None:
    """Evidence that an output went through a 16-bit float (a `.to(tl.float16)` before the store): every
    finite observed value is a number of that dtype, each within one of its steps of the right value, while
    the right values are mostly not such numbers (eighth probe batch: lsm8.wrong.fp16_store,
    outer8.wrong.fp16_store). A random float32 value is a float16 one with probability 2^-13: a 1 x 1 case
    can be a coincidence once in 8192, a larger one not (Outer Add names it only where every failed case
    shows it). {"dtype", "bits", "relative"} or None."""
    obs = np.asarray(observed, dtype=np.float64).ravel()
    ref = np.asarray(expected, dtype=np.float64).ravel()
    keep = np.isfinite(obs) & np.isfinite(ref)
    if obs.shape != ref.shape or not keep.any() or not np.all(np.isfinite(obs)):
        return None
    obs, ref = obs[keep], ref[keep]
    o32, r32 = obs.astype(np.float32), ref.astype(np.float32)
    for dtype, rnd, bits, tiny in _HALVES:
        with np.errstate(over="ignore", invalid="ignore"):
            if not np.array_equal(rnd(o32), o32) or np.mean(rnd(r32) == r32) > 0.5:
                continue
        step = np.maximum(2.0 ** (np.floor(np.log2(np.maximum(np.abs(ref), tiny))) - (bits - 1)), tiny)
        if np.all(np.abs(obs - ref) <= 1.01 * step):
            return {"dtype": dtype, "bits": bits, "relative": 2.0 ** -bits}
    return None


def row_block_ignored(correct: np.ndarray, unwritten: np.ndarray, *, rows: int, block: int) -> Numbers | None:
    """Evidence that a kernel handles one row per program and ignores the block of `block` rows
    each program owns: with cdiv(rows, block) programs, exactly the rows one program per row would
    reach (row = pid, or row = pid * block) are right, and every other row was never written.
    `correct` and `unwritten` are per-row booleans from the trusted comparison. Checked across the
    cases by `collect`: a failed case this does not explain withdraws it."""
    if block <= 1 or rows <= 1 or _ROW_BLOCK_OFF.get():
        return None
    programs = -(-rows // block)
    for form, reached in (("row = pid", np.arange(programs)), ("row = pid * B0", np.arange(programs) * block)):
        hit = np.zeros(rows, dtype=bool)
        hit[reached[reached < rows]] = True
        if hit.all():
            continue
        if np.array_equal(correct, hit) and bool(np.all(unwritten[~hit])):
            return {"form": form, "programs": programs, "rows_written": int(hit.sum()),
                    "rows_unwritten": int((~hit).sum()), "first_unwritten": int(np.flatnonzero(~hit)[0])}
    return None
