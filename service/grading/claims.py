"""The `unverified_claim` veto: the run output the student claims against the one we observed.

The lesson asks for the real run output, or an honest "仅静态审查" (static review only) when no
GPU was available. A claim that the check passed (or one quoting numbers) where the real given
check failed, or a claimed run of code that cannot have run, is a suspected veto for a TA; an
honest static review never is.
"""
from __future__ import annotations

import re

from service.grading.freetext import normalise
from service.report import Veto

_STATIC = re.compile(r"仅?静态(审查|检查|审阅)|没有?运行|未运行|没跑|无法运行|没有\s*(gpu|cuda|显卡)|static (review|check)|"
                     r"not run|didn'?t run|did not run|haven'?t run|without running|couldn'?t run|no gpu")
_PASS = re.compile(r"通过|全部通过|都通过|成功|没有报错|无报错|没报错|无输出|没有输出|正常|passed|pass(es)?\b|all (tests )?pass|"
                   r"no (error|output|assertion)|success|\bok\b|✓|✔")
_FAIL = re.compile(r"assertionerror|traceback|mismatch|失败|报错|不通过|error\b|failed")
_NUMBER = re.compile(r"\d+\.\d+(?:e[-+]?\d+)?")


def unverified_claim(*, claimed_output: str, program_ran: bool, given_status: str | None, real_output: str,
                     not_run_reason: str | None) -> Veto | None:
    text = normalise(claimed_output).strip()
    if not text or _STATIC.search(text):
        return None
    claims_pass = bool(_PASS.search(text)) and not _FAIL.search(text)
    numbers = _NUMBER.findall(text)
    evidence = {"claimed_output": claimed_output[:2000], "real_output": real_output[:2000], "given_check": given_status}
    if not program_ran:
        return Veto(rule="unverified_claim", status="suspected", needs_review=True, evidence={
            **evidence, "note": f"提交声称有运行输出，但这份代码无法运行：{not_run_reason}"})
    if given_status != "passed" and (claims_pass or numbers):
        what = "声称给定检查通过" if claims_pass else f"引用了数值（{', '.join(numbers[:5])}）"
        return Veto(rule="unverified_claim", status="suspected", needs_review=True, evidence={
            **evidence, "note": f"提交{what}，但实际运行给定检查{'失败' if given_status == 'failed' else '没有完成'}：把未运行的结果说成实测？由助教确认。"})
    return None
