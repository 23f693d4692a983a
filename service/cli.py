"""The `kernelgrade` command line: thin commands over the pipeline."""
from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from service.bootstrap import build_grader
from service.cli_common import err, fail, migrated_sessions
from service.cli_images import image_app
from service.config import Settings
from service.config_errors import settings_error
from service.exercises import ExerciseCatalog, ExerciseNotFound
from service.grading.validate import Outcome, Summary, code_points, summarize, validate_exercise
from service.lti import cli as lti_cli
from service.messages import render
from service.report import Report
from service.submission import Submission

app = typer.Typer(help="kernelgrade: grade Triton kernel exercises in a sandbox.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
exercises_app = typer.Typer(help="List and validate exercises.", no_args_is_help=True)
app.add_typer(exercises_app, name="exercises")
keys_app = typer.Typer(help="Per-course API keys (stored hashed; shown once).", no_args_is_help=True)
courses_app = typer.Typer(help="Courses: each has its keys, submissions and webhook secret.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
app.add_typer(courses_app, name="courses")
review_app = typer.Typer(help="TA review: the queue of reports waiting for a TA, and decisions.", no_args_is_help=True)
app.add_typer(review_app, name="review")
grades_app = typer.Typer(help="The gradebook: one row per student and assignment, under the course's policy.",
                         no_args_is_help=True)
app.add_typer(grades_app, name="grades")
regrade_app = typer.Typer(help="Bulk regrades of an assignment or an exercise version (run by `kernelgrade serve`).",
                          no_args_is_help=True)
app.add_typer(regrade_app, name="regrade")
kits_app = typer.Typer(help="Kits that plug kernelgrade into Gradescope and PrairieLearn.", no_args_is_help=True)
app.add_typer(kits_app, name="kits")
app.add_typer(lti_cli.app, name="lti")
app.add_typer(image_app, name="image")


@app.callback()
def _check_settings() -> None:
    """A setting that cannot be used stops every command, before the command's own options are
    checked (main() turns the ValidationError into one line naming the variable)."""
    Settings()

DeviceOpt = Annotated[Literal["auto", "gpu", "interpreter"] | None,
                      typer.Option("--device",
                                   help="where kernels run (default: GPU if present, else the Triton interpreter)")]
SandboxOpt = Annotated[Literal["bwrap", "docker", "local"] | None,
                       typer.Option("--sandbox", help="sandbox backend (default: bwrap)")]
SeedOpt = Annotated[int | None, typer.Option("--secret-seed", help="replay a run: the secret seed from its report")]


def _settings(device: str | None, sandbox: str | None, **more: Any) -> Settings:
    overrides: dict[str, Any] = {k: v for k, v in (("device", device), ("sandbox", sandbox)) if v is not None}
    return Settings(**overrides, **more)


_fail = fail


def load_submission(path: Path, exercise: str | None, catalog: ExerciseCatalog) -> Submission:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(f"cannot read {path}: {exc}") from None
    if path.suffix == ".py":
        if exercise is None:
            ids = catalog.ids()
            if len(ids) != 1:
                raise _fail(f"{path} is bare code: say which exercise with --exercise (one of: {', '.join(ids)})")
            exercise = ids[0]
        data: dict = {"exercise": exercise, "code": text}
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _fail(f"{path} is not valid JSON ({exc}); give a submission JSON or a .py file") from None
        if not isinstance(data, dict):
            raise _fail(f"{path}: a submission is a JSON object")
        if exercise is not None:
            data["exercise"] = exercise
    try:
        return Submission.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'submission'}: {e['msg']}" for e in exc.errors())
        raise _fail(f"invalid submission {path}: {problems}") from None


@app.command()
def grade(
    submission: Annotated[Path, typer.Argument(help="a submission JSON, or a bare .py with the filled-in cell")],
    exercise: Annotated[str | None, typer.Option(help="exercise id (needed for a bare .py)")] = None,
    format: Annotated[Literal["json", "text", "gradescope", "prairielearn"], typer.Option(
        "--format", help="json: exactly the report; gradescope / prairielearn: the platform's result file")] = "text",
    secret_seed: SeedOpt = None,
    device: DeviceOpt = None,
    sandbox: SandboxOpt = None,
    veto_policy: Annotated[Literal["capped", "zero"], typer.Option(
        help="gradescope / prairielearn: what a confirmed veto exports")] = "capped",
) -> None:
    """Grade one submission and print its report (exit 0 whenever a report was produced)."""
    settings = _settings(device, sandbox)
    try:
        grader = build_grader(settings)
    except Exception as exc:  # noqa: BLE001 - configuration errors, said plainly
        raise _fail(str(exc)) from None
    sub = load_submission(submission, exercise, grader.catalog)
    try:
        if format == "text":
            with err.status(f"grading {submission.name} ({grader.mode.value}, {grader.runner.backend.name} sandbox)…"):
                report = grader.grade(sub, secret_seed=secret_seed)
        else:
            report = grader.grade(sub, secret_seed=secret_seed)
    except ExerciseNotFound as exc:
        raise _fail(str(exc)) from None
    if format == "json":
        sys.stdout.write(report.to_json() + "\n")
    elif format in ("gradescope", "prairielearn"):
        from service.grades.platforms import gradescope, prairielearn
        from service.grades.policy import CoursePolicy

        export = gradescope if format == "gradescope" else prairielearn
        sys.stdout.write(json.dumps(export(report, policy=CoursePolicy(veto_policy=veto_policy)),
                                    ensure_ascii=False) + "\n")
    else:
        print_report(report, Console())


def print_report(report: Report, console: Console) -> None:
    score = report.score
    if report.status == "not_gradable":
        console.print(f"[bold yellow]not gradable[/]: {report.message}")
        return
    verdict = "[green]PASS[/]" if score.passed else "[red]NOT PASSED[/]"
    provisional = render("cli.provisional", report.language) if score.provisional else ""
    said = render("page.passed" if score.passed else "page.not_passed", report.language)
    console.print(f"[bold]{report.exercise.id}[/] v{report.exercise.version}: {score.total:g}/{score.max:g} "
                  f"(pass ≥ {score.pass_threshold:g}) {verdict} {escape(said)}{provisional}")
    # Why it did not pass, first: every requirement of the pass rule that is not met, with its words
    # (a 10/10 that is "NOT PASSED" says here that the run output was missing, or which veto stands).
    unmet = [r for r in score.requirements if not r.met]
    if not score.passed and unmet:
        console.print(render("page.held_by_requirements", report.language), markup=False, highlight=False)
        for requirement in unmet:
            colon = "：" if report.language == "zh" else ": "
            console.print(f"- {requirement.title or requirement.id}{colon}{requirement.message or ''}", markup=False,
                          highlight=False)
    env = report.environment
    limits = ", ".join(x for x in (env.process_limit, env.memory_limit) if x)
    limit = f" ({limits})" if limits else ""
    console.print(escape(f"graded on {env.backend} ({env.device}), sandbox {env.sandbox}{limit}, torch {env.torch}, "
                         f"triton {env.triton}; secret seed {report.seeds.secret if report.seeds else '-'}"),
                  style="dim")
    if report.program and report.program.fills:
        console.print(f"fill: {report.program.fills}", style="dim", highlight=False)
    for item in report.items:
        console.print(f"\n[bold]{item.id}[/] {escape(item.title)}: {item.points:g}/{item.max_points:g} "
                      f"\\[{item.status}]")
        console.print(item.feedback, markup=False, highlight=False)
    for veto in report.vetoes:
        console.print(f"\n[bold red]veto {veto.rule}[/] ({veto.status})", highlight=False)
        for edit in veto.evidence.get("edits", []):
            console.print(f"  line {edit['submission_line'] or edit['template_line']}: {edit['reason']}", markup=False,
                          highlight=False)
            if edit.get("hint"):
                console.print(f"  {edit['hint']}", markup=False, highlight=False)
        if note := veto.evidence.get("note"):
            console.print(f"  {note}", markup=False, highlight=False)
        if veto.rule == "unverified_claim" and veto.evidence.get("side_by_side"):  # the note says "below"
            for caption, key in (("page.claim_yours", "claimed_output"), ("page.claim_ours", "real_output")):
                text = str(veto.evidence.get(key) or "").strip() or "—"
                console.print(f"  {render(caption, report.language)}:", markup=False, highlight=False)
                console.print("\n".join(f"    | {line}" for line in text.splitlines()), markup=False,
                              highlight=False)
    if (perf := report.performance) is not None:  # informational: never points
        if perf.status == "measured" and perf.kernel is not None and perf.achieved_gbps is not None:
            ceiling = f", {perf.percent_of_peak:.0f}% of the HBM ceiling" if perf.percent_of_peak is not None else ""
            baseline = f", x{perf.speedup_vs_baseline:.2f} vs the baseline" if perf.speedup_vs_baseline else ""
            line = f"{perf.kernel.median_ms * 1000:.1f} µs median, {perf.achieved_gbps:,.0f} GB/s{ceiling}{baseline}"
        else:
            line = f"{perf.status}: {perf.reason or ''}"
        console.print(f"\n[bold]speed[/] (no points{', reused' if perf.reused else ''}): {escape(line)}",
                      highlight=False)


@exercises_app.command("list")
def list_exercises() -> None:
    """The exercises in the catalog."""
    catalog = ExerciseCatalog(Settings().exercises_dir)
    for exercise_id in catalog.ids():
        ex = catalog.get(exercise_id)
        title = ex.spec.title.in_(ex.spec.language)
        print(f"{exercise_id}\tv{ex.spec.version}\t{title}\t{len(ex.spec.cases)} cases, {len(ex.mutants)} mutants")


@exercises_app.command("validate")
def validate(
    exercise_id: Annotated[str | None,
                           typer.Argument(help="exercise id, e.g. lesson06_mean_var (default: every exercise)")] = None,
    secret_seed: SeedOpt = None,
    device: DeviceOpt = None,
    sandbox: SandboxOpt = None,
    report_dir: Annotated[Path | None,
                          typer.Option(help="also write every report as JSON here (one folder per exercise)")] = None,
    details: Annotated[bool,
                       typer.Option("--details/--no-details", help="a table of every answer per exercise")] = True,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, max=64,
                                      help="answers graded at once, each in its own sandbox (a core or so each)")] = 1,
) -> None:
    """Grade each reference solution (with its example's written answers: every pass requirement must hold) and
    every mutant; exit 1 if a solution loses a code point or a requirement, or a mutant escapes.

    An exercise that needs a GPU is checked, on the interpreter, to be refused with its reason."""
    # The next answers' sandboxes start while these run (a fresh sandbox each, as in the service;
    # its start-up is about half of an interpreter grading). No compiling of the whole catalog
    # ahead (the service's prewarm): each answer compiles its own.
    grader = build_grader(_settings(device, sandbox, warm_pool=jobs, compile_cache_prewarm=False))
    try:
        ids = [exercise_id] if exercise_id else grader.catalog.ids()
        exercises = [grader.catalog.get(i) for i in ids]
    except ExerciseNotFound as exc:
        raise _fail(str(exc)) from None
    seed = secret_seed if secret_seed is not None else secrets.randbits(63)
    summaries: list[Summary] = []
    failed: list[str] = []
    grader.start()
    try:
        for exercise in exercises:
            outcomes = _validate_one(grader, exercise, seed, report_dir, details, jobs)
            summaries.append(summarize(exercise, outcomes))
            failed += [f"{exercise.id}/{o.name}" for o in outcomes if not o.ok]
    finally:
        grader.close()

    table = Table("exercise", "mode", "solution", "mutants caught", "worst correct err/tol", "worst bug err/tol",
                  title=f"kernelgrade exercises validate ({grader.mode.value}, secret seed {seed})")
    for s in summaries:
        ratio = lambda r: "-" if r is None else f"{r:.3g}"  # noqa: E731
        if s.refused:
            table.add_row(s.exercise, grader.mode.value, "refused (needs GPU)", f"-/{s.mutants}", "-", "-")
        else:
            table.add_row(s.exercise, grader.mode.value, "ok" if s.solution_ok else "FAIL", f"{s.caught}/{s.mutants}",
                          ratio(s.worst_correct_ratio), ratio(s.worst_bug_ratio))
    Console(width=max(120, Console().width)).print(table)  # never cut an exercise id in the summary
    if failed:
        raise _fail(f"{len(failed)} answers did not get their expected verdict: " + ", ".join(failed), code=1)
    answers = sum(1 + s.mutants for s in summaries if not s.refused)
    err.print(f"[green]all {answers} answers got their expected verdicts[/] ({len(summaries)} exercise(s))")


