//! Where the nodes live on the network: each in its own network namespace, joined
//! pairwise by veth links, or (where namespaces cannot be made) all on loopback.
//!
//! With namespaces, node `i` owns the address `10.B.0.(i+1)` on its loopback device
//! and reaches node `j` only through the veth link `p<j>` in its namespace (a /32
//! route). The nemesis, in the root namespace, reaches every node through a client link
//! of its own, which is never cut: clients always reach every node, as they would
//! through a load balancer, and only replica-to-replica traffic is partitioned. A cut
//! from `i` to `j` replaces that route with a `blackhole` in `i`'s namespace (what `i`
//! sends to `j` is dropped, including its TCP acknowledgements); healing puts the route
//! back. Everything is done by the `ip` tool, and dropping the [`Network`] deletes every
//! namespace and link it made (a veth pair dies with either end's namespace).
//!
//! `B`, the second octet, comes from the nemesis's pid (64 to 191), so two nemesis
//! processes on one machine use different address blocks (their routes in the root
//! namespace would collide otherwise).
//!
//! Does not model: delay, loss or reordering on a link (no `tc netem` on these
//! kernels), or a client cut off from a node.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Command, Stdio};

/// The replica port inside a namespace (each node has an address of its own).
pub const REPLICA_PORT: u16 = 7000;
/// The client port inside a namespace.
pub const CLIENT_PORT: u16 = 7100;
/// The second octet of this process's address block, from its pid.
fn block() -> u8 {
    64 + (std::process::id() % 128) as u8
}

/// The source address of the nemesis's own traffic to the nodes.
fn nemesis_address() -> Ipv4Addr {
    Ipv4Addr::new(10, block(), 1, 1)
}

/// A node's address in namespace mode.
fn node_ip(node: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, block(), 0, u8::try_from(node + 1).unwrap_or(u8::MAX))
}

/// Run `ip` with `args`; the error names the command and what it printed.
fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|error| format!("ip {}: {error}", args.join(" ")))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// The nodes' network.
pub struct Network {
    /// Namespace names (empty on loopback).
    namespaces: Vec<String>,
    /// (replica address, client address) per node.
    roster: Vec<(SocketAddr, SocketAddr)>,
    /// Directed links currently cut (from, to).
    cut: BTreeSet<(usize, usize)>,
}

impl Network {
    /// All on 127.0.0.1 with free ports: process faults only.
    pub fn loopback(nodes: usize) -> Network {
        let listeners: Vec<std::net::TcpListener> = (0..nodes * 2)
            .filter_map(|_| std::net::TcpListener::bind("127.0.0.1:0").ok())
            .collect();
        let addresses: Vec<SocketAddr> = listeners.iter().filter_map(|l| l.local_addr().ok()).collect();
        let roster = addresses.chunks(2).map(|pair| (pair[0], pair[1])).collect();
        Network {
            namespaces: Vec::new(),
            roster,
            cut: BTreeSet::new(),
        }
    }

