"""One trace to its per-step rows (the definitions are spec/traces.md's).

The events are read once, into compact arrays (``array.array``: 8 bytes a
value, not a Python object each); the unions are then one sweep over the
sorted interval end points (numpy).  Times stay float microseconds, made
relative to the trace's first step before any arithmetic, so a Kineto
timestamp's nanoseconds survive: nothing is rounded to whole microseconds.

GPU traces (any ``kernel``, ``gpu_memcpy`` or ``gpu_memset`` event):

- a device event belongs to the step whose ``ProfilerStep#N`` span holds the
  launch (``cuda_runtime`` / ``cuda_driver`` event with the same
  ``args.correlation``);
- step N's device window runs from the end of step N−1's window (for the first
  step: the start of its first device event) to the end of the last device
  event it launched, so the windows tile the device timeline and the gap
  before a step's first kernel (a host stall) is that step's idle time;
- inside a window, by time: compute = union of non-communication kernels;
  comm = union of collective kernels (NCCL, RCCL, NVSHMEM,
  symmetric memory, custom all-reduce, oneCCL, HCCL: COLLECTIVE_FAMILIES; and any kernel launched inside
  a ``record_param_comms`` span of its launch's thread); comm_exposed = comm where no compute kernel runs;
  other = memcpy/memset where no kernel runs; idle = the rest.

CPU traces (gloo): the step window is the ``ProfilerStep#N`` span; compute is
the union of the main thread's ``cpu_op`` events outside its ``c10d::*`` ops;
comm is the union of ``gloo:*`` annotations (any thread, in practice the
``pt_gloo_runloop`` threads) and the main thread's ``c10d::*`` ops;
comm_exposed is comm where the main thread does not compute; idle is the rest
(waiting in Python, sleeping, a data loader: gaps with no event).

Always: compute + comm_exposed + other + idle = step_time (to float rounding).
"""

from __future__ import annotations

import decimal
import gc
import itertools
import math
import re
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from effspec.ranks.traces.formats import format_for
from effspec.ranks.traces.parse import (
    MAX_TRACE_BYTES,
    WHOLE_LIMIT,
    NotFit,
    StructBatches,
    Structs,
    TraceError,
)

_STEP = re.compile(r"ProfilerStep#(\d{1,18})\Z")
_NODE_SAFE = re.compile(r"[A-Za-z0-9._:@+\-]")
MAX_NODE = 128

COMPUTE, COMM, OTHER = 0, 1, 2  # GPU classes
HOST_OP, HOST_C10D, GLOO = 0, 1, 2  # CPU classes
_BY_NAME, _MTIA = -1, -2  # device categories whose events are classed by name
# Device activity, by Kineto category (spec/traces.md, "GPU traces"): kernels (classed by name: COLLECTIVE_FAMILIES),
# memory copies and sets (OTHER).  `Kernel`, `Memcpy`, `Memset`: older Kineto's names; `hpu_op`: Gaudi;
# `mtia_ccp_events`: MTIA's device events (_mtia_class).
# XPU and ROCm traces use `kernel` / `gpu_mem*` with their own launch categories.
_DEVICE_CATS: dict[str, int] = {"kernel": _BY_NAME, "Kernel": _BY_NAME, "hpu_op": _BY_NAME, "gpu_memcpy": OTHER,
                                "Memcpy": OTHER, "gpu_memset": OTHER, "Memset": OTHER, "mtia_ccp_events": _MTIA}
_LAUNCH_CATS = frozenset(("cuda_runtime", "cuda_driver", "Runtime", "Driver", "mtia_runtime", "xpu_runtime",
                          "xpu_driver", "hpu_runtime", "privateuse1_runtime", "privateuse1_driver"))
# Categories of a device's namespace that are not activity: annotations drawn on the device timeline, and
# synchronisation (the host or a stream waiting: idle, not busy; HTA counts `cuda_sync` as busy).
_NOT_ACTIVITY = frozenset(("gpu_user_annotation", "cuda_sync", "mtia_insight", "xpu_user_annotation"))
# A category in one of these namespaces that effspec does not know is a device event it cannot read.
_DEVICE_NAMESPACE = re.compile(r"(?:gpu|cuda|hip|rocm|mtia|xpu|hpu|npu|privateuse1|cupti)_|(?:kernel|memcpy|memset)\Z",
                               re.IGNORECASE)
# Device categories known and not read, and why (said in the refusal).
WHY_NOT_READ = {"cuda_profiler_range": "CUPTI range-profiler counters: Kineto lays their spans end to end, one "
                "length for all, so they are not times"}
MAX_CATEGORIES = 4096  # distinct unknown categories remembered (a trace has a dozen)


def _mtia_class(name: str) -> int:
    """An MTIA device event: a DMA is a memory transfer (OTHER); `event_wait` / `event_record` are a stream
    waiting and a marker (not activity, like `cuda_sync`); any other (`pe_exe`, `merge`, `remote`…) runs
    on the device, classed by name (a collective is COMM).  -1: not activity."""
    if name.startswith("dma_"):
        return OTHER
    if name.startswith("event_"):
        return -1
    return kernel_class(name)


# Which device kernels are communication (spec/traces.md, "Collectives"): a kernel whose name contains one of
# these, case-insensitively, is a collective; every other kernel is compute.  (family, pattern)
COLLECTIVE_FAMILIES: tuple[tuple[str, str], ...] = (
    ("NCCL / RCCL", r"[nr]ccl"),
    # NVSHMEM's on-stream collectives are named without `nvshmem` (nvshmemi_h_to_d_coll_defs.cuh).
    ("NVSHMEM", r"nvshmem|(?<![A-Za-z0-9])(?:alltoall|barrier|broadcast|fcollect|rdxn|reducescatter|sync)"
                r"_on_stream_kernel"),
    ("symmetric memory, multimem", r"multimem_"),
    ("symmetric memory, one/two-shot", r"(?:one|two)_shot_all_reduce"),
    ("vLLM / SGLang custom all-reduce", r"cross_device_reduce"),
    ("oneCCL", r"(?<![A-Za-z0-9])(?:one)?ccl_"),  # XCCL's kernels: `oneccl_reduce_base<…>`
    ("HCCL", r"hccl|(?<![A-Za-z0-9])hcom_"),  # Ascend's communication ops: `hcom_allReduce__606_0_1`
    ("Gloo", r"(?<![A-Za-z0-9])gloo"),
)
_COLLECTIVE = re.compile("|".join(f"(?:{p})" for _, p in COLLECTIVE_FAMILIES), re.IGNORECASE)
# The profiler's own record of a collective call (PyTorch's RECORD_PARAM_COMMS, a `cpu_op` around the call,
# args `Collective name`, `Process Group Name`…): a kernel launched inside one, from its thread, is communication
# whatever its name (spec/traces.md, "Collectives").
RECORD_COMMS = "record_param_comms"
_KERNEL_CLASS: dict[str, int] = {}
_KERNEL_CLASS_MAX = 1 << 16  # distinct names remembered (a trace has a few thousand)


