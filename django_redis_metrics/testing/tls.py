"""A throwaway redis-server that speaks only TLS, with a certificate authority of its own and
ACL users, for tests of ``rediss://`` deployments.

The certificates are made with the ``openssl`` command: a self-signed CA and a server
certificate for 127.0.0.1 (as an IP subject alternative name, so that clients check the host
name as they do in production).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import redis

from .server import RedisServer

#: The password of the ``default`` user, which the tests use to look at the server.
ADMIN_PASSWORD = "admin-password"


@dataclass(frozen=True)
class Certificates:
    """A CA and a server certificate signed by it, as PEM files."""

    ca: Path
    certificate: Path
    key: Path


def openssl_available() -> bool:
    return shutil.which("openssl") is not None


def make_certificates(directory: Path, days: int = 2) -> Certificates:
    """A self-signed CA and a certificate for 127.0.0.1 signed by it, in ``directory``."""
    ca, ca_key = directory / "ca.pem", directory / "ca.key"
    certificate, key = directory / "server.pem", directory / "server.key"
    request, extensions = directory / "server.csr", directory / "server.ext"
    # What strict verification (Python 3.13's default VERIFY_X509_STRICT) asks of a chain: a
    # CA marked as one, and a leaf naming its issuer's key and what it may be used for.
    extensions.write_text(
        "subjectAltName = IP:127.0.0.1\n"
        "basicConstraints = critical, CA:FALSE\n"
        "keyUsage = critical, digitalSignature, keyEncipherment\n"
        "extendedKeyUsage = serverAuth\n"
        "subjectKeyIdentifier = hash\n"
        "authorityKeyIdentifier = keyid, issuer\n"
    )

    def openssl(*args: str | Path) -> None:
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
            "-days", str(days), "-subj", "/CN=django-redis-metrics test CA",
            "-addext", "basicConstraints = critical, CA:TRUE",
            "-addext", "keyUsage = critical, keyCertSign, cRLSign")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", request,
            "-subj", "/CN=127.0.0.1")  # fmt: skip
    openssl("x509", "-req", "-in", request, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
            "-out", certificate, "-days", str(days), "-extfile", extensions)  # fmt: skip
    return Certificates(ca, certificate, key)


class TLSRedisServer(RedisServer):
    """A redis-server with no plain port, TLS on a free one, ``users`` (ACL rules, each like
    ``"metrics on >pw ~metrics:* ..."``) besides a ``default`` user with ``ADMIN_PASSWORD``.
    Clients need not present a certificate."""

    def __init__(self, certificates: Certificates, users: Sequence[str] = ()) -> None:
        options = ["--port", "0", "--tls-auth-clients", "no"]
        options += ["--tls-cert-file", str(certificates.certificate)]
        options += ["--tls-key-file", str(certificates.key)]
        options += ["--tls-ca-cert-file", str(certificates.ca)]
        for user in [f"default on >{ADMIN_PASSWORD} ~* &* +@all", *users]:
            options += ["--user", *user.split()]  # redis-server joins them into one line
        super().__init__(options=options)
        self.certificates = certificates
        self.options = (*self.options, "--tls-port", str(self.port))

    def url_for(self, username: str, password: str) -> str:
        """The ``rediss://`` URL of database 0 for this user, trusting the test CA."""
        credentials = f"{quote(username, safe='')}:{quote(password, safe='')}"
        return (
            f"rediss://{credentials}@127.0.0.1:{self.port}/0"
            f"?ssl_ca_certs={quote(str(self.certificates.ca))}"
        )

    @property
    def url(self) -> str:
        return self.url_for("default", ADMIN_PASSWORD)

    def client(self) -> redis.Redis:
        """A client of the ``default`` user, over TLS."""
        return redis.Redis.from_url(self.url)
