"""Which addresses a callback may reach (``workers.callback_addresses``) and how it is sent
(``workers.callbacks.deliver``): every non-public address class is refused after DNS, in
any spelling, unless the operator allow-lists it; the POST goes to the checked address; a
redirect is not followed; no message names the URL's path or query."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Iterator, Sequence

import httpx
import pytest
from pydantic import ValidationError

from core import JobSpec
from core.models import describe_errors
from workers.callback_addresses import AllowList, Refused, Unresolved, check, forbidden, origin
from workers.callbacks import CallbackError, CallbackRefused, deliver
from workers.observability import HTTP_LOGGERS, hide_urls, quiet_http_logs, scrub
from workers.settings import Settings

pytestmark = [pytest.mark.security]

TOKEN = "tok-5b1e0c9f2a"
NOTHING = AllowList()


# -- at submission: the shape only ---------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        (f"ftp://h.example/?token={TOKEN}", "must be an http:// or https:// URL"),
        (f"http://h.example:99999/?token={TOKEN}", "has an invalid host or port"),
        (f"http://[zz]/?token={TOKEN}", "has an invalid host or port"),
        (f"http://:80/?token={TOKEN}", "has no host"),
        (f"http://user:{TOKEN}@/", "has no host"),
    ],
)
def test_a_malformed_callback_url_is_refused_at_submission_without_echoing_it(
    url: str, problem: str
) -> None:
    with pytest.raises(ValidationError) as invalid:
        JobSpec(prompt="p", callback_url=url)
    said = describe_errors(invalid.value)
    assert said == f"callback_url: callback_url {problem}" and TOKEN not in said


@pytest.mark.parametrize(
    "url", ["HTTPS://Hooks.Example/cb?token=t", "http://127.0.0.1:8080/h", "http://[::1]/"]
)
def test_the_address_is_not_judged_at_submission(url: str) -> None:
    """Submission checks the shape; the address is checked by the worker, after DNS."""
    assert JobSpec(prompt="p", callback_url=url).callback_url == url


# -- the address classes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        # IPv4
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("10.0.0.1", "private"),
        ("10.255.255.255", "private"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("169.254.169.254", "link-local"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.0.0.8", "IETF"),
        ("192.0.2.1", "documentation"),
        ("192.88.99.1", "6to4 relay"),
        ("192.168.1.1", "private"),
        ("198.18.0.1", "benchmarking"),
        ("198.51.100.7", "documentation"),
        ("203.0.113.9", "documentation"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "broadcast"),
        # IPv6
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("::127.0.0.1", "reserved"),
        ("100::1", "discard-only"),
        ("2001:db8::1", "documentation"),
        ("2001::1", "IETF"),  # Teredo
        ("3fff::1", "documentation"),
        ("fc00::1", "unique-local"),
        ("fd12:3456::1", "unique-local"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("fec0::1", "site-local"),
        ("ff02::1", "multicast"),
        ("ff0e::1", "multicast"),
        ("64:ff9b:1::1", "NAT64"),
        # IPv4 inside IPv6: checked as the IPv4 address it reaches
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:7f00:1", "loopback"),
        ("::ffff:169.254.169.254", "link-local"),
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of 169.254.169.254
        ("64:ff9b::7f00:1", "loopback"),
        ("2002:7f00:1::", "loopback"),  # 6to4 of 127.0.0.1
        ("2002:c0a8:101::1", "private"),  # 6to4 of 192.168.1.1
        # public: allowed
        ("8.8.8.8", None),
        ("1.1.1.1", None),
        ("93.184.215.14", None),
        ("2606:4700:4700::1111", None),
        ("2a00:1450:4001:80e::200e", None),
        ("::ffff:8.8.8.8", None),
        ("64:ff9b::808:808", None),
        ("2002:808:808::1", None),
    ],
)
def test_forbidden_names_every_non_public_address_class(address: str, reason: str | None) -> None:
    found = forbidden(ipaddress.ip_address(address))
    if reason is None:
        assert found is None
    else:
        assert found is not None and reason in found, found


# -- after DNS, in every spelling ----------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://127.0.0.1:8080/hook", "127.0.0.1"),
        ("http://2130706433/hook", "127.0.0.1"),  # decimal
        ("http://017700000001/hook", "127.0.0.1"),  # octal
        ("http://0x7f000001/hook", "127.0.0.1"),  # hex
        ("http://0x7f.1/hook", "127.0.0.1"),  # hex, short form
        ("http://127.1/hook", "127.0.0.1"),  # short form
        ("http://0/hook", "0.0.0.0"),
        ("http://0.0.0.0:6379/", "0.0.0.0"),
        ("http://localhost/hook", "127.0.0.1"),  # a name: /etc/hosts
        ("http://LOCALHOST/hook", "127.0.0.1"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254"),
        ("http://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254"),
        ("http://2852039166/", "169.254.169.254"),
        ("http://10.1.2.3/", "10.1.2.3"),
        ("http://[::1]:8080/hook", "::1"),
        ("http://[0:0:0:0:0:0:0:1]/", "::1"),
        ("http://[::ffff:127.0.0.1]/", "IPv4 127.0.0.1"),
        ("http://[::ffff:7f00:1]/", "IPv4 127.0.0.1"),
        ("http://[::ffff:a9fe:a9fe]/", "IPv4 169.254.169.254"),
        ("http://[fd00::1]/", "fd00::1"),
        ("http://[fe80::1]/", "fe80::1"),
        ("http://[ff02::1]/", "ff02::1"),
        ("http://224.0.0.251/", "224.0.0.251"),
        ("https://user:pw@127.0.0.1/", "127.0.0.1"),
    ],
)
def test_check_refuses_a_forbidden_address_in_any_spelling(url: str, address: str) -> None:
    """The real resolver turns every spelling into the address it means; that is checked."""
    with pytest.raises(Refused) as refused:
        check(f"{url}?token={TOKEN}", NOTHING)
    message = str(refused.value)
    assert f"{address} is " in message or f"{address}) is " in message, message
    assert "CONTINUUM_CALLBACK_ALLOW" in message
    assert TOKEN not in message and "/hook" not in message and "pw" not in message


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/x", "file:///etc/passwd", "gopher://127.0.0.1:6379/", "http://0177.0.0.1/"],
)
def test_check_refuses_what_is_not_an_http_url(url: str) -> None:
    with pytest.raises(Refused):
        check(url, NOTHING, lambda host, port: ["8.8.8.8"])


class FakeDNS:
    """A resolver answering from a table, counting its lookups."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.asked: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append((host, port))
        if host not in self.table:
            raise Unresolved(f"{host} does not resolve")
        return self.table[host]


