//! mountinfo read from real kernels' outputs (`testdata/mountinfo/`, each file citing where it
//! was published), and the cases the Mount step and the device proof depend on.

use super::*;

/// A fixture without its `#` header (the citation).
fn fixture(name: &str) -> String {
    let path = format!("{}/testdata/mountinfo/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
    text.lines().filter(|l| !l.starts_with('#')).map(|l| format!("{l}\n")).collect()
}

fn dev(major: u32, minor: u32) -> DevNum {
    DevNum { major, minor }
}

#[test]
fn the_kernel_documentation_example() {
    let mounts = parse(&fixture("proc-rst.txt")).unwrap();
    assert_eq!(
        mounts,
        [MountInfo {
            id: 36,
            parent: 35,
            dev: dev(98, 0),
            root: "/mnt1".into(),
            mount_point: "/mnt2".into(),
            options: "rw,noatime".into(),
            optional: vec!["master:1".into()],
            fstype: "ext3".into(),
            source: "/dev/root".into(),
            super_options: "rw,errors=continue".into(),
        }]
    );
    assert!(!mounts[0].is_whole(), "a bind mount of /mnt1");
}

#[test]
fn el7_3_10_tables_read_whole() {
    for name in ["el7-centos7.2.txt", "el7-centos7-hw.txt"] {
        let text = fixture(name);
        let mounts = parse(&text).unwrap();
        assert_eq!(mounts.len(), text.lines().count(), "{name}");
        let sys = visible_at(&mounts, "/sys").unwrap();
        assert_eq!((sys.fstype.as_str(), sys.source.as_str()), ("sysfs", "sysfs"), "{name}");
        assert!(sys.optional[0].starts_with("shared:"), "{name}");
        let cgroup = visible_at(&mounts, "/sys/fs/cgroup/systemd").unwrap();
        assert!(cgroup.super_options.contains("release_agent=/usr/lib/systemd/systemd-cgroups-agent"));
        assert_eq!(visible_at(&mounts, "/mnt/gv0"), None, "{name}");
    }
}

#[test]
fn util_linux_test_table_with_an_empty_source() {
    let mounts = parse(&fixture("util-linux-tests.txt")).unwrap();
    let home = visible_at(&mounts, "/home/kzak").unwrap();
    assert_eq!((home.dev, home.source.as_str()), (dev(253, 0), "/dev/mapper/kzak-home"));
    let gvfs = visible_at(&mounts, "/home/kzak/.gvfs").unwrap();
    assert_eq!(gvfs.fstype, "fuse.gvfs-fuse-daemon");
    let empty = visible_at(&mounts, "/mnt/test").unwrap();
    assert_eq!(
        (empty.fstype.as_str(), empty.source.as_str(), empty.super_options.as_str()),
        ("tmpfs", "", "rw")
    );
    // Two autofs triggers with the real mount on top (the kernel lists the trigger first).
    assert_eq!(visible_at(&mounts, "/dev/hugepages").unwrap().fstype, "hugetlbfs");
    assert_eq!(visible_at(&mounts, "/dev/mqueue").unwrap().fstype, "mqueue");
}

#[test]
fn bind_mounts_keep_the_directory_they_show() {
    let mounts = parse(&fixture("bind-mounts-fedora31.txt")).unwrap();
    let yum = visible_at(&mounts, "/var/cache/yum").unwrap();
    assert_eq!(yum.dev, dev(253, 0));
    assert_eq!(yum.root, "/var/cache/mock/fedora-31-ppc64le/yum_cache");
    assert!(!yum.is_whole());
    assert!(visible_at(&mounts, "/sys").unwrap().is_whole());
}

#[test]
fn of_stacked_mounts_the_top_one_is_visible() {
    let mounts = parse(&fixture("overmount-lxc.txt")).unwrap();
    let sys = visible_at(&mounts, "/sys").unwrap();
    assert_eq!((sys.id, sys.options.as_str()), (254, "ro,nosuid,nodev,noexec,relatime"));
    // Listed in another order, the parent link still names the top one.
    let reversed: Vec<MountInfo> = mounts.iter().rev().cloned().collect();
    assert_eq!(visible_at(&reversed, "/sys").unwrap().id, 254);
    let root = visible_at(&mounts, "/").unwrap();
    assert_eq!((root.dev, root.source.as_str()), (dev(0, 17), "/dev/sda2"), "btrfs: an anonymous device");
    assert_eq!(
        visible_at(&mounts, "/dev/").unwrap().source,
        "none",
        "a trailing slash is the same directory"
    );
}

#[test]
fn escapes_and_a_removed_mount_point() {
    // The kernel escapes space, tab, newline and backslash (fs/proc_namespace.c, mangle()), and
    // appends " (deleted)" to a mount point whose directory was removed (d_path).
    let text = "36 35 98:0 / /mnt/my\\040brick rw - xfs /dev/md0 rw\n\
                37 35 0:50 / /mnt/gv0\\040(deleted) rw - fuse.glusterfs 10.254.0.1:/gv0 rw\n";
    let mounts = parse(text).unwrap();
    assert_eq!(visible_at(&mounts, "/mnt/my brick").unwrap().source, "/dev/md0");
    assert_eq!(visible_at(&mounts, "/mnt/gv0"), None, "a stale entry is not a mount on /mnt/gv0");
    assert_eq!(mounts[1].mount_point, "/mnt/gv0 (deleted)");
    assert_eq!(unescape("a\\011b\\134c\\9"), "a\tb\\c\\9");
}

#[test]
fn a_line_not_in_the_kernels_format_is_an_error_naming_it() {
    for (text, problem) in [
        ("36 35 98:0 / /mnt rw shared:1 ext3 /dev/root rw\n", "no ` - ` separator"),
        ("x 35 98:0 / /mnt rw - ext3 /dev/root rw\n", "mount ID is not a number"),
        ("36 35 98 / /mnt rw - ext3 /dev/root rw\n", "device number is not MAJOR:MINOR"),
        ("36 35 98:0 / /mnt rw -\n", "no file system type"),
        ("36 35 98:0 / /mnt rw - ext3\n", "no source"),
    ] {
        let text = format!("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n{text}");
        let err = parse(&text).unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with("/proc/self/mountinfo line 2: "), "{shown}");
        assert!(shown.contains(problem), "{shown}");
    }
}

#[test]
fn read_goes_through_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::at(dir.path());
    assert!(matches!(read(&root), Err(MountinfoError::Read(_))));
    std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
    std::fs::write(dir.path().join("proc/self/mountinfo"), fixture("proc-rst.txt")).unwrap();
    assert_eq!(read(&root).unwrap()[0].mount_point, "/mnt2");
}