_EXTRA_COLLECTIVES: tuple[str, ...] = ()  # `effspec traces --collective NAME`: more names, case-folded


def extend_collectives(names: tuple[str, ...]) -> None:
    """Count kernels whose name contains one of ``names`` (case-insensitively) as communication too, beside
    COLLECTIVE_FAMILIES (a collective library the table does not know).  Plain text, never a pattern: a name
    cannot make the match slow.  Set in each process that reduces (reduce_trace), so every executor sees it."""
    global _EXTRA_COLLECTIVES
    folded = tuple(dict.fromkeys(n.casefold() for n in names if n))
    if folded != _EXTRA_COLLECTIVES:
        _EXTRA_COLLECTIVES = folded
        _KERNEL_CLASS.clear()


def kernel_class(name: str) -> int:
    """COMM for a collective kernel (COLLECTIVE_FAMILIES, or a name --collective gives), COMPUTE for any other;
    remembered by name."""
    cls = _KERNEL_CLASS.get(name)
    if cls is None:
        folded = name.casefold() if _EXTRA_COLLECTIVES else ""
        cls = COMM if _COLLECTIVE.search(name) or any(n in folded for n in _EXTRA_COLLECTIVES) else COMPUTE
        if len(_KERNEL_CLASS) < _KERNEL_CLASS_MAX and len(name) <= 4096:
            _KERNEL_CLASS[name] = cls
    return cls


# Kernel types (spec/traces.md, "Kernel types"): a non-communication kernel is of the first type whose table
# entry it fits, in any case; any other is elementwise/other.  Communication is COLLECTIVE_FAMILIES; memory is
# every copy, set and DMA.  An entry: (type, substrings anywhere in the name, prefixes of a word (a run of
# letters, so not after a letter), whole words, prefixes a word must not have).  Plain `in` tests and one
# split into words: a regular expression with look-behinds took ~90 µs a kernel name (they run to KBs).
KERNEL_TYPES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    ("attention", ("flash", "fmha", "attention", "attn", "sdpa"), ("mha",), (), ()),
    ("gemm", ("gemm", "matmul", "cutlass", "cublas", "xmma", "wgmma", "nvjet", "cijk_", "hipblaslt", "tensile",
              "scudnn", "winograd", "dgrad", "wgrad", "fprop"), ("conv", "bmm"), ("mm",), ("convert",)),
)
TYPES = ("gemm", "attention", "communication", "memory", "elementwise_other")
GEMM, ATTENTION, COMMUNICATION, MEMORY, ELEMENTWISE = range(5)
_WORD = re.compile(r"[a-z]+")
_KERNEL_TYPE: dict[str, int] = {}
MAX_NAMES = 1 << 16  # distinct kernel names kept for the breakdown and the top kernels
TOP_KERNELS = 10


def kernel_type(name: str) -> int:
    """A compute kernel's type by name: ATTENTION, GEMM or ELEMENTWISE (elementwise and everything else)."""
    out = _KERNEL_TYPE.get(name)
    if out is not None:
        return out
    low = name.lower()
    words: list[str] | None = None
    out = ELEMENTWISE
    for kind, inside, prefixes, whole, not_prefixes in KERNEL_TYPES:
        if any(w in low for w in inside):
            out = TYPES.index(kind)
            break
        if prefixes or whole:
            if words is None:
                words = _WORD.findall(low)
            if any((w in whole or w.startswith(prefixes)) and not w.startswith(not_prefixes or ("\0",))
                   for w in words):
                out = TYPES.index(kind)
                break
    if len(_KERNEL_TYPE) < MAX_NAMES and len(name) <= 4096:
        _KERNEL_TYPE[name] = out
    return out


@dataclass(frozen=True)
class StepRow:
    """One step of one rank, in microseconds."""

    step: int
    step_time: float
    compute: float
    comm: float
    comm_exposed: float
    idle: float
    other: float
    # The idle split (GPU traces; a CPU trace's idle is all `idle_other`) and the kernel-type breakdown:
    # the union of each type's device events in the window (communication is `comm`).
    idle_host_wait: float = 0.0
    idle_kernel_wait: float = 0.0
    idle_other: float = 0.0
    gemm: float = 0.0
    attention: float = 0.0
    memory: float = 0.0
    elementwise_other: float = 0.0


@dataclass(frozen=True)
class TraceSummary:
    """What one trace reduces to: a few numbers per step and the file's identity."""

    file: str  # the name shown and recorded (as given on the command line)
    bytes: int
    sha256: str
    parser: str
    rank: int
    world_size: int | None
    node: str
    node_source: str  # host_name | fallback
    kind: str  # gpu | cpu
    rows: tuple[StepRow, ...]
    step_starts: tuple[float, ...]  # absolute µs (baseTimeNanoseconds + ts), for the skew check
    events: int
    skipped: int = 0
    notes: tuple[str, ...] = field(default=())
    # The kernels taking the most device time: (name, type, µs summed over launches, launches), at most TOP_KERNELS.
    top: tuple[tuple[str, str, float, int], ...] = field(default=())
    launch_delay: tuple[float, float] | None = None  # median and p95 of launch → device start, µs
    queue: tuple[float, int] | None = None  # device events launched and not finished: time-weighted mean, max


def node_name(raw: str) -> str:
    """A host name as a CSV-safe node name: bytes outside ``[A-Za-z0-9._:@+-]``
    are percent-encoded (so distinct names stay distinct), and so is a first
    ``+``, ``-`` or ``@``: a spreadsheet would evaluate the cell as a formula
    (OWASP's CSV injection; ``=``, tab and CR are never kept), at most 128 bytes."""
    out = "".join(c if _NODE_SAFE.fullmatch(c) else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
                  for c in raw)
    if out[:1] in ("+", "-", "@"):
        out = f"%{ord(out[0]):02X}{out[1:]}"
    if not out:
        raise TraceError("EFF003", "the trace's `host_name` is empty", "name the host, or omit the field")
    if len(out) > MAX_NODE:
        raise TraceError("EFF003", f"the trace's `host_name` is longer than {MAX_NODE} bytes once encoded")
    return out


