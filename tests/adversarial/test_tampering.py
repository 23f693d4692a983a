"""Tampering with the verdict: forged frames on the verdict channel (its fd is the harness's
sys.argv[2]) and on stdout, monkeypatched checks and harness, a broken channel.

The lesson's given check runs inside the sandbox, in the same process as the submission, so its
verdict ("passed"/"failed") is only as trustworthy as the submission itself: the three forgeries
below make a wrapper that is WRONG in the given check get the given check's points.
"""
from __future__ import annotations

import json

import pytest

from tests.adversarial.kit import (
    DENIED, GOOD_WRAPPER_HEAD, PRELUDE, REGULAR_CASES, assert_denied, assert_failed, assert_graded_normally, case,
    grade, guarded, submission,
)

pytestmark = [pytest.mark.sandbox, pytest.mark.adversarial]

# Fixed weakness (the given check's verdict was decided inside the sandbox): the harness records
# each call of the entry point during the check and the trusted side recomputes it
# (service/grading/given.py), so each forgery below must leave the given check failed.

# Wrong (2x + 1) whenever the given check calls it; right for the harness's cases.
WRONG_IN_THE_GIVEN_CHECK = PRELUDE + GOOD_WRAPPER_HEAD + '''
@FORGERY@
if in_given_check():
    return y + 1
return y
'''


def forging(forgery: str) -> str:
    return submission(wrapper=WRONG_IN_THE_GIVEN_CHECK.replace("@FORGERY@", forgery))


def assert_given_check_forgery_failed(report) -> None:
    # Precondition of the breach: the cases themselves are right (so only the given check can fail).
    assert report.status == "graded" and all(case(report, c).passed for c in REGULAR_CASES)
    # The breach: the given check "passed" although the wrapper returned 2x + 1 there.
    assert report.given_check.status != "passed", "the given check was forged into a pass"
    assert_failed(report)


def test_control_wrong_in_the_given_check_fails_it(host):
    """Without a forgery, the same wrapper fails the given check (and so the whole grade)."""
    report = grade(forging("pass"))
    assert_given_check_forgery_failed(report)
    assert "Tensor-likes are not close" in report.given_check.output
    host.assert_untouched()


def test_forged_given_frame_then_exit(host):
    report = grade(forging('''
if in_given_check():
    verdict_fd = int(sys.argv[2])
    sys.modules["wire"].write_frame(verdict_fd, {"type": "given", "status": "passed", "output": "", "elapsed_s": 0.1})
    os._exit(0)
'''))
    host.assert_untouched()
    assert_graded_normally()
    assert_given_check_forgery_failed(report)


def test_monkeypatched_harness_framing(host):
    report = grade(forging('''
wire = sys.modules["wire"]
if not getattr(wire, "forged", False):
    real_write = wire.write_frame

    def write_frame(fd, message, blob=b""):
        if message.get("type") == "given":
            message = dict(message, status="passed", output="")
        return real_write(fd, message, blob)
    wire.write_frame = write_frame
    wire.forged = True
'''))
    host.assert_untouched()
    assert_graded_normally()
    assert_given_check_forgery_failed(report)


def test_monkeypatched_assert_close(host):
    # The check line evaluates `torch.testing.assert_close` before calling double(x): patch on the
    # first call (and be right there), be wrong from the second on.
    report = grade(submission(wrapper=PRELUDE + GOOD_WRAPPER_HEAD + '''
if in_given_check():
    if getattr(torch.testing, "forged", False):
        return y + 1
    torch.testing.assert_close = lambda *args, **kwargs: None
    torch.testing.forged = True
return y
'''))
    host.assert_untouched()
    assert_graded_normally()
    assert_given_check_forgery_failed(report)


def test_forged_frames_on_stdout_and_stderr_are_ignored(host):
    """Frames claiming passes, with the right tensors, written where the verdict channel is not."""
    report = grade(guarded('''
def attack(x, y):
    from safetensors.torch import save
    wire = sys.modules["wire"]
    frames = wire.encode_frame({"type": "given", "status": "passed", "output": ""})
    for case_id in ("regular.n32", "regular.n17"):
        frames += wire.encode_frame({"type": "case_start", "id": case_id})
        frames += wire.encode_frame({"type": "case", "id": case_id, "status": "ok", "passed": True},
                                    save({"y": y.detach().cpu().contiguous()}))
    frames += wire.encode_frame({"type": "done"})
    for fd in (1, 2):
        os.write(fd, frames)
    sys.stdout.write(frames.decode("latin-1"))
    return False, 5
'''))
    assert_denied(report, details={5.0})
    host.assert_untouched()
    assert_graded_normally()


