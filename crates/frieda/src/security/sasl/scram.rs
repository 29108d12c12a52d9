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
//! constant time. Channel binding is not supported (gs2 flag `n` or `y`).
//!
//! Delegation tokens (KIP-48): a client-first message with the extension `tokenauth=true` names
//! a token id as its user; the proof is checked against the credential of the token's HMAC
//! ([`TokenStore`]), the session acts as the token's owner and lasts at most until the token
//! expires. An expired token is refused at login (Kafka accepts one until its hourly sweep
//! removes it).

use super::{AuthFailure, SaslServer, Step};
use crate::security::delegation::TokenStore;
use crate::security::principal::Principal;
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
        /// A delegation token's login: the token's expiry (ms since the epoch).
        token_expiry_ms: Option<i64>,
        gs2_header: String,
        client_first_bare: String,
        server_first: String,
        nonce: String,
        credential: Box<ScramCredential>,
    },
    Done,
}

/// The SCRAM exchange of one connection.
pub struct ScramServer {
    mechanism: ScramMechanism,
    store: Arc<ScramStore>,
    tokens: Option<Arc<TokenStore>>,
    state: State,
}

impl ScramServer {
    /// A new exchange checking against `store`.
    pub fn new(mechanism: ScramMechanism, store: Arc<ScramStore>) -> Self {
        ScramServer {
            mechanism,
            store,
            tokens: None,
            state: State::ReceiveClientFirst,
        }
    }

    /// Accepts delegation-token logins (`tokenauth=true`) checked against `tokens`.
    pub fn with_tokens(mut self, tokens: Arc<TokenStore>) -> Self {
        self.tokens = Some(tokens);
        self
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
        let mut token_auth = false;
        for (i, attr) in bare.split(',').enumerate() {
            match (i, attr.split_once('=')) {
                (0, Some(("n", v))) => user = Some(unescape_name(v).ok_or_else(bad)?),
                (1, Some(("r", v))) if !v.is_empty() => cnonce = Some(v.to_string()),
                (_, Some(("tokenauth", v))) => token_auth = v.eq_ignore_ascii_case("true"),
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
        let (user, credential, token_expiry_ms) = if token_auth {
            // Kafka's message for a token id it does not know.
            let unknown = || {
                AuthFailure::new(format!(
                    "Token Authentication failed: Invalid tokenId : {user}"
                ))
            };
            let known = self
                .tokens
                .as_ref()
                .and_then(|t| t.get(&user))
                .ok_or_else(unknown)?;
            if known.token.expired(crate::clock::now_ms()) {
                return Err(AuthFailure::new(format!(
                    "Token Authentication failed: delegation token {user} has expired"
                )));
            }
            // The session acts as the owner (`User:<owner's name>`, Kafka's principal builder).
            let owner = Principal::parse(&known.token.owner)
                .map_or_else(|| known.token.owner.clone(), |p| p.name);
            (
                owner,
                known.credential(self.mechanism),
                Some(known.token.expiry_ms),
            )
        } else {
            let Some(credential) = self.store.get(&user, self.mechanism) else {
                return Err(AuthFailure::new(
                    "Authentication failed: Invalid user credentials",
                ));
            };
            (user, credential, None)
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
            token_expiry_ms,
            gs2_header,
            client_first_bare: bare.to_string(),
            server_first: server_first.clone(),
            nonce,
            credential: Box::new(credential),
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
                token_expiry_ms,
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
                    expires_at_ms: token_expiry_ms,
                    token_authenticated: token_expiry_ms.is_some(),
                })
            }
            State::Done => Err(AuthFailure::new("SCRAM exchange already complete")),
        }
    }
}

/// The client side of SCRAM: this broker logging in to another broker (inter-broker SASL).
pub struct ScramClient {
    mechanism: ScramMechanism,
    user: String,
    password: String,
    cnonce: String,
    client_first_bare: String,
    /// The server signature the server-final message must carry (set by
    /// [`client_final`](Self::client_final)).
    expected: Option<Vec<u8>>,
}

