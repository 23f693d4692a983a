"""Paraphrase families (issue 15 item 6): the ways students say each misconception and each chain link of the
exercises that lose most on written answers (fused_mean_var_atomic, puzzle_long_softmax, then lesson07_softmax,
lesson05_row_sum, welford_merge), in Chinese, English and mixed, terse, arrowed, hedged, in passing inside a
right answer, with the word order changed; and near-misses that must not state it (the same words negated or
corrected). Written by hand from the rubric labels (questions.yaml) and the seeds (shared/seeds/003_*, 000_*),
not from the calibration answers, in four rounds: rounds 1 (fused_mean_var_atomic, puzzle_long_softmax) and 3
(lesson07_softmax, lesson05_row_sum, welford_merge) before the clause rules (ClauseTerms) that cover them were
written; rounds 2 (after round 1's rules) and 4 (after all of them: the last phrasings of each family) as checks
of how the rules carry to phrasing they were not written from.
Recall before the clause rules (commit 865b056) / after, misconception positives and negatives clean:
round 1 51/84, 34/34 -> 82/84, 34/34; round 2 22/33, 30/33 -> 30/33, 33/33; round 3 32/45, 24/25 -> 45/45,
25/25; round 4 (fresh) 12/29, 16/20 -> 23/29, 16/20, and 28/29 once five of its misses widened the synonym sets (一律,
任何因子, 没事, mean(var_block), M2_a + M2_b in one clause); round 5 (fresh, full right answers as near-misses)
5/11, 14/16 -> 7/11, 13/16, and 16/16 once a label-like window was kept in one sentence (LIKE_IN_A_SENTENCE) and
identity_is_stable's clause rule left "fine for a small mean" alone. Known gaps are xfail (strict: one that starts to hold
fails, to be moved out of GAPS)."""
from __future__ import annotations

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import score_answer

CATALOG = ExerciseCatalog(REPO_ROOT / "exercises")

