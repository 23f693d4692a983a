"""Guard regions around a case's buffers (sandbox/harness.py `_Guards`), the trusted side's check of
the guard bytes the harness sends (sandbox/guards.py) and the words the student reads
(service/grading/bounds.py). Plain CPU tensors, no sandbox: stray accesses are made by hand
through a wider view of the same storage. tests/adversarial/test_kernel.py runs real kernels."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sandbox import guards as guards_module
from sandbox import harness
from sandbox.guards import check as check_guards
from sandbox.harness import GUARD_ALIGN, _Guards
from service.grading.bounds import describe
from service.report import OutOfBounds


def wider(tensor: torch.Tensor, before: int, after: int) -> torch.Tensor:
    """A flat view of `tensor`'s storage from `before` elements before its data to `after` past it."""
    return torch.empty(0, dtype=tensor.dtype).set_(
        tensor.untyped_storage(), tensor.storage_offset() - before, (before + tensor.numel() + after,), (1,))


def checked(guards: _Guards, outputs: dict | None = None) -> list[dict]:
    """What the trusted side finds in the evidence the harness would send."""
    records, raw = guards.evidence(outputs or {})
    found, missing = check_guards(records, {k: v.numpy() for k, v in raw.items()}, required=set())
    assert missing is None, missing
    return found


def breach_of(guards: _Guards, outputs: dict | None = None) -> list[dict]:
    found = checked(guards, outputs)
    assert found, "no breach found"
    return found


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64,
                                   torch.int32, torch.int8, torch.uint8, torch.bool, torch.complex64])
def test_an_input_keeps_its_values_and_alignment_and_its_guards_hold(dtype):
    guards = _Guards(torch, "f")
    data = (torch.arange(12) % 3).to(dtype).reshape(3, 4)
    tensor = guards.input("x", data, "cpu")
    assert torch.equal(tensor, data) and tensor.dtype == dtype and tensor.is_contiguous()
    assert tensor.data_ptr() % GUARD_ALIGN == 0 and not tensor._is_view()
    assert checked(guards) == []  # nothing changed: no breach


def test_floating_guards_are_nan_so_a_read_past_an_input_shows():
    guards = _Guards(torch, "f")
    tensor = guards.input("x", torch.ones(2, 5), "cpu")
    around = wider(tensor, 1, 1)
    assert math.isnan(around[0].item()) and math.isnan(around[-1].item())
    assert around[-1].item() * 0 != 0  # NaN survives the arithmetic a kernel would do with it


def test_columns_view_and_requires_grad_leaf_of_a_guarded_input():
    guards = _Guards(torch, "f")
    wide = torch.arange(24, dtype=torch.float32).reshape(3, 8)  # a strided case: the trusted side's wide rows
    leaf = guards.input("x", wide, "cpu")[:, :5].detach().requires_grad_(True)
    assert leaf.is_leaf and leaf.stride() == (8, 1) and torch.equal(leaf, wide[:, :5])
    (leaf * 2).sum().backward()
    assert torch.equal(leaf.grad, torch.full((3, 5), 2.0))
    assert checked(guards) == []


