//! Fuzzing the `/proc` readers: the sampler (diskstats, partitions and the devices' sysfs stat
//! files, net/dev, stat, meminfo, loadavg), the
//! rates between two samples, the node facts (cpuinfo, meminfo, uptime, os-release), and
//! Lustre's stats and `lctl get_param` output (`lustre`). The
//! agent reads these every second as root; a kernel of another version, a container's fake
//! /proc or a broken file must give a sample or an error, never a panic, and never more than
//! linear work.
//!
//! Properties: no panic on real files (this crate's tests' recordings) with up to 8 edits, or
//! on random bytes, for the sampler, for the rates from a good sample to a mutated one (a
//! counter that went backwards or jumped), and for the facts; allocations linear in the size
//! of the files. `cargo xtask fuzz` runs these (`fuzz_*`) with many more cases.

use crate::rates::Rates;
use crate::sample::{DeviceFilter, Sampler};
use proptest::prelude::*;
use pvfs_host::testing::fuzz::{config, mutate, random_text, repeated};
use pvfs_host::{Command, CommandError, Output, Root, Runner};

/// The sampler's files, as a Debian 12 VM (kernel 6.x) writes them: the recordings of this
/// crate's rates and facts tests.
const PROC: &[(&str, &str)] = &[
    (
        "proc/diskstats",
        "   8       0 sda 5400 120 431000 2300 8800 900 1200000 45000 0 30000 47300 0 0 0 0 700 800\n   8       1 sda1 5300 120 430000 2290 8800 900 1200000 45000 0 29900 47290 0 0 0 0 0 0\n   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n 252      16 vdb 10 0 80 1 0 0 0 0 0 4 1 0 0 0 0 0 0\n   9       0 md0 300 0 2400 0 100 0 800 0 0 0 0 0 0 0 0 0 0\n",
    ),
    (
        "proc/net/dev",
        "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo:  123456     789    0    0    0     0          0         0   123456     789    0    0    0     0       0          0\n  eth0: 987654321 654321    1    2    0     0          0        12 123456789 23456    0    0    0     0       0          0\n",
    ),
    (
        "proc/stat",
        "cpu  1000 10 300 8000 50 5 20 0 100 0\ncpu0 500 5 150 4000 25 2 10 0 50 0\nintr 12345 0 0\nctxt 987654\n",
    ),
    ("proc/meminfo", include_str!("../testdata/meminfo-debian12-6.18.txt")),
    ("proc/loadavg", "0.52 0.31 0.12 3/187 4242\n"),
    // What the sampler reads between finds of the devices (`sample::disks`).
    (
        "proc/partitions",
        "major minor  #blocks  name\n\n   8        0  488386584 sda\n   8        1  488385536 sda1\n",
    ),
    ("sys/class/block/sda/size", "976773168\n"),
    (
        "sys/class/block/sda/stat",
        "    5400      120   431000     2300     8800      900  1200000    45000        0    30000    47300        0        0        0        0      700      800\n",
    ),
];

/// The facts' files (the facts tests' Debian 12 recordings).
const FACTS: &[(&str, &str)] = &[
    (
        "proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8272CL CPU @ 2.60GHz\n\n\
         processor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8272CL CPU @ 2.60GHz\n\n",
    ),
    (
        "proc/meminfo",
        "MemTotal:       24598836 kB\nMemFree:        23012345 kB\nMemAvailable:   23512345 kB\n",
    ),
    ("proc/uptime", "86523.17 170012.40\n"),
    (
        "etc/os-release",
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n",
    ),
    ("proc/sys/kernel/hostname", "oss00\n"),
    ("proc/sys/kernel/osrelease", "6.1.0-37-amd64\n"),
];