# (exercise, question, misconception, phrasings that state it, near-misses that must not)
FAMILIES: list[tuple[str, str, str, tuple[str, ...], tuple[str, ...]]] = [
    ("fused_mean_var_atomic", "q1", "add_variances", (
        "每个 program 算出自己那块的方差，然后 atomic_add 到一起，就得到整行的方差",
        "各块方差求个平均就是总方差吧",
        "block variance → atomic_add → row variance",
        "I think you could just average the variances of the blocks, since every block has the same number of elements.",
        "Each program computes the var of its chunk and atomically adds it; the sum of those is the total variance.",
        "方差直接加起来也行，最后除以块数就好",
        "在 kernel 里每块算好 var，再用 atomic_add 合并成全局的 var",
        "The variance of the whole row equals the sum of the chunk variances.",
        "我的做法：kernel 里每个 program 先求出本块 var，atomic_add 进一个标量，host 再除以 program 数。",
        "Just let every block atomic_add its own variance into var_buf; averaged over the blocks that's the answer.",
        "方差可以分块算完再汇总，总方差 = 各块方差之和",
        "Per-chunk variance, then atomic add: total var.",
        "Σx 和 Σx² 可以 atomic_add 到缓冲区，host 上再算方差；当然每块的方差直接平均一下也能得到整体方差。",
        "I guess the block variances could also just be averaged, the blocks are the same size anyway.",
        "var_total = mean(var_block) 就可以",
        "合并方差：把每个 program 的 var 累加起来。",
    ), (
        "不是说各块的方差可以直接相加，方差不是线性的",
        "You can't just add the per-program variances: Var(A ∪ B) ≠ Var(A) + Var(B).",
        "如果把每块的方差加起来，得到的不是整行的方差",
        "每块各自的方差加起来并不是整体方差，因为块间均值差那一项没算进去；所以只累加 Σx 和 Σx²，最后在 host 上算方差。",
        "Summing per-block variances gives the wrong total, since each is centred on its own block mean.",
        "Each program atomically adds its Σx and Σx² into the two buffers, and the host computes the variance at the end.",
        "各 program 把自己的 Σx、Σx² 原子加到缓冲区，合并完成后 host 算 E[x²] − mean² 得到总方差。",
        "I first thought you could average the block variances, but that misses the spread between the block means.",
        "方差不能平均，因为每块的均值不一样；所以 kernel 只累加 Σx 和 Σx²。",
        "The host divides the two sums by N and then computes the variance; no per-block variance is ever added.",
        # what a sum of block variances leaves out, said as its failure (leaves out, omits, forgets, overlooks)
        "A sum of per-block variances simply leaves that between-block term out.",
        "Adding the chunk variances omits the spread of the chunk means.",
        "把各块方差加起来不计块间均值差那一项。",
    )),
    ("fused_mean_var_atomic", "q1", "order_blamed_for_variances", (
        "不能累加各块方差，是因为 atomic_add 的顺序不确定",
        "Variances can't be atomic-added because the programs race on the write.",
        "atomic 的执行顺序是随机的，所以方差合并出来会不一样",
        "The atomic order is nondeterministic, which is why per-block variances can't be merged.",
        "多个 program 同时写同一个地址会冲突，所以不能加方差",
        "方差之所以不能 atomic_add，是因为各 program 写入的先后不确定，结果会乱。",
        "atomic adds of variances race with each other, that's the reason they can't be combined",
    ), (
        "和顺序没关系，加法满足交换律；问题是方差本身不可加",
        "It's not about the atomic order — a sum doesn't depend on order; variance just isn't additive.",
        "加法与顺序无关，atomic_add 的先后不影响 Σx；方差不能加是因为它不是线性的。",
        "The order of the atomics doesn't matter for a sum (addition is commutative); variances fail because they aren't additive.",
    )),
    ("fused_mean_var_atomic", "q1", "bessel", (
        "方差要除以 N-1",
        "use the unbiased estimator, dividing by (N − 1)",
        "var = (sumsq - n*mean^2)/(n-1)",
        "样本方差，分母是 n−1",
        "apply Bessel's correction on the host",
    ), (
        "这里是总体方差，分母是 N，不是 N−1",
        "population variance divides by N, not N-1 (no Bessel correction)",
    )),
    ("fused_mean_var_atomic", "q2", "zero_once", (
        "缓冲区在创建的时候 torch.zeros 一次就够了",
        "用 torch.empty 分配就行",
        "zero once at allocation, then reuse across calls",
        "Zeroing the buffers when they're allocated is sufficient; no need to do it on every call.",
        "只要初始化时清一次零，后面调用不用再管",
        "sum_buf 和 sumsq_buf 在 __init__ 里置零，之后每次 launch 直接用就行",
        "I'd allocate them with torch.zeros once and keep reusing them, that's enough.",
        "缓冲区 torch.zeros 建一次就行了，以后每次调用复用。",
        "Allocating with torch.zeros at startup is enough.",
        "初始化的时候清零就够了",
        "buffers 只需要在 allocate 的时候 zero 一次",
        "清零在构造函数里做一次就可以了，launch 时不用再清",
    ), (
        "清零一次是不够的，每次 launch 前都要清零",
        "Zeroing them only once at allocation is not enough; they must be zeroed before every launch.",
        "Allocating with torch.zeros once is not enough: the second call adds onto the first call's sums, so zero them before every launch.",
        "只在分配时清零一次不够，第二次调用就会在上次的和上继续累加，必须每次 launch 前清零。",
        "第一次调用时缓冲区是刚分配的 0，所以能通过；第二次开始就漂移。",
        "every launch must start from zero, so zero_() both buffers before each call; zeroing once at allocation only covers the first call",
        "不是只清零一次，而是每次调用前都清零。",
    )),
    ("fused_mean_var_atomic", "q2", "kernel_overwrites", (
        "kernel 会把结果直接写进缓冲区，覆盖掉原来的值",
        "atomic_add overwrites whatever is in the buffer",
        "Each launch writes fresh sums into the buffers, replacing the old contents.",
        "atomic_add 写入的时候会替换旧值",
        "the kernel stores the new totals over the old ones",
        "kernel 每次都会重新写缓冲区，把旧的结果冲掉",
        "atomic_add replaces the stored value with the new sum",
        "the kernel writes its result into sum_buf, overwriting the previous value",
        "atomic_add 会把 buffer 原来的内容覆盖掉",
    ), (
        "atomic_add 不会覆盖原值，而是在上面累加",
        "atomic_add doesn't overwrite the buffer; it adds to what's there.",
        "atomic_add reads the old value and writes old + x, so nothing is replaced; the previous call's sums stay.",
        "清零是把旧的和替换成 0，之后 atomic_add 才在 0 上累加。",
        "atomic_add never overwrites: it adds onto whatever the buffer already holds.",
    )),
    ("fused_mean_var_atomic", "q2", "garbage_not_leftover", (
        "不清零的话缓冲区里是随机的垃圾值，结果不确定",
        "Without zeroing the buffers contain uninitialised garbage, so the result is random.",
        "没有清零 → 内存里是脏数据 → 每次结果随机",
        "the output would be random noise from whatever memory was there",
        "结果会是随机的，因为内存是未初始化的垃圾",
        "不清零的话 buffer 里是随机值，每次跑结果都不一样",
        "Without the zero the sums start from garbage memory.",
    ), (
        "不是随机垃圾，而是上一次调用留下的 Σx、Σx²，结果确定地漂移",
        "It's not random garbage: the buffers hold the previous call's sums, so the drift is deterministic.",
        "没清零时缓冲区里不是随机值，而是上一次调用的 Σx、Σx²，所以结果是确定地翻倍。",
        "If you allocate with torch.empty, the first call already reads uninitialised memory.",
    )),
    ("fused_mean_var_atomic", "q3", "identity_is_stable", (
        "E[x²] − E[x]² 即使均值很大也没问题，float32 精度足够",
        "The identity stays accurate regardless of how big the mean is.",
        "A large mean doesn't matter; the formula is exact.",
        "均值大一点不影响，公式是数学上精确的，所以结果也准",
        "fp32 gives plenty of precision here, so nothing goes wrong.",
        "E[x²] − E[x]² 在 float32 下足够稳定，大均值也一样",
        "The one-pass formula is numerically fine even for big means.",
        "均值很大也没关系，结果照样准。",
        "我觉得 E[x²] − mean² 在 fp32 下也足够精确，大均值不是问题",
        "E[x^2] - mean^2 is stable enough in float32 even for large means",
    ), (
        "不是说恒等式在大均值时还稳定，它会灾难性抵消",
        "The identity is not stable at a large mean: it cancels catastrophically.",
        "E[x²] − E[x]² is exact in real arithmetic, but in fp32 the two terms cancel when the mean is large.",
        "恒等式数学上没问题，但 float32 只有 7 位有效数字，大均值时相减会灾难性抵消。",
        "Welford is numerically stable, so switch to it for near-constant data.",
        "fp32 has plenty of range for 1e8; the trouble is precision, not overflow.",
        "E[x²] − mean² is not stable when the mean is large: the two big terms cancel.",
        "fp32 is enough for the sums themselves, but their difference cancels catastrophically.",
    )),
    ("fused_mean_var_atomic", "q3", "overflow_not_cancellation", (
        "问题是 x² 太大，float32 溢出了",
        "The squares overflow fp32 when the mean is large.",
        "E[x²] 超出 float32 的表示范围变成 inf",
        "mean 很大 → x² 溢出 → inf",
        "the sum of squares exceeds the max float and overflows",
    ), (
        "不是溢出，1e8 远在 float32 范围内，问题是精度",
        "It's not overflow — 1e8 fits easily in fp32; it's cancellation.",
    )),
    ("fused_mean_var_atomic", "q3", "eps_fixes_it", (
        "加一个 eps 就能避免抵消",
        "just add eps to the variance to make it stable",
        "var + 1e-5 就不会出问题了",
        "Adding a small epsilon fixes the negative variance.",
        "在方差上加个 1e-6 就稳定了",
        "Add an epsilon to var before the subtraction and it's safe.",
    ), (
        "加 eps 解决不了抵消，eps 只是防止除零",
        "an eps only guards the division; it does not fix cancellation",
        "eps only keeps rsqrt from dividing by zero; it can't bring back the lost digits.",
    )),
    ("fused_mean_var_atomic", "q3", "atomic_order_blamed", (
        "误差来自 atomic_add 的顺序不确定",
        "The error comes from the nondeterministic ordering of the atomic adds.",
        "atomic 加法顺序每次不一样，所以大均值时结果有偏差",
        "because atomics run in random order, the variance comes out wrong for large means",
        "大均值时误差大是因为 atomic_add 累加顺序不固定。",
        "The variance is off because the atomics land in a different order each run.",
    ), (
        "不是 atomic 顺序的问题，是相减抵消",
        "It isn't the order of the atomic adds; it's catastrophic cancellation.",
        "atomic 顺序带来的差别很小，真正的问题是 E[x²] 与 mean² 相减的灾难性抵消。",
        "It's cancellation, not the atomic ordering.",
    )),
    ("fused_mean_var_atomic", "q3", "tolerance_fixes_it", (
        "把容差放宽一点就解决了",
        "just loosen the tolerance and the problem goes away",
        "A larger rtol solves the cancellation.",
        "容差调大就没问题了",
        "放宽 rtol 就能解决这个抵消问题",
        "Relaxing the tolerance fixes it.",
        "rtol 放宽到 1e-1 就解决了",
    ), (
        "放宽容差并不能解决抵消，只是让检查不过于严格",
        "Loosening the tolerance doesn't fix the cancellation; Welford does.",
        "文章建议 atol=rtol=1e-2，这只是让检查别太严，抵消本身要用 Welford 解决。",
        "a looser tolerance only hides the error; Welford fixes it",
    )),
    ("fused_mean_var_atomic", "q3", "tighten_tolerance", (
        "应该把容差收紧到 1e-6 才能发现问题",
        "use a tighter atol to catch the cancellation",
        "rtol 应该更小一点",
        "a stricter tolerance would expose the error",
    ), (
        "不要收紧容差，文章建议 atol = rtol = 1e-2",
        "Don't tighten the tolerance; the article keeps 1e-2.",
    )),
    ("puzzle_long_softmax", "q1", "zero_padding_ok", (
        "padding 读成 0 没关系，反正 store 的时候会被 mask 掉",
        "other=0 is fine for the padding lanes",
        "越界的位置填 0 不影响 softmax",
        "Reading the out-of-bounds lanes as 0 doesn't change anything.",
        "padding with zero is harmless",
        "填 0 也行，最后不写回",
        "padding 用 0 也可以，超出的部分不会被写回",
        "other=0.0 works fine because the store is masked",
        "Zero padding is harmless here.",
        "OOB lanes read as 0.0 — harmless, they are masked on store anyway",
        "越界位置读成 0 其实没什么影响",
    ), (
        "padding 不能读成 0，0 可能变成最大值，还会往 sum 里多加 exp(0 − m)",
        "Zero padding is not harmless: it can become the max and adds exp(-m) to the sum.",
        "padding 如果读成 0，全负的行里 0 会成为最大值，每个 pad 还往 sum 里加 exp(0 − m)，结果就错了。",
        "Padding must be −inf: a 0 lane can become the row max and adds exp(−m) to the denominator.",
        "other=-inf, so exp(−inf − m) = 0 and the padding adds nothing.",
        "if the OOB lanes are read as 0, a row of negative logits gets 0 as its max and extra exp(0 − m) terms, so 0 is not harmless",
    )),
    ("puzzle_long_softmax", "q1", "no_rescale_needed", (
        "旧的 sum 不用缩放，直接加新块的就行",
        "no need to rescale the running sum",
        "the old sum can stay as it is; just add the new block's exp sum",
        "sum 直接累加就行，不用乘什么系数",
        "m 变了也不需要改旧的 sum",
        "旧的 sum 保持不变，直接加上新块的 Σexp 即可",
        "The running sum doesn't need any correction when the max changes.",
        "running sum 不需要乘任何因子，直接把新块的 exp 和加上去",
        "No rescaling of the old sum is required.",
    ), (
        "旧的 sum 必须缩放，不能直接加",
        "You can't just keep the old sum; it has to be rescaled by exp(m_old − m_new).",
        "当最大值变大时，旧的 sum 必须乘 exp(m_old − m_new)，否则前面的块被高估。",
        "Without rescaling, the earlier blocks are overestimated and the row doesn't sum to 1.",
        "旧 sum 的每一项都是相对 m_old 算的，所以要乘 exp(m_old − m_new) 换到新最大值。",
        "The old sum has to be multiplied by exp(m_old − m_new); otherwise its terms stay relative to the old max.",
    )),
    ("puzzle_long_softmax", "q1", "neg_inf_nan", (
        "−inf 会让越界的 lane 变成 NaN，不过 store 的 mask 会把它们丢掉",
        "the padding lanes become NaN, but they're never stored, so it doesn't matter",
        "-inf → exp 得到 nan，由 mask 过滤",
        "reading −inf makes those lanes NaN, which the store mask discards",
        "用 −inf 填充后这些 lane 算出来是 NaN，store 时被 mask 掉了。",
        "With -inf the out-of-range lanes turn into NaN, which the masked store simply drops.",
        "-inf 的 lane 会得到 NaN，但 store 时 mask 掉了，所以没关系",
    ), (
        "−inf 不会产生 NaN：exp(−inf − m) = 0",
        "The −inf lanes don't become NaN; exp(-inf - m) is exactly 0, so they drop out of the max and sum.",
        "−inf 的 lane 里 exp(−inf − m) = 0，它们不会变成 NaN，也不影响 max 和 sum。",
        "The store mask only keeps the padding from being written; exp(-inf - m) is 0, so no NaN appears.",
        "exp(−inf − m) is 0, so the −inf lanes add nothing and never become NaN.",
    )),
    ("puzzle_long_softmax", "q1", "rescale_inverted", (
        "旧 sum 乘 exp(m_new − m_old)",
        "multiply the running sum by exp(m_new - m_old)",
        "sum *= exp(new_max - old_max)",
        "缩放因子是 e^(m_new−m_old)，大于 1",
        "s = s * exp(m_new - m_old) + Σ exp(x − m_new)",
        "旧 sum 要乘 exp(新max − 旧max)",
        "the correction factor is exp(m_new − m_old)",
    ), (
        "乘 exp(m_old − m_new)，不是 exp(m_new − m_old)",
        "s = s * exp(m_old - m_new) + Σ exp(x − m_new)，因为 m_new ≥ m_old，这个因子 ≤ 1。",
        "multiply by exp(m_old − m_new), which is ≤ 1 since m_new − m_old ≥ 0",
        "the factor exp(m_old − m_new) is at most 1 because m_new ≥ m_old",
    )),
    ("puzzle_long_softmax", "q1", "rescale_for_overflow", (
        "乘 exp(m_old − m_new) 是为了防止溢出",
        "the rescale factor is there to prevent overflow",
        "rescaling keeps the sum from overflowing",
        "缩放是为了让 exp 不爆",
        "乘 exp(m_old − m_new) 主要是为了避免 sum 溢出",
        "We rescale so the running sum never overflows.",
    ), (
        "缩放不是为了防溢出，而是把旧项换算到新的最大值",
        "The rescale isn't about overflow; it converts the old terms to the new max.",
        "乘 exp(m_old − m_new) 不是为了防溢出，而是把旧项从旧最大值换算到新最大值。",
        "Subtracting the running max keeps exp from overflowing; the rescale converts the old terms to the new max.",
    )),
    ("lesson07_softmax", "q2", "padding_value_irrelevant", (
        "store 有 mask，所以 padding 填什么都无所谓",
        "Since the store is masked, the padding value doesn't matter; 0 works too.",
        "padding 填 0 也可以，反正不会写回",
        "other can be anything because masked lanes are never stored",
        "填 0 → 不写回 → 没影响",
        "Padding value is irrelevant: the masked store never writes those lanes.",
        "用 0 填也没事，mask 会在 store 时挡住",
    ), (
        "store 的 mask 只挡写回，padding 仍然参与 tl.max 和 tl.sum，所以不能填 0。",
        "The padding value matters: the store mask doesn't stop the pads from entering tl.max and tl.sum.",
        "The masked store only keeps the pads from being written; they still go into tl.max and tl.sum, so 0 is wrong.",
    )),
    ("lesson07_softmax", "q1", "shift_changes_result", (
        "减去最大值会改变 softmax 的结果，只是一个近似",
        "Subtracting the max is an approximation; the output changes slightly.",
        "减 max 之后结果和原来不完全一样",
        "shifting by the max gives slightly different probabilities",
        "减掉 max 之后的 softmax 只是近似值",
        "the result changes a little after subtracting the max, but it avoids overflow",
    ), (
        "减去最大值不会改变结果：分子分母同乘 exp(−max)。",
        "Subtracting the max doesn't change the softmax at all; it is exact.",
        "subtracting the max leaves the result exactly the same",
    )),
    ("lesson07_softmax", "q1", "exp_sign", (
        "exp(−1000) 是一个很小的正数，不会变成 0",
        "After subtracting the max the exponents are all positive.",
        "exp 负数会得到负数",
        "减去最大值后指数都是正的",
    ), (
        "减去最大值后指数都 ≤ 0，最大的一项是 exp(0) = 1。",
        "exp(−1000) underflows to exactly 0 in float32.",
    )),
    ("lesson05_row_sum", "q2", "sum_skips_masked", (
        "tl.sum 会自动跳过被 mask 的位置，所以 other 填什么都行",
        "the masked lanes aren't included in tl.sum",
        "mask 为 False 的 lane 不参与求和",
        "tl.sum only adds the lanes that were loaded",
        "被 mask 掉的 lane 在 tl.sum 里会被忽略",
        "tl.sum ignores lanes where the mask is false",
    ), (
        "tl.sum 会把每个 lane 都加进去，包括 mask 掉的，所以 other 必须是 0。",
        "tl.sum doesn't skip masked lanes: it sums all BLOCK lanes, so other must be 0.",
        "tl.sum adds all BLOCK lanes, masked ones included, which is why other must be 0",
    )),
    ("lesson05_row_sum", "q2", "max_zero", (
        "求最大值的时候 other 也填 0",
        "For a max the padding should also be 0.",
        "max 归约用 0 填充就行",
    ), (
        "求最大值时 other 应该填 −inf，不能填 0。",
        "For a max, pad with -inf, not 0.",
    )),
    ("lesson05_row_sum", "q3", "stride_is_n", (
        "行地址就是 row * N，因为每行 N 个元素",
        "The row stride is always N.",
        "用 N 代替 stride 也一样",
        "地址 = x_ptr + row * N，每行正好 N 个",
    ), (
        "视图的行步长大于 N，所以不能用 row * N，要用 row * stride。",
        "The stride is not N for a view: big[:, :N] has stride > N.",
        "row * N only works for a contiguous tensor; a view needs row * stride",
    )),
    ("lesson05_row_sum", "q3", "n_crashes", (
        "用 N 会越界然后报错崩溃",
        "Using N instead of the stride crashes with an illegal memory access.",
        "给定的检查会发现这个错误",
    ), (
        "用 N 不会崩溃，它静默地读到别的数据，给定检查也发现不了。",
        "It doesn't crash: it silently reads the wrong rows and the check passes.",
    )),
    ("welford_merge", "q2", "m2_just_add", (
        "合并时把两个 M2 直接相加就行",
        "M2 = M2_a + M2_b is enough to merge.",
        "The chunks' M2 values simply add.",
        "两块方差加起来就是合并后的方差",
        "合并 M2 就是 M2_a + M2_b，直接加",
        "the merged M2 is just the sum of the two M2s",
    ), (
        "不能只把两个 M2 相加，还要加上 delta² · n_a n_b/(n_a+n_b)。",
        "Adding the two M2 misses the delta² term.",
        "the merged M2 is M2_a + M2_b plus delta² · n_a n_b / n",
    )),
    ("welford_merge", "q2", "wrong_weight", (
        "权重是 n_b",
        "The delta² term is weighted by n_a * n_b.",
        "合并项乘 n·n_b 就行",
    ), (
        "权重是 n_a·n_b/(n_a+n_b)，不是 n_b。",
    )),
    ("welford_merge", "q3", "block_count", (
        "最后一块也按 BLOCK 个元素算就行",
        "n_b = BLOCK for every chunk, including the last one.",
        "每块元素个数都当成 BLOCK 也可以",
        "n_b 一律用 BLOCK",
        "count every chunk as BLOCK elements, that's fine",
    ), (
        "最后一块的 n_b 是 N − start，不能按 BLOCK 计。",
        "n_b must be N - start for the last chunk, not BLOCK.",
        "n_b is BLOCK for full chunks and N − start for the last one",
    )),
    ("welford_merge", "q1", "two_pass_also_cancels", (
        "两遍算法也一样会发生灾难性抵消",
        "The two-pass method suffers the same cancellation.",
        "先减均值也解决不了抵消问题",
        "two-pass 其实也会抵消，只是少一点",
    ), (
        "两遍算法先减均值，偏差很小，平方后不会抵消。",
        "The two-pass method doesn't cancel: it squares the small deviations.",
        "two-pass subtracts the mean first, so its squares are small and nothing cancels",
    )),
    ("welford_merge", "q1", "lower_precision", (
        "换成 bf16 计算会更稳定",
        "Using fp16 tensor cores makes it more stable.",
        "把值 clamp 一下就稳定了",
    ), (
        "降低精度只会更糟，bf16 的有效位更少。",
        "Lower precision like bf16 makes it worse, not better.",
    )),
    ("welford_merge", "q1", "one_pass_better", (
        "单遍公式 E[x²] − E[x]² 更稳定",
        "The one-pass formula is accurate enough here.",
        "一遍算法比两遍更准",
    ), (
        "单遍公式不稳定，大均值时会抵消。",
        "The one-pass formula is not stable for large means.",
    )),
    # round 5: written after every rule, full right answers as near-misses
    ("fused_mean_var_atomic", "q1", "add_variances", (
        "每个块的 var 先算好，然后 atomic_add，全局 var 就出来了",
        "honestly, averaging the chunk variances should be close enough to the real one",
    ), (
        "Variance isn't linear: each chunk's variance is measured about its own mean, so when you merge chunks with different means there is an extra between-chunk term. Σx and Σx² are plain sums, which add across programs in any order, so the kernel atomically adds those two, and once all programs are done the host computes Σx²/N − mean².",
        "Var 不可加（Var(A∪B) ≠ Var(A)+Var(B)），每个 program 只 atomic_add 自己的 Σx 与 Σx²；加法交换律、结合律保证顺序无关；kernel 结束后 host 算 E[x²] − mean²。",
        "block 0 的方差是 1，block 1 的方差也是 1，但合起来的方差是 26，所以方差相加是错的。",
    )),
    ("fused_mean_var_atomic", "q2", "zero_once", (
        "zero the two buffers when you create them and you're done",
    ), (
        "atomic_add accumulates onto whatever is in the buffer, so the sums from the previous call are still there; the second call doubles them and the mean doubles. That's why both buffers are zeroed before every launch. The first call passes because freshly allocated torch.zeros buffers start at 0.",
        "第一次调用时 buffer 是 torch.zeros 分配的，正好是 0，所以测试只跑一次看不出来；第二次就会翻倍。所以 host 每次 launch 前都要把 sum 和 sumsq 都 zero_()。",
    )),
    ("fused_mean_var_atomic", "q3", "identity_is_stable", (
        "一遍公式在 fp32 下算大均值的数据也完全没问题",
    ), (
        "当数据围绕 1e4 波动 1e-2 时，E[x²] 和 mean² 都约为 1e8，float32 只有 7 位有效数字，相减后只剩舍入误差，这就是灾难性抵消。文章建议 atol=rtol=1e-2，数据接近常数时改用 Welford；恒等式在 GPU 上是简单快速的取舍。",
        "The identity is fine for data with a small mean, and the article accepts it with atol = rtol = 1e-2; for near-constant data with a large mean it cancels, so use Welford.",
    )),
    ("puzzle_long_softmax", "q1", "zero_padding_ok", (
        "pad with 0, no harm done since those lanes are not written back",
    ), (
        "每个 block 的 max 变大时，旧 sum 里每一项 exp(x − m_old) 都要换成 exp(x − m_new)，所以整体乘 exp(m_old − m_new)；不乘的话前面的块被高估，行和不为 1。越界 lane 读成 −inf，exp(−inf − m) = 0，对 max 和 sum 都没影响；读成 0 的话，全负的行 max 会变成 0，sum 还多出 exp(0 − m)。",
        "Out-of-range lanes must be −inf. If they were 0, the store mask would still keep them out of the output, but they would already have entered the max and the sum.",
    )),
    ("puzzle_long_softmax", "q1", "no_rescale_needed", (
        "I don't think the old sum needs adjusting when the max moves",
    ), (
        "The running sum l is rescaled: l = l * exp(m_old - m_new) + sum(exp(x - m_new)), because its terms were relative to m_old; without it the earlier blocks weigh too much.",
    )),
    ("lesson07_softmax", "q2", "padding_value_irrelevant", (
        "其实 padding 是多少无所谓，store 会把它们屏蔽掉",
    ), (
        "store 的 mask 只管写回，padding 在 tl.max 和 tl.sum 里照样参与计算。全负的一行里 0 会变成最大值，而且每个 padding lane 往分母里加 exp(0 − max)。−inf 是 max 的单位元，exp(−inf) = 0 是加法的单位元，所以要填 −inf。",
    )),
    ("lesson07_softmax", "q1", "shift_changes_result", (
        "subtracting the max slightly alters the probabilities but keeps them stable",
    ), (
        "softmax(x) = softmax(x − c) because exp(−c) multiplies numerator and denominator alike; with c = max every exponent is ≤ 0, the largest term is 1 and the denominator is at least 1, so nothing overflows. Without the shift, exp(1000) is inf and inf/inf is NaN.",
    )),
    ("lesson05_row_sum", "q2", "sum_skips_masked", (
        "masked lanes are skipped by the reduction anyway",
    ), (
        "tl.sum 把 BLOCK 个 lane 全部加起来，mask 只决定 load 读不读内存，被 mask 的 lane 取 other 的值。所以 other 必须是加法单位元 0；求最大值时用 −inf。填错了（比如 1.0）结果就多加了 1。",
    )),
    ("welford_merge", "q2", "m2_just_add", (
        "the two M2s just add up, nothing more to do",
    ), (
        "Each M2 is about its own block mean. When the means differ, the merged M2 is M2_a + M2_b + delta² · n_a·n_b/(n_a+n_b); adding the two M2 alone leaves out the spread between the two means and underestimates the variance.",
        "合并时不能只把 M2_a 和 M2_b 相加，还要加上 δ²·n_a·n_b/(n_a+n_b)，因为两块的均值不一样。",
    )),
    ("welford_merge", "q3", "block_count", (
        "可以把每块都看作 BLOCK 个元素",
    ), (
        "最后一块不满，n_b 要用 N − start（有效元素个数），不能用 BLOCK；padding lane 减去均值后是 −mean_b，平方后会加进 M2_b，所以要用 tl.where 重新 mask。",
    )),
]

