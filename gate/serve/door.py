"""The front door of every local server review-gate runs: ``serve`` and ``demo --serve``.

A web page in a browser can send requests to 127.0.0.1 (a form post, ``fetch``), and a
DNS name can be made to point at 127.0.0.1 after the page loaded (DNS rebinding). Both
are refused here, before anything else is read:

* a ``Host`` that is not one of the loopback names or a configured one (a rebound name
  carries the attacker's host name), a missing ``Host``, or two of them: refused;
* any ``Origin`` header (a browser sends one with every cross-origin request and every
  POST; the gate's client never does), and a ``Sec-Fetch-Site`` other than ``none``;
* a body without ``Content-Length`` (chunked uploads are not read), two lengths, or one
  over the limit: 411, 400, 413, before a byte of the body is read.

:func:`check` is pure: the header pairs as received in, a :class:`Refusal` or None out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


@dataclass(frozen=True)
class Door:
    """What the door lets in: the ``Host`` names and the largest body."""

    max_body_bytes: int
    hosts: frozenset[str] = LOOPBACK_NAMES

    @classmethod
    def of(cls, max_body_bytes: int, extra_hosts: Iterable[str] = ()) -> Door:
        names = {name.strip().lower().strip("[]") for name in extra_hosts if name.strip()}
        return cls(max_body_bytes=max_body_bytes, hosts=LOOPBACK_NAMES | names)


@dataclass(frozen=True)
class Refusal:
    """An answer given instead of the service: status, stable reason, one line."""

    status: int
    reason: str
    message: str


def host_name(value: str) -> str:
    """The name of a ``Host`` value, without its port, lower-case (``[::1]:80`` is ``::1``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def check(door: Door, method: str, headers: Iterable[tuple[str, str]]) -> Refusal | None:
    """Why the request with these headers is refused at the door, or None."""
    seen: dict[str, list[str]] = {}
    for name, value in headers:
        seen.setdefault(name.strip().lower(), []).append(value)
    hosts = seen.get("host", [])
    if len(hosts) != 1:
        return Refusal(400, "bad_host", "a request must carry exactly one Host header")
    if host_name(hosts[0]) not in door.hosts:
        return Refusal(
            403,  # an outage to the gate (its base_url names a host not allowed), not a diff's end
            "host_refused",
            "this Host is not served here (a browser's rebound DNS name is refused); the "
            "operator allows a name with --allow-host",
        )
    if "origin" in seen:
        return Refusal(403, "origin_refused", "requests from a web page (Origin) are refused")
    if any(site.strip().lower() != "none" for site in seen.get("sec-fetch-site", [])):
        return Refusal(403, "origin_refused", "requests from a web page are refused")
    if method != "POST":
        return None
    return _length(door, seen)


def _length(door: Door, seen: dict[str, list[str]]) -> Refusal | None:
    if "transfer-encoding" in seen:
        return Refusal(411, "length_required", "send the body with Content-Length, not chunked")
    lengths = seen.get("content-length", [])
    if not lengths:
        return Refusal(411, "length_required", "a request body needs a Content-Length")
    if len(lengths) != 1 or not lengths[0].strip().isdigit() or not lengths[0].isascii():
        return Refusal(400, "bad_length", "one Content-Length of decimal digits")
    if int(lengths[0]) > door.max_body_bytes:
        return Refusal(
            413,
            "body_too_large",
            f"the request body of {int(lengths[0])} bytes is over the limit of "
            f"{door.max_body_bytes} (--max-body-bytes); lower max_diff_bytes or split the change",
        )
    return None