def _validate_one(grader, exercise, seed: int, report_dir: Path | None, details: bool, jobs: int) -> list[Outcome]:
    total = 1 + len(exercise.mutants)
    err.print(f"validating {exercise.id}: solution + {len(exercise.mutants)} mutants on {grader.mode.value} "
              f"({grader.runner.backend.name} sandbox)")
    table = Table("answer", "verdict", "code pts", "vetoes", "diagnoses", "time s", title=exercise.id)
    done = []

    def show(outcome: Outcome) -> None:
        done.append(outcome)
        r = outcome.report
        mark = "[green]ok[/]" if outcome.ok else "[red]FAIL[/]"
        problems = "" if outcome.ok else f": {'; '.join(outcome.problems)}"
        err.print(f"[{len(done)}/{total}] {mark} {outcome.name}{problems}", highlight=False)
        if report_dir is not None:
            (report_dir / exercise.id).mkdir(parents=True, exist_ok=True)
            (report_dir / exercise.id / f"{outcome.name}.json").write_text(r.to_json(), encoding="utf-8")

    outcomes = validate_exercise(grader, exercise, secret_seed=seed, jobs=jobs, on_result=show)
    for outcome in outcomes:  # in the catalog's order, whatever order they landed in
        r = outcome.report
        table.add_row(outcome.name, "ok" if outcome.ok else "FAIL", f"{code_points(r, exercise):g}",
                      ",".join(v.rule for v in r.vetoes), ",".join(d.id for d in r.diagnoses),
                      f"{r.timing.get('total_s', 0):.1f}")
    if details:
        Console().print(table)
    return outcomes


