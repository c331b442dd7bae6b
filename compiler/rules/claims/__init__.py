"""Rules of the claims family."""