/// Lines of the kernel's formats with values out of range, missing or of the wrong kind.
const HOSTILE: &[&str] = &[
    "   8       0 sda 18446744073709551615 0 18446744073709551615 4294967295 0 0 0 0 0 0 0 0 0 0 0 0 0",
    "   8       0 sda 1 2 3",
    "   8       0",
    "  eth0: 18446744073709551615 0 0 0 0 0 0 0 18446744073709551615 0 0 0 0 0 0 0",
    "  eth0:",
    ":",
    "cpu  18446744073709551615 18446744073709551615 18446744073709551615 0 0 0 0 0 0 0",
    "cpu  -1 x",
    "cpu ",
    "MemTotal:       18446744073709551615 kB",
    "MemTotal: kB",
    "SwapTotal:      18446744073709551615 kB",
    "Hugepagesize: 2048 MB",
    "0.52 0.31",
    "nan inf -inf 99999999999/0 -1",
    "processor\t: 0",
    "model name\t:",
    "1e308 1e308",
    "-1 -1",
    "ID=\"\u{202e}\"",
    "\u{feff}\u{202e}\u{0}\r",
    "",
];

/// A node whose commands all fail to run (the facts' `blkid` probes): only the files count.
struct NoCommands;

impl Runner for NoCommands {
    async fn run(&self, command: &Command) -> Result<Output, CommandError> {
        Err(CommandError::NotRecorded { command: command.to_string() })
    }
}

/// Writes `files` under a new root, file `which` replaced by `text`.
fn root_with(files: &[(&str, &str)], which: usize, text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (i, (path, original)) in files.iter().enumerate() {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, if i == which { text } else { original }).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("sys/block/sda")).unwrap();
    dir
}

/// A good sample, then one with file `which` as `text`: each reads or fails, and the rates
/// between them (a counter gone backwards or jumped) are computed without a panic.
fn sample_twice(which: usize, text: &str) {
    let dir = root_with(PROC, usize::MAX, "");
    let mut sampler = Sampler::new(Root::at(dir.path()), DeviceFilter::WholeDevices);
    let first = sampler.sample().expect("the recorded files read");
    std::fs::write(dir.path().join(PROC[which].0), text).unwrap();
    if let Ok(second) = sampler.sample() {
        let _ = Rates::between(&first, &second);
        let _ = Rates::between(&second, &first);
    }
    // A fresh sampler (files opened anew) reads the same.
    let _ = Sampler::new(Root::at(dir.path()), DeviceFilter::WholeDevices).sample();
}

fn facts_of(which: usize, text: &str) {
    let dir = root_with(FACTS, which, text);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let _ = runtime.block_on(crate::facts::read(&Root::at(dir.path()), &NoCommands));
}