_sessions = migrated_sessions


@courses_app.command("create")
def create_course(course_id: Annotated[str, typer.Argument(help="short id, e.g. triton-2026")],
                  name: Annotated[str, typer.Option(help="display name")] = "") -> None:
    """Create a course; prints its webhook signing secret (for the platform to verify callbacks)."""
    from service.db import store
    from service.db.models import Course

    with _sessions(Settings())() as session:
        if session.get(Course, course_id) is not None:
            raise _fail(f"course {course_id!r} exists already")
        course = store.create_course(session, course_id, name or course_id)
        print(f"course {course.id} created\nwebhook secret: {course.webhook_secret}")


@courses_app.command("list")
def list_courses() -> None:
    from sqlalchemy import select

    from service.db.models import Course

    with _sessions(Settings())() as session:
        for course in session.scalars(select(Course).order_by(Course.id)):
            print(f"{course.id}\t{course.name}")


@courses_app.command("webhook-secret")
def course_webhook_secret(
    course_id: Annotated[str, typer.Argument(help="course id, e.g. demo")],
    rotate: Annotated[bool, typer.Option("--rotate",
                                         help="replace it first: the old secret stops verifying at once")] = False,
) -> None:
    """Print the secret that signs the course's webhooks (and, with --rotate, replace it first)."""
    from service.db import store

    with _sessions(Settings())() as session:
        try:
            secret = (store.rotate_webhook_secret(session, course_id) if rotate
                      else store.existing_course(session, course_id).webhook_secret)
        except LookupError as exc:
            raise _fail(str(exc)) from None
    if rotate:
        err.print(f"course {course_id}: new webhook secret (every delivery from now on is signed with it):")
    print(secret)


