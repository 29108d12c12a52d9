//! `frieda admin`: a Kafka admin tool in the broker's own binary (no JVM; Redpanda's `rpk` is the
//! model): cluster status, topics, consumer groups, ACLs, and lines in and out of a topic. It
//! speaks the Kafka protocol, so it works against Frieda and Apache Kafka alike, and takes
//! Kafka's client properties for TLS and SASL (`--command-config`, as Kafka's tools do).
//!
//! One module per command group: [`cluster`], [`topics`], [`groups`], [`acls`], [`quotas`],
//! [`replicas`] (reassignment, leader election), [`console`]; [`configs`] holds the settings
//! of topics, brokers and groups, [`partitions`] leaders and offsets, [`client`] the
//! connections and version negotiation.

pub mod acls;
pub mod client;
pub mod cluster;
pub mod configs;
pub mod console;
pub mod groups;
pub mod partitions;
pub mod quotas;
pub mod replicas;
pub mod table;
pub mod topics;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

/// `frieda admin [--bootstrap-server ...] [--command-config FILE] COMMAND`.
#[derive(Args)]
pub struct AdminArgs {
    /// Brokers to ask first: HOST:PORT[,HOST:PORT...].
    #[arg(long, default_value = "127.0.0.1:9092", global = true)]
    pub bootstrap_server: String,
    /// Kafka client properties (security.protocol, sasl.mechanism, sasl.jaas.config,
    /// ssl.truststore.location (PEM), ssl.keystore.location (PEM), request.timeout.ms).
    #[arg(long, global = true)]
    pub command_config: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// The command groups.
#[derive(Subcommand)]
pub enum AdminCommand {
    /// The cluster.
    #[command(subcommand)]
    Cluster(ClusterCommand),
    /// Topics.
    #[command(subcommand)]
    Topic(TopicCommand),
    /// Consumer groups (classic and KIP-848).
    #[command(subcommand)]
    Group(GroupCommand),
    /// Partition reassignment and leader election.
    #[command(subcommand)]
    Partition(PartitionCommand),
    /// Broker settings (one broker's, or every broker's default).
    #[command(subcommand)]
    Broker(BrokerCommand),
    /// Access control lists.
    #[command(subcommand)]
    Acl(AclCommand),
    /// Client quotas by user principal, client id or IP.
    #[command(subcommand)]
    Quota(QuotaCommand),
    /// Produce each line of stdin as a record.
    Produce(ProduceCli),
    /// Print records, one per line.
    Consume(ConsumeCli),
}

/// `frieda admin cluster ...`.
#[derive(Subcommand)]
pub enum ClusterCommand {
    /// Brokers (fenced ones too: down, or not yet caught up), the controller quorum,
    /// under-replicated and offline partitions (exits 1 when a partition is offline).
    Status {
        /// List every under-replicated partition (by default the first 10 and a count by
        /// broker missing from the ISR).
        #[arg(long)]
        verbose: bool,
    },
}

/// `frieda admin topic ...`.
#[derive(Subcommand)]
pub enum TopicCommand {
    /// Topic names, one per line.
    List {
        /// Include internal topics (`__consumer_offsets`, `__transaction_state`).
        #[arg(long)]
        internal: bool,
    },
    /// Create a topic.
    Create {
        /// The topic.
        topic: String,
        /// Number of partitions (default: the broker's num.partitions).
        #[arg(long, default_value_t = -1)]
        partitions: i32,
        /// Replicas per partition (default: the broker's default.replication.factor).
        #[arg(long, default_value_t = -1)]
        replication_factor: i16,
        /// A topic setting, KEY=VALUE (repeatable).
        #[arg(long = "config", value_name = "KEY=VALUE")]
        configs: Vec<String>,
    },
    /// Partitions, leaders, replicas, ISR and settings (every topic when none is named).
    Describe {
        /// Topics.
        topics: Vec<String>,
    },
    /// Change a topic's settings.
    AlterConfig {
        /// The topic.
        topic: String,
        #[command(flatten)]
        change: ConfigChangeCli,
    },
    /// Delete topics.
    Delete {
        /// Topics.
        #[arg(required = true)]
        topics: Vec<String>,
    },
    /// Delete the records below an offset: the partition's log start offset moves up to it
    /// (prints each partition's new log start offset, its low watermark).
    DeleteRecords {
        /// TOPIC:PARTITION=OFFSET (-1: every record, up to the high watermark), repeatable.
        #[arg(required = true, value_name = "TOPIC:PARTITION=OFFSET")]
        partitions: Vec<String>,
    },
}

/// The flags naming which settings to change, shared by the alter-config commands.
#[derive(Args)]
pub struct ConfigChangeCli {
    /// Set KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Remove a setting, back to the default (repeatable).
    #[arg(long = "delete", value_name = "KEY")]
    delete: Vec<String>,
}

/// A settings change: the `--set` (name, value) pairs and the `--delete` names.
type ConfigChange = (Vec<(String, String)>, Vec<String>);

impl ConfigChangeCli {
    /// The `--set` pairs and the `--delete` names.
    ///
    /// Errors: a `--set` without `=`.
    fn parts(&self) -> anyhow::Result<ConfigChange> {
        let set = self
            .set
            .iter()
            .map(|c| topics::key_value(c))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok((set, self.delete.clone()))
    }
}

/// `frieda admin partition ...`.
#[derive(Subcommand)]
pub enum PartitionCommand {
    /// Move partitions to new replicas (the first one the preferred leader), or cancel a
    /// move in progress; the data is copied in the background (see `reassignments`).
    Reassign {
        /// TOPIC:PARTITION=BROKER,BROKER,... (repeatable).
        #[arg(value_name = "TOPIC:PARTITION=REPLICAS")]
        moves: Vec<String>,
        /// Cancel the reassignment of TOPIC:PARTITION in progress (repeatable).
        #[arg(long = "cancel", value_name = "TOPIC:PARTITION")]
        cancel: Vec<String>,
    },
    /// The reassignments in progress (of these topics, or all).
    Reassignments {
        /// Topics.
        topics: Vec<String>,
    },
    /// Elect leaders: the preferred replica (every partition when none is named), or with
    /// --unclean any live replica, also one outside the ISR (records may be lost).
    Elect {
        /// Unclean election: only for the partitions named.
        #[arg(long)]
        unclean: bool,
        /// TOPIC:PARTITION (repeatable).
        #[arg(value_name = "TOPIC:PARTITION")]
        partitions: Vec<String>,
    },
}

/// `frieda admin broker ...`.
#[derive(Subcommand)]
pub enum BrokerCommand {
    /// A broker's settings and where each comes from (set ones; --all for every one).
    DescribeConfig {
        /// The broker id (or --default).
        #[arg(required_unless_present = "default", conflicts_with = "default")]
        broker: Option<i32>,
        /// The cluster-wide default of every broker.
        #[arg(long)]
        default: bool,
        /// Built-in defaults too.
        #[arg(long)]
        all: bool,
    },
    /// Change a broker's dynamic settings (or with --default every broker's).
    AlterConfig {
        /// The broker id (or --default).
        #[arg(required_unless_present = "default", conflicts_with = "default")]
        broker: Option<i32>,
        /// The cluster-wide default of every broker.
        #[arg(long)]
        default: bool,
        #[command(flatten)]
        change: ConfigChangeCli,
    },
}

/// The entity flags of the quota commands.
#[derive(Args)]
pub struct QuotaEntityCli {
    /// A user principal's name (`alice` for `User:alice`).
    #[arg(long, conflicts_with = "user_default")]
    user: Option<String>,
    /// The default of every user.
    #[arg(long)]
    user_default: bool,
    /// A client id.
    #[arg(long, conflicts_with = "client_default")]
    client_id: Option<String>,
    /// The default of every client id.
    #[arg(long)]
    client_default: bool,
    /// A client IP address.
    #[arg(long, conflicts_with = "ip_default")]
    ip: Option<String>,
    /// The default of every IP address.
    #[arg(long)]
    ip_default: bool,
}

impl QuotaEntityCli {
    /// The entity's components, user before client id before IP.
    fn components(&self) -> Vec<quotas::Component> {
        let mut out = Vec::new();
        let mut add = |t: &'static str, name: &Option<String>, default: bool| {
            if let Some(n) = name {
                out.push((t, Some(n.clone())));
            } else if default {
                out.push((t, None));
            }
        };
        add(quotas::USER, &self.user, self.user_default);
        add(quotas::CLIENT_ID, &self.client_id, self.client_default);
        add(quotas::IP, &self.ip, self.ip_default);
        out
    }
}

