"""Type stubs of dfanon's native module."""

from typing import Any

VERSION: str
DATAFUSION_VERSION: str

class DfanonError(Exception): ...

class EngineTable:
    def __datafusion_table_provider__(self, session: Any) -> object: ...

class ScalarFunctionExport:
    @property
    def name(self) -> str: ...
    def __datafusion_scalar_udf__(self) -> object: ...

class Registration:
    def __init__(
        self,
        ctx_ref: Any,
        access: str,
        epsilon_budget: float | str | None,
        delta_budget: float | str | None,
        ledger: str | None,
        policy: str | None,
        max_release_rows: int | None,
    ) -> None: ...
    def sql(self, script: str) -> EngineTable: ...
    def call(
        self,
        function: str,
        positional: list[str | int | float | bool],
        named: list[tuple[str, str | int | float | bool]],
    ) -> EngineTable: ...
    def table_functions(self) -> list[str]: ...
    def call_positional_form(
        self, function: str, args: list[tuple[bool, Any]]
    ) -> EngineTable: ...
    def scalar_functions(self) -> list[ScalarFunctionExport]: ...
