"""Mutual TLS: client certificates verified against ``--ssl-ca-certs``
(``--ssl-cert-reqs`` 1 optional, 2 required), with expired, untrusted and
revoked (``--ssl-crl``) certificates refused in the handshake."""

from __future__ import annotations

import ssl

import pytest

from tls_support import assert_handshake_fails, client_context, get_info, https_get


def mtls(tls_files, reqs: int, **extra) -> dict:
    return {"ssl_ca_certs": tls_files.ca, "ssl_cert_reqs": reqs, **extra}


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["tls1.2", "tls1.3"])
def test_valid_client_certificate_is_served(tls_server, tls_files, version):
    srv = tls_server(**mtls(tls_files, 2))
    context = client_context(tls_files, version=version, cert=tls_files.client, key=tls_files.client_key)
    assert https_get(srv.port, context)[::2] == (200, b"hello")


@pytest.mark.ferroloop_only
def test_client_cert_name_in_scope(tls_server, tls_files):
    srv = tls_server(**mtls(tls_files, 2))
    info = get_info(srv.port, client_context(tls_files, cert=tls_files.client, key=tls_files.client_key))
    tls = info["tls"]
    assert tls["client_cert_chain"] >= 1
    assert tls["client_leaf_pem"].startswith("-----BEGIN CERTIFICATE-----")
    name = tls["client_cert_name"]
    assert "CN=test client" in name and "O=ferroloop" in name, name
    assert tls["client_cert_error"] is None


def test_missing_client_certificate_required(tls_server, tls_files):
    srv = tls_server(**mtls(tls_files, 2))
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        assert_handshake_fails(srv.port, client_context(tls_files, version=version))
    assert srv.error_lines() == []


def test_missing_client_certificate_optional(tls_server, tls_files):
    srv = tls_server(**mtls(tls_files, 1))
    assert https_get(srv.port, client_context(tls_files))[2] == b"hello"
    # A valid one is still taken.
    assert https_get(srv.port, client_context(tls_files, cert=tls_files.client, key=tls_files.client_key))[2] == b"hello"


@pytest.mark.parametrize("reqs", [1, 2])
@pytest.mark.parametrize("which", ["rogue_client", "expired"])
def test_bad_client_certificate_fails(tls_server, tls_files, reqs, which):
    srv = tls_server(**mtls(tls_files, reqs))
    cert, key = getattr(tls_files, which), getattr(tls_files, f"{which}_key")
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        assert_handshake_fails(srv.port, client_context(tls_files, version=version, cert=cert, key=key))
    # The server goes on serving good clients.
    assert https_get(srv.port, client_context(tls_files, cert=tls_files.client, key=tls_files.client_key))[2] == b"hello"
    assert srv.error_lines() == []


@pytest.mark.ferroloop_only
def test_revoked_client_certificate_fails(tls_server, tls_files):
    srv = tls_server(**mtls(tls_files, 2, ssl_crl=[tls_files.crl]))
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        assert_handshake_fails(
            srv.port, client_context(tls_files, version=version, cert=tls_files.revoked, key=tls_files.revoked_key)
        )
    # Certificates the CRL does not list pass.
    assert https_get(srv.port, client_context(tls_files, cert=tls_files.client, key=tls_files.client_key))[2] == b"hello"
    assert srv.error_lines() == []
