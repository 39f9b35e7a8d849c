//! Cluster files in, validated clusters or every error out.

use crate::{ConfigError, parse};
use expect_test::{Expect, expect};
use std::path::Path;

mod azure;

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
launcher = "mpi"
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
            /etc/pvfs/cluster.toml:5:1: unknown key `colour` in [cluster]; expected one of: name, kind, firewall
            /etc/pvfs/cluster.toml:11:8: node "server1" has role server but lists no disks; its target needs at least one (`disks = ["/dev/…"]`)
            /etc/pvfs/cluster.toml:13:20: role "oss" is not valid for kind glusterfs: use server, client
            /etc/pvfs/cluster.toml:14:1: unknown key `rolse` in [[node]]; did you mean `roles`?
            /etc/pvfs/cluster.toml:17:8: duplicate node name "server1" (first defined on line 11)
            /etc/pvfs/cluster.toml:18:11: address 10.0.0.4:7070 is already node "server1"'s (line 12); each node needs its own agent address
            /etc/pvfs/cluster.toml:19:10: unknown role "servr": roles are mgs, mds, oss, server, mgmtd, meta, storage, client; did you mean "server"?
            /etc/pvfs/cluster.toml:23:11: cannot parse address "10.0.0.6:70x0": port "70x0" is not a number from 1 to 65535
            /etc/pvfs/cluster.toml:24:9: node "client1" has no roles; give at least one
            /etc/pvfs/cluster.toml:25:10: disk "sdc" is not absolute: name a block device by its canonical path under /dev, e.g. /dev/disk/azure/scsi1/lun0
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
            /etc/pvfs/cluster.toml:3:8: a lustre cluster needs at least one node with role "oss"
            /etc/pvfs/cluster.toml:5:8: node "a" has role mgs but lists no disks; its target needs at least one (`disks = ["/dev/…"]`)
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
fn engines_only_run_under_launchers_that_can_start_them() {
    let local = "[cluster]\nname = \"x\"\nkind = \"local\"\n[local]\nmount = \"/m\"\n[[node]]\nname = \"a\"\naddress = \"10.0.0.1\"\nroles = [\"client\"]\n";
    check(
        &format!("{local}[bench]\nengine = \"ior\"\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:11:10: engine "ior" needs launcher = "mpi" (IOR is an MPI program); with the agents launcher use engine "builtin" or "fio"
        "#]],
    );
    check(
        &format!("{local}[bench]\nlauncher = \"mpi\"\nengine = \"fio\"\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:12:10: engine "fio" is not an MPI program: use it with launcher = "agents"
        "#]],
    );
}

/// `[bench] drop_caches`: one of three words, and not under the mpi launcher (which cannot stop
/// its job between phases).
#[test]
fn drop_caches_is_a_word_and_needs_the_agents_launcher() {
    let local = "[cluster]\nname = \"x\"\nkind = \"local\"\n[local]\nmount = \"/m\"\n[[node]]\nname = \"a\"\naddress = \"10.0.0.1\"\nroles = [\"client\"]\n";
    check(
        &format!("{local}[bench]\ndrop_caches = \"sometimes\"\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:11:15: unknown drop_caches "sometimes": use none, clients, all
        "#]],
    );
    check(
        &format!("{local}[bench]\nlauncher = \"mpi\"\ndrop_caches = \"clients\"\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:12:15: drop_caches needs the agents launcher: the mpi launcher runs every phase inside one MPI job, which pvfs cannot stop between phases to drop caches (engine io500 drops the clients' caches itself: drop_caches = "clients")
        "#]],
    );
    // io500 drops its ranks' caches itself; the program is a path to a file named io500.
    let io500 =
        format!("{local}[bench]\nlauncher = \"mpi\"\nengine = \"io500\"\nio500 = \"/opt/io500/io500\"\n");
    let bench = parse(Path::new("c.toml"), &format!("{io500}drop_caches = \"clients\"\n")).unwrap().bench;
    assert_eq!(bench.io500.as_deref(), Some(Path::new("/opt/io500/io500")));
    check(
        &format!(
            "{local}[bench]\nlauncher = \"agents\"\nengine = \"io500\"\nio500 = \"/opt/io500/io500.sh\"\n"
        ),
        expect![[r#"
            /etc/pvfs/cluster.toml:12:10: engine "io500" needs launcher = "mpi" (io500 is an MPI program); with the agents launcher use engine "builtin", which runs the IO500 through the agents
            /etc/pvfs/cluster.toml:13:9: [bench] io500 "/opt/io500/io500.sh": the program's file is named io500 (the agents run no other program for engine io500); give the path of the io500 program built by io500's prepare.sh
        "#]],
    );
    let read = |src: &str| parse(Path::new("c.toml"), src).unwrap().bench.drop_caches;
    assert_eq!(
        read(&format!("{local}[bench]\ndrop_caches = \"all\"\n")),
        Some(pvfs_bench::request::DropCaches::All)
    );
    assert_eq!(read(local), None);
}

/// Root ssh between the clients is refused where nothing could use it: one client, or the
/// agents launcher named in the file.
#[test]
fn mpi_ssh_needs_several_clients_and_not_the_agents_launcher() {
    let local = "[cluster]\nname = \"x\"\nkind = \"local\"\n[local]\nmount = \"/m\"\n[[node]]\nname = \"a\"\naddress = \"10.0.0.1\"\nroles = [\"client\"]\n";
    let second = "[[node]]\nname = \"b\"\naddress = \"10.0.0.2\"\nroles = [\"client\"]\n";
    check(
        &format!("{local}[bench]\nmpi_ssh = true\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:11:11: mpi_ssh = true gives root ssh between the clients to mpirun, and this cluster has 1 client: an MPI job on one client needs no ssh; remove mpi_ssh
        "#]],
    );
    check(
        &format!("{local}{second}[bench]\nlauncher = \"agents\"\nmpi_ssh = true\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:16:11: mpi_ssh = true gives root ssh between the clients to mpirun, and this file's launcher is "agents", which needs none: remove mpi_ssh, or use launcher = "mpi"
        "#]],
    );
    let ok = |src: &str| parse(Path::new("c.toml"), src).unwrap().bench.mpi_ssh;
    assert!(ok(&format!("{local}{second}[bench]\nlauncher = \"mpi\"\nmpi_ssh = true\n")));
    assert!(!ok(&format!("{local}{second}[bench]\nmpi_ssh = false\n")));
    assert!(!ok(&format!("{local}{second}")));
}

/// Issue 24, item 4: a benchmark directory is never in a system tree, never `/` itself, and
/// canonical; the agents' `bench-dir` rule, said by `validate` first.
#[test]
fn a_benchmark_directory_is_a_data_path() {
    let local = "[cluster]\nname = \"x\"\nkind = \"local\"\n[local]\nmount = \"/m\"\n[[node]]\nname = \"a\"\naddress = \"10.0.0.1\"\nroles = [\"client\"]\n";
    check(
        &format!("{local}[bench]\nmount = \"/etc/pvfs-bench\"\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:11:9: [bench] mount "/etc/pvfs-bench" is in a system tree (or is /): benchmarks write only in the cluster's file system or a data directory, such as /mnt/lustre/bench
        "#]],
    );
    check(
        &format!("{local}[bench]\nmount = \"/mnt/lustre/../../root\"\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:11:9: [bench] mount "/mnt/lustre/../../root" has a `.` or `..` component: give an absolute path such as /mnt/lustre/bench
        "#]],
    );
    check(
        &format!("{local}[bench]\nmount = \"/\"\n"),
        expect![[r#"
        /etc/pvfs/cluster.toml:11:9: [bench] mount "/" is in a system tree (or is /): benchmarks write only in the cluster's file system or a data directory, such as /mnt/lustre/bench
    "#]],
    );
    let ok = |src: &str| parse(Path::new("c.toml"), src).unwrap().bench.mount;
    assert_eq!(ok(&format!("{local}[bench]\nmount = \"/scratch\"\n")), Some("/scratch".into()));
}

/// Benchmark sizes are bounded when the file is loaded, each refusal at the line of the value
/// at fault, naming the parameter, the value and the limit; values are applied together, so
/// a valid set in any order passes.
#[test]
fn bench_params_out_of_bounds_are_named_at_their_line() {
    let local = "[cluster]\nname = \"x\"\nkind = \"local\"\n[local]\nmount = \"/m\"\n[[node]]\nname = \"a\"\naddress = \"10.0.0.1\"\nroles = [\"client\"]\n";
    check(
        &format!("{local}[bench]\n[bench.params]\nb = \"1t\"\nt = \"1t\"\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:13:5: [bench] params: t = "1t": transfer 1t is larger than 1g, the most one task may hold in memory: a request above 1 GiB is not a storage benchmark (the seed's largest is 32m); use a smaller transfer
        "#]],
    );
    check(
        &format!("{local}[bench]\nparams = {{ segments = \"100\", block = \"1t\" }}\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:11:23: [bench] params: segments = "100": block 1t x 100 segments is more than 16t per task (ext4's largest file); use fewer segments or a smaller block
        "#]],
    );
    check(
        &format!("{local}[bench]\nprocs_per_client = 5000\nparams = {{ z = \"x\" }}\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:11:20: procs_per_client: procs 5000 is more than 4096 tasks per client: the engine runs a thread per task, and no client has that many cores; use fewer procs
            /etc/pvfs/cluster.toml:12:16: [bench] params: z = "x": expected true or false
        "#]],
    );
    check(
        &format!(
            "{local}[bench]\npreset = \"metadata\"\nprocs_per_client = 4096\nparams = {{ I = \"100000\" }}\n"
        ),
        expect![[r#"
            x (local) tls=/etc/pvfs/tls
            a 10.0.0.1:7070 [client] disks=0
        "#]],
    );
    // Block first in the file's order is fine: the whole set is checked, not each step.
    check(
        &format!("{local}[bench]\nparams = {{ block = \"9m\", transfer = \"3m\", odirect = \"false\" }}\n"),
        expect![[r#"
            x (local) tls=/etc/pvfs/tls
            a 10.0.0.1:7070 [client] disks=0
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
fn setup_settings_are_checked_across_nodes() {
    check(
        r#"
[cluster]
name = "gfs"
kind = "glusterfs"

[packages]
manager = "zypper"
server = ["glusterfs-server=", "xfsprogs"]
oss = ["lustre"]

[[repo]]
name = "gluster 10"
baseurl = "ftp.example.com/gluster"

[[node]]
name = "s1"
address = "10.0.0.1"
roles = ["server"]
disks = ["/dev/sdc"]
wipe = ["/dev/sdd"]

[[node]]
name = "s2"
address = "10.0.0.2"
roles = ["server"]
disks = ["/dev/sdc"]

[[node]]
name = "s3"
address = "10.0.0.3"
roles = ["server"]
disks = ["/dev/sdc"]

[glusterfs]
volume = "gv0"
mount = "/mnt/gv0"
layout = "replicate"
replica = 2

[glusterfs.brick]
fs = "btrfs"
mkfs_options = ["-f", "-i", "size=512"]
tuning = { tuneNumWorkers = "64" }
"#,
        expect![[r#"
            /etc/pvfs/cluster.toml:4:8: 3 servers cannot form whole sets of 2 bricks: use a multiple of 2 servers
            /etc/pvfs/cluster.toml:7:11: unknown package manager "zypper": use auto, apt, dnf or yum
            /etc/pvfs/cluster.toml:8:11: [packages] server: "" is not a package version of glusterfs-server: versions are letters, digits and . + - _ ~ : ^, starting with a letter or digit
            /etc/pvfs/cluster.toml:9:8: [packages] oss: there is no role oss in a glusterfs cluster
            /etc/pvfs/cluster.toml:12:8: repository name must be letters, digits, '-', '_' or '.', not starting with '-' or '.' (it names /etc/yum.repos.d/NAME.repo)
            /etc/pvfs/cluster.toml:13:11: baseurl "ftp.example.com/gluster" is not a URL (relative URL without a base): give an https://, http://, ftp:// or file:// URL
            /etc/pvfs/cluster.toml:20:9: "/dev/sdd" is not one of node "s1"'s disks; `wipe` may only list entries of `disks`
            /etc/pvfs/cluster.toml:41:6: [glusterfs.brick]: file system "btrfs" is not supported: use "xfs" or "ext4"
            /etc/pvfs/cluster.toml:42:17: [glusterfs.brick]: mkfs_options: mkfs.xfs option -f: no force flag (pvfs adds one itself, only for devices listed under the node's `wipe`)
            /etc/pvfs/cluster.toml:43:10: [glusterfs.brick]: `tuning` sets BeeGFS config keys and is only valid in [beegfs.meta] and [beegfs.storage]
        "#]],
    );
}

#[test]
fn mkfs_options_are_checked_against_the_tools_allow_list() {
    check(
        r#"
[cluster]
name = "local"
kind = "beegfs"

[[node]]
name = "s1"
address = "10.0.0.1"
roles = ["mgmtd", "meta", "storage", "client"]
disks = ["/dev/sdc"]
meta_disks = ["/dev/sdd"]

[beegfs]
mount = "/mnt/beegfs"
disable_authentication = true

[beegfs.meta]
fs = "ext4"
mkfs_options = ["-I", "512", "-J", "device=/dev/sde", "-d", "/etc"]

[beegfs.storage]
fs = "xfs"
mkfs_options = ["-Kf", "-l", "logdev=/dev/sdf,size=64m", "-F", "/dev/sdg"]
"#,
        expect![[r#"
            /etc/pvfs/cluster.toml:19:30: [beegfs.meta]: mkfs_options: mkfs.ext4 option -J device=/dev/sde: no second device (-J device= puts the journal on another device: pvfs formats only the device the target names; external logs, journals and realtime devices are not supported)
            /etc/pvfs/cluster.toml:19:55: [beegfs.meta]: mkfs_options: mkfs.ext4 option -d /etc: no files of the node (-d populates from a directory or tarball: a file system is made from nothing but its device)
            /etc/pvfs/cluster.toml:23:17: [beegfs.storage]: mkfs_options: mkfs.xfs option -f (in "-Kf"): no force flag (pvfs adds one itself, only for devices listed under the node's `wipe`)
            /etc/pvfs/cluster.toml:23:24: [beegfs.storage]: mkfs_options: mkfs.xfs option -l logdev=/dev/sdf: no second device (-l logdev puts the log on another device: pvfs formats only the device the target names; external logs, journals and realtime devices are not supported)
            /etc/pvfs/cluster.toml:23:58: [beegfs.storage]: mkfs_options: mkfs.xfs option -F: allowed options only (-K -b -d -i -l -m -n -q -r -s)
            /etc/pvfs/cluster.toml:23:64: [beegfs.storage]: mkfs_options: mkfs.xfs option /dev/sdg: options only (a word that is not an option is read by mkfs as a device or a size; write values after their flag, e.g. "-i", "size=512")
        "#]],
    );
}

/// BeeGFS 7.3+ services refuse to start without connAuthFile unless authentication is
/// disabled explicitly; the secret must be readable text; interfaces and subnets by grammar;
/// read-ahead in whole pages.
#[test]
fn beegfs_needs_a_secret_or_says_it_runs_without() {
    let file = |beegfs: &str| {
        format!(
            "[cluster]\nname = \"b\"\nkind = \"beegfs\"\n\n[[node]]\nname = \"s1\"\naddress = \"10.0.0.1\"\nroles = [\"mgmtd\", \"meta\", \"storage\", \"client\"]\n\n[beegfs]\nmount = \"/mnt/beegfs\"\n{beegfs}"
        )
    };
    check(
        &file(
            "interfaces = [\"eth0\", \"eth 1\"]\nnet_filter = [\"10.0.0.0/24\", \"10.0.0.0\"]\n[beegfs.storage]\nqueue = { read_ahead_kb = 130 }\n",
        ),
        expect![[r#"
            /etc/pvfs/cluster.toml:11:9: [beegfs]: BeeGFS 7.3 and later refuse to start without connection authentication: set auth_secret = "FILE" (a shared secret next to the cluster file, copied to every node), or disable_authentication = true
            /etc/pvfs/cluster.toml:12:23: "eth 1" is not a network interface name (eth0, ib0, …)
            /etc/pvfs/cluster.toml:13:30: "10.0.0.0" is not a subnet such as 10.0.0.0/24
            /etc/pvfs/cluster.toml:15:27: [beegfs.storage]: read_ahead_kb = 130 is not a multiple of 4: the kernel keeps read-ahead in pages, so it would read back as 128
        "#]],
    );
    check(
        &file("auth_secret = \"no-such.auth\"\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:12:15: cannot read the BeeGFS shared secret /etc/pvfs/no-such.auth: No such file or directory (os error 2); make one with `head -c 48 /dev/urandom | base64 > /etc/pvfs/no-such.auth && chmod 400 /etc/pvfs/no-such.auth`
        "#]],
    );
    check(
        &file("auth_secret = \"x\"\ndisable_authentication = true\n"),
        expect![[r#"
            /etc/pvfs/cluster.toml:13:26: [beegfs]: give auth_secret or disable_authentication = true, not both
        "#]],
    );
    // The example's secret, read as text, never shown.
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/beegfs.toml");
    let cluster = crate::load(&example).unwrap();
    let crate::KindSpec::Beegfs { auth, .. } = &cluster.spec else { panic!() };
    let crate::BeegfsAuth::Secret(secret) = auth else { panic!("{auth:?}") };
    assert!(secret.len() >= 32);
    assert!(!format!("{auth:?}").contains(secret.trim()), "{auth:?}");
}

#[test]
fn ids_come_from_the_file_and_are_unique() {
    check(
        r#"
[cluster]
name = "lfs"
kind = "lustre"

[[node]]
name = "mgs"
address = "10.0.0.1"
roles = ["mgs", "mds"]
disks = ["/dev/sdc"]

[[node]]
name = "oss0"
address = "10.0.0.2"
roles = ["oss"]
disks = ["/dev/sdc"]
id = 0

[[node]]
name = "oss1"
address = "10.0.0.3"
roles = ["oss"]
disks = ["/dev/sdc"]
id = 0

[[node]]
name = "oss2"
address = "10.0.0.4"
roles = ["oss", "mgs"]
disks = ["/dev/sdc"]

[lustre]
fsname = "LustreFS"
mount = "/mnt/lustre"

[lustre.ost]
fs = "xfs"
"#,
        expect![[r#"
            /etc/pvfs/cluster.toml:24:6: id 0 is already node "oss0"'s; every oss needs its own
            /etc/pvfs/cluster.toml:27:8: node "oss2": several nodes are oss, so each needs its own `id` (its target index); pvfs never numbers targets by VM or file order
            /etc/pvfs/cluster.toml:29:9: node "oss2" is a second mgs; a lustre cluster has exactly one
            /etc/pvfs/cluster.toml:37:6: [lustre.ost]: Lustre targets are made by mkfs.lustre (ldiskfs); remove `fs`
        "#]],
    );
}

#[test]
fn every_example_in_config_is_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config");
    let mut seen = 0;
    // The key an [azure] example names (`~/.ssh/id_ed25519.pub`), in a home of the test's own.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    std::fs::write(
        home.path().join(".ssh/id_ed25519.pub"),
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINAgQPdA2fgB2gs++YENv63NBcKieyO71BfY/pmWwXdD pvfs-test\n",
    )
    .unwrap();
    let loader = crate::Loader::with_home(home.path());
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        // policy*.toml is the agent's policy file, not a cluster file (pvfs-agent loads it);
        // NAME.state.toml is what `provision` wrote for NAME.toml.
        let cluster =
            name.ends_with(".toml") && !name.starts_with("policy") && !name.ends_with(".state.toml");
        if !cluster {
            continue;
        }
        // An [azure] example has no addresses before `provision`: it is checked as
        // `pvfsctl validate` checks it.
        if std::fs::read_to_string(&path).unwrap().contains("\n[azure]\n") {
            loader.load_provisioning(&path).unwrap_or_else(|err| panic!("{err}"));
        } else {
            loader.load(&path).unwrap_or_else(|err| panic!("{err}"));
        }
        seen += 1;
    }
    assert!(seen >= 2, "expected example cluster files in {}", dir.display());
}

#[test]
fn repositories_are_https_and_signed_unless_the_file_says_otherwise() {
    let file = |repos: &str| {
        format!(
            "[cluster]\nname = \"l\"\nkind = \"local\"\n\n{repos}\n[[node]]\nname = \"n1\"\naddress = \"127.0.0.1\"\nroles = [\"server\", \"client\"]\n\n[local]\nmount = \"/tmp/l\"\n"
        )
    };
    check(
        &file(
            r#"[[repo]]
name = "lustre"
baseurl = "http://downloads.whamcloud.com/public/lustre/"
gpgkey = "http://downloads.whamcloud.com/key"

[[repo]]
name = "plain"
baseurl = "https://downloads.whamcloud.com/public/x/\ngpgcheck=0"
gpgkey = "ftp://x/key"
"#,
        ),
        expect![[r#"
            /etc/pvfs/cluster.toml:7:11: baseurl "http://downloads.whamcloud.com/public/lustre/" is plain http, which lets anyone on the path swap the packages: use https, or add `allow_http = true` to this [[repo]] if you mean it
            /etc/pvfs/cluster.toml:8:10: gpgkey "http://downloads.whamcloud.com/key" is plain http, which lets anyone on the path swap the packages: use https, or add `allow_http = true` to this [[repo]] if you mean it
            /etc/pvfs/cluster.toml:12:11: baseurl "https://downloads.whamcloud.com/public/x/\ngpgcheck=0" holds '\n', which a .repo file cannot carry in a URL (a newline would add a line to it): give an https://, http://, ftp:// or file:// URL, percent-encoding such characters
            /etc/pvfs/cluster.toml:13:10: gpgkey "ftp://x/key" must be an https://, http:// or file:// URL
        "#]],
    );
    let path = Path::new("/etc/pvfs/cluster.toml");
    let cluster = parse(
        path,
        &file(
            "[[repo]]\nname = \"lustre\"\nbaseurl = \"http://downloads.whamcloud.com/public/lustre/\"\nallow_http = true\ngpgcheck = false\n\n[[repo]]\nname = \"signed\"\nbaseurl = \"https://x/\"\ngpgkey = \"file:///etc/pki/rpm-gpg/KEY\"\n",
        ),
    )
    .unwrap();
    let shown: Vec<String> = cluster
        .repos
        .iter()
        .map(|r| {
            format!("{} gpgcheck={} allow_http={} gpgkey={:?}", r.name, r.gpgcheck, r.allow_http, r.gpgkey)
        })
        .collect();
    assert_eq!(
        shown,
        [
            "lustre gpgcheck=false allow_http=true gpgkey=None",
            "signed gpgcheck=true allow_http=false gpgkey=Some(\"file:///etc/pki/rpm-gpg/KEY\")"
        ]
    );
}

/// An apt repository: suites and components by sources.list(5), its key from a file next to
/// the cluster file (apt fetches no keys), every mistake at its position.
#[test]
fn apt_repositories_take_suites_components_and_a_key_file() {
    let file = |repos: &str| {
        format!(
            "[cluster]\nname = \"l\"\nkind = \"local\"\n\n{repos}\n[[node]]\nname = \"n1\"\naddress = \"127.0.0.1\"\nroles = [\"server\", \"client\"]\n\n[local]\nmount = \"/tmp/l\"\n"
        )
    };
    check(
        &file(
            r#"[[repo]]
name = "beegfs"
baseurl = "https://www.beegfs.io/release/beegfs_7.4.5"
suites = ["bookworm", "-o"]
gpgkey = "https://www.beegfs.io/release/beegfs_7.4.5/gpg/GPG-KEY-beegfs"

[[repo]]
name = "flat"
baseurl = "https://www.beegfs.io/release/flat"
suites = ["./"]
components = ["main"]
gpgkey_file = "no-such.asc"

[[repo]]
name = "yum"
baseurl = "https://www.beegfs.io/release/x"
components = ["main"]
gpgkey_file = "k.asc"
"#,
        ),
        expect![[r#"
            /etc/pvfs/cluster.toml:8:11: [[repo]] beegfs: an apt suite needs components (components = ["main"]), or write an exact path ending in '/'
            /etc/pvfs/cluster.toml:8:23: suite "-o" is not an apt suite or component: write one word of letters, digits and . _ + ~ / -, not starting with '-' (bookworm, jammy-updates, main)
            /etc/pvfs/cluster.toml:9:10: [[repo]] beegfs: apt does not fetch signing keys: save the key next to the cluster file (`curl -fsSLo beegfs.asc URL`, then check its fingerprint) and give gpgkey_file = "beegfs.asc"
            /etc/pvfs/cluster.toml:15:15: [[repo]] flat: a suite ending in '/' is an exact path, which takes no components (sources.list(5)): remove components, or name the suite without the '/'
            /etc/pvfs/cluster.toml:16:15: cannot read the signing key of [[repo]] flat at /etc/pvfs/no-such.asc: No such file or directory (os error 2); save the repository's ASCII-armored key there, as its publisher ships it
            /etc/pvfs/cluster.toml:21:15: [[repo]] yum: components are for apt repositories; give its suites too, or remove them
            /etc/pvfs/cluster.toml:22:15: [[repo]] yum: gpgkey_file is for apt repositories (with suites); a yum/dnf repository names its key with gpgkey = URL
        "#]],
    );
    let dir = tempfile::tempdir().unwrap();
    let key = include_str!("../../pvfs-steps/testdata/packages/pvfs-test-repo.asc");
    std::fs::write(dir.path().join("beegfs.asc"), key).unwrap();
    std::fs::write(dir.path().join("binary.gpg"), [0x99u8, 0x01, 0xff, 0xfe]).unwrap();
    std::fs::write(dir.path().join("ssh.pub"), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 me\n").unwrap();
    let path = dir.path().join("cluster.toml");
    let repo = |name: &str, key_file: &str| {
        format!(
            "[[repo]]\nname = \"{name}\"\nbaseurl = \"https://www.beegfs.io/release/beegfs_7.4.5\"\nsuites = [\"bookworm\"]\ncomponents = [\"non-free\"]\ngpgkey_file = \"{key_file}\"\n\n"
        )
    };
    std::fs::write(&path, file(&repo("beegfs", "beegfs.asc"))).unwrap();
    let cluster = crate::load(&path).unwrap();
    let r = &cluster.repos[0];
    assert_eq!(
        (r.suites.as_slice(), r.components.as_slice()),
        (&["bookworm".to_owned()][..], &["non-free".to_owned()][..])
    );
    assert_eq!(r.key.as_deref(), Some(key));
    std::fs::write(&path, file(&(repo("bin", "binary.gpg") + &repo("ssh", "ssh.pub")))).unwrap();
    let err = crate::load(&path).unwrap_err().to_string();
    let dir = dir.path().display();
    assert!(
        err.contains(&format!("cluster.toml:10:15: {dir}/binary.gpg is not text (a binary keyring?)")),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "cluster.toml:17:15: {dir}/ssh.pub: it is not one ASCII-armored OpenPGP public key"
        )),
        "{err}"
    );
}

#[test]
fn lnet_may_pin_an_interface_and_bad_forms_are_named_at_their_position() {
    let cluster = |lnet: &str| {
        format!(
            "[cluster]\nname = \"x\"\nkind = \"lustre\"\n[[node]]\nname = \"m\"\naddress = \"10.0.0.4\"\nroles = [\"mgs\", \"mds\", \"oss\"]\ndisks = [\"/dev/sdc\"]\n[lustre]\nfsname = \"fs\"\nmount = \"/mnt/lustre\"\nlnet = {lnet}\n"
        )
    };
    let spec = |lnet: &str| match parse(Path::new("/c.toml"), &cluster(lnet)).unwrap().spec {
        crate::KindSpec::Lustre { lnet, interface, .. } => (lnet, interface),
        other => panic!("{other:?}"),
    };
    assert_eq!(spec("\"tcp\""), ("tcp".to_owned(), None));
    assert_eq!(spec("\"tcp(eth0)\""), ("tcp".to_owned(), Some("eth0".to_owned())));
    assert_eq!(spec("\"o2ib1(ib0)\""), ("o2ib1".to_owned(), Some("ib0".to_owned())));
    check(
        &cluster("\"tcp(eth0\""),
        expect![[r#"
            /etc/pvfs/cluster.toml:12:8: LNet network "tcp(eth0" opens '(' without closing it: use "tcp" or "o2ib" (optionally numbered, e.g. "tcp1"), pinned to an interface as "tcp(eth0)"
        "#]],
    );
    check(
        &cluster("\"tcp(eth0,eth1)\""),
        expect![[r#"
            /etc/pvfs/cluster.toml:12:8: LNet interface "eth0,eth1" in "tcp(eth0,eth1)" is not one interface name (letters, digits, '_', '-', '.', ':', at most 15): use "tcp" or "o2ib" (optionally numbered, e.g. "tcp1"), pinned to an interface as "tcp(eth0)"
        "#]],
    );
    check(
        &cluster("\"ib(ib0)\""),
        expect![[r#"
            /etc/pvfs/cluster.toml:12:8: unknown LNet network "ib": use "tcp" or "o2ib" (optionally numbered, e.g. "tcp1"), pinned to an interface as "tcp(eth0)"
        "#]],
    );
}

#[test]
fn lustre_stripe_and_client_parameters_are_read_and_bad_ones_named_at_their_position() {
    let cluster = |extra: &str| {
        format!(
            "[cluster]\nname = \"x\"\nkind = \"lustre\"\n[[node]]\nname = \"m\"\naddress = \"10.0.0.4\"\nroles = [\"mgs\", \"mds\", \"oss\", \"client\"]\ndisks = [\"/dev/sdc\"]\n[lustre]\nfsname = \"fs\"\nmount = \"/mnt/lustre\"\n{extra}\n"
        )
    };
    let good = cluster(
        "stripe = { count = -1, size = \"4M\" }\n[lustre.client]\nlctl = { \"llite.*.max_read_ahead_mb\" = \"64\", \"osc.*.max_rpcs_in_flight\" = \"16\" }\n[bench]\nmount = \"/mnt/lustre/bench\"",
    );
    match parse(Path::new("/c.toml"), &good).unwrap().spec {
        crate::KindSpec::Lustre { stripe, client_lctl, .. } => {
            assert_eq!(stripe, Some(crate::Stripe { count: -1, size: 4 << 20 }));
            assert_eq!(
                client_lctl,
                [
                    ("llite.*.max_read_ahead_mb".to_owned(), "64".to_owned()),
                    ("osc.*.max_rpcs_in_flight".to_owned(), "16".to_owned())
                ]
            );
        }
        other => panic!("{other:?}"),
    }
    for (size, bytes) in [("65536", 64 << 10), ("1m", 1 << 20), ("64K", 64 << 10), ("2G", 2 << 30)] {
        assert_eq!(crate::validate::parse_stripe_size(size), Ok(bytes), "{size}");
    }
    check(
        &cluster("stripe = { count = 0, size = \"3K\" }"),
        expect![[r#"
            /etc/pvfs/cluster.toml:12:20: stripe count 0: use -1 (every OST) or 1 to 2000
            /etc/pvfs/cluster.toml:12:30: stripe size "3K" is not one Lustre takes: use a multiple of 64K below 4G, such as "1M" or "4M"
        "#]],
    );
    check(
        &cluster("stripe = { count = 4, size = \"4X\" }\n[bench]\nmount = \"/scratch/bench\""),
        expect![[r#"
            /etc/pvfs/cluster.toml:12:10: [lustre] stripe applies to the benchmark directory, but [bench] mount "/scratch/bench" (line 14) is not under the Lustre mount /mnt/lustre: put the benchmark directory on Lustre or remove `stripe`
            /etc/pvfs/cluster.toml:12:30: stripe size "4X" is not a size: use a multiple of 64K below 4G, such as "1M" or "4M"
        "#]],
    );
    check(
        &cluster(
            "[lustre.client]\nlctl = { \"mdt.*.identity_upcall\" = \"/bin/sh\", \"llite.*.max_read_ahead_mb\" = \"6 4\" }",
        ),
        expect![[r#"
            /etc/pvfs/cluster.toml:13:8: [lustre.client] lctl: "mdt.*.identity_upcall" is not a client parameter pvfs sets: use lower-case letters, digits, '_', '.', '*' or '-' under llite., osc., mdc., lov., lmv., ldlm. (instances by glob: "llite.*.max_read_ahead_mb")
            /etc/pvfs/cluster.toml:13:77: [lustre.client] lctl llite.*.max_read_ahead_mb: "6 4" is not one word; give the value without spaces
        "#]],
    );
}

#[test]
fn a_node_may_allow_reboots_and_name_its_lnet_address() {
    let cluster = |extra: &str| {
        format!(
            "[cluster]\nname = \"x\"\nkind = \"lustre\"\n[[node]]\nname = \"m\"\naddress = \"10.0.0.4\"\nroles = [\"mgs\", \"mds\", \"oss\"]\ndisks = [\"/dev/sdc\"]\n{extra}\n[lustre]\nfsname = \"fs\"\nmount = \"/mnt/lustre\"\nlnet = \"tcp(ib0)\"\n"
        )
    };
    let node = parse(Path::new("/c.toml"), &cluster("reboot = true\nlnet_address = \"192.168.10.4\""))
        .unwrap()
        .nodes
        .remove(0);
    assert!(node.reboot);
    assert_eq!(node.lnet_address, Some(std::net::Ipv4Addr::new(192, 168, 10, 4)));
    let plain = parse(Path::new("/c.toml"), &cluster("")).unwrap().nodes.remove(0);
    assert_eq!((plain.reboot, plain.lnet_address), (false, None));
    check(
        &cluster("lnet_address = \"ib0\""),
        expect![[r#"
            /etc/pvfs/cluster.toml:9:16: lnet_address "ib0" is not an IPv4 address: give the node's address on the interface LNet is pinned to, e.g. "192.168.10.4"
        "#]],
    );
}

/// Every value that reaches a file (fstab, a .repo file, a BeeGFS .conf) or an argument on a
/// node is refused at its position when it could inject a line or an option.
#[test]
fn values_that_would_inject_into_files_or_arguments_are_refused_at_their_position() {
    check(
        r#"
[cluster]
name = "gfs"
kind = "glusterfs"

[packages]
server = ["-oDPkg::Pre-Invoke::=touch /tmp/pwned", "glusterfs-server=10.4\nx"]

[[repo]]
name = "gluster"
baseurl = "https://example.com/gluster/\n[evil]\nbaseurl=http://evil/"
gpgkey = "https://example.com/key\tx"

[[node]]
name = "s1"
address = "10.0.0.1"
roles = ["server"]
disks = ["/etc/passwd", "/dev/../etc/shadow", "/dev/sdc\n"]

[[node]]
name = "s2"
address = "10.0.0.2"
roles = ["server"]
disks = ["/dev/sdc"]

[glusterfs]
volume = "-gv0"
mount = "/mnt/../etc"
options = { "performance.cache-size" = "1GB\nnfs.disable on", "-x" = "on" }

[glusterfs.brick]
mount_options = "defaults\n/dev/sdz /etc xfs defaults 0 0"
label = "-L"
queue = { scheduler = "none\n" }
lvm = { vg = "-ffy", pool = "pool", lv = "lv\nx", pool_size = "95%FREE;x", virtual_size = "1t" }
"#,
        expect![[r#"
            /etc/pvfs/cluster.toml:7:11: [packages] server: "-oDPkg::Pre-Invoke::" is not a package name: package names are letters, digits, '.', '+', '-' or '_', starting with a letter or digit (never '-': that is an option); write `name` or `name=version`
            /etc/pvfs/cluster.toml:7:52: [packages] server: "10.4\nx" is not a package version of glusterfs-server: versions are letters, digits and . + - _ ~ : ^, starting with a letter or digit
            /etc/pvfs/cluster.toml:11:11: baseurl "https://example.com/gluster/\n[evil]\nbaseurl=http://evil/" holds '\n', which a .repo file cannot carry in a URL (a newline would add a line to it): give an https://, http://, ftp:// or file:// URL, percent-encoding such characters
            /etc/pvfs/cluster.toml:12:10: gpgkey "https://example.com/key\tx" holds '\t', which a .repo file cannot carry in a URL (a newline would add a line to it): give an https://, http:// or file:// URL, percent-encoding such characters
            /etc/pvfs/cluster.toml:15:8: node "s1" has role server but lists no disks; its target needs at least one (`disks = ["/dev/…"]`)
            /etc/pvfs/cluster.toml:18:10: disk "/etc/passwd" is not under /dev: name a block device by its canonical path under /dev, e.g. /dev/disk/azure/scsi1/lun0
            /etc/pvfs/cluster.toml:18:25: disk "/dev/../etc/shadow" has a `.` or `..` component: name a block device by its canonical path under /dev, e.g. /dev/disk/azure/scsi1/lun0
            /etc/pvfs/cluster.toml:18:47: disk "/dev/sdc\n" holds a control character: name a block device by its canonical path under /dev, e.g. /dev/disk/azure/scsi1/lun0
            /etc/pvfs/cluster.toml:27:10: volume name must be letters, digits, '-', '_' or '.', not starting with '-' or '.'
            /etc/pvfs/cluster.toml:28:9: path "/mnt/../etc" has a `.` or `..` component: give an absolute path without `.`/`..` components, `//` or a trailing `/`
            /etc/pvfs/cluster.toml:29:40: [glusterfs] options: performance.cache-size "1GB\nnfs.disable on" holds the control character '\n': give a one-line value without control characters
            /etc/pvfs/cluster.toml:29:70: [glusterfs] options: "-x" is not a GlusterFS volume option name (such as performance.cache-size)
            /etc/pvfs/cluster.toml:32:17: [glusterfs.brick]: mount option "defaults\n/dev/sdz /etc xfs defaults 0 0" holds a character fstab cannot carry (whitespace, '#', '/', quotes, control characters) or is empty: write comma-separated options such as "defaults,noatime"
            /etc/pvfs/cluster.toml:33:9: [glusterfs.brick]: label "-L" must be 1 to 12 letters, digits, '_', '.', '+' or '-' for xfs, not starting with '-' or '.'
            /etc/pvfs/cluster.toml:34:23: [glusterfs.brick]: "none\n" is not an I/O scheduler name: use one the kernel lists in /sys/block/DEV/queue/scheduler (mq-deadline, none, bfq, kyber)
            /etc/pvfs/cluster.toml:35:14: [glusterfs.brick]: LVM volume group name "-ffy" is not an LVM name: write 1 to 127 letters, digits, '+', '_', '.' or '-', not starting with '-' or '.' (lvm(8), VALID NAMES)
            /etc/pvfs/cluster.toml:35:42: [glusterfs.brick]: LVM logical volume name "lv\nx" is not an LVM name: write 1 to 127 letters, digits, '+', '_', '.' or '-', not starting with '-' or '.' (lvm(8), VALID NAMES)
            /etc/pvfs/cluster.toml:35:63: [glusterfs.brick]: LVM pool_size "95%FREE;x" is not a size: write a number with an optional unit (256K, 9216g) or a share of the volume group (95%FREE)
        "#]],
    );
}

#[test]
fn beegfs_settings_are_one_line_each() {
    check(
        r#"
[cluster]
name = "b"
kind = "beegfs"

[[node]]
name = "m"
address = "10.0.0.1"
roles = ["mgmtd", "meta", "storage", "client"]
disks = ["/dev/sdc"]
meta_disks = ["/dev/sdc"]

[beegfs]
mount = "/mnt/beegfs"
disable_authentication = true
client_tuning = { connMaxInternodeNum = "8\nsysMgmtdHost = evil" }

[beegfs.storage]
tuning = { tuneNumWorkers = "64 # x", "tune-x" = "1" }
"#,
        expect![[r#"
            /etc/pvfs/cluster.toml:11:15: meta disk "/dev/sdc" must be listed once, and not also under `disks`
            /etc/pvfs/cluster.toml:16:41: [beegfs] client_tuning: connMaxInternodeNum "8\nsysMgmtdHost = evil" holds the control character '\n': give a one-line value without control characters
            /etc/pvfs/cluster.toml:19:29: [beegfs.storage]: tuneNumWorkers = "64 # x": a BeeGFS setting is one non-empty line without '#' (at most 1024 bytes)
            /etc/pvfs/cluster.toml:19:50: [beegfs.storage]: "tune-x" is not a BeeGFS configuration key (letters and digits, such as tuneNumWorkers)
        "#]],
    );
}

/// A mistyped header is named with the section it is near, and what is inside it is still
/// checked as that section, in the same run.
#[test]
fn a_mistyped_section_header_is_named_and_its_contents_still_checked() {
    check(
        "[clustr]\nname = \"x\"\nkind = \"lustr\"\ncolour = 1\n[[nodes]]\nname = \"-a\"\naddress = \"10.0.0.1\"\nroles = [\"client\"]\n[totally_unrelated]\nx = 1\n",
        expect![[r#"
            /etc/pvfs/cluster.toml:1:2: unknown section [clustr]; did you mean [cluster]?
            /etc/pvfs/cluster.toml:3:8: unknown kind "lustr": expected one of lustre, glusterfs, beegfs, local; did you mean "lustre"?
            /etc/pvfs/cluster.toml:4:1: unknown key `colour` in [cluster]; expected one of: name, kind, firewall
            /etc/pvfs/cluster.toml:5:3: unknown section [[nodes]]; did you mean [[node]]?
            /etc/pvfs/cluster.toml:6:8: node name "-a" must be 1 to 64 letters, digits, '-', '_' or '.', not starting with '-' or '.' (it names the node's certificate file)
            /etc/pvfs/cluster.toml:9:2: unknown section [totally_unrelated]; sections are [cluster], [[node]], [tls], [lustre], [glusterfs], [beegfs], [local], [bench], [packages], [[repo]], [azure], [policy]
        "#]],
    );
}

/// A type error in one node or section no longer hides the semantic errors elsewhere (bad
/// address, unknown role, duplicate names), and what did not deserialize is not also reported
/// as missing.
#[test]
fn schema_and_semantic_errors_are_reported_in_one_run() {
    check(
        r#"
[cluster]
name = "x"
kind = "lustre"

[lustre]
fsname = 7
mount = "/mnt/lustre"

[[node]]
name = "oss1"
address = "10.0.0.1"
roles = ["oss"]
disks = ["/dev/sdc"]
id = "one"

[[node]]
name = "c1"
address = "10.0.0.300"
roles = ["clent"]

[[node]]
name = "c1"
address = "10.0.0.3"
roles = ["client"]
"#,
        expect![[r#"
            /etc/pvfs/cluster.toml:7:10: invalid type: integer `7`, expected a string
            /etc/pvfs/cluster.toml:15:6: invalid type: string "one", expected u32
            /etc/pvfs/cluster.toml:19:11: cannot parse address "10.0.0.300": "10.0.0.300" is not a valid IPv4 address (four numbers from 0 to 255)
            /etc/pvfs/cluster.toml:20:10: unknown role "clent": roles are mgs, mds, oss, server, mgmtd, meta, storage, client; did you mean "client"?
            /etc/pvfs/cluster.toml:23:8: duplicate node name "c1" (first defined on line 18)
        "#]],
    );
}

/// Positions are answered from a line index built once: checking a file with an error on
/// every one of 20,000 nodes reads, after the index, no more than each error's own line
/// prefix (before, every error rescanned the text before it: 20,000 x 2 MB).
#[test]
fn a_large_file_with_an_error_per_node_is_checked_without_rescanning() {
    let mut text =
        String::from("[cluster]\nname = \"big\"\nkind = \"local\"\n[local]\nmount = \"/mnt/big\"\n");
    let nodes = 20_000;
    for i in 0..nodes {
        // A non-ASCII name (refused) makes its line one whose columns must be counted; the
        // shared address and the unknown key are an error each too.
        text += &format!(
            "[[node]]\nname = \"nø{i}\"\naddress = \"10.0.0.1\"\nroles = [\"server\"]\ncolour = 1\n"
        );
    }
    let source = crate::diagnostic::Source::new(&text);
    let Err(ConfigError::Invalid { diagnostics, .. }) =
        crate::load::parse_source(Path::new("/etc/pvfs/cluster.toml"), &source)
    else {
        panic!("the file is invalid")
    };
    assert_eq!(diagnostics.len(), 3 * nodes - 1, "{:?}", &diagnostics[..3]);
    assert!(
        source.scanned() <= text.len(),
        "{} bytes rescanned for a {}-byte file",
        source.scanned(),
        text.len()
    );
    let last = diagnostics.last().unwrap();
    assert_eq!((last.line, last.column), (5 * nodes + 5, 1), "{}", last.message);
}

/// A [cluster] section with a type error still lets every node be checked in the same run.
#[test]
fn a_broken_cluster_section_does_not_hide_the_nodes_errors() {
    check(
        "[cluster]\nname = \"x\"\nkind = 3\n[[node]]\nname = \"a\"\naddress = \"10.0.0.300\"\nroles = [\"clent\"]\n",
        expect![[r#"
            /etc/pvfs/cluster.toml:3:8: invalid type: integer `3`, expected a string
            /etc/pvfs/cluster.toml:6:11: cannot parse address "10.0.0.300": "10.0.0.300" is not a valid IPv4 address (four numbers from 0 to 255)
            /etc/pvfs/cluster.toml:7:10: unknown role "clent": roles are mgs, mds, oss, server, mgmtd, meta, storage, client; did you mean "client"?
        "#]],
    );
}

/// Whamcloud's `server` tree carries the Lustre-patched kernel its kmods are built for; its
/// `patchless-ldiskfs-server` tree runs on the distribution's kernel (issue 25, item 3: an
/// example that said patchless and installed from `server`). Each server's list is judged with
/// the repositories it gets; a mirror of another layout is not judged.
#[test]
fn lustre_server_trees_and_kernel_pins_must_agree() {
    let file = |tree: &str, mgs: &str, oss: &str| {
        format!(
            r#"[cluster]
name = "l"
kind = "lustre"

[[repo]]
name = "lustre-server"
baseurl = "https://downloads.whamcloud.com/public/lustre/lustre-2.15.4/el8.9/{tree}/"
roles = ["mgs", "mds", "oss"]
gpgcheck = false

[packages]
{mgs}
{oss}

[[node]]
name = "mgs"
address = "10.0.0.4"
roles = ["mgs", "mds"]
disks = ["/dev/sdb"]

[[node]]
name = "oss"
address = "10.0.0.5"
roles = ["oss"]
disks = ["/dev/sdb"]

[lustre]
fsname = "lustre"
mount = "/mnt/lustre"
"#
        )
    };
    let kmods = r#""lustre", "kmod-lustre", "kmod-lustre-osd-ldiskfs", "lustre-osd-ldiskfs-mount""#;
    check(
        &file("server", &format!("mgs = [{kmods}]"), ""),
        expect![[r#"
            /etc/pvfs/cluster.toml:7:11: [[repo]] lustre-server is Whamcloud's server tree, whose kmod-lustre is built for the Lustre-patched kernel it carries, but [packages] mgs pins no kernel: pin it (kernel = "VERSION_lustre", as the tree names it) and let the servers boot into it, or, for the distribution's own kernel with no reboot, use the patchless tree: https://downloads.whamcloud.com/public/lustre/lustre-2.15.4/el8.9/patchless-ldiskfs-server/
            /etc/pvfs/cluster.toml:7:11: [[repo]] lustre-server is Whamcloud's server tree, whose kmod-lustre is built for the Lustre-patched kernel it carries, but [packages] oss pins no kernel: pin it (kernel = "VERSION_lustre", as the tree names it) and let the servers boot into it, or, for the distribution's own kernel with no reboot, use the patchless tree: https://downloads.whamcloud.com/public/lustre/lustre-2.15.4/el8.9/patchless-ldiskfs-server/
        "#]],
    );
    let patched = r#""kernel=4.18.0-513.9.1.el8_lustre""#;
    let pinned = |role: &str, kernel: &str| format!("{role} = [{kernel}, {kmods}]");
    check(
        &file("server", &pinned("mgs", patched), &pinned("oss", r#""kernel=4.18.0-513.9.1.el8_9""#)),
        expect![[r#"
            /etc/pvfs/cluster.toml:13:8: [packages] oss: kernel 4.18.0-513.9.1.el8_9 is not a Lustre-patched kernel, but [[repo]] lustre-server is Whamcloud's server tree, whose kmod-lustre is built for its patched kernel (VERSION_lustre): pin that kernel, or use the patchless tree https://downloads.whamcloud.com/public/lustre/lustre-2.15.4/el8.9/patchless-ldiskfs-server/
        "#]],
    );
    check(
        &file("patchless-ldiskfs-server", &pinned("mgs", patched), &format!("oss = [{kmods}]")),
        expect![[r#"
            /etc/pvfs/cluster.toml:12:8: [packages] mgs: kernel 4.18.0-513.9.1.el8_lustre is a Lustre-patched kernel, but [[repo]] lustre-server is Whamcloud's patchless tree, whose modules run on the distribution's own kernel: remove the kernel pin, or use the server tree for the patched kernel
        "#]],
    );
    // What agrees: the patched tree with its kernel, the patchless tree without one (or with
    // the distribution's kernel pinned), a client tree, a mirror of another layout.
    for (tree, mgs, oss) in [
        ("server", pinned("mgs", patched), pinned("oss", patched)),
        ("patchless-ldiskfs-server", String::new(), format!("oss = [{kmods}]")),
        ("patchless-ldiskfs-server", pinned("mgs", r#""kernel=4.18.0-513.5.1.el8_9""#), String::new()),
        ("client", String::new(), String::new()),
    ] {
        assert!(
            parse(Path::new("/etc/pvfs/cluster.toml"), &file(tree, &mgs, &oss)).is_ok(),
            "{tree} {mgs} {oss}"
        );
    }
    let mirror = file("server", "", "").replace("downloads.whamcloud.com/public", "mirror.example.com");
    assert!(parse(Path::new("/etc/pvfs/cluster.toml"), &mirror).is_ok());
}

/// BeeGFS 8 dropped what pvfs's BeeGFS plan runs (beegfs-setup-mgmtd, beegfs-ctl,
/// beegfs-check-servers): its repository or a pin to it is refused at its position.
#[test]
fn beegfs_8_is_refused_where_the_file_names_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("beegfs.auth"), "0123456789abcdef0123456789abcdef0123\n").unwrap();
    let path = dir.path().join("cluster.toml");
    let file = |release: &str, pins: &str| {
        format!(
            r#"[cluster]
name = "b"
kind = "beegfs"

[[repo]]
name = "beegfs"
baseurl = "https://www.beegfs.io/release/{release}/dists/rhel9"

[packages]
{pins}

[[node]]
name = "mgmt"
address = "10.0.0.4"
roles = ["mgmtd"]

[[node]]
name = "server"
address = "10.0.0.5"
roles = ["meta", "storage", "client"]

[beegfs]
mount = "/mnt/beegfs"
auth_secret = "beegfs.auth"
"#
        )
    };
    let errors = |src: String| match parse(&path, &src) {
        Ok(_) => String::new(),
        Err(err) => err.to_string(),
    };
    assert_eq!(errors(file("beegfs_7.4.6", r#"storage = ["beegfs-storage=7.4.6"]"#)), "");
    let shown = errors(file("beegfs_8.0", r#"storage = ["beegfs-storage=8.0.1", "xfsprogs=5.0"]"#));
    let lines: Vec<&str> = shown.lines().map(|l| l.split_once(": ").unwrap().1).collect();
    assert_eq!(
        lines,
        [
            "[[repo]] beegfs: this is BeeGFS 8's repository; pvfs sets up BeeGFS 7 (7.1 to 7.4): BeeGFS 8's packages have \
             no beegfs-setup-mgmtd, beegfs-ctl or beegfs-check-servers, which its plan runs: use a beegfs_7.x release \
             (https://www.beegfs.io/release/beegfs_7.4.6/…)",
            "[packages] storage: beegfs-storage 8.x is BeeGFS 8; pvfs sets up BeeGFS 7 (7.1 to 7.4): BeeGFS 8's packages \
             have no beegfs-setup-mgmtd, beegfs-ctl or beegfs-check-servers, which its plan runs",
        ],
        "{shown}"
    );
}

/// A glusterfs cluster of two servers and two clients, with `policy` appended.
fn with_policy(policy: &str) -> String {
    format!(
        r#"
[cluster]
name = "gv"
kind = "glusterfs"

[[node]]
name = "s1"
address = "10.0.0.1"
roles = ["server"]
disks = ["/dev/sdb"]

[[node]]
name = "c1"
address = "10.0.0.2"
roles = ["client"]

[[node]]
name = "both"
address = "10.0.0.3"
roles = ["server", "client"]
disks = ["/dev/sdb"]

[glusterfs]
volume = "gv0"
mount = "/mnt/gv0"
{policy}"#
    )
}

#[test]
fn a_policy_is_given_per_node_with_its_roles_tables_on_top() {
    let src = with_policy(
        r#"
[policy]
refuse_unsigned_repositories = true
data_roots = ["/data", "/mnt"]

[policy.role.client]
mpi_ssh = true
data_roots = ["/mnt"]

[policy.role.server]
faults = true
"#,
    );
    let c = parse(Path::new("/c/cluster.toml"), &src).unwrap();
    let server = c.policy_for(c.node("s1").unwrap()).unwrap();
    assert!(!server.mpi_ssh && server.refuse_unsigned_repositories && server.faults);
    assert!(server.render(Path::new("/c/cluster.toml"), "s1").ends_with("mpi_ssh = false\nfaults = true\n"));
    assert_eq!(server.data_roots.as_deref(), Some(&["/data".to_owned(), "/mnt".to_owned()][..]));
    let client = c.policy_for(c.node("c1").unwrap()).unwrap();
    assert!(client.mpi_ssh && client.refuse_unsigned_repositories && !client.faults);
    assert_eq!(client.data_roots.as_deref(), Some(&["/mnt".to_owned()][..]));
    // Only the keys a table sets are written; the file names where it came from.
    let text = client.render(Path::new("/c/cluster.toml"), "c1");
    expect![[r#"
        # pvfs-agent's policy for node c1, written by `pvfsctl bootstrap` from the [policy] of
        # /c/cluster.toml. Change it there and run bootstrap again: an edit here is replaced.
        data_roots = ["/mnt"]
        services = []
        refuse_unsigned_repositories = true
        mpi_ssh = true
    "#]]
    .assert_eq(&text);
    // No [policy]: none, and bootstrap leaves the node's own file alone.
    let plain = parse(Path::new("/c/cluster.toml"), &with_policy("")).unwrap();
    assert_eq!(plain.policy_for(plain.node("c1").unwrap()), None);
}

#[test]
fn policy_mistakes_are_named_at_their_line() {
    check(
        &with_policy(
            r#"
[policy]
data_roots = ["/etc/pvfs", "relative"]
devices = ["sda"]
nonsense = 1

[policy.role.oss]
mpi_ssh = true

[policy.role.clients]
mpi_ssh = true

[policy.role.server]
kinds = ["packages"]

[policy.role.client]
kinds = ["mount"]
"#,
        ),
        expect![[r#"
            /etc/pvfs/cluster.toml:28:15: [policy] data_roots "/etc/pvfs" is a system tree: a data root must be outside /etc, /usr, /boot …
            /etc/pvfs/cluster.toml:28:28: [policy] data_roots "relative" is not an absolute path: give an absolute path without `.`/`..` components, `//` or a trailing `/`
            /etc/pvfs/cluster.toml:29:12: [policy] devices "sda" is not absolute: name a block device by its canonical path under /dev, e.g. /dev/disk/azure/scsi1/lun0
            /etc/pvfs/cluster.toml:30:1: unknown key `nonsense` in [policy]; expected one of: kinds, devices, data_roots, repositories, services, refuse_unsigned_repositories, mpi_ssh, faults, role
            /etc/pvfs/cluster.toml:32:1: [policy.role.oss]: a glusterfs cluster has no oss nodes; its roles are server, client
            /etc/pvfs/cluster.toml:35:1: [policy.role.clients]: unknown role "clients"; roles are mgs, mds, oss, server, mgmtd, meta, storage, client
            /etc/pvfs/cluster.toml:38:1: node both has roles server and client, whose [policy.role.*] tables set `kinds` differently: set it in one of them, or in [policy] for both
        "#]],
    );
}

#[test]
fn the_firewall_is_opened_unless_the_file_says_to_leave_it() {
    let cluster = |line: &str| {
        format!(
            "[cluster]\nname = \"x\"\nkind = \"glusterfs\"\n{line}\n[[node]]\nname = \"s\"\naddress = \"10.0.0.4\"\nroles = [\"server\"]\ndisks = [\"/dev/sdc\"]\n[glusterfs]\nvolume = \"gv0\"\nmount = \"/mnt/gluster\"\n"
        )
    };
    let firewall = |line: &str| parse(Path::new("/c.toml"), &cluster(line)).unwrap().firewall;
    assert_eq!(firewall(""), crate::Firewall::Open);
    assert_eq!(firewall("firewall = \"open\""), crate::Firewall::Open);
    assert_eq!(firewall("firewall = \"leave\""), crate::Firewall::Leave);
    check(
        &cluster("firewall = \"off\""),
        expect![[r#"
            /etc/pvfs/cluster.toml:4:12: firewall = "off": use "open" (pvfs opens the file system's ports in firewalld) or "leave" (pvfs changes no firewall)
        "#]],
    );
}