@keys_app.command("create")
def create_key(course: Annotated[str, typer.Option(help="course id")],
               scope: Annotated[list[str], typer.Option(help="submit, read, review or admin; repeat for several")],
               label: Annotated[str, typer.Option(help="who holds it")] = "") -> None:
    """Create a key and print it once (only its hash is stored)."""
    from service.db import store

    with _sessions(Settings())() as session:
        try:
            row, key = store.create_key(session, course_id=course, scopes=scope, label=label)
        except (ValueError, LookupError) as exc:
            raise _fail(str(exc)) from None
        err.print(f"key {row.id} for course {course} with scopes {', '.join(row.scopes)} (shown once):")
        print(key)


@keys_app.command("list")
def list_keys(course: Annotated[str | None, typer.Option(help="only this course")] = None) -> None:
    from sqlalchemy import select

    from service.db.models import ApiKey

    with _sessions(Settings())() as session:
        query = select(ApiKey).order_by(ApiKey.created_at)
        if course:
            query = query.where(ApiKey.course_id == course)
        for key in session.scalars(query):
            state = f"revoked {key.revoked_at:%Y-%m-%d}" if key.revoked_at else "active"
            print(f"{key.id}\t{key.course_id}\t{','.join(key.scopes)}\t{state}\t{key.label}")


