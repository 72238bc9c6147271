"""Certificates made at test time with trustme: a CA, a server certificate
for ``localhost``/``127.0.0.1`` and a client certificate, and the SSL
contexts built from them."""

from __future__ import annotations

import functools
import ssl

import trustme


@functools.lru_cache(maxsize=None)
def authority() -> trustme.CA:
    return trustme.CA()


@functools.lru_cache(maxsize=None)
def server_cert() -> trustme.LeafCert:
    return authority().issue_cert("localhost", "127.0.0.1", "::1")


@functools.lru_cache(maxsize=None)
def client_cert() -> trustme.LeafCert:
    return authority().issue_cert("client@example.org", common_name="test client")


def server_context(require_client_cert: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_cert().configure_cert(context)
    if require_client_cert:
        context.verify_mode = ssl.CERT_REQUIRED
        authority().configure_trust(context)
    return context


def client_context(with_cert: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    authority().configure_trust(context)
    if with_cert:
        client_cert().configure_cert(context)
    return context


def untrusting_client_context() -> ssl.SSLContext:
    """Verifies, but trusts a different CA than the one that signed the server."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    trustme.CA().configure_trust(context)
    return context