def test_forged_claims_on_the_verdict_channel_do_not_replace_the_data(host):
    """A case frame for the running case that claims a pass and a full score, with wrong data."""
    report = grade(guarded('''
def attack(x, y):
    from safetensors.torch import save
    if not in_given_check():
        wire = sys.modules["wire"]
        for case_id in ("regular.n32", "regular.n17"):
            if tuple(x.shape) == {"regular.n32": (4, 32), "regular.n17": (3, 17)}[case_id]:
                wire.write_frame(int(sys.argv[2]), {"type": "case", "id": case_id, "status": "ok", "passed": True,
                                                     "score": 10, "error_ratio": 0.0},
                                 save({"y": (y + 0.5).detach().cpu().contiguous()}))
    return False, 6
'''))
    assert_failed(report)
    assert report.given_check.status == "failed"
    for case_id in REGULAR_CASES:
        c = case(report, case_id)
        assert not c.passed
        if c.first_mismatch is None:  # a forged result without guard evidence, or the real one after it
            assert "证据缺失" in (c.error or "") or "违反协议" in (c.error or ""), c
            continue
        # Either the forged wrong data (y + 0.5) or the real DENIED answer was compared; neither passes.
        assert c.first_mismatch.observed is not None
        assert c.first_mismatch.observed >= DENIED - 0.5 or abs(c.first_mismatch.observed - c.first_mismatch.expected - 0.5) < 1e-3
    host.assert_untouched()
    assert_graded_normally()


def test_garbage_and_oversized_frames_on_the_verdict_channel(host):
    report = grade(guarded('''
import struct


def attack(x, y):
    if not in_given_check():
        fd = int(sys.argv[2])
        if tuple(x.shape) == (4, 32):
            os.write(fd, struct.pack(">II", 0xFFFFFFF0, 0xFFFFFFF0) + b"{")  # a 4 GiB frame header
        else:
            os.write(fd, struct.pack(">II", 5, 0) + b"\\xff\\xfe{}}")  # not JSON
    return False, 8
'''))
    assert_failed(report)
    assert report.status == "graded"
    for case_id in REGULAR_CASES:
        error = case(report, case_id).error or ""
        assert "违反协议" in error, error
    host.assert_untouched()
    assert_graded_normally()


FORGED_FATAL = '''
def attack(x, y):
    sys.modules["wire"].write_frame(int(sys.argv[2]), {"type": "fatal", "error": "forged: out of GPU memory"})
    return False, 9
'''

GARBAGE_BETWEEN_PHASES = '''
def attack(x, y):
    if in_given_check():
        fd = int(sys.argv[2])
        # A forged end of the given check (no pass claimed), then bytes that are no frame at all.
        sys.modules["wire"].write_frame(fd, {"type": "given", "status": "failed", "output": "forged"})
        time.sleep(0.5)  # read apart from the garbage: the runner has settled the given check by then
        os.write(fd, b"\\x00\\x00\\x00\\x05\\x00\\x00\\x00\\x00not{}")
    return False, 10
'''


@pytest.mark.parametrize("attack", [FORGED_FATAL, GARBAGE_BETWEEN_PHASES], ids=["forged-fatal", "garbage-between-phases"])
def test_self_inflicted_not_gradable_is_never_a_pass(host, attack):
    report = grade(guarded(attack))
    assert_failed(report)  # a graded fail or a clear not_gradable
    host.assert_untouched()
    assert_graded_normally()




@pytest.mark.parametrize("attack", [FORGED_FATAL, GARBAGE_BETWEEN_PHASES], ids=["forged-fatal", "garbage-between-phases"])
def test_self_inflicted_failure_is_graded_not_blamed_on_the_service(host, attack):
    report = grade(guarded(attack))
    assert report.status == "graded", f"not_gradable by the submission's own doing: {report.message}"
    assert_failed(report)


# --- the verdict channel after start-up: only the harness's first frame may say hello ---------

FORGED_DEVICE = "NVIDIA H100 (forged)"

FORGED_HELLO = '''
def attack(x, y):
    sys.modules["wire"].write_frame(int(sys.argv[2]), {
        "type": "hello", "mode": "gpu", "device": "@DEVICE@", "torch": "9.9.9", "triton": "9.9.9", "python": "3.99"})
    return False, 11
'''


def test_a_second_hello_cannot_rewrite_the_environment(host):
    """A `hello` after start-up would put a device and versions of the submission's choosing into
    the report (and into the memo keys of later gradings): it breaks the channel instead."""
    report = grade(guarded(FORGED_HELLO.replace("@DEVICE@", FORGED_DEVICE)))
    assert report.status == "graded"
    environment = report.environment.model_dump_json()
    assert FORGED_DEVICE not in environment and "9.9.9" not in environment, environment
    assert_failed(report)
    for case_id in REGULAR_CASES:
        assert "违反协议" in (case(report, case_id).error or ""), case(report, case_id)
    host.assert_untouched()
    assert_graded_normally()