def test_allocations_in_the_entry_point_are_guarded_with_the_same_semantics():
    guards = _Guards(torch, "f")
    x = torch.randn(3, 5)
    with guards.allocations():
        made = {
            "empty_like": torch.empty_like(x), "zeros": torch.zeros(3, 5), "ones_like": torch.ones_like(x),
            "full": torch.full((4,), 7), "new_zeros": x.new_zeros((2, 2)), "new_full": x.new_full((2,), 1.5),
            "empty_strided": torch.empty_strided((2, 3), (1, 2)),
            "zeros_grad": torch.zeros(2, 2, requires_grad=True), "int": torch.zeros(5, dtype=torch.int32),
        }
        meta = torch.empty(3, device="meta")
        empty = torch.empty(0)
    assert guards.allocated == len(made)
    assert torch.equal(made["zeros"], torch.zeros(3, 5)) and torch.equal(made["ones_like"], torch.ones(3, 5))
    assert torch.equal(made["full"], torch.full((4,), 7)) and made["full"].dtype == torch.int64
    assert torch.equal(made["new_full"], torch.full((2,), 1.5)) and made["empty_strided"].stride() == (1, 2)
    assert made["zeros_grad"].requires_grad and made["zeros_grad"].is_leaf
    assert all(t.data_ptr() % GUARD_ALIGN == 0 and not t._is_view() for t in made.values())
    assert meta.device.type == "meta" and empty.numel() == 0  # left as torch made them
    for t in made.values():
        if not t.requires_grad:
            t.fill_(1)  # writing every element of the data is in bounds
    assert checked(guards) == []


POISON = {torch.float32: (torch.int32, 0x7FFE0000), torch.float64: (torch.int64, 0x7FFFC00000000000),
          torch.float16: (torch.int16, 0x7FF0), torch.bfloat16: (torch.int16, 0x7FFE),
          torch.int8: (torch.int8, 0x7E), torch.int16: (torch.int16, 0x7EAD), torch.int32: (torch.int32, 0x7EADBEEF),
          torch.int64: (torch.int64, 0x7EADBEEF7EADBEEF), torch.uint8: (torch.uint8, 0xDE)}


def poisoned_everywhere(t: torch.Tensor) -> bool:
    kind, bits = POISON[t.dtype]
    return bool((t.view(kind) == bits).all())


@pytest.mark.parametrize("dtype", list(POISON))
def test_uninitialised_allocations_are_poisoned_and_filled_ones_are_not(dtype):
    guards = _Guards(torch, "f")
    x = torch.zeros(3, 5, dtype=dtype)
    with guards.allocations():
        empty = [torch.empty(7, dtype=dtype), torch.empty_like(x), x.new_empty((4,)),
                 torch.empty_strided((2, 3), (4, 1), dtype=dtype), x.new_empty_strided((2,), (3,))]
        zeros = torch.zeros(6, dtype=dtype)
    assert guards.allocated == 6
    assert all(poisoned_everywhere(t) for t in empty)
    strided = guards.buffers[3]  # the gaps between empty_strided's rows too: the whole span
    assert poisoned_everywhere(strided["buffer"][strided["start"]:strided["start"] + strided["span"]])
    assert torch.equal(zeros, torch.zeros(6, dtype=dtype))
    assert checked(guards) == []  # the poison is data, not a changed guard


def test_poison_reaches_unguarded_allocations():
    guards = _Guards(torch, "f")
    guards.allocated = harness.MAX_GUARDED_ALLOCATIONS  # past the cap: left where torch made it
    with guards.allocations():
        past_cap = torch.empty(4)
        grad = torch.empty(3, requires_grad=True)
        made, bools = torch.empty(5, dtype=torch.float16), torch.empty(3, dtype=torch.bool)
    assert guards.buffers == [] and poisoned_everywhere(past_cap) and poisoned_everywhere(grad.detach())
    assert grad.requires_grad and grad.is_leaf
    assert poisoned_everywhere(made) and bool(bools.all())
    nan = made.float()
    assert bool(torch.isnan(nan).all()) and bool(torch.isnan(nan * 0).all())  # mul_(0) does not zero it


