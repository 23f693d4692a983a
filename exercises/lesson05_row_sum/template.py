import torch
import triton
import triton.language as tl

@triton.jit
def row_sum_kernel(x, sums, N: tl.constexpr,
                   stride_m: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_start = x + row * ______  # TODO 1：第 row 行的起始地址（相邻两行相隔多少个元素？）
    cols = tl.arange(0, BLOCK)
    # TODO 2：mask= 哪些 lane 是这一行的有效列；TODO 3：other= padding lane 填什么才不改变求和
    values = tl.load(row_start + cols, mask=______, other=______)
    total = tl.sum(values, axis=0)
    tl.store(sums + row, total)

def row_sum(x):
    assert x.ndim == 2 and x.stride(1) == 1
    M, N = x.shape
    sums = torch.empty(M, device=x.device, dtype=x.dtype)
    row_sum_kernel[(M,)](x, sums, N, x.stride(0),
                         BLOCK=triton.next_power_of_2(N))
    return sums

for shape in ((3, 17), (4, 128)):
    x = torch.randn(shape, device="cuda")
    torch.testing.assert_close(row_sum(x), x.sum(1), atol=1e-4, rtol=1e-4)
