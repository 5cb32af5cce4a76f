//! The few LDAPv3 operations a directory login needs (RFC 4511): a simple bind, a search
//! with one equality filter, StartTLS and unbind, as BER messages built and read with
//! `lber` (the BER codec of the `ldap3` crate), over any byte stream.
//!
//! Every message read is bounded: at most [`MAX_MESSAGE_BYTES`] bytes and
//! [`MAX_NESTING`] levels of nested values (checked before it is parsed, so a broken or
//! hostile directory cannot exhaust memory or the stack), and a search reads at most
//! [`MAX_ENTRIES`] entries.

use bytes::BytesMut;
use lber::common::TagClass;
use lber::structure::{StructureTag, PL};
use lber::structures::{ASNTag, Boolean, Enumerated, Integer, Null, OctetString, Sequence, Tag};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest message read from the directory.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;
/// Deepest nesting of constructed values in a message read.
pub const MAX_NESTING: usize = 16;
/// Most entries one search reads before it is abandoned.
pub const MAX_ENTRIES: usize = 16;

/// The OID of the StartTLS extended operation (RFC 4511 §4.14.1).
const START_TLS_OID: &str = "1.3.6.1.4.1.1466.20037";

/// The LDAP result code of success.
pub const SUCCESS: u64 = 0;
/// invalidCredentials: a wrong password or no such DN.
pub const INVALID_CREDENTIALS: u64 = 49;

/// What went wrong talking to the directory.
#[derive(Debug)]
pub struct ProtocolError(pub String);

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn broken(what: &str) -> ProtocolError {
    ProtocolError(format!("the directory sent a malformed message ({what})"))
}

fn octets(value: &[u8]) -> Tag {
    Tag::OctetString(OctetString {
        inner: value.to_vec(),
        ..Default::default()
    })
}

/// A search's scope.
#[derive(Debug, Clone, Copy)]
pub enum Scope {
    /// The base entry only.
    Base = 0,
    /// Everything under the base.
    Subtree = 2,
}

/// BindRequest with simple authentication (RFC 4511 §4.2).
pub fn bind_request(dn: &str, password: &str) -> Tag {
    Tag::Sequence(Sequence {
        id: 0,
        class: TagClass::Application,
        inner: vec![
            Tag::Integer(Integer {
                inner: 3,
                ..Default::default()
            }),
            octets(dn.as_bytes()),
            Tag::OctetString(OctetString {
                id: 0,
                class: TagClass::Context,
                inner: password.as_bytes().to_vec(),
            }),
        ],
    })
}

/// SearchRequest for the entries under `base` whose `attribute` equals `value`, returning
/// no attributes (`1.1`), at most `limit` entries (RFC 4511 §4.5.1).
pub fn search_request(base: &str, scope: Scope, attribute: &str, value: &[u8], limit: i64) -> Tag {
    let equality = Tag::Sequence(Sequence {
        id: 3,
        class: TagClass::Context,
        inner: vec![octets(attribute.as_bytes()), octets(value)],
    });
    Tag::Sequence(Sequence {
        id: 3,
        class: TagClass::Application,
        inner: vec![
            octets(base.as_bytes()),
            Tag::Enumerated(Enumerated {
                inner: scope as i64,
                ..Default::default()
            }),
            // derefAliases: neverDerefAliases.
            Tag::Enumerated(Enumerated {
                inner: 0,
                ..Default::default()
            }),
            Tag::Integer(Integer {
                inner: limit,
                ..Default::default()
            }),
            // timeLimit (seconds; the login's own timeout bounds it too).
            Tag::Integer(Integer {
                inner: 10,
                ..Default::default()
            }),
            Tag::Boolean(Boolean {
                inner: false,
                ..Default::default()
            }),
            equality,
            Tag::Sequence(Sequence {
                inner: vec![octets(b"1.1")],
                ..Default::default()
            }),
        ],
    })
}

/// ExtendedRequest for StartTLS.
pub fn start_tls_request() -> Tag {
    Tag::Sequence(Sequence {
        id: 23,
        class: TagClass::Application,
        inner: vec![Tag::OctetString(OctetString {
            id: 0,
            class: TagClass::Context,
            inner: START_TLS_OID.as_bytes().to_vec(),
        })],
    })
}

/// UnbindRequest.
pub fn unbind_request() -> Tag {
    Tag::Null(Null {
        id: 2,
        class: TagClass::Application,
        inner: (),
    })
}

