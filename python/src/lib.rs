//! The native part of the Python package `dfanon`: this crate's functions for a
//! datafusion-python `SessionContext`.
//!
//! A registration runs its own DataFusion session, the *engine*, with the crate registered
//! as in Rust (access, budget, ledger, release cache). The engine reads the user's tables
//! from the Python context ([`sources`]), and hands its results back as tables the Python
//! context scans across the FFI boundary ([`view`]). The table functions registered on the
//! user's context turn each call into the engine's SQL text
//! ([`datafusion_anonymize::FunctionCall`]), so every entry point makes the same request
//! of the same engine: one release and one charge per request.
//!
//! Those table functions are Python callables (`datafusion.udtf`) returning an FFI table
//! provider, not FFI table functions: datafusion-ffi 55's `ForeignTableFunction` reads the
//! exporting library's private data with the host's own memory layout (its tokio
//! `Handle`), and with the PyPI `datafusion` wheel (another rustc and tokio) that read is
//! garbage and crashed the process now and then.

mod channel;
mod runtime;
mod sources;
mod view;

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::{Column, DataFusionError, ScalarValue};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{Expr, ScalarUDF};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_anonymize::{
    function_docs, parse_budget_limit, parse_ledger_path, register_with, script_dataframe, Access,
    AnonymizeOptions, FunctionCall, FunctionKind, PublicPolicy, RegisterOptions,
};
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use datafusion_ffi::udf::FFI_ScalarUDF;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyCapsule, PyFloat, PyInt, PyString};

use runtime::wait;
use sources::{PythonContext, PythonTables};
use view::EngineView;

create_exception!(
    _native,
    DfanonError,
    PyException,
    "An error of dfanon: a refused argument, a budget overrun, a release that cannot be made."
);

/// The DataFusion version this package is built with.
const DATAFUSION_VERSION: &str = "55.2.0";

fn py_error(e: DataFusionError) -> PyErr {
    DfanonError::new_err(e.strip_backtrace())
}

/// One registration on a user's `SessionContext`: its engine and the user's tables.
struct Engine {
    ctx: SessionContext,
    tables: Arc<PythonTables>,
    access: Access,
}

impl Engine {
    /// The result of `script` (several statements: the last one's rows), as a table.
    /// Ctrl-C stops it (see [`wait`]).
    fn sql(self: &Arc<Self>, py: Python<'_>, script: String) -> PyResult<EngineView> {
        self.tables.new_request();
        let ctx = self.ctx.clone();
        let df = wait(py, async move { script_dataframe(&ctx, &script).await })?;
        match df.map_err(py_error)? {
            Some(df) => Ok(EngineView::new(df)),
            None => Err(DfanonError::new_err(
                "dfanon.sql(): the text holds no SQL statement",
            )),
        }
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("access", &self.access)
            .finish_non_exhaustive()
    }
}

/// A registration of dfanon on a `datafusion.SessionContext` (made by `dfanon.register`).
#[pyclass(frozen, module = "dfanon._native")]
struct Registration {
    engine: Arc<Engine>,
}

