"""Fair claiming (store.claim): every claim ranks the courses with queued submissions by their
running count, their latest claim and their oldest queued submission, so those are index ranges:
(course_id, status, created_at) and (course_id, claimed_at), whatever the course has graded.
`claimed_at`: when the submission was last claimed (NULL for rows claimed before this revision).

Revision ID: 0013_fair_claim
Revises: 0012_score_post_lineitem
Create Date: 2026-12-05 18:10:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0013_fair_claim'
down_revision = '0012_score_post_lineitem'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('submissions', sa.Column('claimed_at', sa.DateTime(timezone=True), nullable=True))
    op.create_index('ix_submissions_course_id_status_created_at', 'submissions',
                    ['course_id', 'status', 'created_at'], unique=False)
    op.create_index('ix_submissions_course_id_claimed_at', 'submissions', ['course_id', 'claimed_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_submissions_course_id_claimed_at', table_name='submissions')
    op.drop_index('ix_submissions_course_id_status_created_at', table_name='submissions')
    op.drop_column('submissions', 'claimed_at')  # SQLite >= 3.35 drops a column in place
