"""Profiler traces in: per-rank, per-step compute / communication / idle from
PyTorch profiler (Kineto, Chrome-trace JSON) files, one file per rank.

- ``parse``: the file (plain or gzip, hashed as it is read) to its top-level
  fields and its events, in batches (msgspec) or chunked (json), memory bounded by the file.
- ``reduce``: one trace to its rows (GPU: kernel interval unions; CPU / gloo:
  main-thread ops and gloo annotations), the definitions of spec/traces.md.
- ``combine``: many reduced traces to one checked table (duplicate and missing
  ranks, clock skew) and its CSV with provenance comment lines.
- ``run``: the map over files (serial, a process pool, or Dask) with progress.

Nothing here imports the engine, rules, report or CLI; numpy is imported
inside functions.
"""

METHOD = "effspec-traces 2"
