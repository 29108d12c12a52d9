//! The connections `frieda admin` talks over: Kafka's client properties (`--command-config`),
//! a bootstrap broker, then the broker each request belongs to (a partition's leader, a group's
//! coordinator), every API version negotiated with that broker's ApiVersions answer (protocol
//! guide, "Versioning and Compatibility").

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use kafka_protocol::messages::{
    ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest, MetadataResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Message, Request, StrBytes};

use crate::membership::client::BrokerClient;
use crate::security::client::{tls_from_properties, ClientSecurity, SaslCredentials};
use crate::security::sasl::{plain, Mechanism};
use crate::security::SecurityProtocol;

/// Kafka client settings `frieda admin` reads from `--command-config`; others are reported as
/// ignored (Kafka's clients log unknown settings the same way).
const KNOWN_SETTINGS: &[&str] = &[
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.certificates",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.endpoint.identification.algorithm",
    "client.id",
    "request.timeout.ms",
];

/// How to reach the cluster: bootstrap addresses, TLS and SASL, time limits.
pub struct Settings {
    /// `host:port` of brokers to ask first (`--bootstrap-server`, comma-separated).
    pub bootstrap: Vec<String>,
    /// TLS and SASL, from `security.protocol` and the `ssl.*` / `sasl.*` settings.
    pub security: ClientSecurity,
    /// Limit for each connection and each request (`request.timeout.ms`, default 30,000 ms).
    pub timeout: Duration,
    /// `client.id` sent with each request (default `frieda-admin`).
    pub client_id: String,
}

impl Settings {
    /// Settings from `bootstrap` (comma-separated `host:port`) and, when given, a Kafka client
    /// properties file (`security.protocol`, `sasl.mechanism` PLAIN / SCRAM-SHA-256 /
    /// SCRAM-SHA-512 with `username` and `password` in `sasl.jaas.config`, PEM trust and key
    /// stores).
    ///
    /// Errors: an unreadable file, an unknown security protocol, SASL without a supported
    /// mechanism or credentials, TLS without a trust store, a JKS or PKCS12 store (PEM only).
    pub fn load(bootstrap: &str, command_config: Option<&Path>) -> anyhow::Result<Settings> {
        let props: HashMap<String, String> = match command_config {
            Some(path) => {
                let file = std::fs::File::open(path)
                    .with_context(|| format!("--command-config {}", path.display()))?;
                java_properties::read(std::io::BufReader::new(file))
                    .with_context(|| format!("--command-config {}", path.display()))?
            }
            None => HashMap::new(),
        };
        Self::from_properties(bootstrap, &props)
    }