/// `frieda admin quota ...`.
#[derive(Subcommand)]
pub enum QuotaCommand {
    /// Quotas of every entity that includes the one named (every quota when none is).
    List {
        #[command(flatten)]
        entity: QuotaEntityCli,
    },
    /// Set or remove quotas (producer_byte_rate, consumer_byte_rate, request_percentage,
    /// controller_mutation_rate, connection_creation_rate) of one entity.
    Alter {
        #[command(flatten)]
        entity: QuotaEntityCli,
        #[command(flatten)]
        change: ConfigChangeCli,
    },
}

/// `frieda admin group ...`.
#[derive(Subcommand)]
pub enum GroupCommand {
    /// Every group, its type and state.
    List,
    /// A group's state, members, committed offsets and lag.
    Describe {
        /// The group.
        group: String,
    },
    /// Delete groups without members, with their committed offsets.
    Delete {
        /// Groups.
        #[arg(required = true)]
        groups: Vec<String>,
    },
    /// A group's own settings (KIP-848: consumer.session.timeout.ms, ...; --all for every
    /// one).
    DescribeConfig {
        /// The group.
        group: String,
        /// Defaults too.
        #[arg(long)]
        all: bool,
    },
    /// Change a group's own settings.
    AlterConfig {
        /// The group.
        group: String,
        #[command(flatten)]
        change: ConfigChangeCli,
    },
    /// Move a group's committed offsets (the group must have no members); prints the plan,
    /// commits it with --execute.
    ResetOffsets {
        /// The group.
        group: String,
        /// TOPIC or TOPIC:PARTITION,PARTITION (repeatable).
        #[arg(long = "topic", required = true)]
        topics: Vec<String>,
        /// To the log start offset.
        #[arg(long, group = "target")]
        to_earliest: bool,
        /// To the high watermark.
        #[arg(long, group = "target")]
        to_latest: bool,
        /// To this offset (kept within the log).
        #[arg(long, group = "target", allow_hyphen_values = true)]
        to_offset: Option<i64>,
        /// By this many from the committed offset (negative: back).
        #[arg(long, group = "target", allow_hyphen_values = true)]
        shift_by: Option<i64>,
        /// Commit the new offsets (otherwise only print them).
        #[arg(long)]
        execute: bool,
    },
}

