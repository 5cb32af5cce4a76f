//! Password hashes as the configuration stores them: SCRAM-SHA-256's salted password
//! (`Hi(password, salt, 4096)`, RFC 5802), which both the PostgreSQL handshake and Flight
//! SQL's Basic login check. The plain password is never stored.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use pgwire::api::auth::sasl::scram::gen_salted_password;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// The iterations of every hash (PostgreSQL's default).
pub const ITERATIONS: usize = 4096;

const SCHEME: &str = "scram-sha-256";

/// A user's stored password hash. Whoever holds it can log in over SCRAM, so the
/// configuration file is a secret: readable by the server's account only.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash {
    salt: Vec<u8>,
    salted: Vec<u8>,
}

impl std::fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasswordHash(..)")
    }
}

impl PasswordHash {
    /// The hash of `password` with a fresh random salt.
    pub fn new(password: &str) -> Self {
        let mut salt = vec![0u8; 16];
        rand::rng().fill_bytes(&mut salt);
        let salted = gen_salted_password(password, &salt, ITERATIONS);
        Self { salt, salted }
    }

    /// A hash no password matches, for the user `user` who does not exist: their logins
    /// take the same steps and fail with the same error as a wrong password, and the salt
    /// the handshake shows is the same at every attempt (as a real user's is), derived
    /// from the name and `secret` (as PostgreSQL's mock authentication does), so it tells
    /// nobody that the user is unknown.
    pub fn unmatchable(user: &str, secret: &[u8]) -> Self {
        let derive = |purpose: &str| -> Vec<u8> {
            let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret)
                .expect("HMAC takes keys of any length");
            mac.update(purpose.as_bytes());
            mac.update(&[0]);
            mac.update(user.as_bytes());
            mac.finalize().into_bytes().to_vec()
        };
        let mut salt = derive("salt");
        salt.truncate(16);
        Self {
            salt,
            salted: derive("unmatchable"),
        }
    }

    /// The secret the salts of unknown users are derived from: a digest of every user's
    /// stored hash (which only the configuration holds), so it stays the same across
    /// restarts of the same configuration.
    pub fn mock_secret<'a>(hashes: impl Iterator<Item = &'a PasswordHash>) -> Vec<u8> {
        let mut digest = Sha256::new();
        digest.update(b"dfanon-server mock salts");
        for hash in hashes {
            digest.update(&hash.salt);
            digest.update(&hash.salted);
        }
        digest.finalize().to_vec()
    }

    /// Reads `scram-sha-256$4096$<salt>$<salted password>` (base64).
    pub fn parse(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split('$').collect();
        let [scheme, iterations, salt, salted] = parts.as_slice() else {
            return Err(format!(
                "is not of the form {SCHEME}${ITERATIONS}$<salt>$<hash>"
            ));
        };
        if *scheme != SCHEME || *iterations != ITERATIONS.to_string() {
            return Err(format!(
                "is not of the form {SCHEME}${ITERATIONS}$<salt>$<hash>"
            ));
        }
        let decode = |s: &str| {
            STANDARD
                .decode(s)
                .map_err(|e| format!("is not valid base64 ({e})"))
        };
        let salt = decode(salt)?;
        let salted = decode(salted)?;
        if salt.len() < 8 || salted.len() != 32 {
            return Err("has a salt shorter than 8 bytes or a hash that is not 32 bytes".into());
        }
        Ok(Self { salt, salted })
    }

    /// The salt.
    pub fn salt(&self) -> &[u8] {
        &self.salt
    }

    /// The salted password, which SCRAM's server side needs.
    pub fn salted(&self) -> &[u8] {
        &self.salted
    }

    /// Whether `password` is this hash's, compared in constant time.
    pub fn matches(&self, password: &str) -> bool {
        let given = gen_salted_password(password, &self.salt, ITERATIONS);
        given.len() == self.salted.len()
            && given
                .iter()
                .zip(&self.salted)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }
}

impl std::fmt::Display for PasswordHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{SCHEME}${ITERATIONS}${}${}",
            STANDARD.encode(&self.salt),
            STANDARD.encode(&self.salted)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_matches_its_password_only_and_reads_back() {
        let hash = PasswordHash::new("correct horse");
        assert!(hash.matches("correct horse"));
        assert!(!hash.matches("correct horse "));
        assert!(!hash.matches(""));
        let read = PasswordHash::parse(&hash.to_string()).expect("reads back");
        assert_eq!(read, hash);
        assert!(read.matches("correct horse"));
        assert_ne!(PasswordHash::new("correct horse"), hash, "salts differ");
        let secret = PasswordHash::mock_secret([PasswordHash::new("x")].iter());
        let ghost = PasswordHash::unmatchable("ghost", &secret);
        assert!(!ghost.matches("correct horse"));
        // The same salt at every attempt, another for another name, 16 bytes as a real one.
        assert_eq!(ghost, PasswordHash::unmatchable("ghost", &secret));
        assert_ne!(
            ghost.salt(),
            PasswordHash::unmatchable("ghost2", &secret).salt()
        );
        assert_eq!(ghost.salt().len(), PasswordHash::new("y").salt().len());
    }

    #[test]
    fn plain_passwords_and_other_forms_are_refused() {
        for text in [
            "hunter2",
            "scram-sha-256$4096$c2FsdA==",
            "scram-sha-256$1000$c2FsdHNhbHQ=$AAAA",
            "md5$abc",
            "scram-sha-256$4096$!!$AAAA",
        ] {
            assert!(PasswordHash::parse(text).is_err(), "{text}");
        }
    }

    /// The password and salt of RFC 7677's example exchange: the stored hash is
    /// PBKDF2-HMAC-SHA-256 with 4096 iterations (the figure Python's
    /// `hashlib.pbkdf2_hmac('sha256', b'pencil', salt, 4096)` gives).
    #[test]
    fn the_salted_password_is_rfc_5802_hi() {
        let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("base64");
        let salted = gen_salted_password("pencil", &salt, ITERATIONS);
        assert_eq!(
            STANDARD.encode(&salted),
            "xKSVEDI6tPlSysH6mUQZOeeOp01r6B3fcJbodRPcYV0="
        );
    }
}
