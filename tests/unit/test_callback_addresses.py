"""Which addresses a callback may reach (``workers.callback_addresses``) and how it is sent
(``workers.callbacks.deliver``): every non-public address class is refused after DNS, in
any spelling, unless the operator allow-lists it; the POST goes to the checked address; a
redirect is not followed; no message names the URL's path or query; a host that is not a
DNS name or an IP literal is refused at submission and never shown; and a receiver that
answers (or reads) a byte at a time is cut off at the delivery's deadline."""

from __future__ import annotations

import ipaddress
import logging
import re
import select
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from core import JobSpec
from core.models import describe_errors
from workers.callback_addresses import AllowList, check, forbidden, origin
from workers.callbacks import deliver
from workers.errors import AddressRefused, CallbackError, CallbackRefused, Unresolved
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


# -- at submission: the host is a DNS name or an IP literal ----------------------------------
#
# Decided: ``_`` is allowed in a label (real receivers use it in names, and DNS carries
# it); so are a trailing dot and an IDN (judged in its ``xn--`` form). User info may hold
# ``%`` escapes and even an ``@``: urllib and httpx both take the host after the *last*
# ``@``, so what is judged is what is called (and shown). A backslash anywhere before the
# path is refused: httpx reads it as part of the host, a browser as a "/".

BAD_HOST = "callback_url: callback_url's host must be a DNS name or an IP address"
NOT_HTTP = "callback_url: callback_url must be an http:// or https:// URL"
CONTROL = "callback_url: callback_url holds a control character"


@pytest.mark.parametrize(
    ("url", "said"),
    [
        # backslashes: httpx takes all of this for the host, the token included
        (rf"https://hooks.example.com\services\T0\Xoxb{TOKEN}?x=1", BAD_HOST),
        (rf"https://hooks.example.com\{TOKEN}", BAD_HOST),
        (rf"https://evil.example\@hooks.example.com/{TOKEN}", BAD_HOST),
        (rf"https://u\{TOKEN}@hooks.example.com/", BAD_HOST),
        # spaces (the URL's shape already refuses them)
        (f"http://hooks .example/?t={TOKEN}", NOT_HTTP),
        (f"http://hooks.example\u3000x/?t={TOKEN}", NOT_HTTP),
        (f"http://hooks.example /?t={TOKEN}", NOT_HTTP),
        # percent: escapes in a host are read differently by different parsers
        (f"http://hooks%2eexample.com/?t={TOKEN}", BAD_HOST),
        (f"http://hooks.example.com%00.evil/?t={TOKEN}", BAD_HOST),
        (f"http://hooks.example%2F{TOKEN}/", BAD_HOST),
        (f"http://[fe80::1%25eth0]/?t={TOKEN}", BAD_HOST),  # a zone ID
        # "@" tricks that end on no valid host
        (f"http://hooks.example.com@evil\\{TOKEN}/", BAD_HOST),
        (f"http://hooks.example.com@[v1.{TOKEN}]/", BAD_HOST),
        # control characters, in the host or anywhere else
        (f"http://hooks\x00.example/?t={TOKEN}", CONTROL),
        (f"http://hooks\x1b[31m.example/?t={TOKEN}", CONTROL),
        (f"http://hooks.example/\x7f?t={TOKEN}", CONTROL),
        (f"http://hooks.example/\x08?t={TOKEN}", CONTROL),
        # brackets: only around an IPv6 address, nothing before or after
        (f"http://x[::1]/?t={TOKEN}", BAD_HOST),
        (f"http://[::1]x/?t={TOKEN}", BAD_HOST),
        (f"http://[v1.x]/?t={TOKEN}", BAD_HOST),
        # what a DNS name does not hold
        (f"http://-hooks.example/?t={TOKEN}", BAD_HOST),
        (f"http://hooks-.example/?t={TOKEN}", BAD_HOST),
        (f"http://hooks..example/?t={TOKEN}", BAD_HOST),
        (f"http://hooks.example../?t={TOKEN}", BAD_HOST),
        (f"http://{'a' * 64}.example/?t={TOKEN}", BAD_HOST),
        (f"http://{'a.' * 127}example/?t={TOKEN}", BAD_HOST),  # 261 characters
        *[(f"http://hooks{c}x.example/?t={TOKEN}", BAD_HOST) for c in "!$&'()*+,;=~\"<>^`{|}"],
    ],
)
def test_a_host_that_is_no_dns_name_or_ip_is_refused_at_submission_without_echoing_it(
    url: str, said: str
) -> None:
    with pytest.raises(ValidationError) as invalid:
        JobSpec(prompt="p", callback_url=url)
    message = describe_errors(invalid.value)
    assert message == said
    for part in (TOKEN, "services", "hooks", "evil"):
        assert part not in message.removeprefix("callback_url: callback_url")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://hooks.example.com/services/T0/x?y=1", "https://hooks.example.com"),
        ("https://_hooks._tcp.my_service.example/h", "https://_hooks._tcp.my_service.example"),
        ("http://Hooks-1.Example.:8080/h", "http://hooks-1.example.:8080"),
        ("http://bücher.example/h", "http://xn--bcher-kva.example"),
        ("http://xn--bcher-kva.example/h", "http://xn--bcher-kva.example"),
        (f"http://{'a' * 63}.example/", f"http://{'a' * 63}.example"),
        ("http://93.184.215.14/h", "http://93.184.215.14"),
        ("http://2130706433:9/h", "http://2130706433:9"),  # refused after DNS, not here
        ("http://[2606:2800::1]:8443/h", "http://[2606:2800::1]:8443"),
        ("http://[::ffff:8.8.8.8]/h", "http://[::ffff:8.8.8.8]"),
        # the token's place (path, query, user info) may hold what a host may not
        (r"https://hooks.example.com/services\T0\x%20y?q=a\b%00", "https://hooks.example.com"),
        (f"https://u:p%40{TOKEN}@hooks.example.com/", "https://hooks.example.com"),
        # "@": the host is after the last one, for urllib and httpx alike
        ("http://hooks.example.com@evil.example/h", "http://evil.example"),
        ("http://a@b@hooks.example/h", "http://hooks.example"),
    ],
)
def test_a_dns_name_or_ip_literal_is_accepted_and_is_what_origin_shows(
    url: str, shown: str
) -> None:
    """What submission judged is the host httpx will call (and ``origin`` show)."""
    assert JobSpec(prompt="p", callback_url=url).callback_url == url
    assert origin(url) == shown


