//! Fuzzing the parsers the agent runs on its probes' output: `lctl list_nids`, `lfs check
//! servers`, `lfs getstripe -d`, `beegfs-check-servers`, `tunefs.lustre --dryrun`, mdadm's
//! `--export` fields, lvm2's JSON reports and gluster's `--xml` answers. A node's tools are not
//! the agent's to trust: a broken or hostile tool (or one of a version pvfs never saw) must get
//! an answer or a clear refusal, never a panic, and no reader may do more than linear work.
//!
//! Properties, for each reader: no panic on the repository's real outputs (`testdata/`) with
//! up to 8 edits (bit flips, duplicated, dropped, cut and hostile lines) nor on random bytes;
//! what a reader accepts is consistent with its input; and, for the line-based readers, the
//! allocations grow linearly with the output (the allocation count of pvfs-config's and
//! pvfs-bench's fuzzing: deterministic, where time is not). `cargo xtask fuzz` runs these
//! (`fuzz_*`) with many more cases.

use crate::gate::{parse_beegfs_check_servers, parse_beegfs_targets, parse_check_servers, parse_list_nids};
use crate::lustre::parse_dryrun;
use crate::lustre_tuning::parse_getstripe;
use crate::{LvmThin, NodeAccess, block, gluster};
use proptest::prelude::*;
use pvfs_host::testing::fuzz::{config, files, mutated, random_text, repeated};
use pvfs_host::{Command, CommandError, Output, Root, Runner};

const DIR: &str = env!("CARGO_MANIFEST_DIR");

/// Lines that steer the readers into their corners: each tool's own line forms with values
/// out of range or of the wrong kind, headings out of place, and bytes no tool prints.
const HOSTILE: &[&str] = &[
    // lctl list_nids
    "10.0.2.15@tcp",
    "@tcp",
    "10.0.2.15@",
    "10.0.2.15@o2ib99999999999999999999",
    "a b@tcp",
    // lfs check servers
    "lustrefs-OST0001-osc-ffff88003bfbd000 active.",
    "lustrefs-OST0001-osc-ffff88003bfbd000: inactive",
    " active.",
    "error: check 'lustrefs-OST0002-osc-ffff88003bfbd000': Resource temporarily unavailable (11)",
    "error: check '",
    // lfs getstripe -d
    "stripe_count:  -1 stripe_size:   4194304 pattern:       raid0 stripe_offset: -1",
    "stripe_count:",
    "lcm_entry_count: 18446744073709551616",
    "lmm_stripe_size: -4096",
    // beegfs-check-servers
    "Management",
    "==========",
    "Storage",
    "storage0 [ID: 1]: reachable at 10.0.0.5:8003 (protocol: TCP)",
    "storage1 [ID: 2]: UNREACHABLE",
    "x]: ",
    // tunefs.lustre --dryrun
    "   Permanent disk data:",
    "Target:     lustre-OST0001",
    "Index:      4294967296",
    "Flags:      0xffffffffff",
    "Lustre FS:  ",
    // mdadm --export
    "MD_LEVEL=raid0",
    "MD_DEVICES=18446744073709551616",
    "MD_DEVICE_dev_sdc_DEV=",
    "==",
    // lvm2 JSON
    "{\"report\":[{\"pv\":[{\"pv_name\":\"/dev/md0\",\"vg_name\":7}]}]}",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "\"report\": null",
    // gluster --xml
    "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>",
    "<cliOutput><opRet>0</opRet><opErrno>0</opErrno><opErrstr/>",
    "<peer><hostname>gfs2</hostname><connected>1</connected><stateStr>Peer in Cluster</stateStr></peer>",
    "<node><nodeName>localhost</nodeName><status>99999999999999999999</status></node>",
    "<!DOCTYPE x [<!ENTITY a \"&a;&a;\">]><x>&a;</x>",
    "</cliOutput></cliOutput>",
    "\u{feff}\u{202e}\u{0}\r",
    "",
];

