"""The dashboard as CSV: one long table (section, item, key, label, measure, value), so every
figure of the page and of the JSON is one row a spreadsheet can pivot."""
from __future__ import annotations

import csv
import io

from service.dashboard.queries import Dashboard
from service.downloads import spreadsheet_safe

CSV_COLUMNS = ["section", "item", "key", "label", "measure", "value"]


def rows(board: Dashboard) -> list[list[object]]:
    out: list[list[object]] = []
    for measure, value in board.overview.model_dump().items():
        out.append(["overview", "", "", "", measure, value])
    out.append(["overview", "", "", "", "not_passed_yet", board.not_passed_yet])
    for b in board.scores:
        for measure in ("students", "passed"):
            out.append(["scores", "", f"{b.low:g}-{b.high:g}", "", measure, getattr(b, measure)])
    for a in board.attempts_to_pass:
        out.append(["attempts_to_pass", "", a.attempts, "", "students", a.students])
    for r in board.rules:
        for measure in ("students", "submissions", "students_latest"):
            out.append([r.kind, "", r.rule, "", measure, getattr(r, measure)])
    for d in board.diagnoses:
        for measure in ("students", "submissions", "students_latest", "hinted"):
            out.append(["diagnosis", "", d.id, d.message, measure, getattr(d, measure)])
        out.append(["diagnosis", "", d.id, d.message, "examples", " ".join(d.examples)])
    for f in board.case_families:
        for measure in ("students", "failing_latest", "share_failing", "failed_ever"):
            out.append(["case_family", "", f.family, "", measure, getattr(f, measure)])
    for c in board.concepts:
        for measure in ("found", "missed", "share_missed"):
            out.append(["concept", c.item, c.concept, c.label, measure, getattr(c, measure)])
    out.append(["hints", "", "", "", "students", board.hints.students])
    out.append(["hints", "", "", "", "taken", board.hints.taken])
    for ladder in [*board.hints.by_exercise, *board.hints.by_ladder]:
        # item: the exercise; key: the ladder (empty: every ladder of the exercise)
        for measure in ("students", "taken"):
            out.append(["hint_ladder", ladder.exercise, ladder.ladder, "", measure, getattr(ladder, measure)])
        for level, students in enumerate(ladder.levels, start=1):
            out.append(["hint_ladder", ladder.exercise, ladder.ladder, "", f"level_{level}", students])
    t = board.timeline
    for measure in ("latency_p50_s", "latency_p95_s", "peak_queue_depth"):
        out.append(["timeline", "", "", "", measure, getattr(t, measure)])
    for h in t.hours:
        stamp = h.hour.strftime("%Y-%m-%dT%H:%M:%SZ")
        for measure in ("submissions", "graded", "queue_depth", "latency_p50_s", "latency_p95_s"):
            out.append(["hour", "", stamp, "", measure, getattr(h, measure)])
    return out


def to_csv(board: Dashboard) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for row in rows(board):
        writer.writerow([spreadsheet_safe(v) for v in row])
    return buffer.getvalue()