# (exercise, question, concept, phrasings that state it): the chain links of the questions above
LINKS: list[tuple[str, str, str, tuple[str, ...]]] = [
    ("fused_mean_var_atomic", "q1", "nonlinear", (
        "方差不是线性的",
        "variance isn't additive",
        "Var(A∪B) ≠ Var(A)+Var(B)",
        "方差没法直接相加",
        "variances don't simply add up across blocks",
        "var 不满足可加性",
    )),
    ("fused_mean_var_atomic", "q1", "between_term", (
        "每块的均值不一样，合并时还差一个块间的项",
        "the chunks have different means, so you'd miss the between-group term",
        "各块 mean 不同，直接加会漏掉均值差带来的那部分",
        "merging needs a correction for the difference between the block means",
        "(ΣS1_p)² ≠ ΣS1_p²",
        "block means differ, so the spread between blocks is lost",
    )),
    ("fused_mean_var_atomic", "q1", "linear", (
        "Σx 和 Σx² 是线性的，可以跨 program 相加",
        "sums are additive: the total sum is the sum of the partial sums",
        "sum 和 sumsq 可以直接加起来",
        "整行的和等于各块的和相加",
        "Σx, Σx² just add up across programs",
    )),
    ("fused_mean_var_atomic", "q1", "host_combine", (
        "最后在 host 上算 E[x²] − mean²",
        "the host computes the variance after the kernel returns",
        "kernel 结束后在 CPU 上合成方差",
        "apply the identity on the host once all programs are done",
        "等所有 program 都加完了再在 host 端算方差",
    )),
    ("fused_mean_var_atomic", "q2", "accumulates", (
        "atomic_add 是在原值上加，不会覆盖",
        "atomic_add adds onto whatever is already there",
        "atomic_add 只会累加",
        "atomics accumulate into the existing value",
        "atomic_add does a read-modify-write: old + x",
    )),
    ("fused_mean_var_atomic", "q2", "leftover", (
        "缓冲区里还是上一次调用的和",
        "the buffers still hold the sums from the previous call",
        "上次 launch 留下的 Σx 还在",
        "stale sums from the last run remain in the buffers",
        "the old totals are still there",
    )),
    ("fused_mean_var_atomic", "q2", "drift", (
        "第二次调用的时候和会翻倍，均值也翻倍",
        "from the second call on, the sums double",
        "the mean comes out twice as big on the 2nd call",
        "每调用一次结果就多加一份",
        "the results keep growing call after call",
    )),
    ("fused_mean_var_atomic", "q2", "zero_each_launch", (
        "每次 launch 前都要清零两个缓冲区",
        "zero both buffers before every launch",
        "each call: zero_() then launch",
        "每次调用前 sum_buf.zero_()",
        "the host must reset the buffers before each kernel call",
    )),
    ("fused_mean_var_atomic", "q2", "first_call_passes", (
        "第一次调用缓冲区刚分配是 0，所以能通过",
        "the first call passes because the freshly allocated buffers are zero",
        "a single-call test won't catch it",
        "只跑一次测试发现不了",
        "the bug only shows up from the second call, so it depends on call order",
    )),
    ("puzzle_long_softmax", "q1", "relative_to_old", (
        "旧 sum 里的每一项都是按旧的最大值算的 exp(x − m_old)",
        "the old sum's terms were computed relative to the old max",
        "之前累加的 exp 是以 m_old 为基准的",
        "the accumulated terms are exp(x_i − m_old)",
        "the old sum is in terms of the previous max",
    )),
    ("puzzle_long_softmax", "q1", "rescale", (
        "乘 exp(m_old − m_new) 换算到新最大值",
        "multiply it by exp(m_old - m_new)",
        "l = l * exp(m_prev - m_cur)",
        "用 e^(m_old−m_new) 把旧 sum 缩放",
        "rescale the old sum to the new max",
    )),
    ("puzzle_long_softmax", "q1", "overestimate", (
        "不缩放的话前面的块会被高估，和不为 1",
        "otherwise the earlier blocks are overweighted and the row doesn't sum to 1",
        "without it the denominator comes out too big",
        "前面块的权重偏大，结果不对",
        "the probabilities won't add up to 1",
    )),
    ("puzzle_long_softmax", "q1", "neg_inf", (
        "padding 读成 -inf",
        "other=-float('inf')",
        "the out-of-bounds lanes are read as negative infinity",
        "越界的填负无穷",
        "other = float('-inf')",
    )),
    ("puzzle_long_softmax", "q1", "zero_effect", (
        "如果读成 0，0 可能成为最大值，还会往 sum 里多加 exp(0 − m)",
        "reading 0 would change the max and add exp(-m) to the sum",
        "0 会变成最大值（行全是负数时）",
        "a 0 lane contributes exp(0 − m) to the denominator",
        "zeros would inflate the sum",
    )),
]

