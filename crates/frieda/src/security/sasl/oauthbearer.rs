//! SASL OAUTHBEARER (RFC 7628; Kafka's KIP-255 and KIP-768): the client sends a JWT bearer
//! token, `n,,\x01auth=Bearer <jwt>\x01[key=value\x01]*\x01`, and the broker validates it as
//! Kafka's `OAuthBearerValidatorCallbackHandler` does: the signature against the keys of a JWKS
//! (`sasl.oauthbearer.jwks.endpoint.url`, a `file:` URL here: the broker makes no outbound
//! calls), the expiry (`exp`, with `sasl.oauthbearer.clock.skew.seconds`), the audience
//! (`sasl.oauthbearer.expected.audience`) and issuer (`sasl.oauthbearer.expected.issuer`) when
//! configured; the principal is the `sasl.oauthbearer.sub.claim.name` claim (default `sub`).
//!
//! Without a JWKS the broker does what Kafka's default (`OAuthBearerUnsecuredValidatorCallbackHandler`)
//! does: it accepts unsigned tokens (`alg: none`) and checks only their expiry and subject. That
//! is for tests; the start-up log says so.
//!
//! The token's expiry bounds the session: with `connections.max.reauth.ms` the client must
//! authenticate again before the earlier of the two.
//!
//! Signature verification and JWK handling are the `jsonwebtoken` crate's (ring).

use super::{AuthFailure, SaslServer, Step};
use base64::Engine;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use parking_lot::Mutex;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

/// How OAUTHBEARER tokens are validated on a listener.
pub struct OAuthValidator {
    jwks: Option<Jwks>,
    audience: Vec<String>,
    issuer: Option<String>,
    sub_claim: String,
    skew_s: u64,
}

/// A JWKS file, read again when it changes.
struct Jwks {
    path: PathBuf,
    cached: Mutex<(Option<SystemTime>, Arc<JwkSet>)>,
}

impl Jwks {
    fn load(path: PathBuf) -> anyhow::Result<Self> {
        let (stamp, set) = read_jwks(&path)?;
        Ok(Jwks {
            path,
            cached: Mutex::new((stamp, Arc::new(set))),
        })
    }

    /// The key set, re-read if the file changed (a file that no longer parses keeps the old set).
    fn current(&self) -> Arc<JwkSet> {
        let modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        let mut c = self.cached.lock();
        if modified.is_some() && modified != c.0 {
            match read_jwks(&self.path) {
                Ok((stamp, set)) => {
                    *c = (stamp, Arc::new(set));
                    tracing::info!(path = %self.path.display(), "OAUTHBEARER JWKS changed on disk: reloaded");
                }
                Err(e) => {
                    c.0 = modified;
                    tracing::warn!(path = %self.path.display(), error = format!("{e:#}"),
                        "OAUTHBEARER JWKS changed on disk but does not parse; keeping the previous keys");
                }
            }
        }
        c.1.clone()
    }
}

fn read_jwks(path: &PathBuf) -> anyhow::Result<(Option<SystemTime>, JwkSet)> {
    use anyhow::Context;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the JWKS {}", path.display()))?;
    let set: JwkSet = serde_json::from_str(&text)
        .with_context(|| format!("parsing the JWKS {}", path.display()))?;
    let stamp = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    Ok((stamp, set))
}

