"""Gradebook: the platform's identity on submissions (assignment, student, attempt, external_ref,
language), the current report's grade in columns (listing and grades export without parsing
reports), course grade policies, webhook events, and bulk regrade jobs. Backfilled from the
stored bodies and current reports.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05 09:00:00.000000
"""
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

Columns = list[tuple[str, sa.types.TypeEngine[Any]]]
IDENTITY: Columns = [('assignment', sa.String(200)), ('student_id', sa.String(200)), ('student_name', sa.String(200)),
                     ('student_email', sa.String(320)), ('attempt', sa.Integer()), ('external_ref', sa.String(200)),
                     ('language', sa.String(2))]
GRADE: Columns = [('exercise_version', sa.Integer()), ('score_total', sa.Float()), ('score_max', sa.Float()),
                  ('pass_threshold', sa.Float()), ('passed', sa.Boolean()), ('provisional', sa.Boolean()),
                  ('blocking', sa.String(200))]
INDEXES = {
    'ix_submissions_course_id_created_at_id': ['course_id', 'created_at', 'id'],
    'ix_submissions_course_id_assignment_student_id': ['course_id', 'assignment', 'student_id'],
    'ix_submissions_course_id_student_id': ['course_id', 'student_id'],
    'ix_submissions_course_id_external_ref': ['course_id', 'external_ref'],
    'ix_submissions_course_id_exercise_id_exercise_version': ['course_id', 'exercise_id', 'exercise_version'],
}


def _grade(report: dict) -> dict:
    """The grade columns of a current report, as service.grades.policy.grade_columns computes them at 0006."""
    if report.get('status') != 'graded':
        return {name: None for name, _ in GRADE} | {'exercise_version': (report.get('exercise') or {}).get('version')}
    score = report.get('score') or {}
    vetoes = report.get('vetoes') or []
    blocking = next((f"veto:{v['rule']}:{v['status']}" for status in ('confirmed', 'suspected')
                     for v in vetoes if v.get('status') == status), None)
    if blocking is None:
        blocking = next((f"requirement:{r['id']}" for r in score.get('requirements') or [] if not r.get('met')), None)
    return {'exercise_version': (report.get('exercise') or {}).get('version'), 'score_total': score.get('total'),
            'score_max': score.get('max'), 'pass_threshold': score.get('pass_threshold'),
            'passed': score.get('passed'), 'provisional': score.get('provisional'), 'blocking': blocking}


def upgrade() -> None:
    # Plain ALTERs, not batches: on SQLite a batch would copy and drop tables that foreign keys point at.
    for name, type_ in IDENTITY + GRADE:
        op.add_column('submissions', sa.Column(name, type_, nullable=True))
    for name, columns in INDEXES.items():
        op.create_index(name, 'submissions', columns, unique=False)
    op.add_column('courses', sa.Column('grade_policy', sa.String(8), server_default='last', nullable=False))
    op.add_column('courses', sa.Column('veto_policy', sa.String(8), server_default='capped', nullable=False))
    op.add_column('webhook_deliveries', sa.Column('event', sa.String(40), server_default='submission.graded',
                                                  nullable=False))
    op.add_column('webhook_deliveries', sa.Column('decision_id', sa.Integer(), nullable=True))
    op.create_table('regrade_jobs',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('course_id', sa.String(length=64), nullable=False),
    sa.Column('scope', sa.String(length=16), nullable=False),
    sa.Column('assignment', sa.String(length=200), nullable=True),
    sa.Column('exercise_id', sa.String(length=100), nullable=True),
    sa.Column('exercise_version', sa.Integer(), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('total', sa.Integer(), nullable=False),
    sa.Column('requested_by', sa.String(length=200), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['course_id'], ['courses.id'], name=op.f('fk_regrade_jobs_course_id_courses')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_regrade_jobs'))
    )
    op.create_index(op.f('ix_regrade_jobs_course_id'), 'regrade_jobs', ['course_id'], unique=False)
    op.create_table('regrade_items',
    sa.Column('job_id', sa.String(length=32), nullable=False),
    sa.Column('submission_id', sa.String(length=32), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('seq_before', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['regrade_jobs.id'], name=op.f('fk_regrade_items_job_id_regrade_jobs')),
    sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'],
                            name=op.f('fk_regrade_items_submission_id_submissions')),
    sa.PrimaryKeyConstraint('job_id', 'submission_id', name=op.f('pk_regrade_items'))
    )
    op.create_index('ix_regrade_items_job_id_state', 'regrade_items', ['job_id', 'state'], unique=False)

    # Backfill (portable: the JSON is read here, not in SQL).
    submissions = sa.table('submissions', sa.column('id', sa.String), sa.column('body', sa.JSON),
                           sa.column('current_report_id', sa.Integer),
                           *(sa.column(name, type_) for name, type_ in IDENTITY + GRADE))
    reports = sa.table('reports', sa.column('id', sa.Integer), sa.column('report', sa.JSON))
    bind = op.get_bind()
    rows = bind.execute(sa.select(submissions.c.id, submissions.c.body, reports.c.report)
                        .outerjoin(reports, reports.c.id == submissions.c.current_report_id)).all()
    for submission_id, body, report in rows:
        body = body or {}
        student = body.get('student') or {}
        values = {'assignment': body.get('assignment'), 'student_id': student.get('id'),
                  'student_name': student.get('name'), 'student_email': student.get('email'),
                  'attempt': body.get('attempt'), 'external_ref': body.get('external_ref'),
                  'language': body.get('language')}
        if report:
            values |= _grade(report)
        if any(v is not None for v in values.values()):
            bind.execute(submissions.update().where(submissions.c.id == submission_id).values(**values))


def downgrade() -> None:
    op.drop_index('ix_regrade_items_job_id_state', table_name='regrade_items')
    op.drop_table('regrade_items')
    op.drop_index(op.f('ix_regrade_jobs_course_id'), table_name='regrade_jobs')
    op.drop_table('regrade_jobs')
    op.drop_column('webhook_deliveries', 'decision_id')
    op.drop_column('webhook_deliveries', 'event')
    op.drop_column('courses', 'veto_policy')
    op.drop_column('courses', 'grade_policy')
    for name in INDEXES:
        op.drop_index(name, table_name='submissions')
    for name, _ in reversed(IDENTITY + GRADE):
        op.drop_column('submissions', name)  # SQLite >= 3.35 drops a column in place