MAX_TIME_US = 1e16  # 317 years of microseconds: a larger timestamp or duration is not a clock reading


class ReadExactly(Exception):
    """The first events read as doubles have timestamps that lost fractions: read the trace exactly."""


FIRST_EVENTS = 4096  # events read as doubles before the check for lost fractions (the chunked parser)


class _Collector:
    """The events a reduction needs, as compact arrays."""

    def __init__(self, label: str | None = None, exact: bool = False) -> None:
        # exact: the events' numbers come as their decimal text (Decimal) and every timestamp is kept as
        # float(ts - origin), origin the first timestamp's whole µs, rounded once from the exact difference.
        self.exact, self.origin = exact, 0
        # The step spans: `ProfilerStep#N`, or a record_function label (`LABEL` or `LABEL#N`).
        self.prefix = "ProfilerStep#" if label is None else label
        self.step_re = _STEP if label is None else re.compile(re.escape(label) + r"(?:#(\d{1,18}))?\Z")
        self.categories: dict[Any, int] = {}  # other categories of complete events, counted
        self.steps: list[tuple[int, float, float, Any]] = []  # (N, ts, dur, thread)
        self.dev_ts, self.dev_dur, self.dev_cls, self.dev_corr = array("d"), array("d"), array("b"), array("q")
        self.dev_name = array("l")  # an index into `names` (-1: a name past MAX_NAMES or not a string; -2: no name read)
        self.names: dict[str, int] = {}
        self.name_cls: list[int] = []  # each name's class (-1: an MTIA event that is not activity)
        self.types: Any = None  # the device events' kernel types, once made (_types)
        self.launch_delay: tuple[float, float] | None = None  # median and p95, µs (GPU traces with launches)
        self.queue: tuple[float, int] | None = None  # queue length over the device windows: mean, max (_queue)
        self.rt_ts, self.rt_corr, self.rt_thread = array("d"), array("q"), array("q")  # launches: when, which, thread
        self.by_span: tuple[int, float] = (0, 0.0)  # kernels counted as communication by RECORD_COMMS alone, and µs
        # Host ops; op_c10d: 1 for a `c10d::*` op, 2 for a RECORD_COMMS span, 0 for any other.
        self.op_ts, self.op_dur, self.op_thread, self.op_c10d = array("d"), array("d"), array("q"), array("b")
        self.gloo_ts, self.gloo_dur = array("d"), array("d")
        self.threads: dict[Any, int] = {}
        self.events = 0
        self.skipped = 0

    def number_steps(self) -> None:
        """Spans of a label without ``#N`` are numbered 0, 1, … in time order."""
        if any(s[0] < 0 for s in self.steps):
            self.steps.sort(key=lambda s: (s[1], s[0]))
            self.steps = [(k if n < 0 else n, ts, dur, t) for k, (n, ts, dur, t) in enumerate(self.steps)]

    def unknown_device_categories(self) -> dict[str, int]:
        """Categories in a device's namespace that are neither activity, launches nor known non-activity."""
        return {k: n for k, n in self.categories.items() if type(k) is str and k not in _NOT_ACTIVITY
                and _DEVICE_NAMESPACE.match(k)}

    def add(self, events: Iterable[Any]) -> None:
        """Collect every event.  Reading as doubles, a first batch whose timestamps lost fractions raises
        ReadExactly at once (the caller reads the trace again, exactly), so such a trace is not read twice
        whole."""
        import numpy as np

        if isinstance(events, StructBatches):
            for k, batch in enumerate(events):
                if self.exact:
                    self._exact(batch, True)
                self.add_structs(batch)
                if k == 0 and not self.exact and self.lost_fractions(np):
                    raise ReadExactly
        elif self.exact:
            self.add_dicts(self._exact_dicts(events))
        else:
            events = iter(events)
            self.add_dicts(itertools.islice(events, FIRST_EVENTS))
            if self.lost_fractions(np):
                raise ReadExactly
            self.add_dicts(events)

    def lost_fractions(self, np) -> bool:
        """Whether a timestamp kept as a double may have lost part of its text: one at or past EXACT_ABOVE
        that is not a whole number (an epoch-µs trace written in whole µs, as older Kineto does, lost
        nothing: an integer below 2^53 is a double exactly)."""
        if any(abs(s[1]) >= EXACT_ABOVE and s[1] != math.floor(s[1]) for s in self.steps):
            return True
        for a in (self.dev_ts, self.rt_ts, self.op_ts, self.gloo_ts):
            if len(a):
                v = np.frombuffer(a, dtype=np.float64)
                if max(-v.min(), v.max()) < EXACT_ABOVE:
                    continue
                big = v[np.abs(v) >= EXACT_ABOVE]
                if bool(np.any(big != np.floor(big))):
                    return True
        return False

    def _exact_dicts(self, events: Iterable[Any]) -> Iterable[Any]:
        for e in events:
            if type(e) is dict:
                self._exact((e,), False)
            yield e

    _origin_set = False

    def _exact(self, events: Iterable[Any], structs: bool) -> None:
        """Each event's ``ts`` (a Decimal or an int: its text exactly) as ``float(ts - origin)``, one rounding
        of the exact difference; ``dur`` as the double nearest its text.  A number no double holds is left as
        something that is not a number (the event is then skipped and counted, as any malformed one)."""
        Decimal = decimal.Decimal
        for e in events:
            ts = e.ts if structs else e.get("ts")
            dur = e.dur if structs else e.get("dur")
            t = type(ts)
            if t is Decimal or t is int:
                try:
                    if not self._origin_set:
                        self.origin, self._origin_set = math.floor(ts), True
                    ts = float(ts - self.origin)
                except (ArithmeticError, ValueError):  # Overflow, an infinite or huge value: not a timestamp
                    ts = None
            if type(dur) is Decimal:
                try:
                    dur = float(dur)
                except (ArithmeticError, ValueError):
                    dur = None
            if structs:
                e.ts, e.dur = ts, dur
            else:
                e["ts"], e["dur"] = ts, dur

    def add_structs(self, events: Structs) -> None:
        """Collect a batch msgspec decoded: each event's fields come as a tuple, made in C (``args`` is then
        an object with ``correlation``, or None)."""
        self._add(map(_struct_fields(), events))
        self.events += len(events)

    def add_dicts(self, events: Iterable[Any]) -> None:
        """Collect events the general parser read (dicts; anything else is counted and passed over)."""
        seen = [0]
        self._add(_dict_fields(events, seen))
        self.events += seen[0]

    def _add(self, rows: Iterable[tuple]) -> None:  # noqa: C901 - one flat dispatch over event kinds, the hot loop
        """Keep what the reduction needs of each event, given as its FIELDS: the one loop of both parsers,
        and a reduction's hot loop.  Checks are inlined (a number is an int or float, not a bool, within
        ±MAX_TIME_US; NaN fails the comparison)."""
        dev_ts, dev_dur, dev_cls, dev_corr = self.dev_ts, self.dev_dur, self.dev_cls, self.dev_corr
        dev_name, names, name_cls = self.dev_name, self.names, self.name_cls
        rt_ts, rt_corr, rt_thread = self.rt_ts, self.rt_corr, self.rt_thread
        op_ts, op_dur, op_thread, op_c10d = self.op_ts, self.op_dur, self.op_thread, self.op_c10d
        threads, categories = self.threads, self.categories
        prefix, step_re = self.prefix, self.step_re
        big = MAX_TIME_US
        skipped = 0
        cat: Any
        name: Any
        ts: Any
        dur: Any
        args: Any
        corr: Any
        for ph, cat, name, ts, dur, pid, tid, args in rows:
            if ph != "X":
                continue
            if cat == "cpu_op" or cat == "user_annotation":
                if type(name) is not str:
                    skipped += 1
                    continue
                if cat == "user_annotation" and not (name.startswith(prefix) or name.startswith("gloo:")):
                    continue
                if not ((type(ts) is float or type(ts) is int) and -big < ts < big
                        and (type(dur) is float or type(dur) is int) and 0 <= dur < big):
                    skipped += 1
                    continue
                if name.startswith("gloo:"):
                    self.gloo_ts.append(ts)
                    self.gloo_dur.append(dur)
                    continue
                thread = (pid, tid)
                try:
                    t = threads.get(thread)
                except TypeError:  # a list or an object as a pid: not a thread anyone can name
                    thread = (None, None)
                    t = threads.get(thread)
                if name.startswith(prefix):
                    m = step_re.match(name)
                    if m:
                        self.steps.append((int(m.group(1)) if m.group(1) else -1, ts, dur, thread))
                        continue
                    if cat == "user_annotation":
                        continue
                if t is None:
                    t = threads[thread] = len(threads)
                op_ts.append(ts)
                op_dur.append(dur)
                op_thread.append(t)
                op_c10d.append(1 if name.startswith("c10d::") else 2 if name == RECORD_COMMS else 0)
            elif type(cat) is str and cat in _DEVICE_CATS:  # a list as `cat` is not hashable
                if not ((type(ts) is float or type(ts) is int) and -big < ts < big
                        and (type(dur) is float or type(dur) is int) and 0 <= dur < big):
                    skipped += 1
                    continue
                # `args`: msgspec's object or None, or (the general parser) a dict; any other JSON value has none.
                corr = args.get("correlation") if type(args) is dict else getattr(args, "correlation", None)
                cls = _DEVICE_CATS[cat]
                nid = -2
                if cls < 0:
                    if type(name) is not str:
                        cls, nid = COMPUTE, -1
                    elif (nid := names.get(name, -1)) >= 0:  # a name seen before: its class, one lookup
                        cls = name_cls[nid]
                        if cls < 0:
                            continue
                    else:
                        cls = kernel_class(name) if cls == _BY_NAME else _mtia_class(name)
                        if len(names) < MAX_NAMES:
                            nid = names[name] = len(names)
                            name_cls.append(cls)
                        if cls < 0:  # an MTIA wait or marker: not activity
                            continue
                dev_ts.append(ts)
                dev_dur.append(dur)
                dev_cls.append(cls)
                dev_corr.append(corr if type(corr) is int and 0 <= corr < 2**63 else -1)
                dev_name.append(nid)
            elif type(cat) is str and cat in _LAUNCH_CATS:
                corr = args.get("correlation") if type(args) is dict else getattr(args, "correlation", None)
                if type(corr) is int and 0 <= corr < 2**63 and (type(ts) is float or type(ts) is int) and -big < ts < big:
                    thread = (pid, tid)
                    try:
                        t = threads.get(thread)
                    except TypeError:
                        thread = (None, None)
                        t = threads.get(thread)
                    if t is None:
                        t = threads[thread] = len(threads)
                    rt_ts.append(ts)
                    rt_corr.append(corr)
                    rt_thread.append(t)
            elif type(cat) is str and (cat in categories or len(categories) < MAX_CATEGORIES):
                categories[cat] = categories.get(cat, 0) + 1
        self.skipped += skipped


