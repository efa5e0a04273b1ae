"""The ``/v1/batches`` routes: submit a batch, read its progress, cancel it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Body, Path, Response

from api.errors import ApiError
from api.models import BATCH_EXAMPLES, BatchRequest, BatchView, CancelledBatch, SubmittedBatch
from api.routing import LOCATION, error_responses, v1_router
from core.ids import BATCH_ID_PATTERN
from workers.submit import submit_batch
from workers.views import batch_view

if TYPE_CHECKING:
    from api.auth import BearerAuth
    from api.service import Service

BatchId = Annotated[str, Path(pattern=BATCH_ID_PATTERN, description="A batch id.")]
BatchBody = Annotated[BatchRequest, Body(openapi_examples=BATCH_EXAMPLES)]


def batches_router(svc: Service, auth: BearerAuth | None) -> APIRouter:
    """The batch routes, under ``/v1``, behind ``auth``."""
    router = v1_router(auth)

    @router.post(
        "/batches",
        status_code=202,
        response_model=SubmittedBatch,
        summary="Submit a batch of jobs",
        responses={
            200: {"model": SubmittedBatch, "description": "The batch existed already."},
            202: {
                "description": "Created; its jobs' first iterations are queued.",
                "headers": LOCATION,
            },
            **error_responses(400, 413, 415, 422),
        },
    )
    def create_batch(body: BatchBody, response: Response) -> SubmittedBatch:
        """Create a batch. Each spec is validated on its own: an invalid one becomes a
        failed job whose error says why (listed under `invalid`), the others run."""
        batch_id, jobs = submit_batch(svc.rt, body.specs, svc.enqueue, batch_id=body.batch_id)
        created = sum(j.created for j in jobs)
        response.headers["Location"] = f"/v1/batches/{batch_id}"
        response.status_code = 202 if created else 200
        return SubmittedBatch(
            batch_id=batch_id,
            jobs=[j.job_id for j in jobs],
            invalid={j.job_id: j.error for j in jobs if j.error},
            created=created,
        )

    @router.get(
        "/batches/{batch_id}",
        response_model=None,
        summary="A batch's progress",
        responses={200: {"model": BatchView}, **error_responses(404, 422)},
    )
    def get_batch(batch_id: BatchId) -> dict[str, Any]:
        """Jobs by status, iterations and characters so far, and the batch's job ids."""
        status = svc.store.batch_status(batch_id)
        if status is None:
            raise ApiError(404, f"no such batch: {batch_id}")
        return batch_view(status)

    @router.delete(
        "/batches/{batch_id}",
        response_model=None,
        summary="Cancel a batch",
        responses={200: {"model": CancelledBatch}, **error_responses(404, 422)},
    )
    def cancel_batch(batch_id: BatchId) -> dict[str, Any]:
        """Cancel every job of the batch that has not ended."""
        if svc.store.batch_status(batch_id) is None:
            raise ApiError(404, f"no such batch: {batch_id}")
        cancelled, size = svc.store.cancel_batch(batch_id)
        status = svc.store.batch_status(batch_id)
        assert status is not None
        return {
            "batch_id": batch_id,
            "cancelled": cancelled,
            "size": size,
            "batch": batch_view(status),
        }

    return router
