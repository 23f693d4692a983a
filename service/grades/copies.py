"""Copied answers across a class: near-duplicates within one assignment, for a TA to look at.

Computed on request from the stored submissions (no table of its own): the latest submission of
each student for each exercise of the assignment is compared with the others'.

- Written answers (each `answers[...]` and the explanation): normalised (NFKC, lower case, every
  blank and punctuation mark dropped, so it works for Chinese as for English), capped at
  MAX_TEXT_CHARS, cut into character shingles; MinHash signatures put into an LSH index
  (datasketch, a kept library) give the candidate pairs, so the cost grows with the class, not with
  its square; each candidate is then checked on the exact Jaccard similarity of its shingles.
  Answers shorter than MIN_TEXT_CHARS are never compared: short answers agree by nature.
- Code: the fill of each whole-body blank (a line holding only `______`), parsed with `ast`, its
  local names renamed in order of appearance (renaming variables hides nothing), dumped without
  positions and hashed: equal hashes are one cluster. A fill smaller than MIN_FILL_NODES nodes,
  one-line blanks (`mask = cols < N` is the same for everyone who got it right) and a fill equal to
  the reference solution's are never flagged.

Nothing here changes a grade: the result is evidence shown to a TA (the review pages and
GET /v1/review/copies), who decides what it means.
"""
from __future__ import annotations

import ast
import copy
import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.models import Submission
from service.exercises import ExerciseCatalog, ExerciseNotFound
from service.grading.extract import MAX_SYNTAX_DEPTH, blank_positions, deeper_than, extract, is_block_blank
from service.grading.folding import normalise

MAX_TEXT_CHARS = 4000  # normalised characters compared per answer: the cost of one signature is bounded
MIN_TEXT_CHARS = 60  # normalised characters: below this, answers look alike by nature
SHINGLE = 5  # characters per shingle
NUM_PERM = 64  # MinHash permutations
TEXT_THRESHOLD = 0.8  # Jaccard similarity of the shingle sets that counts as a near-duplicate
# The LSH index's own threshold, lower: it only proposes candidates (each checked exactly), and at
# its threshold an LSH finds a pair about half the time, so a lower one keeps the recall at 0.8 high.
LSH_THRESHOLD = 0.5
MIN_FILL_NODES = 40  # syntax-tree nodes of a whole-body fill, below which a match is no evidence
MAX_PAIRS_SHOWN = 50  # pairs listed per cluster
MAX_TEXT_SHOWN = 4000  # characters of each member's answer or fill returned

_DROP = re.compile(r"[\W_]+", re.UNICODE)


def normalise_text(text: str) -> str:
    """Compatibility forms folded (full-width letters, ligatures), lower case, blanks and punctuation gone;
    folded as the rubric reads an answer (folding.normalise), so Latin-looking Cyrillic letters or
    zero-width characters in a copy hide nothing."""
    return _DROP.sub("", normalise(text).casefold())[:MAX_TEXT_CHARS]


def shingles(normalised: str) -> set[str]:
    return {normalised[i:i + SHINGLE] for i in range(max(1, len(normalised) - SHINGLE + 1))}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


class _Renamer(ast.NodeTransformer):
    """Local names (assigned in the fill) become v0, v1, ... in order of first appearance; names the
    fill did not bind (the kernel's parameters, `tl`) and attributes (`tl.load`) stay."""

    def __init__(self, local: set[str]) -> None:
        self.local = local
        self.names: dict[str, str] = {}

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.local:
            node.id = self.names.setdefault(node.id, f"v{len(self.names)}")
        return node


