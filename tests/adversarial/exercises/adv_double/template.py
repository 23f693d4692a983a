import torch
import triton
import triton.language as tl

@triton.jit
def double_kernel(x, y, N: tl.constexpr, BLOCK: tl.constexpr):
    ______

def double(x):
    ______

for shape in ((3, 17), (2, 64)):
    x = torch.randn(shape, device="cuda")
    torch.testing.assert_close(double(x), 2 * x)
