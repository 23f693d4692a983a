"""Kernels written otherwise for exercises/weighted_sum_fwd_bwd (GPU-only).

Each probe is a mutant-like dict: `edits` of the exercise's solution.py (the four blanks are
marked `# TODO 1..4` there, so an edit of one line is that blank's fill), and `expect`, the verdict
I judge RIGHT for this code (MutantExpectation's fields: code_points = code.regular + code.boundary,
3 at most; vetoes; diagnoses that are true and exist in the catalogue; not_diagnosed; failing_cases;
rejected). `judged` says in words what is right and which diagnosis would be true; `group` is
right / wrong / hidden (wrong, but no case of the exercise can see it) / policy (right, refused by
the fill rules) / outside (an edit outside the blanks: not run, vetoed).

Cases with --secret-seed 99 (rt = ROWS_TILE_SIZE, dt = D_TILE_SIZE): given (64,100) and (32,16)
rt=dt=16; regular.aligned 64x64 16/16; regular.blog_tiles 48x32 16/32; regular.rect 32x96 8/32;
boundary.d_small 16x5 16/16; boundary.one_row 1x40 16/16; probe.d_ragged_strided 32xP (prime
17..63) stride 64 16/16; probe.rows_ragged 37x32 16/16; probe.boundary_removed 37x50 stride 56 16/32.
"""
EXERCISE = "weighted_sum_fwd_bwd"

B1 = 'boundary_check=(0, 1), padding_option="zero")  # TODO 1'
B2 = 'x_block_ptr.advance((0, D_TILE_SIZE))  # TODO 2'
B3 = 'offsets=(row_tile_idx * ROWS_TILE_SIZE, 0),  # TODO 3'
B4 = 'shape=(n_row_tiles, D),  # TODO 4'


def b1(fill: str) -> dict:
    return {"old": B1, "new": f'boundary_check={fill}, padding_option="zero")  # TODO 1'}


def b2(fill: str) -> dict:
    return {"old": B2, "new": f"x_block_ptr.advance({fill})  # TODO 2"}


def b3(fill: str) -> dict:
    return {"old": B3, "new": f"offsets={fill},  # TODO 3"}


def b4(fill: str) -> dict:
    return {"old": B4, "new": f"shape={fill},  # TODO 4"}


