"""Review flags: what the TA queue filters on in SQL. `submissions.needs_review` and
`submissions.graded_at`, and one `review_flags` row per suspected veto or needs_review item of
the current report; backfilled from the current reports.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 09:10:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def _flags(report: dict) -> list[tuple[str, str]]:
    """(target, kind) pairs, as service.db.store.review_flags computes them at the time of 0003."""
    flags = [(f"veto:{v['rule']}", v['rule']) for v in report.get('vetoes', []) if v.get('status') == 'suspected']
    flags += [(f"item:{i['id']}", 'needs_review') for i in report.get('items', []) if i.get('status') == 'needs_review']
    return flags


def upgrade() -> None:
    # Plain ALTERs, not a batch: on SQLite a batch would copy and drop `submissions`, which the
    # foreign keys of existing reports forbid (the service's connections enforce them).
    op.add_column('submissions', sa.Column('needs_review', sa.Boolean(), server_default=sa.false(), nullable=False))
    op.add_column('submissions', sa.Column('graded_at', sa.DateTime(timezone=True), nullable=True))
    op.create_index('ix_submissions_course_id_needs_review', 'submissions', ['course_id', 'needs_review'], unique=False)
    op.create_table('review_flags',
    sa.Column('submission_id', sa.String(length=32), nullable=False),
    sa.Column('target', sa.String(length=120), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'],
                            name=op.f('fk_review_flags_submission_id_submissions')),
    sa.PrimaryKeyConstraint('submission_id', 'target', name=op.f('pk_review_flags'))
    )
    with op.batch_alter_table('review_flags', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_review_flags_kind'), ['kind'], unique=False)

    # Backfill from the current reports (portable: the JSON is read here, not in SQL).
    submissions = sa.table('submissions', sa.column('id', sa.String), sa.column('current_report_id', sa.Integer),
                           sa.column('needs_review', sa.Boolean), sa.column('graded_at', sa.DateTime(timezone=True)))
    reports = sa.table('reports', sa.column('id', sa.Integer), sa.column('submission_id', sa.String),
                       sa.column('reason', sa.String), sa.column('report', sa.JSON),
                       sa.column('created_at', sa.DateTime(timezone=True)))
    flags = sa.table('review_flags', sa.column('submission_id', sa.String), sa.column('target', sa.String),
                     sa.column('kind', sa.String))
    bind = op.get_bind()
    current = bind.execute(sa.select(submissions.c.id, reports.c.report)
                           .join(reports, reports.c.id == submissions.c.current_report_id)).all()
    for submission_id, report in current:
        found = _flags(report or {})
        graded_at = bind.scalar(sa.select(sa.func.max(reports.c.created_at))
                                .where(reports.c.submission_id == submission_id, reports.c.reason != 'review'))
        bind.execute(submissions.update().where(submissions.c.id == submission_id)
                     .values(needs_review=bool(found), graded_at=graded_at))
        if found:
            bind.execute(flags.insert(), [{'submission_id': submission_id, 'target': t, 'kind': k} for t, k in found])


def downgrade() -> None:
    with op.batch_alter_table('review_flags', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_review_flags_kind'))
    op.drop_table('review_flags')
    op.drop_index('ix_submissions_course_id_needs_review', table_name='submissions')
    op.drop_column('submissions', 'graded_at')  # SQLite >= 3.35 drops a column in place
    op.drop_column('submissions', 'needs_review')
