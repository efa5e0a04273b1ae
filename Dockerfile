# syntax=docker/dockerfile:1
# One image for every Continuum process: `docker run IMAGE worker`, `... beat`, `... api`,
# `... flower` (see compose.yaml and docs/operations.md).
FROM python:3.12-slim

# uv from PyPI, the version the project is developed with.
RUN pip install --no-cache-dir --root-user-action=ignore uv==0.13.9

ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/app/.venv \
    PYTHONUNBUFFERED=1 \
    PATH="/app/.venv/bin:$PATH"

WORKDIR /app

# The dependencies first, cached until uv.lock changes; then the project itself.
# --no-default-groups: none of the dependency groups (dev, bench), only what runs.
COPY pyproject.toml uv.lock ./
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-default-groups --no-install-project
COPY . .
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --frozen --no-default-groups

# Run as an unprivileged user. ./var is where the embedded Redis would live when no
# REDIS_URL is set (compose always sets it).
RUN useradd --create-home --uid 10001 continuum \
    && mkdir -p /app/var \
    && chown continuum:continuum /app/var
USER continuum

ENTRYPOINT ["continuum"]
CMD ["--help"]
