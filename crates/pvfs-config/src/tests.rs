//! Cluster files in, validated clusters or every error out.

use crate::{ConfigError, parse};
use expect_test::{Expect, expect};
use std::path::Path;

/// Renders what loading `src` gives: the cluster's nodes, or the error list as
/// `pvfsctl validate` prints it.
fn check(src: &str, expect: Expect) {
    let shown = match parse(Path::new("/etc/pvfs/cluster.toml"), src) {
        Ok(c) => {
            let mut out = format!("{} ({}) tls={}\n", c.name, c.kind, c.tls_dir.display());
            for n in &c.nodes {
                let roles: Vec<&str> = n.roles.iter().map(|r| r.as_str()).collect();
                out += &format!("{} {} [{}] disks={}\n", n.name, n.address, roles.join(","), n.disks.len());
            }
            out
        }
        Err(err @ ConfigError::Invalid { .. }) => format!("{err}\n"),
        Err(err) => panic!("{err}"),
    };
    expect.assert_eq(&shown);
}

#[test]
fn the_design_sketch_is_valid() {
    check(
        r#"
[cluster]
name = "lustrefs"
kind = "lustre"            # lustre | glusterfs | beegfs | local

[[node]]
name = "mgsmds00"
address = "10.0.0.4:7070"
roles = ["mgs", "mds"]
disks = ["/dev/disk/azure/scsi1/lun0"]

[[node]]
name = "oss00"
address = "10.0.0.5"
roles = ["oss"]
disks = ["/dev/disk/azure/scsi1/lun0", "/dev/disk/azure/scsi1/lun1"]

[[node]]
name = "client00"
address = "client00.example.net:7071"
roles = ["client"]

[lustre]
fsname = "LustreFS"
mount = "/mnt/lustre"
lnet = "tcp"

[bench]
mount = "/mnt/lustre/bench"
launcher = "agents"
engine = "ior"
"#,
        expect![[r#"
            lustrefs (lustre) tls=/etc/pvfs/tls
            mgsmds00 10.0.0.4:7070 [mgs,mds] disks=1
            oss00 10.0.0.5:7070 [oss] disks=2
            client00 client00.example.net:7071 [client] disks=0
        "#]],
    );
}

#[test]
fn every_error_is_reported_with_its_position() {
    check(
        r#"
[cluster]
name = "gfs"
kind = "glusterfs"
colour = "blue"

[tls]
dir = "/srv/pvfs/tls"

[[node]]
name = "server1"
address = "10.0.0.4:7070"
roles = ["server", "oss"]
rolse = ["client"]

[[node]]
name = "server1"
address = "10.0.0.4:7070"
roles = ["servr"]

[[node]]
name = "client1"
address = "10.0.0.6:70x0"
roles = []
disks = ["sdc"]

[glusterfs]
volume = "gv0"
mount = "/mnt/gv0"

[lustre]
fsname = "LustreFS"
mount = "/mnt/lustre"
"#,
        expect![[r#"
            /etc/pvfs/cluster.toml:5:1: unknown key `colour` in [cluster]; expected one of: name, kind
            /etc/pvfs/cluster.toml:13:20: role "oss" is not valid for kind glusterfs: use server, client
            /etc/pvfs/cluster.toml:14:1: unknown key `rolse` in [[node]]; did you mean `roles`?
            /etc/pvfs/cluster.toml:17:8: duplicate node name "server1" (first defined on line 11)
            /etc/pvfs/cluster.toml:18:11: address 10.0.0.4:7070 is already node "server1"'s (line 12); each node needs its own agent address
            /etc/pvfs/cluster.toml:19:10: unknown role "servr": roles are mgs, mds, oss, server, mgmtd, meta, storage, client; did you mean "server"?
            /etc/pvfs/cluster.toml:23:11: cannot parse address "10.0.0.6:70x0": port "70x0" is not a number from 1 to 65535
            /etc/pvfs/cluster.toml:24:9: node "client1" has no roles; give at least one
            /etc/pvfs/cluster.toml:25:10: disk "sdc" must be an absolute device path, e.g. /dev/disk/azure/scsi1/lun0
            /etc/pvfs/cluster.toml:33:9: [lustre] settings in a cluster of kind "glusterfs": remove the [lustre] section or change the kind
        "#]],
    );
}

#[test]
fn a_missing_kind_section_and_unknown_kind_are_named() {
    check(
        "[cluster]\nname = \"x\"\nkind = \"lustre\"\n[[node]]\nname = \"a\"\naddress = \"10.0.0.1\"\nroles = [\"mgs\"]\n",
        expect![[r#"
            /etc/pvfs/cluster.toml:3:8: kind = "lustre" needs a [lustre] section (fsname, mount)
        "#]],
    );
    check(
        "[cluster]\nname = \"x\"\nkind = \"lustr\"\n",
        expect![[r#"
            /etc/pvfs/cluster.toml:2:8: the cluster has no nodes: add a [[node]] table with name, address and roles for each
            /etc/pvfs/cluster.toml:3:8: unknown kind "lustr": expected one of lustre, glusterfs, beegfs, local; did you mean "lustre"?
        "#]],
    );
}

#[test]
fn type_errors_in_several_nodes_are_all_reported() {
    check(
        "[cluster]\nname = \"x\"\nkind = \"local\"\n[local]\nmount = \"/tmp/pvfs\"\n\
         [[node]]\nname = 1\naddress = \"127.0.0.1\"\nroles = [\"server\"]\n\
         [[node]]\nname = \"b\"\nroles = [\"client\"]\n",
        expect![[r#"
            /etc/pvfs/cluster.toml:7:8: invalid type: integer `1`, expected a string
            /etc/pvfs/cluster.toml:10:1: missing field `address`
        "#]],
    );
}

#[test]
fn syntax_errors_stop_early_with_positions() {
    check(
        "[cluster]\nname = \"x\nkind = \"local\"\n",
        expect![[r#"
            /etc/pvfs/cluster.toml:2:10: TOML syntax: invalid basic string, expected `"`
        "#]],
    );
}

#[test]
fn missing_cluster_section() {
    check(
        "[[node]]\nname = \"a\"\naddress = \"127.0.0.1\"\nroles = [\"client\"]\n",
        expect![[r#"
            /etc/pvfs/cluster.toml:1:1: missing [cluster] section: add one with `name` and `kind` (lustre, glusterfs, beegfs or local)
        "#]],
    );
}

#[test]
fn every_example_in_config_is_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            crate::load(&path).unwrap_or_else(|err| panic!("{err}"));
            seen += 1;
        }
    }
    assert!(seen >= 2, "expected example cluster files in {}", dir.display());
}