# The fields of an event the collector reads, in _Collector._add's order: the order of msgspec's Event
# (parse._decoders), whose msgspec.structs.astuple makes the tuple in C, faster than reading them one by one.
FIELDS = ("ph", "cat", "name", "ts", "dur", "pid", "tid", "args")
_AS_TUPLE: list = []


def _struct_fields() -> Any:
    """A function from one of msgspec's events to its FIELDS (astuple; attrgetter were its order another)."""
    if not _AS_TUPLE:
        import operator

        import msgspec

        from effspec.ranks.traces.parse import _decoders

        decoders = _decoders()
        try:  # the batch decoder's type is list[Event]
            same = decoders is not None and tuple(decoders[1].type.__args__[0].__struct_fields__) == FIELDS
        except (AttributeError, IndexError, TypeError):
            same = False
        _AS_TUPLE.append(msgspec.structs.astuple if same else operator.attrgetter(*FIELDS))
    return _AS_TUPLE[0]


def _dict_fields(events: Iterable[Any], seen: list[int]) -> Iterable[tuple]:
    """The FIELDS of each dict event (None where absent); ``seen[0]``: how many events there were, any kind."""
    n = 0
    for e in events:
        n += 1
        if type(e) is dict:
            get = e.get
            yield get("ph"), get("cat"), get("name"), get("ts"), get("dur"), get("pid"), get("tid"), get("args")
    seen[0] = n


SINGLE_PROCESS_NOTE = ("no `distributedInfo`: read as rank 0 of a world of 1 (a single-process profile, "
                       "or one taken before torch.distributed.init_process_group)")
# A rank in a file name: `rank-3`, `rank3_`, `rank_3`, `profile_trace_rank_0.json`; not `frank3` (a word ending in rank).
_NAME_RANK = re.compile(r"(?<![A-Za-z])rank[-_]?(\d{1,10})(?!\d)", re.IGNORECASE)
NO_RANK = "no `distributedInfo.rank`: the trace does not say which rank wrote it"
NO_RANK_HELP = ("profile after torch.distributed.init_process_group, which records the rank in the trace, or "
                "name the file after its rank (`rank-3.json`) and pass --rank-from name")