/// The BER bytes of the LDAPMessage carrying `op` as message `id`.
pub fn message(id: i64, op: Tag) -> Result<Vec<u8>, ProtocolError> {
    let envelope = Tag::Sequence(Sequence {
        inner: vec![
            Tag::Integer(Integer {
                inner: id,
                ..Default::default()
            }),
            op,
        ],
        ..Default::default()
    });
    let mut out = BytesMut::new();
    lber::write::encode_into(&mut out, envelope.into_structure())
        .map_err(|e| ProtocolError(format!("cannot encode a request: {e}")))?;
    Ok(out.to_vec())
}

/// Sends message `id` carrying `op`.
pub async fn send<S: AsyncWrite + Unpin>(
    io: &mut S,
    id: i64,
    op: Tag,
) -> Result<(), ProtocolError> {
    let bytes = message(id, op)?;
    io.write_all(&bytes)
        .await
        .map_err(|e| ProtocolError(format!("cannot write to the directory: {e}")))?;
    io.flush()
        .await
        .map_err(|e| ProtocolError(format!("cannot write to the directory: {e}")))
}

/// Whether the BER value `bytes` nests constructed values at most `limit` deep (and every
/// length it declares fits): checked without recursion before it is parsed.
pub fn nesting_within(bytes: &[u8], limit: usize) -> bool {
    // The end offsets of the constructed values we are inside.
    let mut open: Vec<usize> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        while open.last().is_some_and(|&end| at >= end) {
            open.pop();
        }
        let first = bytes[at];
        at += 1;
        // Tag numbers of 31 and more continue in the following bytes.
        if first & 0x1f == 0x1f {
            loop {
                let Some(&b) = bytes.get(at) else {
                    return false;
                };
                at += 1;
                if b & 0x80 == 0 {
                    break;
                }
            }
        }
        let Some(&len) = bytes.get(at) else {
            return false;
        };
        at += 1;
        let length = if len & 0x80 == 0 {
            len as usize
        } else {
            let count = (len & 0x7f) as usize;
            if count == 0 || count > 4 || at + count > bytes.len() {
                return false;
            }
            let n = bytes[at..at + count]
                .iter()
                .fold(0usize, |n, &b| (n << 8) | b as usize);
            at += count;
            n
        };
        let end = match at.checked_add(length) {
            Some(end) if end <= bytes.len() => end,
            _ => return false,
        };
        if open.last().is_some_and(|&outer| end > outer) {
            return false;
        }
        if first & 0x20 != 0 {
            open.push(end);
            if open.len() > limit {
                return false;
            }
        } else {
            at = end;
        }
    }
    true
}

/// Reads one LDAPMessage: its id and its protocol operation.
pub async fn receive<S: AsyncRead + Unpin>(
    io: &mut S,
) -> Result<(i64, StructureTag), ProtocolError> {
    let read_error =
        |e: std::io::Error| ProtocolError(format!("cannot read from the directory: {e}"));
    let mut head = [0u8; 2];
    io.read_exact(&mut head).await.map_err(read_error)?;
    if head[0] != 0x30 {
        return Err(broken("not a SEQUENCE"));
    }
    let mut bytes = head.to_vec();
    let length = if head[1] & 0x80 == 0 {
        head[1] as usize
    } else {
        let count = (head[1] & 0x7f) as usize;
        if count == 0 || count > 4 {
            return Err(broken("length"));
        }
        let mut more = vec![0u8; count];
        io.read_exact(&mut more).await.map_err(read_error)?;
        bytes.extend_from_slice(&more);
        more.iter().fold(0usize, |n, &b| (n << 8) | b as usize)
    };
    if length > MAX_MESSAGE_BYTES {
        return Err(ProtocolError(format!(
            "the directory sent a message of {length} bytes, more than the {MAX_MESSAGE_BYTES} read"
        )));
    }
    let start = bytes.len();
    bytes.resize(start + length, 0);
    io.read_exact(&mut bytes[start..])
        .await
        .map_err(read_error)?;
    if !nesting_within(&bytes, MAX_NESTING) {
        return Err(broken("nesting or lengths"));
    }
    let (_, tag) = lber::parse::parse_tag(&bytes).map_err(|_| broken("BER"))?;
    let mut parts = tag.expect_constructed().ok_or_else(|| broken("envelope"))?;
    if parts.len() < 2 {
        return Err(broken("envelope"));
    }
    let op = parts.swap_remove(1);
    let id = parts
        .swap_remove(0)
        .match_class(TagClass::Universal)
        .and_then(|t| t.match_id(2))
        .and_then(|t| t.expect_primitive())
        .ok_or_else(|| broken("message id"))?;
    let id = id.iter().fold(0i64, |n, &b| (n << 8) | b as i64);
    Ok((id, op))
}