def test_every_address_a_name_resolves_to_is_checked() -> None:
    """A name resolving to a public and a private address is refused (rebinding by a
    round-robin answer), whichever comes first."""
    for answer in (["93.184.215.14", "10.0.0.5"], ["10.0.0.5", "93.184.215.14"]):
        dns = FakeDNS({"rebind.example": answer})
        with pytest.raises(Refused, match=r"10\.0\.0\.5 is a private address"):
            check("https://rebind.example/hook", NOTHING, dns)


def test_a_public_name_is_pinned_to_the_checked_address() -> None:
    dns = FakeDNS({"hooks.example": ["93.184.215.14", "2606:2800::1"]})
    target = check(f"https://hooks.example:8443/h?token={TOKEN}", NOTHING, dns)
    assert dns.asked == [("hooks.example", 8443)]
    assert str(target.pinned_url) == f"https://93.184.215.14:8443/h?token={TOKEN}"
    assert target.host_header == "hooks.example:8443"
    assert target.extensions == {"sni_hostname": "hooks.example"}


def test_an_idn_host_is_resolved_and_sent_in_its_ascii_form() -> None:
    dns = FakeDNS({"xn--bcher-kva.example": ["2606:2800::1"]})
    target = check("http://bücher.example/h", NOTHING, dns)
    assert str(target.pinned_url) == "http://[2606:2800::1]/h"
    assert target.host_header == "xn--bcher-kva.example" and target.extensions == {}


def test_a_name_that_does_not_resolve_is_unresolved_not_refused() -> None:
    with pytest.raises(Unresolved):
        check("http://nowhere.example/", NOTHING, FakeDNS({}))
    with pytest.raises(Unresolved):
        check("http://empty.example/", NOTHING, FakeDNS({"empty.example": []}))


