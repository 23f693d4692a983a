import time

import torch
import triton
import triton.language as tl

@triton.jit
def double_kernel(x, y, N: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    values = tl.load(x + row * N + cols, mask=mask, other=0.0)
    tl.store(y + row * N + cols, values * 2, mask=mask)

def double(x):
    time.sleep(______)
    x = x.contiguous()
    y = torch.empty_like(x)
    M, N = x.shape
    double_kernel[(M,)](x, y, N, BLOCK=triton.next_power_of_2(N))
    return y

for shape in ((3, 17),):
    x = torch.randn(shape, device="cuda")
    torch.testing.assert_close(double(x), 2 * x)
