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
