import torch
import triton
import triton.language as tl

@triton.jit
def mean_var_kernel(x, means, variances, N: tl.constexpr,
                    stride_m: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    values = tl.load(x + row * stride_m + cols, mask=mask, other=0.0)
    mean = tl.sum(values, axis=0) / N
    centered_sq = tl.where(mask, (values - mean) * (values - mean), 0.0)  # re-mask: padding lanes hold mu^2 here
    var = tl.sum(centered_sq, axis=0) / N
    tl.store(means + row, mean)
    tl.store(variances + row, var)



def mean_var(x):   # comments and blank lines are not edits
    assert x.ndim == 2 and x.stride(1) == 1
    M, N = x.shape
    means = torch.empty(M, device=x.device, dtype=x.dtype)
    variances = torch.empty_like(means)
    mean_var_kernel[(M,)](x, means, variances, N, x.stride(0),
                          BLOCK=triton.next_power_of_2(N))
    return means, variances

for shape in ((3, 17), (4, 128)):
    x = torch.randn(shape, device="cuda")
    m, v = mean_var(x)
    torch.testing.assert_close(m, x.mean(1), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(v, x.var(1, unbiased=False), atol=2e-4, rtol=2e-4)
