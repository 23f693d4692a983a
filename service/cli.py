"""The `kernelgrade` command line: thin commands over the pipeline."""
from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from service.config import Settings
from service.exercises import ExerciseCatalog, ExerciseNotFound
from service.grading.pipeline import build_grader
from service.grading.validate import Outcome, code_points, validate_exercise
from service.report import Report
from service.submission import Submission

app = typer.Typer(help="kernelgrade: grade Triton kernel exercises in a sandbox.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
exercises_app = typer.Typer(help="List and validate exercises.", no_args_is_help=True)
app.add_typer(exercises_app, name="exercises")
err = Console(stderr=True)

DeviceOpt = Annotated[Literal["auto", "gpu", "interpreter"] | None,
                      typer.Option("--device", help="where kernels run (default: GPU if present, else the Triton interpreter)")]
SandboxOpt = Annotated[Literal["bwrap", "local"] | None, typer.Option("--sandbox", help="sandbox backend (default: bwrap)")]
SeedOpt = Annotated[int | None, typer.Option("--secret-seed", help="replay a run: the secret seed from its report")]


def _settings(device: str | None, sandbox: str | None) -> Settings:
    overrides = {k: v for k, v in (("device", device), ("sandbox", sandbox)) if v is not None}
    return Settings(**overrides)


def _fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code)


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
    format: Annotated[Literal["json", "text"], typer.Option("--format", help="json: exactly the report")] = "text",
    secret_seed: SeedOpt = None,
    device: DeviceOpt = None,
    sandbox: SandboxOpt = None,
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
    else:
        print_report(report, Console())


def print_report(report: Report, console: Console) -> None:
    score = report.score
    if report.status == "not_gradable":
        console.print(f"[bold yellow]not gradable[/]: {report.message}")
        return
    verdict = "[green]PASS[/]" if score.passed else "[red]NOT PASSED[/]"
    provisional = "（暂定，待助教复核）" if score.provisional else ""
    console.print(f"[bold]{report.exercise.id}[/] v{report.exercise.version}: {score.total:g}/{score.max:g} "
                  f"(pass ≥ {score.pass_threshold:g}) {verdict}{provisional}")
    env = report.environment
    console.print(f"graded on {env.backend} ({env.device}), sandbox {env.sandbox}, torch {env.torch}, triton {env.triton}; "
                  f"secret seed {report.seeds.secret if report.seeds else '-'}", style="dim")
    if report.program and report.program.fills:
        console.print(f"fill: {report.program.fills}", style="dim", highlight=False)
    for item in report.items:
        console.print(f"\n[bold]{item.id}[/] {escape(item.title)}: {item.points:g}/{item.max_points:g} \\[{item.status}]")
        console.print(item.feedback, markup=False, highlight=False)
    for veto in report.vetoes:
        console.print(f"\n[bold red]veto {veto.rule}[/] ({veto.status})", highlight=False)
        for edit in veto.evidence.get("edits", []):
            console.print(f"  line {edit['submission_line'] or edit['template_line']}: {edit['reason']}", markup=False, highlight=False)
            if edit.get("hint"):
                console.print(f"  {edit['hint']}", markup=False, highlight=False)
        if note := veto.evidence.get("note"):
            console.print(f"  {note}", markup=False, highlight=False)


@exercises_app.command("list")
def list_exercises() -> None:
    """The exercises in the catalog."""
    catalog = ExerciseCatalog(Settings().exercises_dir)
    for exercise_id in catalog.ids():
        ex = catalog.get(exercise_id)
        print(f"{exercise_id}\tv{ex.spec.version}\t{ex.spec.title}\t{len(ex.spec.cases)} cases, {len(ex.mutants)} mutants")


@exercises_app.command("validate")
def validate(
    exercise_id: Annotated[str, typer.Argument(help="exercise id, e.g. lesson06_mean_var")],
    secret_seed: SeedOpt = None,
    device: DeviceOpt = None,
    sandbox: SandboxOpt = None,
    report_dir: Annotated[Path | None, typer.Option(help="also write every report as JSON here")] = None,
) -> None:
    """Grade the reference solution and every mutant; exit 1 if the solution loses a code point or a mutant escapes."""
    settings = _settings(device, sandbox)
    grader = build_grader(settings)
    try:
        exercise = grader.catalog.get(exercise_id)
    except ExerciseNotFound as exc:
        raise _fail(str(exc)) from None
    seed = secret_seed if secret_seed is not None else secrets.randbits(63)
    total = 1 + len(exercise.mutants)
    err.print(f"validating {exercise_id}: solution + {len(exercise.mutants)} mutants on {grader.mode.value} "
              f"({grader.runner.backend.name} sandbox), secret seed {seed}")
    table = Table("answer", "verdict", "code pts", "vetoes", "diagnoses", "time s")
    done = []

    def show(outcome: Outcome) -> None:
        done.append(outcome)
        r = outcome.report
        mark = "[green]ok[/]" if outcome.ok else "[red]FAIL[/]"
        err.print(f"[{len(done)}/{total}] {mark} {outcome.name}" + ("" if outcome.ok else f": {'; '.join(outcome.problems)}"),
                  highlight=False)
        table.add_row(outcome.name, "ok" if outcome.ok else "FAIL", f"{code_points(r, exercise):g}",
                      ",".join(v.rule for v in r.vetoes), ",".join(d.id for d in r.diagnoses), f"{r.timing.get('total_s', 0):.1f}")
        if report_dir is not None:
            report_dir.mkdir(parents=True, exist_ok=True)
            (report_dir / f"{outcome.name}.json").write_text(r.to_json(), encoding="utf-8")

    outcomes = validate_exercise(grader, exercise, secret_seed=seed, on_result=show)
    Console().print(table)
    failed = [o for o in outcomes if not o.ok]
    if failed:
        raise _fail(f"{len(failed)} of {len(outcomes)} answers did not get their expected verdict: "
                    + ", ".join(o.name for o in failed), code=1)
    err.print(f"[green]all {len(outcomes)} answers got their expected verdicts[/]")


def main() -> None:
    app()