impl OAuthValidator {
    /// Builds the validator from the listener's `sasl.oauthbearer.*` settings (`get` looks one
    /// up). Errors: a JWKS URL that is not `file:`, or a JWKS file that cannot be read.
    pub fn new(get: impl Fn(&str) -> Option<String>) -> anyhow::Result<Self> {
        let jwks = match get("sasl.oauthbearer.jwks.endpoint.url") {
            Some(url) => {
                let path = url
                    .strip_prefix("file://")
                    .or_else(|| url.strip_prefix("file:"));
                let Some(path) = path else {
                    anyhow::bail!("sasl.oauthbearer.jwks.endpoint.url: only file: URLs are supported (the broker makes no outbound calls), got `{url}`");
                };
                Some(Jwks::load(PathBuf::from(path))?)
            }
            None => None,
        };
        let audience = get("sasl.oauthbearer.expected.audience")
            .map(|a| {
                a.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let skew_s = get("sasl.oauthbearer.clock.skew.seconds")
            .map(|s| s.trim().parse())
            .transpose()?
            .unwrap_or(30);
        Ok(OAuthValidator {
            jwks,
            audience,
            issuer: get("sasl.oauthbearer.expected.issuer"),
            sub_claim: get("sasl.oauthbearer.sub.claim.name").unwrap_or_else(|| "sub".into()),
            skew_s,
        })
    }

    /// Whether tokens are checked against a JWKS (false: Kafka's unsecured validator).
    pub fn secured(&self) -> bool {
        self.jwks.is_some()
    }

    /// Validates a compact JWT; returns the principal name and the expiry (ms since the epoch).
    ///
    /// Errors: what is wrong with the token (invalid signature, expired, wrong audience, ...).
    pub fn validate(&self, token: &str) -> Result<(String, Option<i64>), String> {
        let claims: serde_json::Map<String, Value> = match &self.jwks {
            Some(jwks) => {
                let header = jsonwebtoken::decode_header(token).map_err(|e| e.to_string())?;
                let set = jwks.current();
                let jwk = match &header.kid {
                    Some(kid) => set.find(kid),
                    None => set.keys.first(),
                }
                .ok_or_else(|| format!("no key in the JWKS for kid {:?}", header.kid))?;
                let key = DecodingKey::from_jwk(jwk).map_err(|e| e.to_string())?;
                let mut v = Validation::new(header.alg);
                v.leeway = self.skew_s;
                v.validate_exp = true;
                v.required_spec_claims = ["exp".to_string()].into_iter().collect();
                if self.audience.is_empty() {
                    v.validate_aud = false;
                } else {
                    v.set_audience(&self.audience);
                }
                if let Some(iss) = &self.issuer {
                    v.set_issuer(&[iss]);
                }
                if matches!(
                    header.alg,
                    Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
                ) {
                    return Err("symmetric (HS*) tokens are not accepted".into());
                }
                jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, &key, &v)
                    .map_err(|e| e.to_string())?
                    .claims
            }
            None => unsecured_claims(token, self.skew_s)?,
        };
        let sub = claims
            .get(&self.sub_claim)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("the token has no `{}` claim", self.sub_claim))?;
        let exp_ms = claims
            .get("exp")
            .and_then(Value::as_f64)
            .map(|s| (s * 1000.0) as i64);
        Ok((sub.to_string(), exp_ms))
    }
}

