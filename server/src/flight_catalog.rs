//! Flight SQL's metadata calls: the catalogs, schemas, tables (and table types) a session
//! sees, its primary keys (none: these tables have none), the types its results use
//! (GetXdbcTypeInfo) and what the server supports (GetSqlInfo), as BI tools and the Flight
//! SQL JDBC driver ask for them.

use std::sync::Arc;

use arrow_flight::error::FlightError;
use arrow_flight::sql::metadata::{
    SqlInfoData, SqlInfoDataBuilder, XdbcTypeInfo, XdbcTypeInfoData, XdbcTypeInfoDataBuilder,
};
use arrow_flight::sql::{
    CommandGetCatalogs, CommandGetDbSchemas, CommandGetTableTypes, CommandGetTables, Nullable,
    Searchable, SqlInfo, XdbcDataType,
};
use datafusion::arrow::array::{new_empty_array, ArrayRef};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::TableType;
use datafusion::prelude::SessionContext;

/// A listing's schema and its one batch.
pub type Listing = (SchemaRef, Result<RecordBatch, FlightError>);

/// The table types [`tables`] reports.
const TABLE_TYPES: [&str; 2] = ["TABLE", "VIEW"];

/// The catalogs of `ctx`.
pub fn catalogs(ctx: &SessionContext, query: CommandGetCatalogs) -> Listing {
    let mut builder = query.into_builder();
    for catalog in ctx.catalog_names() {
        builder.append(catalog);
    }
    (builder.schema(), builder.build())
}

/// The schemas of `ctx` that `query` asks for.
pub fn schemas(ctx: &SessionContext, query: CommandGetDbSchemas) -> Listing {
    let mut builder = query.into_builder();
    for catalog_name in ctx.catalog_names() {
        if let Some(catalog) = ctx.catalog(&catalog_name) {
            for schema in catalog.schema_names() {
                builder.append(&catalog_name, schema);
            }
        }
    }
    (builder.schema(), builder.build())
}

/// The tables of `ctx` that `query` asks for (by catalog, schema, name and type).
pub async fn tables(ctx: &SessionContext, query: CommandGetTables) -> Listing {
    let mut builder = query.into_builder();
    for catalog_name in ctx.catalog_names() {
        let Some(catalog) = ctx.catalog(&catalog_name) else {
            continue;
        };
        for schema_name in catalog.schema_names() {
            let Some(schema) = catalog.schema(&schema_name) else {
                continue;
            };
            for table_name in schema.table_names() {
                let Ok(Some(table)) = schema.table(&table_name).await else {
                    continue;
                };
                let kind = match table.table_type() {
                    TableType::View => TABLE_TYPES[1],
                    _ => TABLE_TYPES[0],
                };
                let appended = builder.append(
                    &catalog_name,
                    &schema_name,
                    &table_name,
                    kind,
                    &table.schema(),
                );
                if let Err(e) = appended {
                    return (builder.schema(), Err(e));
                }
            }
        }
    }
    (builder.schema(), builder.build())
}

/// The table types of [`tables`].
pub fn table_types(query: CommandGetTableTypes) -> Listing {
    let mut builder = query.into_builder();
    for kind in TABLE_TYPES {
        builder.append(kind);
    }
    (builder.schema(), builder.build())
}

/// No primary keys, in Flight SQL's columns for them: tables here have none.
pub fn primary_keys() -> Listing {
    let schema = Arc::new(Schema::new(vec![
        Field::new("catalog_name", DataType::Utf8, true),
        Field::new("db_schema_name", DataType::Utf8, true),
        Field::new("table_name", DataType::Utf8, false),
        Field::new("column_name", DataType::Utf8, false),
        Field::new("key_name", DataType::Utf8, true),
        Field::new("key_sequence", DataType::Int32, false),
    ]));
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| new_empty_array(f.data_type()))
        .collect();
    let batch = RecordBatch::try_new(schema.clone(), columns).map_err(FlightError::from);
    (schema, batch)
}

