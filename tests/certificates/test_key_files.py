"""Signing-key files: each of the two kinds is read by its option, anything else is one sentence naming the option
and the file (the private key where the public one is asked for, and the reverse, included)."""

from __future__ import annotations

import pytest

from biasbound._exceptions import InputError
from biasbound._integrity import PUBLIC_KEY_ENV, SIGN_KEY_ENV, generate_keypair, load_private_key, load_public_key


def test_each_loader_takes_its_own_kind_and_refuses_the_other(tmp_path) -> None:
    priv, pub = generate_keypair(tmp_path)
    private, public = load_private_key(priv), load_public_key(pub)
    signature = private.sign(b"records")
    public.verify(signature, b"records")  # the pair belongs together (raises otherwise)
    with pytest.raises(InputError) as info:
        load_private_key(pub)
    assert str(info.value) == (f"The '--sign-key' option of certify (or {SIGN_KEY_ENV}) names {str(pub)!r}, which is not "
                               "an unencrypted Ed25519 private key in PEM form (the .key file 'biasbound keygen' writes).")
    with pytest.raises(InputError) as info:
        load_public_key(priv, where="verify")
    assert str(info.value) == (f"The '--public-key' option of verify (or {PUBLIC_KEY_ENV}) names {str(priv)!r}, which is "
                               "not an Ed25519 public key in PEM form (the .pub file 'biasbound keygen' writes).")


@pytest.mark.parametrize("loader, option", [(load_private_key, "--sign-key"), (load_public_key, "--public-key")])
def test_garbage_and_missing_files_are_one_sentence(tmp_path, loader, option) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_bytes(b"\xff\xfe not a key")
    with pytest.raises(InputError, match=rf"^The '{option}' option of run \(or \w+\) names .*junk\.pem'?, which is not "):
        loader(junk, where="run")
    missing = tmp_path / "nowhere.pem"
    with pytest.raises(InputError) as info:
        loader(missing, where="run")
    assert str(info.value).startswith(f"The '{option}' option of run names {str(missing)!r}, which cannot be read (")
