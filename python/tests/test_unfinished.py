"""A statement that does not finish leaves nothing behind: Ctrl-C stops a long statement
of ``dfanon.sql`` at once (its work stops, a table it was creating is not created), and a
``COPY`` that fails removes what it wrote."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import datafusion
import pytest

import dfanon

LONG = textwrap.dedent(
    """
    import resource, signal, time, datafusion, dfanon
    # Python leaves SIGINT ignored if it started ignored (a test run in the background).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ctx = datafusion.SessionContext()
    dfanon.register(ctx, access="owner")
    print("started", flush=True)
    try:
        dfanon.sql(ctx, "CREATE TABLE counted AS "
                        "SELECT count(*) AS n FROM generate_series(1, 100000000000)")
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic(), flush=True)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    before = usage.ru_utime + usage.ru_stime
    time.sleep(2)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print("cpu", usage.ru_utime + usage.ru_stime - before, flush=True)
    try:
        dfanon.sql(ctx, "SELECT * FROM counted")
        print("table exists", flush=True)
    except dfanon.DfanonError as e:
        print("no table" if "counted" in str(e) else e, flush=True)
    """
)


def test_ctrl_c_stops_a_long_statement_and_leaves_nothing_behind():
    child = subprocess.Popen(
        [sys.executable, "-c", LONG], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "started"
    # A hundred billion rows take hours; a second in, the statement is well under way.
    time.sleep(1.0)
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    try:
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    lines = out.split("\n")
    assert lines[0].startswith("interrupted"), (out, err[-2000:])
    # Signals are looked for every 100 ms.
    assert float(lines[0].split()[1]) - sent < 0.5
    # The statement's work stopped: the process is idle while it sleeps 2 s (a core still
    # counting would spend 2 s).
    assert lines[1].startswith("cpu") and float(lines[1].split()[1]) < 0.3, out
    assert lines[2] == "no table"
    assert child.returncode == 0


FAILING_COPY = (
    "COPY (SELECT CASE WHEN x < 150000 THEN x ELSE 1 / (x - x) END AS y "
    "FROM generate_series(1, 300000) AS t(x)) TO '{}' STORED AS CSV"
)


def test_a_copy_that_fails_leaves_nothing_behind(tmp_path):
    ctx = datafusion.SessionContext()
    dfanon.register(ctx, access="owner")
    # The first batches are written, then one divides by zero: as the last statement (run
    # when collected) and before it (run by dfanon.sql).
    last = dfanon.sql(ctx, FAILING_COPY.format(tmp_path / "last.csv"))
    with pytest.raises(Exception, match="Divide by zero"):
        last.collect()
    with pytest.raises(dfanon.DfanonError, match="Divide by zero"):
        dfanon.sql(ctx, FAILING_COPY.format(tmp_path / "first.csv") + "; SELECT 1")
    assert list(tmp_path.iterdir()) == []
    # A COPY that succeeds keeps what it wrote.
    done = dfanon.sql(ctx, f"COPY (SELECT 1 AS a) TO '{tmp_path / 'ok.csv'}' STORED AS CSV")
    assert done.to_pydict() == {"count": [1]}
    assert (tmp_path / "ok.csv").read_text() == "a\n1\n"
