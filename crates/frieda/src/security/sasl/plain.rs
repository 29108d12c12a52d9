//! SASL PLAIN (RFC 4616): one message `[authzid] NUL authcid NUL passwd`, checked against the
//! users of the listener's JAAS configuration (Kafka's `PlainServerCallbackHandler`:
//! `user_<name>="<password>"` options of `PlainLoginModule`).

use super::{AuthFailure, SaslServer, Step};
use std::collections::HashMap;
use subtle::ConstantTimeEq;

/// Kafka's message for a wrong user name or password.
const INVALID: &str = "Authentication failed: Invalid username or password";

/// The PLAIN exchange of one connection.
pub struct PlainServer {
    users: HashMap<String, String>,
}

impl PlainServer {
    /// Checks logins against `users` (name -> password).
    pub fn new(users: HashMap<String, String>) -> Self {
        PlainServer { users }
    }
}

impl SaslServer for PlainServer {
    fn step(&mut self, message: &[u8]) -> Result<Step, AuthFailure> {
        let text = std::str::from_utf8(message)
            .map_err(|_| AuthFailure::new("Invalid SASL/PLAIN response: not UTF-8"))?;
        let mut parts = text.split('\0');
        let (Some(authzid), Some(user), Some(password), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(AuthFailure::new(
                "Invalid SASL/PLAIN response: expected 3 tokens",
            ));
        };
        if user.is_empty() {
            return Err(AuthFailure::new(
                "Authentication failed: username not specified",
            ));
        }
        if password.is_empty() {
            return Err(AuthFailure::new(
                "Authentication failed: password not specified",
            ));
        }
        // Compare in constant time; an unknown user costs the same as a wrong password.
        let expected = self.users.get(user).map(String::as_str).unwrap_or("\u{0}");
        let ok: bool = expected.as_bytes().ct_eq(password.as_bytes()).into();
        if !ok || !self.users.contains_key(user) {
            return Err(AuthFailure::new(INVALID));
        }
        if !authzid.is_empty() && authzid != user {
            return Err(AuthFailure::new(
                "Authentication failed: Client requested an authorization id that is different from username",
            ));
        }
        Ok(Step::Done {
            user: user.to_string(),
            message: Vec::new(),
            expires_at_ms: None,
            token_authenticated: false,
        })
    }
}

/// The `user_<name>="<password>"` options of a JAAS configuration line
/// (`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin"
/// password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`).
///
/// Errors: a malformed line (unterminated quote, an option without a value).
pub fn jaas_users(jaas: &str) -> anyhow::Result<HashMap<String, String>> {
    let options = jaas_options(jaas)?;
    Ok(options
        .into_iter()
        .filter_map(|(k, v)| k.strip_prefix("user_").map(|u| (u.to_string(), v)))
        .collect())
}

/// The `username` and `password` options of a JAAS line (a client's own login, as Kafka's
/// clients and brokers read `sasl.jaas.config`); `None` when either is missing.
///
/// Errors: a malformed line (see [`jaas_options`]).
pub fn jaas_login(jaas: &str) -> anyhow::Result<Option<(String, String)>> {
    let options = jaas_options(jaas)?;
    let opt = |k: &str| options.iter().find(|(o, _)| o == k).map(|(_, v)| v.clone());
    Ok(opt("username").zip(opt("password")))
}

/// The `key="value"` options of one JAAS login module entry (Kafka's `JaasConfig` grammar:
/// `<LoginModuleClass> <ControlFlag> (<key>=<value>)* ;`, values quoted or bare).
///
/// Errors: an unterminated quote, or an option without `=`.
pub fn jaas_options(jaas: &str) -> anyhow::Result<Vec<(String, String)>> {
    let body = jaas.trim().trim_end_matches(';').trim();
    let mut chars = body.chars().peekable();
    let mut words = Vec::new();
    // Tokens: bare words, `=`, and quoted strings (backslash escapes the next character).
    let mut tokens: Vec<(bool, String)> = Vec::new();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut s = String::new();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        if let Some(n) = chars.next() {
                            s.push(n)
                        }
                    }
                    '"' => {
                        closed = true;
                        break;
                    }
                    c => s.push(c),
                }
            }
            if !closed {
                anyhow::bail!("sasl.jaas.config: unterminated quote");
            }
            tokens.push((true, s));
        } else if c == '=' {
            chars.next();
            tokens.push((false, "=".into()));
        } else {
            let mut s = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || c == '=' || c == '"' {
                    break;
                }
                s.push(c);
                chars.next();
            }
            tokens.push((false, s));
        }
    }
    // Skip the login module class and the control flag.
    let mut i = 2.min(tokens.len());
    while i < tokens.len() {
        let key = &tokens[i].1;
        if tokens.get(i + 1).map(|t| t.1.as_str()) != Some("=") || tokens.get(i + 2).is_none() {
            anyhow::bail!("sasl.jaas.config: option `{key}` has no value");
        }
        words.push((key.clone(), tokens[i + 2].1.clone()));
        i += 3;
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_jaas_line_gives_the_users() {
        let users = jaas_users(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="al\"ice";"#,
        )
        .unwrap();
        assert_eq!(users.len(), 2);
        assert_eq!(users["alice"], "al\"ice");
        assert!(jaas_users("x required user_a=\"open").is_err());
        assert!(jaas_users("x required user_a").is_err());
    }

    #[test]
    fn plain_checks_user_password_and_authzid() {
        let mut s = PlainServer::new([("alice".into(), "pw".into())].into());
        assert!(
            matches!(s.step(b"\0alice\0pw"), Ok(Step::Done { ref user, .. }) if user == "alice")
        );
        assert!(matches!(s.step(b"alice\0alice\0pw"), Ok(Step::Done { .. })));
        assert_eq!(s.step(b"\0alice\0no").unwrap_err().0, INVALID);
        assert_eq!(s.step(b"\0bob\0pw").unwrap_err().0, INVALID);
        assert!(s.step(b"bob\0alice\0pw").is_err());
        assert!(s.step(b"\0alice").is_err());
        assert!(s.step(b"\0\0pw").is_err());
    }
}
