"""A public registration keeps the privacy rules of the Rust crate; the budget holds."""

from __future__ import annotations

import re
import tomllib

import datafusion
import pytest
from conftest import NPS_POLICY, QI, ROOT, budget, context, rows

import dfanon

DP = dict(
    method="dp_histogram",
    qi=QI,
    sensitive="disease:nps_hierarchy_disease",
    epsilon=1.0,
    levels="age=2, sex=1, los=2, surgery=1, location=2",
)


@pytest.fixture
def public(nps):
    return context(nps, access="public", epsilon_budget=2.5, policy=NPS_POLICY)


def test_public_users_release_within_the_budget(public):
    first = dfanon.anonymize(public, "nps", **DP).to_arrow_table()
    again = public.sql(
        "SELECT * FROM anonymize('nps', 'method =>', 'dp_histogram', 'qi =>', "
        "'age, sex, los, surgery, location', 'sensitive =>', 'disease:nps_hierarchy_disease', 'epsilon =>', 1.0, "
        "'levels =>', 'age=2, sex=1, los=2, surgery=1, location=2')"
    ).to_arrow_table()
    assert rows(again) == rows(first)
    assert budget(public) == (1, 1.0)
    dfanon.anonymize(public, "nps", **{**DP, "epsilon": 1.5}).count()
    assert budget(public) == (2, 2.5)
    with pytest.raises(Exception, match="privacy budget exceeded for table .datafusion.public.nps."):
        dfanon.anonymize(public, "nps", **{**DP, "epsilon": 0.5}).count()
    assert budget(public) == (2, 2.5)


def test_public_users_cannot_reach_what_the_owner_did_not_publish(public):
    # Owner-only functions are not registered at all.
    with pytest.raises(Exception, match="anonymize_diagnostics"):
        public.sql("SELECT * FROM anonymize_diagnostics('nps', 'qi =>', 'sex')")
    with pytest.raises(dfanon.DfanonError, match="owner-only function"):
        dfanon.sql(public, "SELECT * FROM anonymize_diagnostics('nps', qi => 'sex')")
    # The budget is fixed at registration.
    with pytest.raises(dfanon.DfanonError, match="anonymize"):
        dfanon.sql(public, "SET anonymize.epsilon_budget = 100")
    # A seed would make every draw known.
    with pytest.raises(dfanon.DfanonError, match="seed"):
        dfanon.anonymize(public, "nps", **DP, seed=1)
    # Only the methods the owner allows.
    with pytest.raises(dfanon.DfanonError, match="ipa"):
        dfanon.anonymize(public, "nps", **{**DP, "method": "ipa"})
    # The sources themselves are not readable, nor anything else unpublished.
    with pytest.raises(dfanon.DfanonError, match="nps"):
        dfanon.sql(public, "SELECT * FROM nps")
    with pytest.raises(dfanon.DfanonError, match="CREATE TABLE is not available to public users"):
        dfanon.sql(public, "CREATE TABLE copy AS SELECT 1")
    # The session's settings are the owner's: a SET that would move the budget's account
    # or choose a memory limit is refused.
    for setting in (
        "SET datafusion.catalog.default_schema = 'fresh1'",
        "SET datafusion.runtime.memory_limit = '28K'",
    ):
        with pytest.raises(dfanon.DfanonError, match="is not available to public users"):
            dfanon.sql(public, setting)
    # Each column with the table the owner's policy binds to it, and no other.
    with pytest.raises(dfanon.DfanonError, match="takes its values from 'nps_hierarchy_disease'"):
        dfanon.anonymize(public, "nps", **{**DP, "sensitive": "disease:nps_hierarchy_sex"})
    with pytest.raises(dfanon.DfanonError, match="generalized with the hierarchy 'nps_hierarchy_age'"):
        dfanon.anonymize(public, "nps", **{**DP, "qi": "age:nps_hierarchy_los, sex"})
    assert budget(public) == (0, 0.0)


def test_a_policy_is_a_mapping_checked_at_registration(nps):
    # A string is not a policy (it once made every table public, one character a pattern).
    with pytest.raises(TypeError, match="policy must be a mapping"):
        context(nps, access="public", epsilon_budget=1, policy="nps_hierarchy_*")
    with pytest.raises(dfanon.DfanonError, match="invalid type: string"):
        context(nps, access="public", epsilon_budget=1, policy={"tables": "x_*"})
    with pytest.raises(dfanon.DfanonError, match="unknown field `tabels`"):
        context(nps, access="public", epsilon_budget=1, policy={"tabels": ["x"]})
    # Without a policy's source, a public user releases nothing.
    bare = context(nps, access="public", epsilon_budget=1, policy={"tables": ["nps_hierarchy_*"]})
    with pytest.raises(dfanon.DfanonError, match="source table 'nps' not found"):
        dfanon.anonymize(bare, "nps", **DP).count()


