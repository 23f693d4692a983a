"""The speed of a student's kernel (issue #6 item 4): GPU only, informational, never points.

The sandbox times the entry point on the exercise's large input (`speed:` in exercise.yaml), then
the author's torch baseline and a plain copy of the input, with `triton.testing.do_bench` (see
sandbox/harness.py `_speed`). Here, on the trusted side, those times become figures next to the
lesson's claim: achieved bandwidth (the bytes the ideal kernel moves / the median time), its share
of the device's HBM ceiling and of the measured copy bandwidth, and the speed-up over the baseline.

The times are measured in the sandbox, in the same process as the student's code, so a submission
that sets out to could fake them: they are shown, never graded, and a figure above the device's
HBM ceiling is marked implausible.
"""
from __future__ import annotations

from sandbox.contract import DeviceMode, SpeedJob, SpeedRun, TensorArg
from service.exercises import ExerciseSpec, SpeedSpec
from service.messages import render
from service.report import BenchTiming, Performance

SPEED_KEY = "@speed"  # prefix of the speed input's keys in inputs.safetensors (case ids cannot start with @)

# Vendor spec-sheet HBM bandwidth (GB/s = 1e9 B/s), by a substring of torch's device name; the
# fallback when the device properties give no memory clock and bus width. Most specific first.
KNOWN_PEAKS_GBPS: tuple[tuple[str, float], ...] = (
    ("H200", 4800.0),
    ("H100 80GB HBM3", 3350.0),  # H100 SXM
    ("H100 NVL", 3900.0),
    ("H100 PCIe", 2000.0),
    ("A100-SXM4-80GB", 2039.0),
    ("A100 80GB PCIe", 1935.0),
    ("A100-SXM4-40GB", 1555.0),
    ("A100-PCIE-40GB", 1555.0),
)

PLAUSIBLE_SHARE = 1.05  # achieved bandwidth above this share of the ceiling cannot be a real read

def speed_job(spec: ExerciseSpec) -> SpeedJob:
    """What the harness needs: the drawn arguments (stacked `repeat` times there), their names for
    the baseline expression, the entry point's keyword arguments and the baseline."""
    speed = spec.speed
    assert speed is not None
    return SpeedJob(args=[TensorArg(key=f"{SPEED_KEY}.{name}") for name in spec.args], names=list(spec.args),
                    repeat=speed.repeat, kwargs=dict(speed.kwargs), baseline=speed.baseline.code)


def speed_inputs(arrays: dict) -> dict:
    """The speed input's arrays under their job keys."""
    return {f"{SPEED_KEY}.{name}": array for name, array in arrays.items()}


def gbps(num_bytes: float, ms: float) -> float:
    """Bandwidth in GB/s (1e9 bytes per second) of moving `num_bytes` in `ms` milliseconds."""
    return num_bytes / (ms * 1e-3) / 1e9


def hbm_peak_gbps(device: dict) -> tuple[float | None, str | None]:
    """The device's HBM ceiling and where it comes from: its own properties (double data rate:
    2 × memory clock × bus width), else the spec sheet by name, else unknown."""
    clock_khz, bus_bits = device.get("memory_clock_khz"), device.get("memory_bus_width_bits")
    if isinstance(clock_khz, (int, float)) and isinstance(bus_bits, (int, float)) and clock_khz > 0 and bus_bits > 0:
        return 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9, "device properties: 2 × memory clock × bus width"
    name = str(device.get("name", ""))
    for needle, peak in KNOWN_PEAKS_GBPS:
        if needle in name:
            return peak, f"spec sheet ({needle})"
    return None, None


def _timing(stats: dict) -> BenchTiming | None:
    return BenchTiming(**stats) if stats else None


def _base(speed: SpeedSpec, cases_passed: bool | None, language: str) -> dict:
    return dict(shape=[speed.rows, speed.cols], ideal_bytes=speed.ideal_bytes, bytes_formula=speed.bytes,
                bytes_note=speed.bytes_note.in_(language), baseline_label=speed.baseline.label.in_(language),
                predicted_speedup=speed.predicted_speedup, claim=speed.claim.in_(language),
                claim_source=speed.claim_source.in_(language), cases_passed=cases_passed)


def unmeasured(speed: SpeedSpec, code: str, *, language: str, cases_passed: bool | None) -> Performance:
    """The card without figures, said by `code`: `speed.pending` (status pending: the figures follow
    as a report revision), `speed.not_passed`, `speed.reused_pending`, `speed.busy` (status not_measured)."""
    status = "pending" if code == "speed.pending" else "not_measured"
    return Performance(status=status, reason=render(code, language), **_base(speed, cases_passed, language))


