"""Input limits.  Exceeding one is EFF030, never a crash or a hang."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    max_spec_bytes: int = 10 * 1024 * 1024   # one spec file
    max_runs: int = 5000                     # runs plus scalings in one file
    max_expression_depth: int = 64           # nested operators and parentheses
    max_list_length: int = 100_000           # items in one inline list
    max_csv_bytes: int = 256 * 1024 * 1024   # one CSV file
    max_csv_rows: int = 5_000_000            # rows in one CSV file
    max_csv_columns: int = 64                # columns in one CSV file
    max_magnitude: float = 1e30              # any value, in base units
    max_claims: int = 1000                   # claims in one run
    max_unit_terms: int = 6                  # words in one unit, `FLOP/s/device` is 3
    max_unit_exponent: int = 4               # |exponent| written or resulting, per dimension
    max_config_bytes: int = 256 * 1024       # one pyproject.toml, checked before it is read
    max_config_depth: int = 32               # its nested brackets, and the parts of one dotted key


LIMITS = Limits()