def test_bad_registration_and_call_arguments_are_named(nps, tmp_path):
    for bad in (0, -5, 2.5, True, "10"):
        with pytest.raises(dfanon.DfanonError, match=f"max_release_rows must be a whole number of at least 1, not {re.escape(repr(bad))}"):
            context(nps, access="owner", max_release_rows=bad)
    missing = tmp_path / "no-such-folder" / "ledger.json"
    with pytest.raises(dfanon.DfanonError, match="is not accessible"):
        context(nps, access="owner", ledger=missing)
    assert not missing.parent.exists()
    ctx = context(nps, access="owner", epsilon_budget=1)
    for qi in ([1, 2], {"age": 5}):
        with pytest.raises(TypeError, match="a column or table name is a string, not int"):
            dfanon.anonymize(ctx, "nps", **{**DP, "qi": qi})


def test_owners_budget_is_refused_past_its_end(nps):
    ctx = context(nps, access="owner", epsilon_budget=1.5)
    dfanon.anonymize(ctx, "nps", **DP).count()
    dfanon.anonymize(ctx, "nps", **DP).count()
    assert budget(ctx) == (1, 1.0)
    with pytest.raises(Exception, match="privacy budget exceeded for table 'datafusion.public.nps'"):
        dfanon.anonymize(ctx, "nps", **{**DP, "epsilon": 0.75}).count()
    assert budget(ctx) == (1, 1.0)
    # The owner may raise it.
    dfanon.sql(ctx, "SET anonymize.epsilon_budget = 2")
    dfanon.anonymize(ctx, "nps", **{**DP, "epsilon": 0.75}).count()
    assert budget(ctx) == (2, 1.75)


def test_a_statement_built_to_exhaust_the_stack_is_refused(public):
    # 2,000 terms (a 4 KB statement) once aborted the interpreter.
    deep = "SELECT " + "+".join(["1"] * 2000)
    with pytest.raises(dfanon.DfanonError, match="expression nested too deeply"):
        dfanon.sql(public, deep)
    bi = "SELECT 1 WHERE " + " OR ".join(f"'a' = '{i}'" for i in range(2000))
    with pytest.raises(dfanon.DfanonError, match="expression nested too deeply"):
        dfanon.sql(public, bi)
    assert dfanon.sql(public, "SELECT COUNT(*) AS n FROM nps_hierarchy_sex").to_pydict()["n"] == [2]


def _door_attacks() -> list[tuple[str, str | None, str]]:
    """The statements of tests/doors/attacks.txt: (label, refusal text or None, SQL)."""
    label, expect, attacks = "", None, []
    for line in (ROOT / "tests/doors/attacks.txt").read_text().splitlines():
        line = line.strip()
        if line.startswith("#"):
            comment = line[1:].strip()
            if comment[:1].isupper():
                label = comment
        elif line == "ok":
            expect = ("ok",)
        elif line.startswith("! "):
            expect = ("refused", line[2:])
        elif line:
            attacks.append((label, None if expect[0] == "ok" else expect[1], line))
    return attacks


def test_the_reviewed_attacks_fail_through_the_python_door():
    """The public door's attacks (tests/doors/, the same files every door's test reads):
    each statement gives what its line says, and the same on neighbouring sources."""
    doors = ROOT / "tests/doors"
    setup = [s.strip() for s in re.sub(r"--[^\n]*", "", (doors / "setup.sql").read_text()).split(";")]
    policy = tomllib.loads((doors / "policy.toml").read_text())
    attacks = _door_attacks()
    seen = {}
    for source in ("visits", "visits_plus"):
        ctx = datafusion.SessionContext()
        for statement in filter(None, setup):
            ctx.sql(statement)
        dfanon.register(ctx, access="public", epsilon_budget=1.0, policy=policy)
        outcomes = []
        for label, refused, sql in attacks:
            sql = sql.replace("{t}", source)
            try:
                outcome = ("ok", str(dfanon.sql(ctx, sql).to_pydict()))
            except Exception as e:  # planning refusals are DfanonError, execution's not
                outcome = ("refused", str(e))
            if refused is None:
                assert outcome[0] == "ok", f"{label}: {sql}: {outcome}"
            else:
                assert outcome[0] == "refused" and refused in outcome[1], f"{label}: {sql}: {outcome}"
            outcomes.append((outcome[0], outcome[1].replace(source, "{t}")))
        seen[source] = outcomes
    for (label, _, sql), a, b in zip(attacks, seen["visits"], seen["visits_plus"]):
        assert a == b, f"{label}: {sql} tells the neighbours apart"
