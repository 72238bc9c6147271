"""Certificates made at test time with trustme.

Two uses, one writer: the SSL contexts of the loop-API TLS tests
(tests/test_tls.py: a CA, a server and a client certificate, in memory),
and ``write_tls_files``, the one writer of PEM files for a TLS server
under test (tests/tls)."""

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


# --------------------------------------------------------------------------
# PEM files for a TLS server under test (tests/tls): every certificate,
# key format and CRL its settings take, written to one directory. The
# settings tests (good and bad files) use these too.


class TlsFiles:
    """Paths of PEM files in ``directory`` (see ``write_tls_files``).

    ``ca`` signs ``server`` (localhost, 127.0.0.1, ::1; ECDSA), ``rsa``
    (the same names, RSA 2048), ``other`` (``other.test``, for SNI) and
    the client certificates ``client`` (valid), ``expired`` and
    ``revoked`` (listed by ``crl``). ``rogue_ca`` signs ``rogue_client``
    and is trusted by nobody. Keys: ``*_key`` PKCS#8; ``rsa_pkcs1_key``,
    ``server_sec1_key``, ``server_enc_key`` (encrypted PKCS#8 with
    ``PASSWORD``) and ``server_legacy_key`` (``Proc-Type: 4,ENCRYPTED``).
    """

    PASSWORD = "s3cret"

    def __init__(self, directory) -> None:
        from pathlib import Path

        self.dir = Path(directory)

    def __getattr__(self, name: str):
        return str(self.dir / f"{name}.pem")


def _key_pem(leaf: trustme.LeafCert, fmt, encryption=None) -> bytes:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    return key.private_bytes(
        serialization.Encoding.PEM, fmt, encryption or serialization.NoEncryption()
    )


def _crl_pem(ca: trustme.CA, revoked: list[trustme.LeafCert]) -> bytes:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization

    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.bytes())
    ca_key = serialization.load_pem_private_key(ca.private_key_pem.bytes(), password=None)
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(ca_cert.subject)
        .last_update(now - datetime.timedelta(days=1))
        .next_update(now + datetime.timedelta(days=30))
        # webpki (rustls) requires the CRL number, as RFC 5280 §5.2.3 does.
        .add_extension(x509.CRLNumber(1), critical=False)
    )
    for leaf in revoked:
        cert = x509.load_pem_x509_certificate(leaf.cert_chain_pems[0].bytes())
        builder = builder.add_revoked_certificate(
            x509.RevokedCertificateBuilder()
            .serial_number(cert.serial_number)
            .revocation_date(now - datetime.timedelta(hours=1))
            .build()
        )
    return builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def write_tls_files(directory) -> TlsFiles:
    """Generate every certificate, key and CRL of ``TlsFiles`` into
    ``directory`` (a fresh CA per call); returns the paths."""
    import datetime

    from cryptography.hazmat.primitives import serialization

    files = TlsFiles(directory)
    files.dir.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="ferroloop test CA")
    rogue_ca = trustme.CA(organization_name="untrusted CA")
    now = datetime.datetime.now(datetime.timezone.utc)
    leaves = {
        "server": ca.issue_cert("localhost", "127.0.0.1", "::1"),
        "rsa": ca.issue_cert("localhost", "127.0.0.1", "::1", key_type=trustme.KeyType.RSA),
        "other": ca.issue_cert("other.test", common_name="other.test"),
        "client": ca.issue_cert("client@example.org", common_name="test client", organization_name="ferroloop"),
        "expired": ca.issue_cert(
            "expired@example.org",
            common_name="expired client",
            not_before=now - datetime.timedelta(days=30),
            not_after=now - datetime.timedelta(days=1),
        ),
        "revoked": ca.issue_cert("revoked@example.org", common_name="revoked client"),
        "rogue_client": rogue_ca.issue_cert("rogue@example.org", common_name="rogue client"),
    }

    def write(name: str, data: bytes) -> None:
        (files.dir / f"{name}.pem").write_bytes(data)

    write("ca", ca.cert_pem.bytes())
    write("rogue_ca", rogue_ca.cert_pem.bytes())
    for name, leaf in leaves.items():
        write(name, b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        write(f"{name}_key", _key_pem(leaf, serialization.PrivateFormat.PKCS8))
    pkcs8, legacy = serialization.PrivateFormat.PKCS8, serialization.PrivateFormat.TraditionalOpenSSL
    password = serialization.BestAvailableEncryption(TlsFiles.PASSWORD.encode())
    write("rsa_pkcs1_key", _key_pem(leaves["rsa"], legacy))  # BEGIN RSA PRIVATE KEY
    write("server_sec1_key", _key_pem(leaves["server"], legacy))  # BEGIN EC PRIVATE KEY
    write("server_enc_key", _key_pem(leaves["server"], pkcs8, password))  # BEGIN ENCRYPTED PRIVATE KEY
    write("server_legacy_key", _key_pem(leaves["server"], legacy, password))  # Proc-Type: 4,ENCRYPTED
    write("crl", _crl_pem(ca, [leaves["revoked"]]))
    return files
