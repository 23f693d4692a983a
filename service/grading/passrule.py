"""Step 6b: the exercise's pass rule, requirement by requirement (docs/grading.md, "The pass rule").

Each exercise declares in `pass_rule:` what its lesson says passing needs; the report lists every
requirement met or not with its evidence, and `score.passed` is their conjunction. The total and
"no blocking veto" are always requirements; an exercise without `pass_rule:` has only those two.
"""
from __future__ import annotations

import math
import re
from typing import Any, Literal

from service.exercises.spec import NamedIdea, PassRuleSpec
from service.messages import render
from service.report import Item, Requirement, Veto, points_total

Language = Literal["zh", "en"]

_STATUS = ("failed", "crashed", "timeout", "skipped")  # given-check statuses with words (passrule.status.*)


def _say(code: str, language: Language, **params: object) -> str:
    return render(f"passrule.{code}", language, **params)


def _title(kind: str, language: Language, **params: object) -> str:
    return render(f"passrule.title.{kind}", language, **params)


def _label(entry: dict[str, Any], language: Language) -> str:
    """A link's or a misconception's label from an item's evidence (service/grading/freetext.py), in the
    report's language: `label_en` in an English report (a report written before it had one: `label`)."""
    return str((entry.get("label_en") if language == "en" else None) or entry.get("label", ""))


def _clip(text: str, limit: int = 300) -> str:
    text = text.replace("\x00", "").strip()
    return text if len(text) <= limit else text[:limit] + "…"


