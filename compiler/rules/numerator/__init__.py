"""Rules of the numerator family."""
