"""Blanks in host code next to blanks in a kernel: the kernel's blanks are graded once more with
the lesson's own host code.

A blank outside every `@triton.jit` function is Python in the student's process. Under
`fill_policy: any` nothing restricts it, and even a whitelisted expression there is torch on the
host (`y + x * 2`), so it can compute the outputs itself (`return x.mean(1), x.var(1)`, or fill
a scratch buffer the kernel was meant to fill) and a wrong kernel blank earns every point.
Nothing the sandbox reports about what ran can be trusted, so the trusted side decides by what
it runs: a second program, the template with the student's kernel fills and the reference
solution's host fills, where none of the student's Python runs (a kernel body runs only after it
compiled as Triton: sandbox/gpu_compile.py). A case counts as passed only if it passes in both
programs. A correct submission passes both (the host contract is the template's); one whose host
code did the kernel's work fails the second.
"""
from __future__ import annotations

import ast
import dataclasses
import functools

from sandbox.contract import GivenRun
from service.exercises import Exercise
from service.exercises.blanks import BLANK
from service.grading import syntax
from service.grading.assemble import Program, assemble
from service.grading.extract import Extraction, extract
from service.messages import render
from service.report import CaseReport, CaseTexts, Diagnosis

SPLIT_DIAGNOSIS = "host_split_differs"


