"""Proxy headers: X-Forwarded-For / X-Forwarded-Proto and RFC 7239
Forwarded, honoured only when the peer (127.0.0.1 here) is trusted."""

from __future__ import annotations

import httpx
import pytest

import apps


def scope_via(srv, headers):
    with httpx.Client() as client:
        response = client.get(f"{srv.url}/scope", headers=headers)
    assert response.status_code == 200
    return response.json()


XFF = {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https"}


@pytest.mark.parametrize(
    "allow", ["127.0.0.1", "*", "127.0.0.0/8", "10.1.2.3, 127.0.0.1", "192.0.2.0/24,127.0.0.1/32"]
)
def test_x_forwarded_headers_trusted(start_server, allow):
    srv = start_server(apps.app, forwarded_allow_ips=allow)
    scope = scope_via(srv, XFF)
    assert scope["client"][0] == "203.0.113.7"
    assert isinstance(scope["client"][1], int)
    assert scope["scheme"] == "https"


def test_x_forwarded_headers_trusted_by_default(start_server):
    """Defaults: proxy_headers=True, forwarded_allow_ips="127.0.0.1"."""
    srv = start_server(apps.app)
    scope = scope_via(srv, XFF)
    assert scope["client"][0] == "203.0.113.7"
    assert scope["scheme"] == "https"


@pytest.mark.parametrize("allow", ["10.0.0.1", "10.0.0.0/8", "192.0.2.1,198.51.100.0/24"])
def test_x_forwarded_headers_ignored_from_untrusted_peer(start_server, allow):
    srv = start_server(apps.app, forwarded_allow_ips=allow)
    with httpx.Client() as client:
        response = client.get(f"{srv.url}/scope", headers=XFF)
        scope = response.json()
    assert scope["client"][0] == "127.0.0.1"
    assert scope["client"][1] != 0
    assert scope["scheme"] == "http"


def test_proxy_headers_disabled(start_server):
    srv = start_server(apps.app, proxy_headers=False, forwarded_allow_ips="*")
    scope = scope_via(srv, {**XFF, "Forwarded": "for=198.51.100.4;proto=https"})
    assert scope["client"][0] == "127.0.0.1"
    assert scope["scheme"] == "http"


def test_x_forwarded_for_chain_through_trusted_proxies(start_server):
    """The client is the address before the trusted hops (same answer whether
    one walks from the right skipping trusted hosts or takes the leftmost)."""
    srv = start_server(apps.app, forwarded_allow_ips="127.0.0.1,10.0.0.2")
    scope = scope_via(srv, {"X-Forwarded-For": "203.0.113.7, 10.0.0.2"})
    assert scope["client"][0] == "203.0.113.7"


def test_x_forwarded_proto_only(start_server):
    srv = start_server(apps.app)
    scope = scope_via(srv, {"X-Forwarded-Proto": "https"})
    assert scope["scheme"] == "https"
    assert scope["client"][0] == "127.0.0.1"


def test_rfc7239_forwarded_trusted(start_server):
    srv = start_server(apps.app)
    scope = scope_via(srv, {"Forwarded": "for=203.0.113.9;proto=https"})
    assert scope["client"][0] == "203.0.113.9"
    assert scope["scheme"] == "https"


def test_rfc7239_forwarded_quoted_ipv6(start_server):
    srv = start_server(apps.app)
    scope = scope_via(srv, {"Forwarded": 'for="[2001:db8::1]:4711";proto=https'})
    assert scope["client"][0] == "2001:db8::1"
    assert scope["scheme"] == "https"


def test_rfc7239_forwarded_chain_through_trusted_proxies(start_server):
    srv = start_server(apps.app, forwarded_allow_ips="127.0.0.1,10.0.0.2")
    scope = scope_via(srv, {"Forwarded": "for=198.51.100.1;proto=https, for=10.0.0.2"})
    assert scope["client"][0] == "198.51.100.1"


def test_rfc7239_forwarded_ignored_from_untrusted_peer(start_server):
    srv = start_server(apps.app, forwarded_allow_ips="10.0.0.1")
    scope = scope_via(srv, {"Forwarded": "for=203.0.113.9;proto=https"})
    assert scope["client"][0] == "127.0.0.1"
    assert scope["scheme"] == "http"