# Phrasings the scorer does not read yet (a positive missed, a near-miss flagged, a link unfound).
GAPS = frozenset({
    "每个块的 var 先算好，然后 atomic_add，全局 var 就出来了",
    "zero the two buffers when you create them and you're done",
    "I don't think the old sum needs adjusting when the max moves",
    "可以把每块都看作 BLOCK 个元素",
    "我的做法：kernel 里每个 program 先求出本块 var，atomic_add 进一个标量，host 再除以 program 数。",
    "Per-chunk variance, then atomic add: total var.",
    "sum_buf 和 sumsq_buf 在 __init__ 里置零，之后每次 launch 直接用就行",
    "fp32 gives plenty of precision here, so nothing goes wrong.",
    "越界位置读成 0 其实没什么影响",
    "We rescale so the running sum never overflows.",
    "every launch must start from zero, so zero_() both buffers before each call; zeroing once at allocation only covers the first call",
    "fp32 is enough for the sums themselves, but their difference cancels catastrophically.",
    "the merged M2 is M2_a + M2_b plus delta² · n_a n_b / n",
    "n_b is BLOCK for full chunks and N − start for the last one",
    "variances don't simply add up across blocks",
    "各块 mean 不同，直接加会漏掉均值差带来的那部分",
    "sum 和 sumsq 可以直接加起来",
    "the old totals are still there",
    "每调用一次结果就多加一份",
    "the host must reset the buffers before each kernel call",
    "a single-call test won't catch it",
    "the old sum is in terms of the previous max",
    "without it the denominator comes out too big",
    "zeros would inflate the sum",
})