    /// One namespace per node, named `<prefix>-<i>`, joined by a full mesh of veth
    /// links, plus a client link from the root namespace to each. Anything left from
    /// an earlier run of the same prefix is removed first.
    pub fn namespaces(prefix: &str, nodes: usize) -> Result<Network, String> {
        let names: Vec<String> = (0..nodes).map(|i| format!("{prefix}-{i}")).collect();
        for name in &names {
            let _ = ip(&["netns", "del", name]);
        }
        let mut network = Network {
            namespaces: Vec::new(),
            roster: Vec::new(),
            cut: BTreeSet::new(),
        };
        for (i, name) in names.iter().enumerate() {
            ip(&["netns", "add", name])?;
            network.namespaces.push(name.clone());
            ip(&["-n", name, "link", "set", "lo", "up"])?;
            ip(&["-n", name, "addr", "add", &format!("{}/32", node_ip(i)), "dev", "lo"])?;
        }
        for i in 0..nodes {
            for j in i + 1..nodes {
                let (a, b) = (format!("p{j}"), format!("p{i}"));
                ip(&[
                    "link", "add", &a, "netns", &names[i], "type", "veth", "peer", "name", &b, "netns", &names[j],
                ])?;
                for (node, link) in [(i, &a), (j, &b)] {
                    ip(&["-n", &names[node], "link", "set", link, "up"])?;
                }
                network.route(i, j)?;
                network.route(j, i)?;
            }
        }
        // The client links: `c` inside the namespace, `<prefix-tail>c<i>` outside.
        let tag = prefix.rsplit('-').next().unwrap_or(prefix);
        for (i, name) in names.iter().enumerate() {
            let outside = format!("nm{tag}c{i}");
            let outside: String = outside.chars().take(15).collect();
            ip(&[
                "link", "add", &outside, "type", "veth", "peer", "name", "c", "netns", name,
            ])?;
            ip(&["link", "set", &outside, "up"])?;
            ip(&["-n", name, "link", "set", "c", "up"])?;
            ip(&["addr", "add", &format!("{}/32", nemesis_address()), "dev", &outside])?;
            ip(&[
                "route",
                "add",
                &format!("{}/32", node_ip(i)),
                "dev",
                &outside,
                "src",
                &nemesis_address().to_string(),
            ])?;
            ip(&[
                "-n",
                name,
                "route",
                "add",
                &format!("{}/32", nemesis_address()),
                "dev",
                "c",
            ])?;
        }
        network.roster = (0..nodes)
            .map(|i| {
                let address = IpAddr::V4(node_ip(i));
                (
                    SocketAddr::new(address, REPLICA_PORT),
                    SocketAddr::new(address, CLIENT_PORT),
                )
            })
            .collect();
        Ok(network)
    }

    /// Whether the nodes have namespaces (network faults possible).
    pub fn has_namespaces(&self) -> bool {
        !self.namespaces.is_empty()
    }

    /// (replica address, client address) per node.
    pub fn roster(&self) -> &[(SocketAddr, SocketAddr)] {
        &self.roster
    }

    /// The `--roster` flag's value.
    pub fn roster_flag(&self) -> String {
        cluster::server::roster_flag(&self.roster)
    }

    /// The command prefix that runs a program inside node `node`'s namespace (empty on
    /// loopback). `ip netns exec` execs the program: its pid is the node's.
    pub fn exec_prefix(&self, node: usize) -> Vec<String> {
        match self.namespaces.get(node) {
            Some(name) => vec!["ip".into(), "netns".into(), "exec".into(), name.clone()],
            None => Vec::new(),
        }
    }

    fn route(&self, from: usize, to: usize) -> Result<(), String> {
        ip(&[
            "-n",
            &self.namespaces[from],
            "route",
            "replace",
            &format!("{}/32", node_ip(to)),
            "dev",
            &format!("p{to}"),
            "src",
            &node_ip(from).to_string(),
        ])
    }

    /// Drop everything `from` sends to `to`.
    pub fn cut(&mut self, from: usize, to: usize) -> Result<(), String> {
        assert!(self.has_namespaces(), "a cut needs namespaces");
        assert_ne!(from, to, "a node is never cut from itself");
        ip(&[
            "-n",
            &self.namespaces[from],
            "route",
            "replace",
            "blackhole",
            &format!("{}/32", node_ip(to)),
        ])?;
        self.cut.insert((from, to));
        Ok(())
    }

    /// Restore every cut link.
    pub fn heal_all(&mut self) -> Result<(), String> {
        let cut: Vec<(usize, usize)> = self.cut.iter().copied().collect();
        for (from, to) in cut {
            self.route(from, to)?;
            self.cut.remove(&(from, to));
        }
        Ok(())
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        for name in &self.namespaces {
            if let Err(error) = ip(&["netns", "del", name]) {
                eprintln!("nemesis: could not delete namespace {name}: {error}");
            }
        }
    }
}
