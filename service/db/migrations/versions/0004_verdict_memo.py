"""Verdict memo: the code results of a canonical program, reused for an identical program,
exercise version, case set and environment (service/grading/memo.py).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03 10:00:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('verdict_memo',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('exercise_id', sa.String(length=100), nullable=False),
    sa.Column('exercise_version', sa.Integer(), nullable=False),
    sa.Column('program_digest', sa.String(length=64), nullable=False),
    sa.Column('submission_id', sa.String(length=32), nullable=False),
    sa.Column('result', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_verdict_memo'))
    )
    with op.batch_alter_table('verdict_memo', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_verdict_memo_exercise_id'), ['exercise_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('verdict_memo', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_verdict_memo_exercise_id'))
    op.drop_table('verdict_memo')
