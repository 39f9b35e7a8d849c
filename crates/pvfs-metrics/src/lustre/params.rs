//! Lustre's parameters found where `lctl get_param` finds them, so the agent reads the kernel's
//! files directly instead of running lctl every second.
//!
//! lctl turns `obdfilter.*.stats` into the path `obdfilter/*/stats` and globs it under each of
//! the trees Lustre has used (libcfs/libcfs/util/param.c, `cfs_get_param_paths`), in this order:
//! sysfs (`/sys/fs/{lnet,lustre}`: one-value parameters since 2.9–2.12), debugfs
//! (`/sys/kernel/debug/{lnet,lustre}`: some multi-line ones since 2.12, `brw_stats` in 2.15),
//! then procfs (`/proc/{fs,sys}/{lnet,lustre}`: stats, job_stats, recovery_status, and every
//! parameter before those moves). A parameter found in two trees is the first tree's, as lctl
//! prints it once. Unlike lctl, nothing is mounted: a debugfs that is not mounted is not read.

use pvfs_host::Root;

/// The trees lctl looks in, in its order.
pub const TREES: [&str; 8] = [
    "/sys/fs/lnet",
    "/sys/fs/lustre",
    "/sys/kernel/debug/lnet",
    "/sys/kernel/debug/lustre",
    "/proc/fs/lnet",
    "/proc/fs/lustre",
    "/proc/sys/lnet",
    "/proc/sys/lustre",
];

/// Whether any of Lustre's trees exists: a node without Lustre's modules has none, and is not
/// looked at further.
pub fn present(root: &Root) -> bool {
    ["/sys/fs/lustre", "/proc/fs/lustre"].iter().any(|t| root.is_dir(t))
}

/// A parameter and the file that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Dotted, as lctl names it: `obdfilter.fs-OST0000.stats`.
    pub name: String,
    /// The host path: `/proc/fs/lustre/obdfilter/fs-OST0000/stats`.
    pub path: String,
}

/// The parameters matching `pattern` (dotted components, each a name or a glob of `*`), in
/// lctl's order: tree by tree, names sorted within a directory; each name once.
pub fn find(root: &Root, pattern: &str) -> Vec<Found> {
    find_in(root, &trees(root), pattern)
}

/// Which of lctl's trees exist on this node, in its order: looked at once for many patterns
/// ([`find_in`]), rather than once per pattern (most nodes have two or three of the eight).
pub fn trees(root: &Root) -> Vec<&'static str> {
    TREES.into_iter().filter(|t| root.is_dir(t)).collect()
}

/// [`find`] within `trees` (from [`trees`]).
pub fn find_in(root: &Root, trees: &[&str], pattern: &str) -> Vec<Found> {
    let parts: Vec<&str> = pattern.split('.').collect();
    let mut found: Vec<Found> = Vec::new();
    for tree in trees {
        let mut here = Vec::new();
        walk(root, tree, &parts, &mut Vec::new(), &mut here);
        for f in here {
            if !found.iter().any(|seen| seen.name == f.name) {
                found.push(f);
            }
        }
    }
    found
}

/// Reads a found parameter's value; `None` when it went away since it was found (a target
/// unmounted between the two), or cannot be read.
pub fn read(root: &Root, found: &Found) -> Option<String> {
    root.read_to_string(&found.path).ok()
}

fn walk(root: &Root, dir: &str, parts: &[&str], names: &mut Vec<String>, out: &mut Vec<Found>) {
    let Some((part, rest)) = parts.split_first() else { return };
    let entries = if part.contains('*') {
        match root.list_dir(dir) {
            Ok(entries) => entries.into_iter().filter(|e| matches(part, e)).collect(),
            Err(_) => return,
        }
    } else {
        vec![(*part).to_owned()]
    };
    for entry in entries {
        let path = format!("{dir}/{entry}");
        names.push(entry);
        if rest.is_empty() {
            if root.path(&path).is_file() {
                out.push(Found { name: names.join("."), path });
            }
        } else if root.is_dir(&path) {
            walk(root, &path, rest, names, out);
        }
        names.pop();
    }
}

