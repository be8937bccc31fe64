"""The service's signing key: made once (``review-gate serve --new-key PATH``), then read.

:func:`new_key` writes the private key (unencrypted PKCS#8 PEM) to ``PATH`` with mode
0600 and the public key (SubjectPublicKeyInfo PEM, what the gate is configured with) to
``PATH.pub``. Each file is written to a temporary file beside it, fsynced, and linked
into place (:func:`os.link` fails when the name exists), so a key is never overwritten,
and a file at ``PATH`` is either absent or whole. :func:`load` reads the private key back
and names the setting in every error.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from gate.decide.signature import key_id, private_key_from_pem
from gate.errors import ConfigError, UsageError
from gate.safe.atomic import fsync_dir, temp_path_for

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

PUBLIC_SUFFIX = ".pub"
#: a PEM private key is a few hundred bytes: a larger file is not one
MAX_KEY_FILE = 64 * 1024


def public_path(path: Path) -> Path:
    return path.with_name(path.name + PUBLIC_SUFFIX)


def new_key(path: Path) -> str:
    """Make an Ed25519 key pair at ``path`` and ``path.pub``; its key id.

    UsageError when either file exists (nothing is overwritten) or cannot be written.
    """
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        PublicFormat,
    )

    public = public_path(path)
    for target in (path, public):
        if os.path.lexists(target):
            raise UsageError(
                f"--new-key {path}: {target} exists; a key is never overwritten (move it away, "
                "or choose another PATH)"
            )
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    public_pem = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    _write_new(path, private_pem, 0o600)
    _write_new(public, public_pem, 0o644)
    return key_id(key.public_key())


def _write_new(target: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to ``target`` whole, with ``mode``, only if ``target`` does not exist."""
    try:
        fd, tmp = temp_path_for(target)  # mkstemp: mode 0600 from the start
    except OSError as err:
        raise UsageError(f"cannot write {target}: {err.strerror}") from err
    try:
        try:
            os.write(fd, data)
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, target)  # fails with FileExistsError: never over another file
    except FileExistsError as err:
        raise UsageError(f"{target} appeared while the key was made; nothing overwritten") from err
    except OSError as err:
        raise UsageError(f"cannot write {target}: {err.strerror}") from err
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    fsync_dir(target.parent)


def load(path: Path) -> tuple[Ed25519PrivateKey, str]:
    """The private key at ``path`` and its key id; UsageError naming ``--key`` and the fix."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_KEY_FILE + 1)
    except OSError as err:
        raise UsageError(
            f"cannot read --key {path}: {err.strerror}; make a key with "
            f"'review-gate serve --new-key {path}'"
        ) from err
    if len(data) > MAX_KEY_FILE:
        raise UsageError(f"--key {path} is over {MAX_KEY_FILE} bytes: not a PEM private key")
    try:
        key = private_key_from_pem(data, source=f"--key {path}")
    except ConfigError as err:
        raise UsageError(err.message, reason=err.reason) from err
    return key, key_id(key.public_key())
