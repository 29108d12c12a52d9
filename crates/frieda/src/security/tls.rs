//! TLS for `SSL` and `SASL_SSL` listeners with rustls (ring provider).
//!
//! Key and trust stores are PEM (Kafka's `ssl.keystore.type=PEM`, KIP-651): a keystore file
//! holding the private key (PKCS#8, PKCS#1 or SEC1, unencrypted) and the certificate chain, or
//! the same inline in `ssl.keystore.key` / `ssl.keystore.certificate.chain`; a truststore file
//! (or `ssl.truststore.certificates`) with the CA certificates client certificates must chain
//! to. `ssl.client.auth` is `none` (default), `requested` or `required`. Files are checked every
//! `ssl.reload.check.interval.ms` and a changed keystore or truststore is loaded for new
//! connections without a restart; one that fails to load keeps the previous configuration and
//! logs why.

use super::config::SecurityConfig;
use super::principal::PrincipalMapper;
use anyhow::{bail, Context};
use parking_lot::RwLock;
use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate asked for.
    None,
    /// Asked for; a client without one connects as `User:ANONYMOUS`.
    Requested,
    /// A client without a certificate chaining to the truststore is refused in the handshake.
    Required,
}

/// Where a listener's TLS material comes from (read again on reload).
#[derive(Debug, Clone)]
struct Sources {
    listener: String,
    keystore_file: Option<PathBuf>,
    keystore_chain: Option<String>,
    keystore_key: Option<String>,
    truststore_file: Option<PathBuf>,
    truststore_certs: Option<String>,
    client_auth: ClientAuth,
    versions: Vec<&'static rustls::SupportedProtocolVersion>,
}

/// Modification time and length of a file, to notice a change.
type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Option<PathBuf>) -> Stamp {
    let m = std::fs::metadata(path.as_ref()?).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// A TLS listener's server configuration, swapped when its files change.
pub struct TlsServer {
    sources: Sources,
    current: RwLock<(Arc<ServerConfig>, Stamp, Stamp)>,
    /// Maps a client certificate's subject to a principal name.
    pub mapper: PrincipalMapper,
}

impl std::fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsServer")
            .field("listener", &self.sources.listener)
            .finish()
    }
}

impl TlsServer {
    /// Loads the TLS settings of `listener` from `cfg`.
    ///
    /// Errors: no keystore, an unreadable or unparsable PEM file, a key that does not match
    /// the certificate, `ssl.client.auth` other than `none` without a truststore (each names
    /// the setting).
    pub fn load(cfg: &SecurityConfig, listener: &str) -> anyhow::Result<Self> {
        let get = |k: &str| cfg.listener_value(listener, k).map(str::to_string);
        let client_auth = match get("ssl.client.auth").as_deref().map(str::trim) {
            None | Some("none") | Some("") => ClientAuth::None,
            Some("requested") => ClientAuth::Requested,
            Some("required") => ClientAuth::Required,
            Some(other) => bail!("ssl.client.auth: unknown value `{other}`"),
        };
        let mut versions = Vec::new();
        for p in get("ssl.enabled.protocols")
            .unwrap_or_else(|| "TLSv1.2,TLSv1.3".into())
            .split(',')
            .map(str::trim)
        {
            match p {
                "TLSv1.3" => versions.push(&rustls::version::TLS13),
                "TLSv1.2" => versions.push(&rustls::version::TLS12),
                "" => {}
                other => bail!("ssl.enabled.protocols: unsupported `{other}`"),
            }
        }
        let sources = Sources {
            listener: listener.to_string(),
            keystore_file: get("ssl.keystore.location").map(PathBuf::from),
            keystore_chain: get("ssl.keystore.certificate.chain"),
            keystore_key: get("ssl.keystore.key"),
            truststore_file: get("ssl.truststore.location").map(PathBuf::from),
            truststore_certs: get("ssl.truststore.certificates"),
            client_auth,
            versions,
        };
        let config = build(&sources).with_context(|| format!("TLS of listener {listener}"))?;
        let stamps = (
            stamp(&sources.keystore_file),
            stamp(&sources.truststore_file),
        );
        Ok(TlsServer {
            mapper: cfg.principal_mapper(listener)?,
            current: RwLock::new((config, stamps.0, stamps.1)),
            sources,
        })
    }