/// Whether a dotted parameter name matches a pattern of [`find`]'s, component by component
/// (`obdfilter.fs-OST0000.stats` matches `obdfilter.*.stats`).
pub fn name_matches(pattern: &str, name: &str) -> bool {
    let (mut globs, mut parts) = (pattern.split('.'), name.split('.'));
    loop {
        match (globs.next(), parts.next()) {
            (None, None) => return true,
            (Some(glob), Some(part)) if matches(glob, part) => {}
            _ => return false,
        }
    }
}

/// Whether `name` matches `glob`, whose only special character is `*` (any run of characters,
/// none included). Written out: the patterns are this crate's own, and a glob crate would
/// walk paths itself, outside [`Root`].
fn matches(glob: &str, name: &str) -> bool {
    let mut pieces = glob.split('*');
    let first = pieces.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else { return false };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else { return rest.is_empty() };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_matches_as_lctls_does() {
        assert!(matches("*", "fs-OST0000"));
        assert!(matches("osd-*", "osd-ldiskfs"));
        assert!(!matches("osd-*", "mdt"));
        assert!(matches("*OST*", "fs-OST0001"));
        assert!(!matches("*OST*", "fs-MDT0000"));
        assert!(matches("stats", "stats"));
        assert!(!matches("stats", "md_stats"));
        assert!(matches("a*b*c", "abc") && matches("a*b*c", "axxbyyc") && !matches("a*b*c", "acb"));
        assert!(!matches("ab*ba", "aba"), "the ends may not overlap");
        assert!(name_matches("obdfilter.*.stats", "obdfilter.fs-OST0000.stats"));
        assert!(!name_matches("obdfilter.*.stats", "obdfilter.fs-OST0000.exports.10.0.0.1@tcp.stats"));
        assert!(!name_matches("obdfilter.*.stats", "obdfilter.fs-OST0000"));
        assert!(name_matches("health_check", "health_check"));
    }

    /// A 2.15 server's layout: one-value parameters in sysfs, stats in procfs, brw_stats in
    /// debugfs; a parameter in two trees is sysfs's, as lctl prints it.
    #[test]
    fn parameters_are_found_tree_by_tree_and_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let put = |path: &str, text: &str| {
            let at = root.path(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        };
        assert!(!present(&root));
        put("/sys/fs/lustre/osd-ldiskfs/fs-OST0000/kbytesfree", "100\n");
        put("/proc/fs/lustre/osd-ldiskfs/fs-OST0000/kbytesfree", "99\n");
        put("/sys/fs/lustre/osd-zfs/fs-OST0001/kbytesfree", "200\n");
        put("/proc/fs/lustre/obdfilter/fs-OST0000/stats", "snapshot_time 1.5 secs.nsecs\n");
        put("/proc/fs/lustre/obdfilter/fs-OST0000/exports/10.0.0.1@tcp/stats", "x\n");
        put("/sys/kernel/debug/lustre/osd-ldiskfs/fs-OST0000/brw_stats", "b\n");
        put("/sys/fs/lustre/health_check", "healthy\n");
        assert!(present(&root));

        let free = find(&root, "osd-*.*.kbytesfree");
        assert_eq!(
            free.iter().map(|f| (f.name.as_str(), f.path.as_str())).collect::<Vec<_>>(),
            [
                ("osd-ldiskfs.fs-OST0000.kbytesfree", "/sys/fs/lustre/osd-ldiskfs/fs-OST0000/kbytesfree"),
                ("osd-zfs.fs-OST0001.kbytesfree", "/sys/fs/lustre/osd-zfs/fs-OST0001/kbytesfree"),
            ]
        );
        assert_eq!(read(&root, &free[0]).as_deref(), Some("100\n"));
        let names = |pattern| find(&root, pattern).into_iter().map(|f| f.name).collect::<Vec<_>>();
        assert_eq!(names("obdfilter.*.stats"), ["obdfilter.fs-OST0000.stats"]);
        assert_eq!(names("obdfilter.*.exports.*.stats"), ["obdfilter.fs-OST0000.exports.10.0.0.1@tcp.stats"]);
        assert_eq!(names("osd-*.*.brw_stats"), ["osd-ldiskfs.fs-OST0000.brw_stats"]);
        assert_eq!(names("health_check"), ["health_check"]);
        // A directory is not a parameter; nothing matches nothing.
        assert!(names("obdfilter.*").is_empty());
        assert!(names("mdt.*.md_stats").is_empty());
    }
}