def rank_in_name(path: str) -> tuple[int | None, str]:
    """The rank a file's name gives (``rank-3``, ``rank3_``, ``rank_3``, any case), and a problem when it
    gives none or two different ones."""
    import os

    base = os.path.basename(path)
    found = sorted({int(m.group(1)) for m in _NAME_RANK.finditer(base)})
    if not found:
        return None, "its file name holds no rank (`rank-3`, `rank3_`, `rank_3`)"
    if len(found) > 1:
        return None, f"its file name holds {len(found)} ranks ({', '.join(map(str, found[:5]))})"
    if found[0] >= 2**31:
        return None, "the rank in its file name is not a number in 0..2³¹"
    return found[0], ""


def _rank(top: dict, path: str = "", rank_from: str = "field") -> tuple[int, int | None, str, str]:
    """``(rank, world_size, note, missing)``.  A trace with no ``distributedInfo.rank`` at all (no member, or a
    member without ``rank`` nor ``world_size``) is a single-process profile: rank 0 of a world of 1, said in
    ``note`` (with ``rank_from="name"``, the rank its file name gives).  A distributed trace without a rank
    is ``missing`` the rank (the caller names every missing piece at once); a rank that is there but not a
    rank (a string, a negative number) is refused: the trace says something wrong."""
    info: Any = top.get("distributedInfo")
    world = info.get("world_size") if isinstance(info, dict) else None
    if type(world) is int and not 0 < world <= 2**31:
        raise TraceError("EFF003", f"`distributedInfo.world_size` is {world if abs(world) < 10**12 else 'huge'}: "
                         "not a world size (1 to 2,147,483,648 ranks)", "the trace was edited or is not torch's")
    world = world if type(world) is int else None
    field_rank = info.get("rank") if isinstance(info, dict) else None
    has_field = isinstance(info, dict) and "rank" in info
    if has_field and type(field_rank) is int and 0 <= field_rank < 2**31:
        rank = field_rank
        if rank_from == "name":
            named, _ = rank_in_name(path)
            if named is not None and named != rank:
                raise TraceError("EFF003", f"the file name says rank {named}, `distributedInfo.rank` says {rank}",
                                 "rename the file, or leave out --rank-from name to read the field alone")
        note = ""
    elif rank_from == "name" and not (has_field and field_rank is not None):
        named, why = rank_in_name(path)
        if named is None:
            return 0, world, "", f"{NO_RANK}, and {why}"
        rank, note = named, (f"no `distributedInfo.rank`: rank {named} read from the file name (--rank-from name)"
                             + ("" if world is not None else "; the world size is not recorded"))
    elif info is None or (isinstance(info, dict) and "rank" not in info and "world_size" not in info):
        return 0, 1, SINGLE_PROCESS_NOTE, ""
    else:
        return 0, world, "", NO_RANK
    if world is not None and rank >= world:
        raise TraceError("EFF003", f"`distributedInfo.rank` {rank} is outside its world of {world:,} ranks"
                         if note == "" else f"rank {rank} (from the file name) is outside its world of {world:,} ranks")
    return rank, world, note, ""


def _node(top: dict, rank: int, ranks_per_node: int | None) -> tuple[str, str]:
    host = top.get("host_name", top.get("hostname"))
    if isinstance(host, str):
        return node_name(host), "host_name"
    if ranks_per_node:
        return f"node{rank // ranks_per_node}", "ranks_per_node"
    return "unknown", "none"


def reduce_trace(path: str, display: str | None = None, ranks_per_node: int | None = None,
                 whole_limit: int = WHOLE_LIMIT, max_bytes: int = MAX_TRACE_BYTES, beneath: bool = False,
                 allow_hardlinks: bool = False, rank_from: str = "field", window: str | None = None,
                 collectives: tuple[str, ...] = ()) -> TraceSummary:
    """Read and reduce one trace file; TraceError on any problem.  ``beneath``:
    ``path`` was listed in a folder and is opened beneath it (parse._open).  ``rank_from="name"``: a trace
    without ``distributedInfo.rank`` takes its rank from its file name.  ``window``: the ``record_function``
    label whose spans are the steps, in place of ``ProfilerStep#N``."""
    import numpy as np

    shown = display if display is not None else path
    # Parsing makes ~20 container objects an event, and none of them is in a
    # cycle (JSON is a tree): the cyclic collector, which would walk them
    # again and again as they are made, is paused (2.5x faster with orjson, when it was used).
    reading = (path, whole_limit, max_bytes, beneath, allow_hardlinks)
    extend_collectives(collectives)
    top, c, source, fractional = _collect(reading, window, exact=False)
    if fractional:  # timestamps a double cannot hold to the nanosecond: the decimal text, exactly
        top, c, source, _ = _collect(reading, window, exact=True)
    rank, world, rank_note, missing_rank = _rank(top, shown, rank_from)
    notes = [rank_note] if rank_note else []
    if collectives:
        notes.append("kernels whose name contains " + ", ".join(f"`{n}`" for n in _EXTRA_COLLECTIVES)
                     + " are communication (--collective)")
    missing = [missing_rank] if missing_rank else []
    unknown = c.unknown_device_categories()
    if unknown and not len(c.dev_ts):
        missing.append(f"its device events are of kinds effspec does not read ({_categories(unknown)}): refused "
                       "rather than read as a CPU trace")
    elif unknown:
        notes.append(f"device events of kinds effspec does not read are not counted: {_categories(unknown)}")
    whole = False
    if not c.steps:
        if window is not None:
            missing.append(f"no `record_function` span named `{window}` (--window): the trace has no steps to split")
        elif len(c.dev_ts):
            whole = True
        elif not unknown:
            missing.append("no `ProfilerStep#N` span: the trace has no steps to split, and no device activity to "
                           "read as one window")
    if missing:
        helps = {NO_RANK_HELP if any(m.startswith(NO_RANK) for m in missing) else "",
                 "call prof.step() once per training step inside torch.profiler.profile(schedule=...), or name a "
                 "record_function label with --window" if any("no steps" in m for m in missing) else "",
                 "profile the device with a kernel-level activity (ProfilerActivity.CUDA, .XPU, .MTIA…)"
                 if any("device events" in m for m in missing) else ""}
        raise TraceError("EFF003", missing[0] + "".join(f"; and {m}" for m in missing[1:]),
                         "; ".join(h for h in sorted(helps) if h))
    node, node_source = _node(top, rank, ranks_per_node)
    base_ns = top.get("baseTimeNanoseconds")
    offset = (base_ns / 1000.0 if type(base_ns) is int and 0 <= base_ns < 2**63 else 0.0) + c.origin
    if whole:
        start = np.frombuffer(c.dev_ts, dtype=np.float64)
        first = float(start.min())
        end = float((start + np.frombuffer(c.dev_dur, dtype=np.float64)).max())
        base = math.floor(first)
        kind, rows = "gpu", _gpu_rows(np, c, base, whole=True)
        notes.append(f"no `{'ProfilerStep#N' if window is None else window}` span: read as one window (step 0) "
                     f"over the trace's device activity, {end - first:,.3f} µs from its first device event to its "
                     f"last ({len(c.dev_ts):,} events); --window LABEL cuts steps on a record_function label")
        starts: tuple[float, ...] = (offset + first,)
    else:
        c.number_steps()
        c.steps.sort(key=lambda s: (s[1], s[0]))
        seen: dict[int, int] = {}
        for n, *_ in c.steps:
            if n in seen:
                label = "ProfilerStep" if window is None else window
                raise TraceError("EFF003", f"`{label}#{n}` appears twice", "one span per step number")
            seen[n] = 1
        base = math.floor(c.steps[0][1])
        if len(c.dev_ts):
            kind, rows = "gpu", _gpu_rows(np, c, base)
        else:
            kind, rows = "cpu", _cpu_rows(np, c, base)
        starts = tuple(offset + s[1] for s in c.steps)
    if c.by_span[0]:
        notes.append(f"{c.by_span[0]:,} kernel{'s' if c.by_span[0] > 1 else ''} ({c.by_span[1]:,.3f} µs) launched inside "
                     f"the profiler's `{RECORD_COMMS}` spans are communication, though the collective table does not "
                     "know their names")
    return TraceSummary(
        file=shown, bytes=source.bytes, sha256=source.sha256, parser=source.parser,
        rank=rank, world_size=world, node=node, node_source=node_source, kind=kind, rows=rows,
        step_starts=starts, events=c.events, skipped=c.skipped, notes=tuple(notes),
        top=top_kernels(np, c) if kind == "gpu" else (), launch_delay=c.launch_delay, queue=c.queue)


