//! The ports each node's roles need opened, as one `firewall` step at the head of the node's
//! first unit (before any gate waits on another node), unless the cluster file says
//! `[cluster] firewall = "leave"`. The agent opens them only where firewalld runs.
//!
//! Which ports, per file system (the policy's `FIREWALL_PORTS` holds the widest of each):
//! - **Lustre**, every node, servers and clients: 988/tcp, LNet's acceptor (lnet's
//!   `accept_port`, lnet/lnet/acceptor.c). Every node running LNet listens there, and servers
//!   connect to clients as well as clients to servers (a server sends lock callbacks; either
//!   side reconnects a dropped connection), so clients need it open too.
//! - **BeeGFS 7**, the default ports of each service, tcp and udp (the services'
//!   `conn*PortTCP`/`conn*PortUDP` defaults): management 8008, metadata 8005, storage 8003;
//!   clients 8004/udp only (the client module's `connClientPortUDP`, where servers send it
//!   datagrams; its helperd, 8006/tcp, is reached from the node itself on 127.0.0.1,
//!   `logHelperdIP`, and loopback is never filtered by firewalld).
//! - **GlusterFS** servers: glusterd's 24007–24008/tcp (glusterfs's own firewalld service,
//!   extras/firewalld/glusterfs.xml) and one port per brick on the node from glusterd's
//!   `base-port` 49152 up (extras/glusterd.vol.in; glusterd gives each brick process the next
//!   free port from there — the same service file opens 49152-49664, "512 ports for bricks",
//!   and gluster/glusterdocs#402 gives "49152 - (49152 + number of bricks across all
//!   volumes)"). Clients take no connections: the FUSE client only connects out.
//! - **local**: nothing.

use crate::Plan;
use pvfs_config::{Cluster, Firewall, Kind, Node, Role};
use pvfs_steps::{FirewallPorts, GateKind, PortRange, Protocol, Step};

/// glusterd's first brick port (`base-port`, extras/glusterd.vol.in).
pub const GLUSTER_BASE_PORT: u16 = 49152;

/// What `node` listens on for `cluster`'s file system, in order, without repeats.
pub fn ports_of(cluster: &Cluster, node: &Node) -> Vec<PortRange> {
    use Protocol::{Tcp, Udp};
    let both = |port| [PortRange::one(port, Tcp), PortRange::one(port, Udp)];
    let mut ports: Vec<PortRange> = Vec::new();
    match cluster.kind {
        Kind::Lustre => ports.push(PortRange::one(988, Tcp)),
        Kind::Beegfs => {
            for (role, port) in [(Role::Storage, 8003), (Role::Meta, 8005), (Role::Mgmtd, 8008)] {
                if node.has(role) {
                    ports.extend(both(port));
                }
            }
            if node.has(Role::Client) {
                ports.push(PortRange::one(8004, Udp));
            }
        }
        Kind::Glusterfs if node.has(Role::Server) => {
            // One brick per server in pvfs's plans (`gluster::plan`); counted here so that a
            // plan with more gets a port for each.
            let bricks = crate::gluster::bricks_on(cluster, node).max(1);
            ports.push(PortRange::range(24007, 24008, Tcp));
            ports.push(PortRange::range(GLUSTER_BASE_PORT, GLUSTER_BASE_PORT + (bricks - 1), Tcp));
        }
        Kind::Glusterfs | Kind::Local => {}
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// Puts each node's `firewall` step first in its first unit.
pub(crate) fn add(cluster: &Cluster, plan: &mut Plan) {
    if cluster.firewall == Firewall::Leave {
        return;
    }
    for node in &cluster.nodes {
        let ports = ports_of(cluster, node);
        if ports.is_empty() {
            continue;
        }
        if let Some(unit) = plan.units.iter_mut().find(|u| u.node == node.name) {
            unit.steps.insert(0, Step::Firewall(FirewallPorts { ports, zone: None }));
        }
    }
}

/// The nodes whose ports a gate on `node` waits to reach, `node` first (answers come back to
/// it too): where to look for a firewall when the gate times out. Gates that wait on nothing
/// across the network (the node's own NID, kernel headers, a client's own mount) name none.
pub fn gate_nodes<'c>(cluster: &'c Cluster, node: &str, gate: &GateKind) -> Vec<&'c Node> {
    let by_host = |host: &str| {
        cluster
            .nodes
            .iter()
            .filter(|n| crate::host_of(n) == host || n.name == host || crate::lustre::lnet_host(n) == host)
            .collect::<Vec<_>>()
    };
    let servers =
        |roles: &[Role]| cluster.nodes.iter().filter(|n| roles.iter().any(|r| n.has(*r))).collect::<Vec<_>>();
    let others: Vec<&Node> = match gate {
        GateKind::LnetPing { nid } => by_host(nid.split('@').next().unwrap_or_default()),
        GateKind::LfsCheckServers => servers(&[Role::Mgs, Role::Mds, Role::Oss]),
        GateKind::BeegfsMgmtdReachable => servers(&[Role::Mgmtd]),
        GateKind::BeegfsCheckServers => servers(&[Role::Mgmtd, Role::Meta, Role::Storage]),
        GateKind::GlusterPeersInCluster { peers } => peers.iter().flat_map(|p| by_host(p)).collect(),
        GateKind::GlusterBricksOnline { bricks, .. } => {
            bricks.iter().flat_map(|b| by_host(b.split_once(':').map_or(b.as_str(), |(h, _)| h))).collect()
        }
        _ => return Vec::new(),
    };
    let mut nodes: Vec<&Node> = cluster.node(node).into_iter().collect();
    for other in others {
        if !nodes.iter().any(|n| n.name == other.name) {
            nodes.push(other);
        }
    }
    nodes
}
