"""`effspec traces` keeps the audit's promises (issue 26, the traces / per-rank CSV items).

- The default executor for many traces opens no network listener (a process
  pool); a local Dask cluster is started only on request, over TLS with a
  temporary certificate and no dashboard; every executor writes the same bytes.
- A malformed ``--scheduler``, ``--scheduler-file`` or ``DASK_SCHEDULER_ADDRESS``
  is a coded diagnostic, found before anything is connected to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from effspec.cli import main

HERE = Path(__file__).resolve().parents[1]  # tests/
HTA = HERE / "fixtures" / "traces" / "hta"
CPU = HERE / "fixtures" / "traces" / "cpu"
FOLDER = CPU / "straggler" / "traces"  # four gloo ranks, 32 rows


def run_traces(*args) -> tuple[int, str]:
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["traces", *map(str, args)])
    return status, err.getvalue()


# ---------------------------------------------------------------------------- 2. no listener by default

# Installed in every Python process of the run's tree (the CLI, its forked pool
# workers, spawned Dask workers) through sitecustomize: each bind of an IPv4 or
# IPv6 socket is written down with the process's id.
_BIND_LOG_HOOK = textwrap.dedent("""
    import os, socket, sys

    _LOG = os.environ["EFFSPEC_TEST_BIND_LOG"]

    def _hook(event, args):
        if event == "socket.bind" and args[0].family in (socket.AF_INET, socket.AF_INET6):
            with open(_LOG, "a") as fh:
                fh.write(f"{os.getpid()} {args[1]!r}\\n")

    sys.addaudithook(_hook)
