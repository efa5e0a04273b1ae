"""Celery workers, the Redis job store, and the provider adapters."""