# From 2^43 µs (101 days: epoch µs, 1.7e15, not Kineto's since-boot clock, 1e12) a double is coarser than
# 1 ns (0.25 µs at 1.7e15): a trace with fractional timestamps there is read again, exactly.
EXACT_ABOVE = 2.0 ** 43


def _collect(reading: tuple[str, int, int, bool, bool], window: str | None, exact: bool) -> tuple[dict, _Collector, Any, bool]:
    """``(top, collector, source, fractional)``: one pass over the events; ``fractional``: the trace holds
    timestamps past EXACT_ABOVE that are not whole numbers, so a double lost part of them and the caller
    reads it again with ``exact``.  (Searching the text instead costs 3x the reduction.)"""
    import numpy as np

    # Parsing makes ~20 container objects an event, and none of them is in a
    # cycle (JSON is a tree): the cyclic collector, which would walk them
    # again and again as they are made, is paused (2.5x faster with orjson, when it was used).
    paused = gc.isenabled()
    gc.disable()
    try:
        top, events, source = format_for(reading[0]).read(*reading, exact=exact)
        c = _Collector(window, exact)
        try:
            try:
                c.add(events)
            except NotFit:  # a batch of events msgspec's schema does not fit: the general parser reads it all again
                assert isinstance(events, StructBatches)  # only msgspec's batches raise it
                c = _Collector(window, exact)
                c.add(events.fallback(source))
        except ReadExactly:
            return top, c, source, True
        fractional = not exact and c.lost_fractions(np)
        del events
    finally:
        if paused:
            gc.enable()
    return top, c, source, fractional


def _categories(counts: dict[str, int]) -> str:
    from effspec.diagnostics import printable

    shown = sorted(counts, key=lambda k: (-counts[k], k))
    return ", ".join(f"`{printable(k)[:40]}` ({counts[k]:,}" + (f": {WHY_NOT_READ[k]})" if k in WHY_NOT_READ else ")")
                     for k in shown[:5]) + (", …" if len(shown) > 5 else "")


def _arr(np, a: array, base: float = 0.0):
    out = np.frombuffer(a, dtype=np.float64) if len(a) else np.zeros(0)
    return out - base if base else out.copy()


def _step_spans(np, c: _Collector, base: float):
    n = np.asarray([s[0] for s in c.steps], np.int64)
    lo = np.asarray([s[1] for s in c.steps], np.float64) - base
    hi = lo + np.asarray([s[2] for s in c.steps], np.float64)
    return n, lo, hi


def _gpu_rows(np, c: _Collector, base: float, whole: bool = False) -> tuple[StepRow, ...]:
    start = _arr(np, c.dev_ts, base)
    end = start + _arr(np, c.dev_dur)
    cls = np.frombuffer(c.dev_cls, dtype=np.int8) if len(c.dev_cls) else np.zeros(0, np.int8)
    # The launch of each device event, by correlation id.
    corr = np.frombuffer(c.dev_corr, dtype=np.int64)
    rt_corr = np.frombuffer(c.rt_corr, dtype=np.int64) if len(c.rt_corr) else np.zeros(0, np.int64)
    rt_ts = _arr(np, c.rt_ts, base)
    order = np.argsort(rt_corr, kind="stable")
    rt_corr, rt_ts = rt_corr[order], rt_ts[order]
    at = np.searchsorted(rt_corr, corr)
    found = (corr >= 0) & (at < len(rt_corr))
    found[found] = rt_corr[at[found]] == corr[found]
    launch = np.full(len(corr), np.nan)
    launch[found] = rt_ts[at[found]]
    cls = _by_record_comms(np, c, base, cls, start, end, launch, found,
                           np.frombuffer(c.rt_thread, dtype=np.int64)[order][at[found]] if found.any() else None)
    types = _types(np, c, cls)
    delay = start[found] - launch[found]  # launch delay: the launch call's start to the device event's start
    if len(delay):
        c.launch_delay = (float(np.percentile(delay, 50)), float(np.percentile(delay, 95)))
    if whole:  # no steps: one window over every device event
        lo, hi = np.asarray([start.min()]), np.asarray([end.max()])
        c.queue = _queue(np, launch[found], end[found], float(lo[0]), float(hi[-1]))
        return _device_rows(np, start, end, cls, types, launch, np.zeros(1, np.int64), lo, hi)
    numbers, cpu_lo, cpu_hi = _step_spans(np, c, base)
    # The step holding each launch.
    k = np.searchsorted(cpu_lo, launch, side="right") - 1
    inside = found & (k >= 0)
    inside[inside] = launch[inside] < cpu_hi[k[inside]]
    S = len(numbers)
    first = np.full(S, np.inf)
    last = np.full(S, -np.inf)
    np.minimum.at(first, k[inside], start[inside])
    np.maximum.at(last, k[inside], end[inside])
    empty = ~np.isfinite(last)
    last[empty] = cpu_hi[empty]
    first[empty] = cpu_lo[empty]
    hi = np.maximum.accumulate(last)
    lo = np.empty(S)
    lo[0] = first[0]
    lo[1:] = hi[:-1]
    c.queue = _queue(np, launch[found], end[found], float(lo[0]), float(hi[-1]))
    return _device_rows(np, start, end, cls, types, launch, numbers, lo, hi)