/// `mdadm --detail --export` and `--examine --export` as mdadm 4.2 prints them (Detail.c,
/// Examine via super1.c's export_examine_super1; the same fields the block tests record).
const MDADM_EXPORT: &[&str] = &[
    "MD_LEVEL=raid0\nMD_DEVICES=2\nMD_METADATA=1.2\nMD_UUID=3b1e8a44:0c4f7d52:8f2e6b3a:1d9c0e7f\nMD_DEVNAME=0\n\
     MD_NAME=oss00:0\nMD_DEVICE_dev_sdd_ROLE=1\nMD_DEVICE_dev_sdd_DEV=/dev/sdd\nMD_DEVICE_dev_sdc_ROLE=0\n\
     MD_DEVICE_dev_sdc_DEV=/dev/sdc\n",
    "MD_LEVEL=raid0\nMD_DEVICES=2\nMD_NAME=oss00:0\nMD_ARRAY_SIZE=2.15 TB\nMD_UUID=3b1e8a44:0c4f7d52:8f2e6b3a:1d9c0e7f\n\
     MD_UPDATE_TIME=1700000000\nMD_DEV_UUID=0a1b2c3d:4e5f6071:8293a4b5:c6d7e8f9\nMD_EVENTS=0\n",
];

/// lvm2 2.03 JSON reports, as the block tests record them (`pvs`, `vgs`, `lvs --binary`).
const LVM_REPORTS: &[&str] = &[
    "  {\n      \"report\": [\n          {\n              \"pv\": [\n                  {\"pv_name\":\"/dev/md0\", \"vg_name\":\"\"}\n              ]\n          }\n      ]\n  }\n",
    "{\"report\":[{\"vg\":[{\"vg_name\":\"rhgs-data\"}]}]}",
    "{\"report\":[{\"lv\":[{\"lv_name\":\"thinpool\",\"segtype\":\"thin-pool\",\"pool_lv\":\"\",\"zero\":\"0\"},\
     {\"lv_name\":\"brick1\",\"segtype\":\"thin\",\"pool_lv\":\"thinpool\",\"zero\":\"0\"}]}]}",
];

fn lustre_files(names: &[&str]) -> Vec<Vec<u8>> {
    let paths: Vec<String> = names.iter().map(|n| format!("testdata/lustre/{n}")).collect();
    files(DIR, &paths.iter().map(String::as_str).collect::<Vec<_>>())
}

fn inline(texts: &[&str]) -> Vec<Vec<u8>> {
    texts.iter().map(|t| t.as_bytes().to_vec()).collect()
}

fn check_list_nids(text: &str) -> Result<(), TestCaseError> {
    if let Ok(nids) = parse_list_nids(text) {
        prop_assert_eq!(nids.len(), text.lines().filter(|l| !l.trim().is_empty()).count());
        for nid in nids {
            prop_assert!(nid.contains('@') && !nid.contains(char::is_whitespace), "{:?}", nid);
        }
    }
    Ok(())
}

fn check_servers(stdout: &str, stderr: &str) -> Result<(), TestCaseError> {
    if let Ok(servers) = parse_check_servers(stdout, stderr) {
        let listed = stdout.lines().filter(|l| !l.trim().is_empty()).count();
        prop_assert!(servers.len() >= listed, "a stdout line read as no connection");
        for s in &servers[..listed] {
            prop_assert!(!s.device.is_empty() && !s.device.contains(char::is_whitespace), "{:?}", s.device);
        }
    }
    Ok(())
}

fn check_beegfs(text: &str) -> Result<(), TestCaseError> {
    if let Ok(sections) = parse_beegfs_check_servers(text) {
        let names: Vec<&str> = sections.iter().map(|(s, _)| s.as_str()).collect();
        prop_assert_eq!(names, ["Management", "Metadata", "Storage"]);
    }
    Ok(())
}

fn check_targets(text: &str) -> Result<(), TestCaseError> {
    if let Ok(targets) = parse_beegfs_targets(text) {
        // The heading and its rule are no targets.
        prop_assert!(targets.len() + 2 <= text.lines().filter(|l| !l.trim().is_empty()).count());
        for t in &targets {
            for word in [&t.reachability, &t.consistency] {
                prop_assert!(!word.is_empty() && !word.contains(char::is_whitespace), "{:?}", word);
            }
        }
    }
    Ok(())
}

/// The kernel log reader and what a failed Lustre mount makes of it: any text, no panic, and
/// only Lustre's and LNet's lines shown.
fn check_kernel_log(text: &str) -> Result<(), TestCaseError> {
    let records = pvfs_host::kmsg::parse(text);
    prop_assert!(records.iter().all(|r| r.level <= 7));
    if let Some(said) = crate::lustre_log::explain(&records) {
        prop_assert!(said.contains("kernel log: "), "{}", said);
    }
    Ok(())
}

