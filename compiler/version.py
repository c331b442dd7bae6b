"""The package version, in one place below every stage."""

__version__ = "0.1.0"
