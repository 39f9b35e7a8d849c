//! The parsers against real outputs (`testdata/ior/`, copied from `shared/fixtures/ior/`: IOR
//! 4.1.0+dev and 4.0.0) and against hand-written outputs in the shapes of older versions (IOR
//! 3.0–3.2, mdtest 1.9 and 3.3, mdtest 4.1's per-rank statistics). Expected numbers are copied
//! from the files, not from the parser.

use super::*;
use crate::model::{IorIteration, IorSummary, MdtestSummary};
use expect_test::{Expect, expect};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/ior").join(name)
}

fn read(name: &str) -> Parsed {
    parse_file(&fixture(name)).unwrap_or_else(|e| panic!("{e}"))
}

fn text(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

fn check_error(text: &str, expect: Expect) {
    expect.assert_eq(&parse(text).unwrap_err().to_string());
}

/// A summary row with every value present: `[max, min, mean, std]` for bandwidth and OPs.
#[allow(clippy::too_many_arguments)]
fn ior_row(
    operation: &str,
    bw: [f64; 4],
    ops: [f64; 4],
    mean_time_s: f64,
    tasks: u64,
    reps: u64,
    block: u64,
    xfer: u64,
    fpp: bool,
) -> IorSummary {
    IorSummary {
        operation: operation.to_owned(),
        bw_max_mib: Some(bw[0]),
        bw_min_mib: Some(bw[1]),
        bw_mean_mib: Some(bw[2]),
        bw_std_mib: Some(bw[3]),
        ops_max: Some(ops[0]),
        ops_min: Some(ops[1]),
        ops_mean: Some(ops[2]),
        ops_std: Some(ops[3]),
        mean_time_s: Some(mean_time_s),
        tasks: Some(tasks),
        iterations: Some(reps),
        block_bytes: Some(block),
        transfer_bytes: Some(xfer),
        file_per_proc: Some(fpp),
    }
}

/// A Results row: `[bw, iops, latency, block, xfer, open, wr/rd, close, total]`, `None` where
/// the output prints none.
fn ior_it(operation: &str, iteration: u64, v: [Option<f64>; 9]) -> IorIteration {
    IorIteration {
        operation: operation.to_owned(),
        iteration,
        bw_mib: v[0],
        iops: v[1],
        latency_s: v[2],
        block_kib: v[3],
        xfer_kib: v[4],
        open_s: v[5],
        wrrd_s: v[6],
        close_s: v[7],
        total_s: v[8],
    }
}

fn all(v: [f64; 9]) -> [Option<f64>; 9] {
    v.map(Some)
}

fn md(operation: &str, v: [f64; 4], unit: &str) -> MdtestSummary {
    MdtestSummary {
        operation: operation.to_owned(),
        max: Some(v[0]),
        min: Some(v[1]),
        mean: Some(v[2]),
        std: Some(v[3]),
        unit: unit.to_owned(),
    }
}

fn close(actual: Option<f64>, expected: f64) {
    let actual = actual.unwrap_or_else(|| panic!("expected {expected}, found None"));
    assert!((actual - expected).abs() < 1e-9, "expected {expected}, found {actual}");
}

const MIB64: u64 = 64 * 1024 * 1024;
const MIB1: u64 = 1024 * 1024;

// IOR 4.1 text.

#[test]
fn ior_tput_text() {
    let p = read("ior_tput.txt");
    assert_eq!(p.tool, Tool::Ior);
    assert_eq!(p.version.as_deref(), Some("4.1.0+dev"));
    assert_eq!(
        p.command.as_deref(),
        Some("ior -w -r -C -i2 -t1m -b64m -F --posix.odirect -o /mnt/pvfs/scratch/ior")
    );
    assert_eq!(
        p.ior,
        [
            ior_row(
                "write",
                [760.83, 760.48, 760.66, 0.18],
                [760.83, 760.48, 760.66, 0.18],
                0.16828,
                2,
                2,
                MIB64,
                MIB1,
                true
            ),
            ior_row(
                "read",
                [1047.36, 699.86, 873.61, 173.75],
                [1047.36, 699.86, 873.61, 173.75],
                0.15255,
                2,
                2,
                MIB64,
                MIB1,
                true
            ),
        ]
    );
    assert_eq!(
        p.iterations,
        [
            ior_it(
                "write",
                0,
                all([760.83, 761.87, 0.002623, 65536.0, 1024.0, 0.000381, 0.168007, 0.001263, 0.168237])
            ),
            ior_it(
                "read",
                0,
                all([1047.36, 1047.51, 0.001895, 65536.0, 1024.0, 0.000057, 0.122195, 0.000904, 0.122212])
            ),
            ior_it(
                "write",
                1,
                all([760.48, 761.56, 0.002622, 65536.0, 1024.0, 0.000491, 0.168076, 0.001224, 0.168315])
            ),
            ior_it(
                "read",
                1,
                all([699.86, 699.94, 0.002857, 65536.0, 1024.0, 0.000058, 0.182873, 0.009907, 0.182893])
            ),
        ]
    );
    assert!(p.mdtest.is_empty());
    assert!(p.errors.is_empty());
    assert_eq!(p.failure(), None);
}

#[test]
fn ior_iops_text_ops_differ_from_bandwidth() {
    let p = read("ior_iops.txt");
    assert_eq!(
        p.ior,
        [
            ior_row(
                "write",
                [150.89, 132.19, 141.54, 9.35],
                [38626.76, 33839.62, 36233.19, 2393.57],
                0.22708,
                2,
                2,
                16 * MIB1,
                4096,
                true
            ),
            ior_row(
                "read",
                [179.79, 175.12, 177.45, 2.34],
                [46027.10, 44829.72, 45428.41, 598.69],
                0.18036,
                2,
                2,
                16 * MIB1,
                4096,
                true
            ),
        ]
    );
    assert_eq!(
        p.iterations[0],
        ior_it(
            "write",
            0,
            all([150.89, 38655.0, 0.000052, 16384.0, 4.0, 0.000423, 0.211927, 0.000383, 0.212081])
        )
    );
    assert_eq!(p.iterations.len(), 4);
}

#[test]
fn ior_single_task_shared_file() {
    let p = read("ior_single_nompi.txt");
    assert_eq!(
        p.command.as_deref(),
        Some("ior -w -r -i2 -t1m -b64m --posix.odirect -o /mnt/pvfs/scratch/ior")
    );
    assert_eq!(
        p.ior,
        [
            ior_row(
                "write",
                [646.11, 418.69, 532.40, 113.71],
                [646.11, 418.69, 532.40, 113.71],
                0.12596,
                1,
                2,
                MIB64,
                MIB1,
                false
            ),
            ior_row(
                "read",
                [731.90, 680.37, 706.14, 25.76],
                [731.90, 680.37, 706.14, 25.76],
                0.09075,
                1,
                2,
                MIB64,
                MIB1,
                false
            ),
        ]
    );
}

#[test]
fn ior_shared_file_and_bandwidth_printed_without_decimals() {
    let p = read("ior_tput_shared.txt");
    assert_eq!(
        p.ior[1],
        ior_row(
            "read",
            [3943.20, 1929.98, 2936.59, 1006.61],
            [3943.20, 1929.98, 2936.59, 1006.61],
            0.04939,
            2,
            2,
            MIB64,
            MIB1,
            false
        )
    );
    assert_eq!(p.ior[0].file_per_proc, Some(false));
    assert_eq!(p.ior[0].bw_max_mib, Some(1458.59));
    // IOR prints values from 3600 on without decimals (`PPDouble`).
    assert_eq!(
        p.iterations[1],
        ior_it(
            "read",
            0,
            all([3943.0, 3945.0, 0.000507, 65536.0, 1024.0, 0.000016, 0.032446, 0.000023, 0.032461])
        )
    );
}

#[test]
fn ior_mpiio_verbose_has_remove_rows() {
    let p = read("ior_tput_mpiio_v.txt");
    assert_eq!(
        p.ior,
        [
            ior_row(
                "write",
                [6520.65, 6307.59, 6414.12, 106.53],
                [6520.65, 6307.59, 6414.12, 106.53],
                0.01996,
                2,
                2,
                MIB64,
                MIB1,
                true
            ),
            ior_row(
                "read",
                [17253.30, 17193.07, 17223.19, 30.11],
                [17253.30, 17193.07, 17223.19, 30.11],
                0.00743,
                2,
                2,
                MIB64,
                MIB1,
                true
            ),
        ]
    );
    let operations: Vec<(&str, u64)> =
        p.iterations.iter().map(|it| (it.operation.as_str(), it.iteration)).collect();
    assert_eq!(
        operations,
        [("write", 0), ("read", 0), ("remove", 0), ("write", 1), ("read", 1), ("remove", 1)]
    );
    let mut remove = [None; 9];
    remove[8] = Some(0.043328);
    assert_eq!(p.iterations[2], ior_it("remove", 0, remove));
    assert_eq!(
        p.iterations[0],
        ior_it(
            "write",
            0,
            all([6521.0, 7844.0, 0.000255, 65536.0, 1024.0, 0.001421, 0.016318, 0.002078, 0.019630])
        )
    );
}

#[test]
fn ior_4_0_0_text() {
    let p = read("v4.0.0/ior_tput.txt");
    assert_eq!(p.version.as_deref(), Some("4.0.0"));
    assert_eq!(
        p.command.as_deref(),
        Some("/opt/ior-4.0.0/bin/ior -w -r --posix.odirect -C -i2 -t1m -b64m -F -o /mnt/pvfs/scratch/ior")
    );
    assert_eq!(
        p.ior,
        [
            ior_row(
                "write",
                [1193.71, 1149.45, 1171.58, 22.13],
                [1193.71, 1149.45, 1171.58, 22.13],
                0.10929,
                2,
                2,
                MIB64,
                MIB1,
                true
            ),
            ior_row(
                "read",
                [1716.62, 1620.89, 1668.75, 47.86],
                [1716.62, 1620.89, 1668.75, 47.86],
                0.07677,
                2,
                2,
                MIB64,
                MIB1,
                true
            ),
        ]
    );
    assert_eq!(p.iterations.len(), 4);
}

// IOR JSON.

#[test]
fn ior_tput_json() {
    let p = read("ior_tput_json.txt");
    assert_eq!(p.version.as_deref(), Some("4.1.0+dev"));
    assert_eq!(
        p.command.as_deref(),
        Some("ior -w -r -C -i2 -t1m -b64m -F --posix.odirect -O summaryFormat=JSON -o /mnt/pvfs/scratch/ior")
    );
    assert_eq!(
        p.ior,
        [
            ior_row(
                "write",
                [942.3533, 936.6729, 939.5131, 2.8402],
                [942.3533, 936.6729, 939.5131, 2.8402],
                0.1362,
                2,
                2,
                MIB64,
                MIB1,
                true
            ),
            ior_row(
                "read",
                [1350.5949, 1251.8354, 1301.2152, 49.3797],
                [1350.5949, 1251.8354, 1301.2152, 49.3797],
                0.0985,
                2,
                2,
                MIB64,
                MIB1,
                true
            ),
        ]
    );
    // 4.x JSON has no `iter`: each access's entries come in repetition order.
    assert_eq!(
        p.iterations,
        [
            ior_it(
                "write",
                0,
                all([942.3533, 943.4031, 0.0021, 65536.0, 1024.0, 0.0002, 0.1357, 0.0393, 0.1358])
            ),
            ior_it(
                "read",
                0,
                all([1251.8354, 1252.0281, 0.0016, 65536.0, 1024.0, 0.0, 0.1022, 0.0260, 0.1022])
            ),
            ior_it(
                "write",
                1,
                all([936.6729, 937.7773, 0.0021, 65536.0, 1024.0, 0.0003, 0.1365, 0.0364, 0.1367])
            ),
            ior_it(
                "read",
                1,
                all([1350.5949, 1350.8395, 0.0015, 65536.0, 1024.0, 0.0, 0.0948, 0.0267, 0.0948])
            ),
        ]
    );
    assert!(p.errors.is_empty());
}

#[test]
fn ior_iops_json() {
    let p = read("ior_iops_json.txt");
    assert_eq!(
        p.ior,
        [
            ior_row(
                "write",
                [104.2925, 84.3141, 94.3033, 9.9892],
                [26698.8918, 21584.4179, 24141.6549, 2557.2370],
                0.3432,
                2,
                2,
                16 * MIB1,
                4096,
                true
            ),
            ior_row(
                "read",
                [130.1628, 122.1994, 126.1811, 3.9817],
                [33321.6684, 31283.0504, 32302.3594, 1019.3090],
                0.2539,
                2,
                2,
                16 * MIB1,
                4096,
                true
            ),
        ]
    );
    assert_eq!(p.iterations[2].iops, Some(21598.4742));
}

#[test]
fn ior_json_summary_file_and_its_stdout() {
    let p = read("ior_tput_json_summaryfile.summary.json");
    assert!(p.command.as_deref().is_some_and(|c| c.contains("-O summaryFile=")));
    assert_eq!(
        p.ior,
        [
            ior_row(
                "write",
                [563.6008, 499.8300, 531.7154, 31.8854],
                [563.6008, 499.8300, 531.7154, 31.8854],
                0.2416,
                2,
                2,
                MIB64,
                MIB1,
                true
            ),
            ior_row(
                "read",
                [690.2731, 688.4902, 689.3816, 0.8914],
                [690.2731, 688.4902, 689.3816, 0.8914],
                0.1857,
                2,
                2,
                MIB64,
                MIB1,
                true
            ),
        ]
    );
    check_error(
        &text("ior_tput_json_summaryfile.txt"),
        expect![[
            r#"this is IOR's standard output with -O summaryFile: the results were written to /mnt/pvfs/out/ior_tput_json_summaryfile.summary.json; parse that file instead"#
        ]],
    );
}

#[test]
fn ior_banner_then_summary_file_notice() {
    let stdout = "IOR-4.1.0+dev: MPI Coordinated Test of Parallel I/O\nWriting output to /out/run.txt\n";
    check_error(
        stdout,
        expect![[
            r#"this is IOR's standard output with -O summaryFile: the results were written to /out/run.txt; parse that file instead"#
        ]],
    );
}

#[test]
fn ior_json_with_text_around_and_inside() {
    let json = text("ior_tput_json.txt");
    let (head, tail) = json.split_at(json.find("    \"Parameters\"").unwrap());
    let mixed = format!(
        "WARNING: Backend returned error during statfs\n{head}POSIX couldn't call statvfs: No such file \
         or directory\nERROR: open64(\"/x\", 66, 0664) failed. Error: No such file or directory, \
         (aiori-POSIX.c:618)\n{tail}--------\n[vm:26137] 1 more process has sent help message help-mpi-api.txt\n"
    );
    let p = parse(&mixed).unwrap();
    assert_eq!(p.ior, read("ior_tput_json.txt").ior);
    assert_eq!(p.iterations.len(), 4);
    assert_eq!(
        p.errors,
        ["ERROR: open64(\"/x\", 66, 0664) failed. Error: No such file or directory, (aiori-POSIX.c:618)"]
    );
    // It printed a summary, so it did not fail.
    assert_eq!(p.failure(), None);
}

#[test]
fn ior_json_cut_short_names_the_line() {
    let json = text("ior_tput_json.txt");
    let cut = &json[..json.find("\"summary\"").unwrap()];
    check_error(cut, expect!["line 135, column 3: IOR JSON does not parse: EOF while parsing an object"]);
}

/// IOR 3.2's JSON: one array per repetition in `Results`, a `remove` entry, no `iops` or
/// `latency`, a `max` section, and `segmentCount`/`blockSize`/`transferSize` twice per summary
/// (as `PrintLongSummaryOneOperation` in 3.2 prints them).
#[test]
fn ior_3_2_json_nested_repetitions() {
    let json = r#"{
"Version": "3.2.0",
"Began": "Thu Jan 10 10:00:00 2019",
"Command line": "ior -w -r -i 2 -t 256k -b 1m -O summaryFormat=JSON",
"Machine": "Linux node1",
"tests": [
{
  "TestID": 0,
  "StartTime": "Thu Jan 10 10:00:00 2019",
  "Options": {
    "api": "POSIX",
    "repetitions": 2
  }
, "Results": [
[ {
    "access": "write",
    "bwMiB": 100.0000,
    "blockKiB": 1024.0000,
    "xferKiB": 256.0000,
    "openTime": 0.0010,
    "wrRdTime": 0.0090,
    "closeTime": 0.0001,
    "totalTime": 0.0100
  }
, {
    "access": "read",
    "bwMiB": 200.0000,
    "blockKiB": 1024.0000,
    "xferKiB": 256.0000,
    "openTime": 0.0005,
    "wrRdTime": 0.0045,
    "closeTime": 0.0001,
    "totalTime": 0.0050
  }
, {
    "access": "remove",
    "totalTime": 0.0010
  }
]
, [ {
    "access": "write",
    "bwMiB": 50.0000,
    "blockKiB": 1024.0000,
    "xferKiB": 256.0000,
    "openTime": 0.0010,
    "wrRdTime": 0.0190,
    "closeTime": 0.0001,
    "totalTime": 0.0200
  }
]
]
, "max": {
    "writeMiB": 100.0000,
    "writeMB": 104.8576
  }
}
]
, "summary": [
  {
    "operation": "write",
    "API": "POSIX",
    "TestID": 0,
    "ReferenceNumber": 0,
    "segmentCount": 1,
    "blockSize": 1048576,
    "transferSize": 262144,
    "numTasks": 1,
    "tasksPerNode": 1,
    "repetitions": 2,
    "filePerProc": 0,
    "reorderTasks": 0,
    "taskPerNodeOffset": 1,
    "reorderTasksRandom": 0,
    "reorderTasksRandomSeed": 0,
    "segmentCount": 1,
    "blockSize": 1048576,
    "transferSize": 262144,
    "bwMaxMIB": 100.0000,
    "bwMinMIB": 50.0000,
    "bwMeanMIB": 75.0000,
    "bwStdMIB": 25.0000,
    "OPsMax": 400.0000,
    "OPsMin": 200.0000,
    "OPsMean": 300.0000,
    "OPsSD": 100.0000,
    "MeanTime": 0.0150,
    "xsizeMiB": 1.0000
  }
]
}
"#;
    let p = parse(json).unwrap();
    assert_eq!(p.version.as_deref(), Some("3.2.0"));
    assert_eq!(
        p.ior,
        [ior_row(
            "write",
            [100.0, 50.0, 75.0, 25.0],
            [400.0, 200.0, 300.0, 100.0],
            0.015,
            1,
            2,
            MIB1,
            262144,
            false
        )]
    );
    let no_rate = |v: [f64; 7]| {
        [Some(v[0]), None, None, Some(v[1]), Some(v[2]), Some(v[3]), Some(v[4]), Some(v[5]), Some(v[6])]
    };
    let mut remove = [None; 9];
    remove[8] = Some(0.001);
    assert_eq!(
        p.iterations,
        [
            ior_it("write", 0, no_rate([100.0, 1024.0, 256.0, 0.001, 0.009, 0.0001, 0.01])),
            ior_it("read", 0, no_rate([200.0, 1024.0, 256.0, 0.0005, 0.0045, 0.0001, 0.005])),
            ior_it("remove", 0, remove),
            ior_it("write", 1, no_rate([50.0, 1024.0, 256.0, 0.001, 0.019, 0.0001, 0.02])),
        ]
    );
}

