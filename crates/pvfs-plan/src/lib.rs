//! From a validated cluster to a plan: what every node must become, and in which order.
//!
//! A [`Plan`] is a DAG of [`Unit`]s. A unit is an ordered list of typed steps on one node (a
//! server's brick, the trusted pool, a client's mount); its `after` edges name the units, on
//! this or other nodes, that must have finished first (MGS/MDT mounted → OSTs → clients;
//! bricks → pool → volume → clients; mgmtd → meta + storage → clients). Readiness between nodes
//! is not assumed from ordering alone: units that depend on another node's daemon start with a
//! gate (`lctl ping`, "Peer in Cluster") that waits for it with a deadline.
//!
//! Everything here is pure: the same cluster file gives the same plan, so plans are tested as
//! snapshots against the seed's documented command sequences.

mod beegfs;
mod down;
mod firewall;
mod gluster;
mod local;
mod lustre;
mod mpi;
mod selinux;
mod storage;

pub use down::down;
pub use firewall::{GLUSTER_BASE_PORT, gate_nodes, ports_of};
pub use mpi::{MpiKeys, add_mpi_ssh};
pub use selinux::selinux_warning;

use pvfs_config::{Cluster, Kind, Node, Role};
use pvfs_steps::{Package, PackageManager, Packages, Repo, Step};
use std::fmt;
use std::time::Duration;

/// Readiness waits between nodes: long enough for a daemon to start and a handshake to
/// finish on a loaded cluster, short enough that a dead peer is reported within minutes.
pub const READY_DEADLINE: Duration = Duration::from_secs(120);

/// Validations after a change (bricks coming online, servers answering).
pub const CHECK_DEADLINE: Duration = Duration::from_secs(60);

/// Steps on one node, run in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    pub id: usize,
    pub node: String,
    /// What the unit achieves: `brick`, `pool`, `volume`, `mount`, `mdt`, `ost`, …
    pub label: String,
    pub steps: Vec<Step>,
    /// Units that must have succeeded first.
    pub after: Vec<usize>,
}

/// Every unit of a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    pub units: Vec<Unit>,
}

impl Plan {
    /// Adds a unit; returns its id.
    pub(crate) fn add(&mut self, node: &Node, label: &str, steps: Vec<Step>, after: Vec<usize>) -> usize {
        let id = self.units.len();
        // A node's units also run one after the other: the agent converges one unit at a time.
        let mut after = after;
        if let Some(prev) = self.units.iter().rev().find(|u| u.node == node.name)
            && !after.contains(&prev.id)
        {
            after.push(prev.id);
        }
        after.sort_unstable();
        self.units.push(Unit { id, node: node.name.clone(), label: label.to_owned(), steps, after });
        id
    }

    /// Units on `node`, in order.
    pub fn units_of<'a>(&'a self, node: &'a str) -> impl Iterator<Item = &'a Unit> + 'a {
        self.units.iter().filter(move |u| u.node == node)
    }

    /// Units that (transitively) depend on `id`.
    pub fn dependents(&self, id: usize) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        let mut frontier = vec![id];
        while let Some(cur) = frontier.pop() {
            for u in &self.units {
                if u.after.contains(&cur) && !out.contains(&u.id) {
                    out.push(u.id);
                    frontier.push(u.id);
                }
            }
        }
        out.sort_unstable();
        out
    }
}

impl fmt::Display for Plan {
    /// One block per unit: `#2 server1 pool (after #0 #1)` and its steps.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for u in &self.units {
            let after: Vec<String> = u.after.iter().map(|a| format!("#{a}")).collect();
            if after.is_empty() {
                writeln!(f, "#{} {} {}", u.id, u.node, u.label)?;
            } else {
                writeln!(f, "#{} {} {} (after {})", u.id, u.node, u.label, after.join(" "))?;
            }
            for step in &u.steps {
                writeln!(f, "    {step}")?;
            }
        }
        Ok(())
    }
}

/// The plan for `cluster`.
pub fn plan(cluster: &Cluster) -> Plan {
    let mut plan = Plan::default();
    match cluster.kind {
        Kind::Local => local::plan(cluster, &mut plan),
        Kind::Glusterfs => gluster::plan(cluster, &mut plan),
        Kind::Lustre => lustre::plan(cluster, &mut plan),
        Kind::Beegfs => beegfs::plan(cluster, &mut plan),
    }
    firewall::add(cluster, &mut plan);
    plan
}

