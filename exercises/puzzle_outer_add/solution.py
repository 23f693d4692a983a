import torch
import triton
import triton.language as tl

# Puzzle 3/4 Outer Vector Add（分块版）：把两个向量按广播方式相加，得到二维矩阵 z（形状 [N1, N0]）：
#   z[j, i] = x[i] + y[j]
# grid 是二维的：program_id(0) 走 x 的块（每块 B0 个），program_id(1) 走 y 的块（每块 B1 个）。
# 评分环境可能是 Triton 解释器（Triton 3.9，已删除 tl.make_block_ptr）：请用“指针 + mask”写法。
@triton.jit
def add_vec_block_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    pid_0 = tl.program_id(0)
    pid_1 = tl.program_id(1)
    offs_x = pid_0 * B0 + tl.arange(0, B0)
    offs_y = pid_1 * B1 + tl.arange(0, B1)
    mask_x = offs_x < N0
    mask_y = offs_y < N1
    x = tl.load(x_ptr + offs_x, mask=mask_x, other=0.0)
    y = tl.load(y_ptr + offs_y, mask=mask_y, other=0.0)
    z = x[None, :] + y[:, None]
    tl.store(z_ptr + offs_y[:, None] * N0 + offs_x[None, :], z, mask=mask_y[:, None] & mask_x[None, :])

def add_vec_block(x, y, B0=32, B1=32):
    assert x.ndim == 1 and y.ndim == 1
    N0, N1 = x.shape[0], y.shape[0]
    # z 后面多留一段 哨兵值 −1234.5（评分用）：kernel 越界写入会改动它，下面的断言会发现。
    buf = torch.full((N1 * N0 + B1 * N0 + B0,), float("nan"), device=x.device, dtype=torch.float32)
    buf[N1 * N0:] = -1234.5
    z = buf[: N1 * N0].view(N1, N0)
    add_vec_block_kernel[(triton.cdiv(N0, B0), triton.cdiv(N1, B1))](x, y, z, N0, N1, B0=B0, B1=B1)
    assert (buf[N1 * N0:] == -1234.5).all(), "kernel 写到了 z 的范围之外（store 的 mask 不完整？）"
    return z

for N0, N1 in ((100, 90), (64, 32)):
    x = torch.randn(N0, device="cuda")
    y = torch.randn(N1, device="cuda")
    torch.testing.assert_close(add_vec_block(x, y), x[None, :] + y[:, None], atol=1e-5, rtol=1e-5)
