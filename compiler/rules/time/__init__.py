"""Rules of the time family."""
