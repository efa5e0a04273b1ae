"""``redis+cluster://`` and ``redis+sentinel://`` as ``REDIS_URL``: parsed, and refused
without a broker and a result backend of their own (Celery can use neither)."""

from __future__ import annotations

import pytest

from workers.app import make_app
from workers.settings import Settings, url_problems
from workers.store import parse_cluster_url

CLUSTER = "redis+cluster://u:p%40ss@10.0.0.1:7000,10.0.0.2:7001"
SENTINEL = "redis+sentinel://s1:26380,s2/mymaster/2"


def test_cluster_and_sentinel_urls_are_parsed() -> None:
    """Every node, the login (unquoted), a Sentinel's service and database."""
    c = parse_cluster_url(CLUSTER)
    assert (c.user, c.password, c.nodes) == ("u", "p@ss", [("10.0.0.1", 7000), ("10.0.0.2", 7001)])
    s = parse_cluster_url(SENTINEL)
    assert (s.nodes, s.service, s.db) == ([("s1", 26380), ("s2", 26379)], "mymaster", 2)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis+sentinel://s1:26379", "names its service"),
        ("redis+cluster://h:7000/0", "has no path"),
        ("redis+cluster://h:notaport", "host:port"),
    ],
)
def test_a_malformed_url_says_what_is_wrong(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_cluster_url(url)


@pytest.mark.parametrize("url", [CLUSTER, SENTINEL])
def test_a_cluster_store_needs_its_own_broker_and_result_backend(url: str) -> None:
    """One line for each setting missing; none once both are set; the URL never shown."""
    problems = url_problems(Settings(redis_url=url))
    assert len(problems) == 2
    assert "CONTINUUM_BROKER_URL" in problems[0] and "CONTINUUM_RESULT_BACKEND" in problems[1]
    assert all("p%40ss" not in p and "10.0.0.1" not in p for p in problems)
    ok = Settings(redis_url=url, broker_url="amqp://g:g@h//", result_backend="disabled")
    assert url_problems(ok) == []
    assert make_app(ok).conf.result_backend == "disabled"


def test_a_result_backend_must_be_a_plain_redis() -> None:
    bad = Settings(redis_url=CLUSTER, broker_url="amqp://h//", result_backend=CLUSTER)
    assert any("CONTINUUM_RESULT_BACKEND must be a Redis URL" in p for p in url_problems(bad))