# Branch `para7` (2026-12-06): the four exercises para6 did not cover (lesson06_mean_var, puzzle_long_sum,
# puzzle_outer_add, weighted_sum_fwd_bwd), misconceptions told in a wrong explanation of a right fill, and the
# mechanisms para6's families still missed (races blamed for the variances, the shift called an approximation,
# range blamed instead of cancellation). Round A was written before the clause rules that cover it (83/121
# found, 57/66 near-misses clean -> 120/121, 63/66); round B after them, untouched by them (12/32, 18/18 ->
# 18/32, 18/18): the evidence of generalisation.
PARA7_ROUND_A: list[tuple[str, str, str, tuple[str, ...], tuple[str, ...]]] = [
    ('lesson06_mean_var', 'q2', 'other_is_enough', (
        'load 的时候 other=0.0 就够了，不需要再 mask 一次',
        'other=0 at the load is enough, no second mask needed',
        '只要 load 时填 0，后面算方差就没问题',
        'Masking the load with other=0.0 already keeps the padding out of the variance.',
        'load 加 mask、other 给 0 → 方差就不会被污染',
        'I think the masked load with a zero fill covers it; the variance sum needs nothing more.',
        '第一次 mask 已经把越界的置 0 了，所以第二次求和不用管',
    ), (
        '只在 load 时 mask 不够：padding 读成 0，减去均值后变成 −mean，平方后加进方差',
        'other=0.0 is not enough: after centring the pads are −mean, so they need a second mask.',
        'I first thought other=0 was enough, but the centred pads are 0 − mean and their squares pollute the variance.',
        'load 时 other=0 只保证第一次求和正确，第二次求和前必须再用 tl.where 把 padding 置 0。',
    )),
    ('lesson06_mean_var', 'q2', 'padding_adds_nothing', (
        'padding 都是 0，所以不影响方差',
        'The padding lanes are zero, so they add nothing to the variance.',
        '越界的 lane 是 0，对方差没贡献',
        'pads = 0 → contribute nothing to Σ(x − mean)²',
        "since the padded lanes hold zeros they don't change the variance",
        '补的那些 0 平方以后还是 0，方差不受影响',
    ), (
        'padding 虽然是 0，但减去均值后是 −mean，平方后是 mean²，会加进方差',
        'The pads are zero, but 0 − mean is not zero: each adds mean² to the variance.',
        'padding 的 0 在第一次求和里不影响，减去均值后就不再是 0 了。',
    )),
    ('lesson06_mean_var', 'q2', 'stale_lanes', (
        'padding lane 里残留着寄存器的旧值，所以方差被污染',
        'The inactive threads keep stale register values that get into the sum.',
        '编译器没有清理越界 lane，里面是脏数据',
        '污染来自没激活的线程留下的垃圾值',
    ), (
        '不是寄存器里的残留值，而是代数上的 0 − mean',
        "It isn't stale registers: the pads hold 0, and 0 − mean is the pollution.",
    )),
    ('lesson06_mean_var', 'q2', 'oob_in_sum', (
        '第二次求和读到了越界的内存',
        'The second sum reads out of bounds, which pollutes the variance.',
        '算方差时又越界读了 x，所以结果错',
    ), (
        '第二次求和并没有越界读内存，用的是寄存器里已经 load 好的值；污染来自 0 − mean',
        "The second sum doesn't read memory at all; the pollution is 0 − mean.",
    )),
    ('lesson06_mean_var', 'q1', 'divide_by_block', (
        '均值 = sum / BLOCK',
        'divide the sum by BLOCK to get the mean',
        'mean 用 tl.sum(x) / BLOCK 算',
        '方差最后除以 BLOCK 就行',
    ), (
        '要除以真实元素个数 N，不能除以 BLOCK',
        'Divide by N, not by BLOCK: the padded lanes are not elements.',
    )),
    ('lesson06_mean_var', 'q2', 'bigger_block', (
        '把 BLOCK 设成 N 就没有 padding 了，也就不会污染',
        'Just make BLOCK equal to N and the pollution goes away.',
        'BLOCK 取大一点就不会有这个问题',
    ), (
        'BLOCK 必须是 2 的幂，不能直接设成 N，所以 padding 总会有',
        "BLOCK can't simply be N, it must be a power of two, so the second mask stays.",
    )),
    ('lesson06_mean_var', 'q3', 'overflow_not_cancellation', (
        '大均值时 x² 会溢出 float32',
        'the squares overflow when the mean is large',
        'E[x²] 太大超出 fp32 范围',
        'the problem is that x^2 exceeds the float32 range',
        'mean 大 → x² 溢出 → 方差错',
        'Large means make Σx² blow past what float32 can hold.',
    ), (
        '不是溢出，1e8 在 fp32 范围内，问题是精度：两个大数相减抵消',
        "It's not overflow — the values fit in fp32; it is catastrophic cancellation.",
        "fp32 has plenty of range here; precision, not range, is what's lost.",
    )),
    ('lesson06_mean_var', 'q3', 'prefers_one_pass', (
        '用 E[x²] − E[x]² 一遍算完更稳定',
        'The one-pass formula E[x²] − E[x]² is more stable.',
        '单遍公式数值上更稳',
    ), (
        'E[x²] − E[x]² 并不更稳定，大均值时会灾难性抵消，应先减均值再平方',
        'The one-pass formula is less stable, not more: it cancels catastrophically.',
    )),
    ('lesson06_mean_var', 'q3', 'lower_precision', (
        '换成 fp16 或 bf16 计算会更稳定',
        'use bf16 tensor cores to make it more stable',
        '降低精度就能缓解',
    ), (
        '降低精度只会更糟，应该用 fp64 累加或 Welford',
        'Lower precision like fp16 makes it worse, not better.',
    )),
    ('lesson06_mean_var', 'q3', 'scaling_fixes', (
        '先把数据归一化到 [0,1] 就不会抵消',
        'scaling the data down first removes the cancellation',
        '把 x 除以一个大数缩放一下就稳定了',
    ), (
        '缩放解决不了抵消，抵消是相对误差，缩放后比例不变',
        "Scaling doesn't help: cancellation is relative, so it stays after scaling.",
    )),
    ('lesson06_mean_var', 'explanation', 'other_is_enough', (
        '填空处 other=0.0，这样越界 lane 是 0，不会影响均值和方差，所以不需要别的 mask',
        "I load with mask and other=0.0; zero pads affect neither the mean nor the variance, so that's all that's needed.",
    ), (
        'load 用 other=0.0，均值正确；但 x − mean 之后 padding 是 −mean，所以填空处用 tl.where(mask, x − mean, 0) 再 mask 一次。',
    )),
    ('puzzle_long_sum', 'q1', 'floor_is_fine', (
        '循环 T // B1 次就够了',
        'loop T // B1 times',
        '迭代次数是 T 整除 B1',
        'the loop runs T/B1 times (integer division)',
        'for i in range(T // B1) 就覆盖了整行',
    ), (
        '循环次数是 cdiv(T, B1)，不能用 T // B1，否则最后不满的一块会被漏掉',
        'T // B1 drops the last partial block; it has to be cdiv(T, B1).',
    )),
    ('puzzle_long_sum', 'q1', 'mask_not_needed', (
        '最后一块不用加 mask',
        "the last block doesn't need a mask",
        '读到超出的部分也没关系，不需要 mask',
        'No mask is required for the tail block.',
        '最后一块越界的部分不影响结果，所以 mask 可以省略',
    ), (
        '最后一块必须加 mask，否则会读到下一行的数据',
        "Without a mask the last block reads the next row's values, so it is needed.",
        '我原以为最后一块不用 mask，其实会把下一行的数加进来',
    )),
    ('puzzle_long_sum', 'q1', 'overrun_garbage', (
        '不加 mask 会读到随机的垃圾值',
        'Without a mask it reads uninitialised memory, so the result is random.',
        '越界读到的是 NaN 或者随机数',
        '最后一块不加 mask → 读到未初始化内存 → 结果随机',
        'the overrun pulls in garbage values',
    ), (
        '不是随机值，而是下一行真实的数据，所以结果确定地偏大',
        "It's not garbage: the overrun reads the next row's real data.",
        '越界读到的是下一行的元素，不是未初始化的内存',
    )),
    ('puzzle_long_sum', 'q1', 'mask_for_race', (
        'mask 是为了防止不同 program 同时写',
        'The mask prevents programs from racing on their writes.',
        '加 mask 避免多个 program 写冲突',
    ), (
        'mask 与竞争无关，它只防止读到别的行',
        "The mask isn't about races; each program writes its own rows.",
    )),
    ('puzzle_long_sum', 'q1', 'sum_skips_nan', (
        '就算读到 NaN，tl.sum 也会跳过',
        'tl.sum ignores NaN values',
        'NaN 不会被加进求和',
    ), (
        'tl.sum 不会跳过 NaN，一个 NaN 会让整个和变成 NaN',
        "A NaN doesn't get skipped by tl.sum; it poisons the whole sum.",
    )),
    ('puzzle_long_sum', 'explanation', 'mask_not_needed', (
        '每个 program 负责一行，循环 cdiv(T, B1) 次累加；最后一块不需要 mask，因为多出来的部分不写回',
        'Each program sums one row in a loop of cdiv(T, B1) steps; the last chunk needs no mask since nothing is stored there.',
    ), (
        '每个 program 负责一行，循环 cdiv(T, B1) 次；load 的 mask 是 cols < T，other=0，防止最后一块读到下一行。',
    )),
    ('puzzle_outer_add', 'q1', 'load_mask_enough', (
        'load 时加了 mask 就够了，store 不用 mask',
        'masking the loads is enough; the store needs no mask',
        '只在 load 加 mask 也可以',
        'Since x and y are loaded with a mask, the store is safe.',
        'load 有 mask → 越界值是 0 → store 不用管',
        "I'd say a masked load covers it, so no store mask",
        'store 不需要 mask，因为 load 已经 mask 过了',
    ), (
        '只在 load 时 mask 不够：越界 lane 仍然是 x + 0 或 0 + y，会被写出去',
        'A load mask is not enough: the overhanging lanes still hold x + 0 and get stored.',
        'load 的 mask 只管读，store 必须有自己的二维 mask。',
        'I used to think masking the loads was enough, but the overhanging lanes still write x + 0.',
    )),
    ('puzzle_outer_add', 'q1', 'store_drops', (
        '越界的 store 会被自动丢弃',
        'out-of-range stores are simply dropped by the hardware',
        '越界写会被后面的 program 正确覆盖',
        'writes past the end are ignored automatically',
    ), (
        '越界的 store 不会被自动丢弃，会写进下一行或 z 之外',
        'Out-of-range stores are not dropped; they land in the next row or past z.',
    )),
    ('puzzle_outer_add', 'q1', 'same_block_size', (
        'y 方向也用 B0 大小的块',
        'the y blocks are B0 wide as well',
        '两个方向的块大小都是 B0',
    ), (
        'y 方向的块宽是 B1，不是 B0',
        'y uses B1-wide blocks, not B0.',
    )),
    ('puzzle_outer_add', 'q1', 'mask_for_shape', (
        'mask 要是二维的，否则形状对不上会报错',
        'the mask has to be 2D only because a 1D mask is a shape error',
        '二维 mask 只是为了形状匹配',
    ), (
        '一维 mask 能广播，二维 mask 是为了不让越界 lane 写进下一行',
        'A 1D mask would broadcast fine; the 2D mask keeps overhanging lanes from writing past z.',
    )),
    ('puzzle_outer_add', 'explanation', 'load_mask_enough', (
        'pid0 负责 x 方向的块，pid1 负责 y 方向；load 时加 mask，越界是 0，所以 store 直接写就行',
        'pid 0 takes a block of x, pid 1 a block of y; the loads are masked, so z can be stored without a mask.',
    ), (
        'pid0 负责 B0 个 x，pid1 负责 B1 个 y；store 的 mask 是 (off0 < N0)[:, None] & (off1 < N1)[None, :]。',
    )),
    ('weighted_sum_fwd_bwd', 'q1', 'padding_is_enough', (
        "padding_option='zero' 就够了，不需要 boundary_check",
        'padding zero is enough without boundary_check',
        '只要设置 padding_option 为 zero，越界自然是 0',
        'boundary_check 只写 (0,) 也可以，padding 会补 0',
        'with padding_option zero the unchecked columns read as 0',
    ), (
        'padding_option 只对 boundary_check 里的维度生效，没检查的列会读到下一行',
        'padding zero only applies to the checked dims; without (0, 1) the columns read the next row.',
    )),
    ('weighted_sum_fwd_bwd', 'q1', 'overrun_faults', (
        '越界读一定会崩溃',
        'an out-of-bounds read always crashes',
        '越界访问会触发 illegal memory access',
    ), (
        '越界读不一定崩溃，在连续的 x 上会悄悄读到下一行',
        "An out-of-bounds read doesn't crash here; it silently reads the next row.",
    )),
    ('weighted_sum_fwd_bwd', 'q2', 'atomic_needed', (
        '每个 program 直接 store 到 grad_w 的同一位置，值会自动加起来',
        'programs can just store grad_w into the same entries and it sums up',
        '直接写 grad_w 就行，多个 program 写同一个地方会累加',
        'plain stores to grad_w from every tile accumulate',
    ), (
        '多个 program 直接 store 到同一位置会竞争，最后写的覆盖前面的',
        "Plain stores race: the last writer wins, so the values don't add up.",
    )),
    ('weighted_sum_fwd_bwd', 'q2', 'partial_saves_memory', (
        'partial buffer 是为了节省显存',
        'the partial buffer caches results to save memory',
        '先写 partial 是为了缓存，减少内存',
    ), (
        'partial buffer 不是为了省内存，而是因为 program 之间不能跨行 tile 求和',
        "The partial buffer costs memory; it exists because programs can't sum across row tiles.",
    )),
    ('fused_mean_var_atomic', 'q1', 'order_blamed_for_variances', (
        '方差不能直接加，因为 atomic 操作有竞争，顺序不同结果不同',
        'The variances come out wrong because of the race between the atomic adds.',
        '各 program 的 atomic_add 先后不定 → 方差合并错',
        'I think the problem is that atomics from different programs interleave, so the per-block variances get mixed up.',
        '原子操作之间存在竞态，所以不能累加方差',
    ), (
        'atomic 顺序不影响求和；方差不能加是因为不是线性的',
        "Races aren't the issue: atomic_add is atomic. Variance is just not additive.",
    )),
    ('lesson07_softmax', 'q1', 'shift_changes_result', (
        '减去最大值会让结果变成近似值',
        'subtracting the max changes the distribution a bit',
        '减 max 后概率分布变了，但更稳定',
        'The max subtraction trades a little accuracy for stability.',
        '减最大值之后得到的是近似的 softmax',
        'shifting the logits changes the output distribution',
    ), (
        '减最大值不改变分布：分子分母同乘 exp(−max)',
        "The shift doesn't change the distribution; softmax is shift-invariant.",
        '我以前以为减 max 是近似，其实结果完全一样',
    )),
    ('welford_merge', 'q1', 'overflow_not_cancellation', (
        'E[x²] 约 1e8，超过 float32 能表示的范围',
        'the squares overflow float32',
        'x² 太大，float32 装不下',
        '大数平方后溢出，所以单遍公式不准',
        'the one-pass formula fails because 1e8 overflows fp32',
    ), (
        '1e8 没有超出 float32 范围，问题是精度：间隔约 8',
        "1e8 is well within fp32's range; the spacing of 8 is what kills it.",
    )),
    ('fused_mean_var_atomic', 'q3', 'overflow_not_cancellation', (
        '大均值时 Σx² 超出 float32 范围',
        'the large mean makes x² overflow in float32',
        '平方项太大溢出了',
        "fp32 can't represent sums of squares that large, so they overflow",
    ), (
        '平方没有溢出，是两个大数相减抵消',
        "The squares don't overflow; the subtraction cancels.",
    )),
]
PARA7_ROUND_B: list[tuple[str, str, str, tuple[str, ...], tuple[str, ...]]] = [
    ('lesson06_mean_var', 'q2', 'other_is_enough', (
        'mask 加在 load 上、越界补 0，这一步就已经保证方差是对的',
        'The zero fill from the masked load is all the protection the variance needs.',
        '只需要 load 的 other=0.0，方差那步什么都不用加',
    ), (
        'load 的 other=0.0 让均值正确，但中心化之后越界 lane 变成 −μ，所以方差前还得再 mask。',
        'Zero-filling on load is fine for the sum but not for the variance: centred pads equal −mean.',
    )),
    ('lesson06_mean_var', 'q2', 'padding_adds_nothing', (
        '补的 lane 值为 0，方差不会因为它们改变',
        "Padded lanes are 0, so they don't affect the variance at all.",
    ), (
        '补的 lane 在求和时为 0 没问题，可中心化后是 −μ，平方 μ² 会加进方差。',
    )),
    ('lesson06_mean_var', 'q3', 'overflow_not_cancellation', (
        '均值到 1e4 时平方就是 1e8，float32 表示不了这么大的数',
        "With a big mean the sum of squares goes out of float32's range.",
    ), (
        '1e8 对 float32 来说一点都不大，真正的问题是有效位只有 24 位，相减后精度没了。',
    )),
    ('lesson06_mean_var', 'q3', 'scaling_fixes', (
        '把输入先缩放到较小的范围再算方差，抵消就消失了',
        'Normalising x before the reduction would fix the cancellation.',
    ), (
        '缩放不改变相对误差，抵消依旧；应该先减去均值（两遍法）或用 Welford。',
    )),
    ('puzzle_long_sum', 'q1', 'floor_is_fine', (
        '循环次数 = T // B1',
        'number of iterations: T // B1',
    ), (
        '循环 cdiv(T, B1) 次，也就是 (T + B1 − 1) // B1。',
    )),
    ('puzzle_long_sum', 'q1', 'overrun_garbage', (
        '越界那部分是没初始化过的内存，读出来的数不确定',
        'past the end of the row you get whatever junk is in memory',
    ), (
        '越界的部分其实是下一行开头的数据，是确定的，所以和会偏大。',
    )),
    ('puzzle_long_sum', 'q1', 'sum_skips_nan', (
        'tl.sum 碰到 NaN 会自动忽略',
        'NaNs are left out of tl.sum',
    ), (
        'tl.sum 遇到 NaN 结果就是 NaN，它不会忽略。',
    )),
    ('puzzle_outer_add', 'q1', 'load_mask_enough', (
        'x 和 y 读的时候都 mask 了，z 写的时候就不必再 mask',
        'Masking the two loads suffices; z can be written unmasked.',
    ), (
        'load 时的 mask 只保证读不越界，越界 lane 仍会算出 x + 0，所以 store 也要二维 mask。',
        '第一维的 program 负责 B0 行，第二维负责 B1 列；store 用 (i < N0)[:, None] & (j < N1)[None, :]，只在 load 加 mask 不够。',
    )),
    ('puzzle_outer_add', 'q1', 'store_drops', (
        '超出 z 范围的写会被 GPU 自动丢掉',
        'Stores that fall out of bounds get discarded automatically.',
    ), (
        '越界的写不会被自动丢弃，没 mask 就会写到下一行。',
    )),
    ('weighted_sum_fwd_bwd', 'q1', 'padding_is_enough', (
        "有了 padding_option='zero'，越界的列就是 0，boundary_check 写 (0,) 就够",
        'padding_option zero alone makes the out-of-range columns 0.',
    ), (
        'padding_option 只作用于 boundary_check 中列出的维度；只写 (0,) 时列方向不检查，会读到下一行。',
    )),
    ('weighted_sum_fwd_bwd', 'q2', 'atomic_needed', (
        '各 program 把 grad_w 直接 store 到同一行，结果自然就累加了',
        'If every program stores its grad_w into the same D entries, the stores add up.',
    ), (
        '多个 program 直接 store 到同一位置只会留下最后一个写的值，所以用 partial buffer 再 torch.sum。',
    )),
    ('fused_mean_var_atomic', 'q1', 'order_blamed_for_variances', (
        '方差合并出错，是因为 atomic_add 有竞态',
        "Per-block variances can't be atomically combined because the atomic adds happen in an unpredictable order.",
    ), (
        'atomic_add 的先后不影响 Σx 和 Σx²；方差不能加是因为各块均值不同。',
    )),
    ('lesson07_softmax', 'q1', 'shift_changes_result', (
        '减去最大值会引入一点误差，但能防止溢出',
        'Subtracting the max gives an approximate softmax that is numerically safe.',
    ), (
        '减去最大值是精确的变换，不引入任何近似：分子分母同乘 exp(−max)。',
    )),
    ('welford_merge', 'q1', 'overflow_not_cancellation', (
        '平方到 1e8 已经超过 float32 的最大值了',
        'x² around 1e8 is too large for float32 and overflows',
    ), (
        '1e8 远小于 float32 的最大值 3.4e38，问题在于间隔约为 8。',
    )),
    ('fused_mean_var_atomic', 'q3', 'overflow_not_cancellation', (
        '均值大时 x 的平方超出 fp32 的表示范围',
        'Σx² blows up past the float32 limit when the mean is large',
    ), (
        'Σx² 不会超出 fp32 范围，问题是 E[x²] − mean² 相减抵消。',
    )),
    ('lesson06_mean_var', 'explanation', 'other_is_enough', (
        'blank 里写 other=0.0：越界 lane 是 0，均值方差都算对，不需要第二次 mask',
    ), (
        '第一个填空 other=0.0 让 Σx 正确；第二个填空 tl.where(mask, x − mean, 0.0) 把 −mean 的 padding 清掉，否则方差会多 (BLOCK − N)·mean²。',
    )),
]
FAMILIES += PARA7_ROUND_A + PARA7_ROUND_B
# what the rules of branch para7 do not read (round A's last misses and pattern false flags, round B's misses)
GAPS = GAPS | {
    'padding 的 0 在第一次求和里不影响，减去均值后就不再是 0 了。',
    "The partial buffer costs memory; it exists because programs can't sum across row tiles.",
    'mask 加在 load 上、越界补 0，这一步就已经保证方差是对的',
    'The zero fill from the masked load is all the protection the variance needs.',
    '只需要 load 的 other=0.0，方差那步什么都不用加',
    '补的 lane 值为 0，方差不会因为它们改变',
    '均值到 1e4 时平方就是 1e8，float32 表示不了这么大的数',
    "With a big mean the sum of squares goes out of float32's range.",
    'number of iterations: T // B1',
    'past the end of the row you get whatever junk is in memory',
    'NaNs are left out of tl.sum',
    '超出 z 范围的写会被 GPU 自动丢掉',
    'padding_option zero alone makes the out-of-range columns 0.',
}


