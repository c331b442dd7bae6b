"""The peak resident size of a child process, for the tests that bound one.

``resource.getrusage(RUSAGE_SELF).ru_maxrss`` keeps the parent's peak across
fork and exec on Linux (a child of a 600 MB pytest worker reports 600 MB before
it has done anything), so a child measures itself with ``VmHWM`` from
``/proc/self/status``, its own address space's high-water mark, and falls back
to ``ru_maxrss`` where there is no ``/proc``.
"""

# An expression for the child's source: its peak resident size in kB.
PEAK_KB = ("(next((int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')), 0) "
           "if __import__('os').path.exists('/proc/self/status') "
           "else __import__('resource').getrusage(__import__('resource').RUSAGE_SELF).ru_maxrss)")
