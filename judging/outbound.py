"""Where judges and generators may send requests: checked when saved, before every run and on every connection.

A base URL must be http(s), carry no credentials, name a host on
``FUNNYBONE_JUDGE_URL_ALLOWLIST`` when that list is set, and every address its
host resolves to must be a public one. Loopback, private, link-local, shared
(carrier-grade NAT), multicast, reserved and unspecified addresses are refused
unless they fall in a network the operator listed in
``FUNNYBONE_OUTBOUND_ALLOW_NETWORKS`` (``make run`` lists loopback, so a local
llama.cpp or Ollama keeps working). IPv4 written as one number, in hex or in
octal (``http://2852039166/``) and IPv6 forms that carry an IPv4 address
(``::ffff:a.b.c.d``, 6to4, Teredo, NAT64) are judged by the IPv4 address they
reach.

DNS rebinding: ``GuardedBackend`` is the network backend of the HTTP client
the OpenAI SDK uses. It resolves the host itself, checks every address, and
connects to a checked address (TLS still verifies the certificate against the
host name), so a name cannot answer a public address to the check and a
private one to the connection. Pooled connections were checked when opened.
The client follows no redirects and ignores HTTP(S)_PROXY, so no request
leaves for a host that was not checked.
"""

import contextlib
import ipaddress
import re
import socket
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import urlsplit

import httpcore2
import httpx2
import openai
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

DEFAULT_PORTS = {"http": 80, "https": 443}
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
# Spellings inet_aton reads as IPv4 (decimal, hex, octal, fewer than four parts) but ipaddress does not.
_NUMERIC_HOST = re.compile(r"^[0-9a-fA-FxX.]+$")


class OutboundRefused(Exception):
    """A call this server will not make; the message says why and is safe to show."""


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"FUNNYBONE_OUTBOUND_ALLOW_NETWORKS: {entry!r} is not an address or network (e.g. 127.0.0.0/8)."
            ) from None
    return tuple(networks)


def allowed_networks():
    return _networks(tuple(e for e in settings.FUNNYBONE_OUTBOUND_ALLOW_NETWORKS if e.strip()))


def reached_address(ip: Address) -> Address:
    """The address a packet to ``ip`` ends up at: IPv6 forms that embed an IPv4 address give that address."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped:
            return ip.ipv4_mapped
        if ip.sixtofour:
            return ip.sixtofour
        if ip.teredo:
            return ip.teredo[1]
        if any(ip in net for net in _NAT64):
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def address_kind(ip: Address) -> str:
    """What kind of non-public address ``ip`` reaches ("a link-local address"); "" when it is public."""
    reached = reached_address(ip)
    # ::ffff:a.b.c.d is that IPv4 address; the other embedding forms must be public both ways.
    judged = (reached,) if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else (ip, reached)
    for test, kind in (
        ("is_unspecified", "an unspecified address"),
        ("is_loopback", "a loopback address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_private", "a private address"),
        ("is_reserved", "a reserved address"),
    ):
        if any(getattr(address, test) for address in judged):
            return kind
    if not all(address.is_global for address in judged):
        return "a non-public address"
    return ""


def address_problem(host: str, ip: Address, *, resolved: bool) -> str:
    """Why calls to ``ip`` (``host`` itself, or what it ``resolved`` to) are refused; "" when they are allowed."""
    kind = address_kind(ip)
    if not kind:
        return ""
    reached = reached_address(ip)
    if any(reached in net or ip in net for net in allowed_networks()):
        return ""
    shown = str(ip) if reached == ip else f"{ip} (which reaches {reached})"
    if resolved:
        subject = f"The endpoint's host {host} resolves to {shown}, {kind}"
    elif host.strip("[]") == str(ip):
        subject = f"The endpoint's address {shown} is {kind}"
    else:
        subject = f"The endpoint's host {host} is the address {shown}, {kind}"
    return (
        f"{subject}; this server does not call such addresses unless the administrator allows them in "
        "FUNNYBONE_OUTBOUND_ALLOW_NETWORKS."
    )


def _literal(host: str) -> Address | None:
    """``host`` as an IP address when it is one in any spelling (no DNS lookup), else None."""
    bare = host.strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if _NUMERIC_HOST.match(bare):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(bare))
        except OSError:
            return None
    return None


def _host_allowed(host: str, port: int) -> str:
    """Why ``host:port`` is off FUNNYBONE_JUDGE_URL_ALLOWLIST; "" when the list allows it (or is empty)."""
    allowed = {entry.strip().lower() for entry in settings.FUNNYBONE_JUDGE_URL_ALLOWLIST if entry.strip()}
    if not allowed:
        return ""
    netloc_host = f"[{host}]" if ":" in host else host
    # "host" allows any port on it; "host:port" only that port (80/443 when the URL names none).
    if {host, netloc_host, f"{host}:{port}", f"{netloc_host}:{port}"} & allowed:
        return ""
    return (
        f"The base URL's host {netloc_host}:{port} is not on this server's list of "
        f"allowed judge hosts ({', '.join(sorted(allowed))}); ask the administrator to add it to "
        "FUNNYBONE_JUDGE_URL_ALLOWLIST."
    )


def base_url_problem(url: str) -> str:
    """Why a judge or generator may not use ``url`` (without a DNS lookup); "" when it may."""
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        # urlsplit quietly drops CR, LF and tab, so "http://host/v1\r\nX-Header: y" passed and was stored as typed.
        return "The base URL must not contain spaces, line breaks, tabs or other control characters."
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed [IPv6 bracket
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "The base URL must be an http(s) address, e.g. http://127.0.0.1:8080/v1."
    if parts.username or parts.password:
        return "Put credentials in the API key, not in the base URL."
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        return "The base URL has an invalid port."
    host = (parts.hostname or "").lower()
    if not host or not host.isprintable() or any(ch.isspace() for ch in host):
        return "The base URL must name a host."
    refused = _host_allowed(host, port)
    if refused:
        return refused
    literal = _literal(host)
    return address_problem(host, literal, resolved=False) if literal is not None else ""


def resolve_checked(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, each checked; raises OutboundRefused if any is refused.

    A DNS failure is raised as socket.gaierror (the caller decides whether to try again)."""
    literal = _literal(host)
    if literal is not None:
        found: Iterable[Address] = [literal]
    else:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (UnicodeError, ValueError) as exc:  # a name no resolver takes: as good as unknown
            raise socket.gaierror(str(exc)) from None
        found = [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]
    addresses: list[Address] = list(dict.fromkeys(found))
    for ip in addresses:
        problem = address_problem(host, ip, resolved=literal is None)
        if problem:
            raise OutboundRefused(problem)
    return [str(ip) for ip in addresses]


