"""Shared set-up of the dfanon tests: the NPS-shaped demo data and its hierarchies."""

from __future__ import annotations

import os
import pathlib
import re

import datafusion
import pyarrow as pa
import pytest

import dfanon

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: The IPA reference implementation's hierarchies of the NPS data (views named
#: nps_hierarchy_<column>), as SQL statements.
HIERARCHIES = [
    s.strip()
    for s in re.sub(r"--[^\n]*", "", (ROOT / "sql/nps_hierarchies.sql").read_text()).split(";")
    if s.strip()
]

QI = "age, sex, los, surgery, location"

# The owner's release policy of the NPS demo for public users: the hierarchies are public,
# each quasi-identifier bound to its own, the disease codes counted over the published list.
NPS_POLICY = {
    "tables": ["nps_hierarchy_*"],
    "sources": {
        "nps": {
            "qi": {c: f"nps_hierarchy_{c}" for c in QI.split(", ")},
            "informative": {"disease": "nps_hierarchy_disease"},
        }
    },
}


def scratch() -> pathlib.Path:
    """A folder for files the tests write (kept between runs)."""
    path = pathlib.Path(os.environ.get("DFANON_SCRATCH", ROOT / "target" / "python-scratch"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def nps() -> pa.Table:
    """20,000 synthetic NPS-shaped patients (seeded: the same rows every run)."""
    ctx = datafusion.SessionContext()
    dfanon.register(ctx, access="owner")
    return dfanon.sql(ctx, "SELECT * FROM nps_demo(rows => 20000, seed => 3)").to_arrow_table()


def context(nps: pa.Table, **options: object) -> datafusion.SessionContext:
    """A context with `nps` and its hierarchies (views over dfanon's functions, made with
    the context's own SQL), registered with `options`."""
    ctx = datafusion.SessionContext()
    ctx.from_arrow(nps, "nps")
    dfanon.register(ctx, **options)  # type: ignore[arg-type]
    for statement in HIERARCHIES:
        ctx.sql(statement)
    return ctx


def rows(table: pa.Table) -> list[tuple]:
    """The rows of `table`, sorted."""
    columns = table.to_pydict()
    return sorted(zip(*columns.values()))


def budget(ctx: datafusion.SessionContext) -> tuple[int, float]:
    """Releases charged and epsilon spent on the table nps."""
    spent = dfanon.sql(
        ctx,
        "SELECT releases, epsilon_spent FROM privacy_budget() "
        "WHERE table_name = 'datafusion.public.nps'",
    ).to_pydict()
    if not spent["releases"]:
        return 0, 0.0
    return spent["releases"][0], spent["epsilon_spent"][0]
