"""The map: every trace file reduced on its own, serially, in a local process
pool, or on Dask (an existing scheduler, or on request a LocalCluster sized to
the machine, over TLS and without a dashboard), with a progress line on a
terminal.

Local parallelism opens no network listener: the default for many files is a
process pool (pipes to forked children).  A LocalCluster listens on loopback
ports that any local user can reach, so it is started only for ``--executor
dask`` without a scheduler, and then with a temporary TLS certificate that only
this process and its workers hold (``Security.temporary()``: mutual TLS, a
connection without the key is refused) and no dashboard.  An existing cluster
named by ``--scheduler`` / ``--scheduler-file`` / ``DASK_SCHEDULER_ADDRESS``
is its owner's, security included.

A file that fails becomes a :class:`Failure` (its code, message and JSON
position); the others are still reduced, so one run reports every bad file.
Results come back in input order whatever the executor, so the CSV is
byte-identical across executors.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass

from effspec.diagnostics import printable
from effspec.ranks.traces.formats import suffixes
from effspec.ranks.traces.parse import MAX_TRACE_BYTES, WHOLE_LIMIT, TraceError
from effspec.ranks.traces.reduce import TraceSummary, reduce_trace


def suffix_list(names: tuple[str, ...]) -> str:
    """``.json or .json.gz``; ``.a, .b or .c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


@dataclass(frozen=True)
class Options:
    ranks_per_node: int | None = None
    whole_limit: int = WHOLE_LIMIT
    max_bytes: int = MAX_TRACE_BYTES
    allow_hardlinks: bool = False
    rank_from: str = "field"  # field | name: a trace without distributedInfo.rank takes its file name's
    window: str | None = None  # a record_function label to cut steps on, in place of ProfilerStep#N
    collectives: tuple[str, ...] = ()  # --collective: more kernel names counted as communication


@dataclass(frozen=True)
class Item:
    """One trace to reduce: the path opened, the name shown and recorded, and
    whether it was found in a folder (then ``path`` is the folder's canonical
    path joined with the listed name, opened beneath the folder)."""

    path: str
    shown: str
    beneath: bool = False


@dataclass(frozen=True)
class Failure:
    file: str
    code: str
    message: str
    help: str = ""
    line: int = 0
    column: int = 0


def discover(paths: list[str]) -> tuple[list[Item], list[Failure]]:
    """Every trace: files as given, a folder's entries whose names end with a trace format's suffix
    (``*.json`` / ``*.json.gz``: effspec.ranks.traces.formats; not recursive; anything else with those
    names, a symlink leading outside or a FIFO, is refused when it is opened), sorted by name."""
    known = suffixes()
    found: list[Item] = []
    problems: list[Failure] = []
    for arg in paths:
        if os.path.isdir(arg):
            try:
                names = sorted(n for n in os.listdir(arg) if n.endswith(known))
            except OSError as exc:
                problems.append(Failure(arg, "EFF020", f"the folder cannot be read: {exc.strerror or exc}"))
                continue
            real = os.path.realpath(arg)
            children = [Item(os.path.join(real, n), os.path.join(arg, n), True) for n in names
                        if not os.path.isdir(os.path.join(real, n))]
            if not children:
                problems.append(Failure(arg, "EFF020", f"the folder holds no {suffix_list(known)} trace"))
            found += children
        elif os.path.lexists(arg):
            found.append(Item(arg, arg))
        else:
            problems.append(Failure(arg, "EFF020", "no such file or folder"))
    seen: set[str] = set()
    unique = []
    for item in found:
        key = os.path.realpath(item.path)
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique, problems


def reduce_one(item: Item, options: Options) -> TraceSummary | Failure:
    """One file, never raising for a bad file (the worker's entry point)."""
    try:
        return reduce_trace(item.path, item.shown, options.ranks_per_node, options.whole_limit, options.max_bytes,
                            item.beneath, options.allow_hardlinks, options.rank_from, options.window,
                            options.collectives)
    except TraceError as exc:
        return Failure(item.shown, exc.code, exc.message, exc.help, exc.line, exc.column)
    except MemoryError:
        return Failure(item.shown, "EFF030", "the trace does not fit in this worker's memory",
                       "lower --stream-above so that large traces are read in chunks")


class Progress:
    """``files, MB/s, ETA`` on one rewritten stderr line, only on a terminal."""

    def __init__(self, total_files: int, total_bytes: int, stream=None, enabled: bool | None = None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total_files, self.total_bytes = total_files, max(total_bytes, 1)
        self.files = self.bytes = 0
        self.start = self.last = time.monotonic()

    def update(self, nbytes: int) -> None:
        self.files += 1
        self.bytes += nbytes
        now = time.monotonic()
        if not self.enabled or (now - self.last < 0.1 and self.files < self.total_files):
            return
        self.last = now
        self.stream.write("\r" + self.line(now - self.start))
        self.stream.flush()

    def line(self, elapsed: float) -> str:
        rate = self.bytes / elapsed if elapsed > 0 else 0.0
        left = (self.total_bytes - self.bytes) / rate if rate > 0 else 0.0
        eta = f"{int(left) // 3600}:{int(left) % 3600 // 60:02d}:{int(left) % 60:02d}"
        return (f"traces {self.files:,}/{self.total_files:,} files  {self.bytes / 1e6:,.1f} MB  "
                f"{rate / 1e6:,.1f} MB/s  ETA {eta} ")

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def dask_available() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")
_ADDRESS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9._-]*)"
                      r":(?P<port>[^:/\[\]]*)")