    /// The configuration for a new connection.
    pub fn config(&self) -> Arc<ServerConfig> {
        self.current.read().0.clone()
    }

    /// `ssl.client.auth` of the listener.
    pub fn client_auth(&self) -> ClientAuth {
        self.sources.client_auth
    }

    /// Loads the files again if they changed since the last load. Returns true when a new
    /// configuration took effect. A file that fails to load is logged and the previous
    /// configuration stays (a half-written certificate never breaks new connections).
    pub fn reload_if_changed(&self) -> bool {
        let ks = stamp(&self.sources.keystore_file);
        let ts = stamp(&self.sources.truststore_file);
        {
            let cur = self.current.read();
            if cur.1 == ks && cur.2 == ts {
                return false;
            }
        }
        match build(&self.sources) {
            Ok(config) => {
                *self.current.write() = (config, ks, ts);
                tracing::info!(listener = %self.sources.listener, "TLS key/trust store changed on disk: reloaded for new connections");
                true
            }
            Err(e) => {
                // Remember the stamps so a broken file is reported once, not every check.
                let mut cur = self.current.write();
                cur.1 = ks;
                cur.2 = ts;
                tracing::warn!(listener = %self.sources.listener, error = format!("{e:#}"),
                    "TLS key/trust store changed on disk but does not load; keeping the previous one");
                false
            }
        }
    }
}

fn read_text(path: &PathBuf) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// Builds a rustls server configuration from the sources.
fn build(s: &Sources) -> anyhow::Result<Arc<ServerConfig>> {
    let (chain_pem, key_pem) = match (&s.keystore_file, &s.keystore_chain, &s.keystore_key) {
        (Some(path), None, None) => {
            let text = read_text(path).context("ssl.keystore.location")?;
            (text.clone(), text)
        }
        (None, Some(chain), Some(key)) => (chain.as_bytes().to_vec(), key.as_bytes().to_vec()),
        (None, None, None) => bail!("a TLS listener needs ssl.keystore.location (a PEM file with the private key and certificate chain) or ssl.keystore.certificate.chain with ssl.keystore.key"),
        _ => bail!("give either ssl.keystore.location or ssl.keystore.certificate.chain with ssl.keystore.key"),
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&chain_pem)
        .collect::<Result<_, _>>()
        .context("ssl.keystore: certificate chain is not valid PEM")?;
    if chain.is_empty() {
        bail!("ssl.keystore: no certificate (-----BEGIN CERTIFICATE-----) found");
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .context("ssl.keystore: no unencrypted private key (PKCS#8, PKCS#1 or SEC1 PEM) found")?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&s.versions)
        .context("ssl.enabled.protocols")?;
    let builder = match s.client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        auth => {
            let pem = match (&s.truststore_file, &s.truststore_certs) {
                (Some(path), _) => read_text(path).context("ssl.truststore.location")?,
                (None, Some(certs)) => certs.as_bytes().to_vec(),
                (None, None) => bail!(
                    "ssl.client.auth={} needs ssl.truststore.location (PEM CA certificates)",
                    if auth == ClientAuth::Required {
                        "required"
                    } else {
                        "requested"
                    }
                ),
            };
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&pem) {
                roots
                    .add(cert.context("ssl.truststore: not valid PEM")?)
                    .context("ssl.truststore: a certificate is not usable as a trust anchor")?;
            }
            if roots.is_empty() {
                bail!("ssl.truststore: no certificate found");
            }
            let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let v = if auth == ClientAuth::Requested {
                v.allow_unauthenticated()
            } else {
                v
            };
            builder.with_client_cert_verifier(v.build().context("ssl.truststore")?)
        }
    };
    let config = builder
        .with_single_cert(chain, key)
        .context("ssl.keystore: the private key does not fit the certificate")?;
    Ok(Arc::new(config))
}

