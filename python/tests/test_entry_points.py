"""Every entry point makes the same release of the same request, charged once."""

from __future__ import annotations

import datafusion
import pytest
from conftest import QI, budget, context, rows

import dfanon

IPA = dict(method="ipa", qi=QI, sensitive="disease", epsilon=1.0)
NAMED = "method => 'ipa', qi => 'age, sex, los, surgery, location', sensitive => 'disease', epsilon => 1.0"
PAIRS = "'method =>', 'ipa', 'qi =>', 'age, sex, los, surgery, location', 'sensitive =>', 'disease', 'epsilon =>', 1.0"


def test_one_request_is_one_release_whichever_way_it_comes(nps):
    ctx = context(nps, access="owner")
    first = dfanon.anonymize(ctx, "nps", **IPA).to_arrow_table()
    assert first.num_rows > 0
    assert first.column_names == ["age", "sex", "los", "surgery", "location", "disease"]
    same = [
        dfanon.anonymize(ctx, "nps", **{**IPA, "qi": QI.split(", ")}),
        dfanon.anonymize(ctx, "nps", **{**IPA, "qi": {c: None for c in QI.split(", ")}}),
        dfanon.sql(ctx, f"select * from ANONYMIZE('nps', {NAMED})"),
        ctx.sql(f"SELECT * FROM anonymize('nps', {PAIRS})"),
        ctx.sql(f"SELECT * FROM ANONYMIZE('nps', {PAIRS})"),
    ]
    for df in same:
        assert rows(df.to_arrow_table()) == rows(first)
    assert budget(ctx) == (1, 1.0)
    # A release drawn again (another epsilon) is another charge.
    dfanon.anonymize(ctx, "nps", **{**IPA, "epsilon": 0.5}).count()
    assert budget(ctx) == (2, 1.5)


def test_releases_are_tables_of_the_context(nps):
    ctx = context(nps, access="owner")
    ctx.register_table("released", dfanon.anonymize(ctx, "nps", **IPA))
    per_age = ctx.sql(
        "SELECT age, COUNT(*) AS n, SUM(gen_mid(los)) AS stay FROM released "
        "WHERE sex = 'M' GROUP BY age ORDER BY age"
    ).to_pandas()
    release = dfanon.anonymize(ctx, "nps", **IPA).to_pandas()
    expected = release[release.sex == "M"].groupby("age").size()
    assert list(per_age.n) == list(expected.values)
    assert list(per_age.age) == list(expected.index)
    assert budget(ctx) == (1, 1.0)


def test_metadata_describes_the_release(nps):
    ctx = context(nps, access="owner")
    released = dfanon.anonymize(ctx, "nps", **IPA).count()
    meta = dfanon.metadata(ctx, "nps", **IPA)
    assert meta["method"] == "ipa"
    assert int(meta["released_rows"]) == released
    assert meta["seeded"] == "false"
    assert budget(ctx) == (1, 1.0)


def test_a_changed_table_draws_anew_and_an_unchanged_one_does_not(nps):
    ctx = context(nps, access="owner")
    request = dict(method="dp_histogram", qi="sex, surgery", sensitive="disease", epsilon=0.5)
    first = dfanon.anonymize(ctx, "nps", **request).to_arrow_table()
    # The same contents registered again: the same release, no charge.
    ctx.deregister_table("nps")
    ctx.from_arrow(nps, "nps")
    assert rows(dfanon.anonymize(ctx, "nps", **request).to_arrow_table()) == rows(first)
    assert budget(ctx) == (1, 0.5)
    # Other contents under the same name: a new release, charged.
    ctx.deregister_table("nps")
    ctx.from_arrow(nps.slice(0, 5000), "nps")
    changed = dfanon.anonymize(ctx, "nps", **request).to_arrow_table()
    assert budget(ctx) == (2, 1.0)
    assert abs(changed.num_rows - 5000) < abs(first.num_rows - 5000)


def test_errors_name_the_argument(nps):
    ctx = context(nps, access="owner")
    with pytest.raises(dfanon.DfanonError, match=r"unknown argument 'methd' \(did you mean 'method'\?\)"):
        dfanon.anonymize(ctx, "nps", methd="ipa", qi=QI)
    with pytest.raises(dfanon.DfanonError, match=r"argument seed must be a str, int, float or bool, not list"):
        dfanon.anonymize(ctx, "nps", qi=QI, seed=[1])
    with pytest.raises(Exception, match=r"argument 'epsilon' has no value"):
        ctx.sql("SELECT * FROM anonymize('nps', 'qi =>', 'sex', 'epsilon =>')")
    with pytest.raises(Exception, match=r"argument 4 has no name"):
        ctx.sql("SELECT * FROM anonymize('nps', 'qi =>', 'sex', 1.0)")
    with pytest.raises(dfanon.DfanonError, match=r"not been called"):
        dfanon.sql(datafusion.SessionContext(), "SELECT 1")
