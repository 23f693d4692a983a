"""Report facts for the assignment dashboard (issue #23): one row per diagnosis, veto, pass-rule
requirement, case family and written-answer concept of each current report, the time of a
submission's first report (its grading latency), and an index covering the columns the dashboard
reads. Backfilled from the stored current reports.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 19:00:00.000000
"""
import sqlalchemy as sa
from alembic import op

from service.dashboard.facts import report_facts

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

BATCH = 500
DASHBOARD_COLUMNS = ['course_id', 'assignment', 'student_id', 'status', 'created_at', 'id', 'passed', 'score_total',
                     'first_graded_at', 'pass_threshold', 'score_max', 'exercise_id']


def upgrade() -> None:
    op.add_column('submissions', sa.Column('first_graded_at', sa.DateTime(timezone=True), nullable=True))
    op.create_table('report_facts',
    sa.Column('submission_id', sa.String(length=32), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('item', sa.String(length=100), nullable=False),
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('ok', sa.Boolean(), nullable=True),
    sa.Column('label', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'],
                            name=op.f('fk_report_facts_submission_id_submissions')),
    sa.PrimaryKeyConstraint('submission_id', 'kind', 'item', 'key', name=op.f('pk_report_facts'))
    )
    op.create_index('ix_report_facts_kind_key', 'report_facts', ['kind', 'key'], unique=False)
    op.create_index('ix_submissions_dashboard', 'submissions', DASHBOARD_COLUMNS, unique=False)
    op.create_index('ix_submissions_id_dashboard', 'submissions', ['id', *DASHBOARD_COLUMNS[:5]], unique=False)

    # Backfill (portable: the JSON is read here, not in SQL), a window of submissions at a time.
    submissions = sa.table('submissions', sa.column('id', sa.String), sa.column('current_report_id', sa.Integer),
                           sa.column('first_graded_at', sa.DateTime(timezone=True)))
    reports = sa.table('reports', sa.column('id', sa.Integer), sa.column('submission_id', sa.String),
                       sa.column('seq', sa.Integer), sa.column('report', sa.JSON),
                       sa.column('created_at', sa.DateTime(timezone=True)))
    facts = sa.table('report_facts', sa.column('submission_id', sa.String), sa.column('kind', sa.String),
                     sa.column('item', sa.String), sa.column('key', sa.String), sa.column('ok', sa.Boolean),
                     sa.column('label', sa.Text))
    bind = op.get_bind()
    first = (sa.select(reports.c.submission_id, sa.func.min(reports.c.created_at).label('at'))
             .group_by(reports.c.submission_id).subquery())
    bind.execute(submissions.update().values(first_graded_at=sa.select(first.c.at)
                                             .where(first.c.submission_id == submissions.c.id).scalar_subquery()))
    after = ''
    while True:
        rows = bind.execute(sa.select(submissions.c.id, reports.c.report)
                            .join(reports, reports.c.id == submissions.c.current_report_id)
                            .where(submissions.c.id > after).order_by(submissions.c.id).limit(BATCH)).all()
        if not rows:
            break
        values = [{'submission_id': sid, **fact} for sid, report in rows for fact in report_facts(report or {})]
        if values:
            bind.execute(facts.insert(), values)
        after = rows[-1][0]


def downgrade() -> None:
    op.drop_index('ix_submissions_id_dashboard', table_name='submissions')
    op.drop_index('ix_submissions_dashboard', table_name='submissions')
    op.drop_index('ix_report_facts_kind_key', table_name='report_facts')
    op.drop_table('report_facts')
    op.drop_column('submissions', 'first_graded_at')  # SQLite >= 3.35 drops a column in place