/// A TLS failure as rustls reports it (`reason`), with what to do when the cause is one a
/// Kafka operator meets for the first time here: rustls (webpki) accepts only X.509 v3
/// certificates, while Java and OpenSSL also take the v1 certificates that `openssl x509 -req`
/// makes without `-extfile`/`-copy_extensions`.
pub fn explain_failure(reason: &str) -> String {
    if reason.contains("UnsupportedCertVersion") {
        format!(
            "{reason} (the certificate is X.509 v1; Frieda's TLS (rustls) accepts only v3 \
             certificates: sign it with extensions, e.g. `openssl x509 -req ... -extfile \
             <(printf 'basicConstraints=CA:FALSE')`, see docs/security.md, \"A secure broker\")"
        )
    } else {
        reason.to_string()
    }
}

/// The subject of a DER certificate as Java's `X500Principal.getName()` prints it (RFC 2253:
/// most specific attribute first, `CN=alice,OU=eng,O=example`), which Kafka's default principal
/// builder uses as the principal name.
pub fn subject_dn(cert: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert).ok()?;
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter_rdn() {
        let parts: Vec<String> = rdn
            .iter()
            .map(|atv| {
                let oid = atv.attr_type().to_id_string();
                let name = match oid.as_str() {
                    "2.5.4.3" => "CN".to_string(),
                    "2.5.4.11" => "OU".to_string(),
                    "2.5.4.10" => "O".to_string(),
                    "2.5.4.6" => "C".to_string(),
                    "2.5.4.7" => "L".to_string(),
                    "2.5.4.8" => "ST".to_string(),
                    "2.5.4.9" => "STREET".to_string(),
                    "0.9.2342.19200300.100.1.25" => "DC".to_string(),
                    "0.9.2342.19200300.100.1.1" => "UID".to_string(),
                    // Java has no keyword for it: the OID, and the value as `#` and the hex
                    // of its DER (RFC 2253 section 2.4), as `X500Principal.getName()` writes
                    // e.g. emailAddress: `1.2.840.113549.1.9.1=#1611...`.
                    other => return format!("{other}=#{}", der_hex(atv.attr_value())),
                };
                let value = atv.as_str().map(escape_rfc2253).unwrap_or_default();
                format!("{name}={value}")
            })
            .collect();
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

/// Lower-case hex of a value's whole DER encoding (tag, length, content).
fn der_hex(value: &x509_parser::der_parser::asn1_rs::Any<'_>) -> String {
    use x509_parser::der_parser::asn1_rs::ToDer;
    value
        .to_der_vec()
        .map(|der| der.iter().map(|b| format!("{b:02x}")).collect())
        .unwrap_or_default()
}

/// Escapes an attribute value as RFC 2253 requires.
fn escape_rfc2253(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let n = v.chars().count();
    for (i, c) in v.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i + 1 == n && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc2253_escapes() {
        assert_eq!(escape_rfc2253("a,b"), "a\\,b");
        assert_eq!(escape_rfc2253(" x "), "\\ x\\ ");
        assert_eq!(escape_rfc2253("plain"), "plain");
    }

    #[test]
    fn a_value_java_has_no_keyword_for_is_its_der_in_hex() {
        use x509_parser::der_parser::asn1_rs::{Any, Tag};
        let v = Any::from_tag_and_data(Tag::Ia5String, b"a@b");
        assert_eq!(der_hex(&v), "1603614062");
    }

    #[test]
    fn missing_keystore_is_an_error_naming_the_setting() {
        let cfg = SecurityConfig::default();
        let e = TlsServer::load(&cfg, "SSL").unwrap_err();
        assert!(format!("{e:#}").contains("ssl.keystore.location"), "{e:#}");
    }
}
