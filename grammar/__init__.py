"""Package data: shipped inside the effspec wheel (see pyproject.toml)."""
