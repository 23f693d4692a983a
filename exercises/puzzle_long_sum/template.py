import torch
import triton
import triton.language as tl

# Puzzle 7 Long Sum：给定二维张量 x（形状 [N0, T]），对每一行求和，z[i] = sum_j x[i, j]。
# 一个 program 负责 B0 行；一行有 T 个元素，而 B1 < T，所以要沿第二维用 for 循环分块累加。
# 评分环境可能是 Triton 解释器（Triton 3.9，已删除 tl.make_block_ptr）：请用博客里介绍的
# “指针 + mask” 写法（offsets = pid * B0 + tl.arange(0, B0)，mask = offsets < N0 ...）。
@triton.jit
def sum_kernel(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    ______

def long_sum(x, B0=4, B1=32):
    assert x.ndim == 2 and x.is_contiguous()
    N0, T = x.shape
    # z 后面多留 B0 个 哨兵值 −1234.5（评分用）：kernel 越界写入会改动它们，下面的断言会发现。
    buf = torch.full((N0 + B0,), float("nan"), device=x.device, dtype=torch.float32)
    buf[N0:] = -1234.5
    z = buf[:N0]
    sum_kernel[(triton.cdiv(N0, B0),)](x, z, N0, 1, T, B0=B0, B1=B1)
    assert (buf[N0:] == -1234.5).all(), "kernel 写到了 z 的范围之外（store 缺少行方向的 mask？）"
    return z

for N0, T in ((4, 200), (6, 64)):
    x = torch.randn(N0, T, device="cuda")
    torch.testing.assert_close(long_sum(x, B0=1, B1=32), x.sum(1), atol=1e-4, rtol=1e-4)
