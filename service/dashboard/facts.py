"""The facts of one report the dashboard counts: a row per diagnosis, veto, unmet requirement, case
family and written-answer concept. Written with every report that becomes current
(store.on_current_report), so the dashboard aggregates in SQL and never parses reports.

Read defensively: reports of every age are stored, and fields may be empty (score.requirements)."""
from __future__ import annotations

from typing import Any

LABEL_MAX = 500
KINDS = ("diagnosis", "veto", "requirement", "case", "concept")


def _text(value: Any) -> str:
    text = str(value or "").replace("\x00", "")
    return text if len(text) <= LABEL_MAX else text[: LABEL_MAX - 1] + "…"


def report_facts(report: dict[str, Any]) -> list[dict[str, Any]]:
    """(kind, item, key, ok, label) of a graded report; nothing for a not_gradable one.

    diagnosis: key = the diagnosis id, label = its message (the lesson's words).
    veto: key = the rule, label = its status; ok = dismissed (a dismissed veto held nobody back).
    requirement: key = the pass rule's requirement id, ok = met.
    case: key = the case family (regular, boundary, probe, given), ok = every case of it passed.
    concept: item = the written question's item id, key = the concept id, ok = found, label = its label.
    """
    if not isinstance(report, dict) or report.get("status") != "graded":
        return []
    facts: dict[tuple[str, str, str], dict[str, Any]] = {}

    def add(kind: str, item: str, key: Any, ok: bool | None, label: Any = "") -> None:
        key = _text(key)[:200]
        if key and (kind, item, key) not in facts:
            facts[(kind, item, key)] = {"kind": kind, "item": item[:100], "key": key, "ok": ok, "label": _text(label)}

    for d in report.get("diagnoses") or []:
        if isinstance(d, dict):
            add("diagnosis", "", d.get("id"), False, d.get("message"))
    for v in report.get("vetoes") or []:
        if isinstance(v, dict):
            add("veto", "", v.get("rule"), v.get("status") == "dismissed", v.get("status"))
    for r in (report.get("score") or {}).get("requirements") or []:
        if isinstance(r, dict):
            add("requirement", "", r.get("id"), bool(r.get("met")))
    families: dict[str, bool] = {}
    for c in report.get("cases") or []:
        if isinstance(c, dict) and c.get("kind"):
            families[c["kind"]] = families.get(c["kind"], True) and bool(c.get("passed"))
    for family, ok in families.items():
        add("case", "", family, ok)
    for item in report.get("items") or []:
        evidence = item.get("evidence") if isinstance(item, dict) else None
        if not isinstance(evidence, dict) or not ("found" in evidence or "missing" in evidence):
            continue
        for ok, entries in ((True, evidence.get("found")), (False, evidence.get("missing"))):
            for entry in entries or []:
                if isinstance(entry, dict):
                    add("concept", str(item.get("id") or ""), entry.get("concept"), ok, entry.get("label"))
    return list(facts.values())