""")


def _binds_during(tmp_path: Path, *args) -> tuple[subprocess.CompletedProcess, int, list[tuple[int, str]]]:
    """Run `effspec traces ARGS` in a child; its exit, its pid, and every inet bind in its process tree."""
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(_BIND_LOG_HOOK)
    log = tmp_path / "binds.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])),
           "EFFSPEC_TEST_BIND_LOG": str(log)}
    env.pop("DASK_SCHEDULER_ADDRESS", None)
    proc = subprocess.Popen([sys.executable, "-m", "effspec", "traces", *map(str, args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=300)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    binds = [(int(pid), address) for pid, address in
             (line.split(" ", 1) for line in log.read_text().splitlines())] if log.exists() else []
    return done, proc.pid, binds


def test_many_traces_are_reduced_without_a_network_listener(tmp_path):
    """Before: with dask installed, `auto` started a LocalCluster on 127.0.0.1
    (no authentication) and any local user could run code in its workers."""
    pytest.importorskip("distributed", reason="the old default needed dask installed to listen")
    out = tmp_path / "r.csv"
    done, _pid, binds = _binds_during(tmp_path, FOLDER, "-o", out, "-j", "2")
    assert done.returncode == 0, done.stderr
    assert "4 traces (processes), 32 rows" in done.stderr
    assert binds == []


def test_the_bind_log_sees_the_workers_of_a_run(tmp_path):
    """The control of the test above: a run that does listen (a local Dask
    cluster, asked for) is seen binding, in the CLI and in its worker processes."""
    pytest.importorskip("distributed")
    done, pid, binds = _binds_during(tmp_path, FOLDER, "-o", tmp_path / "r.csv", "-j", "2", "--executor", "dask")
    assert done.returncode == 0, done.stderr
    assert any(p == pid for p, _ in binds) and any(p != pid for p, _ in binds), binds
    assert all("127.0.0.1" in address for _, address in binds), binds


def _http_status(port: int, path: str) -> int:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_local_dask_cluster_is_tls_only_and_has_no_dashboard(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    import socket
    import ssl

    from distributed.security import Security

    from effspec.ranks.traces import run

    seen = {}
    made = run.local_cluster

    def spy(workers):
        cluster = made(workers)
        seen["workers"] = workers
        seen["security"] = cluster.security
        seen["scheduler"] = cluster.scheduler_address
        seen["worker_addresses"] = sorted(cluster.scheduler.workers)
        # Dask always starts an HTTP server (named "dashboard"), even without one: it serves nothing.
        seen["http"] = [_http_status(cluster.scheduler.http_server.port, path)
                        for path in ("/info/main/workers.html", "/metrics", "/health", "/json/counts.json", "/status")]
        seen["worker_http"] = [_http_status(w["services"]["dashboard"], path)
                               for w in cluster.scheduler_info["workers"].values() for path in ("/metrics", "/health")]
        # A local user without the temporary certificate: the TLS handshake is refused.
        host, port = cluster.scheduler_address.removeprefix("tls://").rsplit(":", 1)
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        with socket.create_connection((host, int(port)), timeout=10) as raw:
            try:
                with context.wrap_socket(raw) as tls:
                    tls.settimeout(10)
                    seen["stranger"] = tls.recv(1) or b"closed"
            except (ssl.SSLError, ConnectionError) as exc:
                seen["stranger"] = exc
        return cluster

    monkeypatch.setattr(run, "local_cluster", spy)
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    status, err = run_traces(FOLDER, "-o", tmp_path / "r.csv", "--executor", "dask", "-j", "2")
    assert status == 0 and "4 traces (dask), 32 rows" in err, err
    assert seen["workers"] == 2
    assert isinstance(seen["security"], Security) and seen["security"].require_encryption
    assert seen["security"].tls_ca_file and "BEGIN CERTIFICATE" in seen["security"].tls_ca_file  # in memory
    assert seen["scheduler"].startswith("tls://127.0.0.1:")
    assert len(seen["worker_addresses"]) == 2 and all(a.startswith("tls://127.0.0.1:") for a in seen["worker_addresses"])
    assert seen["http"] == [404] * 5
    assert seen["worker_http"] == [404] * 4
    assert seen["stranger"] == b"closed" or isinstance(seen["stranger"], (ssl.SSLError, ConnectionError)), seen["stranger"]


def test_every_executor_writes_the_same_bytes(tmp_path, monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    runs = {"j1": ["-j", "1"], "serial": ["--executor", "serial"], "processes": ["-j", "2"],
            "processes3": ["--executor", "processes", "-j", "3"]}
    try:
        import distributed  # noqa: F401
        runs["dask"] = ["--executor", "dask", "-j", "2"]
    except ImportError:
        pass
    outputs = {}
    for name, args in runs.items():
        status, err = run_traces(FOLDER, "-o", tmp_path / f"{name}.csv", *args)
        assert status == 0, err
        outputs[name] = (tmp_path / f"{name}.csv").read_bytes()
    assert "(serial)" in err or "(dask)" in err or "(processes)" in err
    assert len(set(outputs.values())) == 1, sorted(outputs)
    assert outputs["j1"].count(b"\n") == 32 + 1 + 5  # rows, header, five provenance lines


def test_help_says_whose_security_an_existing_cluster_is(capsys):
    assert main(["traces", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "its security (TLS, who may submit work) is its owner's" in text
    assert "opens no network port" in text
    assert "over TLS with a temporary certificate and no dashboard" in text
    spec = " ".join((HERE.parent / "spec" / "traces.md").read_text().split())
    assert "An existing cluster's security is its owner's" in spec


# ---------------------------------------------------------------------------- 11. malformed schedulers


def _refused(capsys, args, code: str, text: str, where: str = "traces") -> str:
    status = main(["traces", str(FOLDER), "-o", "/nonexistent-dir/never.csv", *map(str, args)])
    err = capsys.readouterr().err
    assert status == 2, err
    first = err.splitlines()[0]
    assert first.startswith(f"error[{code}]: ") and text in first, err
    assert f"--> {where}\n" in err, err
    assert "Traceback" not in err and "EFF099" not in err
    return err


@pytest.mark.parametrize("address, text", [
    ("127.0.0.1:8786", "--scheduler: `127.0.0.1:8786` has no scheme: not SCHEME://HOST:PORT"),
    ("localhost", "--scheduler: `localhost` has no scheme"),
    ("tcp://127.0.0.1", "--scheduler: `tcp://127.0.0.1` is not SCHEME://HOST:PORT"),
    ("tcp://127.0.0.1:", "--scheduler: `tcp://127.0.0.1:`: the port `` is not a number from 1 to 65535"),
    ("tcp://127.0.0.1:port", "the port `port` is not a number from 1 to 65535"),
    ("tcp://127.0.0.1:99999", "the port `99999` is not a number from 1 to 65535"),
    ("tcp://127.0.0.1:0", "the port `0` is not a number from 1 to 65535"),
    ("tcp://127.0.0.1:-1", "the port `-1` is not a number"),
    ("tcp://127.0.0.1:８７８６", "the port `８７８６` is not a number"),  # fullwidth digits: int() would take them
    ("tcp://::1:8786", "is not SCHEME://HOST:PORT"),  # IPv6 needs brackets
    ("tcp://[::1", "is not SCHEME://HOST:PORT"),
    ("http://127.0.0.1:8786", "the scheme `http` is not a Dask protocol (tcp, tls, ws, wss, ucx)"),
    ("://127.0.0.1:8786", "is not SCHEME://HOST:PORT"),
    ("tcp://:8786", "is not SCHEME://HOST:PORT"),
    ("tcp://127.0.0.1:8786/path", "`tcp://127.0.0.1:8786/path` is not SCHEME://HOST:PORT"),
    ("tcp://host name:8786", "is not SCHEME://HOST:PORT"),
    ("tcp://127.0.0.1:87\x1b[2J86", "`tcp://127.0.0.1:87\\x1b[2J86` is not SCHEME://HOST:PORT"),  # shown escaped
    ("", "--scheduler: the scheduler address is empty"),
])
def test_a_malformed_scheduler_address_is_a_coded_error(capsys, address, text):
    _refused(capsys, ["--scheduler", address], "EFF003", text)


def test_a_malformed_dask_scheduler_address_variable_is_a_coded_error(capsys, monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:http")
    _refused(capsys, [], "EFF003", "DASK_SCHEDULER_ADDRESS: `tcp://127.0.0.1:http`: the port `http` is not a number")
    # Not read when the run does not use Dask.
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"effspec-trust-{os.getpid()}.csv"
    try:
        assert main(["traces", str(FOLDER), "-o", str(out), "--executor", "processes", "-j", "2"]) == 0
    finally:
        out.unlink(missing_ok=True)


@pytest.mark.parametrize("content, code, text, place", [
    (None, "EFF020", "--scheduler-file: cannot be read: No such file or directory", ""),
    (b"", "EFF003", "--scheduler-file: invalid JSON: Expecting value", ":1:1"),
    (b'{"address": "tcp://127.0.0.1:8786",\n  oops}', "EFF003", "--scheduler-file: invalid JSON: Expecting property name",
     ":2:3"),
    (b"\xff\xfe", "EFF003", "--scheduler-file: not UTF-8 text", ""),
    (b'["tcp://127.0.0.1:8786"]', "EFF003", "--scheduler-file: not a JSON object", ""),
    (b'{"type": "Scheduler", "id": "Scheduler-1"}', "EFF003", '--scheduler-file: no "address" member', ""),
    (b'{"address": 8786}', "EFF003", '--scheduler-file: "address" is not a string', ""),
    (b'{"address": null}', "EFF003", '--scheduler-file: "address" is not a string', ""),
    (b'{"address": "127.0.0.1:8786"}', "EFF003", "--scheduler-file: `127.0.0.1:8786` has no scheme", ""),
    (b'{"address": "tcp://127.0.0.1:NaN"}', "EFF003", "--scheduler-file: `tcp://127.0.0.1:NaN`: the port `NaN`", ""),
    (b"[" * 100_000, "EFF003", "--scheduler-file: invalid JSON: nested too deeply", ""),
    (b" " * ((1 << 20) + 1), "EFF030", "--scheduler-file: larger than 1,048,576 bytes", ""),
])
def test_a_malformed_scheduler_file_is_a_coded_error(tmp_path, capsys, content, code, text, place):
    path = tmp_path / "scheduler.json"
    if content is not None:
        path.write_bytes(content)
    _refused(capsys, ["--scheduler-file", path], code, text, f"{path}{place}")


def test_a_scheduler_file_that_is_a_folder_or_a_fifo_is_a_coded_error(tmp_path, capsys):
    _refused(capsys, ["--scheduler-file", tmp_path], "EFF020", "--scheduler-file: is a folder", str(tmp_path))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    _refused(capsys, ["--scheduler-file", fifo], "EFF020", "--scheduler-file: cannot be read", str(fifo))


def test_a_well_formed_scheduler_file_is_read_for_its_address(tmp_path):
    from effspec.ranks.traces.run import scheduler_address

    path = tmp_path / "scheduler.json"
    path.write_text(json.dumps({"type": "Scheduler", "address": "tls://[::1]:8786", "services": {}}))
    assert scheduler_address(None, str(path)) == "tls://[::1]:8786"
    assert scheduler_address("tcp://node-7.cluster.local:8786", str(path)) == "tcp://node-7.cluster.local:8786"


# ---------------------------------------------------------------------------- 8. no formula in ranks.csv


def write_trace(path: Path, rank: int = 0, world: int = 1, host: str | None = "h0", steps: int = 3) -> Path:
    """A small gloo trace: per 100 µs step, a 60 µs op and a 30 µs all-reduce on another thread."""
    events = []
    for k in range(steps):
        t = 1000.0 + 100.0 * k
        events += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{k}", "pid": 1, "tid": 1, "ts": t, "dur": 100.0},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t, "dur": 60.0},
            {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2, "ts": t + 62.0, "dur": 30.0},
        ]
    doc = {"distributedInfo": {"backend": "gloo", "rank": rank, "world_size": world}, "traceEvents": events}
    if host is not None:
        doc["host_name"] = host
    path.write_text(json.dumps(doc))
    return path


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# host name -> the node written: a first +, - or @ is percent-encoded like the characters that are never kept.
HOSTS = {
    "+cmd|' /C calc'!A0": "%2Bcmd%7C%27%20%2FC%20calc%27%21A0",
    "-2+3": "%2D2+3",
    "@SUM(A1)": "%40SUM%28A1%29",
    "=1+1": "%3D1+1",
    "\t=1": "%09%3D1",
    "-": "%2D",
    "gpu-node-7+a@b": "gpu-node-7+a@b",  # inside a name they stay: only the first character starts a formula
}


def test_no_cell_of_a_written_csv_starts_a_formula_and_the_loader_reads_it(tmp_path):
    from effspec.ranks.loader import load_rank_table

    folder = tmp_path / "traces"
    folder.mkdir()
    for rank, host in enumerate(HOSTS):
        write_trace(folder / f"rank,-1+{rank}.json", rank=rank, world=len(HOSTS), host=host)
    out = tmp_path / "ranks.csv"
    status, err = run_traces(folder, "-o", out, "-j", "1")
    assert status == 0, err
    import csv

    lines = out.read_text().splitlines()
    cells = [cell for row in csv.reader(lines) for cell in row]  # the comment lines too, split at their commas
    assert len(cells) > 10 * len(HOSTS)
    starting = [c for c in cells if c.startswith(FORMULA_START) and not _is_number(c)]
    assert starting == []
    assert f"file={folder}/rank%2C-1+0.json " in out.read_text()  # the comma of a file name is encoded
    rows = list(csv.DictReader([ln for ln in lines if not ln.startswith("#")]))
    assert {r["rank"]: r["node"] for r in rows} == {str(k): node for k, node in enumerate(HOSTS.values())}
    diags: list = []
    table = load_rank_table(str(out), "ranks.csv", None, diags)
    assert diags == [] and table is not None
    assert sorted(table.node_names) == sorted(HOSTS.values())
    assert [table.node_names[i] for i in table.node[::3]] == list(HOSTS.values())  # three steps a rank


# ---------------------------------------------------------------------------- 4. memory bounded in the file

_PEAK_CHILD = """
import sys
sys.path.insert(0, {tests!r})
from peak import PEAK_KB
from effspec.ranks.traces.parse import TraceError
from effspec.ranks.traces.reduce import reduce_trace
import numpy, msgspec  # noqa: F401 - as a worker has them, before the baseline
base = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS:'))
try:
    s = reduce_trace(sys.argv[1], whole_limit=int(sys.argv[2]))
    outcome = s.parser + " " + str(s.events)