fn check_dryrun(text: &str) -> Result<(), TestCaseError> {
    if parse_dryrun(text).is_some() {
        prop_assert!(text.contains("Permanent disk data:"));
    }
    Ok(())
}

fn check_export(text: &str) -> Result<(), TestCaseError> {
    for (key, value) in block::export_fields(text) {
        prop_assert!(!key.contains('\n') && !value.contains('\n'));
    }
    Ok(())
}

/// A node whose every command prints `stdout` and exits 0: what a broken or hostile tool
/// (gluster, lvm) could answer.
struct Answers {
    stdout: String,
}

impl Runner for Answers {
    async fn run(&self, _command: &Command) -> Result<Output, CommandError> {
        Ok(Output { code: Some(0), stdout: self.stdout.clone(), stderr: String::new() })
    }
}

/// The async readers (gluster's, lvm's) on `stdout`: an answer or an error, never a panic.
fn run_async_readers(stdout: &str) {
    let dir = tempfile::tempdir().unwrap();
    let host = NodeAccess::new(Root::at(dir.path()), Answers { stdout: stdout.to_owned() });
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let _ = gluster::peers(&host).await;
        let _ = gluster::volume_info(&host, "gv0").await;
        let _ = gluster::rebalance_status(&host, "gv0").await;
        for section in ["pv", "vg", "lv"] {
            let _ = LvmThin::report(&host, Command::new("pvs"), section).await;
        }
    });
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fuzz_probe_list_nids(
        text in mutated(lustre_files(&["list-nids-one.txt", "list-nids-two-nets.txt", "list-nids-down.txt"]), HOSTILE)
    ) {
        check_list_nids(&text)?;
    }

    #[test]
    fn fuzz_probe_check_servers(
        stdout in mutated(lustre_files(&["lfs-check-servers-2.10.txt"]), HOSTILE),
        stderr in mutated(inline(&["error: check 'lustrefs-OST0002-osc-ffff88003bfbd000': Resource temporarily unavailable (11)\n"]), HOSTILE)
    ) {
        check_servers(&stdout, &stderr)?;
    }

    #[test]
    fn fuzz_probe_getstripe(
        text in mutated(lustre_files(&["getstripe-d-2.10.txt", "getstripe-d-2.12.txt", "getstripe-composite.txt"]), HOSTILE)
    ) {
        let _ = parse_getstripe("/mnt/lustre/test1", &text);
    }

    #[test]
    fn fuzz_probe_beegfs_check_servers(
        text in mutated(files(DIR, &[
            "testdata/beegfs-7/check-servers-seed.txt",
            "testdata/beegfs-7/check-servers-unreachable.txt",
            "testdata/beegfs-7/check-servers-no-storage.txt",
        ]), HOSTILE)
    ) {
        check_beegfs(&text)?;
    }

    #[test]
    fn fuzz_probe_beegfs_listtargets(
        text in mutated(files(DIR, &["testdata/beegfs-7/listtargets-failover.txt"]), HOSTILE)
    ) {
        check_targets(&text)?;
    }

    #[test]
    fn fuzz_probe_kernel_log(
        text in mutated(files(DIR, &[
            "testdata/kmsg/al2023-client-eio.txt",
            "testdata/kmsg/mgs-timeout-2.12.txt",
        ]), HOSTILE)
    ) {
        check_kernel_log(&text)?;
    }

    #[test]
    fn fuzz_probe_tunefs_dryrun(text in mutated(lustre_files(&["ldd-mgs-2.15.txt"]), HOSTILE)) {
        check_dryrun(&text)?;
    }

    #[test]
    fn fuzz_probe_mdadm_export(text in mutated(inline(MDADM_EXPORT), HOSTILE)) {
        check_export(&text)?;
    }

    #[test]
    fn fuzz_probe_lvm_and_gluster_answers(
        text in mutated(
            [
                inline(LVM_REPORTS),
                files(DIR, &[
                    "testdata/gluster-10.3/peer-status.xml",
                    "testdata/gluster-10.3/volume-info.xml",
                    "testdata/gluster-10.3/volume-status.xml",
                    "testdata/gluster-10.3/rebalance-fix-layout-completed.xml",
                    "testdata/gluster-10.3/rebalance-fix-layout-in-progress.xml",
                    "testdata/gluster-10.3/rebalance-no-such-volume.xml",
                ]),
            ].concat(),
            HOSTILE,
        )
    ) {
        run_async_readers(&text);
    }

    /// Random bytes into every reader.
    #[test]
    fn fuzz_probe_random_bytes(text in random_text()) {
        check_list_nids(&text)?;
        check_servers(&text, &text)?;
        let _ = parse_getstripe("/mnt/lustre/test1", &text);
        check_beegfs(&text)?;
        check_targets(&text)?;
        check_kernel_log(&text)?;
        check_dryrun(&text)?;
        check_export(&text)?;
        run_async_readers(&text);
    }
}

