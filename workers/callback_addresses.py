"""Which addresses a callback may reach: public ones, and what the operator allow-lists.

A job's ``callback_url`` is chosen by whoever submits the job, and the worker that POSTs
to it sits inside the deployment: without a check it would call the cloud metadata
service (``169.254.169.254``), Redis on loopback or any private host for them (SSRF).
So the host is resolved once, *every* address it resolves to is checked (``forbidden``
names the class of a refused one), and the POST goes to the checked address
(``Target.pinned_url``, with the original ``Host`` header and TLS server name), so a
second DNS answer cannot swap in another one (DNS rebinding). Spellings such as
``2130706433``, ``0x7f.1`` or ``[::ffff:127.0.0.1]`` are caught because the check runs
on what the resolver returns, and IPv4 embedded in IPv6 (mapped, NAT64, 6to4) is
checked as the IPv4 address it reaches.

``CONTINUUM_CALLBACK_ALLOW`` (``AllowList``) lists hosts (``hooks.internal``,
``*.internal``) and networks (``10.1.0.0/16``, ``127.0.0.1``, ``::1``) a callback may
reach even though they are not public.

Errors (``workers.errors``): ``AddressRefused`` (never retried) and ``Unresolved`` (the
name did not resolve; retried).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import httpx

from workers.errors import AddressRefused, Unresolved

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
#: ``resolve(host, port)``: the addresses a host name stands for, as strings.
Resolver = Callable[[str, int], Sequence[str]]

SETTING: Final = "CONTINUUM_CALLBACK_ALLOW"


def _nets(*pairs: tuple[str, str]) -> tuple[tuple[IPNetwork, str], ...]:
    return tuple((ipaddress.ip_network(net), reason) for net, reason in pairs)


# The address classes a callback never reaches unless allow-listed, most specific first.
# IPv4 embedded in IPv6 (mapped, NAT64, 6to4) is unwrapped before this table is read.
FORBIDDEN: Final = _nets(
    ("0.0.0.0/8", "an unspecified ('this network') address"),
    ("10.0.0.0/8", "a private address"),
    ("100.64.0.0/10", "a shared (carrier-grade NAT) address"),
    ("127.0.0.0/8", "a loopback address"),
    ("169.254.0.0/16", "a link-local address (cloud metadata lives here)"),
    ("172.16.0.0/12", "a private address"),
    ("192.0.0.0/24", "an IETF protocol assignment"),
    ("192.0.2.0/24", "a documentation address"),
    ("192.88.99.0/24", "a 6to4 relay address"),
    ("192.168.0.0/16", "a private address"),
    ("198.18.0.0/15", "a benchmarking address"),
    ("198.51.100.0/24", "a documentation address"),
    ("203.0.113.0/24", "a documentation address"),
    ("224.0.0.0/4", "a multicast address"),
    ("255.255.255.255/32", "the broadcast address"),
    ("240.0.0.0/4", "a reserved address"),
    ("::/128", "an unspecified address"),
    ("::1/128", "a loopback address"),
    ("64:ff9b:1::/48", "a local-use NAT64 address"),
    ("::/8", "a reserved address (IPv4-compatible)"),
    ("100::/64", "a discard-only address"),
    ("2001:db8::/32", "a documentation address"),
    ("2001::/23", "an IETF protocol assignment (Teredo and others)"),
    ("3fff::/20", "a documentation address"),
    ("fc00::/7", "a unique-local (private) address"),
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a site-local address"),
    ("ff00::/8", "a multicast address"),
)
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?")


def reached(ip: IPAddress) -> IPAddress:
    """The address a packet to ``ip`` ends up at: the IPv4 address inside an IPv4-mapped,
    NAT64 (well-known prefix) or 6to4 IPv6 address, else ``ip`` itself."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if ip.sixtofour is not None:
            return ip.sixtofour
    return ip


def forbidden(ip: IPAddress) -> str | None:
    """What ``ip`` is when a callback must not reach it ("a loopback address"), else None."""
    inner = reached(ip)
    for net, reason in FORBIDDEN:
        if inner.version == net.version and inner in net:
            return reason
    if not inner.is_global:  # whatever a newer registry adds
        return "not a public address"
    return None


