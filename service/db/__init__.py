"""Persistence: SQLAlchemy models, sessions, and the queries the service and workers share."""