def _is_jit(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Decorated with triton.jit (`@triton.jit`, `@triton.jit(...)`, `@jit`)."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
        if name == "jit":
            return True
    return False


@functools.lru_cache(maxsize=64)
def host_blanks(template_src: str) -> tuple[bool, ...]:
    """For each blank of the template, in order: True if it lies outside every @triton.jit function."""
    tree = syntax.parse(template_src)
    kernels = [(f.lineno, f.end_lineno or f.lineno) for f in ast.walk(tree)
               if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_jit(f)]
    spots = sorted((n.lineno, n.col_offset) for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == BLANK)
    return tuple(not any(start <= line <= end for start, end in kernels) for line, _ in spots)


def kernel_alone(exercise: Exercise, extraction: Extraction, program: Program) -> Program | None:
    """The program that grades the student's kernel blanks with the solution's host blanks, or None
    when there is nothing to separate: no host blank or no kernel blank, host fills that are the
    solution's already (the same program), or kernel fills that are (the solution, which passes).
    Whatever the fill policy: a whitelisted expression in host code is torch on the host
    (`y + x * 2`, `x.sum(1) / N`), which can compute an output too."""
    hosts = host_blanks(exercise.template)
    if all(hosts) or not any(hosts):
        return None  # only host code is the student's (then it is the work), or none of it is
    reference = extract(exercise.template, exercise.solution).fill_sources
    student = extraction.fill_sources
    fills = [ref if host else own for host, ref, own in zip(hosts, reference, student)]
    if fills == reference:
        return None  # the kernel fills are the solution's: the kernel-alone program is the solution
    alone = assemble(exercise.template, fills)
    return None if alone.source == program.source else alone


def kernel_ablated(exercise: Exercise, extraction: Extraction) -> Program | None:
    """The student's own program with every kernel expression fill multiplied by zero: what their
    host code computes when the kernel contributes nothing. None when a kernel blank holds
    statements (nothing to multiply) or there is no host blank beside a kernel blank.

    Run only when the program passed every case and the kernel-alone run failed some: either the
    host code did the kernel's work (then it still passes here: the kernel was not needed), or the
    student split the work between kernel and host otherwise than the solution, consistently (the
    kernel computes Σx²/N, the host no longer divides). The second fails here (the host code uses
    what the kernel computed) and goes to a TA instead of failing (split_differs)."""
    hosts = host_blanks(exercise.template)
    if all(hosts) or not any(hosts):
        return None
    fills: list[str | None] = []
    for host, fill, source in zip(hosts, extraction.fills, extraction.fill_sources):
        if host:
            fills.append(source)
        elif isinstance(fill, ast.expr):
            fills.append(f"({source}) * 0")
        else:
            return None
    return assemble(exercise.template, fills)


def split_differs(failed: dict[str, CaseReport], ablated: list[CaseReport]) -> list[str]:
    """The ids of `failed` (failed_alone_ids) that also fail in the kernel-ablated run: the host code
    needed the kernel's contribution there, so it did not compute the result in the kernel's place."""
    by_id = {c.id: c for c in ablated}
    return [case_id for case_id in failed if case_id in by_id and not by_id[case_id].passed]


def split_diagnosis(disputed: list[str], failed: dict[str, CaseReport], language: str) -> Diagnosis | None:
    """The diagnosis a TA reviews: these cases pass with the student's kernel and host code together,
    fail with the solution's host code, and need the kernel's contribution (split_differs)."""
    if not disputed:
        return None
    named = ", ".join(disputed[:4]) + (f" (+{len(disputed) - 4})" if len(disputed) > 4 else "")
    messages = {lang: render("host_blanks.split_differs", lang, cases=named,
                             detail=failed_alone_detail(failed[disputed[0]], lang)) for lang in ("zh", "en")}
    return Diagnosis(id=SPLIT_DIAGNOSIS, message=messages.get(language, messages["en"]),
                     evidence={"cases": [{"case": case_id} for case_id in disputed], "messages": messages})


def failed_alone_ids(cases: list[CaseReport], alone: list[CaseReport]) -> dict[str, CaseReport]:
    """The cases (the given check among them) that passed in the program but not in the kernel-alone
    run, with their kernel-alone report."""
    by_id = {c.id: c for c in alone}
    return {c.id: by_id[c.id] for c in cases if c.passed and c.id in by_id and not by_id[c.id].passed}


def merge(cases: list[CaseReport], failed: dict[str, CaseReport], language: str) -> list[CaseReport]:
    """`cases` with every case of `failed` (failed_alone_ids) failed, saying so and what went wrong
    in the kernel-alone run."""
    return [c.model_copy(update={"passed": False, "error": failed_alone(failed[c.id], language)})
            if c.id in failed else c for c in cases]


def merge_given(given: GivenRun | None, alone: list[CaseReport], language: str) -> tuple[GivenRun | None, bool]:
    """The program's verified given check, failed if it passed but the kernel-alone run's did not;
    and whether that happened."""
    other = next((c for c in alone if c.kind == "given"), None)
    if given is None or given.status != "passed" or other is None or other.passed:
        return given, False
    output = (given.output + "\n" if given.output else "") + failed_alone(other, language)
    return dataclasses.replace(given, status="failed", output=output), True


def said_given(output: str, failed: bool, alone: list[CaseReport], language: str) -> str:
    """The given check's output in another language, with merge_given's reason said there too."""
    other = next((c for c in alone if c.kind == "given"), None)
    if not failed or other is None:
        return output
    return (output + "\n" if output else "") + failed_alone(other, language)


def said_cases(texts: dict[str, CaseTexts], failed: dict[str, CaseReport], language: str) -> dict[str, CaseTexts]:
    """case_texts in another language, with merge's reason said there for each case it failed
    (the given check's text comes from said_given)."""
    return {case_id: t.model_copy(update={"error": failed_alone(failed[case_id], language)})
            if case_id in failed and failed[case_id].kind != "given" else t for case_id, t in texts.items()}


def failed_alone(alone: CaseReport, language: str) -> str:
    """The student's message for a case that passed only with their own host code."""
    return render("host_blanks.kernel_alone_failed", language, detail=failed_alone_detail(alone, language))


def failed_alone_detail(alone: CaseReport, language: str) -> str:
    """What went wrong in the kernel-alone run of a case, in one line."""
    if alone.first_mismatch is not None:
        m = alone.first_mismatch
        observed = "NaN/inf" if m.observed is None else f"{m.observed:.6g}"
        detail = render("host_blanks.mismatch", language, output=m.output, index=str(m.index), observed=observed,
                        expected=f"{m.expected:.6g}")
    else:
        # Only the last line (the exception, or the trusted side's reason): the traceback's frames
        # quote the kernel-alone program's source, whose host lines are the reference solution's.
        lines = [line.strip() for line in (alone.error or "").splitlines() if line.strip()]
        detail = lines[-1][:300] if lines else "error"
    return detail