def given_check_requirement(*, status: str, output: str, not_run_reason: str | None,
                            language: Language) -> Requirement:
    tail = output.replace("\x00", "").strip()
    evidence: dict[str, Any] = {"status": status, "output": tail if len(tail) <= 2000 else "…" + tail[-2000:]}
    if status == "passed":
        message = _say("given_check.passed", language)
    elif status == "not_run":
        message = _say("given_check.not_run", language, reason=not_run_reason or "—")
    else:
        lines = [line.strip() for line in tail.splitlines() if line.strip()]
        raised = [line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", line)]
        what = raised[-1] if raised else (lines[-1] if lines else status)
        if raised and lines[-1] != what:  # what the error said last: which call, shape and output was wrong
            what = f"{_clip(what, 200)}{render('passrule.separator', language)}{_clip(lines[-1], 300)}"
        said = render(f"passrule.status.{status}", language) if status in _STATUS else status
        message = _say("given_check.failed", language, status=said, output=_clip(what, 520))
    return Requirement(id="given_check", met=status == "passed", title=_title("given_check", language),
                       message=message, evidence=evidence)


def run_output_requirement(*, claim_kind: str, claimed_output: str, language: Language) -> Requirement:
    """`claim_kind` from service/grading/claims.py: missing, static_review, or what it claims."""
    code = {"missing": "run_output.missing", "static_review": "run_output.static_review",
            # words about a run ("好像没问题", "should pass") that show no output and no verdict: met, as
            # before, but not said to be a run output
            "unclear": "run_output.unclear"}.get(claim_kind, "run_output.stated")
    return Requirement(id="run_output", met=claim_kind != "missing", title=_title("run_output", language),
                       message=_say(code, language, quote=_clip(claimed_output, 80)),
                       evidence={"claim": claim_kind, "claimed_output": _clip(claimed_output, 2000)})


def chain_requirement(item: Item | None, *, question_id: str, share: float, language: Language) -> Requirement:
    """Met when the answer states enough links of the question's chain in its own words, with no
    misconception and no keyword list; after a TA decision on the item, when the TA gave at least half."""
    title = _title("causal_chain", language, question=question_id.upper())
    rid = f"causal_chain.{question_id}"
    if item is None:
        return Requirement(id=rid, met=False, title=title, message=_say("causal_chain.short", language, links=0,
                           total=0, needed=1, missing="—"), evidence={"item": question_id})
    decision = item.evidence.get("ta_decision")
    if decision is not None:
        met = item.points >= item.max_points / 2
        return Requirement(id=rid, met=met, title=title,
                           message=_say("causal_chain.ta", language, points=item.points, max=item.max_points),
                           evidence={"item": item.id, "ta_decision": True, "points": item.points})
    if item.evidence.get("kind") in ("empty", "off_topic"):  # no chain to count: never "0 of 0, met"
        return Requirement(id=rid, met=False, title=title, message=_say("causal_chain.unanswered", language),
                           evidence={"item": item.id, "kind": item.evidence.get("kind")})
    # The links the points counted, and those told in prose in another order (freetext._loose_link).
    # Counted only for an answer the scorer gives at least half its points (a TA's own bar, above): a
    # partial answer told loosely still falls short.
    loose = (item.evidence.get("loose_links") or []) if item.points >= item.max_points / 2 else []
    told_loosely = {(link.get("from"), link.get("to")) for link in loose}
    links = [*(item.evidence.get("links") or []), *loose]
    missing = [link for link in item.evidence.get("missing_links") or []
               if (link.get("from"), link.get("to")) not in told_loosely]
    total = len(links) + len(missing)
    needed = max(1, math.ceil(total * share - 1e-9)) if total else 0
    flags = item.evidence.get("flags") or []
    wrong = item.evidence.get("misconceptions") or []
    missing_labels = [_label(link, language) for link in missing][:8]
    evidence = {"item": item.id, "links": [link.get("quote", "") for link in links][:8],
                "missing_links": missing_labels, "needed": needed, "flags": flags}
    if wrong:
        labels = render("passrule.separator", language).join(_label(w, language) for w in wrong)
        return Requirement(id=rid, met=False, title=title, message=_say("causal_chain.misconception", language,
                           labels=labels),
                           evidence={**evidence, "misconceptions": [w.get("misconception") for w in wrong]})
    if "keyword_stuffing" in flags:
        return Requirement(id=rid, met=False, title=title, message=_say("causal_chain.stuffing", language),
                           evidence=evidence)
    met = len(links) >= needed
    code = "causal_chain.met" if met else "causal_chain.short"
    sep = render("passrule.separator", language)
    return Requirement(id=rid, met=met, title=title, evidence=evidence,
                       message=_say(code, language, links=len(links), total=total, needed=needed,
                                    missing=sep.join(missing_labels) or "—"))


# Why a candidate sentence fell short, the nearest miss first: it names one side or the condition only.
_WHY_ORDER = ("no_cost", "no_gain", "no_effect", "one_sided", "misconception", "stuffing", "negated")


def named_requirement(kind: str, idea: NamedIdea, *, items: list[Item], written: str,
                      language: Language) -> Requirement:
    """Met when a sentence of the written text (answers and explanation) names the idea: one of its
    patterns matches it, or it holds the quote of one of its concepts found in an answer; the scorer
    read no misconception or doubt in it; and it says a boundary's effect, or both sides of a
    trade-off (service/grading/named.py). Otherwise unmet, saying why the nearest candidate fell short."""
    from service.grading.named import DOUBTS, judge

    by_id = {i.id: i for i in items}
    concept_quotes = []
    for ref in idea.concepts:
        question, concept = ref.split(":")
        # a text item's id is its question's ("q2"), or names it last ("code.explanation")
        item = by_id.get(question) or next((i for i in items if i.id.endswith("." + question)), None)
        concept_quotes += [(ref, str(f.get("quote", ""))) for f in (item.evidence.get("found") or [] if item else [])
                           if f.get("concept") == concept and f.get("quote")]
    excluded = [str(w.get("quote", "")) for i in items for w in i.evidence.get("misconceptions") or []]
    excluded += [str(d.get("quote", "")) for i in items for d in i.evidence.get("suspected") or []
                 if d.get("kind") in DOUBTS]
    # an answer read as a keyword list names no idea (its concepts' quotes place its sentences)
    stuffed = [str(f.get("quote", "")) for i in items if "keyword_stuffing" in (i.evidence.get("flags") or [])
               for f in i.evidence.get("found") or []]
    verdicts = judge(kind, written=written, patterns=idea.patterns, concept_quotes=concept_quotes,
                     excluded_quotes=[q for q in excluded if q], effect=idea.effect, gain=idea.gain, cost=idea.cost,
                     stuffed_quotes=[q for q in stuffed if q])
    met = next((v for v in verdicts if not v.why), None)
    label = idea.label.in_(language)
    if met is not None:
        quote = _clip(met.quote)
        sides = {side: _clip(said, 80) for side, said in met.sides.items()}
        if kind == "performance_tradeoff":
            message = _say("named.found_tradeoff", language, quote=quote, gain=sides["gain"], cost=sides["cost"])
        else:
            message = _say("named.found_boundary", language, quote=quote, effect=sides["effect"])
        return Requirement(id=kind, met=True, title=_title(kind, language), message=message,
                           evidence={"via": met.via, "quote": quote, "sides": sides})
    rejected = [{"quote": _clip(v.quote, 200), "via": v.via, "why": v.why} for v in verdicts][:5]
    if not verdicts:
        message = _say("named.missing", language, label=label)
    else:
        first = min(verdicts, key=lambda v: _WHY_ORDER.index(v.why))  # the nearest miss first
        message = _say(f"named.{first.why}", language, quote=_clip(first.quote, 200), label=label)
    return Requirement(id=kind, met=False, title=_title(kind, language), message=message,
                       evidence={"looked_for": label, "rejected": rejected} if rejected else {"looked_for": label})


def total_requirement(total: float, threshold: float, language: Language) -> Requirement:
    met = total >= threshold
    return Requirement(id="total", met=met, title=_title("total", language, threshold=threshold),
                       message=_say("total.met" if met else "total.short", language, total=total, threshold=threshold),
                       evidence={"total": total, "pass_threshold": threshold})


def veto_requirement(vetoes: list[Veto], language: Language) -> Requirement:
    """A confirmed or a suspected veto blocks the pass (a suspected one until a TA decides)."""
    standing = [v for v in vetoes if v.status in ("confirmed", "suspected")]
    blocking = [f"{v.rule} ({v.status})" for v in standing]  # the evidence keeps the rule ids, for programs
    named = [_say("veto.named", language, name=render(f"page.veto_{v.rule}", language),
                  status=render(f"page.veto_{v.status}", language)) for v in standing]
    return Requirement(id="no_blocking_veto", met=not blocking, title=_title("no_blocking_veto", language),
                       message=_say("veto.some", language, rules=named) if blocking else
                       _say("veto.none", language), evidence={"vetoes": blocking})


def requirements(rule: PassRuleSpec | None, *, items: list[Item], vetoes: list[Veto], threshold: float,
                 given_status: str, given_output: str, not_run_reason: str | None, claim_kind: str,
                 claimed_output: str, written: str, language: Language) -> list[Requirement]:
    """Every requirement of the exercise's pass rule, in the lesson's order."""
    found: list[Requirement] = []
    if rule is not None:
        if rule.given_check:
            found.append(given_check_requirement(status=given_status, output=given_output,
                                                 not_run_reason=not_run_reason, language=language))
        if rule.run_output:
            found.append(run_output_requirement(claim_kind=claim_kind, claimed_output=claimed_output,
                                                language=language))
        by_id = {i.id: i for i in items}
        for question in rule.causal_chains:
            found.append(chain_requirement(by_id.get(question), question_id=question, share=rule.chain_share,
                                           language=language))
        for kind in ("correctness_boundary", "performance_tradeoff"):
            idea = getattr(rule, kind)
            if idea is not None:
                found.append(named_requirement(kind, idea, items=items, written=written, language=language))
    found.append(total_requirement(points_total(items), threshold, language))
    found.append(veto_requirement(vetoes, language))
    return found


def rescore(previous: list[Requirement], *, items: list[Item], vetoes: list[Veto], threshold: float,
            language: Language) -> list[Requirement]:
    """The requirements after a TA decision: the total, the vetoes and the chains of items a TA
    decided are recomputed from the report; the others (given check, run output, named ideas) stand."""
    by_id = {i.id: i for i in items}
    out = []
    for req in previous:
        if req.id == "total":
            req = total_requirement(points_total(items), threshold, language)
        elif req.id == "no_blocking_veto":
            req = veto_requirement(vetoes, language)
        elif req.id.startswith("causal_chain."):
            item = by_id.get(req.evidence.get("item", req.id.split(".", 1)[1]))
            if item is not None and item.evidence.get("ta_decision") is not None:
                req = chain_requirement(item, question_id=req.id.split(".", 1)[1], share=0.5, language=language)
        out.append(req)
    return out
