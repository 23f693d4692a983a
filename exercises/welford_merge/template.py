import torch
import triton
import triton.language as tl

@triton.jit
def welford_kernel(x, means, variances, N, stride_m, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    n = 0.0     # 已合并的元素个数
    mean = 0.0  # 已合并部分的均值
    m2 = 0.0    # 已合并部分的 M2 = Σ(x − mean)²
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        values = tl.load(x + row * stride_m + cols, mask=mask, other=0.0)
        n_b = ______  # TODO: 这一块的元素个数
        mean_b = tl.sum(values, axis=0) / n_b
        m2_b = ______  # TODO: 这一块的 M2_b = Σ(x − mean_b)²
        # Chan 的并行合并：把 (n_b, mean_b, M2_b) 并入 (n, mean, M2)
        n_new = n + n_b
        delta = mean_b - mean
        mean = mean + delta * n_b / n_new
        m2 = m2 + m2_b + ______  # TODO: 合并公式中的修正项
        n = n_new
    tl.store(means + row, mean)
    tl.store(variances + row, m2 / n)

def welford_mean_var(x, block=64):
    assert x.ndim == 2 and x.stride(1) == 1
    M, N = x.shape
    means = torch.empty(M, device=x.device, dtype=torch.float32)
    variances = torch.empty_like(means)
    welford_kernel[(M,)](x, means, variances, N, x.stride(0), BLOCK=block)
    return means, variances

for shape in ((3, 100), (4, 256)):
    x = torch.randn(shape, device="cuda")
    m, v = welford_mean_var(x, block=64)
    torch.testing.assert_close(m, x.mean(1), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(v, x.var(1, unbiased=False), atol=2e-4, rtol=2e-4)
