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

from service.grading.folding import normalise
from service.messages import render
from service.report import Veto

ClaimKind = Literal["missing", "static_review", "pass", "fail", "results", "unclear"]

# Said outright: the check was not run (the lesson's "仅静态审查"), whatever else the text says.
_STATIC = re.compile(
    r"仅?静态(审查|检查|审阅|分析)|(没有|没|未|无法|不能|没法|没条件)\s*+(运行|跑|执行)(?!\s*+(错|出错|报错|时|过程))|没跑|"
    r"static (review|check|analysis)|not (been )?(run|executed)\b|didn'?t run\b|did not run\b|haven'?t run|"
    r"have not run|without running|couldn'?t run|could not run|unable to run|never ran\b")
# No device to run on: a static review unless the text shows a run somewhere else (_RAN).
_NO_DEVICE = re.compile(
    r"(没有|没|无)\s*+(可用的?)?\s*+(gpu|cuda|显卡|n\s*+卡|英伟达|运行环境|环境)|"
    r"\bno (access to )?(an? )?(gpu|cuda|nvidia)\b|"
    r"(don'?t|do not|didn'?t|did not) have (access to )?(an? |any )?(gpu|cuda|nvidia)\b")
# Signs of a run: the interpreter, a hosted notebook, "I ran it", an output quoted.
_RAN = re.compile(r"triton_interpret|解释器|colab|kaggle|跑了|运行了|执行了|跑的|输出[:：]|output[:：]|"
                  r"\b(?:interpret(?:er|ed)?|i ran|ran (?:it|the|on|with)|executed)\b")
# Said to have failed no step: the negation (zh, en) of a failure word, a counted zero, an error
# metric with its number. Taken out before the failure words are looked for; the first part
# (no error, no assertion fired, nothing wrong) is itself a claim of success.
_NO_FAILURE = (
    r"(没有|没|无|未|不)\s*+(任何)?\s*+(运行|执行)?\s*+(触发|抛出|抛|出现|发生|引发|产生|遇到|报)?\s*+(任何)?\s*+"
    r"(报错|错误|失败|异常|问题|[a-z]*error|assertion|assert|mismatch)|"
    r"(断言|assert(ion)?s?|assert_close)\s*+(都|全都|全)?\s*+(没有|没|未)\s*+(触发|报错?|失败|抛)|"
    r"(报错|错误|异常|失败|问题|输出|打印)\s*+[:：]?\s*+(没有|无)(?!\s*+(通过|成功|正确|一致))|"
    r"\b(errors?|failures?|exceptions?|output)\s*+[:=]\s*+(none|0)(?![\w.])|"
    r"(不|没有?)\s*+(抛|报)|"
    r"no ([a-z]*error|failures?|exceptions?|assertion ?errors?|assertions? (fired|failed|triggered|tripped)|"
    r"mismatch(es)?|problems?|issues?)\b|"
    r"without (any |an? )?([a-z]*errors?|failures?|exceptions?|problems?)|"
    r"(didn'?t|did not|does not|doesn'?t|never) (raise|throw|fail|trigger|error)|nothing (is |was )?wrong|"
    r"(none|nothing) (of them )?failed")
_NEGATED_FAIL = re.compile(
    _NO_FAILURE + r"|0 (failed|failures|errors)\b|mismatched elements:?\s*0\s*/|"
    r"(?<!\w)(err(or)?s?|误差)\s*(?:[:=：]\s*)?(tensor\()?[-+]?\d|"
    r"(max(imum)?|abs(olute)?|rel(ative)?|mean|最大)[\s_]*(?:(?:abs(olute)?|rel(ative)?)[\s_]*)?"
    r"(err(or)?s?|误差)\s*(?:[:=：]\s*)?[-+]?\d")
# (Each run of spaces or underscores above is matched by one repetition only: two adjacent ones
# ('[\s_]*(…)?[\s_]*', '\s*+[:=]?\s*+') backtracked quadratically, 5.7 s for 'max' and 16 000 '_'.)
# A failure said outright, or through the words of success (one pattern, one search).
_FAIL = re.compile(
    r"assertionerror|traceback|mismatch|not close|"
    r"不通过|未通过|没通过|没有通过|没过|失败|报错|出错|错误|异常|不一致|不一样|不相同|不正确|不对|"
    r"不匹配|不相符|不符|不吻合|有问题|有误|错了|结果错|"
    r"\b(?:\w*error|fail(?:ed|s|ure)?|wrong)\b|exception|incorrect|"
    r"(doesn'?t|does not|didn'?t|did not|don'?t|do not) (match|agree|pass|work)|"
    r"\bnot (match|correct|the same)|"
    r"[❌✗✘]|"
    # Through the words of success: negated or partial ("不太一致", "不完全正确", "isn't correct",
    # "doesn't quite match", "部分通过", "only the mean matched"), a clause that ends on its negation
    # ("第一个通过了，第二个没有", "(4,128) didn't"), and crash slang ("跑崩了", "挂了").
    r"(不|没|未|并非|并不)[太很完全是够大都全有\s]{0,3}(通过|成功|正常|正确|一致|一样|相同|吻合|相符|匹配|对)|"
    r"部分(通过|正确|一致|成功)|一半|只有[^，,。.;；\n]{0,12}(通过|正确|一致|对)|"
    r"(没有?|不行|挂了|崩了|炸了|跪了|崩溃)(?=\s*+(?:[，,。.;；!！]|$))|挂了|崩了|炸了|崩溃|有\s*+bug|"
    r"偏大|偏小|差很多|差了很多|对不上|"
    r"(?:\bnot|n't|\bnever)\s++(?:(?:quite|exactly|all|fully|entirely|really|the)\s++)?"
    r"(?:right|correct|match\w*|pass\w*|equal|ok|working|work|same|close)\b|"
    r"\b(?:partial(?:ly)?|partly)\b|\bonly (?:the |one |some |half )?\w+ (?:passed|matched|matches|worked)\b|"
    r"\bhalf (?:of )?(?:the )?\w+ passed\b|\bsome (?:of the )?\w+ failed\b|"
    r"(?:n't|\bnot)(?=\s*+(?:[,.;!]|$))|\boff by\b|\btoo (?:large|big|small|high|low)\b|\bcrash(?:ed|es)?\b")
