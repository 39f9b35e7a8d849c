//! One grammar: a value the cluster-file validator accepts is one the agent's policy accepts,
//! and a value the policy refuses the validator refuses first. Random values go into the
//! fields that reach a command line or a file on a node — a disk, a package pin, a target's
//! mount options, an LVM name — and through both: `pvfs_config::parse`, then the built-in
//! policy's rules on every unit of the plan (what the agent checks before anything runs).

use proptest::prelude::*;
use std::path::Path;

/// Characters that make the grammar's cases: path separators, dots, option dashes, the
/// separators of fstab and TOML, quotes, controls, and plain letters.
fn word() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            4 => proptest::char::range('a', 'f'),
            2 => Just('/'),
            2 => Just('.'),
            2 => Just('-'),
            1 => Just('_'),
            1 => Just('='),
            1 => Just(','),
            1 => Just(' '),
            1 => Just('#'),
            1 => Just(':'),
            1 => Just('\n'),
            1 => Just('\t'),
            1 => Just('+'),
            1 => Just('~'),
            1 => Just('0'),
        ],
        0..24,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

/// Half the time a well-formed value, so that most cases have all fields but one or two
/// valid and the file is accepted often enough to test the policy's side.
fn or_good(good: &'static str, random: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    prop_oneof![Just(good.to_owned()), random]
}

fn device() -> impl Strategy<Value = String> {
    or_good("/dev/sdc", prop_oneof![word(), word().prop_map(|w| format!("/dev/{w}"))])
}

fn cluster(disk: &str, pin: &str, options: &str, vg: &str) -> String {
    let q = |s: &str| toml_string(s);
    format!(
        r#"
[cluster]
name = "g"
kind = "glusterfs"

[[node]]
name = "s1"
address = "10.0.0.1"
roles = ["server"]
disks = [{disk}]

[[node]]
name = "c1"
address = "10.0.0.2"
roles = ["client"]

[glusterfs]
volume = "gv0"
mount = "/mnt/gv0"

[glusterfs.brick]
mount_options = {options}
lvm = {{ vg = {vg}, pool = "pool", lv = "lv", pool_size = "100%FREE", virtual_size = "10g" }}

[packages]
server = [{pin}]
"#,
        disk = q(disk),
        pin = q(&format!("glusterfs-server={pin}")),
        options = q(options),
        vg = q(vg),
    )
}

/// `s` as a TOML basic string, whatever it holds.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn what_validate_accepts_the_agents_policy_accepts(
        disk in device(),
        pin in or_good("10.3-1", word()),
        options in or_good("defaults,noatime", word().prop_map(|w| format!("defaults,{w}"))),
        vg in or_good("vg_gluster", word()),
    ) {
        let text = cluster(&disk, &pin, &options, &vg);
        if let Ok(cluster) = pvfs_config::parse(Path::new("/c/cluster.toml"), &text) {
            let policy = pvfs_policy::Policy::default();
            for unit in crate::plan(&cluster).units {
                if let Err(refused) = policy.check_unit(&unit.steps) {
                    prop_assert!(false, "validate accepted {text}\nbut the policy refuses unit {}: {}", unit.label, refused.error);
                }
            }
        }
    }
}

/// The forms both must accept are accepted: the property above is not passing by refusing
/// everything.
#[test]
fn well_formed_values_pass_both() {
    let text = cluster("/dev/sdc", "10.3-1", "defaults,noatime", "vg_gluster");
    let cluster = pvfs_config::parse(Path::new("/c/cluster.toml"), &text).unwrap();
    for unit in crate::plan(&cluster).units {
        pvfs_policy::Policy::default().check_unit(&unit.steps).unwrap();
    }
}