/// Every name the cluster's nodes go by in its plans: each node's address, its name, and its
/// LNet address when it has one. The coordinator sends them with every unit
/// (`ApplyRequest.cluster_hosts`), and the agent refuses a step that names any other host as
/// a server, a peer or a brick (`pvfs_policy::Policy::for_cluster`).
pub fn cluster_hosts(cluster: &Cluster) -> Vec<String> {
    let mut hosts: Vec<String> = cluster
        .nodes
        .iter()
        .flat_map(|n| [Some(host_of(n)), Some(n.name.clone()), n.lnet_address.map(|a| a.to_string())])
        .flatten()
        .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}

/// The host part of a node's agent address: how other nodes reach its services too (the
/// agent runs on the node).
pub(crate) fn host_of(node: &Node) -> String {
    node.address.tls_name()
}

/// The packages step for `role` on `node`: the cluster file's list for the role, or the
/// kind's defaults (`apt`, `rpm`), plus `extra` tools the node's layout needs (mdadm, lvm2).
pub(crate) fn packages(
    cluster: &Cluster,
    node: &Node,
    role: Role,
    apt: &[&str],
    rpm: &[&str],
    extra: &[&str],
) -> Step {
    let manager = match cluster.packages.manager.as_str() {
        "apt" => PackageManager::Apt,
        "dnf" => PackageManager::Dnf,
        "yum" => PackageManager::Yum,
        _ => PackageManager::Auto,
    };
    let to_packages = |names: &[&str]| -> Vec<Package> {
        names.iter().chain(extra).map(|n| Package { name: (*n).to_owned(), version: None }).collect()
    };
    let (apt, rpm) = match cluster.packages.for_role(role) {
        Some(list) => {
            let given: Vec<Package> = list
                .iter()
                .map(|(name, version)| Package { name: name.clone(), version: version.clone() })
                .chain(extra.iter().map(|n| Package { name: (*n).to_owned(), version: None }))
                .collect();
            (given.clone(), given)
        }
        None => (to_packages(apt), to_packages(rpm)),
    };
    let repos = cluster
        .repos
        .iter()
        .filter(|r| r.roles.is_empty() || r.roles.iter().any(|role| node.has(*role)))
        .map(|r| Repo {
            name: r.name.clone(),
            baseurl: r.baseurl.clone(),
            gpgkey: r.gpgkey.clone(),
            gpgcheck: r.gpgcheck,
            allow_http: r.allow_http,
            suites: r.suites.clone(),
            components: r.components.clone(),
            key: r.key.clone(),
        })
        .collect();
    Step::Packages(Packages { manager, apt: dedup(apt), rpm: dedup(rpm), repos })
}

fn dedup(list: Vec<Package>) -> Vec<Package> {
    let mut out: Vec<Package> = Vec::new();
    for p in list {
        if !out.iter().any(|q| q.name == p.name) {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod programs;
#[cfg(test)]
mod scenario;
#[cfg(test)]
mod tests;

/// The agent policy the cluster file gives `node` (`[policy]`, its roles' tables on top), as
/// the agent would build it from the file bootstrap writes; `None` when the file gives none.
/// A value the agent's rules refuse is an error naming the key and entry.
pub fn agent_policy(cluster: &Cluster, node: &Node) -> Option<Result<pvfs_policy::Policy, Vec<String>>> {
    let p = cluster.policy_for(node)?;
    let site = pvfs_policy::Site {
        kinds: p.kinds,
        devices: p.devices,
        data_roots: p.data_roots,
        repositories: p.repositories,
        services: p.services,
        refuse_unsigned: p.refuse_unsigned_repositories,
        mpi_ssh: p.mpi_ssh,
        faults: p.faults,
    };
    Some(
        pvfs_policy::Policy::new(site)
            .map_err(|errors| errors.iter().map(|e| format!("node {}: [policy] {e}", node.name)).collect()),
    )
}

/// What the cluster file's policies refuse of `plan`, a line per refused unit: `up --plan`
/// says it before anything runs, and the policy's values the agent would not take. Units of
/// nodes the file gives no policy are not judged here (their agents judge them).
pub fn policy_refusals(cluster: &Cluster, plan: &Plan) -> Vec<String> {
    let mut said = Vec::new();
    let mut broken = std::collections::BTreeSet::new();
    for unit in &plan.units {
        let Some(node) = cluster.node(&unit.node) else { continue };
        match agent_policy(cluster, node) {
            None => {}
            Some(Err(errors)) if broken.insert(node.name.clone()) => said.extend(errors),
            Some(Err(_)) => {}
            Some(Ok(policy)) => {
                if let Err(refused) = policy.check_unit(&unit.steps) {
                    said.push(format!(
                        "node {}: its [policy] refuses unit `{}` at step {} ({}): {}",
                        node.name,
                        unit.label,
                        refused.index + 1,
                        refused.step,
                        refused.error
                    ));
                }
            }
        }
    }
    said
}