/// The result code and diagnostic message of an LDAPResult-shaped operation.
pub fn result_of(op: StructureTag) -> Result<(u64, String), ProtocolError> {
    let mut parts = op
        .expect_constructed()
        .ok_or_else(|| broken("result"))?
        .into_iter();
    let code = parts
        .next()
        .and_then(|t| t.match_id(10))
        .and_then(|t| t.expect_primitive())
        .ok_or_else(|| broken("result code"))?;
    let code = code.iter().fold(0u64, |n, &b| (n << 8) | b as u64);
    let diagnostic = parts
        .nth(1)
        .and_then(|t| t.expect_primitive())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    Ok((code, diagnostic))
}

/// The DN of a SearchResultEntry.
pub fn entry_dn(op: StructureTag) -> Result<String, ProtocolError> {
    op.expect_constructed()
        .and_then(|parts| parts.into_iter().next())
        .and_then(|t| t.expect_primitive())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .ok_or_else(|| broken("entry name"))
}

/// The application tag number of an operation (1 BindResponse, 4 SearchResultEntry,
/// 5 SearchResultDone, 19 SearchResultReference, 24 ExtendedResponse).
pub fn kind(op: &StructureTag) -> Option<u64> {
    (op.class == TagClass::Application).then_some(op.id)
}

/// Whether `op`'s payload is constructed.
pub fn is_constructed(op: &StructureTag) -> bool {
    matches!(op.payload, PL::C(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bind_request_is_the_rfc_bytes() {
        // LDAPMessage { 1, BindRequest { 3, "cn=a", simple "pw" } }
        let bytes = message(1, bind_request("cn=a", "pw")).expect("encode");
        assert_eq!(
            bytes,
            [
                0x30, 0x12, 0x02, 0x01, 0x01, 0x60, 0x0d, 0x02, 0x01, 0x03, 0x04, 0x04, b'c', b'n',
                b'=', b'a', 0x80, 0x02, b'p', b'w'
            ]
        );
        assert!(nesting_within(&bytes, 2));
        assert!(!nesting_within(&bytes, 1));
    }

    #[tokio::test]
    async fn a_response_is_read_and_its_result_parsed() {
        // LDAPMessage { 7, BindResponse { invalidCredentials, "", "bad" } }
        let bytes = [
            0x30, 0x0f, 0x02, 0x01, 0x07, 0x61, 0x0a, 0x0a, 0x01, 0x31, 0x04, 0x00, 0x04, 0x03,
            b'b', b'a', b'd',
        ];
        let (id, op) = receive(&mut &bytes[..]).await.expect("parsed");
        assert_eq!((id, kind(&op)), (7, Some(1)));
        assert_eq!(result_of(op).expect("result"), (49, "bad".to_string()));
    }

    #[tokio::test]
    async fn malformed_and_oversized_messages_are_refused() {
        let deep: Vec<u8> = {
            // 40 nested SEQUENCEs around nothing.
            let mut v: Vec<u8> = Vec::new();
            for _ in 0..40 {
                let len = v.len() as u8;
                v.splice(0..0, [0x30, len]);
            }
            v
        };
        assert!(!nesting_within(&deep, MAX_NESTING));
        let e = receive(&mut &deep[..]).await.expect_err("too deep");
        assert!(e.0.contains("nesting"), "{e}");
        let huge = [0x30, 0x84, 0x7f, 0xff, 0xff, 0xff];
        let e = receive(&mut &huge[..]).await.expect_err("too large");
        assert!(e.0.contains("more than"), "{e}");
        // A length beyond the bytes there are.
        assert!(!nesting_within(&[0x30, 0x05, 0x04, 0x09, 0x00], 4));
        let e = receive(&mut &[0x04u8, 0x00][..])
            .await
            .expect_err("not a message");
        assert!(e.0.contains("SEQUENCE"), "{e}");
    }
}
