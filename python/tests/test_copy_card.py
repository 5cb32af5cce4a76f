"""A ``COPY`` of a release through Python writes its guarantee card beside the output, as
the engine and ``dfanon`` do: as the last statement (run when collected) and before it."""

from __future__ import annotations

import json

import datafusion

import dfanon

SETUP = (
    "CREATE TABLE v(pid INT, age INT) AS VALUES (7, 31), (8, 32), (9, 33), (10, 36); "
    "CREATE TABLE v_hierarchy_age AS SELECT * FROM interval_hierarchy('30..39', '5', '10')"
)
RELEASE = "anonymize('v', method => 'kanon', qi => 'age', k => 2)"


def test_a_copy_of_a_release_writes_its_card(tmp_path):
    ctx = datafusion.SessionContext()
    dfanon.register(ctx, access="owner")
    dfanon.sql(ctx, SETUP)
    last = tmp_path / "last.csv"
    done = dfanon.sql(ctx, f"COPY (SELECT * FROM {RELEASE}) TO '{last}' STORED AS CSV")
    assert done.to_pydict() == {"count": [4]}
    first = tmp_path / "first.csv"
    dfanon.sql(ctx, f"COPY (SELECT * FROM {RELEASE}) TO '{first}' STORED AS CSV; SELECT 1")
    for target in (last, first):
        manifest = json.loads((tmp_path / f"{target.name}.manifest.json").read_text())
        assert manifest["output"] == str(target)
        [card] = manifest["releases"]
        assert card["method"] == "kanon"
        assert card["released_rows"] == 4
        assert card["headline"].startswith("Method kanon released 4 rows of 'v'")
    # Other rows over the same target: the card no longer fits, and goes.
    dfanon.sql(ctx, f"COPY (SELECT 1 AS a) TO '{last}' STORED AS CSV").collect()
    assert not (tmp_path / "last.csv.manifest.json").exists()
