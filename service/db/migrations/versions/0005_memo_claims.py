"""Memo claims: the grading that runs a new program first holds a claim on its memo key, so
identical programs graded at the same time wait for that result instead of running it again
(service/grading/memo.py, DbMemo.claim). A claim expires, so a dead holder never blocks for long.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-04 10:00:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('memo_claims',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('owner', sa.String(length=32), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_memo_claims'))
    )


def downgrade() -> None:
    op.drop_table('memo_claims')