@keys_app.command("revoke")
def revoke_key(key_id: Annotated[str, typer.Argument(help="the id shown by `keys list` (kg_<id>_...)")]) -> None:
    from service.db import store

    with _sessions(Settings())() as session:
        if not store.revoke_key(session, key_id):
            raise _fail(f"no active key {key_id!r}")
        print(f"key {key_id} revoked")


@review_app.command("queue")
def review_queue(course: Annotated[str, typer.Option(help="course id")],
                 exercise: Annotated[str | None, typer.Option(help="only this exercise")] = None) -> None:
    """Graded submissions whose report waits for a TA, with the reasons."""
    from service.db import decisions

    with _sessions(Settings())() as session:
        for submission, reasons in decisions.review_queue(session, course, exercise=exercise):
            print(f"{submission.id}\t{submission.exercise_id}\t{submission.created_at:%Y-%m-%d %H:%M}\t"
                  f"{', '.join(reasons)}")


@review_app.command("decide")
def review_decide(
    submission_id: Annotated[str, typer.Argument(help="the submission")],
    reason: Annotated[str, typer.Option(help="why (kept in the audit, shown to the student)")],
    by: Annotated[str, typer.Option(help="who decides (name or e-mail)")],
    item: Annotated[str | None, typer.Option(help="rubric item to re-score, e.g. q2")] = None,
    points: Annotated[float | None, typer.Option(help="the item's new points")] = None,
    veto: Annotated[str | None, typer.Option(help="veto rule to decide, e.g. coincidental_pass")] = None,
    confirm: Annotated[bool | None, typer.Option("--confirm/--dismiss", help="confirm or dismiss the veto")] = None,
) -> None:
    """Record a TA decision; it issues the next report (history kept) and notifies the webhook."""
    from service.db import decisions
    from service.review import DecisionError, DecisionRequest

    action = None if confirm is None else ("confirm" if confirm else "dismiss")
    try:
        request = DecisionRequest(item=item, points=points, veto=veto, action=action, reason=reason)
    except ValidationError as exc:
        raise _fail("; ".join(e["msg"] for e in exc.errors())) from None
    with _sessions(Settings())() as session:
        try:
            decision = decisions.decide(session, submission_id, request, actor=f"cli:{by}")
        except decisions.NotDecidable:
            raise _fail(f"submission {submission_id!r} does not exist or is not graded yet") from None
        except DecisionError as exc:
            raise _fail(str(exc)) from None
        print(f"decision {decision.id}: {decision.target} {decision.before} -> {decision.after}; report "
              f"{decision.new_report_id} is current")