fn edited(files: Files) -> impl Strategy<Value = (usize, String)> {
    let edits = prop::collection::vec(pvfs_host::testing::fuzz::edit(HOSTILE), 0..8);
    (0..files.len(), edits).prop_map(move |(which, edits)| {
        let bytes = mutate(files[which].1.as_bytes().to_vec(), &edits, HOSTILE);
        (which, String::from_utf8_lossy(&bytes).into_owned())
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fuzz_proc_sampler_mutated_files((which, text) in edited(PROC)) {
        sample_twice(which, &text);
    }

    #[test]
    fn fuzz_proc_sampler_random_bytes(which in 0..PROC.len(), text in random_text()) {
        sample_twice(which, &text);
    }

    #[test]
    fn fuzz_proc_facts_mutated_files((which, text) in edited(FACTS)) {
        facts_of(which, &text);
    }

    #[test]
    fn fuzz_proc_facts_random_bytes(which in 0..FACTS.len(), text in random_text()) {
        facts_of(which, &text);
    }

    #[test]
    fn fuzz_lustre_mutated_outputs(text in pvfs_host::testing::fuzz::mutated(lustre_corpus(), HOSTILE)) {
        lustre_of(&text);
    }

    #[test]
    fn fuzz_lustre_random_bytes(text in random_text()) {
        lustre_of(&text);
    }
}

/// The real `lctl get_param` outputs of the `lustre` tests.
fn lustre_corpus() -> Vec<Vec<u8>> {
    [
        "valid_valid.txt",
        "valid_ex8761-lctl.txt",
        "valid_lustre-2-14-0_client_llite_client.txt",
        "brw_stats_with_data.txt",
        "job_stats_ost.txt",
    ]
    .iter()
    .map(|f| {
        std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/lustre").join(f))
            .unwrap()
    })
    .collect()
}

/// Every parameter is a piece of the text, in order, and every stats value reads or fails.
fn lustre_of(text: &str) {
    let params = crate::lustre::lctl_params(text);
    assert!(params.windows(2).all(|w| w[0].line < w[1].line), "{params:?}");
    for p in &params {
        assert!(text.contains(p.name) && text.contains(p.value), "{p:?}");
        let _ = crate::lustre::parse_stats(p.value);
        let _ = crate::lustre::parse_brw_stats(p.value);
        let _ = crate::lustre::parse_recovery_status(p.value);
    }
    let _ = crate::lustre::parse_stats(text);
    let _ = crate::lustre::parse_brw_stats(text);
    let _ = crate::lustre::parse_lnet_stats(text);
    // job_stats' reader ends, and names a line of the text when it fails.
    let mut reader = crate::lustre::jobstats::JobReader::new(text.as_bytes());
    let mut job = crate::lustre::jobstats::Job::default();
    let lines = text.lines().count().max(1);
    loop {
        match reader.next_job(&mut job) {
            Ok(true) => assert!(reader.jobs <= lines),
            Ok(false) => break,
            Err(e) => {
                assert!((1..=lines + 1).contains(&e.line), "{e}");
                break;
            }
        }
    }
}

/// A set of host files: (path under the root, contents).
type Files = &'static [(&'static str, &'static str)];

/// Allocations made by one sample with file `which` as `text` (the files written before the
/// measure).
fn work(files: &[(&str, &str)], which: usize, text: &str, read: impl Fn(&Root)) -> (u64, u64) {
    let dir = root_with(files, which, text);
    let root = Root::at(dir.path());
    let info = allocation_counter::measure(|| read(&root));
    (info.count_total, info.bytes_total)
}

/// File `which` of `files` with `lines` added 1,000 and 16,000 times: `read` allocates at most
/// ~16 times as much (20, for the growth of buffers by doubling).
fn assert_linear(files: Files, which: usize, lines: &[&str], read: &dyn Fn(&Root)) {
    let head = files[which].1;
    let (count1, bytes1) = work(files, which, &(head.to_owned() + &repeated(lines, 1000)), read);
    let (count16, bytes16) = work(files, which, &(head.to_owned() + &repeated(lines, 16_000)), read);
    assert!(count1 > 0, "allocation-counter is not the global allocator");
    assert!(count16 <= 20 * count1, "{}: {count1} → {count16} allocations", files[which].0);
    assert!(bytes16 <= 20 * bytes1, "{}: {bytes1} → {bytes16} bytes allocated", files[which].0);
}

/// Linear work: files 16 times as long cost at most ~16 times as much.
#[test]
fn fuzz_proc_work_is_linear() {
    let sample = |root: &Root| {
        let _ = Sampler::new(root.clone(), DeviceFilter::WholeDevices).sample();
    };
    let facts = |root: &Root| {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let _ = runtime.block_on(crate::facts::read(root, &NoCommands));
    };
    assert_linear(
        PROC,
        0,
        &["   8       0 sda 5400 120 431000 2300 8800 900 1200000 45000 0 30000 47300 0 0 0 0 700 800"],
        &sample,
    );
    assert_linear(PROC, 2, &["cpu0 500 5 150 4000 25 2 10 0 50 0"], &sample);
    assert_linear(FACTS, 0, &["processor\t: 0", "model name\t: Intel(R) Xeon(R)", ""], &facts);
    assert_linear(FACTS, 3, &["NAME=\"Debian GNU/Linux\""], &facts);
}
