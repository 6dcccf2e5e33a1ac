"""Bearer-token rules shared by every HTTP endpoint elastream serves: loopback is open, any
other address needs a token, and tokens are compared in constant time."""

from __future__ import annotations

import hmac
import ipaddress

LOOPBACK_NAMES = ("localhost",)


class InsecureBindError(ValueError):
    """An endpoint asked to listen beyond loopback without a token."""


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine (127.0.0.0/8, ::1, localhost)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_bind(host: str, token: str | None, what: str, option: str) -> None:
    """Refuse to serve `what` on a non-loopback `host` without a token (named by `option`)."""
    if not is_loopback(host) and not token:
        raise InsecureBindError(
            f"{what}: refusing to listen on {host} without a bearer token; set {option} "
            "(or bind 127.0.0.1)"
        )


def authorized(header: str | None, token: str | None) -> bool:
    """Whether an Authorization header carries `token` (always true when no token is set)."""
    if not token:
        return True
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)