def performance(speed: SpeedSpec, run: SpeedRun | None, *, mode: DeviceMode, language: str,
                cases_passed: bool | None) -> Performance:
    """The report's `performance` object for an exercise with a `speed:` section."""
    base = _base(speed, cases_passed, language)
    if mode is DeviceMode.interpreter and run is None:  # (a run there has figures only from the tests' CPU timer)
        return Performance(status="not_measured", reason=render("speed.interpreter", language), **base)
    if run is None:
        return Performance(status="not_measured", reason=render("speed.not_run", language), **base)
    device, method = run.device, run.method
    if run.status == "skipped":
        return Performance(status="not_measured", reason=render("speed.skipped", language, error=run.error or ""),
                           **base)
    if run.status == "timeout":  # no figures came back within the phase's budget: the sandbox was killed
        return Performance(status="not_measured", reason=render("speed.timeout", language, error=run.error or ""),
                           device=str(device.get("name", "")), method=method, **base)
    if run.status != "ok":
        return Performance(status="failed", reason=render(f"speed.{run.status}", language, error=run.error or ""),
                           device=str(device.get("name", "")), method=method, **base)

    kernel_ms = run.kernel["median_ms"]
    achieved = gbps(speed.ideal_bytes, kernel_ms)
    peak, peak_source = hbm_peak_gbps(device)
    copy_gbps = gbps(run.copy_bytes, run.copy["median_ms"]) if run.copy and run.copy_bytes else None
    baseline_ms = run.baseline["median_ms"] if run.baseline else None
    plausible = peak is None or achieved <= PLAUSIBLE_SHARE * peak
    notes = _notes(plausible=plausible, cases_passed=cases_passed, language=language)
    if not run.baseline and run.error:
        notes.append(render("speed.baseline_error", language, error=run.error))
    return Performance(
        status="measured", device=str(device.get("name", "")), timed_shape=run.shape, kernel=_timing(run.kernel),
        achieved_gbps=achieved, peak_gbps=peak, peak_source=peak_source,
        percent_of_peak=100 * achieved / peak if peak else None,
        copy_timing=_timing(run.copy), copy_gbps=copy_gbps,
        percent_of_copy=100 * achieved / copy_gbps if copy_gbps else None,
        baseline=_timing(run.baseline), baseline_gbps=gbps(speed.ideal_bytes, baseline_ms) if baseline_ms else None,
        speedup_vs_baseline=baseline_ms / kernel_ms if baseline_ms else None,
        method={**method, "statistic": "median of the repetitions; p20 and p80 for the spread"},
        plausible=plausible, note="\n".join(notes) or None, **base)


def _notes(*, plausible: bool, cases_passed: bool | None, language: str) -> list[str]:
    return ([render("speed.implausible", language)] if not plausible else []) + (
        [render("speed.cases_failed", language)] if cases_passed is False else [])


# The reasons said by a code alone (no sandbox text in them): a card with one of them, or none,
# can be said again in another language from the card itself (`restated`).
FIXED_REASONS = ("speed.pending", "speed.not_passed", "speed.reused_pending", "speed.busy", "speed.interpreter",
                 "speed.not_run", "speed.interrupted")


def restated(card: Performance, speed: SpeedSpec, *, said_in: str, language: str) -> Performance | None:
    """`card` (said in `said_in`) with its words in `language` and everything else its own, for a
    card whose facts are gone (the verdict memo's, a pending one): the spec's texts, a reason said
    by a code alone, the notes of a measured card. None where it holds words of the sandbox (an
    error on the large input, a baseline's error): those are said only from the run itself."""
    reason: str | None = None
    if card.reason is not None:
        code = next((c for c in FIXED_REASONS if card.reason == render(c, said_in)), None)
        if code is None:
            return None
        reason = render(code, language)

    def notes(lang: str) -> str | None:
        if card.status != "measured":
            return None
        return "\n".join(_notes(plausible=card.plausible, cases_passed=card.cases_passed, language=lang)) or None

    if card.note != notes(said_in):
        return None
    base = _base(speed, card.cases_passed, language)
    return card.model_copy(update={"reason": reason, "note": notes(language),
                                   **{k: base[k] for k in ("bytes_note", "baseline_label", "claim", "claim_source")}})
