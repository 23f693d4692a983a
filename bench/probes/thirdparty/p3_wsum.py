"""Third-party styles, third round, weighted_sum_fwd_bwd (four expression blanks; GPU-only: block pointers).

Inductor / AI-assistant spellings of the block-pointer arguments: lists where the blog writes tuples
(`boundary_check=[0, 1]`, `.advance([0, D_TILE_SIZE])`, `offsets=[...]`, `shape=[...]`). Graded on a GPU
(Triton 3.6), or here in the Triton 3.6 interpreter (README: KERNELGRADE_SANDBOX_PYTHON=.venv-triton36,
a copy of the exercises without requires_gpu, --allow-block-pointers); --static checks the fill rules."""
EXERCISE = "weighted_sum_fwd_bwd"

B1 = 'boundary_check=(0, 1), padding_option="zero")  # TODO 1'
B2 = 'x_block_ptr.advance((0, D_TILE_SIZE))  # TODO 2'
B3 = 'offsets=(row_tile_idx * ROWS_TILE_SIZE, 0),  # TODO 3'
B4 = 'shape=(n_row_tiles, D),  # TODO 4'

PROBES = [
    {"id": "wsum3.right.lists_everywhere", "group": "right",
     "description": "lists for all four: boundary_check=[0, 1], advance([0, D_TILE_SIZE]), offsets=[...], shape=[...]",
     "edits": [{"old": B1, "new": 'boundary_check=[0, 1], padding_option="zero")  # TODO 1'},
               {"old": B2, "new": "x_block_ptr.advance([0, D_TILE_SIZE])  # TODO 2"},
               {"old": B3, "new": "offsets=[row_tile_idx * ROWS_TILE_SIZE, 0],  # TODO 3"},
               {"old": B4, "new": "shape=[n_row_tiles, D],  # TODO 4"}],
     "expect": {"code_points": 3}, "judged": "right: Triton takes a list wherever the blog writes a tuple"},
    {"id": "wsum3.right.shape_cdiv_list", "group": "right",
     "description": "partial shape [tl.cdiv(NUM_ROWS, ROWS_TILE_SIZE), D] (the grid's size, recomputed)",
     "edits": [{"old": B4, "new": "shape=[tl.cdiv(NUM_ROWS, ROWS_TILE_SIZE), D],  # TODO 4"}],
     "expect": {"code_points": 3}, "judged": "right: the grid is cdiv(NUM_ROWS, ROWS_TILE_SIZE) programs"},
    {"id": "wsum3.wrong.advance_list_rows", "group": "wrong",
     "description": "CUDA row-major confusion, list spelling: advance([D_TILE_SIZE, 0]) (moves down the rows)",
     "edits": [{"old": B2, "new": "x_block_ptr.advance([D_TILE_SIZE, 0])  # TODO 2"}],
     "expect": {"code_points": 0.5, "diagnoses": ["advance_rows"]},
     "judged": "(first judged 0) wrong: every tile after the first reads other rows; a regular case with one D tile "
               "passes (as mutant wrong.advance_rows, 0.5)"},
]