# -- the operator's allow-list -------------------------------------------------------------


@pytest.mark.parametrize(
    ("allow", "url", "answer", "allowed"),
    [
        ("127.0.0.1", "http://127.0.0.1:9000/h", ["127.0.0.1"], True),
        ("127.0.0.1", "http://127.0.0.2:9000/h", ["127.0.0.2"], False),
        ("127.0.0.0/8", "http://127.0.0.2:9000/h", ["127.0.0.2"], True),
        ("127.0.0.1", "http://[::ffff:127.0.0.1]/h", ["::ffff:127.0.0.1"], True),
        ("::1", "http://[::1]/h", ["::1"], True),
        ("[::1]", "http://[::1]/h", ["::1"], True),
        ("::1", "http://127.0.0.1/h", ["127.0.0.1"], False),
        ("10.0.0.0/8, 192.168.0.0/16", "http://hooks.lan/h", ["192.168.4.4"], True),
        ("10.0.0.0/8", "http://hooks.lan/h", ["10.1.1.1", "169.254.169.254"], False),
        ("hooks.internal", "http://hooks.internal/h", ["10.9.9.9"], True),
        ("HOOKS.internal.", "http://hooks.internal./h", ["10.9.9.9"], True),
        ("hooks.internal", "http://other.internal/h", ["10.9.9.9"], False),
        ("*.corp.example", "http://a.b.corp.example/h", ["172.20.0.1"], True),
        ("*.corp.example", "http://corp.example/h", ["172.20.0.1"], False),
        ("*.corp.example", "http://evilcorp.example/h", ["172.20.0.1"], False),
        ("", "http://hooks.example/h", ["93.184.215.14"], True),  # public needs nothing
    ],
)
def test_the_allow_list_admits_what_it_names_and_nothing_else(
    allow: str, url: str, answer: list[str], allowed: bool
) -> None:
    host = httpx.URL(url).raw_host.decode()
    dns = FakeDNS({host: answer})
    if allowed:
        target = check(url, AllowList.parse(allow), dns)
        assert target.address == ipaddress.ip_address(answer[0])
    else:
        with pytest.raises(Refused):
            check(url, AllowList.parse(allow), dns)


@pytest.mark.parametrize("entry", ["http://x", "a b", "10.0.0.0/33", "*.", "a..b", "-", "x/y"])
def test_a_malformed_allow_list_stops_the_settings(
    entry: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="CONTINUUM_CALLBACK_ALLOW"):
        AllowList.parse(f"127.0.0.1,{entry}")
    monkeypatch.setenv("CONTINUUM_CALLBACK_ALLOW", entry)
    with pytest.raises(ValidationError):
        Settings()


def test_the_allow_list_setting_defaults_to_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONTINUUM_CALLBACK_ALLOW", raising=False)
    assert Settings().callback_allow == ""
    monkeypatch.setenv("CONTINUUM_CALLBACK_ALLOW", " 127.0.0.1 , ::1,localhost ")
    parsed = AllowList.parse(Settings().callback_allow)
    assert parsed.hosts == {"localhost"} and len(parsed.networks) == 2


# -- delivery: to the checked address, no redirect, no token in a message -------------------