/// The SQL types results here have, for GetXdbcTypeInfo.
pub fn type_info() -> Result<XdbcTypeInfoData, FlightError> {
    let mut builder = XdbcTypeInfoDataBuilder::new();
    let number = |name: &str, data_type: XdbcDataType, size: i32, radix: i32| XdbcTypeInfo {
        type_name: name.to_string(),
        data_type,
        column_size: Some(size),
        nullable: Nullable::NullabilityNullable,
        searchable: Searchable::Full,
        unsigned_attribute: Some(false),
        auto_increment: Some(false),
        local_type_name: Some(name.to_string()),
        sql_data_type: data_type,
        num_prec_radix: Some(radix),
        ..XdbcTypeInfo::default()
    };
    let quoted = |name: &str, data_type: XdbcDataType, size: Option<i32>| XdbcTypeInfo {
        type_name: name.to_string(),
        data_type,
        column_size: size,
        literal_prefix: Some("'".to_string()),
        literal_suffix: Some("'".to_string()),
        nullable: Nullable::NullabilityNullable,
        case_sensitive: data_type == XdbcDataType::XdbcVarchar,
        searchable: Searchable::Full,
        local_type_name: Some(name.to_string()),
        sql_data_type: data_type,
        ..XdbcTypeInfo::default()
    };
    builder.append(number("BOOLEAN", XdbcDataType::XdbcBit, 1, 2));
    builder.append(number("SMALLINT", XdbcDataType::XdbcSmallint, 5, 10));
    builder.append(number("INTEGER", XdbcDataType::XdbcInteger, 10, 10));
    builder.append(number("BIGINT", XdbcDataType::XdbcBigint, 19, 10));
    builder.append(number("REAL", XdbcDataType::XdbcReal, 24, 2));
    builder.append(number("DOUBLE", XdbcDataType::XdbcDouble, 53, 2));
    builder.append(XdbcTypeInfo {
        create_params: Some(vec!["precision".to_string(), "scale".to_string()]),
        fixed_prec_scale: true,
        minimum_scale: Some(0),
        maximum_scale: Some(38),
        ..number("DECIMAL", XdbcDataType::XdbcDecimal, 38, 10)
    });
    builder.append(quoted("VARCHAR", XdbcDataType::XdbcVarchar, None));
    builder.append(quoted("DATE", XdbcDataType::XdbcDate, Some(10)));
    builder.append(quoted("TIMESTAMP", XdbcDataType::XdbcTimestamp, Some(29)));
    builder.build()
}

/// Numeric functions GetSqlInfo names (each is one of DataFusion's, `tests` check).
const NUMERIC_FUNCTIONS: &[&str] = &[
    "abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "degrees", "exp", "floor", "ln", "log",
    "log10", "log2", "pi", "power", "radians", "round", "signum", "sin", "sqrt", "tan", "trunc",
];

/// String functions GetSqlInfo names.
const STRING_FUNCTIONS: &[&str] = &[
    "ascii",
    "btrim",
    "char_length",
    "concat",
    "concat_ws",
    "initcap",
    "left",
    "length",
    "lower",
    "lpad",
    "ltrim",
    "md5",
    "regexp_replace",
    "repeat",
    "replace",
    "reverse",
    "right",
    "rpad",
    "rtrim",
    "split_part",
    "starts_with",
    "strpos",
    "substr",
    "translate",
    "upper",
];

/// Date and time functions GetSqlInfo names.
const DATETIME_FUNCTIONS: &[&str] = &[
    "current_date",
    "current_time",
    "date_bin",
    "date_part",
    "date_trunc",
    "make_date",
    "now",
    "to_date",
    "to_timestamp",
];

