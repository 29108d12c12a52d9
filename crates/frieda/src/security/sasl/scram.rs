//! The SCRAM exchange, server side (RFC 5802 §5, RFC 7677; Kafka's `ScramSaslServer`):
//!
//! ```text
//! client-first  n,[a=authzid],n=user,r=cnonce[,ext]
//! server-first  r=cnonce+snonce,s=salt,i=iterations
//! client-final  c=base64(gs2-header),r=cnonce+snonce,p=ClientProof
//! server-final  v=ServerSignature
//! ```
//!
//! The proof is checked as `H(ClientProof XOR HMAC(StoredKey, AuthMessage)) == StoredKey` in
//! constant time. Channel binding is not supported (gs2 flag `n` or `y`), nor delegation tokens
//! (`tokenauth=true`), as in Kafka without delegation tokens.

use super::{AuthFailure, SaslServer, Step};
use crate::security::scram::{ScramCredential, ScramMechanism, ScramStore};
use base64::Engine;
use rand::RngCore;
use std::sync::Arc;
use subtle::ConstantTimeEq;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Kafka's message for wrong credentials.
fn invalid_credentials(m: ScramMechanism) -> AuthFailure {
    AuthFailure::new(format!(
        "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
        m.name()
    ))
}

enum State {
    ReceiveClientFirst,
    ReceiveClientFinal {
        user: String,
        gs2_header: String,
        client_first_bare: String,
        server_first: String,
        nonce: String,
        credential: ScramCredential,
    },
    Done,
}

/// The SCRAM exchange of one connection.
pub struct ScramServer {
    mechanism: ScramMechanism,
    store: Arc<ScramStore>,
    state: State,
}

impl ScramServer {
    /// A new exchange checking against `store`.
    pub fn new(mechanism: ScramMechanism, store: Arc<ScramStore>) -> Self {
        ScramServer {
            mechanism,
            store,
            state: State::ReceiveClientFirst,
        }
    }

    fn client_first(&mut self, msg: &str) -> Result<Step, AuthFailure> {
        let bad = || AuthFailure::new(format!("Invalid SCRAM client first message: `{msg}`"));
        // gs2-header: flag, authzid, then the bare message.
        let (flag, rest) = msg.split_once(',').ok_or_else(bad)?;
        if flag != "n" && flag != "y" {
            return Err(AuthFailure::new(
                "SCRAM channel binding is not supported (gs2 flag must be n or y)",
            ));
        }
        let (authz, bare) = rest.split_once(',').ok_or_else(bad)?;
        let authzid = match authz {
            "" => None,
            a => Some(unescape_name(a.strip_prefix("a=").ok_or_else(bad)?).ok_or_else(bad)?),
        };
        let gs2_header = format!("{flag},{authz},");
        let mut user = None;
        let mut cnonce = None;
        for (i, attr) in bare.split(',').enumerate() {
            match (i, attr.split_once('=')) {
                (0, Some(("n", v))) => user = Some(unescape_name(v).ok_or_else(bad)?),
                (1, Some(("r", v))) if !v.is_empty() => cnonce = Some(v.to_string()),
                (_, Some(("tokenauth", v))) if v.eq_ignore_ascii_case("true") => {
                    return Err(AuthFailure::new(
                        "Authentication failed: delegation tokens are not supported",
                    ))
                }
                (0 | 1, _) => return Err(bad()),
                _ => {} // other extensions are ignored, as Kafka does
            }
        }
        let (Some(user), Some(cnonce)) = (user, cnonce) else {
            return Err(bad());
        };
        if authzid.as_deref().is_some_and(|a| a != user) {
            return Err(AuthFailure::new(
                "Authentication failed: Client requested an authorization id that is different from username",
            ));
        }
        let Some(credential) = self.store.get(&user, self.mechanism) else {
            return Err(AuthFailure::new(
                "Authentication failed: Invalid user credentials",
            ));
        };
        let mut snonce = [0u8; 24];
        rand::thread_rng().fill_bytes(&mut snonce);
        let nonce = format!("{cnonce}{}", B64.encode(snonce));
        let server_first = format!(
            "r={nonce},s={},i={}",
            B64.encode(&credential.salt),
            credential.iterations
        );
        self.state = State::ReceiveClientFinal {
            user,
            gs2_header,
            client_first_bare: bare.to_string(),
            server_first: server_first.clone(),
            nonce,
            credential,
        };
        Ok(Step::Challenge(server_first.into_bytes()))
    }
}

