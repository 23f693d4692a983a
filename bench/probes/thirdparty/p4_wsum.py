"""Third-party styles, fourth batch, weighted_sum_fwd_bwd (four expression blanks; GPU-only: block pointers).
Run as p3_wsum.py is (README: the Triton 3.6 interpreter sandbox, --allow-block-pointers)."""
EXERCISE = "weighted_sum_fwd_bwd"

B1 = 'boundary_check=(0, 1), padding_option="zero")  # TODO 1'
B2 = 'x_block_ptr.advance((0, D_TILE_SIZE))  # TODO 2'
B3 = 'offsets=(row_tile_idx * ROWS_TILE_SIZE, 0),  # TODO 3'
B4 = 'shape=(n_row_tiles, D),  # TODO 4'

PROBES = [
    {"id": "wsum4.right.program_id_offsets_num_programs", "group": "right",
     "description": "offsets=(tl.program_id(0) * ROWS_TILE_SIZE, 0 * D_TILE_SIZE), shape=(tl.num_programs(0), D)",
     "edits": [{"old": B3, "new": "offsets=(tl.program_id(0) * ROWS_TILE_SIZE, 0 * D_TILE_SIZE),  # TODO 3"},
               {"old": B4, "new": "shape=(tl.num_programs(0), D),  # TODO 4"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wsum4.right.advance_cdiv_tile", "group": "right",
     "description": "advance((0, tl.cdiv(D_TILE_SIZE, 1))) (the tile width through cdiv) and boundary_check=(1, 0)",
     "edits": [{"old": B1, "new": 'boundary_check=(1, 0), padding_option="zero")  # TODO 1'},
               {"old": B2, "new": "x_block_ptr.advance((0, tl.cdiv(D_TILE_SIZE, 1)))  # TODO 2"}],
     "expect": {"code_points": 3}, "judged": "right"},
    {"id": "wsum4.wrong.offsets_tile_index", "group": "wrong",
     "description": "offsets=(row_tile_idx, 0) (the tile index, not its first row): grad_x written at the wrong rows",
     "edits": [{"old": B3, "new": "offsets=(row_tile_idx, 0),  # TODO 3"}],
     "expect": {"code_points": 0},
     "judged": "wrong whenever there is more than one row tile (grad_x rows overlap, NaN left elsewhere)"},
]