MAX_SCHEDULER_FILE = 1 << 20  # a scheduler file is a few hundred bytes of JSON


def check_address(text: object, where: str) -> str:
    """A Dask scheduler address, ``SCHEME://HOST:PORT``, checked without connecting; TraceError otherwise."""
    shown = printable(str(text))[:200]
    help = "write it as the scheduler prints it, e.g. tcp://10.0.0.5:8786 or tls://[::1]:8786"
    if not isinstance(text, str) or not text:
        raise TraceError("EFF003", f"{where}: the scheduler address is empty", help)
    m = _ADDRESS.fullmatch(text)
    if "://" not in text:
        raise TraceError("EFF003", f"{where}: `{shown}` has no scheme: not SCHEME://HOST:PORT", help)
    if m is None:
        raise TraceError("EFF003", f"{where}: `{shown}` is not SCHEME://HOST:PORT", help)
    if m["scheme"] not in SCHEMES:
        raise TraceError("EFF003", f"{where}: `{shown}`: the scheme `{printable(m['scheme'])}` is not a Dask "
                         f"protocol ({', '.join(SCHEMES)})", help)
    port = m["port"]
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise TraceError("EFF003", f"{where}: `{shown}`: the port `{printable(port)[:20]}` is not a number "
                         "from 1 to 65535", help)
    return text


def read_scheduler_file(path: str) -> str:
    """The ``address`` in a Dask scheduler file (JSON, as ``dask scheduler --scheduler-file`` writes it)."""
    from effspec.front.files import read_regular_file

    try:
        raw = read_regular_file(path, MAX_SCHEDULER_FILE, follow_symlinks=True)
    except IsADirectoryError:
        raise TraceError("EFF020", "--scheduler-file: is a folder, not a scheduler file") from None
    except OSError as exc:
        raise TraceError("EFF020", f"--scheduler-file: cannot be read: {exc.strerror or exc}",
                         "name the file the scheduler wrote (dask scheduler --scheduler-file FILE)") from None
    if len(raw) > MAX_SCHEDULER_FILE:
        raise TraceError("EFF030", f"--scheduler-file: larger than {MAX_SCHEDULER_FILE:,} bytes: not a scheduler file")
    help = 'a scheduler file is JSON with the scheduler\'s "address", as `dask scheduler --scheduler-file` writes it'
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=lambda name: None)
    except UnicodeDecodeError:
        raise TraceError("EFF003", "--scheduler-file: not UTF-8 text", help) from None
    except json.JSONDecodeError as exc:
        raise TraceError("EFF003", f"--scheduler-file: invalid JSON: {exc.msg}", help, exc.lineno, exc.colno) from None
    except RecursionError:
        raise TraceError("EFF003", "--scheduler-file: invalid JSON: nested too deeply", help) from None
    if not isinstance(doc, dict):
        raise TraceError("EFF003", "--scheduler-file: not a JSON object", help)
    if "address" not in doc:
        raise TraceError("EFF003", '--scheduler-file: no "address" member', help)
    if not isinstance(doc["address"], str):
        raise TraceError("EFF003", '--scheduler-file: "address" is not a string', help)
    return check_address(doc["address"], "--scheduler-file")


def scheduler_address(scheduler: str | None, scheduler_file: str | None, use_env: bool = True) -> str | None:
    """The checked address of the scheduler to attach to (``--scheduler``, then ``--scheduler-file``, then
    ``DASK_SCHEDULER_ADDRESS`` when ``use_env``), or None; TraceError for a malformed one.  Nothing is
    connected to."""
    if scheduler is not None:
        return check_address(scheduler, "--scheduler")
    if scheduler_file is not None:
        return read_scheduler_file(scheduler_file)
    env = os.environ.get("DASK_SCHEDULER_ADDRESS") if use_env else None
    return check_address(env, "DASK_SCHEDULER_ADDRESS") if env else None


def choose_executor(executor: str, files: int, jobs: int | None, address: str | None) -> str:
    """auto: Dask only to attach to a named scheduler; else a process pool (no network listener); one file
    or -j 1 serially."""
    if executor != "auto":
        return executor
    if address:
        return "dask"
    if files <= 1 or jobs == 1:
        return "serial"
    return "processes"


