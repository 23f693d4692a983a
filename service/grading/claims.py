"""The claimed run output against the one we observed (the `unverified_claim` veto).

The lesson asks for the real output of the given check, or an honest "仅静态审查" (static review
only) when no environment was available. The claim is parsed (Chinese and English: pass and fail
words, tracebacks, numbers, shapes, the static-review label) and compared with our own run of the
same program: a claim of success, or printed results with no failure, where our given check failed
is `unverified_claim`, confirmed (we ran it), with both texts side by side. A claimed failure our
run does not reproduce, or a claimed run of code that cannot run here, is suspected (a TA decides).
An honest static review is never a veto; a missing claim is an unmet requirement (passrule.py).
Numbers in a failure are not compared: the check draws torch.randn on the student's device, so a
truthful traceback quotes other values than ours.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass, field
from typing import Literal

from service.grading.freetext import normalise
from service.messages import render
from service.report import Veto

ClaimKind = Literal["missing", "static_review", "pass", "fail", "results", "unclear"]

_STATIC = re.compile(
    r"仅?静态(审查|检查|审阅|分析)|(没有|没|未|无法|不能|没法)\s*(运行|跑)(?!\s*(错|出错|报错|时|过程))|没跑|"
    r"没有\s*(gpu|cuda|显卡|运行环境|环境)|无\s*(gpu|cuda|显卡|运行环境)|"
    r"static (review|check|analysis)|not (been )?run\b|didn'?t run\b|did not run\b|haven'?t run|have not run|"
    r"without running|couldn'?t run|could not run|unable to run|no (gpu|cuda)\b")
# Failure words once their negated forms ("没有报错", "no errors") are taken out.
_NEGATED_FAIL = re.compile(
    r"(没有|没|无|未|不)\s*(任何)?\s*(运行|执行)?\s*(报错|错误|失败|异常|error|assertion)|"
    r"no (errors?|failures?|exceptions?|assertion ?errors?|mismatch(es)?)\b|without (any )?(errors?|failures?)|"
    r"0 (failed|failures|errors)\b|(不|没有?)\s*(抛|报)|mismatched elements:?\s*0\s*/|"
    r"(?<!\w)(err(or)?s?|误差)\s*(?:[:=：]\s*)?(tensor\()?[-+]?\d|"
    r"(max(imum)?|abs(olute)?|rel(ative)?|mean|最大)[\s_]*(?:(?:abs(olute)?|rel(ative)?)[\s_]*)?"
    r"(err(or)?s?|误差)\s*(?:[:=：]\s*)?[-+]?\d")
# (Each run of spaces or underscores above is matched by one repetition only: two adjacent ones
# ('[\s_]*(…)?[\s_]*', '\s*[:=]?\s*') backtracked quadratically, 5.7 s for 'max' and 16 000 '_'.)
_FAIL = re.compile(r"assertionerror|traceback|mismatch|not close|"
                   r"不通过|未通过|没通过|没有通过|失败|报错|出错|错误|异常|不一致|"
                   r"\b\w*error\b|\bfail(ed|s|ure)?\b|exception")
_PASS = re.compile(r"通过|成功|正常|(没有|没|无)\s*(任何)?\s*(运行|执行)?\s*(报错|错误|异常)|no errors?\b|"
                   r"无输出|没有输出|没输出|什么都没(有)?(打印|输出)|没有打印|\bpass(ed|es)?\b|success|"
                   r"\bok\b|no output|nothing (was )?printed|printed nothing|✓|✔")
_SHAPE = re.compile(r"torch\.size\(\[\s*\d+(\s*,\s*\d+)*\s*\]\)|\(\s*\d+\s*,\s*\d+\s*\)|\[\s*\d+\s*,\s*\d+\s*\]|"
                    r"\b\d+\s*[x×]\s*\d+\b")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(\d+\.\d+(e[-+]?\d+)?|\d+e[-+]?\d+)(?![\w.])")
_EXCEPTION = re.compile(r"\b([a-z]+(error|exception))\b")
# A line that is only a printed boolean (print(torch.allclose(...)), print((a == b).all())): results.
# A labelled one ("allclose: True", "mean ok -> True") too.
_BOOLEAN_LINE = re.compile(r"^[ \t]*(?:[^\n]{0,60}?(?:->|=|:|：)[ \t]*)?(?:tensor\()?(true|false)"
                           r"(?:,[ \t]*device=[^)\n]{0,40})?\)?[ \t]*$", re.MULTILINE)
# Python's warnings ("UserWarning: ... will raise an error in a future release") and the line that
# raised them: neither the check's verdict nor its results.
_WARNING_LINE = re.compile(r"^[^\n]*warning[^\n]*$", re.MULTILINE)  # linear: one literal, no nested repeats


@dataclass
class Claim:
    """What a claimed output says."""

    kind: ClaimKind
    numbers: list[str] = field(default_factory=list)
    shapes: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    traceback: bool = False


def parse_claim(claimed_output: str) -> Claim:
    """What `claimed_output` says (a Claim of its own: the caller may change it). A grading reads its
    claim four times (the veto and the pass rule, in each of the report's languages): the last few
    claims read are kept (at most CLAIMS_KEPT, each at most the submission's limit on a text)."""
    claim = _parse_claim(claimed_output)
    return dataclasses.replace(claim, numbers=list(claim.numbers), shapes=list(claim.shapes),
                               exceptions=list(claim.exceptions))


CLAIMS_KEPT = 16


@functools.lru_cache(maxsize=CLAIMS_KEPT)
def _parse_claim(claimed_output: str) -> Claim:
    said = normalise(claimed_output).strip()
    if not said:
        return Claim("missing")
    text = _WARNING_LINE.sub("", said).strip()
    if not text:
        return Claim("results")  # only warnings: the check ran to its end
    shapes = [m.group(0) for m in _SHAPE.finditer(text)][:10]
    unshaped = _SHAPE.sub(" ", text)
    numbers = [m.group(0) for m in _NUMBER.finditer(unshaped)][:20]
    exceptions = sorted({m.group(1) for m in _EXCEPTION.finditer(text)})[:5]
    traceback = "traceback" in text

    def claim(kind: ClaimKind) -> Claim:
        return Claim(kind, numbers=numbers, shapes=shapes, exceptions=exceptions, traceback=traceback)

    if _STATIC.search(text):
        return claim("static_review")
    booleans = {m.group(1) for m in _BOOLEAN_LINE.finditer(text)}
    if traceback or "false" in booleans or _FAIL.search(_NEGATED_FAIL.sub(" ", text)):
        return claim("fail")
    if _PASS.search(text):
        return claim("pass")
    if numbers or shapes or booleans:
        return claim("results")  # printed results, no failure: the check ran to its end
    return claim("unclear")



def unverified_claim(*, claimed_output: str, program_ran: bool, given_status: str | None, real_output: str,
                     not_run_reason: str | None, language: Literal["zh", "en"] = "zh",
                     kernel_bypassed: bool = False) -> Veto | None:
    """The veto, or None. `given_status`: our given check's status, None if it did not run.
    `kernel_bypassed`: our check failed because a call returned without launching the kernel (its
    asserts may well have passed, as the student says), so a claimed pass is for a TA, not confirmed."""
    claim = parse_claim(claimed_output)
    if claim.kind in ("missing", "static_review", "unclear"):
        return None
    evidence = {"claimed_output": claimed_output[:2000], "real_output": real_output[:2000], "given_check": given_status,
                "claim": claim.kind, "claimed_numbers": claim.numbers, "claimed_shapes": claim.shapes,
                "claimed_exceptions": claim.exceptions,
                "side_by_side": [{"label": "claimed" , "text": claimed_output[:2000]},
                                 {"label": f"our run (given check: {given_status or 'not run'})",
                                  "text": real_output[:2000]}]}
    if not program_ran:
        return Veto(rule="unverified_claim", status="suspected", needs_review=True, evidence={
            **evidence, "note": render("claims.note.cannot_run", language, reason=not_run_reason or "—"),
            "note_en": render("claims.note.cannot_run", "en", reason=not_run_reason or "—")})
    if claim.kind in ("pass", "results") and given_status in ("failed", "crashed", "timeout"):
        quoted = ", ".join((claim.numbers or claim.shapes)[:5])
        # the student's page picks the note in the student's language (note_en beside note)
        note, note_en = (render("claims.note.success_contradicted", lang,
                                what=render(f"claims.what.{claim.kind}", lang, numbers=quoted),
                                real=render(f"claims.real.{given_status}", lang))
                         for lang in (language, "en"))
        if kernel_bypassed:
            return Veto(rule="unverified_claim", status="suspected", needs_review=True, evidence={
                **evidence, "note": render("claims.note.kernel_bypassed", language),
                "note_en": render("claims.note.kernel_bypassed", "en")})
        return Veto(rule="unverified_claim", status="confirmed", needs_review=False, evidence={
            **evidence, "note": note, "note_en": note_en})
    if claim.kind == "fail" and given_status == "passed":
        what = ", ".join(claim.exceptions) or ("traceback" if claim.traceback else claimed_output.strip()[:80])
        return Veto(rule="unverified_claim", status="suspected", needs_review=True, evidence={
            **evidence, "note": render("claims.note.failure_not_reproduced", language, what=what),
            "note_en": render("claims.note.failure_not_reproduced", "en", what=what)})
    return None