/// The resource flags shared by the ACL commands.
#[derive(Args, Clone)]
pub struct AclResourceCli {
    /// A topic.
    #[arg(long)]
    topic: Option<String>,
    /// A consumer group.
    #[arg(long)]
    group: Option<String>,
    /// The cluster.
    #[arg(long)]
    cluster: bool,
    /// A transactional id.
    #[arg(long)]
    transactional_id: Option<String>,
    /// literal (default) or prefixed; in `list` also any or match.
    #[arg(long)]
    resource_pattern_type: Option<String>,
}

impl AclResourceCli {
    fn resource(&self) -> acls::Resource {
        acls::Resource {
            topic: self.topic.clone(),
            group: self.group.clone(),
            cluster: self.cluster,
            transactional_id: self.transactional_id.clone(),
            pattern_type: self.resource_pattern_type.clone(),
        }
    }
}

/// The flags of `acl add` and `acl remove`.
#[derive(Args, Clone)]
pub struct AclBindingCli {
    #[command(flatten)]
    resource: AclResourceCli,
    /// Principal allowed, e.g. User:alice (repeatable).
    #[arg(long)]
    allow_principal: Vec<String>,
    /// Principal denied (repeatable).
    #[arg(long)]
    deny_principal: Vec<String>,
    /// Read, Write, Create, Delete, Alter, Describe, DescribeConfigs, AlterConfigs,
    /// IdempotentWrite, ClusterAction, All (repeatable).
    #[arg(long = "operation", required = true)]
    operations: Vec<String>,
    /// Host the ACL applies to.
    #[arg(long, default_value = "*")]
    host: String,
}

impl AclBindingCli {
    fn binding(&self) -> anyhow::Result<acls::Binding> {
        Ok(acls::Binding {
            resource: self.resource.resource(),
            allow: self.allow_principal.clone(),
            deny: self.deny_principal.clone(),
            operations: self
                .operations
                .iter()
                .map(|o| acls::parse_operation(o))
                .collect::<anyhow::Result<_>>()?,
            host: self.host.clone(),
        })
    }
}

