"""Student-facing text of the grade exports (Gradescope, PrairieLearn, the gradebook), in Chinese and English.

Kept as codes with parameters so that the service's message catalogue can take them over whole."""
from __future__ import annotations

from typing import Literal

Language = Literal["zh", "en"]

MESSAGES: dict[str, dict[str, str]] = {
    "score_line": {"zh": "得分 {total:g}/{max:g}（及格线 {threshold:g}）",
                   "en": "Score {total:g}/{max:g} (pass line {threshold:g})"},
    "exported_line": {"zh": "计入成绩的分数：{points:g}/{max:g}",
                      "en": "Score that counts: {points:g}/{max:g}"},
    "pending": {"zh": "暂定成绩：等待助教复核（{reasons}）。助教决定后成绩会更新，请以反馈页为准。",
                "en": "Provisional: waiting for a TA ({reasons}). The grade is updated when a TA decides; "
                      "your feedback page always shows the current result."},
    "pending_item": {"zh": "（待助教复核）", "en": " (pending TA review)"},
    "veto_confirmed_capped": {"zh": "否决规则 {rule} 已由助教确认：这次提交不能及格，计入的分数封顶为 {cap:g}（原始得分 {total:g}）。",
                              "en": "Veto {rule} was confirmed by a TA: this submission cannot pass, so the score "
                                    "that counts is capped at {cap:g} (raw score {total:g})."},
    "veto_confirmed_zero": {"zh": "否决规则 {rule} 已由助教确认：按课程政策，这次提交计 0 分（原始得分 {total:g}）。",
                            "en": "Veto {rule} was confirmed by a TA: under the course's policy this submission "
                                  "counts as 0 (raw score {total:g})."},
    "veto_confirmed": {"zh": "否决规则 {rule} 已确认：这次提交不能及格。",
                       "en": "Veto {rule} is confirmed: this submission cannot pass."},
    "veto_suspected_capped": {"zh": "疑似触发否决规则 {rule}，等待助教复核；在此之前计入的分数封顶为 {cap:g}（原始得分 {total:g}）。",
                              "en": "Veto {rule} is suspected and waits for a TA; until then the score that counts "
                                    "is capped at {cap:g} (raw score {total:g})."},
    "veto_suspected": {"zh": "疑似触发否决规则 {rule}，等待助教复核。",
                       "en": "Veto {rule} is suspected and waits for a TA."},
    "requirement_capped": {"zh": "未满足通过要求 {requirement}：计入的分数封顶为 {cap:g}（原始得分 {total:g}）。",
                           "en": "The pass requirement {requirement} is not met: the score that counts is capped "
                                 "at {cap:g} (raw score {total:g})."},
    "requirement_unmet": {"zh": "未满足通过要求 {requirement}。", "en": "The pass requirement {requirement} is not met."},
    "not_passed_capped": {"zh": "未通过：计入的分数封顶为 {cap:g}（原始得分 {total:g}）。",
                          "en": "Not passed: the score that counts is capped at {cap:g} (raw score {total:g})."},
    "not_gradable": {"zh": "kernelgrade 未能评分这次提交（这是我们的故障，不是你的问题）：它不计分，也不算一次尝试。",
                     "en": "kernelgrade could not grade this submission (our failure, not yours): it earns no "
                           "score and costs no attempt."},
    "not_gradable_test": {"zh": "未评分（评分服务故障）", "en": "Not graded (grading service failure)"},
    "veto_test": {"zh": "否决规则 {rule}（{status}）", "en": "Veto {rule} ({status})"},
    "requirement_test": {"zh": "通过要求 {requirement}", "en": "Pass requirement {requirement}"},
    "feedback_link": {"zh": "完整反馈：{url}", "en": "Full feedback: {url}"},
}

STATUS_WORDS: dict[str, dict[str, str]] = {
    "confirmed": {"zh": "已确认", "en": "confirmed"},
    "suspected": {"zh": "待复核", "en": "suspected"},
    "dismissed": {"zh": "已驳回", "en": "dismissed"},
}


def say(code: str, language: Language, **params: object) -> str:
    text = MESSAGES[code][language if language in ("zh", "en") else "zh"]
    return text.format(**params)


def status_word(status: str, language: Language) -> str:
    return STATUS_WORDS.get(status, {}).get(language, status)