impl SaslServer for ScramServer {
    fn step(&mut self, message: &[u8]) -> Result<Step, AuthFailure> {
        let msg = std::str::from_utf8(message)
            .map_err(|_| AuthFailure::new("Invalid SCRAM message: not UTF-8"))?;
        match std::mem::replace(&mut self.state, State::Done) {
            State::ReceiveClientFirst => self.client_first(msg),
            State::ReceiveClientFinal {
                user,
                gs2_header,
                client_first_bare,
                server_first,
                nonce,
                credential,
            } => {
                let m = self.mechanism;
                let bad = || AuthFailure::new("Invalid SCRAM client final message");
                let (without_proof, proof) = msg.rsplit_once(",p=").ok_or_else(bad)?;
                let mut attrs = without_proof.split(',');
                let binding = attrs
                    .next()
                    .and_then(|a| a.strip_prefix("c="))
                    .ok_or_else(bad)?;
                let their_nonce = attrs
                    .next()
                    .and_then(|a| a.strip_prefix("r="))
                    .ok_or_else(bad)?;
                if B64.decode(binding).ok().as_deref() != Some(gs2_header.as_bytes()) {
                    return Err(AuthFailure::new(
                        "Authentication failed: Invalid channel binding",
                    ));
                }
                // Kafka's ScramSaslServer only checks that the client's nonce ends with the
                // server-first nonce; librdkafka sends the client nonce twice (`c=biws,r=` +
                // cnonce + the whole server nonce), so an exact comparison would refuse it.
                if !their_nonce.ends_with(nonce.as_str()) {
                    return Err(AuthFailure::new(
                        "Authentication failed: Invalid client nonce in the final client message.",
                    ));
                }
                let proof = B64.decode(proof).map_err(|_| bad())?;
                let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
                let signature = m.hmac(&credential.stored_key, auth_message.as_bytes());
                if proof.len() != signature.len() {
                    return Err(invalid_credentials(m));
                }
                let client_key: Vec<u8> =
                    proof.iter().zip(&signature).map(|(a, b)| a ^ b).collect();
                let ok: bool = m.hash(&client_key).ct_eq(&credential.stored_key).into();
                if !ok {
                    return Err(invalid_credentials(m));
                }
                let server_signature = m.hmac(&credential.server_key, auth_message.as_bytes());
                Ok(Step::Done {
                    user,
                    message: format!("v={}", B64.encode(server_signature)).into_bytes(),
                    expires_at_ms: None,
                })
            }
            State::Done => Err(AuthFailure::new("SCRAM exchange already complete")),
        }
    }
}