_PASS = re.compile(_NO_FAILURE + r"|通过|成功|正常|过了|全过|都过|跑通|正确|一致|一样|相同|吻合|相符|匹配|"
                   r"符合预期|无误|"
                   r"对了|是对的|都对|全对|结果对|"
                   r"无输出|(没有|没)\s*+(任何)?\s*+输出|什么都没(有)?(打印|输出)|没有打印|success|no output|"
                   r"nothing (was )?printed|printed nothing|all good|looks (good|right|fine|correct)|as expected|"
                   r"\b(?:pass(?:ed|es)?|ok(?:ay)?|works?|working|correct(?:ly)?|match(?:es|ed)?|agree[sd]?|fine|"
                   r"identical|same as)\b|[✓✔✅☑]")
# What would happen, not what did: a condition or a prediction ("如果不加 mask 会报错", "otherwise
# it would fail") and a question ("对不对", "是否一致") are taken out before the claim is read. Bounded: linear.
_CONDITIONAL = re.compile(r"(如果|要是|假如|假设|若是|倘若|否则|不然|万一)[^，,。.;；！!？?\n]{0,40}|"
                          r"会[^，,。.;；！!？?\n]{0,12}|\b(?:would|will|could)\b[^,.;!?\n]{0,40}|"
                          r"\b(if|otherwise|unless|else)\b[^,.;!?\n]{0,60}|"
                          r"对不对|对不上?吗|正不正确|是否(正确|一致|通过|对)|一不一致|能不能通过|过没过")
# A prediction, not a report ("应该能通过", "should pass"): no claim of success to hold the run to.
_HEDGE = re.compile(r"应该|应当|大概|可能|估计|也许|不确定|不知道|猜|预计|预期|理论上|"
                    r"\b(?:should|probably|might|maybe|i think|i guess|not sure|expect(?:ed)? to|presumably|"
                    r"hopefully|in theory)\b")
_SHAPE = re.compile(r"torch\.size\(\[\s*\d+(\s*,\s*\d+)*\s*\]\)|\(\s*\d+\s*,\s*\d+\s*\)|\[\s*\d+\s*,\s*\d+\s*\]|"
                    r"\b\d+\s*[x×]\s*\d+\b")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(\d+\.\d+(e[-+]?\d+)?|\d+e[-+]?\d+)(?![\w.])")
_EXCEPTION = re.compile(r"\b([a-z]+(error|exception))\b")
# A line that is only a printed boolean (print(torch.allclose(...)), print((a == b).all())): results.
# A labelled one ("allclose: True", "mean ok -> True") too.
_BOOLEAN_LINE = re.compile(r"^[ \t]*(?:[^\n]{0,60}?(?:->|=|:|：)[ \t]*)?(?:tensor\()?(true|false)"
                           r"(?:,[ \t]*device=[^)\n]{0,40})?\)?[ \t]*$", re.MULTILINE)
# A boolean said in a sentence: "allclose 返回 True", "both checks returned True".
_BOOLEAN_SAID = re.compile(r"(返回|返回值|结果[为是]|都是|得到|打印出?|输出|"
                           r"returns?|returned|gives?|gave|printed|prints)"
                           r"\s*+(了)?\s*+[:：]?\s*+(tensor\()?(true|false)\b")
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

    text = _CONDITIONAL.sub(" ", text)
    if _STATIC.search(text) or (_NO_DEVICE.search(text) and not _RAN.search(text)):
        return claim("static_review")
    booleans = {m.group(1) for m in _BOOLEAN_LINE.finditer(text)} | {m.group(4) for m in _BOOLEAN_SAID.finditer(text)}
    unnegated = _NEGATED_FAIL.sub(" ", text)
    if traceback or "false" in booleans or _FAIL.search(unnegated):
        return claim("fail")
    if _HEDGE.search(text) and not (numbers or shapes or booleans):
        return claim("unclear")  # what it would do, not what it did
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
        what = ", ".join(_as_written(e, claimed_output) for e in claim.exceptions) or (
            "Traceback" if claim.traceback else claimed_output.strip()[:80])
        return Veto(rule="unverified_claim", status="suspected", needs_review=True, evidence={
            **evidence, "note": render("claims.note.failure_not_reproduced", language, what=what),
            "note_en": render("claims.note.failure_not_reproduced", "en", what=what)})
    return None


def _as_written(found: str, claimed_output: str) -> str:
    """`found` (read from the normalised, lower-cased claim: `assertionerror`) as the student wrote it
    (`AssertionError`), for the note they read; as found where the claim does not hold it verbatim."""
    m = re.search(rf"\b{re.escape(found)}\b", claimed_output, re.IGNORECASE)
    return m.group(0) if m else found
