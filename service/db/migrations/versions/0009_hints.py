"""The hint ladder: every level a student asked for (service/hints.py), and the course's point
cost per level (NULL: none, the default).

Revision ID: 0009_hints
Revises: 0008
Create Date: 2026-12-01 20:00:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0009_hints'
down_revision = '0008'  # main's head (0008_report_facts) when rebased
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('hints_taken',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('submission_id', sa.String(length=32), nullable=False),
    sa.Column('course_id', sa.String(length=64), nullable=False),
    sa.Column('diagnosis', sa.String(length=100), nullable=False),
    sa.Column('level', sa.Integer(), nullable=False),
    sa.Column('cost', sa.Float(), nullable=False),
    sa.Column('language', sa.String(length=2), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['course_id'], ['courses.id'], name=op.f('fk_hints_taken_course_id_courses')),
    sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'],
                            name=op.f('fk_hints_taken_submission_id_submissions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_hints_taken')),
    sa.UniqueConstraint('submission_id', 'diagnosis', 'level', name=op.f('uq_hints_taken_submission_id'))
    )
    with op.batch_alter_table('hints_taken', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_hints_taken_course_id'), ['course_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_hints_taken_submission_id'), ['submission_id'], unique=False)
    # In place, not a batch copy: courses is referenced by foreign keys (SQLite enforces them).
    op.add_column('courses', sa.Column('hint_cost', sa.Float(), nullable=True))


def downgrade() -> None:
    op.drop_column('courses', 'hint_cost')  # SQLite >= 3.35 drops a column in place
    with op.batch_alter_table('hints_taken', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_hints_taken_submission_id'))
        batch_op.drop_index(batch_op.f('ix_hints_taken_course_id'))
    op.drop_table('hints_taken')