/// `frieda admin acl ...`.
#[derive(Subcommand)]
pub enum AclCommand {
    /// ACLs on a resource (every resource when none is named).
    List {
        #[command(flatten)]
        resource: AclResourceCli,
        /// Only this principal's ACLs.
        #[arg(long)]
        principal: Option<String>,
    },
    /// Add ACLs.
    Add(AclBindingCli),
    /// Remove ACLs.
    Remove(AclBindingCli),
}

/// `frieda admin produce TOPIC`.
#[derive(Args)]
pub struct ProduceCli {
    /// The topic.
    topic: String,
    /// Every record to this partition (default: by key hash as Kafka's producer, keyless lines
    /// spread over the partitions).
    #[arg(long)]
    partition: Option<i32>,
    /// Each line is KEY<separator>VALUE.
    #[arg(long)]
    key_separator: Option<String>,
    /// all or 1.
    #[arg(long, default_value = "all")]
    acks: String,
}

/// `frieda admin consume TOPIC`.
#[derive(Args)]
pub struct ConsumeCli {
    /// The topic.
    topic: String,
    /// Only this partition.
    #[arg(long)]
    partition: Option<i32>,
    /// From the first record kept (default: only new records).
    #[arg(long, conflicts_with = "offset")]
    from_beginning: bool,
    /// From this offset (needs --partition).
    #[arg(long, requires = "partition")]
    offset: Option<i64>,
    /// Stop after this many records.
    #[arg(long)]
    max_messages: Option<usize>,
    /// Stop when no record came for this many milliseconds.
    #[arg(long)]
    timeout_ms: Option<u64>,
    /// Print the key before the value.
    #[arg(long)]
    print_key: bool,
    /// Print PARTITION:OFFSET first.
    #[arg(long)]
    print_offset: bool,
    /// Between key, offset and value.
    #[arg(long, default_value = "\t")]
    separator: String,
    /// read_uncommitted (default) or read_committed.
    #[arg(long, default_value = "read_uncommitted")]
    isolation_level: String,
}

/// Runs one admin command to completion on its own runtime.
///
/// Errors: bad settings, an unreachable cluster, or the command's own (Kafka error names).
pub fn run(args: AdminArgs) -> anyhow::Result<()> {
    let settings = client::Settings::load(&args.bootstrap_server, args.command_config.as_deref())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let mut admin = client::Admin::connect(settings).await?;
        dispatch(&mut admin, args.command).await
    })
}

