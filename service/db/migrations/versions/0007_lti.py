"""LTI 1.3: the tool's signing keys, platform registrations and deployments per course, contexts,
placements (resource links) with their line items, the roster, the launch behind each LTI
submission, the score outbox with every attempt, and the expiring store of nonces and launches.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-05 10:00:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table('lti_tool_keys',
    sa.Column('kid', sa.String(length=64), nullable=False),
    sa.Column('private_pem', sa.Text(), nullable=False),
    sa.Column('public_jwk', sa.JSON(), nullable=False),
    sa.Column('created_at', TZ, nullable=False),
    sa.Column('retired_at', TZ, nullable=True),
    sa.Column('removed_at', TZ, nullable=True),
    sa.PrimaryKeyConstraint('kid', name=op.f('pk_lti_tool_keys'))
    )
    op.create_table('lti_platforms',
    sa.Column('id', sa.String(length=16), nullable=False),
    sa.Column('course_id', sa.String(length=64), nullable=False),
    sa.Column('issuer', sa.String(length=500), nullable=False),
    sa.Column('client_id', sa.String(length=200), nullable=False),
    sa.Column('auth_login_url', sa.String(length=2000), nullable=False),
    sa.Column('auth_token_url', sa.String(length=2000), nullable=False),
    sa.Column('auth_audience', sa.String(length=2000), nullable=True),
    sa.Column('key_set_url', sa.String(length=2000), nullable=True),
    sa.Column('key_set', sa.JSON(), nullable=True),
    sa.Column('key_set_fetched_at', TZ, nullable=True),
    sa.Column('frame_origins', sa.JSON(), nullable=False),
    sa.Column('label', sa.String(length=200), nullable=False),
    sa.Column('created_at', TZ, nullable=False),
    sa.Column('updated_at', TZ, nullable=False),
    sa.Column('revoked_at', TZ, nullable=True),
    sa.ForeignKeyConstraint(['course_id'], ['courses.id'], name=op.f('fk_lti_platforms_course_id_courses')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_platforms')),
    sa.UniqueConstraint('issuer', 'client_id', name=op.f('uq_lti_platforms_issuer'))
    )
    op.create_index(op.f('ix_lti_platforms_course_id'), 'lti_platforms', ['course_id'], unique=False)
    op.create_table('lti_deployments',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('platform_id', sa.String(length=16), nullable=False),
    sa.Column('deployment_id', sa.String(length=255), nullable=False),
    sa.Column('label', sa.String(length=200), nullable=False),
    sa.Column('created_at', TZ, nullable=False),
    sa.Column('revoked_at', TZ, nullable=True),
    sa.ForeignKeyConstraint(['platform_id'], ['lti_platforms.id'],
                            name=op.f('fk_lti_deployments_platform_id_lti_platforms')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_deployments')),
    sa.UniqueConstraint('platform_id', 'deployment_id', name=op.f('uq_lti_deployments_platform_id'))
    )
    op.create_index(op.f('ix_lti_deployments_platform_id'), 'lti_deployments', ['platform_id'], unique=False)
    op.create_table('lti_contexts',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('platform_id', sa.String(length=16), nullable=False),
    sa.Column('context_id', sa.String(length=255), nullable=False),
    sa.Column('title', sa.String(length=500), nullable=False),
    sa.Column('memberships_url', sa.String(length=2000), nullable=True),
    sa.Column('roster_requested_at', TZ, nullable=True),
    sa.Column('roster_synced_at', TZ, nullable=True),
    sa.Column('roster_error', sa.Text(), nullable=True),
    sa.Column('created_at', TZ, nullable=False),
    sa.ForeignKeyConstraint(['platform_id'], ['lti_platforms.id'],
                            name=op.f('fk_lti_contexts_platform_id_lti_platforms')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_contexts')),
    sa.UniqueConstraint('platform_id', 'context_id', name=op.f('uq_lti_contexts_platform_id'))
    )
    op.create_index(op.f('ix_lti_contexts_platform_id'), 'lti_contexts', ['platform_id'], unique=False)
    op.create_index(op.f('ix_lti_contexts_roster_requested_at'), 'lti_contexts', ['roster_requested_at'], unique=False)
    op.create_table('lti_links',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('deployment_id', sa.Integer(), nullable=False),
    sa.Column('context_id', sa.Integer(), nullable=False),
    sa.Column('resource_link_id', sa.String(length=255), nullable=False),
    sa.Column('title', sa.String(length=500), nullable=False),
    sa.Column('exercise_id', sa.String(length=100), nullable=True),
    sa.Column('ags_scopes', sa.JSON(), nullable=False),
    sa.Column('lineitems_url', sa.String(length=2000), nullable=True),
    sa.Column('lineitem_url', sa.String(length=2000), nullable=True),
    sa.Column('created_at', TZ, nullable=False),
    sa.Column('updated_at', TZ, nullable=False),
    sa.ForeignKeyConstraint(['context_id'], ['lti_contexts.id'], name=op.f('fk_lti_links_context_id_lti_contexts')),
    sa.ForeignKeyConstraint(['deployment_id'], ['lti_deployments.id'],
                            name=op.f('fk_lti_links_deployment_id_lti_deployments')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_links')),
    sa.UniqueConstraint('deployment_id', 'resource_link_id', name=op.f('uq_lti_links_deployment_id'))
    )
    op.create_index(op.f('ix_lti_links_context_id'), 'lti_links', ['context_id'], unique=False)
    op.create_index(op.f('ix_lti_links_deployment_id'), 'lti_links', ['deployment_id'], unique=False)
    op.create_table('lti_members',
    sa.Column('context_id', sa.Integer(), nullable=False),
    sa.Column('sub', sa.String(length=255), nullable=False),
    sa.Column('name', sa.String(length=300), nullable=False),
    sa.Column('email', sa.String(length=300), nullable=False),
    sa.Column('roles', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('updated_at', TZ, nullable=False),
    sa.ForeignKeyConstraint(['context_id'], ['lti_contexts.id'], name=op.f('fk_lti_members_context_id_lti_contexts')),
    sa.PrimaryKeyConstraint('context_id', 'sub', name=op.f('pk_lti_members'))
    )
    op.create_table('lti_submissions',
    sa.Column('submission_id', sa.String(length=32), nullable=False),
    sa.Column('link_id', sa.Integer(), nullable=False),
    sa.Column('sub', sa.String(length=255), nullable=False),
    sa.Column('created_at', TZ, nullable=False),
    sa.ForeignKeyConstraint(['link_id'], ['lti_links.id'], name=op.f('fk_lti_submissions_link_id_lti_links')),
    sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'],
                            name=op.f('fk_lti_submissions_submission_id_submissions')),
    sa.PrimaryKeyConstraint('submission_id', name=op.f('pk_lti_submissions'))
    )
    op.create_index('ix_lti_submissions_link_id_sub', 'lti_submissions', ['link_id', 'sub'], unique=False)
    op.create_table('lti_score_posts',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('submission_id', sa.String(length=32), nullable=False),
    sa.Column('report_id', sa.Integer(), nullable=False),
    sa.Column('link_id', sa.Integer(), nullable=False),
    sa.Column('sub', sa.String(length=255), nullable=False),
    sa.Column('score', sa.JSON(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('last_status_code', sa.Integer(), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('next_attempt_at', TZ, nullable=True),
    sa.Column('created_at', TZ, nullable=False),
    sa.Column('updated_at', TZ, nullable=False),
    sa.ForeignKeyConstraint(['link_id'], ['lti_links.id'], name=op.f('fk_lti_score_posts_link_id_lti_links')),
    sa.ForeignKeyConstraint(['report_id'], ['reports.id'], name=op.f('fk_lti_score_posts_report_id_reports')),
    sa.ForeignKeyConstraint(['submission_id'], ['submissions.id'],
                            name=op.f('fk_lti_score_posts_submission_id_submissions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_score_posts'))
    )
    op.create_index(op.f('ix_lti_score_posts_link_id'), 'lti_score_posts', ['link_id'], unique=False)
    op.create_index(op.f('ix_lti_score_posts_next_attempt_at'), 'lti_score_posts', ['next_attempt_at'], unique=False)
    op.create_index(op.f('ix_lti_score_posts_submission_id'), 'lti_score_posts', ['submission_id'], unique=False)
    op.create_table('lti_score_attempts',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('post_id', sa.Integer(), nullable=False),
    sa.Column('at', TZ, nullable=False),
    sa.Column('ok', sa.Boolean(), nullable=False),
    sa.Column('status_code', sa.Integer(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['post_id'], ['lti_score_posts.id'],
                            name=op.f('fk_lti_score_attempts_post_id_lti_score_posts')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lti_score_attempts'))
    )
    op.create_index(op.f('ix_lti_score_attempts_post_id'), 'lti_score_attempts', ['post_id'], unique=False)
    op.create_table('lti_store',
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('value', sa.JSON(), nullable=False),
    sa.Column('expires_at', TZ, nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_lti_store'))
    )
    op.create_index(op.f('ix_lti_store_expires_at'), 'lti_store', ['expires_at'], unique=False)


def downgrade() -> None:
    for table in ('lti_store', 'lti_score_attempts', 'lti_score_posts', 'lti_submissions', 'lti_members', 'lti_links',
                  'lti_contexts', 'lti_deployments', 'lti_platforms', 'lti_tool_keys'):
        op.drop_table(table)
