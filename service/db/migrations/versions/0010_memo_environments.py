"""Where each verdict memo entry was produced (mode, device, Triton version) as columns with a
covering index, so a grader that has not heard its sandbox's environment yet asks the memo for
the distinct environments (DbMemo.environments) instead of decoding entries. Backfilled from
each entry's stored environment.

Revision ID: 0010_memo_environments
Revises: 0009_hints
Create Date: 2026-12-02 08:00:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0010_memo_environments'
down_revision = '0009_hints'
branch_labels = None
depends_on = None

BATCH = 500


def upgrade() -> None:
    # In place (add_column), as 0009 does: no batch copy of a table that may be large.
    op.add_column('verdict_memo', sa.Column('mode', sa.String(length=16), nullable=False, server_default=''))
    op.add_column('verdict_memo', sa.Column('device', sa.String(length=200), nullable=False, server_default=''))
    op.add_column('verdict_memo', sa.Column('triton', sa.String(length=64), nullable=False, server_default=''))
    op.create_index('ix_verdict_memo_environment', 'verdict_memo', ['mode', 'device', 'triton', 'created_at'],
                    unique=False)

    # Backfill (portable: the JSON is read here, not in SQL), a window of keys at a time.
    memo = sa.table('verdict_memo', sa.column('key', sa.String), sa.column('result', sa.JSON),
                    sa.column('mode', sa.String), sa.column('device', sa.String), sa.column('triton', sa.String))
    bind = op.get_bind()
    after = ''
    while True:
        rows = bind.execute(sa.select(memo.c.key, memo.c.result).where(memo.c.key > after)
                            .order_by(memo.c.key).limit(BATCH)).all()
        if not rows:
            break
        for key, result in rows:
            environment = result.get('environment') if isinstance(result, dict) else None
            environment = environment if isinstance(environment, dict) else {}
            values = {'mode': str(environment.get('backend') or '')[:16],
                      'device': str(environment.get('device') or '')[:200],
                      'triton': str(environment.get('triton') or '')[:64]}
            if any(values.values()):
                bind.execute(memo.update().where(memo.c.key == key).values(**values))
        after = rows[-1][0]


def downgrade() -> None:
    op.drop_index('ix_verdict_memo_environment', table_name='verdict_memo')
    op.drop_column('verdict_memo', 'triton')  # SQLite >= 3.35 drops a column in place
    op.drop_column('verdict_memo', 'device')
    op.drop_column('verdict_memo', 'mode')