@courses_app.command("policy")
def course_policy(course: Annotated[str, typer.Argument(help="course id")],
                  grade_policy: Annotated[Literal["last", "best"] | None, typer.Option(
                      help="which graded attempt counts: the last one or the best one")] = None,
                  veto_policy: Annotated[Literal["capped", "zero"] | None, typer.Option(
                      help="what a confirmed veto exports: capped below the pass line, or zero")] = None,
                  hint_cost: Annotated[float | None, typer.Option(
                      min=0, max=100, help="points each hint level costs (0: free)")] = None) -> None:
    """Show the course's grade policy, or change it (defaults: last attempt, veto capped, hints free)."""
    from service.db import store
    from service.grades.policy import PolicyUpdate

    with _sessions(Settings())() as session:
        try:
            policy = (store.set_course_policy(session, course, PolicyUpdate(grade_policy=grade_policy,
                                                                            veto_policy=veto_policy,
                                                                            hint_cost=hint_cost))
                      if grade_policy or veto_policy or hint_cost is not None else store.course_policy(session, course))
        except LookupError as exc:
            raise _fail(str(exc)) from None
        print(f"course {course}: grade policy {policy.grade_policy}, veto policy {policy.veto_policy}, "
              f"hint cost {policy.hint_cost:g} per level")


@grades_app.command("export")
def grades_export(course: Annotated[str, typer.Option(help="course id")],
                  assignment: Annotated[str | None, typer.Option(help="only this assignment")] = None,
                  format: Annotated[Literal["csv", "json"], typer.Option("--format")] = "csv",
                  output: Annotated[Path | None,
                                    typer.Option("--output", "-o", help="file (default: stdout)")] = None) -> None:
    """One row per student and assignment: the grade that counts, final or provisional, what blocks it, the TA's
    decisions."""
    from service.grades.gradebook import current_gradebook, to_csv

    with _sessions(Settings())() as session:
        try:
            book = current_gradebook(session, course, assignment=assignment)
        except LookupError as exc:
            raise _fail(str(exc)) from None
    text = to_csv(book) if format == "csv" else book.model_dump_json(indent=2) + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
        err.print(f"{len(book.rows)} rows ({book.policy.grade_policy} attempt, veto {book.policy.veto_policy}) -> "
                  f"{output}")


def _regrade_line(session, job) -> str:
    from service.db import regrades

    counts = regrades.progress(session, job)
    scope = job.assignment if job.scope == "assignment" else f"{job.exercise_id} v{job.exercise_version}"
    return (f"{job.id}\t{job.status}\t{job.scope} {scope}\t{counts.done}/{counts.total} done, "
            f"{counts.queued} queued, {counts.pending} pending, {counts.failed} failed")


def _regrade_failures(session, job) -> list[str]:
    """One line per submission whose regrade failed on our side (its earlier grade stays current)."""
    from service.db import regrades

    return [f"  failed\t{f.submission_id}\t{f.student_id or '-'}\treport {f.report_seq} (current: "
            f"{f.current_seq})\t{f.message}" for f in regrades.failures(session, job)]