def _bound(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def fill_fingerprint(fill: list[ast.stmt]) -> tuple[str, int]:
    """(sha256 of the fill's syntax tree with local names normalised, its node count). Renames in place:
    give it a tree of its own."""
    renamer = _Renamer(_bound(fill))
    module = ast.Module(body=[renamer.visit(s) for s in fill], type_ignores=[])
    # The unparsed tree: positions, spacing, comments and redundant parentheses are gone.
    return hashlib.sha256(ast.unparse(module).encode()).hexdigest(), sum(1 for _ in ast.walk(module)) - 1


def _block_blanks(template: ast.Module) -> dict[int, str | None]:
    """The block blanks (a line holding only `______`) by blank index, each with the function whose
    whole body it is (`def k(...):\n    ______`; the fill is then that function's body in the
    submission, read without running the extractor), or None (a block among other statements)."""
    index = {spot: i for i, spot in enumerate(blank_positions(template))}
    found: dict[int, str | None] = {}
    for node in ast.walk(template):
        if is_block_blank(node):
            value = node.value  # type: ignore[attr-defined]
            found.setdefault(index[(value.lineno, value.col_offset)], None)
        if isinstance(node, ast.FunctionDef) and len(node.body) == 1 and is_block_blank(node.body[0]):
            value = node.body[0].value  # type: ignore[attr-defined]
            found[index[(value.lineno, value.col_offset)]] = node.name
    return found


def _functions(code: str) -> dict[str, list[ast.stmt]]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    if deeper_than(tree, MAX_SYNTAX_DEPTH):  # unparsing it below would raise RecursionError (extract.py)
        return {}
    return {n.name: n.body for n in tree.body if isinstance(n, ast.FunctionDef)}


@dataclass
class Member:
    submission_id: str
    student_id: str
    student_name: str | None
    text: str


@dataclass
class Cluster:
    kind: str  # text | code
    exercise: str
    part: str  # answers.<id> | explanation | blank <n>
    similarity: float  # the lowest of its pairs
    members: list[Member]
    pairs: list[tuple[str, str, float]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "exercise": self.exercise, "part": self.part,
                "similarity": round(self.similarity, 3),
                "members": [{"submission_id": m.submission_id, "student_id": m.student_id,
                             "student_name": m.student_name,
                             "text": m.text[:MAX_TEXT_SHOWN]} for m in self.members],
                "pairs": [{"a": a, "b": b, "similarity": round(s, 3)} for a, b, s in self.pairs[:MAX_PAIRS_SHOWN]],
                "pairs_total": len(self.pairs)}


@dataclass
class CopyReport:
    course: str
    assignment: str
    students: int
    submissions_compared: int
    clusters: list[Cluster]

    def as_json(self) -> dict[str, Any]:
        return {"course": self.course, "assignment": self.assignment, "students": self.students,
                "submissions_compared": self.submissions_compared, "clusters": [c.as_json() for c in self.clusters],
                "thresholds": {"text_jaccard": TEXT_THRESHOLD, "min_text_chars": MIN_TEXT_CHARS, "shingle": SHINGLE,
                               "min_fill_nodes": MIN_FILL_NODES},
                "grades_changed": False}


def latest_per_student(session: Session, course_id: str, assignment: str) -> list[Submission]:
    """The latest submission of each student for each exercise of the assignment (by attempt, then
    time). Only the chosen ones' bodies are read, a window at a time: earlier attempts cost an index row."""
    listing = session.execute(select(Submission.id, Submission.exercise_id, Submission.student_id, Submission.attempt,
                                     Submission.created_at)
                              .where(Submission.course_id == course_id, Submission.assignment == assignment,
                                     Submission.student_id.is_not(None)))
    latest: dict[tuple[str, str | None], tuple] = {}
    for sid, exercise_id, student_id, attempt, created_at in listing:
        order = (attempt or 0, created_at, sid)
        held = latest.get((exercise_id, student_id))
        if held is None or order > held:
            latest[(exercise_id, student_id)] = order
    chosen = sorted(order[2] for order in latest.values())
    rows: list[Submission] = []
    for start in range(0, len(chosen), 500):
        rows += session.scalars(select(Submission).where(Submission.id.in_(chosen[start:start + 500])))
    return rows


class _Groups:
    """Union-find over submission ids, remembering the pairs that joined them."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


def _member(row: Submission, text: str) -> Member:
    return Member(row.id, row.student_id or "", row.student_name, text)


def _text_clusters(exercise: str, part: str, texts: dict[str, tuple[Submission, str]]) -> list[Cluster]:
    prepared = {}
    for sid, (_, raw) in texts.items():
        norm = normalise_text(raw)
        if len(norm) >= MIN_TEXT_CHARS:
            prepared[sid] = shingles(norm)
    if len(prepared) < 2:
        return []
    # imported here: it pulls in scipy, which every page and worker importing service.web would pay for
    from datasketch import MinHash, MinHashLSH  # type: ignore[import-untyped]  # datasketch ships no type hints

    lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=NUM_PERM)
    pairs: list[tuple[str, str, float]] = []
    groups = _Groups()
    for sid, grams in prepared.items():
        signature = MinHash(num_perm=NUM_PERM)
        signature.update_batch([g.encode() for g in grams])
        for other in lsh.query(signature):  # candidates only: checked on the exact similarity
            similarity = jaccard(grams, prepared[other])
            if similarity >= TEXT_THRESHOLD:
                pairs.append((other, sid, similarity))
                groups.union(other, sid)
        lsh.insert(sid, signature)
    return _clusters("text", exercise, part, texts, pairs, groups)


def _clusters(kind: str, exercise: str, part: str, texts: dict[str, tuple[Submission, str]],
              pairs: list[tuple[str, str, float]], groups: _Groups) -> list[Cluster]:
    by_root: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
    for a, b, s in pairs:
        by_root[groups.find(a)].append((a, b, s))
    found = []
    for joined in by_root.values():
        ids = sorted({x for a, b, _ in joined for x in (a, b)}, key=lambda i: (texts[i][0].student_id or "", i))
        found.append(Cluster(kind, exercise, part, min(s for *_, s in joined),
                             [_member(texts[i][0], texts[i][1]) for i in ids], sorted(joined, key=lambda p: -p[2])))
    return found


def _code_clusters(exercise: str, rows: list[Submission], template: str, solution: str) -> list[Cluster]:
    """Whole-body fills only (one-line blanks are the same for everyone who got them right)."""
    blanks = _block_blanks(ast.parse(template))
    if not blanks:
        return []
    codes = {row.id: str((row.body or {}).get("code", "")) for row in rows}
    parsed = {sid: _functions(code) for sid, code in codes.items()} if any(blanks.values()) else {}
    extracted: dict[str, list] = {}

    def fill_of(sid: str, code: str, index: int, function: str | None) -> list[ast.stmt] | None:
        if function is not None:
            return parsed[sid].get(function) if sid in parsed else _functions(code).get(function)
        if sid not in extracted:  # a block among other statements: the extractor finds it (once per submission)
            extracted[sid] = extract(template, code).fills
        fill = extracted[sid][index] if index < len(extracted[sid]) else None
        return copy.deepcopy(fill) if isinstance(fill, list) else None

    found = []
    for index, function in sorted(blanks.items()):
        ref = fill_of("", solution, index, function)
        ref_hash = fill_fingerprint(ref)[0] if ref else None
        extracted.pop("", None)
        by_hash: dict[str, list[tuple[Submission, str]]] = defaultdict(list)
        for row in rows:
            fill = fill_of(row.id, codes[row.id], index, function)
            if not fill:
                continue
            source = "\n".join(ast.unparse(s) for s in fill)
            digest, nodes = fill_fingerprint(fill)
            if nodes >= MIN_FILL_NODES and digest != ref_hash:
                by_hash[digest].append((row, source))
        for same in by_hash.values():
            if len(same) < 2:
                continue
            same.sort(key=lambda m: (m[0].student_id or "", m[0].id))
            first = same[0][0].id
            found.append(Cluster("code", exercise, f"blank {index + 1}", 1.0, [_member(r, s) for r, s in same],
                                 [(first, r.id, 1.0) for r, _ in same[1:]]))
    return found


def find_copies(session: Session, catalog: ExerciseCatalog, course_id: str, assignment: str) -> CopyReport:
    rows = latest_per_student(session, course_id, assignment)
    by_exercise: dict[str, list[Submission]] = defaultdict(list)
    for row in rows:
        by_exercise[row.exercise_id].append(row)
    clusters: list[Cluster] = []
    for exercise_id, members in sorted(by_exercise.items()):
        parts: dict[str, dict[str, tuple[Submission, str]]] = defaultdict(dict)
        for row in members:
            body = row.body or {}
            for qid, answer in sorted((body.get("answers") or {}).items()):
                parts[f"answers.{qid}"][row.id] = (row, str(answer))
            if body.get("explanation"):
                parts["explanation"][row.id] = (row, str(body["explanation"]))
        for part, texts in sorted(parts.items()):
            clusters += _text_clusters(exercise_id, part, texts)
        try:
            exercise = catalog.get(exercise_id)
        except ExerciseNotFound:
            continue
        clusters += _code_clusters(exercise_id, members, exercise.template, exercise.solution)
    clusters.sort(key=lambda c: (-len(c.members), -c.similarity, c.exercise, c.part))
    return CopyReport(course_id, assignment, len({r.student_id for r in rows}), len(rows), clusters)


def assignments(session: Session, course_id: str) -> list[str]:
    """The course's assignments that have submissions with a student."""
    return sorted(a for a in session.scalars(
        select(Submission.assignment).where(Submission.course_id == course_id, Submission.assignment.is_not(None),
                                            Submission.student_id.is_not(None)).distinct()) if a)
