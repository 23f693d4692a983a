"""Optional second opinion on written answers from a language model (off by default).

Sends the question's rubric and the student's answer to an OpenAI-compatible
`/v1/chat/completions` endpoint named in the settings, and asks for a JSON verdict. The model
never decides a score: its opinion is attached as evidence, and when it disagrees with the
automatic score by a point or more the item goes to a TA (`needs_review`, flag
`model_disagrees`). It has only been tested against a local stand-in for the protocol, not
measured against a real model.
"""
from __future__ import annotations

import json
import logging

import httpx

from service.exercises import Question
from service.messages import render
from service.report import Item

log = logging.getLogger("kernelgrade.model_assist")
DISAGREEMENT_POINTS = 1.0

_SYSTEM = (
    "You grade one written answer of a GPU-programming course against a rubric. Award points only for the causal "
    "chains explained in the answer, not for listed terms; a question in several parts has one chain per part, and "
    "every chain counts. Reply with JSON only: "
    '{"points": <number>, "concepts_found": [<concept ids>], "misconceptions": [<ids>], "rationale": "<one sentence>"}'
)


class ModelAssist:
    def __init__(self, *, base_url: str, model: str, api_key: str = "", timeout_s: float = 20.0,
                 client: httpx.Client | None = None) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = client or httpx.Client(timeout=timeout_s)

    def opinion(self, question: Question, answer: str, max_points: float) -> dict:
        rubric = {
            "question": question.prompt.lesson, "max_points": max_points,  # the lesson's words: one opinion
            "concepts": [{"id": c.id, "label": c.label.lesson} for c in question.concepts],
            # Every part's chain, as the automatic scorer counts them (freetext.py): a model shown only the
            # first part's would disagree with every answer that explains the others.
            "causal_chains": [chain for chain in (question.chain, *question.more_chains) if chain],
            "misconceptions": [{"id": m.id, "label": m.label.lesson} for m in question.misconceptions],
        }
        body = {"model": self.model, "temperature": 0, "response_format": {"type": "json_object"},
                "messages": [{"role": "system", "content": _SYSTEM},
                             {"role": "user", "content": json.dumps({"rubric": rubric, "answer": answer[:8000]},
                                                                    ensure_ascii=False)}]}
        response = self.client.post(self.url, json=body, headers=self.headers)
        response.raise_for_status()
        content = response.json()["choices"][0]["message"]["content"]
        verdict = json.loads(content)
        points = float(verdict["points"])
        if not 0 <= points <= max_points:
            raise ValueError(f"model awarded {points} of {max_points}")
        return {"points": points, "concepts_found": list(verdict.get("concepts_found", []))[:20],
                "misconceptions": list(verdict.get("misconceptions", []))[:20],
                "rationale": str(verdict.get("rationale", ""))[:1000]}

    def annotate(self, item: Item, question: Question, answer: str, *, language: str = "zh") -> Item:
        """The same item, with the model's opinion as evidence and a flag if it disagrees (said in `language`)."""
        if not answer.strip():
            return item
        evidence = dict(item.evidence)
        try:
            opinion = self.opinion(question, answer, item.max_points)
        except Exception as exc:  # noqa: BLE001 - the model is optional: its failure changes nothing
            log.warning("model assist failed: %s", exc)
            evidence["model_opinion"] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            return item.model_copy(update={"evidence": evidence})
        evidence["model_opinion"] = {**opinion, "model": self.model}
        if abs(opinion["points"] - item.points) < DISAGREEMENT_POINTS:
            return item.model_copy(update={"evidence": evidence})
        evidence["flags"] = [*evidence.get("flags", []), "model_disagrees"]
        feedback = item.feedback + "\n" + render("assist.disagrees", language)
        return item.model_copy(update={"evidence": evidence, "status": "needs_review", "feedback": feedback})