impl ScramClient {
    /// A login of `user` with `password`.
    pub fn new(mechanism: ScramMechanism, user: &str, password: &str) -> Self {
        let mut nonce = [0u8; 24];
        rand::thread_rng().fill_bytes(&mut nonce);
        let cnonce = B64.encode(nonce);
        let name = user.replace('=', "=3D").replace(',', "=2C");
        ScramClient {
            mechanism,
            user: user.to_string(),
            password: password.to_string(),
            client_first_bare: format!("n={name},r={cnonce}"),
            cnonce,
            expected: None,
        }
    }

    /// The client-first message.
    pub fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// The client-final message answering `server_first`.
    ///
    /// Errors: a server-first message without nonce, salt or iterations, or whose nonce does not
    /// extend ours.
    pub fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, AuthFailure> {
        let text = std::str::from_utf8(server_first)
            .map_err(|_| AuthFailure::new("SCRAM server-first message is not UTF-8"))?;
        let attr = |k: &str| {
            text.split(',')
                .find_map(|a| a.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
        };
        let bad = || AuthFailure::new(format!("invalid SCRAM server-first message `{text}`"));
        let nonce = attr("r").ok_or_else(bad)?;
        if !nonce.starts_with(&self.cnonce) || nonce.len() <= self.cnonce.len() {
            return Err(AuthFailure::new(
                "SCRAM server nonce does not extend the client's",
            ));
        }
        let salt = B64.decode(attr("s").ok_or_else(bad)?).map_err(|_| bad())?;
        let iterations: u32 = attr("i").ok_or_else(bad)?.parse().map_err(|_| bad())?;
        if !(4096..=1_000_000).contains(&iterations) {
            return Err(AuthFailure::new(format!(
                "SCRAM iteration count {iterations} refused"
            )));
        }
        let m = self.mechanism;
        let salted = m.salted_password(self.password.as_bytes(), &salt, iterations);
        let client_key = m.hmac(&salted, b"Client Key");
        let stored_key = m.hash(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{text},{without_proof}", self.client_first_bare);
        let signature = m.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = m.hmac(&salted, b"Server Key");
        self.expected = Some(m.hmac(&server_key, auth_message.as_bytes()));
        Ok(format!("{without_proof},p={}", B64.encode(proof)).into_bytes())
    }

    /// Checks the server-final message: the server knows the credential too.
    ///
    /// Errors: a server error (`e=`) or a signature that does not match.
    pub fn verify(&self, server_final: &[u8]) -> Result<(), AuthFailure> {
        let text = std::str::from_utf8(server_final).unwrap_or("");
        if let Some(e) = text.strip_prefix("e=") {
            return Err(AuthFailure::new(format!("SCRAM server error: {e}")));
        }
        let got = text
            .strip_prefix("v=")
            .and_then(|v| B64.decode(v).ok())
            .ok_or_else(|| AuthFailure::new("invalid SCRAM server-final message"))?;
        let ok: bool = self
            .expected
            .as_deref()
            .is_some_and(|e| bool::from(e.ct_eq(&got)));
        if ok {
            Ok(())
        } else {
            Err(AuthFailure::new(format!(
                "SCRAM server signature mismatch for {}",
                self.user
            )))
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
        login_on(ScramServer::new(m, store), m, user, password, "", user).map(|(msg, ..)| msg)
    }

    /// The exchange against `s`, with `ext` appended to the client-first message (`,tokenauth=true`);
    /// the server must name `expect_user`. Returns the server-final message, the expiry and
    /// whether a token authenticated.
    fn login_on(
        mut s: ScramServer,
        m: ScramMechanism,
        user: &str,
        password: &str,
        ext: &str,
        expect_user: &str,
    ) -> Result<(Vec<u8>, Option<i64>, bool), AuthFailure> {
        let cfirst_bare = format!("n={user},r=clientnonce123{ext}");
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
                user: u,
                message,
                expires_at_ms,
                token_authenticated,
            } => {
                assert_eq!(u, expect_user);
                let server_key = m.hmac(&salted, b"Server Key");
                let expect = format!("v={}", B64.encode(m.hmac(&server_key, auth.as_bytes())));
                assert_eq!(message, expect.as_bytes());
                Ok((message, expires_at_ms, token_authenticated))
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

    /// A delegation token logs in as its owner with password base64(HMAC) and `tokenauth=true`;
    /// the same id without the extension, an unknown id, a wrong password and an expired token
    /// are refused.
    #[test]
    fn delegation_token_logs_in_as_its_owner() {
        use crate::security::delegation::{TokenPolicy, TokenStore};
        let tokens = Arc::new(TokenStore::new(TokenPolicy {
            secret: Some("s3cret".into()),
            ..Default::default()
        }));
        let now = crate::clock::now_ms();
        let live = tokens
            .policy
            .create("User:alice".into(), "User:alice".into(), vec![], 0, now)
            .unwrap();
        let mut old = tokens
            .policy
            .create(
                "User:bob".into(),
                "User:bob".into(),
                vec![],
                0,
                now - 10_000,
            )
            .unwrap();
        old.expiry_ms = now - 1;
        tokens.replace(
            &[
                (live.token_id.clone(), live.clone()),
                (old.token_id.clone(), old.clone()),
            ]
            .into(),
        );
        let password =
            |t: &frieda_meta::DelegationToken| B64.encode(tokens.policy.hmac(&t.token_id).unwrap());
        let server =
            |m| ScramServer::new(m, Arc::new(ScramStore::default())).with_tokens(tokens.clone());
        for m in ScramMechanism::ALL {
            let ext = ",tokenauth=true";
            let (_, exp, tok) =
                login_on(server(m), m, &live.token_id, &password(&live), ext, "alice").unwrap();
            assert_eq!((exp, tok), (Some(live.expiry_ms), true));
            let e = login_on(server(m), m, &live.token_id, "wrong", ext, "alice").unwrap_err();
            assert!(e.0.contains("invalid credentials"), "{e:?}");
            let e =
                login_on(server(m), m, &live.token_id, &password(&live), "", "alice").unwrap_err();
            assert!(e.0.contains("Invalid user credentials"), "{e:?}");
            let e = login_on(server(m), m, "nope", "x", ext, "alice").unwrap_err();
            assert!(e.0.contains("Invalid tokenId"), "{e:?}");
            let e = login_on(server(m), m, &old.token_id, &password(&old), ext, "bob").unwrap_err();
            assert!(e.0.contains("expired"), "{e:?}");
        }
    }

    #[test]
    fn our_client_logs_in_to_our_server() {
        for m in ScramMechanism::ALL {
            let store = store_with(m, "broker,1", "pw");
            let mut server = ScramServer::new(m, store.clone());
            let mut client = ScramClient::new(m, "broker,1", "pw");
            let Ok(Step::Challenge(first)) = server.step(&client.client_first()) else {
                panic!("expected a challenge")
            };
            let fin = client.client_final(&first).unwrap();
            let Ok(Step::Done { user, message, .. }) = server.step(&fin) else {
                panic!("expected the end")
            };
            assert_eq!(user, "broker,1");
            client.verify(&message).unwrap();
            // A wrong password fails at the server; a forged server signature at the client.
            let mut server = ScramServer::new(m, store);
            let mut client = ScramClient::new(m, "broker,1", "wrong");
            let Ok(Step::Challenge(first)) = server.step(&client.client_first()) else {
                panic!("expected a challenge")
            };
            assert!(server.step(&client.client_final(&first).unwrap()).is_err());
            assert!(client.verify(b"v=AAAA").is_err());
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
