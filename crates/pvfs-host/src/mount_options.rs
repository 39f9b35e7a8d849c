//! Which mount options pvfs never writes to fstab or passes to `mount`: those that make a
//! mount read or write other files, bring in another device, or run or pull in programs and
//! units, and those that let users other than root mount and unmount it.
//!
//! Both the cluster-file validator (with file:line:col) and the agent's policy (on every mount
//! step it is sent) ask this, so the list lives in one place; it sits in `pvfs-host` for the
//! reason `mkfs_options` does (the config crate cannot depend on `pvfs-steps`).

/// Option keys (the part before any `=`) refused outright.
const REFUSED: &[&str] = &[
    "helper",
    "logdev",
    "rtdev",
    "journal_path",
    "journal_dev",
    "log-file",
    "dump-fuse",
    "context",
    "fscontext",
    "defcontext",
    "rootcontext",
    "x-systemd.requires",
    "x-systemd.requires-mounts-for",
    "x-systemd.wants",
    "x-systemd.before",
    "x-systemd.after",
    "x-systemd.wanted-by",
    "x-systemd.required-by",
    "x-systemd.makefs",
    "x-systemd.growfs",
    "comment",
    // mount(8): `user`/`users` let any user mount (and, with `users`, unmount) the fstab line;
    // `owner`/`group` the device's owner or group. A mount pvfs makes is root's alone: a user
    // who can mount it can mount it elsewhere, or unmount it under a running benchmark.
    "user",
    "users",
    "owner",
    "group",
];

/// Whether the option `key` (before any `=`) is refused: the list above, and every
/// `x-systemd.*` key but the timeouts and `x-systemd.automount` (systemd.mount(5): the others
/// order or pull in units, or format and grow the device).
pub fn is_refused(key: &str) -> bool {
    REFUSED.contains(&key)
        || (key.starts_with("x-systemd.") && !key.ends_with("timeout") && key != "x-systemd.automount")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_that_bring_in_files_devices_or_units_are_refused() {
        for key in ["helper", "logdev", "x-systemd.requires", "x-systemd.makefs", "context", "users", "owner"]
        {
            assert!(is_refused(key), "{key}");
        }
        for key in
            ["noatime", "_netdev", "x-systemd.automount", "x-systemd.mount-timeout", "inode64", "nouser"]
        {
            assert!(!is_refused(key), "{key}");
        }
    }
}
