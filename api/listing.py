"""``GET /v1/jobs``: the jobs Redis holds, newest first, filtered and paged.

Jobs are listed from an index of their creation times (``Keys.jobs``, written when a job
is created). A page holds at most ``limit`` jobs and costs at most ``LIST_SCAN`` index
entries whatever the filters: a rare status may come back as a short (even empty) page
with a ``next_cursor`` to go on from. The cursor is the creation time and id of the last
job looked at, so pages stay right while jobs are created and expire meanwhile.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from api.auth import AuthFirstRoute
from api.models import JobList, JobView, ValidationErrorBody
from core.ids import BATCH_ID_PATTERN, ID_PATTERN
from workers.store import JobStatus, JobStore
from workers.views import job_view

#: A cursor: a creation time (Unix, with a fraction) and a job id, as ``time:id``.
CURSOR_PATTERN = r"^\d{1,12}(?:\.\d{1,17})?:" + ID_PATTERN.removeprefix("^")


def encode_cursor(cursor: tuple[float, str] | None) -> str | None:
    return None if cursor is None else f"{cursor[0]!r}:{cursor[1]}"


def decode_cursor(text: str | None) -> tuple[float, str] | None:
    """A cursor the route's pattern let through."""
    if text is None:
        return None
    when, _, job_id = text.partition(":")
    return float(when), job_id


def listing_router(store: JobStore) -> APIRouter:
    """The route, to include in the ``/v1`` router (which holds its auth)."""
    router = APIRouter(route_class=AuthFirstRoute)

    @router.get(
        "/jobs",
        response_model=JobList,
        summary="List jobs",
        responses={422: {"model": ValidationErrorBody}},
    )
    def list_jobs(
        status: Annotated[
            list[JobStatus] | None,
            Query(max_length=6, description="Only jobs in these statuses (repeat it for more)."),
        ] = None,
        batch: Annotated[
            str | None, Query(pattern=BATCH_ID_PATTERN, description="Only this batch's jobs.")
        ] = None,
        created_since: Annotated[
            float | None,
            Query(ge=0, le=1e11, description="Only jobs created at or after this Unix time."),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=100, description="Jobs per page, at most.")] = 50,
        cursor: Annotated[
            str | None,
            Query(pattern=CURSOR_PATTERN, description="`next_cursor` of the page before."),
        ] = None,
    ) -> JobList:
        """The jobs Redis holds (running, queued, or ended within the retention), newest
        first. Filters combine; follow `next_cursor` until it is null. A page may hold
        fewer than `limit` jobs (even none) and still have a `next_cursor`: each page
        looks at a bounded number of jobs."""
        records, after = store.list_jobs(
            limit=limit,
            cursor=decode_cursor(cursor),
            statuses=frozenset(status or ()),
            batch=batch,
            since=created_since,
        )
        views = [JobView.model_validate(job_view(r)) for r in records]
        return JobList(jobs=views, next_cursor=encode_cursor(after))

    return router
