//! The production node's configuration: a JSON file or flags, checked before anything
//! is opened, with errors that name the field and what is wrong with it.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use crate::node::{SHARDS_MAX, TestBreak};
use crate::vsr::constants::REPLICAS_MAX;

/// One node of the static roster.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RosterEntry {
    /// Where the other replicas reach it.
    pub replica_address: SocketAddr,
    /// Where clients reach it.
    pub client_address: SocketAddr,
}

/// Everything a node needs to start. `node.json` holds exactly these fields.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The cluster's name: every node of a cluster must use the same one. A data
    /// directory written under another name is refused.
    pub cluster: String,
    /// This node's index in `roster` (0 without a roster).
    #[serde(default)]
    pub replica: u8,
    /// Where this node keeps its data.
    pub data_dir: PathBuf,
    /// Shards (cores) the node splits its groups over, 1 to 8.
    #[serde(default = "default_shards")]
    pub shards: u8,
    /// The cluster's nodes in replica order. Empty: this node is a group of one.
    #[serde(default)]
    pub roster: Vec<RosterEntry>,
    /// Without a roster: where clients reach this node. With one, the roster's entry
    /// for this replica decides and this must be absent or equal to it.
    #[serde(default)]
    pub client_address: Option<SocketAddr>,
    /// The root user's password at genesis. Every node of a cluster must use the same
    /// one: it is part of the first replicated state.
    #[serde(default = "default_root_password")]
    pub root_password: String,
    /// A file holding the cluster's shared secret (a line of at least 16 bytes), with
    /// which replicas prove themselves to each other (see `runtime::handshake`). The
    /// same secret on every node. Absent: the `CLUSTER_SECRET` environment variable
    /// gives it, and without either the node refuses to start unless `insecure_dev`.
    #[serde(default)]
    pub secret_file: Option<PathBuf>,
    /// Development only: run without a secret. Replica connections still handshake,
    /// with a key anyone can derive from the cluster's name, so they prove nothing; the
    /// node logs a warning at start. Never on a network anyone else can reach.
    #[serde(default)]
    pub insecure_dev: bool,
    /// **Test-only: never set in production.** A deliberately broken behaviour (see
    /// [`TestBreak`]), so a fault harness on real nodes can show it catches the bug it
    /// plants. Absent (the default): the node is the production node, unchanged.
    #[serde(default)]
    pub test_break: Option<TestBreak>,
}

fn default_shards() -> u8 {
    1
}

fn default_root_password() -> String {
    crate::metadata::DEFAULT_ROOT_PASSWORD.to_owned()
}

/// The client address a node uses when nothing says otherwise.
pub const DEFAULT_CLIENT_ADDRESS: &str = "127.0.0.1:7100";

/// Why a configuration was refused.
#[derive(Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The field (or file) at fault.
    pub field: String,
    /// What is wrong, and what would be right.
    pub problem: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.problem)
    }
}

impl std::error::Error for ConfigError {}

fn refuse(field: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.into(),
        problem: problem.into(),
    }
}

impl ServerConfig {
    /// Parse a `node.json` text (`path` names it in errors).
    pub fn from_json(path: &str, text: &str) -> Result<Self, ConfigError> {
        serde_json::from_str(text).map_err(|error| refuse(path, format!("not a valid node config: {error}")))
    }

    /// Replicas in the cluster: the roster's length, or 1 without one.
    pub fn replicas(&self) -> u8 {
        // Checked by `validate` to be at most REPLICAS_MAX.
        u8::try_from(self.roster.len().max(1)).unwrap_or(u8::MAX)
    }

    /// Where clients reach this node.
    pub fn own_client_address(&self) -> Option<SocketAddr> {
        match self.roster.get(usize::from(self.replica)) {
            Some(entry) => Some(entry.client_address),
            None => self.client_address,
        }
    }

    /// Check every field; the first problem found.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.cluster.is_empty() || self.cluster.len() > 255 {
            return Err(refuse("cluster", "a cluster name of 1 to 255 bytes is required"));
        }
        if !(1..=SHARDS_MAX).contains(&self.shards) {
            return Err(refuse("shards", format!("{} is not 1 to {SHARDS_MAX}", self.shards)));
        }
        if self.root_password.is_empty() {
            return Err(refuse("root_password", "must not be empty"));
        }
        if self.data_dir.as_os_str().is_empty() {
            return Err(refuse("data_dir", "a data directory is required"));
        }
        if self.roster.is_empty() {
            if self.replica != 0 {
                return Err(refuse(
                    "replica",
                    format!(
                        "{} without a roster: a node without one is replica 0 of 1",
                        self.replica
                    ),
                ));
            }
            return Ok(());
        }
        if self.roster.len() > REPLICAS_MAX {
            return Err(refuse(
                "roster",
                format!("{} nodes; a cluster has at most {REPLICAS_MAX}", self.roster.len()),
            ));
        }
        if usize::from(self.replica) >= self.roster.len() {
            return Err(refuse(
                "replica",
                format!(
                    "{} is not an index into the roster of {} nodes (0 to {})",
                    self.replica,
                    self.roster.len(),
                    self.roster.len() - 1
                ),
            ));
        }
        let mut seen: Vec<(SocketAddr, String)> = Vec::new();
        for (index, entry) in self.roster.iter().enumerate() {
            for (address, what) in [
                (entry.replica_address, format!("roster[{index}].replica_address")),
                (entry.client_address, format!("roster[{index}].client_address")),
            ] {
                if address.port() == 0 {
                    return Err(refuse(what, "port 0: every roster address needs a fixed port"));
                }
                if let Some((_, earlier)) = seen.iter().find(|(other, _)| *other == address) {
                    return Err(refuse(what, format!("{address} is also {earlier}")));
                }
                seen.push((address, what));
            }
        }
        if let Some(address) = self.client_address {
            let own = self.roster[usize::from(self.replica)].client_address;
            if address != own {
                return Err(refuse(
                    "client_address",
                    format!("{address}, but the roster gives this replica {own}; drop one of the two"),
                ));
            }
        }
        Ok(())
    }
}

