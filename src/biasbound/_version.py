"""The package version, in a module of its own so that the certificate (which records it) imports no package root."""

__version__ = "0.1.0"
