"""The sandbox's codes in words: a run's `Said` accounts and «kg:…» marks, rendered in the report's language.

The runner and the code that runs in the sandbox write no prose (sandbox/contract.py `Said`,
sandbox/gpu_compile.py `mark`); this is where the trusted side turns them into `error`/`output` text,
once per run, before anything reads those fields (`render_run`)."""
from __future__ import annotations

import re

from sandbox.contract import RunResult, Said, SpeedRun
from sandbox.gpu_compile import (
    COMPILER_CRASH_ASM_CODE,
    COMPILER_CRASH_CODE,
    CONSTEXPR_ASSIGNED_CODE,
    GPU_ONLY_ASM_CODE,
    INTERPRETER_ONLY_CODE,
    MARK_CLOSE,
    MARK_OPEN,
    MARK_SEP,
    NEEDS_ALLOCATOR_CODE,
    NO_LAUNCH_CODE,
    PREFIX_CODE,
    PYTHON_ATTRIBUTE_CODE,
    PYTHON_CALL_CODE,
)
from service.messages import render, service_catalogue

# The only codes text written inside the sandbox may name: a mark naming another is left as written.
INLINE_CODES = frozenset({PREFIX_CODE, PYTHON_CALL_CODE, PYTHON_ATTRIBUTE_CODE, INTERPRETER_ONLY_CODE, NO_LAUNCH_CODE,
                          COMPILER_CRASH_CODE, COMPILER_CRASH_ASM_CODE, GPU_ONLY_ASM_CODE, CONSTEXPR_ASSIGNED_CODE,
                          NEEDS_ALLOCATOR_CODE})
_MARK = re.compile(re.escape(MARK_OPEN) + r"([a-z_.]{1,40})"
                   + r"((?:" + re.escape(MARK_SEP) + r"[a-z_]{1,20}=[^«»|\n]{0,200}){0,4})" + re.escape(MARK_CLOSE))


# Marks said in words per text. The sandbox writes one or two (a compile error's, and a refused call's inside
# it); any text from the sandbox can hold more (student code writes them too), and each reads up to 17 times
# its length, so without a cap an error cut at 20 000 characters became 336 000 (test_tampering.py).
MAX_EXPANDED_MARKS = 8


def expand_marks(text: str, language: str) -> str:
    """`text` with the first MAX_EXPANDED_MARKS marks of a known inline code (and exactly its parameters)
    said in `language`; any further mark stays as it was written (a text grows by a few KB at most)."""
    expanded = 0

    def said(match: re.Match[str]) -> str:
        nonlocal expanded
        code = match.group(1)
        params = dict(part.split("=", 1) for part in match.group(2).split(MARK_SEP)[1:])
        if code not in INLINE_CODES or set(params) != service_catalogue().parameters(code):
            return match.group(0)
        if expanded >= MAX_EXPANDED_MARKS:
            return match.group(0)
        expanded += 1
        return render(code, language, **params)
    return _MARK.sub(said, text) if MARK_OPEN in text else text



# A launch the gate refused because its kernel compiled with inline asm (gpu_compile.gpu_only_asm_message): the
# exception's line is the mark alone. A mark inside other text (a static_assert's message in a compile error, an
# exception a host fill raises) is not one: it cannot make a grading not_gradable.
_GPU_ONLY_ASM_LINE = re.compile(r"(?:[A-Za-z_][\w.]*\.)?GPUCompileError: " + re.escape(MARK_OPEN + GPU_ONLY_ASM_CODE)
                                + re.escape(MARK_SEP) + r"target=[^«»|\n]{1,40}" + re.escape(MARK_CLOSE))


def gpu_only_shown(result: RunResult) -> bool:
    """A case or the given check of `result` (rendered or not) ended on a launch the gate refused because the
    kernel compiled with inline asm, which only a GPU runs: the harness says so in the phase's frame (`gpu_only`,
    from the gate's own exception), and its last line, as the sandbox wrote it, is that refusal. The words alone
    are not enough: a kernel writes them too (a tl.static_print of the line, or a tl.static_assert whose message
    ends with it, made a wrong kernel not_gradable, "not an attempt", on the interpreter)."""
    texts = [case.raw_error if case.raw_error is not None else case.error for case in result.cases
             if case.said is None and case.gpu_only]
    given = result.given
    if given is not None and given.said is None and given.gpu_only:
        texts.append(given.raw_output if given.raw_output is not None else given.output)
    for text in texts:
        lines = (text or "").strip().splitlines()
        if lines and _GPU_ONLY_ASM_LINE.fullmatch(lines[-1].strip()):
            return True
    return False


def say(said: Said, language: str) -> str:
    """The runner's account in words (sandbox text inside its parameters has its marks said too)."""
    return expand_marks(render(said.code, language, **said.params), language)


def render_run(result: RunResult, language: str) -> RunResult:
    """Fill each phase's `error`/`output` from its code, in `language`; returns `result` (changed in place)."""
    for case in result.cases:
        if case.said is not None:
            case.error = say(case.said, language)
        elif case.error:
            case.raw_error, case.error = case.error, expand_marks(case.error, language)
    if result.given is not None:
        given = result.given
        if given.said is not None:
            given.output = say(given.said, language)
        else:
            given.raw_output, given.output = given.output, expand_marks(given.output, language)
    if result.speed is not None:
        render_speed(result.speed, language)
    return result


def render_speed(speed: SpeedRun, language: str) -> SpeedRun:
    """The speed phase's `error` from its code, in `language` (also for a phase collected after the run)."""
    if speed.said is not None:
        speed.error = say(speed.said, language)
    elif speed.error:
        speed.error = expand_marks(speed.error, language)
    return speed
