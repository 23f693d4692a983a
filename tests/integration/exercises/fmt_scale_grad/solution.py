import torch
import triton
import triton.language as tl

@triton.jit
def scale_kernel(x, w, acc, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    xv = tl.load(x + row * N + cols, mask=mask, other=0.0)
    wv = tl.load(w + cols, mask=mask, other=0.0)
    prev = tl.load(acc + row * N + cols, mask=mask, other=0.0)
    tl.store(acc + row * N + cols, prev + xv * wv, mask=mask)

class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, acc, block):
        acc.zero_()
        scale_kernel[(x.shape[0],)](x, w, acc, x.shape[1], BLOCK=block)
        ctx.save_for_backward(x, w)
        return acc.clone()

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        return dy * w, (dy * x).sum(0), None, None

def scale(x, w, acc, block=32):
    return Scale.apply(x, w, acc, block)

for n in (5, 9):
    x = torch.randn(2, n, device="cuda")
    assert torch.allclose(scale(x, torch.ones(n, device="cuda"), torch.zeros_like(x), 16), x)
