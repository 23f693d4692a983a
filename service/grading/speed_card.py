"""The grade first, the speed card after (issue #20 item 1).

A GPU run of an exercise with `speed:` hands its case results back as soon as the sandbox starts
the speed phase (`SandboxRunner.run(detach_speed=True)`, sandbox/speed_phase.py), so timing the
kernel (about 0.45 s on lesson 6) is off the grade's critical path. Then, once the cases are
compared:

- a kernel that did not pass (`kernel_passed`) is not timed: the phase is cancelled (the sandbox
  killed) and the card says `speed.not_passed`;
- with no one to deliver a revision to (a one-off grading: the CLI, tests, the compile warmer), the
  grading waits for the figures as before;
- otherwise the report says `pending`, and a background thread collects the figures (bounded by
  `Limits.speed_timeout_s`), puts them into the memo entry of the program, and hands the card to
  `on_speed`, which the worker turns into a report revision (store.add_speed_revision).

The card never changes points or the pass decision: it is built from the speed figures alone.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from sandbox.contract import Said, SpeedRun
from sandbox.speed_phase import SpeedPhase
from service.grading.memo import VerdictMemo
from service.report import CaseReport, Performance

log = logging.getLogger("kernelgrade.grader")

# The card and the same card in the report's other languages (Report.translations: the revision keeps them too)
OnSpeed = Callable[[Performance, dict[str, Performance]], None]
SPEED_IN_FLIGHT = 8  # per grader: speed phases going on after their grade (each holds a sandbox)


def kernel_passed(cases: list[CaseReport], given_status: str) -> bool:
    """What "passed" means for timing: every graded case passed, and the given check passed where
    the exercise runs one. Written answers, vetoes and the pass rule play no part: the question is
    whether the kernel computes the right thing, and a wrong kernel's speed means little."""
    return bool(cases) and all(c.passed for c in cases) and given_status in ("passed", "not_run")


def follow(phase: SpeedPhase, *, card: Callable[[SpeedRun, str], Performance], language: str, others: Sequence[str],
           memo: VerdictMemo | None, memo_key: str | None, on_speed: OnSpeed, name: str,
           release: Callable[[], None] | None = None) -> threading.Thread:
    """Collect the phase in a thread of its own (never a grading thread's time), then store the card
    in the memo entry (a later reuse of the program shows it) and deliver it, with the same card in
    each of the `others` languages (built from the same figures: `card(run, language)` leaves the
    run as it is). A failure here costs only the card: the revision then says why it has no figures."""

    def run() -> None:
        try:
            speed = phase.collect()  # the run the card is built from, in every language
            result = card(speed, language)
        except Exception:  # noqa: BLE001 - a bug of ours must not leave the sandbox or the card behind
            log.exception("speed phase of %s failed", name)
            phase.cancel()
            speed = SpeedRun(status="skipped", said=Said("sandbox.speed_unparsable"))
            result = card(speed, language)
        finally:
            if release is not None:
                release()  # the sandbox is gone: another grading's phase may go on after its grade
        # The program's own answer (figures, or its error on the large input) is kept for its reuses;
        # a crash or a timeout may be the machine's doing: reuses then say the figures are not in.
        settled = speed.status in ("ok", "error")
        if settled and memo is not None and memo_key is not None and callable(getattr(memo, "set_performance", None)):
            try:
                memo.set_performance(memo_key, result)
            except Exception:  # noqa: BLE001 - the memo is an optimisation
                log.exception("could not store the speed card of %s in the memo", name)
        _deliver(on_speed, result, _said_in(lambda lang: card(speed, lang), others, name), name)

    return _background(run, f"speed-{name[:8]}")


MEMO_POLL_S = 0.1  # how soon a reused grading first looks again for the first run's figures
MEMO_POLL_MAX_S = 2.0  # and at most this far apart (doubling)


def follow_memo(memo: VerdictMemo, key: str, *, within_s: float, fallback: Performance, on_speed: OnSpeed,
                name: str, say: Callable[[Performance, str, str], Performance | None], language: str,
                others: Sequence[str]) -> threading.Thread:
    """A grading that reused an entry whose run is still timing the program: watch the memo entry
    (here or in another process) for its card, at most `within_s`, and deliver it marked `reused`,
    in `language` (the entry's may be another: then said again, or `fallback` where it cannot be);
    `fallback` (not measured) when it does not come. `say(card, said_in, language)`: the card in
    another language (speed.restated; None where it cannot be said again), here each of `others`."""

    def run() -> None:
        deadline = time.monotonic() + within_s
        card = fallback
        pause = MEMO_POLL_S
        while time.monotonic() < deadline:
            try:
                entry = memo.get(key)
            except Exception:  # noqa: BLE001 - the memo is an optimisation: give the fallback
                log.exception("could not read the memo entry %s for the speed card of %s", key[:12], name)
                break
            if entry is None or entry.performance is None:
                break  # the entry is gone (an exercise update, a purge): nothing will come
            if entry.performance.status != "pending":
                found = (entry.performance if entry.language == language
                         else say(entry.performance, entry.language, language))
                card = found.model_copy(update={"reused": True}) if found is not None else fallback
                break
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(2 * pause, MEMO_POLL_MAX_S)  # a burst of reuses of one slow program: few queries
        _deliver(on_speed, card, _said_in(lambda lang: say(card, language, lang), others, name), name)

    return _background(run, f"speed-memo-{name[:8]}")


def _said_in(card_in: Callable[[str], Performance | None], languages: Sequence[str],
             name: str) -> dict[str, Performance]:
    """The card in each language that it can be said in; none on a failure (an addition: the card
    then stays in the report's language)."""
    try:
        return {lang: said for lang in languages if (said := card_in(lang)) is not None}
    except Exception:  # noqa: BLE001
        log.exception("could not say the speed card of %s in the other language", name)
        return {}


def _deliver(on_speed: OnSpeed, card: Performance, translations: dict[str, Performance], name: str) -> None:
    try:
        on_speed(card, translations)
    except Exception:  # noqa: BLE001 - the grade stands; the report stays `pending`
        log.exception("could not deliver the speed card of %s", name)


def _background(run: Callable[[], None], name: str) -> threading.Thread:
    thread = threading.Thread(target=run, daemon=True, name=name)
    thread.start()
    return thread