BAD_HOSTS = [
    rf"https://hooks.example.com\services\T0\Xoxb{TOKEN}?x=1",
    rf"https://hooks.example.com\{TOKEN}",
    f"http://hooks%2e{TOKEN}.example/",
    f"http://hooks {TOKEN}.example/",
    f"http://[fe80::1%25{TOKEN}]/",
    f"http://-{TOKEN}.example/",
    f"http://{TOKEN}..example/",
    f"http://{TOKEN}!.example/",
    f"http://u@{TOKEN}{'x' * 60}.example/",
]


@pytest.mark.parametrize("url", BAD_HOSTS)
def test_origin_does_not_show_a_host_that_is_no_dns_name_or_ip(url: str) -> None:
    """A spec stored before submission checked hosts, or sent past it, still shows none."""
    assert origin(url) == "(an invalid URL)"
    if " " not in url:  # (in free text, a URL ends at a space: the rest is not a URL)
        assert TOKEN not in hide_urls(f"POST to {url} failed")


@pytest.mark.parametrize("url", BAD_HOSTS)
def test_a_host_that_is_no_dns_name_or_ip_is_refused_before_any_lookup(url: str) -> None:
    def resolver(host: str, port: int) -> Sequence[str]:
        raise AssertionError(f"looked up {host}")

    with pytest.raises(AddressRefused) as refused:
        check(url, AllowList.parse("*.example, 0.0.0.0/0"), resolver)
    assert str(refused.value) == "the callback URL's host is neither a DNS name nor an IP address"
    with pytest.raises(CallbackRefused) as not_sent:
        deliver(url, {}, allow=NOTHING, resolver=resolver)
    assert TOKEN not in str(not_sent.value)


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
    with pytest.raises(AddressRefused) as refused:
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
    with pytest.raises(AddressRefused):
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
        with pytest.raises(AddressRefused, match=r"10\.0\.0\.5 is a private address"):
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
        with pytest.raises(AddressRefused):
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


