"""`biasbound keygen --out DIR`: an Ed25519 key pair for signing certify's outputs.

Writes ``DIR/biasbound-signing.key`` (the private key, PKCS#8 PEM, unencrypted, mode 0600) and
``DIR/biasbound-signing.pub`` (the public key, PEM); an existing key is never overwritten. Sign with
``certify --sign-key DIR/biasbound-signing.key`` (or ``BIASBOUND_SIGN_KEY``) and check with ``verify
--public-key DIR/biasbound-signing.pub`` (or ``BIASBOUND_PUBLIC_KEY``). Nothing secret is printed.
"""

from __future__ import annotations

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("keygen")
    def keygen_command(
        out: str = typer.Option(..., "--out", help="Folder for biasbound-signing.key (0600) and biasbound-signing.pub."),
    ) -> None:
        """Create an Ed25519 key pair to sign certify's outputs (certify --sign-key, verify --public-key)."""
        from biasbound._integrity import PUBLIC_KEY_ENV, SIGN_KEY_ENV, generate_keypair

        priv, pub = generate_keypair(out)
        typer.echo(f"private key: {priv} (mode 0600; keep it secret; certify --sign-key or {SIGN_KEY_ENV})")
        typer.echo(f"public key:  {pub} (give it to whoever verifies; verify --public-key or {PUBLIC_KEY_ENV})")