@regrade_app.command("start")
def regrade_start(course: Annotated[str, typer.Option(help="course id")],
                  assignment: Annotated[str | None,
                                        typer.Option(help="every graded submission of this assignment")] = None,
                  exercise: Annotated[str | None,
                                      typer.Option(help="every graded submission of this exercise…")] = None,
                  version: Annotated[int | None, typer.Option(help="…graded at this exercise version")] = None,
                  by: Annotated[str, typer.Option(help="who asks (kept on the job)")] = "cli") -> None:
    """Start a bulk regrade (or show the one already running for the same scope). `kernelgrade serve`
    carries it out a few submissions at a time, and resumes it after a restart."""
    from service.db import regrades

    with _sessions(Settings())() as session:
        try:
            job, created = regrades.start(session, course, assignment=assignment, exercise_id=exercise,
                                          exercise_version=version, requested_by=f"cli:{by}")
        except (ValueError, LookupError) as exc:
            raise _fail(str(exc)) from None
        err.print("started" if created else "already running for this scope:")
        print(_regrade_line(session, job))


@regrade_app.command("status")
def regrade_status(course: Annotated[str, typer.Option(help="course id")],
                   job: Annotated[str | None,
                                  typer.Argument(help="a job id (default: the course's jobs)")] = None) -> None:
    """Progress of the course's bulk regrades; with a JOB, also each submission whose regrade failed on our
    side (not_gradable: its earlier grade stays), to look at and regrade again."""
    from service.db import regrades
    from service.db.models import RegradeJob

    with _sessions(Settings())() as session:
        rows = [session.get(RegradeJob, job)] if job else regrades.jobs(session, course)
        if job and (rows[0] is None or rows[0].course_id != course):
            raise _fail(f"no bulk regrade {job!r} in course {course!r}")
        for row in rows:
            print(_regrade_line(session, row))
            if job:  # one job asked for: which submissions to look at
                for line in _regrade_failures(session, row):
                    print(line)


@kits_app.command("gradescope")
def kit_gradescope(
    exercise: Annotated[str, typer.Option(help="the exercise the assignment grades")],
    output: Annotated[Path,
                      typer.Option("--output", "-o", help="the zip to upload to Gradescope")] = Path("autograder.zip"),
    server: Annotated[str | None, typer.Option(help="kernelgrade's URL, e.g. https://grader.example.org")] = None,
    key_file: Annotated[Path | None,
                        typer.Option(help="a file holding a course key with the submit and read scopes")] = None,
    assignment: Annotated[str | None,
                          typer.Option(help="the assignment id in kernelgrade (default: gradescope:<id>)")] = None,
    local: Annotated[bool, typer.Option(
        "--local", help="grade inside Gradescope's container on the interpreter (kernelgrade installed by setup.sh) "
                        "instead of on a server")] = False,
    timeout_s: Annotated[int, typer.Option(help="how long run_autograder waits for the grade")] = 540,
    language: Annotated[Literal["zh", "en"], typer.Option(help="language of the kit's own messages")] = "zh",
) -> None:
    """Build the autograder zip a Gradescope programming assignment uploads (setup.sh, run_autograder)."""
    from service.kits.build import KitConfig, gradescope_zip

    key = key_file.read_text(encoding="utf-8").strip() if key_file else None
    try:
        config = KitConfig(mode="local" if local else "server", server_url=server, api_key=key, exercise=exercise,
                           assignment=assignment, timeout_s=timeout_s, language=language)
    except ValidationError as exc:
        raise _fail("; ".join(e["msg"] for e in exc.errors())) from None
    gradescope_zip(config, output)
    err.print(f"wrote {output}: upload it as the assignment's autograder (docs/integrations.md)")


