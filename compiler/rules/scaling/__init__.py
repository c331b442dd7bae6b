"""Rules of the scaling family."""