# -- the deadline: a receiver that drips is cut off -----------------------------------------


class Drip:
    """A receiver on a free loopback port that takes its time: on each connection it sends
    ``answer`` one byte every ``every`` seconds, then nothing, and reads what it is sent
    ``read`` bytes at a time (pausing ``every`` after each read when ``slow_read``), for
    ``cap`` seconds at most. ``got``: what each connection sent; ``held``: how long each
    stayed open, until the client closed it (or the cap)."""

    def __init__(
        self,
        answer: bytes = b"",
        *,
        every: float = 0.2,
        cap: float = 20.0,
        read: int = 65536,
        slow_read: bool = False,
    ) -> None:
        self.answer, self.every, self.cap, self.read = answer, every, cap, read
        self.slow_read = slow_read
        self.got: list[bytearray] = []
        self.held: list[float] = []
        self.stop = threading.Event()
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen()
        self.port = int(self.server.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        start = time.monotonic()
        got = bytearray()
        self.got.append(got)
        pending = self.answer
        with conn:
            try:
                while not self.stop.is_set() and time.monotonic() - start < self.cap:
                    if select.select([conn], [], [], self.every)[0]:
                        data = conn.recv(self.read)
                        if not data:
                            break  # the client closed the connection
                        got += data
                        if self.slow_read:
                            time.sleep(self.every)
                    elif pending:
                        conn.sendall(pending[:1])
                        pending = pending[1:]
            except OSError:
                pass
        self.held.append(time.monotonic() - start)

    def close(self) -> None:
        self.stop.set()
        self.server.close()


@pytest.fixture
def drip() -> Iterator[Callable[..., Drip]]:
    made: list[Drip] = []

    def start(answer: bytes = b"", **options: Any) -> Drip:
        made.append(Drip(answer, **options))
        return made[-1]

    yield start
    for server in made:
        server.close()


DEADLINE = 1.0
PADDING = 32_000_000
LOOPBACK = AllowList.parse("127.0.0.1")
#: A status line and then one header that never ends (h11 waits for 16 KiB of it).
ENDLESS_HEADERS = b"HTTP/1.1 200 OK\r\nX-Drip: " + b"a" * 60_000
#: A TLS handshake record announcing 16 KiB, which the client waits for.
ENDLESS_TLS = b"\x16\x03\x03\x40\x00" + bytes(16_384)


@pytest.mark.parametrize(
    ("how", "exceeded"),
    [
        ("answers its headers a byte at a time", httpx.ReadTimeout),
        ("reads the request 1 MiB every half second", httpx.WriteTimeout),
        ("answers the TLS handshake a byte at a time", httpx.ConnectTimeout),
    ],
)
def test_a_receiver_that_takes_its_time_is_cut_off_at_the_deadline(
    how: str, exceeded: type[httpx.TimeoutException], drip: Callable[..., Drip]
) -> None:
    """httpx's timeout is per socket operation, so before the deadline each byte of the
    headers (or each chunk of the request the receiver read) restarted the clock, and a
    delivery lasted as long as the receiver liked. Now it lasts ``timeout`` seconds in all,
    and fails as a retryable ``CallbackError`` naming the origin only."""
    body: dict[str, Any] = {"a": 1}
    scheme = "https" if "TLS" in how else "http"
    if "headers" in how:
        receiver = drip(ENDLESS_HEADERS)
    elif "request" in how:
        receiver = drip(read=1 << 20, every=0.5, slow_read=True)
        body = {"pad": "x" * PADDING}  # much more than the socket buffers hold
    else:
        receiver = drip(ENDLESS_TLS)
    url = f"{scheme}://hooks.example:{receiver.port}/h/{TOKEN}?token={TOKEN}"
    dns = FakeDNS({"hooks.example": ["127.0.0.1"]})

    started = time.monotonic()
    with pytest.raises(CallbackError) as failed:
        deliver(url, body, allow=LOOPBACK, timeout=DEADLINE, resolver=dns)
    took = time.monotonic() - started

    assert DEADLINE - 0.05 < took < DEADLINE + 1.5, took
    assert not isinstance(failed.value, CallbackRefused)
    assert str(failed.value) == (
        f"POST to {scheme}://hooks.example:{receiver.port}: no answer within 1 s"
        " (the deadline for connecting, sending and the response headers)"
    )
    assert isinstance(failed.value.__context__, exceeded)
    [got] = receiver.got
    if scheme == "https":  # the TLS server name is still the URL's host, not the address
        assert b"hooks.example" in got
    elif "headers" in how:  # the request went out whole, to the pinned address
        assert got.startswith(f"POST /h/{TOKEN}?token={TOKEN} HTTP/1.1\r\n".encode())
        assert f"\r\nHost: hooks.example:{receiver.port}\r\n".encode() in got
    else:  # the client was still writing when the deadline passed
        assert len(got) < PADDING
    if "request" not in how:  # (the kernel drains an abandoned request on its own)
        for _ in range(100):
            if receiver.held:
                break
            time.sleep(0.02)
        assert receiver.held and receiver.held[0] < DEADLINE + 1.5, receiver.held


def test_a_slow_answer_that_ends_within_the_deadline_is_delivered(
    drip: Callable[..., Drip],
) -> None:
    """The deadline counts the whole exchange, not each read: an answer dripped over about
    half of it is taken."""
    receiver = drip(b"HTTP/1.1 204 No Content\r\n\r\n", every=0.03)
    dns = FakeDNS({"hooks.example": ["127.0.0.1"]})
    started = time.monotonic()
    deliver(
        f"http://hooks.example:{receiver.port}/h",
        {"a": 1},
        allow=LOOPBACK,
        timeout=3.0,
        resolver=dns,
    )
    assert 0.5 < time.monotonic() - started < 3.0
    [got] = receiver.got
    assert got.startswith(b"POST /h HTTP/1.1\r\n") and got.endswith(b'\r\n\r\n{"a":1}')
    assert f"\r\nHost: hooks.example:{receiver.port}\r\n".encode() in got


def read_request(sock: socket.socket) -> bytes:
    """One HTTP request, headers and its Content-Length of body (they may come apart)."""
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = sock.recv(65536)
        if not chunk:
            return got
        got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    while length is not None and len(body) < int(length.group(1)):
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_is_verified_for_the_urls_host_at_the_pinned_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the deadline's sockets, TLS is as before: the certificate is verified, for
    the URL's host name (sent as SNI), while the connection goes to the checked address."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "1", "-subj", "/CN=hooks.example", "-addext",
         "subjectAltName=DNS:hooks.example", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    names: list[str | None] = []
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)

    def heard(_sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
        names.append(name)

    served.sni_callback = heard
    listener = socket.create_server(("127.0.0.1", 0))
    port = int(listener.getsockname()[1])

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                with served.wrap_socket(conn, server_side=True) as tls:
                    tls.settimeout(5)
                    read_request(tls)  # whole: closing with unread bytes resets the client
                    tls.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
            except OSError:
                pass

    threading.Thread(target=serve, daemon=True).start()
    dns = FakeDNS({"hooks.example": ["127.0.0.1"]})
    url = f"https://hooks.example:{port}/h?token={TOKEN}"
    try:
        # The system's CAs do not know this certificate: refused, as ever (retried).
        with pytest.raises(CallbackError, match="CERTIFICATE_VERIFY_FAILED") as failed:
            deliver(url, {}, allow=LOOPBACK, timeout=5.0, resolver=dns)
        assert TOKEN not in str(failed.value)
        # Trusted, it is verified for hooks.example although reached at 127.0.0.1. (The
        # delivery's transport takes its context from ``httpx.create_ssl_context``.)
        trusting = ssl.create_default_context(cafile=str(cert))
        monkeypatch.setattr(httpx, "create_ssl_context", lambda **_: trusting)
        deliver(url, {}, allow=LOOPBACK, timeout=5.0, resolver=dns)
    finally:
        listener.close()
    assert names == ["hooks.example", "hooks.example"]


def test_a_receiver_that_is_not_listening_fails_at_once(drip: Callable[..., Drip]) -> None:
    receiver = drip()
    receiver.close()
    started = time.monotonic()
    with pytest.raises(CallbackError, match=rf"^POST to http://127\.0\.0\.1:{receiver.port}: "):
        deliver(f"http://127.0.0.1:{receiver.port}/h?token={TOKEN}", {}, allow=LOOPBACK)
    assert time.monotonic() - started < 1.0


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