@kits_app.command("prairielearn")
def kit_prairielearn(
    exercise: Annotated[str, typer.Option(help="the exercise the question grades")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="a folder: the grader image context and a question")
    ] = Path("kernelgrade-prairielearn"),
    server: Annotated[
        str, typer.Option(help="kernelgrade's URL as the grader container reaches it")
    ] = "https://grader.example.org",
    assignment: Annotated[str | None, typer.Option(help="the assignment id in kernelgrade")] = None,
) -> None:
    """Write the PrairieLearn external-grader image context and an example question folder."""
    from service.exercises import ExerciseCatalog
    from service.kits.build import prairielearn_kit

    try:
        spec = ExerciseCatalog(Settings().exercises_dir).get(exercise)
    except ExerciseNotFound as exc:
        raise _fail(str(exc)) from None
    prairielearn_kit(output, exercise=spec, server_url=server, assignment=assignment)
    err.print(f"wrote {output}/image (docker build it) and {output}/question (copy into your course's questions/)")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 8000,
    device: DeviceOpt = None,
    sandbox: SandboxOpt = None,
    bootstrap_demo: Annotated[bool,
                              typer.Option(help="on an empty database, create course 'demo' and an admin key in "
                                                "<data_dir>/demo-key.txt")] = False,
) -> None:
    """The whole system on one machine: the API and in-process grading workers (SQLite by default)."""
    import uvicorn

    from service.main import create_app

    settings = _settings(device, sandbox)
    if settings.sandbox == "local" and settings.allow_unsafe_local_sandbox != "yes-i-understand":
        raise _fail("refusing to serve with the unsafe 'local' sandbox: student code would run unisolated. "
                    "Set KERNELGRADE_ALLOW_UNSAFE_LOCAL_SANDBOX=yes-i-understand if you really mean it.")
    if bootstrap_demo:
        _bootstrap_demo(settings)
    err.print(f"kernelgrade on http://{host}:{port} (docs at /docs); database {settings.db_url()}; "
              f"{settings.queue} workers; device {settings.device_mode().value}; sandbox {settings.sandbox}")
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info")


def _bootstrap_demo(settings: Settings) -> None:
    from sqlalchemy import select

    from service.db import store
    from service.db.models import Course

    path = settings.data_dir / "demo-key.txt"
    with _sessions(settings)() as session:
        if session.scalar(select(Course).limit(1)) is not None:
            if path.exists():
                err.print(f"demo key in {path}")
            return
        store.create_course(session, "demo", "demo course")
        _, key = store.create_key(session, course_id="demo", scopes=["admin"], label="bootstrap")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(key + "\n", encoding="utf-8")
    path.chmod(0o600)
    err.print(f"created course 'demo' and an admin key in {path} "
              "(its webhook secret: kernelgrade courses webhook-secret demo)")


@app.command()
def worker(
    concurrency: Annotated[int, typer.Option(help="grading threads; default one per GPU (1 on the interpreter)")] = 0,
    lane: Annotated[str, typer.Option(help="queues: fast (no sandbox: memo hits, written answers, reports), "
                                           "sandbox (program runs), or all; default KERNELGRADE_WORKER_LANE")] = "",
) -> None:
    """A Celery worker over Redis (KERNELGRADE_QUEUE=celery, KERNELGRADE_BROKER_URL)."""
    import os

    from service.worker.celery_app import celery_app, worker_queues

    if lane:
        if lane not in ("all", "fast", "sandbox"):
            raise typer.BadParameter("choose fast, sandbox or all", param_hint="--lane")
        os.environ["KERNELGRADE_WORKER_LANE"] = lane  # the worker's state reads it (no warm pool on a fast lane)
    settings = Settings()
    threads = concurrency or settings.worker_count()
    celery_app().worker_main(["worker", "--pool", "threads", "--concurrency", str(threads), "--loglevel", "INFO",
                              "--without-gossip", "--without-mingle",
                              "--queues", ",".join(worker_queues(settings.worker_lane))])


def main() -> None:
    try:
        app()
    except Exception as exc:
        message = settings_error(exc)
        if message is None:
            raise
        err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
        sys.exit(2)


if __name__ == "__main__":  # `python -m service.cli`, as the kernelgrade script
    main()