/// What this server supports, for GetSqlInfo: the server, and the SQL of DataFusion as
/// this server runs it (read-only for public users, no transactions).
pub fn sql_info() -> Result<SqlInfoData, FlightError> {
    let mut info = SqlInfoDataBuilder::new();
    info.append(SqlInfo::FlightSqlServerName, "dfanon-server");
    info.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
    info.append(SqlInfo::FlightSqlServerArrowVersion, "1.3");
    info.append(SqlInfo::FlightSqlServerReadOnly, false);
    info.append(SqlInfo::FlightSqlServerSql, true);
    info.append(SqlInfo::FlightSqlServerSubstrait, false);
    info.append(SqlInfo::FlightSqlServerTransaction, 0i32);
    info.append(SqlInfo::FlightSqlServerCancel, false);
    info.append(SqlInfo::FlightSqlServerBulkIngestion, false);
    info.append(SqlInfo::SqlDdlCatalog, false);
    info.append(SqlInfo::SqlDdlSchema, false);
    info.append(SqlInfo::SqlDdlTable, false);
    // Unquoted names are folded to lower case; quoted ones are kept as written.
    info.append(SqlInfo::SqlIdentifierCase, 3i32);
    info.append(SqlInfo::SqlQuotedIdentifierCase, 0i32);
    info.append(SqlInfo::SqlIdentifierQuoteChar, "\"");
    info.append(SqlInfo::SqlAllTablesAreSelectable, true);
    // NULLs sort as the highest values (last ascending, first descending).
    info.append(SqlInfo::SqlNullOrdering, 0i32);
    let keywords: Vec<String> = datafusion::sql::sqlparser::keywords::ALL_KEYWORDS
        .iter()
        .map(|k| k.to_string())
        .collect();
    info.append(SqlInfo::SqlKeywords, keywords);
    info.append(SqlInfo::SqlNumericFunctions, NUMERIC_FUNCTIONS);
    info.append(SqlInfo::SqlStringFunctions, STRING_FUNCTIONS);
    info.append(SqlInfo::SqlDatetimeFunctions, DATETIME_FUNCTIONS);
    info.append(SqlInfo::SqlSystemFunctions, &["version"][..]);
    info.append(SqlInfo::SqlSearchStringEscape, "\\");
    info.append(SqlInfo::SqlExtraNameCharacters, "");
    info.append(SqlInfo::SqlSupportsColumnAliasing, true);
    info.append(SqlInfo::SqlNullPlusNullIsNull, true);
    info.append(SqlInfo::SqlSupportsTableCorrelationNames, true);
    info.append(SqlInfo::SqlSupportsDifferentTableCorrelationNames, false);
    info.append(SqlInfo::SqlSupportsExpressionsInOrderBy, true);
    info.append(SqlInfo::SqlSupportsOrderByUnrelated, true);
    // GROUP BY columns not selected, and beyond the selected ones (bits 0 and 1).
    info.append(SqlInfo::SqlSupportedGroupBy, 3i32);
    info.append(SqlInfo::SqlSupportsLikeEscapeClause, true);
    info.append(SqlInfo::SqlSupportsNonNullableColumns, true);
    info.append(SqlInfo::SqlSchemaTerm, "schema");
    info.append(SqlInfo::SqlProcedureTerm, "procedure");
    info.append(SqlInfo::SqlCatalogTerm, "catalog");
    info.append(SqlInfo::SqlCatalogAtStart, true);
    info.append(SqlInfo::SqlSelectForUpdateSupported, false);
    info.append(SqlInfo::SqlStoredProceduresSupported, false);
    // Subqueries in comparisons, EXISTS and IN (bits 0, 1 and 2).
    info.append(SqlInfo::SqlSupportedSubqueries, 7i32);
    info.append(SqlInfo::SqlCorrelatedSubqueriesSupported, true);
    // UNION and UNION ALL.
    info.append(SqlInfo::SqlSupportedUnions, 3i32);
    // Full outer joins.
    info.append(SqlInfo::SqlOuterJoinsSupportLevel, 2i32);
    info.append(SqlInfo::SqlTransactionsSupported, false);
    info.append(SqlInfo::SqlBatchUpdatesSupported, false);
    info.append(SqlInfo::SqlSavepointsSupported, false);
    info.append(SqlInfo::SqlNamedParametersSupported, false);
    info.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_functions_are_datafusions() {
        let ctx = SessionContext::new();
        let state = ctx.state();
        let known = state.scalar_functions();
        for name in NUMERIC_FUNCTIONS
            .iter()
            .chain(STRING_FUNCTIONS)
            .chain(DATETIME_FUNCTIONS)
            .chain(&["version"])
        {
            assert!(known.contains_key(*name), "{name} is not a function here");
        }
    }

    #[test]
    fn the_listings_build() {
        assert!(sql_info().is_ok());
        let types = type_info().expect("the type list builds");
        assert_eq!(types.record_batch(None).expect("a batch").num_rows(), 10);
        let (_, keys) = primary_keys();
        assert_eq!(keys.expect("a batch").num_rows(), 0);
        let (_, kinds) = table_types(CommandGetTableTypes {});
        assert_eq!(kinds.expect("a batch").num_rows(), 2);
    }
}
