"""Rules of the denominator family."""