PROBES = [
    # ---- right, written otherwise ------------------------------------------------------------
    {"id": "right.all_four_otherwise", "group": "right",
     "description": "all four blanks in other spellings: (1, 0); (0 * D_TILE_SIZE, D_TILE_SIZE); "
                    "(ROWS_TILE_SIZE * row_tile_idx, 0 * D_TILE_SIZE); (tl.cdiv(NUM_ROWS, ROWS_TILE_SIZE), D)",
     "edits": [b1("(1, 0)"), b2("(0 * D_TILE_SIZE, D_TILE_SIZE)"),
               b3("(ROWS_TILE_SIZE * row_tile_idx, 0 * D_TILE_SIZE)"), b4("(tl.cdiv(NUM_ROWS, ROWS_TILE_SIZE), D)")],
     "expect": {"code_points": 3},
     "judged": "right: pass 10/10 with the example answers, no diagnosis"},
    {"id": "right.partial_shape_hand_ceil", "group": "right",
     "description": "partial buffer rows as a hand-written ceil: ((NUM_ROWS + ROWS_TILE_SIZE - 1) // ROWS_TILE_SIZE, D)",
     "edits": [b4("((NUM_ROWS + ROWS_TILE_SIZE - 1) // ROWS_TILE_SIZE, D)")],
     "expect": {"code_points": 3},
     "judged": "right: pass, no diagnosis"},
    {"id": "right.partial_shape_int64", "group": "right",
     "description": "int64 habit on the shape: (n_row_tiles.to(tl.int64), D) (shapes are 64-bit in block pointers)",
     "edits": [b4("(n_row_tiles.to(tl.int64), D)")],
     "expect": {"code_points": 3},
     "judged": "right: make_block_ptr casts shapes to int64 anyway; pass"},
    {"id": "right.partial_shape_num_rows", "group": "right",
     "description": "partial buffer declared (NUM_ROWS, D): larger than the buffer, but row_tile_idx < n_row_tiles <= "
                    "NUM_ROWS, so no store is dropped and none lands outside the buffer",
     "edits": [b4("(NUM_ROWS, D)")],
     "expect": {"code_points": 3},
     "judged": "right on every input (a loose bound, never crossed): pass; a diagnosis would be untrue"},
    # ---- right, refused by the fill rules (policy) -------------------------------------------
    {"id": "policy.gradx_program_id", "group": "policy",
     "description": "grad_x offsets with tl.program_id(0) instead of row_tile_idx: (tl.program_id(0) * ROWS_TILE_SIZE, 0)",
     "edits": [b3("(tl.program_id(0) * ROWS_TILE_SIZE, 0)")],
     "expect": {"code_points": 3},
     "judged": "right code; tl.program_id was off the fills' tl allow-list (refused) until e126911"},
    {"id": "policy.partial_shape_num_programs", "group": "policy",
     "description": "partial shape (tl.num_programs(0), D), what the template itself assigns to n_row_tiles",
     "edits": [b4("(tl.num_programs(0), D)")],
     "expect": {"code_points": 3},
     "judged": "right code (the template's own n_row_tiles); tl.num_programs was off the allow-list until e126911"},
    # ---- wrong, one misconception each --------------------------------------------------------
    {"id": "wrong.bc_bounds_not_dims", "group": "wrong",
     "description": "boundary_check given the bounds instead of the dimensions: boundary_check=(ROWS, D)",
     "edits": [b1("(ROWS, D)")],
     "expect": {"code_points": 0, "failing_cases": ["given", "regular", "boundary", "probe"]},
     "judged": "fails to compile (boundary_check takes dimension indices, constexpr ints; ROWS, D are runtime "
               "values): every case errors, code 0; true diagnosis: the compiler's assertion, boundary_check "
               "lists dimensions (0, 1), not bounds"},
    {"id": "wrong.bc_true_true", "group": "wrong",
     "description": "boundary_check as per-dimension flags: boundary_check=(True, True)",
     "edits": [b1("(True, True)")],
     "expect": {"code_points": 0, "failing_cases": ["given", "regular"]},
     "judged": "True == 1 twice: Triton 3.6 asserts 'Duplicate dimension in boundary_check' at compile time; every "
               "case errors, code 0"},
    {"id": "wrong.advance_blog_two_args", "group": "wrong",
     "description": "the blog's own line: x_block_ptr.advance(0, D_TILE_SIZE) (two arguments, no tuple)",
     "edits": [b2("0, D_TILE_SIZE")],
     "expect": {"code_points": 0, "rejected": True},
     "judged": "the student's line does not compile (advance takes one tuple): code 0. The blank's fill is the whole "
               "'0, D_TILE_SIZE' (two arguments where one expression goes), refused before it runs with a message "
               "that suggests '(0, D_TILE_SIZE)'; no veto: nothing outside the blank was edited (before, ', "
               "D_TILE_SIZE' was read as an edit outside the blank, veto modified_outside_blank, and advance(0) ran)"},
    {"id": "wrong.advance_one_column", "group": "wrong",
     "description": "advance in tiles instead of elements: x_block_ptr.advance((0, 1))",
     "edits": [b2("(0, 1)")],
     "expect": {"code_points": 0.5, "diagnoses": ["advance_one_column"],
                "failing_cases": ["given", "regular.aligned", "regular.rect", "probe.d_ragged_strided"]},
     "judged": "fails wherever the loop runs more than once (given, aligned, rect, one_row, d_ragged, rows_ragged, "
               "boundary_removed); passes blog_tiles and d_small (one tile along D): code 0.5. True diagnosis: "
               "advance_one_column (it has a signature and no mutant)"},
    {"id": "wrong.advance_row_stride", "group": "wrong",
     "description": "advance by a stride (the blog: 'tl.advance(pointer,(stride_dim1,...))'): advance((0, x_stride_row))",
     "edits": [b2("(0, x_stride_row)")],
     "expect": {"code_points": 0.5, "failing_cases": ["given", "regular.aligned", "regular.rect"],
                "not_diagnosed": ["no_advance", "advance_rows", "advance_one_column"]},
     "judged": "after the first tile x jumps past D (row stride >= D): y = first tile of x . first tile of w; fails "
               "wherever D > dt. True diagnosis: none in the catalogue ('advance counts elements of the logical "
               "shape, not strides'); unexplained_forward is true; no_advance/advance_rows would be untrue"},
    {"id": "wrong.advance_absolute_tile", "group": "wrong",
     "description": "advance treated as an absolute position: x_block_ptr.advance((0, i * D_TILE_SIZE))",
     "edits": [b2("(0, i * D_TILE_SIZE)")],
     "expect": {"code_points": 0.5, "failing_cases": ["given", "regular.aligned", "regular.rect"],
                "not_diagnosed": ["no_advance", "advance_rows", "advance_one_column"]},
     "judged": "x reads tiles 0, 0, 1, 3, 6, ... while w walks 0, 1, 2, ...: wrong wherever the loop runs more than "
               "once (blog_tiles, d_small pass: 0.5). With exactly two iterations (rows_ragged, boundary_removed) "
               "the output equals no_advance's simulation; with more it does not. True: unexplained_forward "
               "(advance is relative, not absolute); no_advance ('never advances') is untrue of this code"},
    {"id": "wrong.advance_rows_tile", "group": "wrong",
     "description": "advance along the rows by the row tile: x_block_ptr.advance((ROWS_TILE_SIZE, 0))",
     "edits": [b2("(ROWS_TILE_SIZE, 0)")],
     "expect": {"code_points": 0.5, "failing_cases": ["given", "regular.aligned", "regular.rect"]},
     "judged": "moves down the rows: where rt == dt the result equals advance_rows' simulation, on regular.rect "
               "(rt 8, dt 32) not. advance_rows' message quotes '(D_TILE_SIZE, 0)', which is not what was written "
               "but the misconception (advancing along rows) is the true one"},
    {"id": "wrong.advance_tuple_of_one", "group": "wrong",
     "description": "x's advance copied from weight's 1-D advance: x_block_ptr.advance((D_TILE_SIZE,))",
     "edits": [b2("(D_TILE_SIZE,)")],
     "expect": {"code_points": 0, "failing_cases": ["given", "regular"]},
     "judged": "a 1-offset advance of a 2-D block pointer: on the GPU a compile/verifier error (every case errors, "
               "code 0); a sandbox crash must still be graded as the student's failure, not not_gradable"},
    {"id": "wrong.gradx_offsets_int64", "group": "wrong",
     "description": "int64 habit on grad_x's block offsets: (row_tile_idx.to(tl.int64) * ROWS_TILE_SIZE, 0)",
     "edits": [b3("(row_tile_idx.to(tl.int64) * ROWS_TILE_SIZE, 0)")],
     "expect": {"code_points": 0, "failing_cases": ["given", "regular"]},
     "judged": "Triton: 'Block pointers only support 32 bit offsets/block_shape': the backward does not compile, "
               "every case errors (the lesson's own check would crash), code 0; true diagnosis: that message"},
    {"id": "wrong.gradx_rows_by_d_tile", "group": "wrong",
     "description": "grad_x's row start with the other tile constant: (row_tile_idx * D_TILE_SIZE, 0)",
     "edits": [b3("(row_tile_idx * D_TILE_SIZE, 0)")],
     "expect": {"code_points": 1, "vetoes": ["coincidental_pass"],
                "failing_cases": ["regular.blog_tiles", "regular.rect", "probe.boundary_removed"],
                "not_diagnosed": ["gradx_column_offset", "gradx_row_offset"]},
     "judged": "right only where rt == dt (given, aligned, d_small, one_row, d_ragged, rows_ragged); blog_tiles, "
               "rect, boundary_removed: rows misplaced, others left NaN. Code 1 (given+aligned of 4 regular: 1.0; "
               "boundary 0), and the given check passed by coincidence: coincidental_pass. True: unexplained_grad_x "
               "(grad_x rows shifted); gradx_row_offset would be untrue"},
    {"id": "wrong.gradx_offsets_swapped", "group": "wrong",
     "description": "grad_x's offsets in (column, row) order: (0, row_tile_idx * ROWS_TILE_SIZE)",
     "edits": [b3("(0, row_tile_idx * ROWS_TILE_SIZE)")],
     "expect": {"code_points": 0, "failing_cases": ["given", "regular"],
                "not_diagnosed": ["gradx_column_offset", "gradx_row_offset"]},
     "judged": "every program writes rows 0..rt-1 at column row_tile_idx*rt: rows >= rt never written (NaN); "
               "code 0 (every regular case has > 16 rows). True: unexplained_grad_x"},
    {"id": "wrong.partial_shape_minus_one", "group": "wrong",
     "description": "partial buffer one row short: (n_row_tiles - 1, D)",
     "edits": [b4("(n_row_tiles - 1, D)")],
     "expect": {"code_points": 0, "failing_cases": ["given", "regular", "probe.rows_ragged"]},
     "judged": "the last row tile's grad_w share is always dropped: fails every case (one_row: 1 tile, shape 0 "
               "rows: grad_w = 0). Code 0. True: 'last row tile dropped'; last_row_tile_dropped's message blames "
               "NUM_ROWS // ROWS_TILE_SIZE (untrue text here, true effect) on ragged cases only"},
    {"id": "wrong.partial_shape_one_row", "group": "wrong",
     "description": "partial shape copied from the block shape: (1, D)",
     "edits": [b4("(1, D)")],
     "expect": {"code_points": 0, "failing_cases": ["given", "regular", "probe.rows_ragged"],
                "not_diagnosed": ["last_row_tile_dropped"]},
     "judged": "only program 0 stores: grad_w is the first row tile's share. Passes only where there is one row "
               "tile (d_small, one_row); every regular case has several: code 0. True: unexplained_grad_w (no "
               "catalogue id says 'only the first row tile')"},
    {"id": "wrong.partial_shape_d_tile", "group": "wrong",
     "description": "partial shape with the tile width: (n_row_tiles, D_TILE_SIZE)",
     "edits": [b4("(n_row_tiles, D_TILE_SIZE)")],
     "expect": {"code_points": 0.5, "failing_cases": ["given", "regular.aligned", "regular.rect"]},
     "judged": "D > dt: columns past the first tile dropped (grad_w 0 there); D < dt (d_small: 5 < 16): each row "
               "tile writes 16 columns into a row of stride 5, over the next tiles' rows and past the buffer: an "
               "out-of-bounds write past the partial buffer (the backward's buffers have no guards: on a GPU it lands in "
               "the allocator's block and d_small passes; on the CPU interpreter it corrupts the sandbox's heap: "
               "SIGSEGV/SIGABRT or a later case's compile failing). Passes blog_tiles (D = dt = 32) only: 0.5. "
               "True: unexplained_grad_w (no catalogue id for 'columns past the first tile dropped')"},
    # ---- wrong, but no case can see it (holes) ------------------------------------------------
    {"id": "hidden.bc_cols_only", "group": "hidden",
     "description": "x's forward load checks D only: boundary_check=(1,)",
     "edits": [b1("(1,)")],
     "expect": {"code_points": 3},
     "judged": "reads rows past ROWS in the last row tile (out of bounds, past the guard) but never stores them: "
               "exercise.yaml documents this as invisible on both devices. Grader: 3 (accepted limit)"},
    {"id": "hidden.advance_times_col_stride", "group": "hidden",
     "description": "advance scaled by the column stride: advance((0, D_TILE_SIZE * x_stride_dim))",
     "edits": [b2("(0, D_TILE_SIZE * x_stride_dim)")],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"]},
     "judged": "wrong in principle (block pointers apply strides themselves; wrong for a column-strided x). "
               "probe.x_col_strided (layout: x col_stride 2) catches it: advance_scaled_by_stride. "
               "Judged right: lose code.boundary"},
    {"id": "hidden.partial_rows_tile_size", "group": "hidden",
     "description": "partial shape rows = the tile size: (ROWS_TILE_SIZE, D)",
     "edits": [b4("(ROWS_TILE_SIZE, D)")],
     "expect": {"code_points": 2, "vetoes": ["coincidental_pass"]},
     "judged": "(branch wsprobe adds probe.many_row_tiles, 10 row tiles at ROWS_TILE_SIZE 4, and names it "
               "partial_rows_too_few) drops every row tile past ROWS_TILE_SIZE: wrong once NUM_ROWS > ROWS_TILE_SIZE**2 (256 rows at 16). "
               "No case has more than 4 row tiles, so it passes everything. Judged right: lose code.boundary"},
    # ---- edits outside the blanks (not run; vetoes) -------------------------------------------
    {"id": "outside.blog_partial_store_bc", "group": "outside",
     "description": "the blog's partial store: tl.store(partial_grad_weight_block_ptr, grad_weight_row, boundary_check=(1,))",
     "edits": [{"old": "tl.store(partial_grad_weight_block_ptr, grad_weight_row, boundary_check=(0, 1))",
                "new": "tl.store(partial_grad_weight_block_ptr, grad_weight_row, boundary_check=(1,))"}],
     "expect": {"code_points": 3, "vetoes": ["boundary_check_removed"]},
     "judged": "an edit outside the blanks that removes a boundary_check dimension: not run (template + fills run), "
               "veto boundary_check_removed (suspected, TA); code 3 from the fills"},
    {"id": "outside.blog_parital_typo", "group": "outside",
     "description": "the blog's typo copied: parital_grad_weight_block_ptr.advance(...)",
     "edits": [{"old": "partial_grad_weight_block_ptr = partial_grad_weight_block_ptr.advance((0, D_TILE_SIZE))",
                "new": "partial_grad_weight_block_ptr = parital_grad_weight_block_ptr.advance((0, D_TILE_SIZE))"}],
     "expect": {"code_points": 3, "vetoes": ["modified_outside_blank"]},
     "judged": "outside the blanks: not run; veto modified_outside_blank; fills right: code 3 (the student's own "
               "cell would raise NameError at compile: a TA sees the veto)"},
]
