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


def write_server_files(directory, name: str = "server", password: bytes | None = None) -> tuple[str, str]:
    """The server certificate chain and its key as PEM files in
    ``directory`` (the key encrypted PKCS#8 with ``password``); returns
    ``(certfile, keyfile)``."""
    from cryptography.hazmat.primitives import serialization

    cert = server_cert()
    certfile = directory / f"{name}.pem"
    keyfile = directory / f"{name}.key"
    cert.cert_chain_pems[0].write_to_path(str(certfile))
    for extra in cert.cert_chain_pems[1:]:
        extra.write_to_path(str(certfile), append=True)
    if password is None:
        cert.private_key_pem.write_to_path(str(keyfile))
    else:
        key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
        keyfile.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(password),
            )
        )
    return str(certfile), str(keyfile)


def write_ca_file(directory) -> str:
    path = directory / "ca.pem"
    authority().cert_pem.write_to_path(str(path))
    return str(path)


def other_key_file(directory) -> str:
    """A key that belongs to no certificate here (a cert/key mismatch)."""
    path = directory / "other.key"
    trustme.CA().issue_cert("localhost").private_key_pem.write_to_path(str(path))
    return str(path)
