"""The ordinary ways students state each exercise's concepts (exercises/*/questions.yaml): written from
the concept's label, its question, the reference answer and the course seed (shared/seeds), not from
the calibration set's answers, in Chinese and English, in formulas, code and symbols (Σ, ², →). Each
must be found as that concept; the statements below it must not be (a bare word that names something
else: "两维都会越界" says where the tile ends, not what the unchecked columns read)."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")

# (exercise, question, concept, phrasings that state it)
STATED: list[tuple[str, str, str, tuple[str, ...]]] = [
    # --- weighted sum: the gradients (seed 004: (∇_x L)_ij = w_j·(∇L)_i, (∇_w L)_j = Σ_i x_ij·(∇L)_i)
    ("weighted_sum_fwd_bwd", "q2", "grad_x", (
        "∂L/∂x_ij = w_j · (∂L/∂y)_i",
        "dx_ij = w_j * g_i",
        "dL/dx = g[:, None] * w[None, :]",
        "grad_x = grad_out[:, None] * weight",
        "grad_x = torch.outer(grad_out, w)",
        "x 的梯度是 w_j 乘以 g_i",
        "dx = w[None, :] * dy[:, None]",
    )),
    ("weighted_sum_fwd_bwd", "q2", "grad_w_sum_rows", (
        "dw_j = Σ_{i=1}^n x_ij g_i",
        "dL/dw = (g[:, None] * x).sum(0)",
        "grad_w = x.T @ grad_out",
        "grad_w = tl.sum(x * grad_output[:, None], axis=0)",
        "the gradient of w is summed over all rows",
        "w 的梯度要把每一行的 x_ij·g_i 相乘再加起来",
    )),
    ("weighted_sum_fwd_bwd", "q1", "neighbour", (
        "越界的列读到下一行的数据",
        "只检查第 0 维时会读到张量之外的内存",
        "the unchecked columns read the next row",
        "it reads past the end of the row",
    )),
    ("weighted_sum_fwd_bwd", "q3", "natural_tiling", (
        "y 的各行相互独立，一个 program 负责一个行块",
        "Program Instance 负责生成一个 ROW_TILE_SIZE 大小的行块",
        "each program handles a block of rows",
        "the output is split by rows",
    )),
    ("weighted_sum_fwd_bwd", "q3", "contiguous", (
        "x 的行块沿 D 方向连续，用 advance 前进",
        "x is loaded one tile at a time along D",
        "the row tile of x is contiguous",
    )),
    # --- fused mean & variance (seed 003: Var(A ∪ B) ≠ Var(A) + Var(B); host contract; pitfalls) ----
    ("fused_mean_var_atomic", "q1", "nonlinear", (
        "adding the chunk variances up doesn't give the variance of the whole row",
        "The sum of the per-program variances is not the variance of the row.",
        "各块方差相加不等于整体方差",
        "方差之和不是整行的方差",
    )),
    ("fused_mean_var_atomic", "q2", "accumulates", (
        "both buffers are reached via atomics",
        "两个缓冲区只通过 atomic_add 写入",
    )),
    ("fused_mean_var_atomic", "q2", "zero_each_launch", (
        "Host contract: zero both scratch buffers, launch, then finalize on the host.",
        "先 zero_() 两个缓冲区，再 launch",
    )),
    ("fused_mean_var_atomic", "q2", "drift", (
        "每次调用结果越来越大",
        "the sums grow with each call",
    )),
    ("fused_mean_var_atomic", "q2", "accumulates", ("the kernel never writes the buffers, it only adds to them",)),
    ("fused_mean_var_atomic", "q2", "drift", ("the second call returns 2× the mean",)),
    ("fused_mean_var_atomic", "q2", "first_call_passes", ("a test that calls it once won't see it", "只调用一次的测试看不出来")),
    ("fused_mean_var_atomic", "q2", "both_buffers", ("zeroing only sums leaves the variance wrong",)),
    ("fused_mean_var_atomic", "explanation", "zero_fill", ("Blank 2 zeroes both buffers before the launch.",)),
    ("fused_mean_var_atomic", "explanation", "accumulates", ("atomic_add 在原值上加", "atomic_add adds onto whatever is there")),
    ("fused_mean_var_atomic", "q1", "between_term", (
        "missing the spread between the block means",
        "块与块之间均值的差异没算进去",
        "two blocks [0,0] and [10,10] each have variance 0 but together 25",
        "the means of the blocks differ",
    )),
    ("fused_mean_var_atomic", "q1", "linear", (
        "the total is the sum of the partial sums",
        "sum(A ∪ B) = sum(A) + sum(B)",
        "Σx 和 Σx² 可以分块加",
    )),
    ("fused_mean_var_atomic", "q1", "nonlinear", ("variance isn't additive", "方差不满足可加性", "you can't just add variances")),
    ("fused_mean_var_atomic", "q1", "order_free", ("programs can add in whatever order", "顺序无关")),
    ("fused_mean_var_atomic", "q3", "variance_small", (
        "the variance is tiny compared with mean²",
        "数据都挤在 1e4 附近，方差很小",
        "E[x²] and mean² are both about 1e8 and almost equal",
    )),
    ("fused_mean_var_atomic", "q3", "cancellation", ("the result can even be negative", "结果甚至是负数")),
    ("fused_mean_var_atomic", "q3", "tolerance", ("atol=1e-2, rtol=1e-2", "用 1e-2 的容差")),
    # --- Long Softmax (seed 004, Puzzle 8: sum' = sum × exp(m1 − m2) + Σ exp(x − m2); two for loops) --
    ("puzzle_long_softmax", "explanation", "two_passes", (
        "第一个循环求 max 和 sum，第二个循环写出结果",
        "the first loop finds the max and the sum, the second loop writes z",
        "one loop for max and sum, another loop for the output",
        "先扫一遍求 max/sum，再扫一遍写 z",
        "loop 1 computes m and s; loop 2 normalises and stores",
    )),
    ("puzzle_long_softmax", "explanation", "rescale", (
        "s = s * tl.exp2((m - m_new) * log2e) + tl.sum(p, 1)",
        "旧的 sum 乘 exp(m - m_new)",
        "scale = tl.exp2(log2_e * (x_max - new_x_max))",
        "s *= exp(m - m_new)",
    )),
    ("puzzle_long_softmax", "explanation", "running_max", ("track the row max as we go", "维护当前最大值")),
    ("puzzle_long_softmax", "explanation", "neg_inf", ("other=-float('inf')", "other=float('-inf')")),
    ("puzzle_long_softmax", "q1", "relative_to_old", (
        "old terms: e^(x−m1)",
        "the old sum was accumulated with the old max",
        "the terms in s were computed against m_old",
        "旧 sum 里每一项减的是旧的最大值",
        "the previous terms subtracted the old maximum",
    )),
    ("puzzle_long_softmax", "q1", "rescale", ("sum' = sum·e^(m1−m2) + Σ e^(x−m2)",)),
    ("puzzle_long_softmax", "q1", "overestimate", (
        "without it the earlier blocks count too much and the row sum isn't 1",
        "the probabilities don't sum to 1",
    )),
    ("puzzle_long_softmax", "q1", "zero_effect", (
        "0 would be larger than every real logit",
        "padding 的 0 会被算进分母",
        "0 pads contribute e^{-m} to the sum",
        "填 0 会让 max 变成 0",
    )),
    # --- lesson 5: row sum (the course's identity rule: x + 0 = x, max(x, −inf) = x) ---------------
    ("lesson05_row_sum", "q2", "padding_joins", (
        "the masked lanes are still summed",
        "mask 只是不读内存，那个 lane 还是会参与求和",
        "the reduction runs over every lane of the block",
        "被 mask 的 lane 也会被加进和里",
        "tl.sum 会把 32 个 lane 全部加起来",
    )),
    ("lesson05_row_sum", "q2", "identity_def", (
        "0 doesn't change a sum and -inf doesn't change a max",
        "加上它结果不变",
        "a neutral element",
    )),
    ("lesson05_row_sum", "q2", "sum_zero", ("sum → 0", "for a sum use 0")),
    ("lesson05_row_sum", "q2", "pollution", (
        "the row sum is 15 too big",
        "with other=1 the sum gains BLOCK-N",
        "the result is wrong by 15 × 1.0",
        "with other=-inf the sum becomes -inf",
    )),
    ("lesson05_row_sum", "q3", "stride_gt_n", ("each row is followed by stride − N columns that aren't part of x",)),
    ("lesson05_row_sum", "q3", "wrong_rows", (
        "row 1 starts N elements in, which is still inside row 0 of big",
        "rows after the first read the wrong data",
        "第二行读到的是第一行后面的数据",
    )),
    ("lesson05_row_sum", "q3", "address_formula", ("起点是 row 乘以 stride",)),
    ("lesson05_row_sum", "q1", "lanes_compare", ("lane 3 is masked off because 3 >= N", "the last lane fails 3 < 3")),
    ("lesson05_row_sum", "q1", "padding_not_read", (
        "lane 3 doesn't touch memory and gets 0.0",
        "the masked lane is filled with other instead of loading",
        "x[3] is never loaded",
    )),
    ("lesson05_row_sum", "q1", "identity_zero", ("adding 0 leaves the sum unchanged",)),
    ("lesson05_row_sum", "q1", "sum_all_lanes", ("sum = 1 + 2 + 3 + 0 = 6", "四个 lane 全部加起来")),
]

# Words that hold 没, 别 or 非 and negate nothing (淹没 "drowned", 分别 "each", 区别 "the difference", 别的
# "another"): the concept after them is stated, not denied.
STATED += [
    ("lesson06_mean_var", "q3", "cancellation", ("真值被淹没在舍入误差里", "E[x²] 和 mean² 分别带着舍入误差")),
    ("lesson06_mean_var", "q3", "remedy", ("区别在于两遍法先减均值", "别的办法是用 Welford")),
]

# Lesson 7, probed 2026-12-04 with sentences written from the lesson's labels and reference answers (not the calibration set): overflow past the fp32 maximum, the denominator at 0 or at least 1, the shift cancelling between numerator and denominator, the pads entering tl.max / tl.sum, HBM traffic, and the misconceptions said in other words.
STATED += [(e, q, c, (t,)) for e, q, c, t in [
    ('lesson07_softmax', 'q1', 'overflow', 'exp(1000) = inf in fp32'),
    ('lesson07_softmax', 'q1', 'overflow', 'x = [1000, 1001] → exp 直接变 inf，inf/inf = nan'),
    ('lesson07_softmax', 'q1', 'overflow', 'fp32 的 exp 在 x > 88 左右就溢出'),
    ('lesson07_softmax', 'q1', 'overflow', 'e^89 已经超过 fp32 最大值 3.4e38'),
    ('lesson07_softmax', 'q1', 'overflow', 'exp(100) 就爆了'),
    ('lesson07_softmax', 'q1', 'overflow', 'large logits blow up exp'),
    ('lesson07_softmax', 'q1', 'underflow', 'x = [-1000, -1001]：exp 全是 0，0/0 = nan'),
    ('lesson07_softmax', 'q1', 'underflow', 'all very negative logits underflow to 0 and the denominator is 0'),
    ('lesson07_softmax', 'q1', 'underflow', 'exp(-200) 下溢成 0'),
    ('lesson07_softmax', 'q1', 'underflow', '分母变成 0'),
    ('lesson07_softmax', 'q1', 'shift_invariance', 'softmax(x − c) = softmax(x)，因为 e^{-c} 在分子分母里约掉'),
    ('lesson07_softmax', 'q1', 'shift_invariance', 'subtracting a constant cancels out between numerator and denominator'),
    ('lesson07_softmax', 'q1', 'shift_invariance', 'exp(x-m)/Σexp(x-m) = exp(x)/Σexp(x)'),
    ('lesson07_softmax', 'q1', 'shift_invariance', '减任何常数结果都不变'),
    ('lesson07_softmax', 'q1', 'shift_invariance', 'the result is unchanged by the shift'),
    ('lesson07_softmax', 'q1', 'max_bound', '减去 max 之后最大项是 exp(0) = 1'),
    ('lesson07_softmax', 'q1', 'max_bound', 'after the shift every exponent is ≤ 0, so each term is in (0, 1]'),
    ('lesson07_softmax', 'q1', 'max_bound', 'x − max ≤ 0 → exp ≤ 1'),
    ('lesson07_softmax', 'q1', 'max_bound', '分母至少是 1，不会是 0'),
    ('lesson07_softmax', 'q1', 'max_bound', 'the denominator is at least 1'),
    ('lesson07_softmax', 'q2', 'padding_joins', 'padding 也会进 tl.max 和 tl.sum'),
    ('lesson07_softmax', 'q2', 'padding_joins', 'the padded lanes take part in the reductions'),
    ('lesson07_softmax', 'q2', 'padding_joins', 'store 有 mask 但 max/sum 没有'),
    ('lesson07_softmax', 'q2', 'padding_joins', 'the reductions see every lane, padding included'),
    ('lesson07_softmax', 'q2', 'zero_is_max', 'x = [-3, -2, -1]，补 0 → max 变成 0'),
    ('lesson07_softmax', 'q2', 'zero_is_max', 'for an all-negative row, the pad 0 becomes the max'),
    ('lesson07_softmax', 'q2', 'zero_is_max', '0 比所有 logit 都大'),
    ('lesson07_softmax', 'q2', 'zero_pollutes', '每个 pad 给分母加 exp(0 − max)'),
    ('lesson07_softmax', 'q2', 'zero_pollutes', 'pads add e^(-max) each to the sum, so probabilities sum to < 1'),
    ('lesson07_softmax', 'q2', 'zero_pollutes', '分母多了 (BLOCK − N)·exp(−m)'),
    ('lesson07_softmax', 'q2', 'zero_pollutes', '输出之和小于 1'),
    ('lesson07_softmax', 'q2', 'zero_pollutes', 'N=3, BLOCK=4: 分母多加了 e^{0-m}'),
    ('lesson07_softmax', 'q2', 'neg_inf_identity', '−inf 是 max 的单位元，exp(−inf) = 0 对 sum 也没影响'),
    ('lesson07_softmax', 'q2', 'neg_inf_identity', '-inf never wins the max and exp(-inf) = 0 adds nothing'),
    ('lesson07_softmax', 'q2', 'neg_inf_identity', '用 −inf 补：max 不变，exp 后为 0'),
    ('lesson07_softmax', 'q3', 'unfused_many', 'unfused: each op reads its input from HBM and writes its output back'),
    ('lesson07_softmax', 'q3', 'unfused_many', '非融合：max、减法、exp、sum、除法每一步都要访问显存'),
    ('lesson07_softmax', 'q3', 'unfused_many', '5 reads + 3 writes = 8MN elements'),
    ('lesson07_softmax', 'q3', 'unfused_many', 'every intermediate tensor is materialised in global memory'),
    ('lesson07_softmax', 'q3', 'unfused_many', 'PyTorch 每个算子一个 kernel，中间结果都写回 HBM'),
    ('lesson07_softmax', 'q3', 'registers', 'fused: everything stays in registers'),
    ('lesson07_softmax', 'q3', 'registers', '中间结果留在片上，不回写显存'),
    ('lesson07_softmax', 'q3', 'registers', 'intermediates never leave the SM'),
    ('lesson07_softmax', 'q3', 'fused_once', 'fused 只读 x 一次写 y 一次'),
    ('lesson07_softmax', 'q3', 'fused_once', 'read once, write once: 2MN'),
    ('lesson07_softmax', 'q3', 'fused_once', 'one read of x and one write of y'),
    ('lesson07_softmax', 'q3', 'fused_once', '只有一次读一次写'),
    ('lesson07_softmax', 'q3', 'bandwidth_bound', 'softmax is memory-bound, so time ∝ bytes moved'),
    ('lesson07_softmax', 'q3', 'bandwidth_bound', '计算很少，瓶颈在带宽'),
    ('lesson07_softmax', 'q3', 'bandwidth_bound', 'runtime is dominated by memory traffic'),
    ('lesson07_softmax', 'q3', 'bandwidth_bound', '8MN vs 2MN → about 4x faster'),
    ('lesson07_softmax', 'q3', 'bandwidth_bound', '速度由 HBM 流量决定'),
    ('lesson07_softmax', 'q3', 'register_limit', 'N 太大一行放不进寄存器，需要 online softmax'),
    ('lesson07_softmax', 'q3', 'register_limit', "if the row doesn't fit in one block, you need a looped/online version"),
    ('lesson07_softmax', 'explanation', 'neg_inf_padding', 'other=-inf'),
    ('lesson07_softmax', 'explanation', 'neg_inf_padding', 'padding 读成负无穷'),
    ('lesson07_softmax', 'explanation', 'neg_inf_padding', 'out-of-range lanes load -inf'),
    ('lesson07_softmax', 'explanation', 'exp_zero', 'exp(-inf) = 0, so pads add nothing to the sum'),
    ('lesson07_softmax', 'explanation', 'exp_zero', '-inf 对 max 和 sum 都没有影响'),
    ('lesson07_softmax', 'explanation', 'exp_zero', 'e^-inf = 0'),
    ('lesson07_softmax', 'explanation', 'exp_zero', 'pads vanish after exp'),
    ('lesson07_softmax', 'explanation', 'subtract_max', 'x - tl.max(x, 0)'),
    ('lesson07_softmax', 'explanation', 'subtract_max', '先减去行最大值'),
    ('lesson07_softmax', 'explanation', 'subtract_max', 'shift by the row max'),
    ('lesson07_softmax', 'explanation', 'max_bound', 'x − max ≤ 0 so exp ≤ 1'),
    ('lesson07_softmax', 'explanation', 'max_bound', 'largest term becomes exp(0) = 1'),
    ('lesson07_softmax', 'explanation', 'no_overflow', '所以不会溢出'),
    ('lesson07_softmax', 'explanation', 'no_overflow', 'no overflow, no inf/inf'),
    ('lesson07_softmax', 'explanation', 'no_overflow', 'denominator is at least 1 so no 0/0'),
]]

# Lesson 6, probed 2026-12-04 with sentences written from the seed (000_…) and the reference answers (not the calibration set): worked vectors ([−1, 0, 1, −2]), results next to the true value ('var = 2 instead of 2/3'), Σx²/N − μ², '两个 1e8 相减', the fp32 limit, 'keeps the padding lanes out', 'zeroed again' / 打回 0, and the misconceptions said in other words.
STATED += [(e, q, c, (t,)) for e, q, c, t in [
    ('lesson06_mean_var', 'q1', 'masked_load', 'load with mask, other=0.0'),
    ('lesson06_mean_var', 'q1', 'masked_load', '输入：带 mask 读入，尾部补 0'),
    ('lesson06_mean_var', 'q1', 'masked_load', 'out-of-range lanes are loaded as 0'),
    ('lesson06_mean_var', 'q1', 'mean_over_n', 'mean = sum / N'),
    ('lesson06_mean_var', 'q1', 'mean_over_n', '除以真实长度 N 得到均值'),
    ('lesson06_mean_var', 'q1', 'mean_over_n', 'divide by N, not BLOCK'),
    ('lesson06_mean_var', 'q1', 'mean_over_n', '均值 = 和 / N'),
    ('lesson06_mean_var', 'q1', 'padding_neg_mean', '中心化后 padding 变成 −μ'),
    ('lesson06_mean_var', 'q1', 'mean_squared', '平方后 μ²'),
    ('lesson06_mean_var', 'q1', 'remask', 'tl.where(mask, ..., 0.0) 清零'),
    ('lesson06_mean_var', 'q1', 'output_store', 'tl.store(means + row, mean)'),
    ('lesson06_mean_var', 'q1', 'output_store', '写回均值和方差'),
    ('lesson06_mean_var', 'q1', 'output_store', 'store both scalars'),
    ('lesson06_mean_var', 'q2', 'identity_first_sum', 'other=0 对第一次 sum 是安全的'),
    ('lesson06_mean_var', 'q2', 'identity_first_sum', 'the 0 pads are harmless for the mean'),
    ('lesson06_mean_var', 'q2', 'identity_first_sum', '[1,2,3,0] 求和 6，mean 2，对的'),
    ('lesson06_mean_var', 'q2', 'identity_first_sum', '0 is the identity of the first sum'),
    ('lesson06_mean_var', 'q2', 'padding_neg_mean', '0 − 2 = −2'),
    ('lesson06_mean_var', 'q2', 'padding_neg_mean', 'pads become −μ after centring'),
    ('lesson06_mean_var', 'q2', 'padding_neg_mean', '减完均值 pad 变成 -mean'),
    ('lesson06_mean_var', 'q2', 'padding_neg_mean', 'centered: [-1, 0, 1, -2]'),
    ('lesson06_mean_var', 'q2', 'padding_neg_mean', '0 - μ ≠ 0'),
    ('lesson06_mean_var', 'q2', 'mean_squared', '(−2)² = 4 = μ²'),
    ('lesson06_mean_var', 'q2', 'mean_squared', 'squared: [1, 0, 1, 4]'),
    ('lesson06_mean_var', 'q2', 'mean_squared', '平方之后是 mean²'),
    ('lesson06_mean_var', 'q2', 'mean_squared', 'pads contribute mu^2 each'),
    ('lesson06_mean_var', 'q2', 'excess', 'sum = 6 而不是 2'),
    ('lesson06_mean_var', 'q2', 'excess', 'var = 2 instead of 2/3'),
    ('lesson06_mean_var', 'q2', 'excess', '方差偏大 (BLOCK−N)μ²/N'),
    ('lesson06_mean_var', 'q2', 'excess', '多出 (BLOCK-N)*mu^2'),
    ('lesson06_mean_var', 'q2', 'excess', 'the variance comes out 3x too big'),
    ('lesson06_mean_var', 'q2', 'remask', 'tl.where(mask, diff*diff, 0)'),
    ('lesson06_mean_var', 'q2', 'remask', 're-apply the mask before the second sum'),
    ('lesson06_mean_var', 'q2', 'remask', '平方后再 mask 一次'),
    ('lesson06_mean_var', 'q3', 'one_pass_formula', 'E[x^2] - E[x]^2'),
    ('lesson06_mean_var', 'q3', 'one_pass_formula', 'mean of squares minus square of mean'),
    ('lesson06_mean_var', 'q3', 'one_pass_formula', 'Σx²/N − μ²'),
    ('lesson06_mean_var', 'q3', 'one_pass_formula', '单遍公式'),
    ('lesson06_mean_var', 'q3', 'cancellation', '1e8 − 1e8 ≈ 0，真值 1e-4 淹没在舍入误差里'),
    ('lesson06_mean_var', 'q3', 'cancellation', '两个 1e8 相减'),
    ('lesson06_mean_var', 'q3', 'cancellation', 'subtracting two ~1e8 numbers leaves only rounding noise'),
    ('lesson06_mean_var', 'q3', 'cancellation', 'fp32 near 1e8 has spacing 8, so the 1e-4 variance is lost'),
    ('lesson06_mean_var', 'q3', 'remedy', 'two-pass: subtract the mean first'),
    ('lesson06_mean_var', 'q3', 'remedy', '先减均值再平方'),
    ('lesson06_mean_var', 'q3', 'remedy', 'accumulate in fp64'),
    ('lesson06_mean_var', 'q3', 'remedy', 'use Welford'),
    ('lesson06_mean_var', 'q3', 'wider_accumulator', 'values.to(tl.float64)'),
    ('lesson06_mean_var', 'q3', 'wider_accumulator', '累加用 double'),
    ('lesson06_mean_var', 'q3', 'welford_merge', 'Welford + Chan merge over (n, mean, M2)'),
    ('lesson06_mean_var', 'q3', 'fp32_limit', '1e6 附近 ulp 是 0.0625，0.01 的波动读进来就没了'),
    ('lesson06_mean_var', 'q3', 'fp32_limit', "if fp32 can't represent the fluctuation, no algorithm can recover it"),
    ('lesson06_mean_var', 'q3', 'fp32_limit', '输入本身精度不够，任何算法都救不回来'),
    ('lesson06_mean_var', 'q3', 'cancellation', '1e8 − 1e8 ≈ 0'),
    ('lesson06_mean_var', 'explanation', 'fill_is_position_mask', '填 mask'),
    ('lesson06_mean_var', 'explanation', 'fill_is_position_mask', 'the blank is cols < N'),
    ('lesson06_mean_var', 'explanation', 'keeps_padding_out', 'it keeps the padding lanes out of the variance sum'),
    ('lesson06_mean_var', 'explanation', 'keeps_padding_out', '只让前 N 个真实元素进入第二次求和'),
    ('lesson06_mean_var', 'explanation', 'keeps_padding_out', '第二次 sum 只剩 N 个真项'),
    ('lesson06_mean_var', 'explanation', 'keeps_padding_out', 'so only the N real lanes are summed'),
    ('lesson06_mean_var', 'explanation', 'keeps_padding_out', 'padding lane 不参与方差的求和'),
    ('lesson06_mean_var', 'explanation', 'padding_neg_mean', '0 − μ = −μ'),
    ('lesson06_mean_var', 'explanation', 'padding_neg_mean', 'pads turn into -mean'),
    ('lesson06_mean_var', 'explanation', 'mean_squared', 'squared they give mean²'),
    ('lesson06_mean_var', 'explanation', 'mean_squared', '(−μ)² = μ²'),
    ('lesson06_mean_var', 'explanation', 'remask', 'the padding lanes are zeroed again before the second sum'),
    ('lesson06_mean_var', 'explanation', 'remask', 'where 把它打回 0'),
    ('lesson06_mean_var', 'explanation', 'remask', 'tl.where sets them back to zero'),
    ('lesson06_mean_var', 'explanation', 'remask', 'where(mask, sq, 0) 重新置零'),
    ('lesson06_mean_var', 'explanation', 'remask', 'put the zeros back before summing'),
]]

# (exercise, question, concept, statements that do not state it)
NOT_STATED: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("weighted_sum_fwd_bwd", "q1", "neighbour", (
        "tile 不一定整除 ROWS 和 D，两维都会越界，所以 (0, 1)。",
        "Both dimensions can go out of bounds, so boundary_check=(0, 1).",
    )),
    ("weighted_sum_fwd_bwd", "q3", "contiguous", (
        "一个 program 负责 ROWS_TILE_SIZE 行。",
        "要不要用 block pointer；要不要加 boundary_check。",
    )),
    ("weighted_sum_fwd_bwd", "q2", "grad_x", (
        "∂L/∂x = w",
        "dx_ij = x_ij * g_i",
    )),
    ("fused_mean_var_atomic", "q2", "drift", (
        "不清零的话会把上一次的结果累加进来，结果就错了，所以每次都要清零。",
    )),
    ("puzzle_long_softmax", "q1", "zero_effect", ("填 0 会让 max 变成 0.5",)),
    ("fused_mean_var_atomic", "q3", "tolerance", ("mean is 1e4 and the spread is 0.01",)),
    ("lesson05_row_sum", "q3", "contiguous_coincidence", ("列是连续的，所以加 cols", "the columns are contiguous")),
]


def _found(exercise: str, question: str, text: str) -> set[str]:
    result = score_answer(CATALOG.get(exercise).question(question), text, 2.0)
    return {f["concept"] for f in result.found}


@pytest.mark.parametrize(("exercise", "question", "concept", "text"),
                         [(e, q, c, t) for e, q, c, ts in STATED for t in ts])
def test_a_stated_concept_is_found(exercise, question, concept, text):
    assert concept in _found(exercise, question, text)


@pytest.mark.parametrize(("exercise", "question", "concept", "text"),
                         [(e, q, c, t) for e, q, c, ts in NOT_STATED for t in ts])
def test_a_statement_of_something_else_is_not_the_concept(exercise, question, concept, text):
    assert concept not in _found(exercise, question, text)
