import torch
import triton
import triton.language as tl

# 加权求和 y[i] = sum_j w[j] * x[i, j] 的前向与反向（博客 “Weighted Sum”，CS336 Assignment 2）。
# 每个 program 负责 x 的一个行块（ROWS_TILE_SIZE 行），沿 D 方向每次处理 D_TILE_SIZE 列。
# 注意：Triton 3.9 已删除 tl.make_block_ptr；这个练习按博客使用 block pointer，只在 GPU（Triton 3.6）上评分。
@triton.jit
def weighted_sum_fwd(
    x_ptr, weight_ptr, output_ptr,
    x_stride_row, x_stride_dim, weight_stride_dim, output_stride_row,
    ROWS, D,
    ROWS_TILE_SIZE: tl.constexpr, D_TILE_SIZE: tl.constexpr,
):
    row_tile_idx = tl.program_id(0)
    x_block_ptr = tl.make_block_ptr(
        x_ptr, shape=(ROWS, D), strides=(x_stride_row, x_stride_dim),
        offsets=(row_tile_idx * ROWS_TILE_SIZE, 0), block_shape=(ROWS_TILE_SIZE, D_TILE_SIZE), order=(1, 0),
    )
    weight_block_ptr = tl.make_block_ptr(
        weight_ptr, shape=(D,), strides=(weight_stride_dim,),
        offsets=(0,), block_shape=(D_TILE_SIZE,), order=(0,),
    )
    output_block_ptr = tl.make_block_ptr(
        output_ptr, shape=(ROWS,), strides=(output_stride_row,),
        offsets=(row_tile_idx * ROWS_TILE_SIZE,), block_shape=(ROWS_TILE_SIZE,), order=(0,),
    )
    output = tl.zeros((ROWS_TILE_SIZE,), dtype=tl.float32)
    for i in range(tl.cdiv(D, D_TILE_SIZE)):
        row = tl.load(x_block_ptr, boundary_check=______, padding_option="zero")  # TODO 1: 哪些维度要检查边界？
        weight = tl.load(weight_block_ptr, boundary_check=(0,), padding_option="zero")
        output += tl.sum(row * weight[None, :], axis=1)
        x_block_ptr = x_block_ptr.advance(______)  # TODO 2: 下一个 tile 在哪里？
        weight_block_ptr = weight_block_ptr.advance((D_TILE_SIZE,))
    tl.store(output_block_ptr, output, boundary_check=(0,))

@triton.jit
def weighted_sum_backward(
    x_ptr, weight_ptr, grad_output_ptr, grad_x_ptr, partial_grad_weight_ptr,
    stride_xr, stride_xd, stride_wd, stride_gr, stride_gxr, stride_gxd, stride_gwb, stride_gwd,
    NUM_ROWS, D,
    ROWS_TILE_SIZE: tl.constexpr, D_TILE_SIZE: tl.constexpr,
):
    row_tile_idx = tl.program_id(0)
    n_row_tiles = tl.num_programs(0)
    grad_output_block_ptr = tl.make_block_ptr(
        grad_output_ptr, shape=(NUM_ROWS,), strides=(stride_gr,),
        offsets=(row_tile_idx * ROWS_TILE_SIZE,), block_shape=(ROWS_TILE_SIZE,), order=(0,),
    )
    x_block_ptr = tl.make_block_ptr(
        x_ptr, shape=(NUM_ROWS, D), strides=(stride_xr, stride_xd),
        offsets=(row_tile_idx * ROWS_TILE_SIZE, 0), block_shape=(ROWS_TILE_SIZE, D_TILE_SIZE), order=(1, 0),
    )
    weight_block_ptr = tl.make_block_ptr(
        weight_ptr, shape=(D,), strides=(stride_wd,),
        offsets=(0,), block_shape=(D_TILE_SIZE,), order=(0,),
    )
    grad_x_block_ptr = tl.make_block_ptr(
        grad_x_ptr, shape=(NUM_ROWS, D), strides=(stride_gxr, stride_gxd),
        offsets=______,  # TODO 3: 这个 program 的 grad_x 块从哪里开始？
        block_shape=(ROWS_TILE_SIZE, D_TILE_SIZE), order=(1, 0),
    )
    partial_grad_weight_block_ptr = tl.make_block_ptr(
        partial_grad_weight_ptr,
        shape=______,  # TODO 4: partial buffer 的形状
        strides=(stride_gwb, stride_gwd),
        offsets=(row_tile_idx, 0), block_shape=(1, D_TILE_SIZE), order=(1, 0),
    )
    for i in range(tl.cdiv(D, D_TILE_SIZE)):
        grad_output = tl.load(grad_output_block_ptr, boundary_check=(0,), padding_option="zero")
        weight = tl.load(weight_block_ptr, boundary_check=(0,), padding_option="zero")
        grad_x_row = grad_output[:, None] * weight[None, :]
        tl.store(grad_x_block_ptr, grad_x_row, boundary_check=(0, 1))
        row = tl.load(x_block_ptr, boundary_check=(0, 1), padding_option="zero")
        grad_weight_row = tl.sum(row * grad_output[:, None], axis=0, keep_dims=True)
        tl.store(partial_grad_weight_block_ptr, grad_weight_row, boundary_check=(0, 1))
        x_block_ptr = x_block_ptr.advance((0, D_TILE_SIZE))
        weight_block_ptr = weight_block_ptr.advance((D_TILE_SIZE,))
        partial_grad_weight_block_ptr = partial_grad_weight_block_ptr.advance((0, D_TILE_SIZE))
        grad_x_block_ptr = grad_x_block_ptr.advance((0, D_TILE_SIZE))

class WeightedSumFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, rows_tile, d_tile):
        assert x.ndim == 2 and weight.ndim == 1 and weight.shape[0] == x.shape[1], "维度不匹配"
        n_rows, D = x.shape
        # 博客用 D_TILE_SIZE = next_power_of_2(D)（D 方向只循环一次）；这里用固定的 d_tile，让循环真的走多步。
        ctx.ROWS_TILE_SIZE, ctx.D_TILE_SIZE = rows_tile, d_tile
        ctx.save_for_backward(x, weight)
        y = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        weighted_sum_fwd[(triton.cdiv(n_rows, rows_tile),)](
            x, weight, y,
            x.stride(0), x.stride(1), weight.stride(0), y.stride(0),
            ROWS=n_rows, D=D, ROWS_TILE_SIZE=rows_tile, D_TILE_SIZE=d_tile,
        )
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        ROWS_TILE_SIZE, D_TILE_SIZE = ctx.ROWS_TILE_SIZE, ctx.D_TILE_SIZE
        n_rows, D = x.shape
        grad_out = grad_out.contiguous()
        n_tiles = triton.cdiv(n_rows, ROWS_TILE_SIZE)
        # 每个行块写 partial buffer 的一行，kernel 外再求和（评分用：先清零，没写到的行是 0）。
        partial_grad_weight = torch.zeros((n_tiles, D), device=x.device, dtype=torch.float32)
        # 评分用：grad_x 先填 NaN，kernel 没写到的位置会露出来。
        grad_x = torch.full((n_rows, D), float("nan"), device=x.device, dtype=torch.float32)
        weighted_sum_backward[(n_tiles,)](
            x, weight, grad_out, grad_x, partial_grad_weight,
            x.stride(0), x.stride(1), weight.stride(0), grad_out.stride(0),
            grad_x.stride(0), grad_x.stride(1),
            partial_grad_weight.stride(0), partial_grad_weight.stride(1),
            NUM_ROWS=n_rows, D=D, ROWS_TILE_SIZE=ROWS_TILE_SIZE, D_TILE_SIZE=D_TILE_SIZE,
        )
        grad_weight = partial_grad_weight.sum(axis=0)
        return grad_x, grad_weight, None, None

def weighted_sum(x, weight, rows_tile=16, d_tile=16):
    return WeightedSumFunc.apply(x, weight, rows_tile, d_tile)

for n_rows, D in ((64, 100), (32, 16)):
    x = torch.randn(n_rows, D, device="cuda", requires_grad=True)
    w = torch.randn(D, device="cuda", requires_grad=True)
    y = weighted_sum(x, w)
    dy = torch.randn(n_rows, device="cuda")
    y.backward(dy)
    torch.testing.assert_close(y.detach(), (x * w).sum(-1).detach(), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(x.grad, dy[:, None] * w.detach()[None, :], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w.grad, (dy[:, None] * x.detach()).sum(0), atol=1e-4, rtol=1e-4)
