"""Diagnostic codes of the front end (EFF0xx): parse, values, units, files, limits;
and of the log importers (EFF8xx).

A code is never reused; new codes are appended.  An audit rule declares its own
code, title and severity in its file (compiler/rules/<family>/EFFnnn.py), and
``effspec.rules.code_table()`` joins both into the table every output uses.
"""

from __future__ import annotations

CODES: dict[str, tuple[str, str]] = {
    # code: (short title, default severity)
    "EFF001": ("syntax error", "error"),
    "EFF002": ("unknown block or key", "error"),
    "EFF003": ("invalid value (type, enum, missing required key)", "error"),
    "EFF010": ("unit of the wrong dimension", "error"),
    "EFF011": ("non-finite, negative or out-of-range value", "error"),
    "EFF020": ("unresolved reference or file", "error"),
    "EFF030": ("input exceeds a limit", "error"),
    "EFF031": ("project configuration not applied", "error"),
    "EFF032": ("`# effspec:` pragma not understood or not applied", "warning"),
    "EFF033": ("unknown code in a pragma or the configuration", "warning"),
    "EFF040": ("value left to fill in (`TODO`)", "error"),
    "EFF099": ("internal error", "error"),
    # EFF8xx: the log importers (effspec import), not audit rules
    "EFF801": ("log line the importer could not read", "warning"),
    "EFF805": ("step sample no chip could produce, excluded", "warning"),
    "EFF806": ("framework version the log leaves open", "info"),
    "EFF810": ("model config the importer cannot use", "error"),
}