def _by_record_comms(np, c: _Collector, base: float, cls, start, end, launch, found, thread):
    """``cls`` with every kernel (COMPUTE by its name) whose launch lies in a RECORD_COMMS span of the launch's
    thread (span start <= launch < span end) made COMM; ``c.by_span``: how many and their µs.  One sort of the
    spans and one search per launch, per thread holding spans: ``reach`` (the latest end of the spans starting
    at or before a time) makes nested or overlapping spans need no merge."""
    flag = np.frombuffer(c.op_c10d, dtype=np.int8) if len(c.op_c10d) else np.zeros(0, np.int8)
    spans = np.flatnonzero(flag == 2)
    if not len(spans) or thread is None:
        return cls
    lo = np.frombuffer(c.op_ts, dtype=np.float64)[spans] - base
    hi = lo + np.frombuffer(c.op_dur, dtype=np.float64)[spans]
    span_thread = np.frombuffer(c.op_thread, dtype=np.int64)[spans]
    events = np.flatnonzero(found)
    inside = np.zeros(len(events), bool)
    for t in np.unique(span_thread).tolist():
        mine = span_thread == t
        order = np.argsort(lo[mine], kind="stable")
        s_lo, reach = lo[mine][order], np.maximum.accumulate(hi[mine][order])
        on = np.flatnonzero(thread == t)
        at = launch[events[on]]
        k = np.searchsorted(s_lo, at, side="right") - 1
        ok = k >= 0
        ok[ok] = at[ok] < reach[k[ok]]
        inside[on[ok]] = True
    hit = events[inside]
    hit = hit[cls[hit] == COMPUTE]
    if not len(hit):
        return cls
    out = cls.copy()
    out[hit] = COMM
    c.by_span = (len(hit), float((end[hit] - start[hit]).sum()))
    return out


def _queue(np, launched, ended, w0: float, w1: float) -> tuple[float, int] | None:
    """The queue length (HTA's term): how many device events are launched and not yet finished, from each
    launch call's start to the event's end, over the device windows [w0, w1): its time-weighted mean and its
    largest value.  Over the whole device, not per stream; an event ending as another is launched does not
    count twice.  None without launches."""
    a, b = np.clip(launched, w0, w1), np.clip(ended, w0, w1)
    keep = b > a
    a, b = a[keep], b[keep]
    if not len(a) or not w1 > w0:
        return None
    t = np.concatenate((a, b))
    step = np.concatenate((np.ones(len(a), np.int64), np.full(len(b), -1, np.int64)))
    order = np.lexsort((step, t))  # at one time, ends before launches
    t, level = t[order], np.cumsum(step[order])
    return float((level[:-1] * np.diff(t)).sum() / (w1 - w0)), int(level.max())


def _types(np, c: _Collector, cls):
    """Each device event's kernel type (TYPES): by its class, then by its name (made once per collector)."""
    if c.types is not None:
        return c.types
    by_name = np.asarray([kernel_type(n) for n in c.names] or [ELEMENTWISE], np.int8)
    nid = np.frombuffer(c.dev_name, dtype=np.int64) if len(c.dev_name) else np.zeros(0, np.int64)
    out = np.where(nid >= 0, by_name[np.maximum(nid, 0)], ELEMENTWISE).astype(np.int8)
    out[cls == COMM] = COMMUNICATION
    out[cls == OTHER] = MEMORY
    c.types = out
    return out


def top_kernels(np, c: _Collector) -> tuple[tuple[str, str, float, int], ...]:
    """The TOP_KERNELS kernel names with the most device time (durations summed over their launches)."""
    if not c.names:
        return ()
    nid = np.frombuffer(c.dev_name, dtype=np.int64)
    keep = nid >= 0
    total = np.bincount(nid[keep], weights=np.frombuffer(c.dev_dur, dtype=np.float64)[keep], minlength=len(c.names))
    count = np.bincount(nid[keep], minlength=len(c.names))
    names = list(c.names)
    cls = np.frombuffer(c.dev_cls, dtype=np.int8)
    types = _types(np, c, cls)
    type_of = np.full(len(names), ELEMENTWISE, np.int8)
    type_of[nid[keep]] = types[keep]
    # The candidates: every name whose time ties or beats the TOP_KERNELS-th largest, then by (time, name).
    cut = np.partition(total, len(total) - TOP_KERNELS)[len(total) - TOP_KERNELS] if len(total) > TOP_KERNELS else -1.0
    best = sorted(np.flatnonzero(total >= cut).tolist(), key=lambda i: (-total[i], names[i]))[:TOP_KERNELS]
    return tuple((names[i], TYPES[type_of[i]], float(total[i]), int(count[i])) for i in best if count[i])


def _idle_split(np, start, end, launch, lo, hi):
    """Per window, the idle time before a launch (host wait: the device waiting for the host to launch the
    work that ends the gap) and the idle time with that work already launched (kernel wait: it waited on
    another stream, an event or a sync).  Gaps are between the merged device intervals; a gap's next event
    is the first to start at its end.  The rest of the idle (launch latency, work with no launch record) is
    the caller's remainder."""
    W = len(lo)
    if len(start) < 2:
        return np.zeros(W), np.zeros(W)
    order = np.argsort(start, kind="stable")
    s, L = start[order], launch[order]
    reach = np.maximum.accumulate(end[order])
    g0, g1, nxt = reach[:-1], s[1:], L[1:]
    gap = g1 > g0
    g0, g1, nxt = g0[gap], g1[gap], nxt[gap]
    known = np.isfinite(nxt)
    host_end = np.where(known, np.clip(nxt, g0, g1), g0)  # [g0, launch) : host wait
    queued = known & (nxt <= g0)  # launched before the device went idle: the whole gap is kernel wait
    gs = np.concatenate((g0, g0[queued]))
    ge = np.concatenate((host_end, g1[queued]))
    gc = np.concatenate((np.zeros(len(g0), np.int8), np.ones(int(queued.sum()), np.int8)))
    parts = _sweep(np, gs, ge, gc, 2, lo, hi)
    return parts[(1, None)], parts[(None, 1)]