@dataclass(frozen=True)
class AllowList:
    """Hosts and networks a callback may reach although they are not public."""

    hosts: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> AllowList:
        """``"127.0.0.1, 10.0.0.0/8, hooks.internal, *.corp.example"``; ``ValueError``
        naming an entry that is neither a network nor a host name."""
        hosts: set[str] = set()
        suffixes: list[str] = []
        networks: list[IPNetwork] = []
        for raw in (text or "").split(","):
            entry = raw.strip().lower().rstrip(".")
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            name = entry.removeprefix("*.")
            if not all(_LABEL.fullmatch(label) for label in name.split(".")):
                raise ValueError(f"{SETTING}: {raw.strip()!r} is neither a network nor a host")
            if entry.startswith("*."):
                suffixes.append("." + name)
            else:
                hosts.add(name)
        return cls(frozenset(hosts), tuple(suffixes), tuple(networks))

    def names(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return host in self.hosts or host.endswith(self.suffixes)

    def holds(self, ip: IPAddress) -> bool:
        candidates = {ip, reached(ip)}
        return any(c.version == n.version and c in n for c in candidates for n in self.networks)


@dataclass(frozen=True)
class Target:
    """Where a callback goes: the checked address, and the names the receiver expects."""

    url: httpx.URL
    address: IPAddress

    @property
    def host(self) -> str:
        """The URL's host as sent on the wire (IDNA-encoded; no brackets)."""
        return self.url.raw_host.decode("ascii")

    @property
    def host_header(self) -> str:
        port = self.url.port
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if port is None else f"{host}:{port}"

    @property
    def pinned_url(self) -> httpx.URL:
        """The URL with its host replaced by the checked address (no DNS is done again)."""
        return self.url.copy_with(host=str(self.address))

    @property
    def extensions(self) -> dict[str, str]:
        """TLS is negotiated (and the certificate verified) for the URL's host name."""
        return {"sni_hostname": self.host} if self.url.scheme == "https" else {}


def host_name_or_ip(host: str) -> bool:
    """Whether ``host`` (a URL's host as sent: IDNA-encoded, no brackets) is an IP literal
    or a DNS name: labels of letters, digits, hyphens (not at either end) and underscores
    (receivers use them in names), 63 characters at most, 253 in all, a trailing dot
    allowed. Anything else (a backslash, ``%``, a space) is where URL parsers disagree on
    where the host ends, and may be a path (a token) read as a host."""
    if ":" in host:
        if "%" in host:  # a zone ID: no callback reaches a link-local address anyway
            return False
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return False
        return True
    name = host.lower().removesuffix(".")
    return 0 < len(name) <= 253 and all(
        len(label) <= 63 and _LABEL.fullmatch(label) for label in name.split(".")
    )


def origin(url: str | httpx.URL) -> str:
    """``scheme://host[:port]``: how a callback URL is named in messages and logs (its
    path, query, fragment and user info may carry a token: never shown). A URL whose
    host is neither a DNS name nor an IP literal is "(an invalid URL)": httpx reads
    ``https://h.example\\path\\token`` as a host, token included."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return "(an invalid URL)"
    host = parsed.raw_host.decode("ascii", "replace")
    if host and not host_name_or_ip(host):
        return "(an invalid URL)"
    host = f"[{host}]" if ":" in host else host
    port = f":{parsed.port}" if parsed.port is not None else ""
    return f"{parsed.scheme}://{host}{port}"


def resolve(host: str, port: int) -> list[str]:
    """The system resolver's addresses for ``host`` (a literal IP in any spelling the C
    library accepts comes back in its canonical form)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise Unresolved(f"{host} does not resolve: {exc}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def check(url: str, allow: AllowList, resolver: Resolver = resolve) -> Target:
    """The checked ``Target`` of a callback ``url``: ``AddressRefused`` when its scheme is not
    http(s) or any address its host resolves to is neither public nor allow-listed;
    ``Unresolved`` when the host does not resolve."""
    shown = origin(url)
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        raise AddressRefused("the callback URL is not a valid URL") from None
    if parsed.scheme not in {"http", "https"} or not parsed.raw_host:
        raise AddressRefused(
            f"callback to {shown} refused: only http(s) URLs with a host are called"
        )
    host = parsed.raw_host.decode("ascii", "replace")
    if not host_name_or_ip(host):
        raise AddressRefused("the callback URL's host is neither a DNS name nor an IP address")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    addresses = [ipaddress.ip_address(a) for a in resolver(host, port)]
    if not addresses:
        raise Unresolved(f"{host} resolves to no address")
    if not allow.names(host):
        for ip in addresses:
            reason = forbidden(ip)
            if reason is not None and not allow.holds(ip):
                inner = reached(ip)
                named = f"{ip} (IPv4 {inner})" if inner != ip else str(ip)
                raise AddressRefused(
                    f"callback to {shown} refused: {named} is {reason}"
                    f" (an operator may allow it with {SETTING})"
                )
    return Target(parsed, addresses[0])


__all__ = [
    "FORBIDDEN",
    "SETTING",
    "AllowList",
    "Target",
    "check",
    "forbidden",
    "host_name_or_ip",
    "origin",
    "reached",
    "resolve",
]