def _said(exercise: str, question: str, text: str) -> set[str]:
    """The misconceptions stated: found by a pattern or a clause rule, or a clause in one's own words (it costs
    the same: LIKE_COSTS)."""
    result = score_answer(CATALOG.get(exercise).question(question), text, 2.0)
    return {m["misconception"] for m in result.misconceptions} | \
        {s["misconception"] for s in result.suspected if s.get("kind") == "misconception_like"}


def _cases(items: list[tuple[str, str, str, str]]) -> list:
    return [pytest.param(*item, marks=pytest.mark.xfail(strict=True, reason="a known gap")) if item[-1] in GAPS
            else item for item in items]


@pytest.mark.parametrize(("exercise", "question", "misconception", "text"),
                         _cases([(e, q, m, t) for e, q, m, said, _ in FAMILIES for t in said]))
def test_a_paraphrased_misconception_is_found(exercise, question, misconception, text):
    assert misconception in _said(exercise, question, text)


@pytest.mark.parametrize(("exercise", "question", "misconception", "text"),
                         _cases([(e, q, m, t) for e, q, m, _, near in FAMILIES for t in near]))
def test_a_near_miss_states_no_misconception(exercise, question, misconception, text):
    assert not _said(exercise, question, text)


@pytest.mark.parametrize(("exercise", "question", "concept", "text"),
                         _cases([(e, q, c, t) for e, q, c, said in LINKS for t in said]))
