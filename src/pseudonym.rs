//! Pseudonyms of direct identifiers (`identifiers => 'patient_id', identifier_mode =>
//! 'pseudonym'`, METHODS.md §9.5): HMAC-SHA-256 of the value's text under the owner's
//! secret key, its first [`PSEUDONYM_BYTES`] bytes as lower-case hex. The same value gives
//! the same pseudonym in every release of one registration; without the key nobody can
//! compute one, or tell which value a pseudonym stands for beyond guessing the value and
//! having the key.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{plan_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::sensitive::SensitiveSpec;

/// Bytes of the MAC a pseudonym keeps: 128 bits, 32 hex digits. Two of a billion distinct
/// values share a pseudonym with probability below 1.5 · 10⁻²¹ (birthday bound).
pub const PSEUDONYM_BYTES: usize = 16;

/// Shortest key accepted, in bytes (128 bits).
pub const MIN_KEY_BYTES: usize = 16;

/// The owner's secret key of pseudonyms. Its bytes never appear in output, errors or
/// `Debug`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PseudonymKey(Arc<[u8]>);

impl std::fmt::Debug for PseudonymKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PseudonymKey({} bytes)", self.0.len())
    }
}

impl PseudonymKey {
    /// The identity of this key's bytes, shared by its clones (never its content): what
    /// keeps releases drawn with different keys apart in a shared store of releases.
    pub(crate) fn identity(&self) -> *const () {
        Arc::as_ptr(&self.0) as *const ()
    }

    /// A key of at least [`MIN_KEY_BYTES`] bytes (e.g. 32 bytes from `/dev/urandom`).
    pub fn new(bytes: &[u8]) -> Result<Self> {
        if bytes.len() < MIN_KEY_BYTES {
            return plan_err!(
                "a pseudonym key needs at least {MIN_KEY_BYTES} bytes, got {}; make one with: head -c 32 /dev/urandom > pseudonym.key",
                bytes.len()
            );
        }
        Ok(Self(bytes.into()))
    }

    /// HMAC-SHA-256 under this key of the concatenated `parts`.
    pub(crate) fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes keys of any length");
        for part in parts {
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }

    /// The pseudonym of `value`.
    pub fn pseudonym(&self, value: &str) -> String {
        let digest = self.mac(&[value.as_bytes()]);
        let mut out = String::with_capacity(2 * PSEUDONYM_BYTES);
        for byte in &digest[..PSEUDONYM_BYTES] {
            out.push_str(&format!("{byte:02x}"));
        }
        out
    }

    /// The scalar function computing pseudonyms in a plan (never registered: only a
    /// release's phase 1 calls it).
    pub fn udf(&self) -> ScalarUDF {
        ScalarUDF::new_from_impl(PseudonymUdf {
            key: self.clone(),
            signature: Signature::any(1, Volatility::Immutable),
        })
    }
}

/// `anonymize_pseudonym(value)`: the pseudonym of the value's text; NULL stays NULL.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PseudonymUdf {
    key: PseudonymKey,
    signature: Signature,
}

impl ScalarUDFImpl for PseudonymUdf {
    fn name(&self) -> &str {
        "anonymize_pseudonym"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let array = match &args.args[..] {
            [value] => value.to_array(args.number_rows)?,
            _ => return plan_err!("anonymize_pseudonym takes one argument"),
        };
        let text = cast(&array, &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        let mut out = StringBuilder::with_capacity(text.len(), text.len() * 2 * PSEUDONYM_BYTES);
        for value in text.iter() {
            out.append_option(value.map(|v| self.key.pseudonym(v)));
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish()) as ArrayRef))
    }
}

/// The identifiers of a call and how they are released.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identifiers {
    /// The identifier columns, as resolved.
    pub columns: Vec<String>,
    /// Whether they are released as pseudonyms (else dropped).
    pub pseudonyms: bool,
}

impl Identifiers {
    /// The `identifiers` metadata value (empty without identifiers).
    pub fn describe(&self) -> String {
        if self.columns.is_empty() {
            return String::new();
        }
        let how = if self.pseudonyms {
            "pseudonyms (HMAC-SHA-256 under the owner's key, first 128 bits as 32 hex digits)"
        } else {
            "dropped"
        };
        format!("{}: {how}", self.columns.join(", "))
    }

    /// The release's columns of pseudonyms, released after the sensitive columns.
    pub fn pseudonym_columns(&self) -> Vec<SensitiveSpec> {
        if !self.pseudonyms {
            return Vec::new();
        }
        self.columns
            .iter()
            .map(|c| SensitiveSpec {
                column: c.clone(),
                data_type: DataType::Utf8,
                hierarchy: None,
                pseudonym: true,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231 test case 2 ("Jefe", "what do ya want for nothing?"), truncated: the MAC is
    /// HMAC-SHA-256 itself, not a look-alike. The key is shorter than our minimum, so the
    /// test builds it directly.
    #[test]
    fn pseudonyms_are_truncated_hmac_sha256() {
        let key = PseudonymKey(b"Jefe".as_slice().into());
        assert_eq!(
            key.pseudonym("what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c7"
        );
    }

    /// Stable under one key, different under another, never the value itself, and distinct
    /// for distinct values.
    #[test]
    fn pseudonyms_are_stable_keyed_and_not_the_value() {
        let a = PseudonymKey::new(&[7u8; 32]).unwrap();
        let b = PseudonymKey::new(&[8u8; 32]).unwrap();
        let mut seen = std::collections::HashSet::new();
        for i in 0..10_000 {
            let value = i.to_string();
            let p = a.pseudonym(&value);
            assert_eq!(p, a.pseudonym(&value));
            assert_ne!(p, b.pseudonym(&value));
            assert_ne!(p, value);
            assert_eq!(p.len(), 2 * PSEUDONYM_BYTES);
            assert!(seen.insert(p));
        }
    }

    #[test]
    fn a_short_key_is_refused_and_never_printed() {
        let e = PseudonymKey::new(b"short").unwrap_err().to_string();
        assert!(
            e.contains("a pseudonym key needs at least 16 bytes, got 5"),
            "{e}"
        );
        let key = PseudonymKey::new(b"0123456789abcdef-secret").unwrap();
        assert_eq!(format!("{key:?}"), "PseudonymKey(23 bytes)");
    }
}
