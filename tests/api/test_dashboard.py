"""The assignment dashboard over real HTTP, on SQLite and PostgreSQL: a generated class written
through the real store (tests/support/class_reports.py), and every figure of GET /v1/dashboard
checked against numbers computed here from the generated attempts, not from the database."""
from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest

from tests.support.class_reports import CONCEPTS, DIAGNOSES, Attempt, generate, write

pytestmark = pytest.mark.sandbox

DEADLINE = datetime(2026, 11, 30, 23, 59, tzinfo=UTC)


@pytest.fixture
def taught(service, course):
    """40 students, up to 5 attempts each, on assignment hw6; a second assignment and a submission
    without a student id that must not be counted."""
    attempts = generate(40, 5, deadline=DEADLINE, seed=7)
    ids: dict[int, str] = {}
    with service.sessions() as session:
        for index, attempt in enumerate(attempts):
            ids[index] = write(session, course.id, "hw6", attempt)
        write(session, course.id, "hw7", Attempt(student="s00000", received_at=DEADLINE, latency_s=3, total=10,
                                                 passed=True))
    return attempts, ids


def _ordered(attempts: list[Attempt]) -> dict[str, list[tuple[int, Attempt]]]:
    by_student: dict[str, list[tuple[int, Attempt]]] = defaultdict(list)
    for index, a in enumerate(attempts):
        by_student[a.student].append((index, a))
    return {s: sorted(rows, key=lambda r: r[1].received_at) for s, rows in by_student.items()}


def _nearest_rank(values: list[float], p: int) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[math.ceil(p * len(ordered) / 100) - 1]