def _device_rows(np, start, end, cls, types, launch, numbers, lo, hi) -> tuple[StepRow, ...]:
    S = len(numbers)
    parts = _sweep(np, start, end, cls, 3, lo, hi, types, 5)
    busy_compute = parts[(1, None, None)]
    comm = parts[(None, 1, None)]
    exposed = parts[(0, 1, None)]
    other = parts[(0, 0, 1)]
    idle = parts[(0, 0, 0)]
    host, kernel = _idle_split(np, start, end, launch, lo, hi)
    kinds = [parts[(None, None, None) + tuple(1 if j == t else None for j in range(5))] for t in range(5)]
    rows = []
    for i in range(S):
        h, k = min(float(host[i]), float(idle[i])), float(kernel[i])
        k = min(k, float(idle[i]) - h)
        rows.append(StepRow(int(numbers[i]), float(hi[i] - lo[i]), float(busy_compute[i]), float(comm[i]),
                            float(exposed[i]), float(idle[i]), float(other[i]), h, k, max(float(idle[i]) - h - k, 0.0),
                            float(kinds[GEMM][i]), float(kinds[ATTENTION][i]), float(kinds[MEMORY][i]),
                            float(kinds[ELEMENTWISE][i])))
    return tuple(rows)


def _cpu_rows(np, c: _Collector, base: float) -> tuple[StepRow, ...]:
    numbers, lo, hi = _step_spans(np, c, base)
    if len(lo) > 1:  # overlapping spans (a malformed trace) are cut at the next step's start
        hi[:-1] = np.minimum(hi[:-1], lo[1:])
    main_thread = c.threads.get(_main_thread(c.steps), -2)
    op_thread = np.frombuffer(c.op_thread, dtype=np.int64) \
        if len(c.op_thread) else np.zeros(0, np.int64)
    on_main = op_thread == main_thread
    op_start = _arr(np, c.op_ts, base)[on_main]
    op_end = op_start + _arr(np, c.op_dur)[on_main]
    c10d = (np.frombuffer(c.op_c10d, dtype=np.int8)[on_main] == 1) if len(c.op_c10d) else np.zeros(0, bool)
    g_start = _arr(np, c.gloo_ts, base)
    g_end = g_start + _arr(np, c.gloo_dur)
    start = np.concatenate((op_start, g_start))
    end = np.concatenate((op_end, g_end))
    cls = np.concatenate((np.where(c10d, HOST_C10D, HOST_OP).astype(np.int8), np.full(len(g_start), GLOO, np.int8)))
    del op_start, op_end, g_start, g_end, c10d, on_main, op_thread  # only the concatenated copies are swept
    parts = _sweep(np, start, end, cls, 3, lo, hi)
    # compute: a main-thread op, not inside a c10d op; comm: a c10d op or a gloo annotation.
    compute = parts[(1, 0, None)]
    comm = parts[(None, 1, None)] + parts[(None, 0, 1)]
    exposed = np.maximum(comm - parts[(1, 0, 1)], 0.0)
    idle = parts[(0, 0, 0)]
    return tuple(StepRow(int(numbers[i]), float(hi[i] - lo[i]), float(compute[i]), float(comm[i]),
                         float(exposed[i]), float(idle[i]), 0.0, idle_other=float(idle[i])) for i in range(len(numbers)))


def _main_thread(steps) -> Any:
    counts: dict[Any, int] = {}
    for s in steps:
        counts[s[3]] = counts.get(s[3], 0) + 1
    return max(counts, key=lambda t: counts[t])


class _Parts(dict):
    """Time per window for each pattern of (class 0, class 1, class 2) activity:
    1 = active, 0 = inactive, None = either."""

    def __init__(self, np, seg_window, seg_len, active, W):
        super().__init__()
        self.np, self.seg_window, self.seg_len, self.active, self.W = np, seg_window, seg_len, active, W

    def __missing__(self, pattern):
        np = self.np
        mask = np.ones(len(self.seg_len), bool)
        for k, want in enumerate(pattern):
            if want is not None:
                mask &= self.active[k] if want else ~self.active[k]
        out = np.bincount(self.seg_window[mask], weights=self.seg_len[mask], minlength=self.W)
        self[pattern] = out
        return out


def _sweep(np, start, end, cls, K: int, lo, hi, extra=None, KE: int = 0) -> _Parts:
    """Per window [lo[i], hi[i]), the time spent in each pattern of active classes.  ``extra``: a second
    labelling of the same intervals (KE classes, flags K..K+KE−1 of a pattern), swept in the same pass (one
    sort: the kernel types beside the classes).

    Memory: a few arrays of the 2n + 2W end points, each freed once used (the
    sort order goes before the per-class counts are made), about 100 bytes an
    interval at the peak: far below the JSON the intervals were read from.
    """
    n, W = len(start), len(lo)
    points = np.concatenate((start, end, lo, hi))
    order = np.argsort(points, kind="stable")
    t = points[order]
    del points
    sign = np.zeros(len(t), np.int8)
    sign[:n], sign[n:2 * n] = 1, -1
    sign = sign[order]
    labels = []
    for lab in (cls, extra) if extra is not None else (cls,):
        point_cls = np.full(len(t), -1, np.int8)
        point_cls[:n] = lab
        point_cls[n:2 * n] = lab
        labels.append(point_cls[order])
        del point_cls
    del order
    seg_len = np.diff(t)
    w = np.searchsorted(lo, t[:-1], side="right") - 1
    valid = (w >= 0) & (seg_len > 0)
    valid[valid] = t[:-1][valid] < hi[w[valid]]
    del t
    active = []
    for point_cls, count in zip(labels, (K, KE), strict=False):
        for k in range(count):
            running = np.cumsum(np.where(point_cls == k, sign, 0), dtype=np.int32)  # int32: half the default's memory
            active.append((running[:-1] > 0)[valid])
            del running
    return _Parts(np, w[valid], seg_len[valid], active, W)
