"""Whose line item a placement posts to: one the platform named in a launch's AGS `lineitem`
claim, or one kernelgrade found by its resource link or created (service.lti.scores). A deleted
line item of the tool's own is found or created again; one the platform named is replaced only
where the platform lets the tool create line items. Existing rows read as named by the platform
(which of the two they were is not known; the fallback is the same where creation is allowed).

Revision ID: 0011_lineitem_by_tool
Revises: 0010_memo_environments
Create Date: 2026-12-06 09:00:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0011_lineitem_by_tool'
down_revision = '0010_memo_environments'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('lti_links', sa.Column('lineitem_by_tool', sa.Boolean(), nullable=False,
                                         server_default=sa.false()))


def downgrade() -> None:
    op.drop_column('lti_links', 'lineitem_by_tool')  # SQLite >= 3.35 drops a column in place