def run_map(items: list[Item], options: Options, executor: str = "serial", jobs: int | None = None,
            address: str | None = None, progress: Progress | None = None) -> list[TraceSummary | Failure]:
    """Reduce every item; results in input order.  ``address``: the (checked) Dask scheduler to attach to;
    None with the dask executor starts a LocalCluster over TLS."""
    sizes = [_size(item.path) for item in items]
    progress = progress or Progress(len(items), sum(sizes), enabled=False)
    results: list[TraceSummary | Failure | None] = [None] * len(items)
    try:
        if executor == "serial":
            for i, item in enumerate(items):
                results[i] = reduce_one(item, options)
                progress.update(sizes[i])
        elif executor == "processes":
            _processes(items, options, jobs, results, sizes, progress)
        elif executor == "dask":
            _dask(items, options, jobs, address, results, sizes, progress)
        else:
            raise ValueError(f"unknown executor {executor!r}")
    finally:
        progress.close()
    return [r for r in results if r is not None]


def _processes(items, options, jobs, results, sizes, progress) -> None:
    from concurrent.futures import ProcessPoolExecutor, as_completed

    workers = max(1, min(jobs or os.cpu_count() or 1, len(items)))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(reduce_one, item, options): i for i, item in enumerate(items)}
        for future in as_completed(futures):
            i = futures[future]
            results[i] = future.result()
            progress.update(sizes[i])


BATCHES_PER_WORKER = 8  # Dask tasks of several files: a task's overhead is paid per batch, not per file
MAX_BATCH = 64


def _batches(n: int, workers: int) -> list[list[int]]:
    """Consecutive runs of item indices, about BATCHES_PER_WORKER per worker (at most MAX_BATCH items each)."""
    size = max(1, min(MAX_BATCH, n // (workers * BATCHES_PER_WORKER)))
    return [list(range(i, min(i + size, n))) for i in range(0, n, size)]


def reduce_batch(items: list[Item], options: Options) -> list[TraceSummary | Failure]:
    """Several files in one task (the Dask worker's entry point)."""
    return [reduce_one(item, options) for item in items]


# Every Dask server also starts a plain-HTTP server on loopback (the scheduler's on 8787) whatever the
# dashboard setting, with read-only pages (workers, logs, call stacks), metrics and a proxy to the
# workers' servers: a LocalCluster gets none of those routes, so any request to it is a 404.
NO_HTTP_ROUTES: dict[str, list[str]] = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}


def local_cluster(workers: int):
    """A LocalCluster on loopback that only this process can use: TLS with a temporary, in-memory certificate
    (the scheduler, the workers and the client all require it), no dashboard and no HTTP pages."""
    import dask
    from distributed import LocalCluster
    from distributed.security import Security

    try:
        security = Security.temporary()
    except ImportError:
        raise TraceError("EFF020", "a local Dask cluster needs the `cryptography` package for TLS",
                         "pip install 'effspec[scale]', or use --executor processes") from None
    with dask.config.set(NO_HTTP_ROUTES):  # the nannies hand this configuration to their workers
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                            protocol="tls://", security=security, dashboard_address=None,
                            worker_dashboard_address=None)


def _attach(Client, address: str):
    """A client of the scheduler at ``address``, with the TLS settings of Dask's configuration (the cluster
    owner's); a TLS address without them is a TraceError, found before connecting."""
    from distributed.security import Security

    security = Security()  # distributed.comm.tls.* from Dask's configuration
    if address.startswith(("tls://", "wss://")) and security.get_connection_args("client").get("ssl_context") is None:
        raise TraceError("EFF020", f"the scheduler {printable(address)} speaks TLS, and Dask's configuration has no "
                         "client certificate for it", "set distributed.comm.tls.ca-file, .client.cert and .client.key "
                         "(DASK_DISTRIBUTED__COMM__TLS__CA_FILE, …) as the cluster's owner says")
    try:
        return Client(address, security=security)
    except (TypeError, ValueError) as exc:  # what distributed raises for a configuration it cannot use
        raise TraceError("EFF020", f"cannot attach to the scheduler {printable(address)}: {exc}",
                         "check Dask's configuration for this cluster (distributed.comm.*)") from None


def _dask(items, options, jobs, address, results, sizes, progress) -> None:
    from distributed import Client, as_completed

    cluster = None
    if address:
        client = _attach(Client, address)
    else:
        cluster = local_cluster(max(1, min(jobs or os.cpu_count() or 1, len(items))))
        try:
            client = Client(cluster, security=cluster.security)
        except BaseException:
            cluster.close()
            raise
    try:
        if cluster is not None:  # local workers may run in another folder: absolute paths
            items = [Item(os.path.abspath(i.path), i.shown, i.beneath) for i in items]
        batches = _batches(len(items), len(client.scheduler_info().get("workers", {})) or 1)
        futures = client.map(reduce_batch, [[items[j] for j in b] for b in batches], [options] * len(batches), pure=False)
        index = {f.key: k for k, f in enumerate(futures)}
        for future in as_completed(futures):
            for j, result in zip(batches[index[future.key]], future.result(), strict=True):
                results[j] = result
                progress.update(sizes[j])
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
