"""Privacy-preserving microdata releases on a datafusion-python ``SessionContext``.

>>> import datafusion, dfanon
>>> ctx = datafusion.SessionContext()
>>> dfanon.register(ctx, access="owner")
>>> nps = dfanon.sql(ctx, "SELECT * FROM nps_demo(rows => 1000, seed => 1)")
>>> ctx.register_table("nps", nps)
>>> release = dfanon.anonymize(ctx, "nps", method="dp_histogram", qi={"sex": None},
...                            sensitive="disease", epsilon=1.0)

``register`` adds every function of the extension to the context; ``anonymize``,
``metadata`` and ``sql`` make requests in its full SQL grammar; SQL in ``ctx.sql`` calls
the same functions in DataFusion's positional form, a named argument as the string
``'name =>'`` followed by its value::

    SELECT * FROM anonymize('nps', 'method =>', 'dp_histogram', 'qi =>', 'sex',
                            'epsilon =>', 1.0)

The same request through any of them is one release, charged once to the table's
budget. Functions and arguments: ``dfanon.sql(ctx, "SELECT * FROM anonymize_help()")``.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Union

from . import _native

__all__ = [
    "DfanonError",
    "Registration",
    "anonymize",
    "call",
    "metadata",
    "register",
    "registration",
    "sql",
]

__version__: str = _native.VERSION

#: The DataFusion version dfanon is built with; the installed ``datafusion`` package must
#: have the same major version (their FFI is stable only within one).
DATAFUSION_VERSION: str = _native.DATAFUSION_VERSION


def _check_datafusion() -> None:
    import datafusion

    installed = getattr(datafusion, "__version__", "unknown")
    want = DATAFUSION_VERSION.split(".")[0]
    if installed.split(".")[0] != want:
        raise ImportError(
            f"dfanon {__version__} is built with DataFusion {DATAFUSION_VERSION} and works "
            f"only with the datafusion package {want}.x, but datafusion {installed} is "
            f"installed: pip install 'datafusion>={want},<{int(want) + 1}'"
        )


_check_datafusion()

import datafusion  # noqa: E402

#: Raised for refused arguments, budget overruns and releases that cannot be made.
DfanonError = _native.DfanonError
Registration = _native.Registration

_REGISTRATIONS: weakref.WeakKeyDictionary[datafusion.SessionContext, Registration] = (
    weakref.WeakKeyDictionary()
)

Value = Union[str, int, float, bool]
QiSpec = Union[str, Sequence[str], Mapping[str, Union[str, None]]]


def register(
    ctx: datafusion.SessionContext,
    *,
    access: str = "public",
    epsilon_budget: float | str | None = None,
    delta_budget: float | str | None = None,
    ledger: str | os.PathLike[str] | None = None,
    policy: Mapping[str, Any] | None = None,
    max_release_rows: int | None = None,
) -> Registration:
    """Registers dfanon's functions on ``ctx`` and returns the registration.

    Args:
        ctx: the user's context; its tables are the sources (Parquet, CSV, pandas or
            pyarrow data registered in it).
        access: ``"public"`` (the default, for users who are not the data owner: only
            the public functions, the budget fixed here, the public rules of every
            request) or ``"owner"`` (every function; the budget may be changed with
            ``SET anonymize.epsilon_budget``).
        epsilon_budget: total epsilon each source table may spend over all releases
            (default unlimited; a public registration refuses to release without one).
        delta_budget: total delta each source table may spend (default unlimited).
        ledger: file keeping the privacy ledger across sessions (default: in memory).
        policy: with ``access="public"``, the data owner's release policy, a dict with
            the keys of server.toml's ``[public]`` and ``dfanon --policy`` (``tables``,
            ``methods``, ``allow_non_dp``, ``min_epsilon``, ``max_epsilon``, ``person``,
            ``max_release_rows`` and ``sources``: per source its ``qi`` and
            ``informative`` columns bound to published tables, ``plain`` columns, ε range
            and ``fixed`` arguments). Without one, public users release nothing.
        max_release_rows: with ``access="owner"``, the ceiling any call may ask for (a
            public registration's is the policy's ``max_release_rows``).

    Registering again on the same context replaces the registration, with a new
    release cache and, without a ledger file, a new ledger.
    """
    if max_release_rows is not None and (
        isinstance(max_release_rows, bool)
        or not isinstance(max_release_rows, int)
        or max_release_rows < 1
    ):
        raise DfanonError(
            f"register(): max_release_rows must be a whole number of at least 1, not {max_release_rows!r}"
        )
    reg = _native.Registration(
        weakref.ref(ctx),
        access,
        epsilon_budget,
        delta_budget,
        None if ledger is None else os.fspath(ledger),
        _policy_json(policy),
        max_release_rows,
    )
    for name in reg.table_functions():
        function = _TableFunction(reg, name)
        for alias in dict.fromkeys([name, name.upper()]):
            ctx.register_udtf(datafusion.udtf(function, alias))
    for scalar in reg.scalar_functions():
        ctx.register_udf(datafusion.ScalarUDF.from_pycapsule(scalar))
    _REGISTRATIONS[ctx] = reg
    return reg


def _policy_json(policy: Mapping[str, Any] | None) -> str | None:
    """The policy as the JSON the engine reads; a mapping only (a string would be read as
    something else than the owner meant)."""
    if policy is None:
        return None
    if not isinstance(policy, Mapping):
        raise TypeError(
            f"register(): policy must be a mapping like server.toml's [public] table, not {type(policy).__name__}"
        )
    return json.dumps(policy)


class _TableFunction:
    """A table function of dfanon in the context's own SQL: DataFusion hands it the
    arguments as expressions (constants once simplified), in the positional form."""

    def __init__(self, reg: Registration, name: str) -> None:
        self._reg = reg
        self._name = name

    def __call__(self, *args: Any) -> Any:
        return self._reg.call_positional_form(self._name, [_constant(a) for a in args])


def _constant(expr: Any) -> tuple[bool, Any]:
    """``(True, value)`` for a constant expression, ``(False, None)`` for any other."""
    if expr.variant_name() != "Literal":
        return False, None
    return True, expr.python_value().as_py()


def registration(ctx: datafusion.SessionContext) -> Registration:
    """The registration of ``ctx``; ``DfanonError`` if ``register`` was not called."""
    try:
        return _REGISTRATIONS[ctx]
    except KeyError:
        raise DfanonError(
            "dfanon.register(ctx) has not been called on this SessionContext"
        ) from None


def sql(ctx: datafusion.SessionContext, query: str) -> datafusion.DataFrame:
    """Runs ``query`` in dfanon's SQL grammar (named arguments, any letter case) over the
    tables of ``ctx``; several statements separated by ``;`` run in order, and the last
    one's rows are returned. Tables and views it creates are dfanon's own: ``sql`` and
    ``anonymize`` see them, ``ctx.sql`` does not."""
    return ctx.read_table(registration(ctx).sql(query))


def _qi_text(qi: QiSpec) -> str:
    if isinstance(qi, str):
        return qi
    if isinstance(qi, Mapping):
        parts = []
        for column, hierarchy in qi.items():
            name = _column(column)
            parts.append(name if hierarchy is None else f"{name}:{_column(hierarchy)}")
        return ", ".join(parts)
    return ", ".join(_column(c) for c in qi)


def _column(name: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"a column or table name is a string, not {type(name).__name__} ({name!r})")
    if any(c in name for c in ',:"') or name != name.strip():
        return '"' + name.replace('"', '""') + '"'
    return name


def _arguments(params: Mapping[str, Any]) -> list[tuple[str, Value]]:
    named: list[tuple[str, Value]] = []
    for name, value in params.items():
        if value is None:
            continue
        if name in ("qi", "sensitive", "informative", "identifiers") and not isinstance(
            value, (str, int, float, bool)
        ):
            value = _qi_text(value)
        named.append((name, value))
    return named


def anonymize(
    ctx: datafusion.SessionContext, source: str, **params: Any
) -> datafusion.DataFrame:
    """The release ``anonymize(source, **params)``: every argument of the SQL function as
    a keyword, with the same defaults and errors (``qi`` as a string, a list of columns, or
    a dict of column to hierarchy table, ``None`` for the default hierarchy). The rows are
    drawn when the DataFrame is first executed, and the same request again serves them
    from the cache without a new charge."""
    return ctx.read_table(
        registration(ctx).call("anonymize", [source], _arguments(params))
    )


def call(
    ctx: datafusion.SessionContext, function: str, *args: Value, **params: Any
) -> datafusion.DataFrame:
    """Any table function of dfanon (``anonymize_help()`` lists them) with positional
    ``args`` and named ``params``, as ``anonymize`` takes them: e.g.
    ``call(ctx, "anonymize_interval_means", "nps", method="ipa", qi="age, los")``."""
    return ctx.read_table(registration(ctx).call(function, list(args), _arguments(params)))


def metadata(ctx: datafusion.SessionContext, source: str, **params: Any) -> dict[str, str]:
    """The public metadata (key to value) of the release ``anonymize`` makes with the same
    arguments: the guarantee, the levels chosen, the budget spent, the rows released."""
    table = ctx.read_table(
        registration(ctx).call("anonymize_metadata", [source], _arguments(params))
    ).to_pydict()
    return dict(zip(table["key"], table["value"]))
