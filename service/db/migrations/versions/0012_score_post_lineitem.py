"""Which line item (gradebook column) each score post went to: set just before the POST, under a
share lock of the placement's row, so a placement whose column is replaced (deleted in the LMS and
created again, or a new one named in a later launch) requeues every learner whose last score went
to the old one, the one whose post was in flight included (service.lti.scores). Existing posts
read as sent to an unknown line item: they are requeued like one sent to the old column.

Revision ID: 0012_score_post_lineitem
Revises: 0011_lineitem_by_tool
Create Date: 2026-12-05 07:00:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0012_score_post_lineitem'
down_revision = '0011_lineitem_by_tool'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('lti_score_posts', sa.Column('lineitem_url', sa.String(length=2000), nullable=True))


def downgrade() -> None:
    op.drop_column('lti_score_posts', 'lineitem_url')  # SQLite >= 3.35 drops a column in place
