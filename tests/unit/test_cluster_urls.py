"""``redis+cluster://`` and ``redis+sentinel://`` as ``REDIS_URL``: parsed, and refused
without a broker and a result backend of their own (Celery can use neither); the store's
own query options (replicas to wait for, the Sentinels' login) taken out of any URL."""

from __future__ import annotations

import pytest

from workers.app import make_app
from workers.embedded_config import redact_url
from workers.settings import Settings, url_problems
from workers.store import Durability, durability_of, parse_cluster_url, split_store_options

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


@pytest.mark.parametrize(
    ("url", "durability"),
    [
        ("redis://localhost:6379/0", Durability(0)),
        ("redis://localhost/0?wait_replicas=2&wait_s=1.5", Durability(2, 1.5)),
        (SENTINEL, Durability(1)),  # a Sentinel store waits for one replica by default
        (SENTINEL + "?wait_replicas=0", Durability(0)),
        (CLUSTER, Durability(0)),
    ],
)
def test_the_replicas_a_store_waits_for(url: str, durability: Durability) -> None:
    assert durability_of(url) == durability


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis://h/0?wait_replicas=x", "wait_replicas in the Redis URL is not a number"),
        ("redis://h/0?wait_replicas=1.5", "is a whole number"),
        ("redis://h/0?wait_replicas=17", "not in 0-16"),
        ("redis://h/0?wait_s=0", "wait_s in the Redis URL is 0, not in 0.1-300"),
        (CLUSTER + "?wait_replicas=1", "not supported on a redis\\+cluster"),
    ],
)
def test_a_bad_store_option_says_what_is_wrong_and_stops_the_start(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        durability_of(url)
    settings = Settings(redis_url=url, broker_url="amqp://g:g@h//", result_backend="disabled")
    problems = url_problems(settings)
    assert len(problems) == 1 and problems[0].startswith("REDIS_URL: ")
    assert "p%40ss" not in problems[0]


def test_the_store_options_are_taken_out_and_the_rest_kept() -> None:
    """redis-py refuses query options it does not know: the store's own leave the URL,
    its options stay (a password in them unquoted once)."""
    url = "redis://h:1/0?socket_timeout=5&wait_replicas=1&sentinel_password=a%26b"
    base, ours = split_store_options(url)
    assert base == "redis://h:1/0?socket_timeout=5"
    assert ours == {"wait_replicas": "1", "sentinel_password": "a&b"}
    assert split_store_options("redis://h:1/0") == ("redis://h:1/0", {})
    parsed = parse_cluster_url(CLUSTER + "?wait_s=2")  # no path: the query is no port
    assert parsed.nodes[1] == ("10.0.0.2", 7001)


def test_the_store_options_never_reach_celery_or_kombu() -> None:
    """The broker and the result backend on ``REDIS_URL``'s Redis get it without the
    store's options (redis-py, under kombu and Celery, refuses options it does not know)."""
    url = "redis://:pw@127.0.0.1:6399/0?wait_replicas=1&wait_s=2"
    settings = Settings(redis_url=url)
    assert settings.broker == "redis://:pw@127.0.0.1:6399/0"
    assert url_problems(settings) == []
    app = make_app(settings)
    assert app.conf.result_backend == "redis://:pw@127.0.0.1:6399/0"
    assert "wait_replicas" not in str(app.conf.broker_url)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "redis+sentinel://:pw@h:1,h2:2/svc?sentinel_password=a%26b&wait_s=2",
            "redis+sentinel://:***@h:1,h2:2/svc?sentinel_password=***&wait_s=2",
        ),
        ("redis://h:6379/0?sentinel_username=u", "redis://h:6379/0?sentinel_username=u"),
        (
            "redis://u:p@h/0?Password=x&socket_timeout=5",
            "redis://u:***@h/0?Password=***&socket_timeout=5",
        ),
    ],
)
def test_a_printed_url_shows_no_password_in_its_query_either(url: str, shown: str) -> None:
    assert redact_url(url) == shown