    /// As [`load`](Self::load), from properties already read.
    pub fn from_properties(
        bootstrap: &str,
        props: &HashMap<String, String>,
    ) -> anyhow::Result<Settings> {
        let mut ignored: Vec<&str> = props
            .keys()
            .map(String::as_str)
            .filter(|k| !KNOWN_SETTINGS.contains(k))
            .collect();
        if !ignored.is_empty() {
            ignored.sort_unstable();
            eprintln!("frieda admin: settings ignored: {}", ignored.join(", "));
        }
        let get = |k: &str| props.get(k).map(|v| v.trim().to_string());
        let protocol = match get("security.protocol") {
            None => SecurityProtocol::Plaintext,
            Some(p) => SecurityProtocol::parse(&p).ok_or_else(|| {
                anyhow!("security.protocol `{p}`: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
            })?,
        };
        for store in ["ssl.truststore.type", "ssl.keystore.type"] {
            if let Some(t) = get(store).filter(|t| !t.eq_ignore_ascii_case("PEM")) {
                bail!("{store} `{t}`: only PEM stores are read (convert with `openssl pkcs12 -in store.p12 -out store.pem -nodes`)");
            }
        }
        let tls = if protocol.uses_tls() {
            Some(tls_from_properties(&get)?.ok_or_else(|| {
                anyhow!("security.protocol {}: set ssl.truststore.location (a PEM file) to verify the brokers", protocol.name())
            })?)
        } else {
            None
        };
        let sasl = if protocol.uses_sasl() {
            let name = get("sasl.mechanism").unwrap_or_else(|| "GSSAPI".into());
            let mechanism = match Mechanism::parse(&name) {
                Some(m) if m != Mechanism::OAuthBearer => m,
                _ => bail!("sasl.mechanism `{name}`: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (Kafka's default, GSSAPI, is not supported)"),
            };
            let jaas = get("sasl.jaas.config")
                .ok_or_else(|| anyhow!("sasl.jaas.config: needed for SASL ({name})"))?;
            let Some((username, password)) = plain::jaas_login(&jaas)? else {
                bail!("sasl.jaas.config: needs username=\"...\" password=\"...\"");
            };
            Some(SaslCredentials {
                mechanism,
                username,
                password,
            })
        } else {
            None
        };
        let timeout_ms: u64 = match get("request.timeout.ms") {
            Some(v) => v
                .parse()
                .map_err(|_| anyhow!("request.timeout.ms `{v}`: a number of milliseconds"))?,
            None => 30_000,
        };
        let bootstrap: Vec<String> = bootstrap
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if bootstrap.is_empty() {
            bail!("--bootstrap-server: at least one host:port");
        }
        Ok(Settings {
            bootstrap,
            security: ClientSecurity { tls, sasl },
            timeout: Duration::from_millis(timeout_ms),
            client_id: get("client.id").unwrap_or_else(|| "frieda-admin".into()),
        })
    }
}

/// Kafka's name of an error code (`UNKNOWN_TOPIC_OR_PARTITION`), with the broker's message when
/// it sent one.
pub fn error_text(code: i16, message: Option<&StrBytes>) -> String {
    let name = match kafka_protocol::error::ResponseError::try_from_code(code) {
        None => "NONE".to_string(),
        Some(kafka_protocol::error::ResponseError::Unknown(c)) => format!("UNKNOWN_ERROR_CODE_{c}"),
        Some(e) => {
            let camel = format!("{e:?}");
            let mut out = String::new();
            for (i, ch) in camel.chars().enumerate() {
                if ch.is_ascii_uppercase() && i > 0 {
                    out.push('_');
                }
                out.push(ch.to_ascii_uppercase());
            }
            out
        }
    };
    match message.map(|m| m.as_str()).filter(|m| !m.is_empty()) {
        Some(m) => format!("{name}: {m}"),
        None => name,
    }
}

/// Fails with Kafka's error name when `code` is not 0.
pub fn check(code: i16, message: Option<&StrBytes>, what: &str) -> anyhow::Result<()> {
    if code == 0 {
        Ok(())
    } else {
        bail!("{what}: {}", error_text(code, message))
    }
}

/// The highest version of an API this tool encodes: versions that name topics by id only
/// (Produce v13, Fetch v13+, OffsetCommit / OffsetFetch v10) are left to newer tools.
fn highest_spoken(api_key: i16, crate_max: i16) -> i16 {
    let cap = match api_key {
        0 => 12,    // Produce
        1 => 12,    // Fetch
        8 | 9 => 9, // OffsetCommit, OffsetFetch
        3 => 12,    // Metadata
        _ => i16::MAX,
    };
    crate_max.min(cap)
}

/// One broker connection and the API versions it accepts.
struct Connection {
    client: BrokerClient,
    /// API key → (min, max) version, from the broker's ApiVersions answer.
    versions: HashMap<i16, (i16, i16)>,
}

impl Connection {
    /// The version of `R` to send: the highest both the broker and this tool speak.
    ///
    /// Errors: the broker does not offer the API, or no version is common to both.
    fn version<R: Request + Message>(&self) -> anyhow::Result<i16> {
        let (min, max) = self.versions.get(&R::KEY).copied().ok_or_else(|| {
            anyhow!(
                "the broker does not offer {} (API key {})",
                api_name(R::KEY),
                R::KEY
            )
        })?;
        let spoken = highest_spoken(R::KEY, R::VERSIONS.max);
        let version = max.min(spoken);
        if version < min || version < R::VERSIONS.min {
            bail!(
                "the broker offers {} v{min}-{max}, this tool speaks v{}-{spoken}",
                api_name(R::KEY),
                R::VERSIONS.min
            );
        }
        Ok(version)
    }
}

/// Where a request goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// Whichever broker answered first (cluster-wide requests: Metadata, CreateTopics, ACLs).
    Any,
    /// The broker with this id (a partition's leader, a group's coordinator).
    Id(i32),
}

/// An admin session with a cluster.
pub struct Admin {
    settings: Settings,
    /// The bootstrap connection.
    any: Connection,
    /// Connections by broker id, opened on first use.
    nodes: HashMap<i32, Connection>,
    /// `host:port` of each broker, from the last Metadata answer.
    addresses: HashMap<i32, String>,
}