/// Allocations made reading `text`.
fn work(read: impl FnOnce()) -> (u64, u64) {
    let info = allocation_counter::measure(read);
    (info.count_total, info.bytes_total)
}

/// `read` on `lines` repeated 1,000 and 16,000 times: at most ~16 times the allocations (20,
/// for the growth of vectors by doubling). Readers that keep only a few values (getstripe,
/// tunefs) allocate the same small amount whatever the length: that holds too.
fn assert_linear(what: &str, lines: &[&str], read: impl Fn(&str)) {
    let small = repeated(lines, 1000);
    let large = repeated(lines, 16_000);
    let (count1, bytes1) = work(|| read(&small));
    let (count16, bytes16) = work(|| read(&large));
    assert!(count16 <= 20 * count1.max(1), "{what}: {count1} → {count16} allocations");
    assert!(bytes16 <= 20 * bytes1.max(1), "{what}: {bytes1} → {bytes16} bytes allocated");
}

/// Linear work for every line-based reader, on its own format and on a long output that it
/// refuses at its last line. (Allocations are the measure that can be counted; the readers
/// that allocate nothing per line are single passes over `lines()` by construction.)
#[test]
fn fuzz_probe_work_is_linear() {
    let (count, _) = work(|| drop(vec![0u8; 64]));
    assert!(count > 0, "allocation-counter is not the global allocator");
    for bad in ["", "not a line of this tool"] {
        let nids = ["10.0.2.15@tcp", "192.168.10.2@o2ib1", bad];
        assert_linear("list_nids", &nids, |t| {
            let _ = parse_list_nids(t);
        });
        let servers = ["lustrefs-OST0001-osc-ffff88003bfbd000 active.", bad];
        assert_linear("check servers", &servers, |t| {
            let _ = parse_check_servers(t, t);
        });
        let stripe = ["lmm_stripe_count:  1", "lmm_stripe_size:   1048576", bad];
        assert_linear("getstripe", &stripe, |t| {
            let _ = parse_getstripe("/d", t);
        });
        let beegfs =
            ["Storage", "==========", "storage0 [ID: 1]: reachable at 10.0.0.5:8003 (protocol: TCP)", bad];
        assert_linear("beegfs-check-servers", &beegfs, |t| {
            let _ = parse_beegfs_check_servers(t);
        });
        let targets = [
            "TargetID     Reachability  Consistency   NodeID",
            "========     ============  ===========   ======",
            "     101           Online         Good        1",
            bad,
        ];
        assert_linear("beegfs-ctl --listtargets", &targets, |t| {
            let _ = parse_beegfs_targets(t);
        });
        let kmsg = ["3,1,100,-;LustreError: 11-0: MGC10.0.0.4@tcp: rc = -110", " SUBSYSTEM=x", bad];
        assert_linear("/dev/kmsg", &kmsg, |t| {
            let _ = crate::lustre_log::explain(&pvfs_host::kmsg::parse(t));
        });
        let ldd = [
            "   Permanent disk data:",
            "Target:     lustre-OST0001",
            "Parameters: mgsnode=10.0.0.4@tcp",
            bad,
        ];
        assert_linear("tunefs.lustre --dryrun", &ldd, |t| {
            let _ = parse_dryrun(t);
        });
        let export = ["MD_DEVICE_dev_sdc_ROLE=0", "MD_DEVICE_dev_sdc_DEV=/dev/sdc", bad];
        assert_linear("mdadm --export", &export, |t| {
            let _ = block::export_fields(t);
        });
    }
}