/// A SCRAM `saslname` to a user name (`=2C` is `,`, `=3D` is `=`; any other `=` is invalid).
fn unescape_name(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        match rest.get(i..i + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return None,
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a client's side of the exchange (as RFC 5802 §3 computes it) against the server.
    fn login(
        m: ScramMechanism,
        store: Arc<ScramStore>,
        user: &str,
        password: &str,
    ) -> Result<Vec<u8>, AuthFailure> {
        let mut s = ScramServer::new(m, store);
        let cfirst_bare = format!("n={user},r=clientnonce123");
        let Step::Challenge(sfirst) = s.step(format!("n,,{cfirst_bare}").as_bytes())? else {
            panic!("expected a challenge")
        };
        let sfirst = String::from_utf8(sfirst).unwrap();
        let mut nonce = "";
        let mut salt = Vec::new();
        let mut iters = 0;
        for a in sfirst.split(',') {
            let (k, v) = a.split_once('=').unwrap();
            match k {
                "r" => nonce = v,
                "s" => salt = B64.decode(v).unwrap(),
                "i" => iters = v.parse().unwrap(),
                _ => {}
            }
        }
        assert!(nonce.starts_with("clientnonce123"));
        let salted = m.salted_password(password.as_bytes(), &salt, iters);
        let client_key = m.hmac(&salted, b"Client Key");
        let stored = m.hash(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth = format!("{cfirst_bare},{sfirst},{without_proof}");
        let sig = m.hmac(&stored, auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        match s.step(format!("{without_proof},p={}", B64.encode(proof)).as_bytes())? {
            Step::Done {
                user: u, message, ..
            } => {
                assert_eq!(u, user);
                let server_key = m.hmac(&salted, b"Server Key");
                let expect = format!("v={}", B64.encode(m.hmac(&server_key, auth.as_bytes())));
                assert_eq!(message, expect.as_bytes());
                Ok(message)
            }
            Step::Challenge(_) => panic!("expected the end"),
        }
    }

    fn store_with(m: ScramMechanism, user: &str, password: &str) -> Arc<ScramStore> {
        let salt = b"0123456789abcdef";
        let salted = m.salted_password(password.as_bytes(), salt, 4096);
        let store = ScramStore::default();
        store.replace(
            [(
                user.to_string(),
                [(m.name().to_string(), m.credential(salt, 4096, &salted))].into(),
            )]
            .into(),
        );
        Arc::new(store)
    }

    #[test]
    fn both_mechanisms_accept_the_password_and_refuse_others() {
        for m in ScramMechanism::ALL {
            let store = store_with(m, "alice", "alice-secret");
            login(m, store.clone(), "alice", "alice-secret").unwrap();
            let e = login(m, store.clone(), "alice", "wrong").unwrap_err();
            assert!(e.0.contains("invalid credentials"), "{e:?}");
            let e = login(m, store, "bob", "alice-secret").unwrap_err();
            assert!(e.0.contains("Invalid user credentials"), "{e:?}");
        }
    }

    #[test]
    fn malformed_messages_and_names() {
        let store = store_with(ScramMechanism::Sha256, "a,b", "pw");
        let mut s = ScramServer::new(ScramMechanism::Sha256, store.clone());
        assert!(s.step(b"p=tls-unique,,n=x,r=y").is_err());
        let mut s = ScramServer::new(ScramMechanism::Sha256, store.clone());
        assert!(s.step(b"garbage").is_err());
        let mut s = ScramServer::new(ScramMechanism::Sha256, store.clone());
        assert!(s.step(b"n,,n=a=2Cb,r=x,tokenauth=true").is_err());
        let mut s = ScramServer::new(ScramMechanism::Sha256, store);
        assert!(matches!(s.step(b"n,,n=a=2Cb,r=x"), Ok(Step::Challenge(_))));
        assert!(s.step(b"c=biws,r=wrongnonce,p=AAAA").is_err());
    }

    /// librdkafka's client-final repeats the client nonce before the server's whole nonce;
    /// Kafka accepts it (the nonce only has to end with the server-first nonce), so must we.
    #[test]
    fn librdkafka_repeated_client_nonce_is_accepted() {
        let m = ScramMechanism::Sha256;
        let store = store_with(m, "alice", "pw");
        let mut s = ScramServer::new(m, store);
        let Ok(Step::Challenge(first)) = s.step(b"n,,n=alice,r=cn") else {
            panic!("expected a challenge")
        };
        let first = String::from_utf8(first).unwrap();
        let nonce = first.split(',').next().unwrap().strip_prefix("r=").unwrap();
        let salt = B64
            .decode(
                first
                    .split(",s=")
                    .nth(1)
                    .unwrap()
                    .split(',')
                    .next()
                    .unwrap(),
            )
            .unwrap();
        let salted = m.salted_password(b"pw", &salt, 4096);
        let client_key = m.hmac(&salted, b"Client Key");
        let without_proof = format!("c=biws,r=cn{nonce}");
        let auth = format!("n=alice,r=cn,{first},{without_proof}");
        let sig = m.hmac(&m.hash(&client_key), auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
        let last = s.step(format!("{without_proof},p={}", B64.encode(proof)).as_bytes());
        assert!(matches!(last, Ok(Step::Done { .. })), "{last:?}");
        assert_eq!(unescape_name("a=3Db"), Some("a=b".into()));
        assert_eq!(unescape_name("a=b"), None);
    }
}