def test_a_paraphrased_chain_link_is_found(exercise, question, concept, text):
    result = score_answer(CATALOG.get(exercise).question(question), text, 2.0)
    assert concept in {f["concept"] for f in result.found}


# round 6: full right answers, all five exercises; each states no misconception and earns the item's points
FULL: list[tuple[str, str, str]] = [
    ("fused_mean_var_atomic", "q1", "方差不是线性的：每块的方差是围绕自己块的均值算的，块和块均值不同，合并时还差一项块间的平方差，所以各块方差加起来不等于整体方差。Σx、Σx² 是普通的和，整体的和就是各块之和，atomic_add 顺序任意结果都一样。所以 kernel 只累加这两个和，等所有 program 都加完，host 再算 Σx²/N − mean²。"),
    ("fused_mean_var_atomic", "q1", "Because variance is nonlinear. Two chunks with different means: their variances don't add to the variance of the union (the between-chunk term (mean_a − mean_b)² is missing). Sums are linear, so atomically adding the per-program Σx and Σx² gives the row's sums regardless of order; after the kernel returns the host turns them into E[x²] − mean²."),
    ("fused_mean_var_atomic", "q2", "atomic_add 是读-改-写，在原有值上加，不会覆盖。第一次调用前 buffer 是新分配的 0，所以第一次结果对；第二次调用时 buffer 里还留着第一次的 Σx、Σx²，再加一遍就翻倍，均值也翻倍。只清零 sums 的话均值对了但方差还是错。所以每次 launch 前两个 buffer 都要 zero_()。"),
    ("fused_mean_var_atomic", "q2", "Since atomic_add only adds onto the current value, a buffer that is not reset still holds the previous call's sums. The second call then reports twice the sums, so the mean doubles; the first call looks fine because a fresh torch.zeros buffer starts at zero, which makes the bug depend on call order. Zero both buffers before every launch; zeroing only the sums leaves the variance wrong."),
    ("fused_mean_var_atomic", "q3", "数据聚在很大的均值附近时，方差远小于 mean²，E[x²] 和 mean² 是两个几乎相等的大数，float32 只有 7 位有效数字，相减发生灾难性抵消，结果可能只剩舍入误差甚至为负。文章建议方差检查用 atol = rtol = 1e-2，数据接近常数时改用 Welford；Welford 跨块合并不如恒等式简单，所以 GPU 上恒等式是务实的取舍。"),
    ("fused_mean_var_atomic", "q3", "With a large mean and a tiny spread, E[x²] ≈ mean², and subtracting two nearly equal fp32 numbers wipes out most significant digits (catastrophic cancellation); the result can even go negative. The article uses atol = rtol = 1e-2 for the variance check and says to switch to Welford for near-constant data; the identity stays because it is simple and fast to reduce across tiles."),
    ("puzzle_long_softmax", "q1", "The old sum Σ exp(x − m_old) was computed relative to the old max. When a block raises the max to m_new, each old term must become exp(x − m_new) = exp(x − m_old)·exp(m_old − m_new), so the sum is multiplied by exp(m_old − m_new); otherwise the earlier blocks are overweighted and the row does not sum to 1. Padding lanes are read as −inf: exp(−inf − m) = 0 and −inf never wins the max. Read as 0, a row of negative logits would get 0 as its max and every pad would add exp(0 − m) to the sum."),
    ("puzzle_long_softmax", "explanation", "第一遍循环按块读 x，逐块更新运行最大值 m，m 变大时旧的 sum 乘 exp(m_old − m_new) 再加上新块的 exp(x − m_new)；第二遍再读一次 x，写出 exp(x − m)/sum。mask 是 (rows < N0) & (cols < T)，other 用 −inf，这样越界 lane 在 max 里不起作用，exp 后是 0，不进 sum。"),
    ("lesson07_softmax", "q2", "store 的 mask 只挡住写回，padding 照样参与 tl.max 和 tl.sum。如果填 0：全负的一行里 0 成了最大值，结果全错；普通的一行每个 padding lane 给分母加 exp(0 − max)，分母多出 (BLOCK − N)·exp(−max)，概率偏小。−inf 是 max 的单位元，exp(−inf) = 0 是加法的单位元，所以 padding 填 −inf。"),
    ("lesson07_softmax", "q1", "softmax 对平移不变：分子分母同乘 exp(−c)，所以减去最大值结果完全一样。不减的话，logits 在 1000 左右时 exp(1000) 溢出成 inf，inf/inf = NaN；logits 在 −1000 左右时 exp 全部下溢为 0，0/0 = NaN。减去最大值后指数都 ≤ 0，最大项是 exp(0) = 1，分母 ≥ 1，不会溢出也不会 0/0。"),
    ("lesson05_row_sum", "q2", "tl.sum 会把 BLOCK 个 lane 全部加起来，mask 只让越界 lane 不读内存，它们的值是 other。所以 other 必须是归约的单位元：求和是 0，求最大值是 −inf。填错了，比如求和时填 1，结果就多了 (BLOCK − N)；求最大值时填 0，全负的行会得到 0。"),
    ("lesson05_row_sum", "q3", "行地址应该是 x_ptr + row * stride_m。视图 big[:, :N] 的行步长大于 N，用 row * N 会读到别的行的数据，但不会崩溃。给定检查用的是连续张量，stride 恰好等于 N，所以发现不了。"),
    ("welford_merge", "q2", "两块的 M2 各自是围绕自己块的均值算的，均值不同的时候，合并后的 M2 还要加上两块均值之差带来的那部分：delta² · n_a·n_b/(n_a + n_b)，delta = mean_b − mean_a。只把两个 M2 相加会低估方差。权重 n_a·n_b/n 来自每个点相对新均值的偏移：a 的点偏 delta·n_b/n，b 的点偏 delta·n_a/n。"),
    ("welford_merge", "q3", "最后一块不满：n_b 要用 N − start（有效元素个数），不能用 BLOCK，否则均值和合并权重都错。M2_b 里 padding lane 减去 mean_b 后变成 −mean_b，平方后会加进 M2_b，所以要用 tl.where 重新 mask 成 0。"),
    ("welford_merge", "q1", "元素约 1e4、波动 1e-2 时，E[x²] 和 E[x]² 都约为 1e8，float32 在 1e8 附近的间隔约是 8，而真正的方差只有 1e-4，相减的结果全是舍入误差，精度全部丢失。两遍算法先减去均值，偏差只有 1e-2 量级，平方后很小，不会发生两个大数相减，所以没有抵消。"),
]
# under-scored (docs/grading.md, branch para6 "Left as found"): read as rescale_inverted by label similarity,
# max_zero in a worked consequence, and a chain told in another order
FULL_GAPS = frozenset({
    "The old sum Σ exp(x − m_old) was computed relative to the old max. When a block raises the max to m_new, each old term must become exp(x − m_new) = exp(x − m_old)·exp(m_old − m_new), so the sum is multiplied by exp(m_old − m_new); otherwise the earlier blocks are overweighted and the row does not sum to 1. Padding lanes are read as −inf: exp(−inf − m) = 0 and −inf never wins the max. Read as 0, a row of negative logits would get 0 as its max and every pad would add exp(0 − m) to the sum.",
    "softmax 对平移不变：分子分母同乘 exp(−c)，所以减去最大值结果完全一样。不减的话，logits 在 1000 左右时 exp(1000) 溢出成 inf，inf/inf = NaN；logits 在 −1000 左右时 exp 全部下溢为 0，0/0 = NaN。减去最大值后指数都 ≤ 0，最大项是 exp(0) = 1，分母 ≥ 1，不会溢出也不会 0/0。",
    "tl.sum 会把 BLOCK 个 lane 全部加起来，mask 只让越界 lane 不读内存，它们的值是 other。所以 other 必须是归约的单位元：求和是 0，求最大值是 −inf。填错了，比如求和时填 1，结果就多了 (BLOCK − N)；求最大值时填 0，全负的行会得到 0。",
})


@pytest.mark.parametrize(("exercise", "question", "text"),
                         [pytest.param(*item, marks=pytest.mark.xfail(strict=True, reason="a known gap"))
                          if item[-1] in FULL_GAPS else item for item in FULL])
def test_a_full_right_answer_states_nothing_wrong_and_earns_the_points(exercise, question, text):
    spec = CATALOG.get(exercise)
    points = next(i.points for i in spec.spec.rubric if i.question == question)
    result = score_answer(spec.question(question), text, points)
    assert not result.misconceptions and not result.suspected and result.points == points