except TraceError as exc:
    outcome = exc.code + " " + exc.message
print((eval(PEAK_KB) - base) * 1024, outcome, sep="\\t")
"""


def _peak_over_file(path: Path, whole_limit: int) -> tuple[float, str]:
    """The reduction's peak in a fresh child (its own VmHWM less its size after the imports), over the JSON's size."""
    out = subprocess.run([sys.executable, "-c", _PEAK_CHILD.format(tests=str(HERE)), str(path), str(whole_limit)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    peak, outcome = out.stdout.strip().split("\t")
    return float(peak) / path.stat().st_size, outcome


@pytest.mark.parametrize("event, events, outcome", [
    ("{}", 5_000_000, "EFF003 no `ProfilerStep#N` span"),  # the case: 34x the file before
    ('{"ph":"X","cat":"kernel","ts":1,"dur":1}', 400_000, "400001"),  # the smallest kept event: 7x before
])
def test_a_trace_is_reduced_in_memory_bounded_by_its_size(tmp_path, event, events, outcome):
    """Whole (msgspec, a batch of events at a time) and chunked, the peak stays
    under 5x the JSON (measured: 2.0x for `{}` events, 3.1x to 3.4x for the smallest
    kernels, whose compact arrays and interval sweep are the peak;
    benchmarks/traces_memory_bench.py)."""
    pytest.importorskip("msgspec")
    path = tmp_path / "t.json"
    step = '{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","ts":0,"dur":1000000},' if event != "{}" else ""
    path.write_text('{"distributedInfo":{"rank":0,"world_size":1},"traceEvents":[' + step
                    + ",".join([event] * events) + "]}")
    assert path.stat().st_size > 15e6
    for whole_limit, parser in ((256 << 20, "msgspec"), (1, "chunked")):
        ratio, seen = _peak_over_file(path, whole_limit)
        assert outcome in seen and (outcome.startswith("EFF") or seen.startswith(parser)), seen
        assert ratio < (3.0 if event == "{}" else 5.0), (parser, ratio)


# ---------------------------------------------------------------------------- 9. provenance: declared or verified


def _load(csv_path: Path):
    from effspec.ranks.loader import load_rank_table

    diags: list = []
    table = load_rank_table(str(csv_path.resolve()), csv_path.name, None, diags)
    assert diags == [] and table is not None, diags
    return table


@pytest.fixture
def traced(tmp_path, monkeypatch):
    """`effspec traces traces -o ranks.csv` run in tmp_path: the traces are recorded as `traces/rank-N.json`."""
    folder = tmp_path / "traces"
    folder.mkdir()
    for rank in range(2):
        write_trace(folder / f"rank-{rank}.json", rank=rank, world=2, host=f"h{rank}")
    monkeypatch.chdir(tmp_path)
    status, err = run_traces("traces", "-o", "ranks.csv", "-j", "1")
    assert status == 0, err
    return tmp_path


def test_provenance_is_verified_only_against_the_traces_beside_the_csv(traced, tmp_path_factory):
    csv_text = (traced / "ranks.csv").read_text()
    assert "file=traces/rank-0.json " in csv_text
    assert _load(traced / "ranks.csv").provenance_checks == ("", "verified", "verified")
    # The same lines in a CSV with no traces beside it (made by hand, or copied away): only declared.
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "ranks.csv").write_text(csv_text)
    assert _load(elsewhere / "ranks.csv").provenance_checks == ("", "declared", "declared")
    # Beside it by the file's own name, in the same folder: verified too.
    (elsewhere / "rank-1.json").write_bytes((traced / "traces" / "rank-1.json").read_bytes())
    assert _load(elsewhere / "ranks.csv").provenance_checks == ("", "declared", "verified")


def test_a_trace_changed_since_the_csv_was_written_differs(traced):
    trace = traced / "traces" / "rank-1.json"
    data = trace.read_bytes()
    trace.write_bytes(data.replace(b'"h1"', b'"h9"'))  # same size, another hash
    assert _load(traced / "ranks.csv").provenance_checks == ("", "verified", "differs")
    trace.write_bytes(data + b" ")  # another size
    assert _load(traced / "ranks.csv").provenance_checks == ("", "verified", "differs")


def test_provenance_checks_read_nothing_outside_the_csvs_folder(traced, tmp_path_factory):
    """A hand-made CSV cannot get `verified` by pointing at files elsewhere: a
    symlink out of its folder, an absolute name, `..`, a hard link, a FIFO."""
    csv_text = (traced / "ranks.csv").read_text()
    trace = traced / "traces" / "rank-0.json"
    sha = __import__("hashlib").sha256(trace.read_bytes()).hexdigest()
    size = trace.stat().st_size
    other = tmp_path_factory.mktemp("other")
    os.symlink(traced / "traces", other / "traces")  # leads outside `other`
    lines = [f"# effspec-traces 1: file={name} bytes={size} sha256={sha} rank=0 node=h0"
             for name in ("traces/rank-0.json", str(trace), "../" + trace.parent.parent.name + "/traces/rank-0.json",
                          "hard.json", "fifo.json")]
    os.link(trace, other / "hard.json")
    os.mkfifo(other / "fifo.json")
    body = "\n".join(ln for ln in csv_text.splitlines() if not ln.startswith("#")) + "\n"
    (other / "ranks.csv").write_text("\n".join(lines) + "\n" + body)
    assert _load(other / "ranks.csv").provenance_checks == ("declared",) * 5
    # Copied in as a regular file, the same line verifies: the refusals above were the files', not the line's.
    (other / "rank-0.json").write_bytes(trace.read_bytes())
    assert _load(other / "ranks.csv").provenance_checks[1] == "verified"  # the absolute name's last component


def test_the_report_says_whether_the_provenance_is_declared_or_verified(traced, tmp_path_factory):
    spec = traced / "run.eff"
    spec.write_text("eff 1\n\nrun traced {\n"
                    '  hardware { accelerator = "H100-SXM5-80GB"  count = 2 device  dtype = bf16  peak = catalog }\n'
                    '  ranks { samples = file "ranks.csv" }\n}\n', encoding="utf-8")
    html = traced / "r.html"
    assert main(["report", str(spec), "-o", str(html)]) == 0
    text = html.read_text(encoding="utf-8")
    assert "<caption>Provenance</caption>" in text and "<th>checked</th>" in text
    assert "<td>h1</td><td>verified</td>" in text
    assert "verified: all 2 traces beside the CSV have the recorded size and SHA-256" in text
    # The same CSV alone: its hashes are its claim.
    alone = tmp_path_factory.mktemp("alone")
    (alone / "ranks.csv").write_text((traced / "ranks.csv").read_text())
    (alone / "run.eff").write_text(spec.read_text())
    assert main(["report", str(alone / "run.eff"), "-o", str(alone / "r.html")]) == 0
    text = (alone / "r.html").read_text(encoding="utf-8")
    assert "<td>h1</td><td>declared</td>" in text and "<td>verified</td>" not in text
    assert "declared: the CSV&#39;s own claim; no trace beside the CSV was checked" in text
    # And `check --format json` carries the statuses beside the lines.
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", str(spec), "--format", "json"])
    assert _find_key(json.loads(out.getvalue()), "provenance_checks") == ["", "verified", "verified"]


def _find_key(doc, key):
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        doc = list(doc.values())
    if isinstance(doc, list):
        for item in doc:
            found = _find_key(item, key)
            if found is not None:
                return found
    return None


def test_a_cached_check_sees_a_trace_changed_since(traced, tmp_path_factory):
    """`effspec check`'s result cache records the traces the provenance check opened: a change is a miss."""
    import sysconfig

    spec = traced / "run.eff"
    spec.write_text("eff 1\n\nrun traced {\n"
                    '  hardware { accelerator = "H100-SXM5-80GB"  count = 2 device  dtype = bf16  peak = catalog }\n'
                    '  ranks { samples = file "ranks.csv" }\n}\n', encoding="utf-8")
    cache_dir = tmp_path_factory.mktemp("cache")
    env = {k: v for k, v in os.environ.items() if k not in ("EFFSPEC_NO_CACHE", "EFFSPEC_CACHE_DIR")}
    env.update(XDG_CACHE_HOME=str(cache_dir / "xdg"), NO_COLOR="1")
    effspec = os.path.join(sysconfig.get_path("scripts"), "effspec")

    def checks() -> list:
        proc = subprocess.run([effspec, "check", "run.eff", "--format", "json", "--cache-dir", str(cache_dir / "c")],
                              cwd=traced, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode in (0, 1) and "internal error" not in proc.stderr, proc.stderr
        return _find_key(json.loads(proc.stdout), "provenance_checks")

    assert checks() == ["", "verified", "verified"]
    assert checks() == ["", "verified", "verified"] and list((cache_dir / "c").glob("*.json"))  # served from the cache
    trace = traced / "traces" / "rank-0.json"
    trace.write_bytes(trace.read_bytes().replace(b'"h0"', b'"h7"'))
    assert checks() == ["", "differs", "verified"]


def test_a_tls_scheduler_without_dask_tls_settings_is_a_coded_error(capsys, monkeypatch):
    """Before: distributed's TypeError ("TLS expects a `ssl_context` argument"), an internal error.  Found
    before connecting (the port is loopback's closed port 1 anyway)."""
    pytest.importorskip("distributed")
    for name in [k for k in os.environ if k.startswith("DASK_DISTRIBUTED__COMM__TLS")]:
        monkeypatch.delenv(name)
    _refused(capsys, ["--scheduler", "tls://127.0.0.1:1"], "EFF020",
             "the scheduler tls://127.0.0.1:1 speaks TLS, and Dask's configuration has no client certificate for it")
