//! Fuzzing the mountinfo reader: mutated real tables (`testdata/mountinfo`, the kernel's and
//! util-linux's test files) and random bytes never make it panic, every error names a line of
//! the text, and the work grows linearly with the table.

use super::{MountinfoError, parse};
use crate::testing::fuzz::{self, config, mutated, random_text, repeated};
use proptest::prelude::*;

/// Lines that steer the reader into its corners: missing fields, no separator, escapes at the
/// end of a field, numbers out of range, and what a broken /proc might show.
const HOSTILE: &[&str] = &[
    "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
    "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:2 unbindable",
    "36 35 98:0 / /a\\040b\\ rw - xfs  rw",
    "36 35 98:0 / /x\\04 rw - - - -",
    "4294967296 0 0:0 / / rw - tmpfs tmpfs rw",
    "1 1 -1:-1 / / rw - x y z",
    "1 1 4294967295:4294967295 / / rw - lustre 10.0.0.4@tcp:/LustreFS rw",
    "1 1 0:1 / / rw -",
    " - ",
    "-",
    "\\134\\134\\134",
    "\u{feff}\u{202e}\u{0}\r",
    "",
];

fn check(text: &str) -> Result<(), TestCaseError> {
    match parse(text) {
        Ok(mounts) => {
            let lines = text.lines().filter(|l| !l.is_empty()).count();
            prop_assert_eq!(mounts.len(), lines, "a line read as no mount, or as two");
        }
        Err(MountinfoError::Line { line, .. }) => {
            prop_assert!(line >= 1 && line <= text.lines().count(), "line {} outside the text", line);
        }
        Err(other) => return Err(TestCaseError::fail(format!("parse cannot fail to read: {other}"))),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Never a panic; every line is a mount or an error naming it.
    #[test]
    fn fuzz_mountinfo_mutated_tables(
        text in mutated(fuzz::corpus(env!("CARGO_MANIFEST_DIR"), "testdata/mountinfo", &["txt"]), HOSTILE)
    ) {
        check(&text)?;
    }

    #[test]
    fn fuzz_mountinfo_random_bytes(text in random_text()) {
        check(&text)?;
    }
}

/// Allocations made parsing `text`: deterministic, and what a pass rescanning earlier lines
/// (or copying the table per line) would show growing faster than the table.
fn work(text: &str) -> (u64, u64) {
    let info = allocation_counter::measure(|| {
        let _ = parse(text);
    });
    (info.count_total, info.bytes_total)
}

/// Linear work: a table 16 times as long costs at most ~16 times as much, read whole or
/// refused at its last line.
#[test]
fn fuzz_mountinfo_work_is_linear() {
    let lines = [
        "22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw",
        "87 60 0:45 / /mnt/gv0 rw,relatime shared:71 - fuse.glusterfs 10.254.0.1:/gv0 rw,user_id=0,group_id=0",
        "120 28 9:0 / /mnt/ost0 rw,relatime shared:80 - lustre /dev/md0 ro,svname=LustreFS-OST0000",
    ];
    for bad in ["", "1 1 0:1 / / rw no-separator\n"] {
        let (count1, bytes1) = work(&(repeated(&lines, 1000) + bad));
        let (count16, bytes16) = work(&(repeated(&lines, 16_000) + bad));
        assert!(count1 > 0, "allocation-counter is not the global allocator");
        assert!(count16 <= 20 * count1, "{count1} → {count16} allocations");
        assert!(bytes16 <= 20 * bytes1, "{bytes1} → {bytes16} bytes allocated");
    }
}