impl Admin {
    /// Connects to the first bootstrap broker that answers.
    ///
    /// Errors: none answered (each address's failure is named).
    pub async fn connect(settings: Settings) -> anyhow::Result<Admin> {
        let mut failures = Vec::new();
        for addr in &settings.bootstrap {
            match Self::open(&settings, addr).await {
                Ok(any) => {
                    return Ok(Admin {
                        settings,
                        any,
                        nodes: HashMap::new(),
                        addresses: HashMap::new(),
                    })
                }
                Err(e) => failures.push(format!("{addr}: {e:#}")),
            }
        }
        bail!("no broker answered: {}", failures.join("; "))
    }

    /// The time limit of one request.
    pub fn timeout(&self) -> Duration {
        self.settings.timeout
    }

    async fn open(settings: &Settings, addr: &str) -> anyhow::Result<Connection> {
        let mut client = BrokerClient::connect(
            addr,
            &settings.client_id,
            settings.timeout,
            &settings.security,
        )
        .await?;
        let req = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("frieda-admin"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let resp = client.call(3, &req, settings.timeout).await?;
        check(resp.error_code, None, "ApiVersions")?;
        let versions = resp
            .api_keys
            .iter()
            .map(|k| (k.api_key, (k.min_version, k.max_version)))
            .collect();
        Ok(Connection { client, versions })
    }

    async fn connection(&mut self, node: Node) -> anyhow::Result<&mut Connection> {
        let id = match node {
            Node::Any => return Ok(&mut self.any),
            Node::Id(id) => id,
        };
        if !self.nodes.contains_key(&id) {
            if !self.addresses.contains_key(&id) {
                self.metadata(Some(Vec::new())).await?;
            }
            let addr = self
                .addresses
                .get(&id)
                .ok_or_else(|| anyhow!("broker {id} is not in the cluster's metadata"))?
                .clone();
            let conn = Self::open(&self.settings, &addr)
                .await
                .with_context(|| format!("broker {id} at {addr}"))?;
            self.nodes.insert(id, conn);
        }
        Ok(self.nodes.get_mut(&id).expect("inserted above"))
    }

    /// Sends `req` to `node` at the highest version both sides speak and returns the answer.
    ///
    /// Errors: the broker does not offer the API at a version this tool speaks; I/O or
    /// time-out (the connection is then dropped, the next call opens a new one).
    pub async fn call<R>(&mut self, node: Node, req: &R) -> anyhow::Result<R::Response>
    where
        R: Request + Message + Encodable + HeaderVersion,
        R::Response: Decodable + HeaderVersion,
    {
        let timeout = self.settings.timeout;
        let conn = self.connection(node).await?;
        let result = call_on(conn, req, timeout).await;
        if result.is_err() {
            if let Node::Id(id) = node {
                self.nodes.remove(&id);
            }
        }
        result
    }

    /// How long a request may take (`request.timeout.ms`).
    pub fn request_timeout(&self) -> Duration {
        self.settings.timeout
    }

    /// The version `node` would be sent for `R` (the request's shape can depend on it).
    ///
    /// Errors: the broker does not offer `R` at a version this tool speaks.
    pub async fn version_for<R: Request + Message>(&mut self, node: Node) -> anyhow::Result<i16> {
        self.connection(node).await?.version::<R>()
    }

    /// Metadata for `topics` (`None`: every topic; `Some(vec![])`: brokers only), remembering
    /// each broker's address.
    ///
    /// Errors: as [`call`](Self::call).
    pub async fn metadata(
        &mut self,
        topics: Option<Vec<String>>,
    ) -> anyhow::Result<MetadataResponse> {
        self.metadata_with(topics, false).await
    }

    /// [`metadata`](Self::metadata), asking the broker to create missing topics where its
    /// `auto.create.topics.enable` allows (what a producer's Metadata request asks).
    ///
    /// Errors: as [`call`](Self::call).
    pub async fn metadata_with(
        &mut self,
        topics: Option<Vec<String>>,
        auto_create: bool,
    ) -> anyhow::Result<MetadataResponse> {
        use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
        use kafka_protocol::messages::TopicName;
        let req = MetadataRequest::default()
            .with_allow_auto_topic_creation(auto_create)
            .with_topics(topics.map(|ts| {
                ts.into_iter()
                    .map(|t| {
                        MetadataRequestTopic::default()
                            .with_name(Some(TopicName(StrBytes::from_string(t))))
                    })
                    .collect()
            }));
        let resp = call_on(&mut self.any, &req, self.settings.timeout).await?;
        for b in &resp.brokers {
            self.addresses
                .insert(b.node_id.0, format!("{}:{}", b.host.as_str(), b.port));
        }
        Ok(resp)
    }

    /// The coordinator of `group` (FindCoordinator, key type 0).
    ///
    /// Errors: COORDINATOR_NOT_AVAILABLE and the like, by name.
    pub async fn group_coordinator(&mut self, group: &str) -> anyhow::Result<Node> {
        let version = self
            .version_for::<FindCoordinatorRequest>(Node::Any)
            .await?;
        let key = StrBytes::from_string(group.to_string());
        let mut req = FindCoordinatorRequest::default().with_key_type(0);
        if version >= 4 {
            req.coordinator_keys = vec![key];
        } else {
            req.key = key;
        }
        let resp = self.call(Node::Any, &req).await?;
        let (id, host, port) = if version >= 4 {
            let c = resp
                .coordinators
                .first()
                .ok_or_else(|| anyhow!("FindCoordinator: empty answer"))?;
            check(c.error_code, c.error_message.as_ref(), "FindCoordinator")?;
            (c.node_id.0, c.host.to_string(), c.port)
        } else {
            check(
                resp.error_code,
                resp.error_message.as_ref(),
                "FindCoordinator",
            )?;
            (resp.node_id.0, resp.host.to_string(), resp.port)
        };
        self.addresses.insert(id, format!("{host}:{port}"));
        Ok(Node::Id(id))
    }
}

/// Sends `req` over `conn` at the highest version both sides speak.
async fn call_on<R>(
    conn: &mut Connection,
    req: &R,
    timeout: Duration,
) -> anyhow::Result<R::Response>
where
    R: Request + Message + Encodable + HeaderVersion,
    R::Response: Decodable + HeaderVersion,
{
    let version = conn.version::<R>()?;
    conn.client
        .call(version, req, timeout)
        .await
        .map_err(|e| anyhow!("{}: {e}", api_name(R::KEY)))
}

/// A short name of the APIs this tool sends, for messages.
fn api_name(key: i16) -> String {
    let name = match key {
        0 => "Produce",
        1 => "Fetch",
        2 => "ListOffsets",
        3 => "Metadata",
        8 => "OffsetCommit",
        9 => "OffsetFetch",
        10 => "FindCoordinator",
        15 => "DescribeGroups",
        16 => "ListGroups",
        18 => "ApiVersions",
        19 => "CreateTopics",
        20 => "DeleteTopics",
        21 => "DeleteRecords",
        29 => "DescribeAcls",
        30 => "CreateAcls",
        31 => "DeleteAcls",
        32 => "DescribeConfigs",
        42 => "DeleteGroups",
        43 => "ElectLeaders",
        44 => "IncrementalAlterConfigs",
        45 => "AlterPartitionReassignments",
        46 => "ListPartitionReassignments",
        48 => "DescribeClientQuotas",
        49 => "AlterClientQuotas",
        55 => "DescribeQuorum",
        60 => "DescribeCluster",
        69 => "ConsumerGroupDescribe",
        _ => return format!("API {key}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn kafka_client_properties_give_sasl_credentials() {
        let s = Settings::from_properties(
            "a:1, b:2",
            &props(&[
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", "SCRAM-SHA-512"),
                (
                    "sasl.jaas.config",
                    r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="a-secret";"#,
                ),
                ("request.timeout.ms", "5000"),
            ]),
        )
        .unwrap();
        assert_eq!(s.bootstrap, vec!["a:1", "b:2"]);
        let sasl = s.security.sasl.unwrap();
        assert_eq!(
            (sasl.username.as_str(), sasl.password.as_str()),
            ("alice", "a-secret")
        );
        assert_eq!(s.timeout, Duration::from_secs(5));
        assert!(s.security.tls.is_none());
    }

    #[test]
    fn unsupported_client_settings_are_refused_by_name() {
        let refuse = |pairs: &[(&str, &str)], word: &str| {
            let e = Settings::from_properties("a:1", &props(pairs))
                .err()
                .expect("refused");
            assert!(e.to_string().contains(word), "{e}");
        };
        refuse(&[("security.protocol", "SASL_PLAINTEXT")], "GSSAPI");
        refuse(&[("security.protocol", "SSL")], "ssl.truststore.location");
        refuse(
            &[("security.protocol", "SSL"), ("ssl.truststore.type", "JKS")],
            "PEM",
        );
        refuse(&[("security.protocol", "TLS")], "security.protocol");
        refuse(
            &[
                ("security.protocol", "SASL_PLAINTEXT"),
                ("sasl.mechanism", "PLAIN"),
            ],
            "sasl.jaas.config",
        );
    }

    #[test]
    fn error_codes_are_named_as_kafka_names_them() {
        assert_eq!(error_text(3, None), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(
            error_text(36, Some(&StrBytes::from_static_str("exists"))),
            "TOPIC_ALREADY_EXISTS: exists"
        );
    }
}
