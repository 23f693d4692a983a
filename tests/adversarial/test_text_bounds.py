"""Student text that used to freeze the service: the TA page's code diff (a backtracking regular
expression over a fill of spaces), the written-answer scorer (cubic in the answer's length) and
the lease of a grading that never ends. Each test carries a hang guard (`timeout`) of a hundred
times what the fixed code needs: it detects a freeze, it does not measure speed (bench/ does)."""
from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import score_answer
from service.submission import MAX_TEXT_CHARS, Submission
from service.web.diff import code_diff

pytestmark = [pytest.mark.adversarial]

LESSON = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")


@pytest.mark.timeout(60)
def test_a_fill_of_spaces_does_not_freeze_the_review_diff():
    """Spaces at the start of the fill, on a line that then differs from the template (6 400 spaces
    took 72 s before, with the whole process frozen: the regular expression backtracked through
    every way of splitting them; 3 000 take minutes)."""
    spaces = " " * 3_000
    line = "tl.where(______, (values - mean) * (values - mean), 0.0)"
    assert line in LESSON.template
    hostile = LESSON.template.replace(line, f"tl.where({spaces}cols < N, (values - mean) * (values - mean), 0.0 + 0)")
    lines = code_diff(LESSON.template, hostile)
    assert [line.kind for line in lines if line.side != "both"] == ["edit", "edit"]  # shown as an edit, not a fill
    filled = code_diff(LESSON.template, LESSON.template.replace("______", spaces + "cols < N"))
    (fill,) = [line for line in filled if line.kind == "fill"]
    assert [s.text for s in fill.segments if s.fill] == ["cols < N"]


def test_the_review_diff_still_finds_each_fill():
    template = "    y = tl.where(______, x, ______)  # two blanks\n"
    lines = code_diff(template, "    y = tl.where( cols  <  N ,x,  0.0 )\n")
    (line,) = lines
    assert line.kind == "fill" and [s.text for s in line.segments if s.fill] == ["cols  <  N", "0.0"]
    assert code_diff(template, "    y = tl.where(cols < N)\n")[0].kind != "fill"  # the second blank's text is gone