/// The claims of an unsecured JWS (`alg: none`, Kafka's `OAuthBearerUnsecuredJws`), with its
/// expiry checked.
fn unsecured_claims(token: &str, skew_s: u64) -> Result<serde_json::Map<String, Value>, String> {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut parts = token.split('.');
    let (Some(h), Some(p)) = (parts.next(), parts.next()) else {
        return Err("not a compact JWS".into());
    };
    let header: Value = serde_json::from_slice(&b64.decode(h).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    if header.get("alg").and_then(Value::as_str) != Some("none") {
        return Err("a signed token, and no sasl.oauthbearer.jwks.endpoint.url to check it".into());
    }
    let claims: serde_json::Map<String, Value> =
        serde_json::from_slice(&b64.decode(p).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let now_s = crate::clock::now_ms() as f64 / 1000.0;
    match claims.get("exp").and_then(Value::as_f64) {
        Some(exp) if exp + skew_s as f64 <= now_s => Err("the token expired".into()),
        Some(_) => Ok(claims),
        None => Err("the token has no `exp` claim".into()),
    }
}

/// The OAUTHBEARER exchange of one connection (one client message).
pub struct OAuthServer {
    validator: Arc<OAuthValidator>,
}

impl OAuthServer {
    /// A new exchange with `validator`.
    pub fn new(validator: Arc<OAuthValidator>) -> Self {
        OAuthServer { validator }
    }
}

impl SaslServer for OAuthServer {
    fn step(&mut self, message: &[u8]) -> Result<Step, AuthFailure> {
        let text = std::str::from_utf8(message)
            .map_err(|_| AuthFailure::new("Invalid OAUTHBEARER message: not UTF-8"))?;
        // gs2-header "n,[a=authzid]," then key=value pairs separated by \x01.
        let (gs2, rest) = text
            .split_once('\u{1}')
            .ok_or_else(|| AuthFailure::new("Invalid OAUTHBEARER client first message"))?;
        if !gs2.starts_with("n,") && !gs2.starts_with("y,") {
            return Err(AuthFailure::new("Invalid OAUTHBEARER gs2 header"));
        }
        let token = rest
            .split('\u{1}')
            .find_map(|kv| kv.strip_prefix("auth="))
            .and_then(|a| {
                a.strip_prefix("Bearer ")
                    .or_else(|| a.strip_prefix("bearer "))
            })
            .ok_or_else(|| {
                AuthFailure::new("Invalid OAUTHBEARER client first message: no auth=Bearer")
            })?;
        match self.validator.validate(token.trim()) {
            Ok((sub, exp_ms)) => {
                let authz = gs2
                    .split(',')
                    .nth(1)
                    .and_then(|a| a.strip_prefix("a="))
                    .filter(|a| !a.is_empty());
                if authz.is_some_and(|a| a != sub) {
                    return Err(AuthFailure::new(
                        "Authentication failed: the authorization id differs from the token's principal",
                    ));
                }
                Ok(Step::Done {
                    user: sub,
                    message: Vec::new(),
                    expires_at_ms: exp_ms,
                    token_authenticated: false,
                })
            }
            Err(why) => Err(AuthFailure::new(format!(
                "Authentication failed: invalid_token: {why}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unsecured(claims: &str) -> String {
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        format!(
            "{}.{}.",
            b64.encode(r#"{"alg":"none"}"#),
            b64.encode(claims)
        )
    }

    fn message(token: &str) -> Vec<u8> {
        format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes()
    }

    #[test]
    fn unsecured_tokens_as_kafkas_default_validator() {
        let v = Arc::new(OAuthValidator::new(|_| None).unwrap());
        assert!(!v.secured());
        let exp = crate::clock::now_ms() / 1000 + 3600;
        let mut s = OAuthServer::new(v.clone());
        let ok = s.step(&message(&unsecured(&format!(
            r#"{{"sub":"alice","exp":{exp}}}"#
        ))));
        match ok {
            Ok(Step::Done {
                user,
                expires_at_ms,
                ..
            }) => {
                assert_eq!(user, "alice");
                assert_eq!(expires_at_ms, Some(exp * 1000));
            }
            other => panic!("{other:?}"),
        }
        let expired = unsecured(r#"{"sub":"alice","exp":1000}"#);
        let e = OAuthServer::new(v.clone())
            .step(&message(&expired))
            .unwrap_err();
        assert!(e.0.contains("expired"), "{e:?}");
        let no_sub = unsecured(&format!(r#"{{"exp":{exp}}}"#));
        assert!(OAuthServer::new(v.clone()).step(&message(&no_sub)).is_err());
        // A signed token needs a JWKS to be checked against.
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let signed = format!(
            "{}.{}.c2ln",
            b64.encode(r#"{"alg":"RS256"}"#),
            b64.encode(format!(r#"{{"sub":"alice","exp":{exp}}}"#))
        );
        assert!(OAuthServer::new(v.clone()).step(&message(&signed)).is_err());
        assert!(OAuthServer::new(v).step(b"garbage").is_err());
    }

    #[test]
    fn jwks_must_be_a_file_url() {
        let e = OAuthValidator::new(|k| {
            (k == "sasl.oauthbearer.jwks.endpoint.url").then(|| "https://idp/jwks".to_string())
        });
        assert!(e.is_err());
    }
}