/// A roster as the `--roster` flag takes it, `REPLICA_ADDR=CLIENT_ADDR,...` (the
/// inverse of [`parse_roster`]), from each node's (replica address, client address).
pub fn roster_flag(roster: &[(SocketAddr, SocketAddr)]) -> String {
    roster
        .iter()
        .map(|(replica, client)| format!("{replica}={client}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Parse a roster written as `REPLICA_ADDR=CLIENT_ADDR,...` (the `--roster` flag).
pub fn parse_roster(text: &str) -> Result<Vec<RosterEntry>, ConfigError> {
    text.split(',')
        .enumerate()
        .map(|(index, entry)| {
            let (replica, client) = entry.trim().split_once('=').ok_or_else(|| {
                refuse(
                    format!("--roster entry {index}"),
                    format!("{entry:?} is not REPLICA_ADDR=CLIENT_ADDR (e.g. 127.0.0.1:7000=127.0.0.1:7100)"),
                )
            })?;
            let parse = |text: &str, what: &str| {
                text.trim().parse::<SocketAddr>().map_err(|error| {
                    refuse(
                        format!("--roster entry {index} {what} address"),
                        format!("{text:?}: {error} (want IP:PORT)"),
                    )
                })
            };
            Ok(RosterEntry {
                replica_address: parse(replica, "replica")?,
                client_address: parse(client, "client")?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three() -> ServerConfig {
        ServerConfig {
            cluster: "demo".to_owned(),
            replica: 1,
            data_dir: PathBuf::from("/tmp/x"),
            shards: 2,
            roster: parse_roster(
                "127.0.0.1:7000=127.0.0.1:7100,127.0.0.1:7001=127.0.0.1:7101,127.0.0.1:7002=127.0.0.1:7102",
            )
            .expect("roster"),
            client_address: None,
            root_password: "secret".to_owned(),
            secret_file: None,
            insecure_dev: true,
            test_break: None,
        }
    }

    #[test]
    fn a_good_config_passes_and_names_its_addresses() {
        let config = three();
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.replicas(), 3);
        assert_eq!(config.own_client_address(), "127.0.0.1:7101".parse().ok());
    }

    #[test]
    fn bad_rosters_and_fields_are_refused_naming_the_field() {
        let field_of = |config: ServerConfig| config.validate().map_err(|error| error.field);
        assert_eq!(
            field_of(ServerConfig { replica: 3, ..three() }),
            Err("replica".to_owned())
        );
        assert_eq!(
            field_of(ServerConfig { shards: 9, ..three() }),
            Err("shards".to_owned())
        );
        let mut duplicate = three();
        duplicate.roster[2].client_address = duplicate.roster[0].replica_address;
        assert_eq!(field_of(duplicate), Err("roster[2].client_address".to_owned()));
        let mut single = three();
        single.roster.clear();
        assert_eq!(field_of(single), Err("replica".to_owned()));
        assert!(parse_roster("127.0.0.1:7000").is_err_and(|error| error.problem.contains("REPLICA_ADDR=CLIENT_ADDR")));
        assert!(parse_roster("127.0.0.1:7000=nowhere").is_err_and(|error| error.field.contains("client")));
        assert!(
            ServerConfig::from_json("node.json", r#"{"cluster":"a","data_dir":"/d","colour":1}"#)
                .is_err_and(|error| error.problem.contains("colour"))
        );
        let parsed = ServerConfig::from_json("node.json", r#"{"cluster":"a","data_dir":"/d"}"#).expect("minimal");
        assert_eq!(
            (parsed.shards, parsed.replicas(), parsed.own_client_address()),
            (1, 1, None)
        );
    }

    #[test]
    fn a_roster_flag_parses_back_to_the_roster_it_was_made_from() {
        let roster = three().roster;
        let pairs: Vec<_> = roster
            .iter()
            .map(|entry| (entry.replica_address, entry.client_address))
            .collect();
        assert_eq!(parse_roster(&roster_flag(&pairs)).expect("its own flag parses"), roster);
    }

    #[test]
    fn a_test_break_is_off_unless_named_and_an_unknown_one_is_refused() {
        use clap::ValueEnum;
        let parse = |text: &str| ServerConfig::from_json("node.json", text);
        let plain = parse(r#"{"cluster":"a","data_dir":"/d"}"#).expect("minimal");
        assert_eq!(plain.test_break, None, "production: no break unless one is named");
        let broken = parse(r#"{"cluster":"a","data_dir":"/d","test_break":"wal-drop-last-record"}"#).expect("named");
        assert_eq!(broken.test_break, Some(TestBreak::WalDropLastRecord));
        assert!(
            parse(r#"{"cluster":"a","data_dir":"/d","test_break":"drop-everything"}"#)
                .is_err_and(|error| error.problem.contains("drop-everything"))
        );
        for test_break in TestBreak::value_variants() {
            let flag = test_break.to_possible_value().map(|value| value.get_name().to_owned());
            assert_eq!(
                flag.as_deref(),
                Some(test_break.name()),
                "the flag and the config agree"
            );
        }
    }
}
