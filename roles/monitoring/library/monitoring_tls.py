#!/usr/bin/python3
"""Ansible module (runs on the controller): the cluster's monitoring CA and one certificate per host.

Kept in ``dir`` beside the cluster's secrets file: ``ca.crt``/``ca.key`` made once and kept, and
``<host>.crt``/``<host>.key`` for every host, whose certificate names the host (DNS) and its management
address (IP) so Prometheus verifies ``<host>:<port>`` against the CA. A host certificate is issued again
only when it is missing, not signed by this CA, names other names or addresses, or expires within 30 days;
keys are never replaced. The folder is 0700 and every key 0600. Needs the ``cryptography`` package, which
ansible-core itself requires (run the task with the controller's ``ansible_playbook_python``), from 3.4 on: it
runs as well under a distribution's Python and its older cryptography (Debian 12's 38.0.4 has neither
``verify_directly_issued_by``, from 40, nor ``not_valid_after_utc``, from 42; issue 43 item 7), so it checks the
CA's signature and reads the expiry in ways every such version has.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ansible.module_utils.basic import AnsibleModule

if TYPE_CHECKING:  # imported where used, so that a controller without it gets the module's message
    from cryptography import x509

DOCUMENTATION = r"""
module: monitoring_tls
short_description: Create the monitoring CA and the hosts' certificates on the controller
description: Creates what is missing or stale; keeps the CA and every key once made.
options:
  dir:
    description: Folder for the CA and the certificates (created 0700).
    type: path
    required: true
  cluster:
    description: Cluster name, written into the CA's common name.
    type: str
    required: true
  hosts:
    description: Hosts to certify, host name -> management address.
    type: dict
    required: true
"""

CA_DAYS = 3650
HOST_DAYS = 825
RENEW_DAYS = 30


class TlsError(Exception):
    pass


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)  # datetime.UTC (3.11) is this object


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` with ``mode`` from the first byte (the key is never readable by others, not even briefly)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _cert_numbers(cert: x509.Certificate) -> object:
    """The public numbers of the certificate's key, to compare with its private key's. cryptography types that key
    as any certificate key type, some without numbers (Ed25519, X25519, ML-DSA); this module makes only P-256 keys,
    and a certificate of a type without numbers raises AttributeError here, as it always has."""
    public: Any = cert.public_key()
    return public.public_numbers()


def _key(path: Path) -> tuple[Any, bool]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    if path.exists():
        os.chmod(path, 0o600)
        return serialization.load_pem_private_key(path.read_bytes(), password=None), False
    key = ec.generate_private_key(ec.SECP256R1())
    _write(path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()), 0o600)
    return key, True


def _ca(folder: Path, cluster: str) -> tuple[Any, Any, bool]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    key, made = _key(folder / "ca.key")
    crt = folder / "ca.crt"
    if crt.exists() and not made:
        cert = x509.load_pem_x509_certificate(crt.read_bytes())
        if _cert_numbers(cert) != key.public_key().public_numbers():
            raise TlsError(f"{crt} does not belong to {folder / 'ca.key'}; restore the pair or remove both")
        return key, cert, False
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"clustersmith monitoring CA {cluster}")])
    now = _now()
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    _write(crt, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return key, cert, True


def _issued_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    """Whether ``ca`` signed ``cert``: its issuer is the CA's subject and the CA's P-256 key verifies its ECDSA
    signature over the to-be-signed part (what ``verify_directly_issued_by`` checks, in calls cryptography 3.4
    has)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import ec

    public: Any = ca.public_key()
    if cert.issuer != ca.subject or not isinstance(public, ec.EllipticCurvePublicKey):
        return False
    if cert.signature_hash_algorithm is None:
        return False
    try:
        public.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))
    except (InvalidSignature, ValueError, TypeError):  # another CA's, or another key type
        return False
    return True


def _expires(cert: x509.Certificate) -> datetime.datetime:
    """The certificate's notAfter as an aware UTC time (``not_valid_after_utc`` is cryptography 42's; before it,
    ``not_valid_after`` is the same time, naive)."""
    after = getattr(cert, "not_valid_after_utc", None)
    return after if after is not None else cert.not_valid_after.replace(tzinfo=datetime.timezone.utc)


def _fresh(path: Path, ca: Any, key: Any, names: list[str], addresses: list[str]) -> bool:
    """True when the certificate at ``path`` is this CA's, for this key, these names, and not about to expire."""
    from cryptography import x509

    if not path.exists():
        return False
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    if not _issued_by(cert, ca):
        return False
    if _cert_numbers(cert) != key.public_key().public_numbers():
        return False
    if _expires(cert) - _now() < datetime.timedelta(days=RENEW_DAYS):
        return False
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return (sorted(san.get_values_for_type(x509.DNSName)) == sorted(names)
            and sorted(str(a) for a in san.get_values_for_type(x509.IPAddress)) == sorted(addresses))


def _host(folder: Path, ca_key: Any, ca: Any, name: str, address: str) -> bool:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key, made = _key(folder / f"{name}.key")
    crt = folder / f"{name}.crt"
    if not made and _fresh(crt, ca, key, [name], [address]):
        return False
    now = _now()
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=HOST_DAYS))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name),
                                                        x509.IPAddress(ipaddress.ip_address(address))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    _write(crt, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return True


def ensure(folder: Path, cluster: str, hosts: dict[str, str]) -> list[str]:
    """Create what is missing or stale; the names of the files written."""
    for name, address in hosts.items():
        if not name or "/" in name or name.startswith(".") or name == "ca":
            raise TlsError(f"hosts: {name!r} is not a usable host name")
        try:
            ipaddress.ip_address(address or "")
        except ValueError:
            raise TlsError(f"hosts: {name} has address {address!r}; expected an IP address") from None
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    written = []
    ca_key, ca, made = _ca(folder, cluster)
    if made:
        written.append("ca.crt")
    for name, address in sorted(hosts.items()):
        if _host(folder, ca_key, ca, name, address):
            written.append(f"{name}.crt")
    return written


def main() -> None:
    module = AnsibleModule(argument_spec={
        "dir": {"type": "path", "required": True}, "cluster": {"type": "str", "required": True},
        "hosts": {"type": "dict", "required": True}}, supports_check_mode=False)
    try:
        written = ensure(Path(module.params["dir"]), module.params["cluster"], module.params["hosts"])
    except ImportError as exc:
        module.fail_json(msg=f"monitoring_tls needs the cryptography package in the controller's Python ({exc})")
    except TlsError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=bool(written), written=written, dir=module.params["dir"])


if __name__ == "__main__":
    main()
