//! `pvfsctl validate`.

use crate::util::{TestDir, text};

#[test]
fn a_bad_cluster_file_yields_all_its_errors_with_positions_and_exit_2() {
    let dir = TestDir::new();
    dir.write(
        "bad.toml",
        "[cluster]\nname = \"c\"\nkind = \"beegfs\"\n[beegfs]\nmount = \"/mnt/beegfs\"\n\
         [[node]]\nname = \"a\"\naddress = \"10.0.0.1\"\nroles = [\"oss\"]\n\
         [[node]]\nname = \"a\"\naddress = \"10.0.0.1:7x\"\nroles = [\"meta\"]\nsize = 3\n",
    );
    let out = dir.ctl(&["validate", "bad.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    for want in [
        "bad.toml:9:10: role \"oss\" is not valid for kind beegfs: use mgmtd, meta, storage, client",
        "bad.toml:11:8: duplicate node name \"a\" (first defined on line 7)",
        "bad.toml:12:11: cannot parse address \"10.0.0.1:7x\"",
        "bad.toml:14:1: unknown key `size` in [[node]]",
        "bad.toml:3:8: a beegfs cluster needs one node with role \"mgmtd\"",
        "bad.toml:3:8: a beegfs cluster needs at least one node with role \"storage\"",
        "bad.toml:5:9: [beegfs]: BeeGFS 7.3 and later refuse to start without connection authentication",
        "7 errors found",
    ] {
        assert!(stderr.contains(want), "missing {want:?} in:\n{stderr}");
    }
    assert!(out.stdout.is_empty());

    let json = dir.ctl(&["validate", "bad.toml", "--json"]);
    assert_eq!(json.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["valid"], false);
    assert_eq!(v["errors"].as_array().unwrap().len(), 7);
    assert_eq!(v["errors"][0]["line"], 3);
}

#[test]
fn a_good_cluster_file_is_ok() {
    let dir = TestDir::new();
    let path = crate::util::cluster_file(&dir, &[("n1", "10.0.0.1".into()), ("n2", "10.0.0.2:7071".into())]);
    let out = dir.ctl(&["validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("ok (local cluster \"t\", 2 nodes)"));
}

#[test]
fn a_missing_file_is_named() {
    let dir = TestDir::new();
    let out = dir.ctl(&["validate", "nope.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot read cluster file nope.toml"), "{}", text(&out.stderr));
}

/// Values that would reach a file or a command line on a node as an injection (issue 12,
/// finding 2) are refused with their position and exit 2, where they used to pass.
#[test]
fn injectable_values_are_refused_with_positions() {
    let dir = TestDir::new();
    dir.write(
        "inject.toml",
        "[cluster]\nname = \"g\"\nkind = \"glusterfs\"\n\
         [packages]\nserver = [\"-oDPkg::Pre-Invoke::=id\"]\n\
         [[repo]]\nname = \"r\"\nbaseurl = \"https://example.com/\\n[evil]\"\n\
         [[node]]\nname = \"s1\"\naddress = \"10.0.0.1\"\nroles = [\"server\"]\ndisks = [\"/dev/../etc/shadow\", \"/dev/sdc\"]\n\
         [glusterfs]\nvolume = \"gv0\"\nmount = \"/mnt/gv0\"\n\
         [glusterfs.brick]\nmount_options = \"defaults\\n/dev/sdz /etc xfs\"\n\
         lvm = { vg = \"-ffy\", pool = \"p\", lv = \"lv\\nx\", pool_size = \"95%FREE\", virtual_size = \"1t\" }\n",
    );
    let out = dir.ctl(&["validate", "inject.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    for want in [
        "inject.toml:5:11: [packages] server: \"-oDPkg::Pre-Invoke::\" is not a package name",
        "inject.toml:8:11: baseurl \"https://example.com/\\n[evil]\" holds '\\n'",
        "inject.toml:13:10: disk \"/dev/../etc/shadow\" has a `.` or `..` component",
        "inject.toml:18:17: [glusterfs.brick]: mount option \"defaults\\n/dev/sdz /etc xfs\" holds a character fstab cannot carry",
        "inject.toml:19:14: [glusterfs.brick]: LVM volume group name \"-ffy\"",
        "inject.toml:19:39: [glusterfs.brick]: LVM logical volume name \"lv\\nx\"",
        "6 errors found",
    ] {
        assert!(stderr.contains(want), "missing {want:?} in:\n{stderr}");
    }
}

/// A mistyped `[cluster]` header is named as such (not "missing [cluster] section"), and the
/// section's own errors are shown in the same run.
#[test]
fn a_mistyped_cluster_header_is_named_with_its_errors() {
    let dir = TestDir::new();
    dir.write(
        "typo.toml",
        "[clustr]\nname = \"c\"\nkind = \"lustr\"\n[[node]]\nname = \"a\"\naddress = \"10.0.0.1\"\nroles = [\"client\"]\n",
    );
    let out = dir.ctl(&["validate", "typo.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("typo.toml:1:2: unknown section [clustr]; did you mean [cluster]?"), "{stderr}");
    assert!(stderr.contains("typo.toml:3:8: unknown kind \"lustr\""), "{stderr}");
    assert!(!stderr.contains("missing [cluster] section"), "{stderr}");
}

/// A type error (schema) and a bad address, an unknown role and a duplicate name (semantic)
/// are all reported by one run.
#[test]
fn schema_and_semantic_errors_come_in_one_run() {
    let dir = TestDir::new();
    dir.write(
        "both.toml",
        "[cluster]\nname = \"c\"\nkind = \"local\"\n[local]\nmount = \"/mnt/l\"\n\
         [[node]]\nname = \"a\"\naddress = \"10.0.0.1\"\nroles = [\"server\"]\nid = \"x\"\n\
         [[node]]\nname = \"b\"\naddress = \"10.0.0.300\"\nroles = [\"sever\"]\n\
         [[node]]\nname = \"b\"\naddress = \"10.0.0.3\"\nroles = [\"client\"]\n",
    );
    let out = dir.ctl(&["validate", "both.toml", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors: Vec<String> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{}:{}: {}", e["line"], e["column"], e["message"].as_str().unwrap()))
        .collect();
    assert_eq!(
        errors,
        [
            "10:6: invalid type: string \"x\", expected u32",
            "13:11: cannot parse address \"10.0.0.300\": \"10.0.0.300\" is not a valid IPv4 address (four numbers from 0 to 255)",
            "14:10: unknown role \"sever\": roles are mgs, mds, oss, server, mgmtd, meta, storage, client; did you mean \"server\"?",
            "16:8: duplicate node name \"b\" (first defined on line 12)",
        ]
    );
}

/// The Azure example is valid before `provision` has given its nodes addresses; the nodes
/// still without one are counted. Its key is read from `~/.ssh`, here the test's HOME.
#[test]
fn the_azure_example_is_valid_before_provisioning() {
    let dir = TestDir::new();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../config/lustre-azure.toml");
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let validate = |json: bool| {
        let mut cmd = dir.command(&crate::util::pvfsctl());
        cmd.env("HOME", &home).args(["validate", example]);
        if json {
            cmd.arg("--json");
        }
        cmd.output().unwrap()
    };
    // Without the key the file names, it is an error at that line.
    let out = validate(false);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("lustre-azure.toml:24:23: cannot read ssh_public_key_file")
            && stderr.contains("/home/.ssh/id_ed25519.pub"),
        "{stderr}"
    );
    std::fs::write(
        home.join(".ssh/id_ed25519.pub"),
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINAgQPdA2fgB2gs++YENv63NBcKieyO71BfY/pmWwXdD pvfs-test\n",
    )
    .unwrap();
    let out = validate(false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "ok (lustre cluster \"lustrefs\", 7 nodes; 7 without an address until `pvfsctl provision"
        ),
        "{stdout}"
    );
    let v: serde_json::Value = serde_json::from_slice(&validate(true).stdout).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["unaddressed"].as_array().unwrap().len(), 7);
    assert_eq!(v["unaddressed"][0], "mgsmds00");
}

/// Issue 24, item 9: `validate /dev/zero` read until the machine ran out of memory, and a
/// FIFO made it wait forever. Every command that loads a cluster file reads only a regular file
/// of at most 64 MiB, and says which file and why, exit 2, before reading any of it.
#[test]
fn devices_fifos_and_huge_files_are_refused_as_cluster_files_at_once() {
    let dir = TestDir::new();
    let fifo = dir.path().join("cluster.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    // Sparse: 65 MiB long, nothing written.
    std::fs::File::create(dir.path().join("huge.toml")).unwrap().set_len(65 << 20).unwrap();
    let limit = std::time::Duration::from_secs(30);
    for (args, want) in [
        (
            vec!["validate", "/dev/zero"],
            "error: /dev/zero is a character device, not a regular file: pvfs reads a cluster file only from a \
             regular file; save it to a file and give that",
        ),
        (
            vec!["validate", "cluster.fifo"],
            "error: cluster.fifo is a FIFO (named pipe), not a regular file: pvfs reads a cluster file only from a \
             regular file",
        ),
        (
            vec!["validate", "huge.toml"],
            "error: huge.toml is 65 MiB, more than the 64 MiB that a cluster file may be: is it the right file?",
        ),
        (vec!["validate", "."], "error: . is a directory, not a regular file"),
        // The loader every command uses.
        (vec!["nodes", "cluster.fifo"], "error: cluster.fifo is a FIFO (named pipe), not a regular file"),
        (vec!["up", "/dev/zero", "--plan"], "error: /dev/zero is a character device, not a regular file"),
    ] {
        let out = dir.ctl_within(limit, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).starts_with(want), "{args:?}: {}", text(&out.stderr));
    }
}

#[test]
fn a_policy_the_agent_would_refuse_is_an_error_at_its_table() {
    let dir = TestDir::new();
    let path = crate::util::cluster_file(&dir, &[("n1", "10.0.0.1".into())]);
    let mut text_of = std::fs::read_to_string(&path).unwrap();
    let line = text_of.lines().count() + 2;
    text_of +=
        "\n[policy]\nkinds = [\"mount\", \"format\"]\nrepositories = [\"https://mirror.example.com\"]\n";
    std::fs::write(&path, text_of).unwrap();
    let out = dir.ctl(&["validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    for want in [
        format!(":{line}:1: [policy] kinds[1]: unknown step kind \"format\""),
        format!(":{line}:1: [policy] repositories[0]: \"https://mirror.example.com\" must be a URL prefix"),
        "2 errors found".to_owned(),
    ] {
        assert!(stderr.contains(&want), "missing {want:?} in:\n{stderr}");
    }
    let json = dir.ctl(&["validate", path.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!((v["valid"].clone(), v["errors"].as_array().unwrap().len()), (false.into(), 2));
}
