//! SCRAM credentials (RFC 5802 §3, RFC 7677; Kafka's KIP-84 and KIP-554): what the broker
//! stores for a user is the salt, the iteration count, `StoredKey = H(HMAC(SaltedPassword,
//! "Client Key"))` and `ServerKey = HMAC(SaltedPassword, "Server Key")`, never the password.
//! Clients (`kafka-configs --add-config 'SCRAM-SHA-256=[password=...]'`, the AdminClient) send
//! the salted password in AlterUserScramCredentials; the broker derives the two keys from it.
//!
//! The hash functions, HMAC and PBKDF2 are RustCrypto's (`sha2`, `hmac`, `pbkdf2`).

pub use frieda_meta::{ScramCredential, ScramCredentials};
use hmac::{Hmac, Mac};
use parking_lot::RwLock;
use sha2::{Digest, Sha256, Sha512};
use std::sync::Arc;

/// Fewest PBKDF2 iterations Kafka accepts (`ScramMechanism.minIterations`).
pub const MIN_ITERATIONS: i32 = 4096;
/// Most PBKDF2 iterations Kafka accepts (`AlterUserScramCredentials`: 16384).
pub const MAX_ITERATIONS: i32 = 16384;

/// A SCRAM mechanism (Kafka's `ScramMechanism`; wire codes 1 and 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScramMechanism {
    /// SCRAM-SHA-256 (code 1).
    Sha256,
    /// SCRAM-SHA-512 (code 2).
    Sha512,
}

impl ScramMechanism {
    /// Both mechanisms.
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    /// The mechanism of wire code `code` (AlterUserScramCredentials), if known.
    pub fn from_code(code: i8) -> Option<Self> {
        match code {
            1 => Some(Self::Sha256),
            2 => Some(Self::Sha512),
            _ => None,
        }
    }

    /// Wire code.
    pub fn code(self) -> i8 {
        match self {
            Self::Sha256 => 1,
            Self::Sha512 => 2,
        }
    }

    /// SASL name (`SCRAM-SHA-256`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Sha256 => "SCRAM-SHA-256",
            Self::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism of SASL name `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// `H(data)`.
    pub fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha256 => Sha256::digest(data).to_vec(),
            Self::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// `HMAC(key, data)`.
    pub fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha256 => {
                let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            Self::Sha512 => {
                let mut m = Hmac::<Sha512>::new_from_slice(key).expect("HMAC takes any key length");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    /// `Hi(password, salt, iterations)`: PBKDF2 with HMAC of this hash (RFC 5802 §2.2).
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            Self::Sha256 => {
                pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, iterations).to_vec()
            }
            Self::Sha512 => {
                pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, iterations).to_vec()
            }
        }
    }

    /// The stored credential for a salted password.
    pub fn credential(
        self,
        salt: &[u8],
        iterations: i32,
        salted_password: &[u8],
    ) -> ScramCredential {
        let client_key = self.hmac(salted_password, b"Client Key");
        ScramCredential {
            salt: salt.to_vec(),
            iterations,
            stored_key: self.hash(&client_key),
            server_key: self.hmac(salted_password, b"Server Key"),
        }
    }
}

/// The credentials in force, read by every SCRAM authentication; replaced whole on a change
/// (single broker: after `meta/security.json` is written; cluster: from the metadata image).
#[derive(Debug, Default)]
pub struct ScramStore {
    current: RwLock<Arc<ScramCredentials>>,
}

impl ScramStore {
    /// The credential of `user` for `mechanism`.
    pub fn get(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        self.current
            .read()
            .get(user)?
            .get(mechanism.name())
            .cloned()
    }

    /// Every credential.
    pub fn snapshot(&self) -> Arc<ScramCredentials> {
        self.current.read().clone()
    }

    /// Replaces every credential.
    pub fn replace(&self, creds: ScramCredentials) {
        *self.current.write() = Arc::new(creds);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677 §3's example: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==,
    /// 4096 iterations; its server signature must come out as the RFC shows.
    #[test]
    fn rfc7677_server_key_signs_the_example_exchange() {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let m = ScramMechanism::Sha256;
        let salt = b64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let salted = m.salted_password(b"pencil", &salt, 4096);
        let cred = m.credential(&salt, 4096, &salted);
        let auth_message = "n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let sig = m.hmac(&cred.server_key, auth_message.as_bytes());
        assert_eq!(
            b64.encode(sig),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }
}