#[pymethods]
impl Registration {
    /// Registers on the context `ctx_ref()` (a `weakref.ref`); see `dfanon.register`.
    #[new]
    #[pyo3(signature = (ctx_ref, access, epsilon_budget, delta_budget, ledger, policy, max_release_rows))]
    fn new(
        ctx_ref: Py<PyAny>,
        access: &str,
        epsilon_budget: Option<Bound<'_, PyAny>>,
        delta_budget: Option<Bound<'_, PyAny>>,
        ledger: Option<String>,
        policy: Option<String>,
        max_release_rows: Option<u64>,
    ) -> PyResult<Self> {
        let access = match access.to_ascii_lowercase().as_str() {
            "public" => Access::Public,
            "owner" => Access::Owner,
            other => {
                return Err(DfanonError::new_err(format!(
                    "register(): access must be 'public' or 'owner', not '{other}'"
                )))
            }
        };
        let limit = |key: &str, value: Option<Bound<'_, PyAny>>| -> PyResult<f64> {
            match value {
                None => Ok(f64::INFINITY),
                Some(v) => parse_budget_limit(key, &v.str()?.to_string()).map_err(py_error),
            }
        };
        let budget = AnonymizeOptions {
            locked: access == Access::Public,
            epsilon_budget: limit("epsilon_budget", epsilon_budget)?,
            delta_budget: limit("delta_budget", delta_budget)?,
            ledger_path: parse_ledger_path(ledger.as_deref().unwrap_or("")).map_err(py_error)?,
        };
        let mut options = RegisterOptions {
            access,
            budget,
            ..RegisterOptions::default()
        };
        match access {
            Access::Owner => {
                if policy.is_some() {
                    return Err(DfanonError::new_err(
                        "register(): policy is for access='public'",
                    ));
                }
                options.max_release_rows = max_release_rows;
            }
            Access::Public => {
                if max_release_rows.is_some() {
                    return Err(DfanonError::new_err(
                        "register(): with access='public' the ceiling of every release is the policy's max_release_rows",
                    ));
                }
                if let Some(json) = policy {
                    options.public = PublicPolicy::from_json(&json)
                        .map_err(|e| DfanonError::new_err(format!("register(): {e}")))?;
                }
            }
        }
        let tables = Arc::new(PythonTables::new(PythonContext::new(ctx_ref)));
        let config = SessionConfig::new().with_information_schema(true);
        let ctx = SessionContext::new_with_config(config);
        let catalog = ctx
            .catalog("datafusion")
            .ok_or_else(|| DfanonError::new_err("dfanon: the engine has no default catalog"))?;
        catalog
            .register_schema("public", tables.clone())
            .map_err(py_error)?;
        register_with(&ctx, options).map_err(py_error)?;
        Ok(Self {
            engine: Arc::new(Engine {
                ctx,
                tables,
                access,
            }),
        })
    }

    /// Runs `script` (statements separated by `;`) in the engine; the last one's rows.
    fn sql(&self, py: Python<'_>, script: String) -> PyResult<EngineTable> {
        let view = self.engine.sql(py, script)?;
        Ok(EngineTable { view })
    }

    /// The call `function(*positional, **named)` of a table function; the values are
    /// strings, numbers and booleans.
    fn call(
        &self,
        py: Python<'_>,
        function: &str,
        positional: Vec<Bound<'_, PyAny>>,
        named: Vec<(String, Bound<'_, PyAny>)>,
    ) -> PyResult<EngineTable> {
        let mut call = FunctionCall {
            function: function.to_ascii_lowercase(),
            ..FunctionCall::default()
        };
        for (i, value) in positional.iter().enumerate() {
            call.positional
                .push(scalar(&call.function, &format!("{}", i + 1), value)?);
        }
        for (name, value) in &named {
            let value = scalar(&call.function, name, value)?;
            call.named.push((name.to_ascii_lowercase(), value));
        }
        let sql = call.to_sql().map_err(py_error)?;
        self.sql(py, sql)
    }

    /// The table functions to register on the user's context, by name.
    fn table_functions(&self) -> Vec<String> {
        exported(self.engine.access, FunctionKind::Table)
    }

    /// The call of the table function `function` from the user's own SQL: its arguments
    /// in DataFusion's positional form (`'name =>'` before a named argument's value), each
    /// as `(is_constant, value)`.
    fn call_positional_form(
        &self,
        py: Python<'_>,
        function: &str,
        args: Vec<(bool, Bound<'_, PyAny>)>,
    ) -> PyResult<EngineTable> {
        let mut exprs = Vec::with_capacity(args.len());
        for (i, (constant, value)) in args.iter().enumerate() {
            exprs.push(if *constant {
                Expr::Literal(scalar(function, &format!("{}", i + 1), value)?, None)
            } else {
                // Not a constant: FunctionCall refuses it, naming the argument.
                Expr::Column(Column::from_name(format!("argument {}", i + 1)))
            });
        }
        let sql = FunctionCall::from_exprs(function, &exprs)
            .and_then(|call| call.to_sql())
            .map_err(py_error)?;
        self.sql(py, sql)
    }

    /// The scalar functions, for `datafusion.udf`.
    fn scalar_functions(&self) -> Vec<ScalarFunctionExport> {
        exported(self.engine.access, FunctionKind::Scalar)
            .into_iter()
            .filter_map(|name| self.engine.ctx.udf(&name).ok())
            .map(|udf| ScalarFunctionExport { udf })
            .collect()
    }
}

/// The names of the functions of `kind` a registration with `access` has.
fn exported(access: Access, kind: FunctionKind) -> Vec<String> {
    function_docs()
        .into_iter()
        .filter(|f| f.kind == kind && (access == Access::Owner || !f.owner_only))
        .map(|f| f.name)
        .collect()
}

/// A Python argument as a SQL constant.
fn scalar(function: &str, argument: &str, value: &Bound<'_, PyAny>) -> PyResult<ScalarValue> {
    if value.is_none() {
        return Ok(ScalarValue::Utf8(None));
    }
    if value.is_instance_of::<PyBool>() {
        return Ok(ScalarValue::Boolean(Some(value.extract()?)));
    }
    if value.is_instance_of::<PyInt>() {
        return match value.extract::<i64>() {
            Ok(v) => Ok(ScalarValue::Int64(Some(v))),
            Err(_) => Err(DfanonError::new_err(format!(
                "{function}(): argument {argument} is an integer out of range"
            ))),
        };
    }
    if value.is_instance_of::<PyFloat>() {
        return Ok(ScalarValue::Float64(Some(value.extract()?)));
    }
    if value.is_instance_of::<PyString>() {
        return Ok(ScalarValue::Utf8(Some(value.extract()?)));
    }
    Err(DfanonError::new_err(format!(
        "{function}(): argument {argument} must be a str, int, float or bool, not {}",
        value.get_type().name()?
    )))
}

/// The FFI logical codec of the host session `session`.
fn codec(session: &Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    let name = "__datafusion_logical_extension_codec__";
    let capsule = if session.hasattr(name)? {
        session.getattr(name)?.call0()?
    } else {
        session.clone()
    };
    let capsule = capsule.cast::<PyCapsule>()?;
    let pointer: NonNull<c_void> =
        capsule.pointer_checked(Some(c"datafusion_logical_extension_codec"))?;
    // SAFETY: a capsule with this name holds an FFI_LogicalExtensionCodec
    // (datafusion-python's protocol); it is cloned while the capsule is alive.
    let codec = unsafe { pointer.cast::<FFI_LogicalExtensionCodec>().as_ref() };
    Ok(codec.clone())
}

/// A result of the engine, as a table for `SessionContext.read_table`.
#[pyclass(frozen, module = "dfanon._native")]
struct EngineTable {
    view: EngineView,
}

#[pymethods]
impl EngineTable {
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let provider: Arc<dyn TableProvider> = Arc::new(self.view.clone());
        let ffi = FFI_TableProvider::new_with_ffi_codec(provider, false, None, codec(&session)?);
        PyCapsule::new_with_value(py, ffi, c"datafusion_table_provider")
    }
}

/// A scalar function for `datafusion.udf(...)`.
#[pyclass(frozen, module = "dfanon._native")]
struct ScalarFunctionExport {
    udf: Arc<ScalarUDF>,
}

#[pymethods]
impl ScalarFunctionExport {
    /// The function's name.
    #[getter]
    fn name(&self) -> String {
        self.udf.name().to_string()
    }

    fn __datafusion_scalar_udf__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let ffi = FFI_ScalarUDF::from(self.udf.clone());
        PyCapsule::new_with_value(py, ffi, c"datafusion_scalar_udf")
    }
}

/// The module `dfanon._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("DfanonError", m.py().get_type::<DfanonError>())?;
    m.add("DATAFUSION_VERSION", DATAFUSION_VERSION)?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Registration>()?;
    m.add_class::<EngineTable>()?;
    m.add_class::<ScalarFunctionExport>()?;
    Ok(())
}
