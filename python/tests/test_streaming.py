"""A release far larger than the memory it uses streams to Parquet through the FFI.

The release is a DP histogram over few cells (sex, surgery, location, disease), so the
aggregate that reads the source is small, and what would grow with the rows is only the
release itself: it streams from the histogram, batch by batch, to the Parquet writer."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pyarrow.parquet as pq
from conftest import HIERARCHIES, scratch

ROWS = 30_000_000

MAKE = textwrap.dedent(
    """
    import sys, datafusion, dfanon
    ctx = datafusion.SessionContext()
    dfanon.register(ctx, access="owner")
    dfanon.sql(ctx, f"COPY (SELECT * FROM nps_demo(rows => {sys.argv[2]}, seed => 5)) "
                    f"TO '{sys.argv[1]}' STORED AS PARQUET").collect()
    """
)

RELEASE = textwrap.dedent(
    """
    import resource, sys, datafusion, dfanon
    ctx = datafusion.SessionContext()
    ctx.register_parquet("big", sys.argv[1])
    dfanon.register(ctx, access="owner")
    for statement in sys.argv[3].split(";"):
        ctx.sql(statement.replace("nps_hierarchy_", "big_hierarchy_"))
    release = dfanon.anonymize(ctx, "big", method="dp_histogram",
                               qi="sex, surgery, location", sensitive="disease",
                               epsilon=1.0, levels="sex=0, surgery=0, location=1")
    release.write_parquet(sys.argv[2])
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
    """
)


def test_a_large_release_streams_to_parquet_in_bounded_memory():
    folder = scratch()
    source = folder / f"big_{ROWS}.parquet"
    if not source.exists():
        subprocess.run([sys.executable, "-c", MAKE, str(source), str(ROWS)], check=True)
    out = folder / "big_release.parquet"
    done = subprocess.run(
        [sys.executable, "-c", RELEASE, str(source), str(out), ";".join(HIERARCHIES)],
        check=True,
        capture_output=True,
        text=True,
    )
    peak_mb = int(done.stdout.split()[-1])
    released = pq.ParquetFile(out)
    # Its size as Arrow columns in memory, read back a batch at a time.
    in_memory_mb = sum(b.nbytes for b in released.iter_batches(batch_size=1 << 16)) / 2**20
    # The dp_histogram release keeps every row (plus or minus noise).
    assert abs(released.metadata.num_rows - ROWS) < ROWS * 0.01
    # Its columns take several times the memory the whole process ever used.
    assert in_memory_mb > 2 * peak_mb, (in_memory_mb, peak_mb)