async fn dispatch(admin: &mut client::Admin, command: AdminCommand) -> anyhow::Result<()> {
    match command {
        AdminCommand::Cluster(ClusterCommand::Status { verbose }) => {
            cluster::status(admin, verbose).await
        }
        AdminCommand::Topic(t) => match t {
            TopicCommand::List { internal } => topics::list(admin, internal).await,
            TopicCommand::Create {
                topic,
                partitions,
                replication_factor,
                configs,
            } => {
                let configs = configs
                    .iter()
                    .map(|c| topics::key_value(c))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                topics::create(admin, &topic, partitions, replication_factor, &configs).await
            }
            TopicCommand::Describe { topics: names } => topics::describe(admin, &names).await,
            TopicCommand::AlterConfig { topic, change } => {
                let (set, delete) = change.parts()?;
                topics::alter_config(admin, &topic, &set, &delete).await
            }
            TopicCommand::Delete { topics: names } => topics::delete(admin, &names).await,
            TopicCommand::DeleteRecords { partitions: specs } => {
                let mut targets = Vec::new();
                for spec in &specs {
                    let (tp, offset) = partitions::parse_partition_value(spec)?;
                    let offset: i64 = offset
                        .parse()
                        .map_err(|_| anyhow::anyhow!("`{spec}`: the offset must be a number"))?;
                    targets.push((tp, offset));
                }
                partitions::delete_records(admin, &targets).await
            }
        },
        AdminCommand::Partition(p) => match p {
            PartitionCommand::Reassign { moves, cancel } => {
                anyhow::ensure!(
                    !moves.is_empty() || !cancel.is_empty(),
                    "name the moves (TOPIC:PARTITION=BROKER,BROKER,...) or --cancel TOPIC:PARTITION"
                );
                let mut all = Vec::new();
                for spec in &moves {
                    let (tp, replicas) = partitions::parse_partition_value(spec)?;
                    all.push((tp, Some(replicas::parse_replicas(&replicas)?)));
                }
                for spec in &cancel {
                    all.push((partitions::parse_partition(spec)?, None));
                }
                replicas::reassign(admin, &all).await
            }
            PartitionCommand::Reassignments { topics: names } => {
                replicas::reassignments(admin, &names).await
            }
            PartitionCommand::Elect {
                unclean,
                partitions: specs,
            } => {
                let chosen = specs
                    .iter()
                    .map(|s| partitions::parse_partition(s))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                replicas::elect(admin, unclean, &chosen).await
            }
        },
        AdminCommand::Broker(b) => {
            let resource = |broker: Option<i32>, default: bool| match (broker, default) {
                (Some(id), false) => Ok(configs::Resource::Broker(id)),
                (None, true) => Ok(configs::Resource::BrokerDefault),
                _ => Err(anyhow::anyhow!("name a broker id or --default")),
            };
            match b {
                BrokerCommand::DescribeConfig {
                    broker,
                    default,
                    all,
                } => configs::describe(admin, &resource(broker, default)?, all).await,
                BrokerCommand::AlterConfig {
                    broker,
                    default,
                    change,
                } => {
                    let (set, delete) = change.parts()?;
                    configs::alter(admin, &resource(broker, default)?, &set, &delete).await
                }
            }
        }
        AdminCommand::Quota(q) => match q {
            QuotaCommand::List { entity } => quotas::list(admin, &entity.components()).await,
            QuotaCommand::Alter { entity, change } => {
                let (set, delete) = change.parts()?;
                quotas::alter(admin, &entity.components(), &set, &delete).await
            }
        },
        AdminCommand::Group(g) => match g {
            GroupCommand::List => groups::list(admin).await,
            GroupCommand::Describe { group } => groups::describe(admin, &group).await,
            GroupCommand::Delete { groups: names } => groups::delete(admin, &names).await,
            GroupCommand::DescribeConfig { group, all } => {
                configs::describe(admin, &configs::Resource::Group(group), all).await
            }
            GroupCommand::AlterConfig { group, change } => {
                let (set, delete) = change.parts()?;
                configs::alter(admin, &configs::Resource::Group(group), &set, &delete).await
            }
            GroupCommand::ResetOffsets {
                group,
                topics,
                to_earliest,
                to_latest,
                to_offset,
                shift_by,
                execute,
            } => {
                let to = match (to_earliest, to_latest, to_offset, shift_by) {
                    (true, _, _, _) => groups::ResetTo::Earliest,
                    (_, true, _, _) => groups::ResetTo::Latest,
                    (_, _, Some(o), _) => groups::ResetTo::Offset(o),
                    (_, _, _, Some(n)) => groups::ResetTo::ShiftBy(n),
                    _ => anyhow::bail!(
                        "say where to: --to-earliest, --to-latest, --to-offset N or --shift-by N"
                    ),
                };
                groups::reset_offsets(admin, &group, &topics, to, execute).await
            }
        },
        AdminCommand::Acl(a) => match a {
            AclCommand::List {
                resource,
                principal,
            } => acls::list(admin, &resource.resource(), principal.as_deref()).await,
            AclCommand::Add(b) => acls::add(admin, &b.binding()?).await,
            AclCommand::Remove(b) => acls::remove(admin, &b.binding()?).await,
        },
        AdminCommand::Produce(p) => {
            let acks = match p.acks.as_str() {
                "all" | "-1" => -1,
                "1" => 1,
                other => anyhow::bail!("--acks {other}: all or 1"),
            };
            let args = console::ProduceArgs {
                topic: p.topic,
                partition: p.partition,
                key_separator: p.key_separator,
                acks,
            };
            console::produce(admin, &args).await
        }
        AdminCommand::Consume(c) => {
            let read_committed = match c.isolation_level.as_str() {
                "read_committed" => true,
                "read_uncommitted" => false,
                other => {
                    anyhow::bail!("--isolation-level {other}: read_committed or read_uncommitted")
                }
            };
            let start = match (c.from_beginning, c.offset) {
                (_, Some(o)) => console::StartAt::Offset(o),
                (true, None) => console::StartAt::Earliest,
                (false, None) => console::StartAt::Latest,
            };
            let args = console::ConsumeArgs {
                topic: c.topic,
                partition: c.partition,
                start,
                max_messages: c.max_messages,
                idle_timeout: c.timeout_ms.map(Duration::from_millis),
                print_key: c.print_key,
                print_offset: c.print_offset,
                separator: c.separator,
                read_committed,
            };
            console::consume(admin, &args).await
        }
    }
}
