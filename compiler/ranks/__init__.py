"""Per-rank timing: the table, its strict loader, and the diagnosis of an MFU
collapse into straggler / imbalance / single device.  (Later: traces.)"""