# Frames whose JSON is valid but whose content is not: an unpaired surrogate, NUL and terminal
# escapes in the error text; nesting deeper than the parser's recursion; a 5000-digit integer.
HOSTILE_JSON = {
    "surrogates-and-controls": '{"type": "case", "id": "<CASE>", "status": "error", '
                               '"error": "\\ud800 forged\\u0000\\u001b[2J\\udfff end \\u0007"}',
    "deep-nesting": '{"type": "case", "id": "<CASE>", "status": "error", "error": ' + "[" * 20_000 + "]" * 20_000 + "}",
    "huge-integer": '{"type": "case", "id": "<CASE>", "status": "ok", "elapsed_s": ' + "9" * 5000 + "}",
    "wrong-types": '{"type": "case", "id": "<CASE>", "status": "error", "error": {"a": 1}, '
                   '"out_of_bounds": [{"changed": "x"}], "elapsed_s": [1]}',
}

RAW_FRAME = '''
def attack(x, y):
    if not in_given_check():
        case_id = "regular.n32" if tuple(x.shape) == (4, 32) else "regular.n17"
        fd = int(sys.argv[2])
        os.write(fd, sys.modules["wire"].encode_frame({"type": "case_start", "id": case_id}))
        body = @BODY@.replace("<CASE>", case_id).encode()
        os.write(fd, sys.modules["wire"].HEADER.pack(len(body), 0) + body)
        os._exit(0)  # the forged frame is the case's only result
    return False, 12
'''


@pytest.mark.parametrize("body", list(HOSTILE_JSON.values()), ids=list(HOSTILE_JSON))
def test_hostile_frame_content_is_the_submissions_failure(host, body):
    """Whatever a frame holds, the grading ends in a graded report that serialises as UTF-8 and
    holds no control character from the sandbox (never an exception, never not_gradable)."""
    report = grade(guarded(RAW_FRAME.replace("@BODY@", repr(body))))
    assert report.status == "graded", report.message
    assert_failed(report)
    text = report.to_json()
    text.encode("utf-8")  # an unpaired surrogate would raise here (and in the CLI, and the database)
    json.dumps(report.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    for case_id in REGULAR_CASES:
        error = case(report, case_id).error or ""
        assert not any(ord(ch) < 32 and ch not in "\n\t" or 0xD800 <= ord(ch) <= 0xDFFF for ch in error), repr(error)
    host.assert_untouched()
    assert_graded_normally()


# A mark of an inline code (sandbox/gpu_compile.py, `mark`): the trusted side says it in words
# (service/grading/sandbox_text.py, expand_marks). This one is 35 characters and reads 589 in Chinese.
FORGED_MARK = "«kg:sandbox.interpreter_only|line=1»"


def test_forged_marks_do_not_inflate_the_report(host):
    """An error made of inline marks: every string from the sandbox is cut at its limit (8 000
    characters of a traceback), but each mark became its whole message on the trusted side, so one
    case's error grew to 134 000 characters (17 times; a forged frame's 20 000 to 336 000), in every
    case of the report. Only the first few marks of a text are said in words now; the rest stay as
    they were written."""
    report = grade(submission(wrapper=f"raise RuntimeError({FORGED_MARK!r} * 1000)\n"))
    assert_failed(report)
    errors = [c.error or "" for c in report.cases if c.id in REGULAR_CASES]
    assert len(errors) == len(REGULAR_CASES)
    for error in errors:
        assert "GPU 编译从未编译这段代码" in error, error[:500]  # the first marks are still said in words
        assert len(error) <= 20_000, f"a case's error of {len(error)} characters from an 8 000-character traceback"
    assert len(report.to_json()) < 200_000, len(report.to_json())
    host.assert_untouched()
    assert_graded_normally()


# Blobs within the channel's byte caps (16 MiB a case, 64 MiB in all) that name as many tensors as their
# bytes allow: empty ones, about 60 bytes of header each.
MANY_TENSORS = '''
def attack(x, y):
    if in_given_check():
        import numpy as np
        from safetensors.numpy import save
        wire, fd = sys.modules["wire"], int(sys.argv[2])
        def blob():
            return save({f"t{i:07d}": np.zeros((0,), np.float32) for i in range(40_000)})
        wire.write_frame(fd, {"type": "given", "status": "failed", "output": "forged"}, blob())
        for case_id in ("regular.n32", "regular.n17"):
            wire.write_frame(fd, {"type": "case_start", "id": case_id})
            wire.write_frame(fd, {"type": "case", "id": case_id, "status": "ok", "guards": []}, blob())
        sys.stdout.flush()
        os._exit(0)
    return False, 13
'''


def test_blobs_of_a_hundred_thousand_tensors_are_refused_unread(host):
    """Each forged blob names 40 000 empty tensors (2.4 MB; 270 000 fit in a case's 16 MiB): the trusted
    side made a numpy array of each before looking at any (15 MB blobs: 8 s of the worker's CPU, 480 MiB of
    its memory). A blob naming more tensors than the harness ever sends is now unparsable, unread."""
    report = grade(guarded(MANY_TENSORS))
    assert_failed(report)
    for case_id in REGULAR_CASES:
        error = case(report, case_id).error or ""
        assert "输出无法解析" in error and "a safetensors header of" in error, error
    host.assert_untouched()