def test_a_write_as_far_past_as_the_data_is_long_lands_in_the_guard():
    """A wrong row stride or block offset writes up to about the data's own length past it (the
    puzzle's row stride N1 for N0 on a 64 x 32 z: 1487 elements past a buffer of 2576). Each guard
    is as wide as the data, and at least GUARD_REACH_BYTES: such writes change the guard, where
    the trusted side sees them, instead of memory past the buffer (on the interpreter the heap,
    where they went unseen or aborted the process)."""
    guards = _Guards(torch, "f")
    x = guards.input("x", torch.randn(64, 40), "cpu")
    with guards.allocations():
        y = torch.empty_like(x)
        small = torch.zeros(5)
    wider(y, 0, y.numel())[-1] = 1.5  # as far past y as y is long
    wider(small, 0, harness.GUARD_REACH_BYTES // 4)[-1] = 2.5  # a BLOCK of 4096 past five elements
    wider(x, x.numel(), 0)[0] = 3.5  # as far before x
    before, past_y, past_small = breach_of(guards, {"y": y})
    assert (before["buffer"], before["side"], before["distance"], before["index"], before["value"]) == \
        ("x", "before", x.numel() - 1, -x.numel(), "3.5")
    assert (past_y["output"], past_y["side"], past_y["changed"], past_y["distance"], past_y["index"]) == \
        ("y", "after", 1, y.numel() - 1, 2 * y.numel() - 1)
    assert (past_small["side"], past_small["distance"], past_small["value"]) == \
        ("after", harness.GUARD_REACH_BYTES // 4 - 1, "2.5")


def test_wide_guards_stay_within_the_cases_budget():
    """Each side widens to at most WIDE_GUARD_MAX_BYTES, and the case's widened guards together to
    MAX_WIDE_GUARD_BYTES (they go back with its outputs); past that a buffer has the least guard,
    which still catches a write just past it."""
    guards = _Guards(torch, "f")
    big = harness.WIDE_GUARD_MAX_BYTES  # bytes of data per buffer: each side wants as much
    with guards.allocations():
        made = [torch.zeros(big // 4) for _ in range(harness.MAX_WIDE_GUARD_BYTES // big)]
    records, raw = guards.evidence({})
    sides = [raw[f"__guard__.{i}.{side}"].numel() for i in range(len(made)) for side in ("before", "after")]
    least = 256
    assert sum(max(0, n - least - GUARD_ALIGN) for n in sides) <= harness.MAX_WIDE_GUARD_BYTES
    assert max(sides) <= big + GUARD_ALIGN  # (the after side also holds the alignment slack)
    assert min(sides[:2]) >= big and max(sides[-2:]) <= least + GUARD_ALIGN  # the first wide, the last least
    wider(made[-1], 0, 1)[-1] = 7.0
    [breach] = breach_of(guards)
    assert (breach["distance"], breach["index"], breach["guard"]) == (0, big // 4, sides[-1] // 4)


def test_a_write_one_past_an_allocated_output_is_reported_with_evidence():
    guards = _Guards(torch, "double")
    x = guards.input("x", torch.randn(3, 17), "cpu")
    with guards.allocations():
        y = torch.empty_like(x)
    y.copy_(2 * x)
    wider(y, 0, 1)[-1] = 4.25  # one element past the end
    [evidence] = breach_of(guards, {"y": y})
    assert evidence == {"buffer": "a tensor allocated in double", "kind": "allocated", "output": "y", "side": "after",
                        "changed": 1, "distance": 0, "index": 51, "guard": evidence["guard"], "value": "4.25",
                        "shape": [3, 17], "dtype": "float32"}
    assert evidence["guard"] >= harness.GUARD_ELEMENTS


def test_nan_written_past_an_output_is_still_seen():
    """The canary compares bits: the CPU's and the GPU's own NaN, and another buffer's guard
    value at the same place (x read one past its end, stored one past y's end), all differ."""
    for nan_bits in (0x7FC00000, 0x7FFFFFFF, None):
        guards = _Guards(torch, "double")
        x = guards.input("x", torch.randn(4, 8), "cpu")
        with guards.allocations():
            y = torch.zeros_like(x)
        past_y = wider(y, 0, 1)
        if nan_bits is None:
            past_y[-1] = wider(x, 0, 1)[-1]
        else:
            past_y.view(torch.int32)[-1] = nan_bits
        [evidence] = breach_of(guards, {"y": y})
        assert evidence["value"] == "nan" and evidence["output"] == "y"


def test_writes_before_an_input_and_past_a_temporary_are_reported():
    guards = _Guards(torch, "f")
    x = guards.input("x", torch.randn(10), "cpu")
    with guards.allocations():
        scratch = torch.empty(6, dtype=torch.int32)
    wider(x, 3, 0)[:2] = 0.0  # elements 3 and 2 before the start
    wider(scratch, 0, 9)[-3:] = 5  # elements 7..9 past the end
    before, after = breach_of(guards)
    assert (before["buffer"], before["kind"], before["side"], before["changed"], before["distance"], before["index"]) == \
        ("x", "input", "before", 2, 1, -2)
    assert (after["kind"], after["output"], after["side"], after["changed"], after["distance"], after["index"]) == \
        ("allocated", None, "after", 3, 6, 12)


def test_malformed_or_missing_evidence_is_never_a_clean_bill():
    guards = _Guards(torch, "double")
    guards.input("x", torch.arange(17, dtype=torch.float32), "cpu")
    records, raw = guards.evidence({})
    raw = {k: v.numpy() for k, v in raw.items()}
    assert check_guards(records, raw, required={"x"}) == ([], None)
    assert check_guards([], {}, required={"x"})[1] == "no guard evidence for input x"  # guarding switched off
    assert check_guards("forged", raw, required=set())[1] is not None
    for broken in ({**records[0], "salt": 5}, {**records[0], "dtype": "float32 ; x"}, {**records[0], "itemsize": 8}, {**records[0], "span": -1},
                   {**records[0], "index": 3}, {**records[0], "shape": "big"}):
        assert check_guards([broken], raw, required=set())[1] is not None, broken
    short = {**raw, "__guard__.0.after": raw["__guard__.0.after"][:8]}
    assert "shorter" in check_guards(records, short, required=set())[1]
    changed = {**raw, "__guard__.0.after": raw["__guard__.0.after"].copy()}
    changed["__guard__.0.after"][:4] = 0  # +0.0 just past the data
    [breach] = check_guards(records, changed, required={"x"})[0]
    assert (breach["side"], breach["changed"], breach["distance"], breach["index"], breach["value"]) == \
        ("after", 1, 0, 17, "0.0")
    OutOfBounds(**breach)  # fits the report's model


def test_the_student_reads_what_was_written_where_and_the_misconception():
    one_past = OutOfBounds(buffer="a tensor allocated in double", kind="allocated", output="y", side="after",
                           changed=1, distance=0, index=51, guard=96, value="nan", shape=[3, 17], dtype="float32")
    zh = describe([one_past], language="zh", entry_point="double")
    assert zh.startswith("越界写入：") and "\n" not in zh
    for part in ("输出 y", "double 里分配", "末尾之后", "1 个元素", "NaN", "mask 多放进了一个元素", "cols < N + 1", "cols <= N"):
        assert part in zh, part
    en = describe([one_past], language="en", entry_point="double")
    assert en.startswith("Out-of-bounds write:") and "one element too many" in en
    before = describe([one_past.model_copy(update={"side": "before", "kind": "input", "buffer": "x", "output": None,
                                                   "value": "0.0", "changed": 2})], language="zh", entry_point="double")
    assert "输入 x" in before and "开头之前" in before and "下界" in before


def test_a_write_three_lengths_past_the_largest_buffer_lands_in_the_guard():
    """Each side reaches GUARD_REACH_FACTOR (4) times the case's largest buffer, not only its own
    length: an output of M elements written at an index scaled by the input's row length (M * D)
    still writes into y's guard, and so does a write 3N past an output of N (64 KiB here, where a
    guard as long as the data was N elements and the write landed past it)."""
    guards = _Guards(torch, "f")
    case = {"id": "c", "args": [{"key": "c.x"}]}
    (x,), _, _ = harness._case_args(guards, case, {"c.x": torch.randn(64, 256)}, "cpu")
    n = x.numel()
    with guards.allocations():
        y = torch.empty(64)  # one value per row
        z = torch.empty_like(x)
    wider(y, 0, n + 1)[-1] = 1.5  # at y[64 + 16384]: the input's length past y's end
    wider(z, 0, 3 * n + 1)[-1] = 2.5  # at z[N + 3N]
    past_y, past_z = breach_of(guards, {"y": y, "z": z})
    assert (past_y["output"], past_y["distance"], past_y["value"]) == ("y", n, "1.5")
    assert (past_z["output"], past_z["distance"], past_z["index"], past_z["value"]) == ("z", 3 * n, 4 * n, "2.5")
    assert past_z["guard"] >= harness.GUARD_REACH_FACTOR * n


def test_the_guards_travel_compressed_and_are_inflated_within_bounds():
    """The harness sends each guard zlib-compressed (`__guardz__`): MiBs of a repeating pattern in a few
    KiB. The trusted side inflates each within MAX_SIDE_BYTES and the case's MAX_CASE_BYTES, and an
    oversized or malformed stream is missing evidence, never a clean bill."""
    import zlib

    from sandbox import guards as trusted

    guards = _Guards(torch, "f")
    guards.input("x", torch.randn(256, 256), "cpu")  # 256 KiB: guards of 1 MiB a side
    records, packed = guards.packed({})
    assert set(packed) == {"__guardz__.0.before", "__guardz__.0.after"}
    assert sum(t.numel() for t in packed.values()) < 64 << 10
    raw = {k: v.numpy() for k, v in packed.items()}
    assert check_guards(records, raw, required={"x"}) == ([], None)
    bomb = np.frombuffer(zlib.compress(b"\0" * (trusted.MAX_SIDE_BYTES + 1)), dtype=np.uint8)
    for bad in (bomb, np.frombuffer(b"not zlib", dtype=np.uint8), raw["__guardz__.0.after"][:-5]):
        found, missing = check_guards(records, {**raw, "__guardz__.0.after": bad}, required={"x"})
        assert found == [] and missing is not None and "inflate" in missing


@pytest.mark.parametrize("dtype,itemsize", [("float32", 4), ("float64", 8), ("float16", 2), ("bfloat16", 2),
                                            ("int8", 1), ("int16", 2), ("int32", 4), ("int64", 8), ("uint8", 1),
                                            ("bool", 1), ("complex64", 8)])
def test_the_pattern_by_its_period_is_the_element_wise_formula(dtype, itemsize):
    """The trusted side builds each guard's pattern by repeating one period (61 elements): byte for byte what
    the element-wise formula gives, for every salt a guard gets and lengths that are no multiple of 61."""
    for salt in (0, 23, 61, 23 * 7, 23 * 79):
        for count in (1, 60, 61, 62, 64, 1000, 4099):
            assert guards_module.pattern(dtype, salt, count, itemsize) == guards_module._pattern_elementwise(
                dtype, salt, count, itemsize), (salt, count)


def test_a_single_changed_byte_anywhere_in_a_long_guard_is_found():
    """The unchanged guard is passed on one comparison of its bytes; one byte changed at the start, in the
    middle or at the end of a guard of several periods still reads as a breach at its place."""
    x = torch.arange(4096, dtype=torch.float32)
    for index in (0, 2000, -1):
        guards = _Guards(torch, "f")
        placed = guards.input("x", x, "cpu")
        entry = guards.buffers[0]
        after = entry["buffer"][entry["start"] + entry["span"]:]
        after.view(torch.uint8)[index * 4 if index >= 0 else index] ^= 1
        [found] = checked(guards, {"x": placed})
        assert found["side"] == "after" and found["changed"] == 1
        assert found["distance"] == (index if index >= 0 else after.numel() - 1)