def test_the_post_goes_to_the_checked_address_with_the_original_host() -> None:
    seen: list[httpx.Request] = []

    def receiver(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    dns = FakeDNS({"hooks.example": ["93.184.215.14"]})
    url = f"https://hooks.example/h?token={TOKEN}"
    deliver(url, {"a": 1}, allow=NOTHING, resolver=dns, transport=httpx.MockTransport(receiver))
    [request] = seen
    assert request.url.host == "93.184.215.14" and request.url.query == f"token={TOKEN}".encode()
    assert request.headers["host"] == "hooks.example"
    assert request.extensions["sni_hostname"] == "hooks.example"
    assert request.content == b'{"a":1}'
    assert len(dns.asked) == 1


def test_a_refused_address_is_never_connected_to() -> None:
    def receiver(request: httpx.Request) -> httpx.Response:
        raise AssertionError("connected")

    with pytest.raises(CallbackRefused, match=r"169\.254\.169\.254 is a link-local"):
        deliver(
            f"http://169.254.169.254/latest?token={TOKEN}",
            {},
            allow=NOTHING,
            transport=httpx.MockTransport(receiver),
        )


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed_and_not_retried(status: int) -> None:
    seen: list[httpx.Request] = []

    def receiver(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, headers={"Location": "http://169.254.169.254/"})

    dns = FakeDNS({"hooks.example": ["93.184.215.14"]})
    with pytest.raises(CallbackRefused, match="redirects are not followed") as refused:
        deliver(
            f"http://hooks.example/h?token={TOKEN}",
            {},
            allow=NOTHING,
            resolver=dns,
            transport=httpx.MockTransport(receiver),
        )
    assert len(seen) == 1 and TOKEN not in str(refused.value)


def _error_status(request: httpx.Request) -> httpx.Response:
    return httpx.Response(500)


def _no_connection(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError(f"cannot reach {request.url}", request=request)


def _no_answer(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadTimeout(f"no answer from {request.url}", request=request)


@pytest.mark.parametrize("answer", [_error_status, _no_connection, _no_answer])
def test_a_failed_post_is_retryable_and_names_the_origin_only(
    answer: Callable[[httpx.Request], httpx.Response],
) -> None:
    dns = FakeDNS({"hooks.example": ["93.184.215.14"]})
    with pytest.raises(CallbackError) as failed:
        deliver(
            f"https://user:pw@hooks.example:8443/secret/path?token={TOKEN}",
            {},
            allow=NOTHING,
            resolver=dns,
            transport=httpx.MockTransport(answer),
        )
    assert not isinstance(failed.value, CallbackRefused)
    message = str(failed.value)
    assert message.startswith("POST to https://hooks.example:8443: ")
    for secret in (TOKEN, "secret/path", "pw"):
        assert secret not in message


# -- what messages, events and logs show of a URL ------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"http://h.example/cb?token={TOKEN}", "http://h.example"),
        (f"https://u:p@h.example:8443/a/b?t={TOKEN}#f", "https://h.example:8443"),
        (f"POST http://[::1]:9/x?token={TOKEN} failed", "POST http://[::1]:9 failed"),
        (
            f"{{'callback_url': 'http://10.0.0.1/h?token={TOKEN}'}}",
            "{'callback_url': 'http://10.0.0.1'}",
        ),
        ("no url here", "no url here"),
    ],
)
def test_hide_urls_cuts_every_url_to_its_origin(text: str, shown: str) -> None:
    assert hide_urls(text) == shown


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"http://h.example/cb?token={TOKEN}", "http://h.example"),
        ("https://H.Example:443/", "https://h.example"),
        ("http://[::1]:8080/x", "http://[::1]:8080"),
        ("http://bücher.example/", "http://xn--bcher-kva.example"),
        ("http://0177.0.0.1/", "(an invalid URL)"),
    ],
)
def test_origin_names_scheme_host_and_port_only(url: str, shown: str) -> None:
    assert origin(url) == shown


def test_hide_urls_and_scrub_reach_into_specs() -> None:
    spec = {"job_id": "j1", "callback_url": f"https://h.example/cb?token={TOKEN}", "n": 3}
    assert hide_urls({"spec": spec}) == {"spec": {**spec, "callback_url": "https://h.example"}}
    crumb = {"data": {"url": f"http://h.example/cb?token={TOKEN}", "http.query": f"token={TOKEN}"}}
    assert TOKEN not in str(scrub(crumb))


@pytest.fixture
def http_loggers() -> Iterator[None]:
    levels = {name: logging.getLogger(name).level for name in HTTP_LOGGERS}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_httpx_no_longer_logs_request_urls_at_info(
    http_loggers: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    transport = httpx.MockTransport(lambda request: httpx.Response(204))
    with httpx.Client(transport=transport) as client:
        client.post(f"http://h.example/cb?token={TOKEN}")
    assert TOKEN in caplog.text  # what a worker printed before
    caplog.clear()
    quiet_http_logs()
    with httpx.Client(transport=transport) as client:
        client.post(f"http://h.example/cb?token={TOKEN}")
    assert TOKEN not in caplog.text and caplog.records == []
