"""Rules of the sampling family."""