def stuffed(length: int) -> str:
    """Two chained concepts of q1 over and over in one sentence, with no linking word between them:
    every pair of their matches is tried, and none links."""
    return ("other=0,/n," * (length // 11 + 1))[:length]


@pytest.mark.timeout(60)
def test_the_longest_answer_the_contract_allows_is_scored_quickly():
    """The scorer was cubic (3 KB: 68 s; the contract's 16 KB: hours, its heartbeat holding the lease)."""
    question = LESSON.question("q1")
    result = score_answer(question, stuffed(MAX_TEXT_CHARS), 2.0)
    assert result.kind == "scored" and not result.links
    assert {f["concept"] for f in result.found} >= {"masked_load", "mean_over_n"}
    # The reference answer still earns every point with every link (the index finds the same links).
    reference = score_answer(question, question.reference_answer, 2.0)
    assert reference.points == 2.0 and len(reference.links) == len(question.chain) - 1


def test_an_answer_over_the_cap_is_refused_naming_the_field():
    body = {"exercise": LESSON.id, "code": "x = 1", "answers": {"q1": "a" * (MAX_TEXT_CHARS + 1)}}
    with pytest.raises(ValidationError) as refused:
        Submission.model_validate(body)
    [error] = refused.value.errors()
    assert error["loc"] == ("answers", "q1") and error["type"] == "string_too_long"
    assert Submission.model_validate({**body, "answers": {"q1": "a" * MAX_TEXT_CHARS}}).answers["q1"]


def test_a_runaway_grading_stops_renewing_its_lease(tmp_path):
    """The heartbeat renews a lease for at most the grading's budget: past it the lease expires
    and the submission can be claimed again (and after max_attempts it is not_gradable)."""
    from service.db import store
    from service.db.models import Submission as SubmissionRow
    from service.db.migrate import upgrade
    from service.db.session import make_engine, make_sessionmaker
    from service.worker.grading import _Heartbeat

    url = f"sqlite:///{tmp_path / 'lease.db'}"
    upgrade(url)
    sessions = make_sessionmaker(make_engine(url))
    with sessions() as session:
        store.create_course(session, "c1", "course")
        row, _ = store.create_submission(session, course_id="c1", body=Submission(exercise=LESSON.id, code="x = 1"),
                                         callback_url=None, idempotency_key=None)
        submission_id = row.id
    # The lease outlives the first look even if no renewal ran in time (a loaded machine): that
    # look cannot fail by timing, and the second comes well after the budget plus one lease.
    with sessions() as session:
        claim = store.claim(session, lease_s=1.5)
    assert claim is not None and claim.submission_id == submission_id
    with sessions() as session:
        first_expiry = session.get(SubmissionRow, submission_id).lease_expires_at
    with _Heartbeat(sessions, claim, lease_s=1.5, max_s=2.0):
        time.sleep(1.0)
        with sessions() as session:  # still held within the budget, and renewed (every 0.5 s)
            assert store.claim(session, lease_s=1.5) is None
            assert session.get(SubmissionRow, submission_id).lease_expires_at > first_expiry
        time.sleep(3.5)  # past the budget plus one lease (and a late last renewal): nobody renews it any more
        with sessions() as session:
            expires = session.get(SubmissionRow, submission_id).lease_expires_at
            assert expires.replace(tzinfo=expires.tzinfo or timezone.utc) < datetime.now(timezone.utc)
            again = store.claim(session, lease_s=60)
    assert again is not None and again.submission_id == submission_id and again.attempt == 2


def test_the_link_index_finds_every_link_start_including_overlapping_ones():
    # _LinkIndex scans once with a lookahead; it must find the links that matching at every
    # position finds (overlapping ones: "使得" holds "使", "变成" starts where "变" does).
    import random

    from service.grading.freetext import _LINKS, _LinkIndex, _sentences

    rng = random.Random(7)
    alphabet = list("因为所以导致使得变成为就会后是即 thus so if then is isn't ->→=⇒\n。，;ab")
    texts = ["因为填充的0减去均值变成-μ，所以方差多加了μ²，因此要再mask一次。", "which means it becomes: x -> y => z",
             *("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(500))]
    for text in texts:
        expected = [i for i in range(len(text)) if _LINKS.match(text, i)]
        index = _LinkIndex(text, _sentences(text))
        assert index.starts == expected, text
        for lo in range(0, len(text), 7):
            for hi in range(lo, len(text) + 1, 5):
                ends = [m.end() for i in expected if lo <= i and (m := _LINKS.match(text, i))]
                assert index.between(lo, hi) == any(end <= hi for end in ends), (text, lo, hi)


def _filled(unit: str) -> str:
    return (unit * (MAX_TEXT_CHARS // len(unit) + 1))[:MAX_TEXT_CHARS]


# The answer-reading rules of the probe sweep, each fed the longest answer the contract allows made of
# what it reads: every misconception match in a question, attributed to others and refuted, under a
# negation, every letter behind a zero-width space, a sentence frame repeated, a retraction repeated.
HOSTILE = {
    "asked": "does tl.sum skip the masked lanes? other=0.0 is enough? 是 μ² 吗？",
    "reported": "Some think tl.sum skips the masked lanes; that's wrong. 有人认为 other=0.0 就够了，这是错的。",
    "negated": "padding does not xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx -mean 不不不 −μ ",
    "invisible": "\u200b".join("other=0 不是 -mean，"),
    "frame": "tl.where causes identity because -mean. ",
    "retracted": "all of that is wrong, 以上都不对 ",
    "one_sentence": "有人认为 other=0.0 就够了，some think the load mask already handles it, ",
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_the_longest_hostile_answer_is_scored_in_bounded_time(kind):
    """About 30-60 ms each on a loaded two-core machine (docs/grading.md); a second is a regression
    to work per match that grows with the answer. The bounds in this file are the test thread's CPU
    time (time.thread_time), not the wall clock: other processes on a loaded machine do not count."""
    answer = _filled(HOSTILE[kind])
    for question in LESSON.spec.questions:
        started = time.thread_time()
        score_answer(question, answer, 2.0)
        assert time.thread_time() - started < 1.0, question.id


def extract_within(code: str, seconds: float):
    from service.grading.extract import extract

    assert len(code) <= 65_536  # the contract's cap on code
    started = time.thread_time()
    extraction = extract(LESSON.template, code)
    elapsed = time.thread_time() - started
    assert elapsed < seconds, f"extraction took {elapsed:.1f} s"
    return extraction


@pytest.mark.timeout(120)
def test_thousands_of_inserted_statements_are_extracted_quickly():
    """The extraction runs on the trusted side before anything else (the worker's cheap path, the
    API's syntax check). A submission of 64 KB of one-line statements cost 93 s there (each edit
    split the whole source into lines again to quote itself), and 4 000 statements inserted in the
    kernel 60 s (each template statement compared by similarity with every one of them); now a
    second or two each. Every statement is still an edit, and the fill is still found."""
    solution = LESSON.solution
    module = solution + "".join(f"v{i} = {i}\n" for i in range(6_000))
    extraction = extract_within(module[:65_536], 20)
    assert extraction.error is None and extraction.fill_sources == ["mask"]
    assert len(extraction.edits) > 5_000 and all(e.kind == "inserted" for e in extraction.edits)
    anchor = "    row = tl.program_id(0)\n"
    kernel = solution.replace(anchor, anchor + "".join(f"    v{i} = row + {i}\n" for i in range(2_700)), 1)
    extraction = extract_within(kernel, 20)
    assert extraction.error is None and extraction.fill_sources == ["mask"]
    assert len(extraction.edits) == 2_700


# A claimed output the parser backtracked on: a run of spaces or underscores after an error
# metric's first word ('max', 'mean', 'error') that no number follows. Two adjacent repetitions
# that can both take the run ('[\s_]*(abs)?[\s_]*', '\s*[:=]?\s*') tried every split: 5.7 s for one
# 16 KB claim, and the pipeline reads the claim four times per grading (claims.py).
HOSTILE_CLAIMS = {
    "max-underscores": "max" + "_" * (MAX_TEXT_CHARS - 4) + "x",
    "mean-spaces": "mean" + " " * (MAX_TEXT_CHARS - 5) + "x",
    "error-spaces": "error" + "\t" * (MAX_TEXT_CHARS - 6) + "x",
    "max-abs-underscores": "max" + "_" * 8_000 + "abs" + "_" * (MAX_TEXT_CHARS - 8_007) + "x",
    # a negation, an assertion word, a verb that says a boolean, each then a run of spaces: the
    # patterns for success said without "pass" have several optional words between white space
    "negation-spaces": "没" + " " * (MAX_TEXT_CHARS - 2) + "x",
    "assertion-spaces": "断言" + " " * (MAX_TEXT_CHARS - 3) + "x",
    "returned-spaces": "returned" + " " * (MAX_TEXT_CHARS - 9) + "x",
    "negations": "不 " * (MAX_TEXT_CHARS // 2),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", sorted(HOSTILE_CLAIMS))
def test_the_longest_hostile_claimed_output_is_read_in_bounded_time(kind):
    """About 40 ms each; a second is quadratic backtracking again."""
    from service.grading.claims import parse_claim, unverified_claim

    claimed = HOSTILE_CLAIMS[kind]
    assert len(claimed) <= MAX_TEXT_CHARS
    Submission(exercise="lesson06_mean_var", code="x", claimed_output=claimed)  # within the contract
    started = time.thread_time()
    veto = unverified_claim(claimed_output=claimed, program_ran=True, given_status="failed", real_output="",
                            not_run_reason=None)
    kind_read = parse_claim(claimed).kind
    assert time.thread_time() - started < 1.0
    assert kind_read == ("fail" if kind.startswith("error") else "unclear")
    assert veto is None  # unclear, or a failure our run (failed) agrees with


def test_error_metrics_with_their_numbers_are_still_not_failures():
    from service.grading.claims import parse_claim

    for said in ("max abs error: 1e-6", "max_abs_err = 3e-7", "mean error 0.0", "error = 0.0", "误差：0.0",
                 "max  abs   error:   2e-7", "max" + "_" * 40 + "abs_error 1e-7"):
        assert parse_claim(said).kind == "results", said
    assert parse_claim("AssertionError: Tensor-likes are not close!").kind == "fail"


WELFORD = ExerciseCatalog(REPO_ROOT / "exercises").get("welford_merge")
WHITE_RUNS = {"spaces": " ", "newlines": "\n", "mixed": " \n\t", "ideographic": "\u3000"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", sorted(WHITE_RUNS))
def test_a_run_of_white_space_in_an_answer_is_read_in_bounded_time(kind):
    """welford_merge's rubric has `mask\\s*(里|中)?\\s*(为\\s*)?true\\s*的\\s*个数`: two `\\s*` around an
    optional word try every split of a run between them. "mask" then 16 000 spaces cost 9-10 s per
    question (explanation, q3) before runs of white space were read as one (folding._fold_markup)."""
    run = WHITE_RUNS[kind]
    answer = ("mask" + run * MAX_TEXT_CHARS)[:MAX_TEXT_CHARS - 1] + "x"
    for question in WELFORD.spec.questions:
        started = time.thread_time()
        score_answer(question, answer, 2.0)
        assert time.thread_time() - started < 1.0, question.id


def test_words_apart_by_a_run_of_white_space_still_count():
    """The same phrase, once with single spaces and once with runs of spaces and blank lines, earns
    the same: the rubric reads a run as one space."""
    question = WELFORD.question("q3")
    plain = "有效元素个数要用 mask 中 true 的个数，而不是 BLOCK。"
    spread = "有效元素个数要用   mask   中\n\n\n\n true 的个数，而不是      BLOCK。"
    a, b = score_answer(question, plain, 2.0), score_answer(question, spread, 2.0)
    assert a.points == b.points and {f["concept"] for f in a.found} == {f["concept"] for f in b.found}, (a, b)


DEEP = 700  # unary minuses before an expression: it parses (CPython's parser allows about 1 000 levels)


def test_a_deeply_nested_fill_is_refused_not_a_crash():
    """`-` 700 times before the kernel fill (or the host combine) of fused_mean_var_atomic parsed,
    but the trusted side's recursive walks of the fill (ast.unparse in rejected_fill) raised
    RecursionError out of Grader.grade: the grading crashed instead of saying why. Now the extraction
    refuses a syntax tree deeper than extract.MAX_SYNTAX_DEPTH, in the real pipeline, before any run."""
    from sandbox.contract import Limits
    from service.bootstrap import build_grader
    from service.config import Settings
    from tests.adversarial.kit import QUICK, SECRET_SEED
    from tests.adversarial.test_host_blanks import RIGHT_ATOMIC, RIGHT_COMBINE, RIGHT_ZEROING, program

    grader = build_grader(Settings(limits=Limits(**QUICK)))
    for code in (program("-" * DEEP + f"({RIGHT_ATOMIC})", RIGHT_COMBINE, RIGHT_ZEROING),
                 program(RIGHT_ATOMIC, "-" * DEEP + f"({RIGHT_COMBINE})", RIGHT_ZEROING)):
        report = grader.grade(Submission(exercise="fused_mean_var_atomic", code=code), secret_seed=SECRET_SEED)
        assert report.status == "graded" and report.program is not None and not report.program.ran
        assert "嵌套过深" in (report.program.not_run_reason or ""), report.program
        assert "nested too deeply" in (report.translations["en"].not_run_reason or ""), report.translations["en"]


def test_a_fill_of_dicts_within_dicts_is_refused_not_a_crash():
    """Within extract.MAX_SYNTAX_DEPTH, a fill of dicts within dicts (ast.unparse takes six frames a level) raised
    RecursionError out of Grader.grade from 162 levels on, in lesson06's expression blank (red team 10, at aed9969:
    the extraction's unparse, read first in the fills' check). Now a fill nests at most extract.MAX_FILL_NESTING
    levels, refused in the extraction with the bound; every depth is graded, nothing runs."""
    from sandbox.contract import Limits
    from service.bootstrap import build_grader
    from service.config import Settings
    from tests.adversarial.kit import QUICK, SECRET_SEED

    grader = build_grader(Settings(limits=Limits(**QUICK)))
    lesson = grader.catalog.get("lesson06_mean_var")
    outcomes = {}
    for depth in range(150, 171):
        code = lesson.template.replace("______", "{0: " * depth + "0" + "}" * depth + " and mask", 1)
        try:
            report = grader.grade(Submission(exercise=lesson.id, code=code, explanation="我填的是 mask。"),
                                  secret_seed=SECRET_SEED)
        except RecursionError:
            outcomes[depth] = "RecursionError"
            continue
        outcomes[depth] = "refused" if (report.status == "graded" and not report.program.ran
                                        and "嵌套太深" in (report.program.not_run_reason or "")
                                        and "nested too deeply" in (report.translations["en"].not_run_reason or "")
                                        ) else report.program.not_run_reason
    assert set(outcomes.values()) == {"refused"}, outcomes


def test_a_deeply_nested_body_does_not_break_the_copies_report():
    """The TA's copy report parses every whole-body fill of the class itself; two puzzle bodies
    nested 700 deep made its unparse raise RecursionError, and the course's report failed."""
    from service.db.models import Submission as Row
    from service.grades import copies

    exercise = ExerciseCatalog(REPO_ROOT / "exercises").get("puzzle_long_sum")
    body = "    z = " + "-" * DEEP + "(tl.program_id(0))\n    tl.store(z_ptr, z)\n"
    code = exercise.template.replace("    ______\n", body, 1)
    assert code != exercise.template
    rows = [Row(id=f"id-{s}", student_id=s, student_name=None, exercise_id=exercise.id,
                body={"exercise": exercise.id, "code": code}) for s in ("a", "b")]
    assert copies._code_clusters(exercise.id, rows, exercise.template, exercise.solution) == []


FUSED = ExerciseCatalog(REPO_ROOT / "exercises").get("fused_mean_var_atomic")
FUSED_EXPLANATION = ("每个 program 用 tl.sum(values * values) 求出自己那块的平方和，atomic_add 到 sumsqs；"
                     "launch 之前把两个缓冲区都清零；host 上 var = sumsqs / N - mean * mean。")


@pytest.mark.timeout(120)
def test_a_long_block_fill_is_checked_against_the_explanation_in_bounded_time():
    """The explanation says both buffers are zeroed; the block fill (fill_policy any) is thousands
    of `sums` / `sumsqs` lines and no zeroing. The claim's `shown_by` pattern
    `(?s)\\bsums\\b.*\\bsumsqs\\b.*(zero|fill|= 0)` costs the cube of the fill: 3 s for 4.8 KB, hours
    for 60 KB. Now a block fill is searched in at most stated_fill._SHOWN_SEARCH_MAX characters."""
    block = "\n".join(["sums", "sumsqs"] * 2_600)  # 31 KB
    question = FUSED.question("explanation")
    started = time.thread_time()
    result = score_answer(question, FUSED_EXPLANATION, 2.0,
                          fills=["tl.sum(values * values, axis=0)", "sumsqs / N - mean * mean", block])
    assert time.thread_time() - started < 1.0
    assert "explanation_not_fill" in result.flags  # the claim is still checked, and the fill does not show it
    honest = score_answer(question, FUSED_EXPLANATION, 2.0,
                          fills=["tl.sum(values * values, axis=0)", "sumsqs / N - mean * mean",
                                 "sums.zero_()\nsumsqs.zero_()"])
    assert "explanation_not_fill" not in honest.flags


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", list(WHITE_RUNS))
def test_the_review_pages_highlight_of_a_run_of_white_space_is_bounded(kind):
    """The TA review page marks what the rubric found in each written answer by running the rubric's
    patterns again (service/web/highlight.py). It ran them on text whose runs of white space were
    kept, so "mask" then 16 000 spaces, with the phrase the concept needs at its end, held the API
    process for about 4 s per question each time a TA opened the page (the scorer had been fixed,
    the page had not). Every concept and misconception of every question is asked for."""
    from service.web.highlight import find_spans

    run = WHITE_RUNS[kind]
    phrase = " 有效元素个数要用 mask 中 true 的个数，而不是 BLOCK。"
    answer = ("mask" + run * MAX_TEXT_CHARS)[:MAX_TEXT_CHARS - len(phrase)] + phrase
    for question in WELFORD.spec.questions:
        started = time.thread_time()
        find_spans(question, answer, concepts={c.id for c in question.concepts},
                   misconceptions={m.id for m in question.misconceptions})
        assert time.thread_time() - started < 1.0, question.id


def test_the_highlight_still_marks_words_apart_by_a_run_of_white_space():
    """The same answer with single spaces and with runs of spaces and blank lines gets the same marks,
    on the student's own characters."""
    import re

    from service.web.highlight import find_spans

    plain = "有效元素个数要用 mask 中 true 的个数，而不是 BLOCK。最后一块 只有 3 个有效元素。"
    spread = "有效元素个数要用   mask   中\n\n\n\n true 的个数，而不是      BLOCK。最后一块   只有 3 个有效元素。"
    marked = 0
    for question in WELFORD.spec.questions:
        every = dict(concepts={c.id for c in question.concepts}, misconceptions={m.id for m in question.misconceptions})
        a, b = find_spans(question, plain, **every), find_spans(question, spread, **every)
        assert [(s.kind, s.label) for s in a] == [(s.kind, s.label) for s in b], question.id
        for x, y in zip(a, b):
            assert re.sub(r"\s+", " ", spread[y.start:y.end]) == plain[x.start:x.end], question.id
        marked += len(a)
    assert marked >= 2


# Host fills that the host rule (service/grading/host_fills.py) reads before anything runs, on the trusted side:
# a chain of assignments with as many reads (the rule's input tracking was made again for every name: 86 s for
# 28 KB at b445282, minutes at the 64 KB cap, before any sandbox and again on every retry of the grading), and
# hundreds of launches through a named grid (each walked the whole function again: 7 s).
HOST_FILL_SHAPES = {
    "chain-and-reads": "\n".join(["a0 = sums", *(f"a{i} = a{i - 1}.float()" for i in range(1, 1800)),
                                  *("b = x" for _ in range(1800))]),
    "reverse-chain": "\n".join([*(f"a{i} = a{i + 1}" for i in range(1800)), "a1800 = x"]),
    "launches-through-a-named-grid": "g = (M, 1)\n" + "\n".join(
        ["sum_sumsq_kernel[g](x, sums, sumsqs, N, x.stride(0), BLOCK=block)"] * 700),
    "long-receiver-chain": "\n".join(["a0 = sums", *(f"a{i} = a{i - 1}.float()" for i in range(1, 1200)),
                                      *("b = a1199.to(x)" for _ in range(1200))]),
}
# Past the receiver check's budget (host_fills.TENSOR_STEPS) `a1199.to(x)` is not known to take x's dtype from a
# tensor: refused, never read as nothing found (a RecursionError there made check() say None).
REFUSED_SHAPES = {"long-receiver-chain"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", list(HOST_FILL_SHAPES))
def test_the_longest_host_fill_is_checked_by_the_host_rule_in_bounded_time(shape):
    from service.grading import host_fills
    from service.grading.extract import extract

    parts = FUSED.template.split("______")
    code = (parts[0] + "tl.sum(values * values, axis=0)" + parts[1] + "sumsqs / N - mean * mean" + parts[2]
            + (HOST_FILL_SHAPES[shape] + "\nsums.zero_()\nsumsqs.zero_()").replace("\n", "\n    ") + parts[3])
    assert len(code) <= 65_536  # within the code cap
    extraction = extract(FUSED.template, code)
    assert extraction.error is None and not extraction.edits
    started = time.thread_time()
    found = host_fills.check(FUSED, extraction)
    assert time.thread_time() - started < 2.0
    if shape in REFUSED_SHAPES:
        assert found is not None and found.rule == "reads_input" and found.code == "b = a1199.to(x)", found
    else:
        assert found is None, found  # honest, if odd: read to the end, not refused


SOFTMAX = ExerciseCatalog(REPO_ROOT / "exercises").get("puzzle_long_softmax")


@pytest.mark.timeout(120)
def test_names_read_through_their_definitions_cost_the_worker_little():
    """The explanation says the padding lanes read -inf; the claim is checked on each tl.load's `other`, its names
    read through their definitions four levels down (fill_sites.py). A body whose load reads `other=a`, with
    `a = b + b + …` 30 times down to `e`, expanded into 30**4 copies: 45 s of the worker's CPU for 1.4 KB of the
    body at aed9969 (40 times: 148 s; the 20 KB a block may hold: days), on every grading whose explanation says
    it (red team 10). An expansion now copies at most fill_sites._EXPAND_NODES nodes, else the argument is read
    as written; the claim is still checked, and the fill does not show it."""
    from service.grading.extract import extract

    body = extract(SOFTMAX.template, SOFTMAX.solution).fill_sources[0]
    assert body is not None and "other=float('-inf')" in body
    decoy = "e = 1.0\n" + "".join(f"{a} = " + " + ".join([b] * 30) + "\n"
                                  for a, b in (("d", "e"), ("c", "d"), ("b", "c"), ("a", "b")))
    code = decoy + body.replace("other=float('-inf')", "other=a", 1)
    explanation = "越界的 lane 读成 -inf（load 的 other = -inf），所以 max 不受 padding 影响。"
    started = time.thread_time()
    result = score_answer(SOFTMAX.question("explanation"), explanation, 2.0, fills=[code])
    assert time.thread_time() - started < 2.0
    assert "explanation_not_fill" in result.flags  # one load reads `a` (1.0 + …), not -inf: said, not shown
    honest = score_answer(SOFTMAX.question("explanation"), explanation, 2.0, fills=[body])
    assert "explanation_not_fill" not in honest.flags