#[test]
fn ior_json_values_of_the_wrong_type_are_named() {
    let json = text("ior_tput_json.txt").replace("\"bwMaxMIB\": 942.3533", "\"bwMaxMIB\": \"fast\"");
    check_error(&json, expect![[r#"IOR JSON summary[0].bwMaxMIB: expected a number, found "fast""#]]);
}

// IOR CSV.

#[test]
fn ior_csv_iterations_and_the_summary_ior_would_print() {
    let p = read("ior_tput_csv.txt");
    assert_eq!((p.tool, p.version.as_deref(), p.command.as_deref()), (Tool::Ior, None, None));
    assert_eq!(
        p.iterations,
        [
            ior_it(
                "write",
                0,
                all([762.0043, 763.2176, 0.0026, 65536.0, 1024.0, 0.0004, 0.1677, 0.0014, 0.1680])
            ),
            ior_it(
                "read",
                0,
                all([1047.0688, 1047.1893, 0.0019, 65536.0, 1024.0, 0.0, 0.1222, 0.0009, 0.1222])
            ),
            ior_it(
                "write",
                1,
                all([728.7550, 729.9222, 0.0027, 65536.0, 1024.0, 0.0005, 0.1754, 0.0055, 0.1756])
            ),
            ior_it(
                "read",
                1,
                all([983.8116, 983.8891, 0.0020, 65536.0, 1024.0, 0.0, 0.1301, 0.0047, 0.1301])
            ),
        ]
    );
    let [write, read] = &p.ior[..] else { panic!("{:?}", p.ior) };
    assert_eq!((write.operation.as_str(), read.operation.as_str()), ("write", "read"));
    // Max, min, mean and population standard deviation of the two rows, as IOR computes them.
    close(write.bw_max_mib, 762.0043);
    close(write.bw_min_mib, 728.7550);
    close(write.bw_mean_mib, (762.0043 + 728.7550) / 2.0);
    close(write.bw_std_mib, (762.0043 - 728.7550) / 2.0);
    close(write.mean_time_s, (0.1680 + 0.1756) / 2.0);
    close(read.bw_mean_mib, (1047.0688 + 983.8116) / 2.0);
    close(read.bw_std_mib, (1047.0688 - 983.8116) / 2.0);
    close(read.mean_time_s, (0.1222 + 0.1301) / 2.0);
    for row in [write, read] {
        assert_eq!((row.tasks, row.iterations), (Some(2), Some(2)));
        assert_eq!((row.block_bytes, row.transfer_bytes), (Some(MIB64), Some(MIB1)));
        // Not stated by CSV.
        assert_eq!((row.ops_max, row.ops_min, row.ops_mean, row.ops_std), (None, None, None, None));
        assert_eq!(row.file_per_proc, None);
    }
}

#[test]
fn ior_csv_with_a_different_block_per_row_states_no_block() {
    let csv = "access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),numTasks,iter\n\
               write,100.0000,100.0000,0.0100,1024.0000,0.9766,0.0001,0.0100,0.0001,0.0102,4,0\n\
               write,300.0000,300.0000,0.0033,2048.0000,0.9766,0.0001,0.0033,0.0001,0.0034,2,1\n";
    let p = parse(csv).unwrap();
    let row = &p.ior[0];
    close(row.bw_mean_mib, 200.0);
    close(row.bw_std_mib, 100.0);
    // Rows disagree (block, tasks), or 0.9766 KiB is not a whole number of bytes.
    assert_eq!((row.block_bytes, row.transfer_bytes, row.tasks), (None, None, None));
}

// Other IOR versions, by hand in their shapes.

/// IOR 3.2.1 (shape from a published 3.2.1 run): the Results table has no `IOPS` or
/// `Latency(s)`, the summary no `Stonewall` columns. Transfers of 4 KiB make OPs differ from
/// MiB/s, so that each `StdDev` is seen to go to its own statistic.
const IOR_3_2: &str = "\
IOR-3.2.1: MPI Coordinated Test of Parallel I/O
Began               : Mon Feb 22 15:59:05 2021
Command line        : ./ior -wr -i 2 -t 4k -b 16m -F -e -o /mnt/beegfs/test.ior
Machine             : Linux ip-10-0-3-57
TestID              : 0
StartTime           : Mon Feb 22 15:59:05 2021
Path                : /mnt/beegfs
FS                  : 1.2 TiB   Used FS: 0.7%   Inodes: 0.0 Mi   Used Inodes: -nan%

Options:
api                 : POSIX
apiVersion          :
test filename       : /mnt/beegfs/test.ior
access              : file-per-process
type                : independent
segments            : 1
ordering in a file  : sequential
ordering inter file : no tasks offsets
tasks               : 64
clients per node    : 64
repetitions         : 2
xfersize            : 4096 bytes
blocksize           : 16 MiB
aggregate filesize  : 1 GiB

Results:

access    bw(MiB/s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter
------    ---------  ---------- ---------  --------   --------   --------   --------   ----
write     115.02     16384      4.00       0.324555   8.53       0.215958   8.90       0
read      120.50     16384      4.00       0.156029   8.20       0.227223   8.50       0
remove    -          -          -          -          -          -          0.522120   0
write     110.00     16384      4.00       0.319332   8.99       0.236021   9.31       1
read      118.00     16384      4.00       0.160000   8.40       0.230000   8.68       1
remove    -          -          -          -          -          -          0.471846   1
Max Write: 115.02 MiB/sec (120.60 MB/sec)
Max Read:  120.50 MiB/sec (126.35 MB/sec)

Summary of all tests:
Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    Mean(s) Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt   blksiz    xsize aggs(MiB)   API RefNum
write         115.02     110.00     112.51       2.51   29445.12   28160.00   28802.56     642.56    9.10500     0     64  64    2   1     0        1         0    0      1 16777216     4096    1024.0 POSIX      0
read          120.50     118.00     119.25       1.25   30848.00   30208.00   30528.00     320.00    8.59000     0     64  64    2   1     0        1         0    0      1 16777216     4096    1024.0 POSIX      0
Finished            : Mon Feb 22 16:01:33 2021
";

#[test]
fn ior_3_2_text_columns_by_name() {
    let p = parse(IOR_3_2).unwrap();
    assert_eq!(p.version.as_deref(), Some("3.2.1"));
    assert_eq!(p.command.as_deref(), Some("./ior -wr -i 2 -t 4k -b 16m -F -e -o /mnt/beegfs/test.ior"));
    assert_eq!(
        p.ior,
        [
            ior_row(
                "write",
                [115.02, 110.00, 112.51, 2.51],
                [29445.12, 28160.00, 28802.56, 642.56],
                9.105,
                64,
                2,
                16 * MIB1,
                4096,
                true
            ),
            ior_row(
                "read",
                [120.50, 118.00, 119.25, 1.25],
                [30848.00, 30208.00, 30528.00, 320.00],
                8.59,
                64,
                2,
                16 * MIB1,
                4096,
                true
            ),
        ]
    );
    let no_rate = |v: [f64; 7]| {
        [Some(v[0]), None, None, Some(v[1]), Some(v[2]), Some(v[3]), Some(v[4]), Some(v[5]), Some(v[6])]
    };
    assert_eq!(
        p.iterations[0],
        ior_it("write", 0, no_rate([115.02, 16384.0, 4.0, 0.324555, 8.53, 0.215958, 8.90]))
    );
    let mut remove = [None; 9];
    remove[8] = Some(0.471846);
    assert_eq!(p.iterations[5], ior_it("remove", 1, remove));
}

/// IOR 3.0/3.1: `Began:` and `Command line used:` with quoted arguments, a `Summary:` block of
/// `key = value` lines, no `Results:` heading.
#[test]
fn ior_3_0_text() {
    let text = "\
IOR-3.0.1: MPI Coordinated Test of Parallel I/O

Began: Wed Jun  7 10:00:00 2017
Command line used: ior \"-w\" \"-r\" \"-t\" \"1m\" \"-b\" \"16m\"
Machine: Linux node1

Test 0 started: Wed Jun  7 10:00:00 2017
Summary:
\tapi                = POSIX
\ttest filename      = testFile
\taccess             = single-shared-file
\tclients            = 4 (4 per node)
\trepetitions        = 1
\txfersize           = 1 MiB
\tblocksize          = 16 MiB
\taggregate filesize = 64 MiB

access    bw(MiB/s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter
------    ---------  ---------- ---------  --------   --------   --------   --------   ----
write     512.00     16384      1024.00    0.001000   0.124000   0.000100   0.125000   0   
read      1024.00    16384      1024.00    0.000500   0.062000   0.000050   0.062500   0   
remove    -          -          -          -          -          -          0.001000   0   

Max Write: 512.00 MiB/sec (536.87 MB/sec)
Max Read:  1024.00 MiB/sec (1073.74 MB/sec)

Summary of all tests:
Operation   Max(MiB)   Min(MiB)  Mean(MiB)     StdDev   Max(OPs)   Min(OPs)  Mean(OPs)     StdDev    Mean(s) Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt  blksiz    xsize aggs(MiB)   API RefNum
write         512.00     512.00     512.00       0.00     512.00     512.00     512.00       0.00    0.12500     0      4   4    1   0     0        1         0    0      1 16777216  1048576      64.0 POSIX      0
read         1024.00    1024.00    1024.00       0.00    1024.00    1024.00    1024.00       0.00    0.06250     0      4   4    1   0     0        1         0    0      1 16777216  1048576      64.0 POSIX      0

Finished: Wed Jun  7 10:00:01 2017
";
    let p = parse(text).unwrap();
    assert_eq!(p.version.as_deref(), Some("3.0.1"));
    assert_eq!(p.command.as_deref(), Some(r#"ior "-w" "-r" "-t" "1m" "-b" "16m""#));
    assert_eq!(
        p.ior[1],
        ior_row(
            "read",
            [1024.0, 1024.0, 1024.0, 0.0],
            [1024.0, 1024.0, 1024.0, 0.0],
            0.0625,
            4,
            1,
            16 * MIB1,
            MIB1,
            false
        )
    );
    assert_eq!(p.iterations.len(), 3);
}

/// IOR 2.10 (from its `SummarizeResults`): names with spaces (`Max (MiB)`, `Std Dev`), rows
/// ending in `EXCEL`, and with -v trailing columns headed `Op grep #Tasks …` that hold
/// numTasks, tasksPerNode, … TestNum, api.
#[test]
fn ior_2_10_summary() {
    let text = "\
IOR-2.10.3: MPI Coordinated Test of Parallel I/O

Run began: Tue Mar  1 10:00:00 2011
Command line used: ./IOR -v -w -r -i 2 -t 4k -b 1m

Operation  Max (MiB)  Min (MiB)  Mean (MiB)   Std Dev  Max (OPs)  Min (OPs)  Mean (OPs)   Std Dev  Mean (s)  Op grep #Tasks tPN reps  fPP reord reordoff reordrand seed segcnt blksiz xsize aggsize
---------  ---------  ---------  ----------   -------  ---------  ---------  ----------   -------  --------
write          12.00       8.00       10.00      2.00    3072.00    2048.00     2560.00    512.00   0.41000   4 4 2 1 0 1 0 0 1 1048576 4096 4194304 0 POSIX EXCEL
read           24.00      16.00       20.00      4.00    6144.00    4096.00     5120.00   1024.00   0.20500   4 4 2 1 0 1 0 0 1 1048576 4096 4194304 0 POSIX EXCEL

Max Write: 12.00 MiB/sec (12.58 MB/sec)
Max Read:  24.00 MiB/sec (25.17 MB/sec)
";
    let p = parse(text).unwrap();
    assert_eq!(p.version.as_deref(), Some("2.10.3"));
    assert_eq!(p.command.as_deref(), Some("./IOR -v -w -r -i 2 -t 4k -b 1m"));
    assert_eq!(
        p.ior,
        [
            ior_row(
                "write",
                [12.0, 8.0, 10.0, 2.0],
                [3072.0, 2048.0, 2560.0, 512.0],
                0.41,
                4,
                2,
                MIB1,
                4096,
                true
            ),
            ior_row(
                "read",
                [24.0, 16.0, 20.0, 4.0],
                [6144.0, 4096.0, 5120.0, 1024.0],
                0.205,
                4,
                2,
                MIB1,
                4096,
                true
            ),
        ]
    );
}

/// A summary whose columns come in another order, some missing, one unknown: each value is
/// still read from its own column, and a column the header does not have is `None`.
#[test]
fn ior_summary_columns_in_any_order() {
    let text = "\
Summary of all tests:
Operation  #Tasks  Mean(s)  Max(OPs)  Min(OPs)  Mean(OPs)  StdDev  Max(MiB)  Min(MiB)  Mean(MiB)  StdDev  Stonewall(s)  xsize  reps
write           8   1.50000    330.00    270.00     300.00   30.00     11.00      9.00      10.00    1.00          1.20   4096     3
";
    let p = parse(text).unwrap();
    assert_eq!(
        p.ior,
        [IorSummary {
            operation: "write".to_owned(),
            bw_max_mib: Some(11.0),
            bw_min_mib: Some(9.0),
            bw_mean_mib: Some(10.0),
            bw_std_mib: Some(1.0),
            ops_max: Some(330.0),
            ops_min: Some(270.0),
            ops_mean: Some(300.0),
            ops_std: Some(30.0),
            mean_time_s: Some(1.5),
            tasks: Some(8),
            iterations: Some(3),
            block_bytes: None,
            transfer_bytes: Some(4096),
            file_per_proc: None,
        }]
    );
    assert_eq!((p.version, p.command), (None, None));
}

#[test]
fn ior_rows_that_do_not_fit_their_header_are_refused() {
    let torn = IOR_3_2.replace("POSIX      0\nread", "POSIX      0 WARNING: 7 left\nread");
    check_error(
        &torn,
        expect![
            "line 41: this IOR summary row has 28 fields but the header at line 40 names 25; is other output mixed into it?"
        ],
    );
    let bad = IOR_3_2.replace("     64  64    2   1", "     sixty  64    2   1");
    check_error(
        &bad,
        expect!["line 41: IOR summary column '#Tasks' holds \"sixty\", expected a whole number or NA"],
    );
}

#[test]
fn two_runs_in_one_file_are_refused() {
    let two = format!("{}{}", text("ior_tput.txt"), text("mdtest_paper_pvfs.txt"));
    check_error(
        &two,
        expect![
            "the output holds 2 runs (banners at lines 1, 47); split it into one file per run (if they came from one mpirun, each process ran on its own: is IOR built against this MPI?)"
        ],
    );
}

// mdtest.

#[test]
fn mdtest_paper_lustre() {
    let p = read("mdtest_paper_lustre.txt");
    assert_eq!(p.tool, Tool::Mdtest);
    assert_eq!(p.version.as_deref(), Some("4.1.0+dev"));
    assert_eq!(
        p.command.as_deref(),
        Some("mdtest '-I' '10' '-i' '2' '-z' '5' '-b' '5' '-d' '/mnt/pvfs/scratch/md'")
    );
    let r = "ops/sec";
    assert_eq!(
        p.mdtest,
        [
            md("Directory creation", [27254.990, 9606.490, 18430.740, 12479.374], r),
            md("Directory stat", [297353.098, 262968.301, 280160.699, 24313.723], r),
            md("Directory rename", [73319.002, 66708.911, 70013.957, 4674.040], r),
            md("Directory removal", [7362.103, 3109.887, 5235.995, 3006.771], r),
            md("File creation", [11307.800, 4350.510, 7829.155, 4919.547], r),
            md("File stat", [384003.024, 350240.056, 367121.540, 23874.024], r),
            md("File read", [232482.043, 224497.492, 228489.767, 5645.930], r),
            md("File removal", [124752.673, 124405.574, 124579.124, 245.436], r),
            md("Tree creation", [2689.073, 806.207, 1747.640, 1331.388], r),
            md("Tree removal", [812.856, 362.278, 587.567, 318.607], r),
        ]
    );
    // `WARNING: Read bytes is 0 …` is a warning, not an error.
    assert!(p.errors.is_empty());
    assert!(p.ior.is_empty() && p.iterations.is_empty());
    assert_eq!(p.failure(), None);
}

#[test]
fn mdtest_paper_pvfs_files_only() {
    let p = read("mdtest_paper_pvfs.txt");
    let r = "ops/sec";
    assert_eq!(
        p.mdtest,
        [
            md("File creation", [55469.435, 47111.793, 51290.614, 5909.746], r),
            md("File stat", [355595.459, 309689.147, 332642.303, 32460.664], r),
            md("File read", [0.0; 4], r),
            md("File removal", [0.0; 4], r),
            md("Tree creation", [27244.165, 3684.139, 15464.152, 16659.454], r),
            md("Tree removal", [0.0; 4], r),
        ]
    );
}

#[test]
fn mdtest_4_0_0_summary_rate_heading() {
    let p = read("v4.0.0/mdtest_paper_pvfs.txt");
    assert_eq!(p.version.as_deref(), Some("4.0.0"));
    assert_eq!(
        p.command.as_deref(),
        Some(
            "/opt/ior-4.0.0/bin/mdtest '-C' '-T' '-d' '/mnt/pvfs/scratch/md' '-i2' '-I' '200' '-z' '2' '-b' '4' '-L' '-u' '-F'"
        )
    );
    let r = "ops/sec";
    assert_eq!(
        p.mdtest,
        [
            md("File creation", [4975.202, 3774.086, 4374.644, 849.317], r),
            md("File stat", [723896.920, 722688.607, 723292.763, 854.407], r),
            md("File read", [0.0; 4], r),
            md("File removal", [0.0; 4], r),
            md("Tree creation", [15463.551, 2360.329, 8911.940, 9265.377], r),
            md("Tree removal", [0.0; 4], r),
        ]
    );
}

/// `-Z`: headed `SUMMARY time (in ms/op)`, but the values are the seconds each phase took (see
/// the `mdtest` module), so the unit is "sec".
#[test]
// 0.318 is a measured time in the fixture, not 1/π.
#[allow(clippy::approx_constant)]
fn mdtest_z_prints_phase_seconds() {
    let p = read("mdtest_small_Z.txt");
    let s = "sec";
    assert_eq!(
        p.mdtest,
        [
            md("Directory creation", [0.384, 0.332, 0.358, 0.036], s),
            md("Directory stat", [0.001, 0.001, 0.001, 0.000], s),
            md("Directory rename", [0.018, 0.008, 0.013, 0.008], s),
            md("Directory removal", [0.338, 0.240, 0.289, 0.069], s),
            md("File creation", [0.457, 0.318, 0.388, 0.099], s),
            md("File stat", [0.001, 0.001, 0.001, 0.000], s),
            md("File read", [0.001, 0.001, 0.001, 0.000], s),
            md("File removal", [0.002, 0.002, 0.002, 0.000], s),
            md("Tree creation", [0.037, 0.022, 0.029, 0.010], s),
            md("Tree removal", [0.048, 0.005, 0.026, 0.031], s),
        ]
    );
}

/// mdtest 1.9: `SUMMARY:` (rates only), a colon after each name, with or without a space.
#[test]
fn mdtest_1_9() {
    let text = "\
-- started at 06/01/2017 10:00:00 --

mdtest-1.9.3 was launched with 4 total task(s) on 1 node(s)
Command line used: ./mdtest -n 1000 -i 3 -d /mnt/x/md
Path: /mnt/x
FS: 1.0 TiB   Used FS: 1.0%   Inodes: 10.0 Mi   Used Inodes: 1.0%

4 tasks, 4000 files/directories

SUMMARY: (of 3 iterations)
   Operation                  Max        Min       Mean    Std Dev
   ---------                  ---        ---       ----    -------
   Directory creation:   1500.000   1200.000   1350.000    122.474
   Directory stat    :  90000.000  85000.000  87500.000   2041.241
   File creation     :   3000.000   2500.000   2750.000    204.124
   Tree removal      :    300.000    250.000    275.000     20.412

-- finished at 06/01/2017 10:00:30 --
";
    let p = parse(text).unwrap();
    assert_eq!(p.version.as_deref(), Some("1.9.3"));
    assert_eq!(p.command.as_deref(), Some("./mdtest -n 1000 -i 3 -d /mnt/x/md"));
    let r = "ops/sec";
    assert_eq!(
        p.mdtest,
        [
            md("Directory creation", [1500.0, 1200.0, 1350.0, 122.474], r),
            md("Directory stat", [90000.0, 85000.0, 87500.0, 2041.241], r),
            md("File creation", [3000.0, 2500.0, 2750.0, 204.124], r),
            md("Tree removal", [300.0, 250.0, 275.0, 20.412], r),
        ]
    );
}

/// mdtest 3.3 with `-P` (shape from a published 3.3.0 run): `SUMMARY rate:` then
/// `SUMMARY time:`, ` :` after each name, and the stonewall row with `NA`s.
#[test]
fn mdtest_3_3_rate_and_time() {
    let text = "\
-- started at 01/19/2022 11:09:53 --

mdtest-3.3.0 was launched with 1 total task(s) on 1 node(s)
Command line used: mdtest '-n' '100' '-I' '10' '-z' '5' '-b' '2' '-R' '-P' '-Y'
Path: /nvmedata/testdata
FS: 46.6 TiB   Used FS: 1.0%   Inodes: 46.6 Mi   Used Inodes: 0.9%

Nodemap: 1
random seed: 1642561793
1 tasks, 6300 files/directories

SUMMARY rate: (of 1 iterations)
   Operation                      Max            Min           Mean        Std Dev
   ---------                      ---            ---           ----        -------
   Directory creation        :        143.807        143.807        143.807          0.000
   File creation             :       3309.966       3309.966       3309.966          0.000
   File create (stonewall)   :             NA             NA       3100.000             NA
   Tree removal              :        261.399        261.399        261.399          0.000

SUMMARY time: (of 1 iterations)
   Operation                      Max            Min           Mean        Std Dev
   ---------                      ---            ---           ----        -------
   Directory creation        :          0.695          0.695          0.695          0.000
   Tree removal              :          0.241          0.241          0.241          0.000
-- finished at 01/19/2022 11:10:04 --
";
    let p = parse(text).unwrap();
    assert_eq!(p.version.as_deref(), Some("3.3.0"));
    let stonewall = MdtestSummary {
        operation: "File create (stonewall)".to_owned(),
        max: None,
        min: None,
        mean: Some(3100.0),
        std: None,
        unit: "ops/sec".to_owned(),
    };
    assert_eq!(
        p.mdtest,
        [
            md("Directory creation", [143.807, 143.807, 143.807, 0.0], "ops/sec"),
            md("File creation", [3309.966, 3309.966, 3309.966, 0.0], "ops/sec"),
            stonewall,
            md("Tree removal", [261.399, 261.399, 261.399, 0.0], "ops/sec"),
            md("Directory creation", [0.695, 0.695, 0.695, 0.0], "sec"),
            md("Tree removal", [0.241, 0.241, 0.241, 0.0], "sec"),
        ]
    );
    let json = p.to_import_json("md.txt");
    assert_eq!(json["summary"][2]["max"], Value::Null);
    assert_eq!(json["summary"][2]["mean"], json!(3100.0));
}

/// mdtest 4.1 with `--showRankStatistics`: per-rank Max/Min/Mean before the per-iteration
/// columns; the summary is the per-iteration part, which is what the other versions print.
/// mdtest 4.0 snapshots headed `-Z` tables `(in ops/sec)`; the values are still seconds.
#[test]
fn mdtest_4_1_rank_statistics_and_mislabelled_time() {
    let text = "\
mdtest-4.1.0 was launched with 2 total task(s) on 1 node(s)
Command line used: mdtest '-n' '10' '--showRankStatistics'

SUMMARY rate (in ops/sec): (of 2 iterations)
   Operation     per Rank: Max            Min           Mean      per Iteration: Max            Min           Mean        Std Dev
   ---------               ---            ---           ----                      ---            ---           ----        -------
   Directory creation      14000.000       4500.000       9000.000            27254.990       9606.490      18430.740      12479.374
   Tree creation            2689.073        806.207       1747.640          2689.073        806.207       1747.640       1331.388

SUMMARY time (in ops/sec): (of 2 iterations)
   Operation                     Max            Min           Mean        Std Dev
   ---------                     ---            ---           ----        -------
   Directory creation              0.384          0.332          0.358          0.036
-- finished at 11/22/2026 02:32:41 --
";
    let p = parse(text).unwrap();
    assert_eq!(
        p.mdtest,
        [
            md("Directory creation", [27254.990, 9606.490, 18430.740, 12479.374], "ops/sec"),
            md("Tree creation", [2689.073, 806.207, 1747.640, 1331.388], "ops/sec"),
            md("Directory creation", [0.384, 0.332, 0.358, 0.036], "sec"),
        ]
    );
}

#[test]
fn mdtest_messages_inside_a_table_are_skipped_torn_rows_refused() {
    let lustre = text("mdtest_paper_lustre.txt");
    let noisy = lustre.replace(
        "   Directory stat ",
        "WARNING: unable to stat directory /mnt/pvfs/scratch/md/dir.mdtest.1.29 12\n   Directory stat ",
    );
    assert_eq!(parse(&noisy).unwrap().mdtest, read("mdtest_paper_lustre.txt").mdtest);
    let torn = lustre.replace("      12479.374", "");
    check_error(
        &torn,
        expect![
            "line 14: this mdtest SUMMARY row has 3 fields but the header at line 12 names 4; is other output mixed into it?"
        ],
    );
    let unknown = lustre.replace("SUMMARY rate (in ops/sec)", "SUMMARY speed");
    check_error(
        &unknown,
        expect![[
            r#"line 11: unknown mdtest heading "SUMMARY speed: (of 2 iterations)"; expected 'SUMMARY rate…' or 'SUMMARY time…', with no unit, '(in ops/sec)' or (time) '(in ms/op)'"#
        ]],
    );
}

// Failed runs.

#[test]
fn ior_bad_option() {
    let p = read("err_ior_bad_option.txt");
    assert_eq!((p.tool, p.version.as_deref()), (Tool::Ior, None));
    // Both ranks print the same lines; one of them mid-way through a line of the usage text.
    assert_eq!(
        p.errors,
        [
            "Error invalid argument: --no-such-option",
            "Error invalid argument: -t1m",
            "Error invalid argument: -b64m",
            "Error invalid argument: /mnt/pvfs/scratch/ior",
            "Invalid options",
        ]
    );
    assert_eq!(p.failure().as_deref(), Some("Error invalid argument: --no-such-option"));
}

#[test]
fn ior_paper_literal_b_says_what_replaced_it() {
    let p = read("err_ior_paper_literal_B.txt");
    assert_eq!(p.tool, Tool::Ior);
    assert_eq!(p.errors[0], "Error invalid argument: -B");
    expect!["Error invalid argument: -B — IOR 3.3.0 removed -B (O_DIRECT): use --posix.odirect or -O useO_DIRECT=1"]
    .assert_eq(&p.failure().unwrap());
}

#[test]
fn ior_block_not_a_multiple_of_transfer() {
    let p = read("err_ior_block_not_multiple_of_xfer.txt");
    assert_eq!(p.tool, Tool::Ior);
    assert_eq!(p.errors, ["ERROR: block size must be a multiple of transfer size, (ior.c:1520)"]);
    assert_eq!(
        p.failure().as_deref(),
        Some("ERROR: block size must be a multiple of transfer size, (ior.c:1520)")
    );
}

#[test]
fn ior_nonexistent_directory() {
    let open = |n: u32| {
        format!(
            "ERROR: open64(\"/mnt/pvfs/nonexistent/sub/ior.0000000{n}.0\", 16450, 0664) failed. \
             Error: No such file or directory, (aiori-POSIX.c:618)"
        )
    };
    for name in ["err_ior_nonexistent_dir.txt", "err_ior_nonexistent_dir.stdout"] {
        let p = read(name);
        assert_eq!(p.version.as_deref(), Some("4.1.0+dev"), "{name}");
        assert_eq!(
            p.command.as_deref(),
            Some("ior -w -r -C -i2 -t1m -b64m -F --posix.odirect -o /mnt/pvfs/nonexistent/sub/ior")
        );
        assert!(p.ior.is_empty() && p.iterations.is_empty(), "{name}");
        assert_eq!(p.errors, [open(0), open(1)], "{name}");
        assert_eq!(p.failure(), Some(open(0)), "{name}");
    }
    // Its stderr alone has nothing of IOR's: the statvfs message and MPI's notices.
    check_error(
        &text("err_ior_nonexistent_dir.stderr"),
        expect![[
            r#"not an IOR or mdtest output: no 'IOR-…' / 'mdtest-…' banner, JSON 'tests' or SUMMARY table found"#
        ]],
    );
}

#[test]
fn ior_unknown_directive() {
    let p = read("err_ior_unknown_directive.txt");
    assert_eq!(p.tool, Tool::Ior);
    assert_eq!(p.errors, ["Unrecognized parameter \"noSuchDirective\""]);
    expect![[r#"Unrecognized parameter "noSuchDirective" — an -O directive this IOR version does not know (`ior -h` lists them)"#]]
    .assert_eq(&p.failure().unwrap());
}

#[test]
fn mdtest_nonexistent_parent() {
    let p = read("err_mdtest_nonexistent_parent.txt");
    assert_eq!(p.tool, Tool::Mdtest);
    assert_eq!(p.version.as_deref(), Some("4.1.0+dev"));
    assert!(p.mdtest.is_empty());
    // The many `WARNING: unable to …` lines are not errors; the two ranks' ERROR lines are.
    assert_eq!(p.errors.len(), 2);
    assert_eq!(
        p.failure().as_deref(),
        Some(
            "ERROR: open64(\"/mnt/pvfs/nonexistent/a/b/test-dir.0-0/mdtest_tree.0/file.mdtest.1.0\", 66, 0664) \
             failed. Error: No such file or directory, (aiori-POSIX.c:618)"
        )
    );
}

#[test]
fn mdtest_has_no_summary_format_json() {
    let p = read("err_mdtest_summaryFormat_JSON_unsupported.txt");
    assert_eq!(p.tool, Tool::Mdtest);
    assert_eq!(
        p.errors,
        ["Error invalid argument: -O", "Error invalid argument: summaryFormat", "Invalid options"]
    );
    expect!["Error invalid argument: -O — mdtest has no -O option, so no summaryFormat=JSON: run it without -O and import its text output"]
    .assert_eq(&p.failure().unwrap());
}

#[test]
fn help_texts_are_runs_without_results() {
    for (name, tool) in [("ior_help.txt", Tool::Ior), ("mdtest_help.txt", Tool::Mdtest)] {
        let p = read(name);
        assert_eq!(p.tool, tool);
        assert!(p.errors.is_empty());
        assert!(p.failure().is_some_and(|f| f.contains("no error line")), "{name}");
    }
}

#[test]
fn ior_3_error_lines_keep_the_program_name() {
    let text = "IOR-3.3.0: MPI Coordinated Test of Parallel I/O\n\
                Began               : Thu Jul 28 08:12:41 2022\n\
                ior ERROR: open64(\"/x/testFile\", 66, 0664) failed, errno 2, No such file or directory (aiori-POSIX.c:412)\n";
    let p = parse(text).unwrap();
    assert_eq!(
        p.failure().as_deref(),
        Some(
            "ior ERROR: open64(\"/x/testFile\", 66, 0664) failed, errno 2, No such file or directory (aiori-POSIX.c:412)"
        )
    );
}

#[test]
fn other_files_are_not_outputs() {
    for name in ["fio_seq_1m.json", "fio_randrw_4k.json", "MANIFEST.tsv", "README.md"] {
        let error = parse(&text(name)).unwrap_err();
        assert!(matches!(error, ParseError::Unrecognized), "{name}: {error}");
    }
    check_error(
        "",
        expect![
            "not an IOR or mdtest output: no 'IOR-…' / 'mdtest-…' banner, JSON 'tests' or SUMMARY table found"
        ],
    );
    // An unrelated log's ERROR line is not taken for a failed IOR run.
    check_error(
        "ERROR: disk full\n",
        expect![
            "not an IOR or mdtest output: no 'IOR-…' / 'mdtest-…' banner, JSON 'tests' or SUMMARY table found"
        ],
    );
}

#[test]
fn parse_file_errors_name_the_file() {
    let missing = fixture("no_such_file.txt");
    let error = parse_file(&missing).unwrap_err().to_string();
    assert!(error.starts_with(&format!("cannot read {}: ", missing.display())), "{error}");
    let error = parse_file(&fixture("README.md")).unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "{}: not an IOR or mdtest output: no 'IOR-…' / 'mdtest-…' banner, JSON 'tests' or SUMMARY table found",
            fixture("README.md").display()
        )
    );
}

/// Every run in MANIFEST.tsv: exit code 0 ⇔ a summary and no failure.
#[test]
fn manifest_exit_codes_agree_with_failure() {
    let manifest = text("MANIFEST.tsv");
    for line in manifest.lines().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        let (name, exit_code) = (fields[0], fields[1]);
        // With -O summaryFile the results are in the summary file.
        let file = [format!("{name}.summary.json"), format!("{name}.txt")]
            .into_iter()
            .find(|f| fixture(f).exists())
            .unwrap_or_else(|| panic!("no file for {name}"));
        let p = read(&file);
        let summarised = !p.ior.is_empty() || !p.mdtest.is_empty();
        assert_eq!(exit_code == "0", summarised, "{file}");
        assert_eq!(exit_code == "0", p.failure().is_none(), "{file}: {:?}", p.failure());
    }
}

// The import shape.

#[test]
fn import_json_has_exactly_the_documented_keys() {
    let keys = |v: &Value| -> Vec<String> {
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    let ior = read("ior_tput.txt").to_import_json("ior_tput.txt");
    assert_eq!(keys(&ior), ["command", "file", "summary", "tool", "version"]);
    assert_eq!(ior["tool"], "ior");
    assert_eq!(
        keys(&ior["summary"][0]),
        [
            "block_bytes",
            "bw_max_mib",
            "bw_mean_mib",
            "bw_min_mib",
            "bw_std_mib",
            "file_per_proc",
            "iterations",
            "mean_time_s",
            "operation",
            "ops_max",
            "ops_mean",
            "ops_min",
            "ops_std",
            "tasks",
            "transfer_bytes",
        ]
    );
    let mdtest = read("mdtest_small_Z.txt").to_import_json("mdtest_small_Z.txt");
    assert_eq!(keys(&mdtest), ["command", "file", "summary", "tool", "version"]);
    assert_eq!(mdtest["tool"], "mdtest");
    assert_eq!(keys(&mdtest["summary"][0]), ["max", "mean", "min", "operation", "std", "unit"]);
    assert_eq!(mdtest["summary"][0]["unit"], "sec");
}

#[test]
fn import_json_of_ior_text() {
    let json = read("ior_tput.txt").to_import_json("ior_tput.txt");
    expect![[r#"
        {
          "command": "ior -w -r -C -i2 -t1m -b64m -F --posix.odirect -o /mnt/pvfs/scratch/ior",
          "file": "ior_tput.txt",
          "summary": [
            {
              "block_bytes": 67108864,
              "bw_max_mib": 760.83,
              "bw_mean_mib": 760.66,
              "bw_min_mib": 760.48,
              "bw_std_mib": 0.18,
              "file_per_proc": true,
              "iterations": 2,
              "mean_time_s": 0.16828,
              "operation": "write",
              "ops_max": 760.83,
              "ops_mean": 760.66,
              "ops_min": 760.48,
              "ops_std": 0.18,
              "tasks": 2,
              "transfer_bytes": 1048576
            },
            {
              "block_bytes": 67108864,
              "bw_max_mib": 1047.36,
              "bw_mean_mib": 873.61,
              "bw_min_mib": 699.86,
              "bw_std_mib": 173.75,
              "file_per_proc": true,
              "iterations": 2,
              "mean_time_s": 0.15255,
              "operation": "read",
              "ops_max": 1047.36,
              "ops_mean": 873.61,
              "ops_min": 699.86,
              "ops_std": 173.75,
              "tasks": 2,
              "transfer_bytes": 1048576
            }
          ],
          "tool": "ior",
          "version": "4.1.0+dev"
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&json).unwrap());
}

#[test]
fn import_json_of_csv_leaves_unstated_values_null() {
    let json = read("ior_tput_csv.txt").to_import_json("ior_tput_csv.txt");
    assert_eq!((&json["version"], &json["command"]), (&Value::Null, &Value::Null));
    for key in ["ops_max", "ops_min", "ops_mean", "ops_std", "file_per_proc"] {
        assert_eq!(json["summary"][0][key], Value::Null, "{key}");
    }
    assert_eq!(json["summary"][0]["tasks"], 2);
}

#[test]
fn import_json_of_a_failed_run_has_an_empty_summary() {
    let json = read("err_ior_bad_option.txt").to_import_json("bad.txt");
    assert_eq!(
        json,
        json!({"file": "bad.txt", "tool": "ior", "version": null, "command": null, "summary": []})
    );
}

// Units: each table's heading says what its values are in; a form not known is refused.

/// Every SUMMARY heading mdtest prints, and the unit of its values (see the `mdtest` module for
/// which version prints which, and why a time table is in seconds whatever its heading says).
#[test]
fn mdtest_every_heading_form_has_its_unit() {
    for (heading, unit) in [
        ("SUMMARY: (of 2 iterations)", "ops/sec"),
        ("SUMMARY rate: (of 2 iterations)", "ops/sec"),
        ("SUMMARY time: (of 2 iterations)", "sec"),
        ("SUMMARY rate (in ops/sec): (of 2 iterations)", "ops/sec"),
        ("SUMMARY time (in ops/sec): (of 2 iterations)", "sec"),
        ("SUMMARY time (in ms/op): (of 2 iterations)", "sec"),
    ] {
        let text = format!(
            "{heading}\n   Operation                     Max            Min           Mean        Std Dev\n   \
             ---------                     ---            ---           ----        -------\n   \
             File creation                 3.000          1.000          2.000          1.000\n"
        );
        let p = parse(&text).unwrap_or_else(|e| panic!("{heading}: {e}"));
        assert_eq!(p.mdtest, [md("File creation", [3.0, 1.0, 2.0, 1.0], unit)], "{heading}");
    }
}

/// A heading in a unit mdtest does not print is refused with its line, never read as a rate or
/// as seconds.
#[test]
fn mdtest_headings_in_unknown_units_are_refused_with_their_line() {
    let lustre = text("mdtest_paper_lustre.txt");
    for heading in [
        "SUMMARY time (in us/op)",
        "SUMMARY time (in ms)",
        "SUMMARY rate (in ops/min)",
        "SUMMARY rate (in ms/op)",
        "SUMMARY rate (in ops/sec",
        "SUMMARY latency",
    ] {
        let changed = lustre.replace("SUMMARY rate (in ops/sec)", heading);
        let error = parse(&changed).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("line 11: unknown mdtest heading \"{heading}")),
            "{heading}: {error}"
        );
    }
    // Through a file, the error names file:line.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("md.txt");
    std::fs::write(&path, lustre.replace("(in ops/sec)", "(in us/op)")).unwrap();
    let error = parse_file(&path).unwrap_err().to_string();
    assert!(error.starts_with(&format!("{}: line 11: unknown mdtest heading", path.display())), "{error}");
}

/// IOR's tables name their units in their column names (`bw(MiB/s)`, `Max(MiB)`, `Mean(s)`);
/// every form the real outputs print reads, and a column in another unit is refused.
#[test]
fn ior_columns_in_unknown_units_are_refused_with_their_line() {
    let tput = text("ior_tput.txt");
    for (from, to, expected) in [
        (
            "access    bw(MiB/s)",
            "access    bw(MB/s)  ",
            "line 33: IOR Results 'bw(MB/s)' is in a unit this parser does not know (expected MiB/s, s, KiB)",
        ),
        (
            "block(KiB)",
            "block(KB)",
            "line 33: IOR Results 'block(KB)' is in a unit this parser does not know (expected MiB/s, s, KiB)",
        ),
        (
            "Operation   Max(MiB)",
            "Operation   Max(MB) ",
            "line 41: IOR summary 'Max(MB)' is in a unit this parser does not know (expected MiB, OPs, s)",
        ),
        (
            "    Mean(s)",
            "   Mean(ms)",
            "line 41: IOR summary 'Mean(ms)' is in a unit this parser does not know (expected MiB, OPs, s)",
        ),
    ] {
        assert!(tput.contains(from), "{from}");
        let error = parse(&tput.replace(from, to)).unwrap_err().to_string();
        assert!(error.starts_with(expected), "{to}: {error}");
    }
    let csv = text("ior_tput_csv.txt");
    let error = parse(&csv.replace("bw(MiB/s)", "bw(GiB/s)")).unwrap_err().to_string();
    assert!(error.contains("IOR CSV 'bw(GiB/s)' is in a unit this parser does not know"), "{error}");
}

/// IOR's `Max Write:`/`Max Read:` lines (`PrintShortSummary`, IOR 2.x–3.x) read in their one
/// form, and are refused in another.
#[test]
fn ior_short_summary_lines_are_checked() {
    let mpiio = text("ior_tput_mpiio_v.txt");
    assert!(mpiio.contains("Max Write: 6520.65 MiB/sec (6837.39 MB/sec)"));
    assert_eq!(parse(&mpiio).unwrap().ior, read("ior_tput_mpiio_v.txt").ior);
    let other = mpiio.replace("6520.65 MiB/sec (6837.39 MB/sec)", "6.37 GiB/sec (6.84 GB/sec)");
    let error = parse(&other).unwrap_err().to_string();
    assert!(
        error.contains("IOR short summary 'Max Write: 6.37 GiB/sec (6.84 GB/sec)' is in a unit"),
        "{error}"
    );
}

// Linear work and bounded memory: every output is read a line at a time, once.

/// A reader that counts the bytes it hands out and the times it is asked for more.
struct Counting<'a> {
    inner: &'a [u8],
    given: usize,
}

impl Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = Read::read(&mut self.inner, buf)?;
        self.given += n;
        Ok(n)
    }
}

/// Outputs that were slow (1 MiB of blank lines took over a minute: each line's offset was
/// trimmed to the end of the text) or large: each is read in one pass, each line visited once,
/// for 1x and 8x the input, so the work grows with the input and no faster.
#[test]
fn every_output_is_read_once_a_line_at_a_time() {
    // Small enough for a debug build; the counts, not the sizes, are what is checked.
    let blank = "\n".repeat(1 << 16);
    let spaces = " \n".repeat(1 << 15);
    let tput = text("ior_tput.txt");
    let rows = tput.lines().filter(|l| l.starts_with("write ") || l.starts_with("read ")).take(4);
    let rows: String = rows.map(|l| format!("{l}\n")).collect();
    let iterations = format!("{tput}{}", rows.repeat(1024));
    let json = text("ior_tput_json.txt");
    let json_after_blanks = format!("{blank}{json}");
    let brace_then_blanks = format!("{{\n{blank}");
    let errors: String =
        (0..5_000).map(|i| format!("ERROR: distinct failure {i}, (aiori-POSIX.c:1)\n")).collect();
    for (name, input) in [
        ("blank lines", &blank),
        ("spaces", &spaces),
        ("IOR rows", &iterations),
        ("JSON after blank lines", &json_after_blanks),
        ("an open brace then blank lines", &brace_then_blanks),
        ("distinct error lines", &errors),
        ("mdtest", &text("mdtest_paper_lustre.txt")),
    ] {
        for times in [1, 8] {
            let input = input.repeat(times);
            let mut reader = Counting { inner: input.as_bytes(), given: 0 };
            let scan = scan(std::io::BufReader::new(&mut reader)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(scan.lines, input.lines().count(), "{name} x{times}: every line visited once");
            assert_eq!(reader.given, input.len(), "{name} x{times}: every byte read once");
        }
    }
}

/// The longest line is bounded: a file of one 20 MiB line is refused when the limit is
/// reached, not held whole; the lines before it are numbered.
#[test]
fn a_line_longer_than_the_limit_is_refused() {
    let long = format!("IOR-4.1.0: MPI Coordinated Test of Parallel I/O\n{}\n", "x".repeat(20 << 20));
    let mut reader = Counting { inner: long.as_bytes(), given: 0 };
    let error = parse_reader(std::io::BufReader::new(&mut reader)).unwrap_err().to_string();
    assert_eq!(error, format!("line 2 is longer than {MAX_LINE} bytes: not an IOR or mdtest output"));
    assert!(reader.given < long.len(), "reading stopped at the limit");
}

/// Rows without an `iter` column are numbered as they come, per operation.
#[test]
fn rows_without_iter_are_numbered_in_order() {
    let text = "\
access    bw(MiB/s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)
write     760.83     65536      1024.00    0.000381   0.168007   0.001263   0.168237
read      1047.36    65536      1024.00    0.000057   0.122195   0.000904   0.122212
write     760.48     65536      1024.00    0.000491   0.168076   0.001224   0.168315
";
    let p = parse(text).unwrap();
    let numbers: Vec<(&str, u64)> =
        p.iterations.iter().map(|it| (it.operation.as_str(), it.iteration)).collect();
    assert_eq!(numbers, [("write", 0), ("read", 0), ("write", 1)]);
}

/// mdtest 4.1 with `-P` prints both tables, each under its own heading (as
/// `summarize_results` in `src/mdtest.c` calls `summarize_results_rank0` twice): the rate
/// table's rows are rates, the time table's seconds, read from each heading in turn.
#[test]
fn mdtest_4_1_print_rate_and_time_reads_each_tables_unit() {
    let text = "\
mdtest-4.1.0+dev was launched with 2 total task(s) on 1 node(s)
Command line used: mdtest '-n' '100' '-P'

SUMMARY rate (in ops/sec): (of 1 iterations)
   Operation                     Max            Min           Mean        Std Dev
   ---------                     ---            ---           ----        -------
   File creation               8000.000       8000.000       8000.000          0.000

SUMMARY time (in ms/op): (of 1 iterations)
   Operation                     Max            Min           Mean        Std Dev
   ---------                     ---            ---           ----        -------
   File creation                  0.025          0.025          0.025          0.000
-- finished at 11/22/2026 02:32:41 --
";
    assert_eq!(
        parse(text).unwrap().mdtest,
        [
            md("File creation", [8000.0, 8000.0, 8000.0, 0.0], "ops/sec"),
            md("File creation", [0.025, 0.025, 0.025, 0.0], "sec"),
        ]
    );
}
