//! Fingerprints of table contents: SHA-256 over every partition's batches as Arrow IPC,
//! and the keyed form a release's guarantee card may publish.
//!
//! A plain hash of the source must never be published: whoever holds all of a table but
//! one record can try each value of that record and compare, and two neighbouring tables
//! always hash apart. The card therefore carries HMAC-SHA-256 of the hash under the
//! owner's secret key ([`keyed_fingerprint`]): without the key it reveals nothing about the
//! data; with it, the owner (or an auditor the owner gives it to) checks that a release
//! came from a given version of the source.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::catalog::TableProvider;
use datafusion::common::Result;
use datafusion::execution::SessionState;
use futures::TryStreamExt;
use sha2::{Digest, Sha256};

use crate::pseudonym::PseudonymKey;

/// What the keyed fingerprint's MAC starts with, so that it never equals a pseudonym or
/// another use of the key.
const KEYED_DOMAIN: &[u8] = b"datafusion-anonymize source fingerprint v1\0";

/// Writes `batches` as Arrow IPC into `hasher`.
pub(super) fn hash_batches(hasher: &mut Sha256, batches: &[RecordBatch]) -> Result<()> {
    let Some(first) = batches.first() else {
        hasher.update(b"no batches");
        return Ok(());
    };
    let mut bytes = Vec::new();
    {
        let mut writer = StreamWriter::try_new(&mut bytes, &first.schema())?;
        for batch in batches {
            writer.write(batch)?;
        }
        writer.finish()?;
    }
    hasher.update((bytes.len() as u64).to_le_bytes());
    hasher.update(&bytes);
    Ok(())
}

/// `bytes` as lower-case hex.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The fingerprint of the contents of `tables`, in order: every partition of each table
/// read in order, its batches hashed as Arrow IPC. Equal fingerprints mean equal contents
/// in equal order (another order or batching gives another fingerprint, hence a fresh
/// draw: never a wrong match).
pub(super) async fn fingerprint(
    tables: &[&Arc<dyn TableProvider>],
    state: &SessionState,
) -> Result<String> {
    let mut hasher = Sha256::new();
    for table in tables {
        hasher.update(b"table");
        let plan = table.scan(state, None, &[], None).await?;
        let partitions = plan.properties().output_partitioning().partition_count();
        for partition in 0..partitions {
            hasher.update((partition as u64).to_le_bytes());
            let stream = plan.execute(partition, state.task_ctx())?;
            let batches: Vec<RecordBatch> = stream.try_collect().await?;
            hash_batches(&mut hasher, &batches)?;
        }
    }
    Ok(hex(&hasher.finalize()))
}

/// HMAC-SHA-256 under `key` of [`fingerprint`] of `table`, as `hmac-sha256:<hex>`: the same
/// contents under the same key give the same text; without the key it is indistinguishable
/// from random.
pub(super) async fn keyed_fingerprint(
    key: &PseudonymKey,
    table: &Arc<dyn TableProvider>,
    state: &SessionState,
) -> Result<String> {
    let plain = fingerprint(&[table], state).await?;
    Ok(format!(
        "hmac-sha256:{}",
        hex(&key.mac(&[KEYED_DOMAIN, plain.as_bytes()]))
    ))
}