def expected(attempts: list[Attempt], ids: dict[int, str]) -> dict:
    students = _ordered(attempts)
    graded = {s: [(i, a) for i, a in rows if not a.not_gradable] for s, rows in students.items()}
    graded = {s: rows for s, rows in graded.items() if rows}
    latest = {s: rows[-1][1] for s, rows in graded.items()}
    passers = {s for s, rows in graded.items() if any(a.passed for _, a in rows)}
    out: dict = {
        "overview": {"submissions": len(attempts), "graded": sum(not a.not_gradable for a in attempts),
                     "not_gradable": sum(a.not_gradable for a in attempts), "in_progress": 0,
                     "students": len(students), "students_graded": len(graded), "students_passed": len(passers),
                     "submissions_passed": sum(a.passed and not a.not_gradable for a in attempts), "unattributed": 0}}
    bins = defaultdict(lambda: [0, 0])
    for a in latest.values():
        index = min(9, int(a.total // 1))
        bins[index][0] += 1
        bins[index][1] += a.passed
    out["scores"] = {i: tuple(v) for i, v in bins.items()}
    attempts_to_pass = defaultdict(int)
    for s in passers:
        rows = [a for _, a in graded[s]]
        attempts_to_pass[next(n for n, a in enumerate(rows, 1) if a.passed)] += 1
    out["attempts"] = dict(attempts_to_pass)

    def counts(has) -> dict[str, tuple[int, int, int]]:
        keys = {k for rows in graded.values() for _, a in rows for k in has(a)}
        return {k: (len({s for s, rows in graded.items() if any(k in has(a) for _, a in rows)}),
                    sum(k in has(a) for rows in graded.values() for _, a in rows),
                    sum(k in has(a) for a in latest.values())) for k in keys}

    out["vetoes"] = counts(lambda a: {r for r, st in a.vetoes.items() if st != "dismissed"})
    out["requirements"] = counts(lambda a: set(a.unmet))
    out["diagnoses"] = counts(lambda a: set(a.diagnoses))
    recent = defaultdict(list)
    for rows in graded.values():
        for i, a in rows:
            for d in a.diagnoses:
                recent[d].append((a.received_at, ids[i]))
    out["examples"] = {d: [sid for _, sid in sorted(v, reverse=True)[:3]] for d, v in recent.items()}
    out["families"] = {f: (len(latest), sum(f in a.failing for a in latest.values()),
                           len({s for s, rows in graded.items() if any(f in a.failing for _, a in rows)}))
                       for f in ("given", "regular", "boundary", "probe")}
    out["concepts"] = {(item, c): (sum(c in a.found.get(item, []) for a in latest.values()),
                                   sum(c not in a.found.get(item, []) for a in latest.values()))
                       for item, concepts in CONCEPTS.items() for c, _ in concepts}
    hour = lambda t: t.replace(minute=0, second=0, microsecond=0)
    per_hour = defaultdict(lambda: {"submissions": 0, "graded": 0, "latencies": []})
    for a in attempts:
        per_hour[hour(a.received_at)]["submissions"] += 1
        per_hour[hour(a.received_at)]["latencies"].append(a.latency_s)
        per_hour[hour(a.received_at + timedelta(seconds=a.latency_s))]["graded"] += 1
    out["hours"] = per_hour
    out["latency"] = (_nearest_rank([a.latency_s for a in attempts], 50), _nearest_rank([a.latency_s for a in attempts], 95))
    return out


def test_dashboard_figures_match_the_generated_class(course, taught):
    attempts, ids = taught
    want = expected(attempts, ids)
    response = course.client("review").get("/v1/dashboard", params={"assignment": "hw6",
                                                                     "deadline": DEADLINE.isoformat()})
    assert response.status_code == 200, response.text
    got = response.json()
    assert got["course"] == course.id and got["assignment"] == "hw6" and got["exercises"] == ["lesson06_mean_var"]
    overview = got["overview"]
    assert {k: overview[k] for k in want["overview"]} == want["overview"]
    assert overview["pass_rate"] == pytest.approx(len({a.student for a in attempts if a.passed and not a.not_gradable})
                                                  / want["overview"]["students_graded"])
    assert (overview["pass_threshold"], overview["score_max"]) == (8, 10)

    assert [(b["low"], b["high"]) for b in got["scores"]] == [(float(i), float(i + 1)) for i in range(10)]
    assert {i: (b["students"], b["passed"]) for i, b in enumerate(got["scores"]) if b["students"]} == want["scores"]
    assert {a["attempts"]: a["students"] for a in got["attempts_to_pass"]} == want["attempts"]
    assert got["not_passed_yet"] == want["overview"]["students_graded"] - want["overview"]["students_passed"]

    rules = {(r["kind"], r["rule"]): (r["students"], r["submissions"], r["students_latest"]) for r in got["rules"]}
    assert rules == {**{("veto", k): v for k, v in want["vetoes"].items()},
                     **{("requirement", k): v for k, v in want["requirements"].items()}}
    diagnoses = got["diagnoses"]
    assert {d["id"]: (d["students"], d["submissions"], d["students_latest"]) for d in diagnoses} == want["diagnoses"]
    assert [d["students"] for d in diagnoses] == sorted((d["students"] for d in diagnoses), reverse=True)
    assert {d["id"]: d["examples"] for d in diagnoses} == want["examples"]
    assert all(d["message"].startswith(("第二次", "除以", "用 E")) for d in diagnoses)  # the lesson's words

    families = {f["family"]: (f["students"], f["failing_latest"], f["failed_ever"]) for f in got["case_families"]}
    assert families == want["families"]
    assert [f["family"] for f in got["case_families"]] == ["given", "regular", "boundary", "probe"]
    concepts = {(c["item"], c["concept"]): (c["found"], c["missed"]) for c in got["concepts"]}
    assert concepts == want["concepts"]

    timeline = got["timeline"]
    assert timeline["latency_p50_s"] == pytest.approx(want["latency"][0], abs=0.01)
    assert timeline["latency_p95_s"] == pytest.approx(want["latency"][1], abs=0.01)
    hours = {datetime.fromisoformat(h["hour"]): h for h in timeline["hours"]}
    assert sum(h["submissions"] for h in hours.values()) == len(attempts)
    depth = 0
    for moment in sorted(hours):
        h, w = hours[moment], want["hours"].get(moment, {"submissions": 0, "graded": 0, "latencies": []})
        depth += w["submissions"] - w["graded"]
        assert (h["submissions"], h["graded"], h["queue_depth"]) == (w["submissions"], w["graded"], depth), moment
        assert h["latency_p50_s"] == pytest.approx(_nearest_rank(w["latencies"], 50), abs=0.01)
        assert h["latency_p95_s"] == pytest.approx(_nearest_rank(w["latencies"], 95), abs=0.01)
    assert timeline["peak_queue_depth"] == max(h["queue_depth"] for h in hours.values())


def test_the_csv_carries_the_same_numbers(course, taught):
    client = course.client("review")
    board = client.get("/v1/dashboard", params={"assignment": "hw6"}).json()
    response = client.get("/v1/dashboard", params={"assignment": "hw6", "format": "csv"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    assert "attachment" in response.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(response.text)))
    value = {(r["section"], r["item"], r["key"], r["measure"]): r["value"] for r in rows}
    assert value[("overview", "", "", "students")] == str(board["overview"]["students"])
    for d in board["diagnoses"]:
        assert value[("diagnosis", "", d["id"], "students")] == str(d["students"])
        assert value[("diagnosis", "", d["id"], "examples")] == " ".join(d["examples"])
    for c in board["concepts"]:
        assert value[("concept", c["item"], c["concept"], "missed")] == str(c["missed"])


def test_a_decision_moves_the_figures(course, service):
    """Facts are rewritten with every report that becomes current: a TA dismissing a suspected
    veto takes it out of the vetoes by rule."""
    with service.sessions() as session:
        sid = write(session, course.id, "hw8", Attempt(student="u1", received_at=DEADLINE, latency_s=5, total=9,
                                                       passed=False, vetoes={"boundary_check_removed": "suspected"}))
    client = course.client("review", "read")
    before = client.get("/v1/dashboard", params={"assignment": "hw8"}).json()
    assert [(r["rule"], r["students"]) for r in before["rules"]] == [("boundary_check_removed", 1)]
    response = client.post(f"/v1/submissions/{sid}/decisions",
                           json={"veto": "boundary_check_removed", "action": "dismiss", "reason": "the check is still there"})
    assert response.status_code == 201, response.text
    after = client.get("/v1/dashboard", params={"assignment": "hw8"}).json()
    assert after["rules"] == []
    assert after["overview"]["submissions"] == 1


def test_scope_and_an_unknown_assignment(course, service, taught):
    other = service.new_course()
    assert other.client("review").get("/v1/dashboard", params={"assignment": "hw6"}).json()["overview"]["submissions"] == 0
    response = course.client("read").get("/v1/dashboard", params={"assignment": "hw6"})
    assert response.status_code == 403  # the review scope
    empty = course.client("review").get("/v1/dashboard", params={"assignment": "nobody"}).json()
    assert empty["overview"]["students"] == 0 and empty["timeline"]["hours"] == [] and empty["diagnoses"] == []
    assert course.client("review").get("/v1/dashboard").status_code == 422  # assignment is required


def test_hint_levels_taken_through_the_api(course, service):
    """Students take hint levels through POST /v1/feedback/{token}/hints; the dashboard counts them
    per exercise, per ladder and per level (distinct students), and per diagnosis, as computed here
    from what each student asked for. The CSV carries the same numbers."""
    import random

    from service.config import REPO_ROOT
    from service.db.models import Submission
    from service.hints import hints_of

    ladders = hints_of(REPO_ROOT / "exercises" / "lesson06_mean_var")
    rng = random.Random(21)
    names = list(DIAGNOSES)
    asked: list[tuple[str, str, int]] = []  # (student, ladder, level) of every level given
    with service.sessions() as session:
        written = []
        for s in range(12):
            for a in range(rng.randint(1, 3)):
                diagnoses = [d for d in names if rng.random() < 0.5]
                attempt = Attempt(student=f"h{s:02d}", received_at=DEADLINE - timedelta(hours=5 - a, minutes=s),
                                  latency_s=4, total=6, passed=False, diagnoses=diagnoses)
                sid = write(session, course.id, "hw9", attempt)
                written.append((attempt, session.get(Submission, sid).feedback_token))
    student = service.client()
    for attempt, token in written:
        offered = [d for d in attempt.diagnoses if d in ladders.diagnoses] or ["general"]
        for ladder in offered:
            for level in range(1, rng.randint(0, 4) + 1):
                response = student.post(f"/v1/feedback/{token}/hints", json={"diagnosis": ladder})
                assert response.status_code == 201, response.text
                asked.append((attempt.student, ladder, level))
    assert {ladder for _, ladder, _ in asked} >= {"general", "missing_remask"} and len(asked) > 20

    board = course.client("review").get("/v1/dashboard", params={"assignment": "hw9"}).json()
    hints = board["hints"]
    assert (hints["students"], hints["taken"]) == (len({s for s, _, _ in asked}), len(asked))

    def levels(rows) -> list[int]:
        return [len({s for s, _, n in rows if n == level}) for level in range(1, 5)]

    (exercise,) = hints["by_exercise"]
    assert (exercise["exercise"], exercise["ladder"]) == ("lesson06_mean_var", "")
    assert (exercise["students"], exercise["taken"], exercise["levels"]) == (hints["students"], len(asked), levels(asked))
    want = {ladder: [r for r in asked if r[1] == ladder] for ladder in {r[1] for r in asked}}
    got = {h["ladder"]: h for h in hints["by_ladder"]}
    assert set(got) == set(want)
    for ladder, rows in want.items():
        assert got[ladder]["exercise"] == "lesson06_mean_var"
        assert (got[ladder]["students"], got[ladder]["taken"], got[ladder]["levels"]) == (
            len({s for s, _, _ in rows}), len(rows), levels(rows)), ladder
    assert {d["id"]: d["hinted"] for d in board["diagnoses"]} == {
        d["id"]: len({s for s, _, _ in want.get(d["id"], [])}) for d in board["diagnoses"]}

    text = course.client("review").get("/v1/dashboard", params={"assignment": "hw9", "format": "csv"}).text
    value = {(r["section"], r["item"], r["key"], r["measure"]): r["value"] for r in csv.DictReader(io.StringIO(text))}
    assert value[("hints", "", "", "taken")] == str(len(asked))
    for ladder, rows in want.items():
        for level, count in enumerate(levels(rows), start=1):
            assert value[("hint_ladder", "lesson06_mean_var", ladder, f"level_{level}")] == str(count)
    for d in board["diagnoses"]:
        assert value[("diagnosis", "", d["id"], "hinted")] == str(d["hinted"])
