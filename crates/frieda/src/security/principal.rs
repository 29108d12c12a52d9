//! Kafka principals (`KafkaPrincipal`): a type and a name, written `Type:name` (`User:alice`),
//! and the mapping of a TLS client certificate's subject to a principal name
//! (`ssl.principal.mapping.rules`, KIP-371).

use regex::Regex;
use std::fmt;

/// The principal of a connection nothing authenticated.
pub const ANONYMOUS: &str = "ANONYMOUS";
/// The principal type of users (the only one Kafka's default principal builder makes).
pub const USER_TYPE: &str = "User";

/// A principal: `User:alice`. ACLs name principals this way; `User:*` matches every user.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal {
    /// The principal type (`User`).
    pub kind: String,
    /// The name (a SASL user name, a certificate's distinguished name, `ANONYMOUS`).
    pub name: String,
}

impl Principal {
    /// `User:<name>`.
    pub fn user(name: impl Into<String>) -> Self {
        Principal {
            kind: USER_TYPE.into(),
            name: name.into(),
        }
    }

    /// `User:ANONYMOUS`.
    pub fn anonymous() -> Self {
        Self::user(ANONYMOUS)
    }

    /// Parses `Type:name` (Kafka's `SecurityUtils.parseKafkaPrincipal`: split at the first
    /// colon). `None` without a colon or with an empty type.
    pub fn parse(text: &str) -> Option<Self> {
        let (kind, name) = text.split_once(':')?;
        if kind.is_empty() {
            return None;
        }
        Some(Principal {
            kind: kind.to_string(),
            name: name.to_string(),
        })
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.name)
    }
}

/// One rule of `ssl.principal.mapping.rules`: `DEFAULT`, or `RULE:pattern/replacement/[LU]`
/// (Kafka's `SslPrincipalMapper`). The first rule whose pattern matches the whole distinguished
/// name gives the principal name.
#[derive(Debug, Clone)]
enum MappingRule {
    Default,
    Rule {
        pattern: Regex,
        replacement: String,
        case: Option<char>,
    },
}

/// `ssl.principal.mapping.rules`: how a client certificate's distinguished name (RFC 2253 form,
/// `CN=alice,OU=eng,O=example`) becomes a principal name. Default: the name unchanged.
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<MappingRule>,
}

impl Default for PrincipalMapper {
    fn default() -> Self {
        PrincipalMapper {
            rules: vec![MappingRule::Default],
        }
    }
}

impl PrincipalMapper {
    /// Parses the comma-separated rules. `RULE:` patterns are regular expressions (the `regex`
    /// crate's syntax, which covers what Kafka's examples use); `$1`-style groups in the
    /// replacement; a trailing `/L` or `/U` lower- or upper-cases the result.
    ///
    /// Errors: a rule that is neither `DEFAULT` nor `RULE:pattern/replacement/[LU]`, or a bad
    /// pattern.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let mut rules = Vec::new();
        let mut rest = text.trim();
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix("DEFAULT") {
                rules.push(MappingRule::Default);
                rest = r.trim_start().trim_start_matches(',').trim_start();
                continue;
            }
            let Some(r) = rest.strip_prefix("RULE:") else {
                anyhow::bail!("expected DEFAULT or RULE:pattern/replacement/ at `{rest}`");
            };
            // pattern/replacement/ with an optional L or U; '/' inside is escaped as '\/'.
            let (pattern, r) = split_unescaped(r, '/')
                .ok_or_else(|| anyhow::anyhow!("rule without a replacement: `{rest}`"))?;
            let (replacement, r) = split_unescaped(r, '/')
                .ok_or_else(|| anyhow::anyhow!("rule without a closing '/': `{rest}`"))?;
            let (case, r) = match r.chars().next() {
                Some(c @ ('L' | 'U')) => (Some(c), &r[1..]),
                _ => (None, r),
            };
            let pattern = Regex::new(&format!("^(?:{pattern})$"))?;
            rules.push(MappingRule::Rule {
                pattern,
                replacement: replacement.replace("\\/", "/"),
                case,
            });
            rest = r.trim_start().trim_start_matches(',').trim_start();
        }
        if rules.is_empty() {
            rules.push(MappingRule::Default);
        }
        Ok(PrincipalMapper { rules })
    }

    /// The principal name of distinguished name `dn`; the name unchanged when no rule matches
    /// (Kafka refuses the connection then; Frieda keeps the whole name, which no ACL for a
    /// short name matches).
    pub fn map(&self, dn: &str) -> String {
        for rule in &self.rules {
            match rule {
                MappingRule::Default => return dn.to_string(),
                MappingRule::Rule {
                    pattern,
                    replacement,
                    case,
                } => {
                    if let Some(caps) = pattern.captures(dn) {
                        let mut out = String::new();
                        caps.expand(replacement, &mut out);
                        return match case {
                            Some('L') => out.to_lowercase(),
                            Some('U') => out.to_uppercase(),
                            _ => out,
                        };
                    }
                }
            }
        }
        dn.to_string()
    }
}

/// Splits at the first `sep` not preceded by a backslash.
fn split_unescaped(s: &str, sep: char) -> Option<(&str, &str)> {
    let mut prev = '\0';
    for (i, c) in s.char_indices() {
        if c == sep && prev != '\\' {
            return Some((&s[..i], &s[i + c.len_utf8()..]));
        }
        prev = c;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_parse_and_print_as_kafka_does() {
        let p = Principal::parse("User:CN=a:b").unwrap();
        assert_eq!(p.kind, "User");
        assert_eq!(p.name, "CN=a:b");
        assert_eq!(p.to_string(), "User:CN=a:b");
        assert!(Principal::parse("alice").is_none());
        assert!(Principal::parse(":alice").is_none());
        assert_eq!(Principal::anonymous().to_string(), "User:ANONYMOUS");
    }

    #[test]
    fn mapping_rules_as_in_kip_371() {
        let m = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L, DEFAULT",
        )
        .unwrap();
        assert_eq!(m.map("CN=kafka1,OU=ServiceUsers,O=Org"), "kafka1");
        assert_eq!(m.map("CN=Duke,OU=JavaSoft,O=Sun"), "duke@javasoft");
        assert_eq!(m.map("O=Org"), "O=Org");
        assert_eq!(PrincipalMapper::default().map("CN=x"), "CN=x");
        assert!(PrincipalMapper::parse("NOPE").is_err());
    }
}
