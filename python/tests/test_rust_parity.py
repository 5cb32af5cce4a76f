"""A seeded release through Python is the one the `dfanon` binary makes, row for row."""

from __future__ import annotations

import os
import subprocess

import datafusion
import pyarrow.parquet as pq
from conftest import HIERARCHIES, QI, context, rows, scratch

import dfanon

ARGS = "method => 'ipa', qi => 'age, sex, los, surgery, location', sensitive => 'disease', epsilon => 1.0, seed => 11"


def test_a_seeded_release_equals_the_rust_one(nps):
    folder = scratch()
    source = folder / "parity_nps.parquet"
    rust = folder / "parity_rust.parquet"
    pq.write_table(nps, source)
    script = folder / "parity.sql"
    script.write_text(
        ";\n".join(HIERARCHIES)
        + f";\nCREATE EXTERNAL TABLE nps STORED AS PARQUET LOCATION '{source}';\n"
        + f"COPY (SELECT * FROM anonymize('nps', {ARGS})) TO '{rust}' STORED AS PARQUET;\n"
    )
    subprocess.run([os.environ["DFANON_BIN"], "-q", "-f", str(script)], check=True, capture_output=True)
    expected = pq.read_table(rust)

    ctx = datafusion.SessionContext()
    ctx.register_parquet("nps", str(source))
    dfanon.register(ctx, access="owner")
    for statement in HIERARCHIES:
        ctx.sql(statement)
    released = dfanon.anonymize(
        ctx, "nps", method="ipa", qi=QI, sensitive="disease", epsilon=1.0, seed=11
    ).to_arrow_table()
    assert released.num_rows > 1000
    assert released.schema.names == expected.schema.names
    assert rows(released) == rows(expected)
    # The same data from memory gives the same rows too.
    memory = context(nps, access="owner")
    again = dfanon.anonymize(
        memory, "nps", method="ipa", qi=QI, sensitive="disease", epsilon=1.0, seed=11
    ).to_arrow_table()
    assert rows(again) == rows(expected)