def check_endpoint(url: str) -> None:
    """Before a run: the URL's rules and its host's current addresses. Raises OutboundRefused."""
    problem = base_url_problem(url)
    if problem:
        raise OutboundRefused(problem)
    parts = urlsplit(url)
    # Not resolvable now: each call's connection then fails (and is retried) on its own.
    with contextlib.suppress(socket.gaierror):
        resolve_checked((parts.hostname or "").lower(), parts.port or DEFAULT_PORTS[parts.scheme])


def cause_in(exc: BaseException, kinds: type[BaseException] | tuple[type[BaseException], ...]):
    """The first exception of ``kinds`` behind ``exc`` (the SDK wraps transport errors), if any."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, kinds):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def refusal_in(exc: BaseException) -> OutboundRefused | None:
    """The OutboundRefused behind ``exc``, if any."""
    return cause_in(exc, OutboundRefused)


def unreachable_in(exc: BaseException) -> str | None:
    """Why nothing answered at all, if the connection was refused or the host's name does not resolve."""
    cause = cause_in(exc, (ConnectionRefusedError, socket.gaierror))
    if cause is None:
        return None
    return "connection refused" if isinstance(cause, ConnectionRefusedError) else "the host name does not resolve"


class GuardedBackend(httpcore2.SyncBackend):
    """Connects only to checked addresses, resolving the host itself (see the module's doc)."""

    def connect_tcp(self, host: str, port: int, timeout=None, local_address=None, socket_options=None):
        try:
            addresses = resolve_checked(host, port)
        except socket.gaierror as exc:
            # Kept as the cause: the caller tells a name that does not resolve from other failures.
            raise httpcore2.ConnectError(f"cannot resolve {host}: {exc.strerror}") from exc
        failure: Exception = httpcore2.ConnectError(f"{host} has no address")
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        raise failure


def guarded_client(*, timeout: float, connections: int, socket_options: list) -> httpx2.Client:
    """The HTTP client for judge and generator calls: checked connections, no redirects, no proxies from the env."""
    transport = httpx2.HTTPTransport(
        limits=httpx2.Limits(max_connections=connections, max_keepalive_connections=connections),
        socket_options=socket_options,
        trust_env=False,
    )
    # httpx's transport takes no network backend; its pool hands this one to every connection it opens.
    transport._pool._network_backend = GuardedBackend()
    return openai.DefaultHttpxClient(transport=transport, timeout=timeout, follow_redirects=False, trust_env=False)


class FetchRefused(Exception):
    """A URL the outbound rules refuse, or whose answer is not a file we take; the message says why."""


def fetch_once(url: str, *, max_bytes: int, timeout: float = 30.0) -> bytes:
    """The body at ``url``, fetched under the same rules as a judge's calls (media named by URL at import).

    The URL must pass ``base_url_problem``; every connection goes to checked
    addresses only (``GuardedBackend``); no redirect is followed; the body is
    read up to ``max_bytes`` and refused beyond. FetchRefused says why, in words
    for the researcher.
    """
    problem = base_url_problem(url)
    if problem:
        raise FetchRefused(problem.replace("The base URL", "The address"))
    try:
        with (
            guarded_client(timeout=timeout, connections=1, socket_options=[]) as client,
            client.stream("GET", url, headers={"Accept": "image/*"}) as response,
        ):
            if response.status_code != 200:
                raise FetchRefused(f"the server answered HTTP {response.status_code} (redirects are not followed).")
            body = bytearray()
            for chunk in response.iter_bytes():
                body.extend(chunk)
                if len(body) > max_bytes:
                    raise FetchRefused(f"the file is larger than {max_bytes:,} bytes.")
            return bytes(body)
    except FetchRefused:
        raise
    except Exception as exc:
        refused = refusal_in(exc)
        if refused is not None:
            raise FetchRefused(str(refused)) from None
        raise FetchRefused(f"it could not be fetched ({unreachable_in(exc) or type(exc).__name__}).") from None
