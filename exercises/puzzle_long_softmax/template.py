import torch
import triton
import triton.language as tl

# Puzzle 8 Long Softmax：对一批 logits（形状 [N0, T]）按行做数值稳定的 softmax：
#   z[i, j] = exp(x[i, j] - max_i) / sum_k exp(x[i, k] - max_i)
# 一个 program 负责 B0 行；B1 < T，一行要分块循环（博客：先用 Online Softmax 一遍求出每行的 max 与 sum，
# 再一遍写出结果）。博客建议用 exp2：exp(x) = 2^(log2(e)·x)，log2(e) ≈ 1.44269504。
# 评分环境可能是 Triton 解释器（Triton 3.9，已删除 tl.make_block_ptr）：请用“指针 + mask”写法。
@triton.jit
def softmax_kernel(x_ptr, z_ptr, N0, N1, T, B0: tl.constexpr, B1: tl.constexpr):
    ______

def long_softmax(x, B0=4, B1=32):
    assert x.ndim == 2 and x.is_contiguous()
    N0, T = x.shape
    # z 后面多留 B0 行 哨兵值 −1234.5（评分用）：kernel 越界写入会改动它们，下面的断言会发现。
    buf = torch.full(((N0 + B0) * T,), float("nan"), device=x.device, dtype=torch.float32)
    buf[N0 * T:] = -1234.5
    z = buf[: N0 * T].view(N0, T)
    softmax_kernel[(triton.cdiv(N0, B0),)](x, z, N0, 1, T, B0=B0, B1=B1)
    assert (buf[N0 * T:] == -1234.5).all(), "kernel 写到了 z 的范围之外（store 缺少行方向的 mask？）"
    return z

for N0, T in ((4, 200), (6, 64)):
    x = torch.randn(N0, T, device="cuda")
    torch.testing.assert_close(long_softmax(x, B0=1, B1=32), torch.softmax(x, dim=1), atol=1e-6, rtol=1e-4)
