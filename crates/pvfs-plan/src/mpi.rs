//! `[bench] mpi_ssh`: one `mpi-ssh` unit per client, after its other units, and `down`'s
//! `mpi-ssh-gone`. The key pair and the clients' host keys are not in the cluster file: the
//! coordinator makes the one and asks the agents for the others, and hands them in here, so
//! planning stays pure.

use crate::Plan;
use pvfs_config::{Cluster, Role};
use pvfs_steps::{KnownHost, MpiSsh, MpiSshGone, Step};
use std::collections::BTreeMap;

/// What `mpi-ssh` needs beyond the cluster file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiKeys {
    /// The cluster's OpenSSH private key.
    pub private_key: String,
    /// Its public half, `TYPE BASE64`.
    pub public_key: String,
    /// Every client's host key (`TYPE BASE64`) by node name.
    pub host_keys: BTreeMap<String, String>,
}

/// Adds the `mpi-ssh` unit to every client of `cluster` (nothing when `mpi_ssh` is off).
pub fn add_mpi_ssh(cluster: &Cluster, plan: &mut Plan, keys: &MpiKeys) {
    if !cluster.bench.mpi_ssh {
        return;
    }
    let clients: Vec<_> = cluster.nodes.iter().filter(|n| n.has(Role::Client)).collect();
    let known_hosts: Vec<KnownHost> = clients
        .iter()
        .filter_map(|n| {
            let key = keys.host_keys.get(&n.name)?;
            let mut names = vec![crate::host_of(n)];
            if n.name != names[0] {
                names.push(n.name.clone());
            }
            Some(KnownHost { names, key: key.clone() })
        })
        .collect();
    for node in clients {
        let step = Step::MpiSsh(MpiSsh {
            cluster: cluster.name.clone(),
            private_key: keys.private_key.clone(),
            public_key: keys.public_key.clone(),
            known_hosts: known_hosts.clone(),
        });
        plan.add(node, "mpi-ssh", vec![step], vec![]);
    }
}

/// `down`: the grant taken away on every client (when `mpi_ssh` is on).
pub(crate) fn add_mpi_ssh_gone(cluster: &Cluster, plan: &mut Plan) {
    if !cluster.bench.mpi_ssh {
        return;
    }
    for node in cluster.nodes.iter().filter(|n| n.has(Role::Client)) {
        plan.add(
            node,
            "mpi-ssh",
            vec![Step::MpiSshGone(MpiSshGone { cluster: cluster.name.clone() })],
            vec![],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(mpi_ssh: bool) -> Cluster {
        let src = format!(
            "[cluster]\nname = \"g\"\nkind = \"glusterfs\"\n\
             [[node]]\nname = \"gfs1\"\naddress = \"10.0.0.1\"\nroles = [\"server\"]\ndisks = [\"/dev/sdb\"]\n\
             [[node]]\nname = \"gfs2\"\naddress = \"10.0.0.2\"\nroles = [\"server\", \"client\"]\ndisks = [\"/dev/sdb\"]\n\
             [[node]]\nname = \"client1\"\naddress = \"10.0.0.3\"\nroles = [\"client\"]\n\
             [glusterfs]\nvolume = \"gv0\"\nmount = \"/mnt/gv0\"\n[glusterfs.brick]\npath = \"/bricks/b1\"\n\
             [bench]\nlauncher = \"mpi\"\nmpi_ssh = {mpi_ssh}\n"
        );
        pvfs_config::parse(std::path::Path::new("g.toml"), &src).unwrap()
    }

    fn keys() -> MpiKeys {
        MpiKeys {
            private_key: "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----\n"
                .into(),
            public_key: "ssh-ed25519 AAAAPUBLIC".into(),
            host_keys: [("gfs2", "ssh-ed25519 AAAAGFS2"), ("client1", "ssh-ed25519 AAAACLIENT1")]
                .into_iter()
                .map(|(n, k)| (n.to_owned(), k.to_owned()))
                .collect(),
        }
    }

    #[test]
    fn every_client_gets_the_key_and_every_clients_host_key_last() {
        let c = cluster(true);
        let mut plan = crate::plan(&c);
        add_mpi_ssh(&c, &mut plan, &keys());
        let units: Vec<String> = plan
            .units
            .iter()
            .filter(|u| u.label == "mpi-ssh")
            .map(|u| {
                let Step::MpiSsh(m) = &u.steps[0] else { panic!() };
                format!("{} after {:?}: {}", u.node, u.after, m.known_hosts_text().replace('\n', " | "))
            })
            .collect();
        expect_test::expect![[r#"
            [
                "gfs2 after [3]: 10.0.0.2,gfs2 ssh-ed25519 AAAAGFS2 | 10.0.0.3,client1 ssh-ed25519 AAAACLIENT1 | ",
                "client1 after [4]: 10.0.0.2,gfs2 ssh-ed25519 AAAAGFS2 | 10.0.0.3,client1 ssh-ed25519 AAAACLIENT1 | ",
            ]
        "#]]
        .assert_debug_eq(&units);
        let down = crate::down(&c, false);
        let gone: Vec<&str> =
            down.units.iter().filter(|u| u.label == "mpi-ssh").map(|u| u.node.as_str()).collect();
        assert_eq!(gone, ["gfs2", "client1"]);
    }

    #[test]
    fn without_mpi_ssh_nothing_is_added() {
        let c = cluster(false);
        let mut plan = crate::plan(&c);
        let before = plan.clone();
        add_mpi_ssh(&c, &mut plan, &keys());
        assert_eq!(plan, before);
        assert!(crate::down(&c, false).units.iter().all(|u| u.label != "mpi-ssh"));
    }
}
