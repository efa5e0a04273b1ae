"""A job whose output is stored in 1 KB chunks, run by a real worker process: its result,
read through the API (streamed) and the command line (``continuum result -o``), is
byte-identical to the same job run in memory, a replacement and multibyte text included."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.app import create_app
from api.settings import ApiSettings
from sim.app import create_app as create_sim
from sim.model import SimOptions
from tests.acceptance.procs import Cluster
from tests.acceptance.test_cluster import cli, reference, send
from tests.conftest import decoded

SEED = 21  # test_cluster.reference's simulator
CHUNK = 1024


@pytest.fixture
def sim_url(serve: Callable[[Any], str]) -> str:
    return serve(create_sim(SimOptions(seed=SEED, latency=0.02)))


def chunked_spec(job_id: str) -> dict[str, Any]:
    """~50 KB of JSON rich in multibyte text whose review drops section 2 (an item
    schema): the output is then replaced by the re-serialised document."""
    return {
        "job_id": job_id,
        "prompt": f"Write the catalogue of the city archive ({job_id})",
        "format": "json",
        "providers": ["sim"],
        "model": "sim:format=json,size=50000,overlap=80,multibyte=0.2",
        "max_output_tokens": 1000,
        "continuation": {"max_attempts": 200},
        "validation": {
            "item_schema": {"properties": {"id": {"not": {"const": 2}}}},
            "items_key": "sections",
        },
    }


@pytest.mark.slow
def test_a_job_in_1_kb_chunks_is_exact_through_the_api_and_the_cli(
    cluster: Callable[..., Cluster],
    sim_url: str,
    serve: Callable[[Any], str],
    redis_url: str,
    redis_prefix: str,
    tmp_path: Path,
) -> None:
    """CONTINUUM_OUTPUT_CHUNK_BYTES=1024: the worker writes ~50 chunks, none over 1 KB, none
    cutting a character, then replaces them (the review dropped an item); ``/result``,
    ``/output`` and ``continuum result -o`` give the in-memory run's exact bytes."""
    raw = chunked_spec("chunked")
    want = reference([raw])["chunked"]
    assert '"id": 2,' not in want and '"id": 3,' in want  # the replacement happened

    c = cluster(sim_url, CONTINUUM_OUTPUT_CHUNK_BYTES=str(CHUNK))
    c.worker(concurrency=1)
    send(c, [raw])
    record = c.wait_ended(["chunked"], timeout=120)["chunked"]
    assert record.status.value == "succeeded", record.error
    store = c.store()
    chunks = store.redis.lrange(store.keys.output("chunked"), 0, -1)
    assert len(chunks) >= len(want.encode()) // CHUNK >= 45
    assert all(len(chunk) <= CHUNK for chunk in chunks)
    assert all(decoded(chunk) for chunk in chunks)  # whole characters each
    assert any(len(decoded(chunk)) < len(chunk) for chunk in chunks)
    assert store.redis.hget(store.keys.job("chunked"), "output_gen") == b"1"
    assert store.final_output(record) == want

    settings = ApiSettings(
        REDIS_URL=redis_url,
        key_prefix=redis_prefix,
        broker_prefix=redis_prefix,
        queue="q",
        api_token=None,
        api_insecure_local=True,
    )
    app = create_app(settings)
    try:
        with httpx.Client(base_url=serve(app), timeout=15) as api:
            result = api.get("/v1/jobs/chunked/result")
            assert result.status_code == 200 and result.json()["output"] == want
            body = {**result.json(), "output": want}
            compact = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
            assert result.content == compact.encode()
            assert api.get("/v1/jobs/chunked/output").content == want.encode()
    finally:
        app.state.service.close()

    out = tmp_path / "result.json"
    done = cli(c, "result", "chunked", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == want.encode()
