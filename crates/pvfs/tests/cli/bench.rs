//! `pvfsctl bench`, `bench import` and `report` on real agents over mutual TLS.

use crate::util::{AgentProcess, TestDir, cpu_hog, pvfs_agent, pvfsctl, text};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

/// A local cluster of client agents whose mount is a directory of the test.
fn cluster(dir: &TestDir, agents: &[&AgentProcess]) -> String {
    let mut toml = format!(
        "[cluster]\nname = \"b\"\nkind = \"local\"\n[local]\nmount = \"{0}/mnt\"\n[bench]\nvm_limit_mib = 500.0\n",
        dir.path().display()
    );
    for (i, agent) in agents.iter().enumerate() {
        toml += &format!(
            "[[node]]\nname = \"n{}\"\naddress = \"127.0.0.1:{}\"\nroles = [\"server\", \"client\"]\n",
            i + 1,
            agent.port
        );
    }
    std::fs::create_dir_all(dir.path().join("mnt")).unwrap();
    dir.write("cluster.toml", &toml).to_string_lossy().into_owned()
}

fn agents(dir: &TestDir, n: usize) -> Vec<AgentProcess> {
    dir.pki();
    (1..=n)
        .map(|i| {
            let name = format!("n{i}");
            dir.issue_agent(&name, "127.0.0.1");
            AgentProcess::start(dir, &name, "127.0.0.1")
        })
        .collect()
}

/// Agents whose engines run at a pace (`PVFS_TEST_ENGINE_PACE`, the debug build's test seam:
/// `TASK,FIRST_MS,EACH_MS`), one per `(name, pace)`.
fn paced_agents(dir: &TestDir, paces: &[(&str, &str)]) -> Vec<AgentProcess> {
    dir.pki();
    paces
        .iter()
        .map(|(name, pace)| {
            dir.issue_agent(name, "127.0.0.1");
            AgentProcess::start_with_env(dir, name, "127.0.0.1", &[("PVFS_TEST_ENGINE_PACE", pace)])
        })
        .collect()
}

fn lines(stdout: &[u8]) -> Vec<Value> {
    text(stdout).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// `--processes`: each recorded second lists the node's busiest processes (a CPU hog among
/// them, once the agent has its baseline).
#[test]
fn a_run_asked_for_processes_records_them_each_second() {
    let dir = TestDir::new();
    let agents = agents(&dir, 1);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let hog = cpu_hog();
    // Long enough (a few seconds) for seconds after the agent's baseline scan.
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--json",
        "--processes=3",
        "--set",
        "t=1m",
        "--set",
        "b=1536m",
        "--set",
        "i=1",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary = lines(&out.stdout).pop().unwrap();
    let run = dir.path().join(summary["results"].as_str().unwrap());
    let metrics = lines(std::fs::read_to_string(run.join("metrics/n1.jsonl")).unwrap().as_bytes());
    let listed: Vec<&Value> = metrics.iter().filter_map(|l| l["processes"].as_array()).flatten().collect();
    assert!(
        listed
            .iter()
            .any(|p| p["pid"] == hog.0.id() && p["name"] == "yes" && p["%CPU"].as_f64() > Some(20.0)),
        "{metrics:?}"
    );
    assert!(listed.iter().all(|p| p["kB_wr/s"].is_number() && p["kB_rd/s"].is_number()), "{listed:?}");
}

/// Issue 24, item 4: `--set t=1g --set b=16t` is inside every per-task limit, and on a local
/// cluster whose mount is on the machine's disk it wrote 39 GB in 27 s. The agents refuse the
/// write phase before a byte is written, naming the node and both numbers, and `bench` ends
/// with their words.
#[test]
fn a_run_larger_than_its_file_system_is_refused_before_it_writes() {
    let dir = TestDir::new();
    let agents = agents(&dir, 1);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--engine",
        "builtin",
        "--set",
        "t=1g",
        "--set",
        "b=16t",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("n1: the write phase needs 16.0 TiB"), "{stderr}");
    assert!(stderr.contains("would leave less than 5 %"), "{stderr}");
    let written: Vec<_> = walk(&dir.path().join("mnt")).into_iter().filter(|p| p.is_file()).collect();
    assert!(written.is_empty(), "files were written: {written:?}");
}

/// Every path under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            all.extend(walk(&path));
        }
        all.push(path);
    }
    all
}

#[test]
fn a_throughput_run_keeps_everything_and_reports_like_ior() {
    let dir = TestDir::new();
    let agents = agents(&dir, 2);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--json",
        "--procs",
        "2",
        "--set",
        "t=64k",
        "--set",
        "b=1m",
        "--set",
        "i=2",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = lines(&out.stdout);
    let done: Vec<&Value> = events.iter().filter(|e| e["event"] == "phase_done").collect();
    assert_eq!(done.len(), 4, "write and read, two iterations: {events:?}");
    // 2 clients x 2 tasks x 1 MiB per phase.
    assert!(done.iter().all(|e| e["bytes"] == 4 << 20 && e["ops"] == 64), "{done:?}");
    let summary = events.last().unwrap();
    assert_eq!(summary["event"], "summary");
    let write = &summary["ior"][0];
    assert_eq!(
        (write["operation"].as_str(), write["tasks"].as_u64(), write["iterations"].as_u64()),
        (Some("write"), Some(4), Some(2))
    );
    assert_eq!(write["transfer_bytes"], 65536);

    let run = std::path::PathBuf::from(summary["results"].as_str().unwrap());
    let run = dir.path().join(run);
    for file in
        ["cluster.toml", "commands.txt", "events.jsonl", "results.json", "results.csv", "metrics/n1.jsonl"]
    {
        assert!(run.join(file).exists(), "{file} missing from {}", run.display());
    }
    let metrics = std::fs::read_to_string(run.join("metrics/n1.jsonl")).unwrap();
    assert!(!metrics.contains("processes"), "not asked for, not scanned: {metrics}");
    let commands = std::fs::read_to_string(run.join("commands.txt")).unwrap();
    assert!(
        commands.contains("mpirun -np 4 ior -w -r --posix.odirect -C -i2 -t64k -b1m -F -o "),
        "{commands}"
    );
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    assert_eq!((results["servers"].as_u64(), results["clients"].as_u64()), (Some(2), Some(2)));
    assert_eq!(results["complete"], true, "the record written at the end replaced the first");
    assert_eq!(results["phases"][0]["tasks"].as_array().unwrap().len(), 4);
    assert_eq!(std::fs::read_to_string(run.join("results.csv")).unwrap().lines().count(), 5);
    assert!(
        std::fs::read_dir(dir.path().join("mnt/pvfs-bench")).unwrap().flatten().all(|d| std::fs::read_dir(
            d.path()
        )
        .unwrap()
        .count()
            == 0),
        "the test files are removed after each iteration, as IOR does"
    );

    let report = dir.ctl(&["report", run.to_str().unwrap(), "--out", "rep"]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
    let md = std::fs::read_to_string(dir.path().join("rep/report.md")).unwrap();
    assert!(md.contains("| 2 | 2 × 2 | 1000 |"), "2 servers at 500 MiB/s each: {md}");
    assert!(md.contains("## Per-client fairness") && md.contains("| n1 |") && md.contains("| n2 |"), "{md}");
    // Every transfer timed: 2 clients x 2 tasks x 16 transfers per phase.
    assert!(md.contains("## Latency: `") && md.contains("| 0 | write | 64 | "), "{md}");
    assert!(dir.path().join("rep/scale-out.png").exists());
}

/// Issue 28: IOR's stonewall with wear-out across two clients on real agents. n2's engine is
/// a straggler (the debug build's test seam: 400 ms lost before its first transfer); at the
/// 1 s stonewall each client says how far it got, the coordinator hands both the most, and n2
/// goes on to it: every task writes the same count, short of its block, and the read reads
/// no more than that back.
#[test]
fn wear_out_across_two_clients_brings_the_straggler_to_the_same_count() {
    let dir = TestDir::new();
    let started = paced_agents(&dir, &[("n1", "0,0,2"), ("n2", "1,400,2")]);
    let cluster = cluster(&dir, &started.iter().collect::<Vec<_>>());
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--json",
        "--procs",
        "1",
        "--set",
        "t=4k",
        "--set",
        "b=64m",
        "--set",
        "B=false",
        "--set",
        "i=1",
        "--set",
        "D=1",
        "--set",
        "stoneWallingWearOut=1",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary = lines(&out.stdout).pop().unwrap();
    let run = dir.path().join(summary["results"].as_str().unwrap());
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    assert_eq!(
        (results["params"]["deadline"].as_u64(), results["params"]["wear_out"].as_bool()),
        (Some(1), Some(true))
    );
    let phase_ops = |i: usize| -> Vec<u64> {
        results["phases"][i]["tasks"].as_array().unwrap().iter().map(|t| t["ops"].as_u64().unwrap()).collect()
    };
    let (write, read) = (phase_ops(0), phase_ops(1));
    assert_eq!(results["phases"][0]["phase"], "write");
    assert_eq!(write.len(), 2);
    assert_eq!(write[0], write[1], "both clients made the most either made: {write:?}");
    assert!(write[0] > 50 && write[0] < 16_384, "stopped by the stonewall, short of the block: {write:?}");
    // The read is stopped at what was written, or sooner by its own stonewall (IOR's -D
    // holds for reads too), and agrees the same way: never past the end of what was written.
    assert!(read[0] == read[1] && read[0] <= write[0], "read {read:?} after write {write:?}");
    let tasks = results["phases"][0]["tasks"].as_array().unwrap();
    let end = |node: &str| tasks.iter().find(|t| t["node"] == node).unwrap()["end"].as_f64().unwrap();
    assert!(end("n2") > end("n1"), "the straggler went on after the stonewall to catch up");
    // elbencho's first done: when n1's task ended, n1 had written all of its part and n2 not
    // yet; over that shorter time. The phase's own figures are the last done.
    let first = &results["phases"][0]["first_done"];
    let total = results["phases"][0]["bytes"].as_u64().unwrap();
    let n1_bytes = tasks.iter().find(|t| t["node"] == "n1").unwrap()["bytes"].as_u64().unwrap();
    let first_bytes = first["bytes"].as_u64().unwrap();
    assert!(first_bytes >= n1_bytes && first_bytes < total, "{first} of {total}, n1 {n1_bytes}");
    assert!(
        first["seconds"].as_f64().unwrap() < results["phases"][0]["seconds"].as_f64().unwrap(),
        "{first}"
    );
    // Every transfer timed (each took at least the seam's 2 ms), merged over both clients,
    // with each client's own: the straggler's 400 ms transfer is its max, and the run's.
    let latency = &results["phases"][0]["latency"];
    let ns = |v: &Value| v.as_u64().unwrap();
    assert_eq!(ns(&latency["count"]), write[0] + write[1], "{latency}");
    assert!(ns(&latency["p50_ns"]) >= 1_980_000, "{latency}");
    assert!(ns(&latency["clients"]["n2"]["max_ns"]) >= 396_000_000, "{latency}");
    assert!(ns(&latency["clients"]["n1"]["max_ns"]) < ns(&latency["clients"]["n2"]["max_ns"]), "{latency}");
    assert_eq!(latency["max_ns"], latency["clients"]["n2"]["max_ns"]);
    // The same transfers second by second on the run's timeline: every one counted in exactly
    // one second, each second's no faster than the seam's 2 ms, and the straggler's 400 ms
    // transfer the worst second's max.
    let seconds: Vec<Value> = lines(&out.stdout)
        .into_iter()
        .filter(|e| e["event"] == "latency_second" && e["phase"] == "write")
        .collect();
    // (A write of ~1.4 s whose reports may all arrive within one second of the clock.)
    assert!(!seconds.is_empty(), "the write has its seconds");
    assert_eq!(seconds.iter().map(|s| ns(&s["count"])).sum::<u64>(), ns(&latency["count"]), "{seconds:?}");
    assert!(seconds.iter().all(|s| ns(&s["min_ns"]) >= 1_980_000 && s["iteration"] == 0), "{seconds:?}");
    // Whole seconds of the phase, from its start.
    let start = lines(&out.stdout)
        .into_iter()
        .find(|e| e["event"] == "phase_started" && e["phase"] == "write")
        .unwrap()["at"]
        .as_f64()
        .unwrap();
    let into = |s: &Value| s["at"].as_f64().unwrap() - start;
    assert!(
        seconds.iter().all(|s| (into(s) - into(s).round()).abs() < 1e-6 && into(s) >= 0.0),
        "{seconds:?}"
    );
    assert!(seconds.windows(2).all(|w| into(&w[0]) < into(&w[1])), "{seconds:?}");
    assert_eq!(seconds.iter().map(|s| ns(&s["max_ns"])).max(), Some(ns(&latency["max_ns"])));
    let kept = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    assert_eq!(
        kept.matches("\"latency_second\"").count(),
        lines(&out.stdout).iter().filter(|e| e["event"] == "latency_second").count()
    );
    assert!(!kept.contains("\"recent\""), "a client's buckets are not kept, only the seconds");
    let report = dir.ctl(&["report", run.to_str().unwrap(), "--out", "rep"]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
    let md = std::fs::read_to_string(dir.path().join("rep/report.md")).unwrap();
    let row = format!("| 0 | write | {} | ", seconds.len());
    assert!(md.contains("### Latency second by second") && md.contains(&row), "{row}: {md}");
    assert!(md.contains("![latency per second](latency-seconds-"), "{md}");
}

/// Issue 28: mdtest's `-W` across two clients through their agents, as io500's mdtest-easy
/// write runs it (`-n` files per task in a directory of its own, `-N 1`): n2's task loses
/// 400 ms first; at the 1 s stonewall both clients say how many files they made, the
/// coordinator hands both the most, and the stat and removal after it take exactly that many
/// each (the files of the neighbour, one stride on).
#[test]
fn mdtest_stonewall_across_two_clients_brings_both_to_the_same_count() {
    let dir = TestDir::new();
    let started = paced_agents(&dir, &[("n1", "0,0,1"), ("n2", "1,400,1")]);
    let cluster = cluster(&dir, &started.iter().collect::<Vec<_>>());
    let set = ["z=0", "n=1000000", "W=1", "N=1", "i=1", "r=true"];
    let mut args =
        vec!["bench", &cluster, "--json", "--preset", "metadata", "--procs", "1", "--results", "res"];
    for s in &set {
        args.extend(["--set", s]);
    }
    let out = dir.ctl(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary = lines(&out.stdout).pop().unwrap();
    let run = dir.path().join(summary["results"].as_str().unwrap());
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    assert_eq!(
        (results["params"]["per_task"].as_u64(), results["params"]["deadline"].as_u64()),
        (Some(1_000_000), Some(1))
    );
    let phase = |label: &str| {
        let phases = results["phases"].as_array().unwrap();
        let found =
            phases.iter().find(|p| p["phase"] == label).unwrap_or_else(|| panic!("{label}: {results}"));
        let tasks = found["tasks"].as_array().unwrap();
        let ops: Vec<u64> = tasks.iter().map(|t| t["ops"].as_u64().unwrap()).collect();
        let end = |node: &str| tasks.iter().find(|t| t["node"] == node).unwrap()["end"].as_f64().unwrap();
        (ops, end("n2") - end("n1"))
    };
    let (made, lag) = phase("File creation");
    assert_eq!(made.len(), 2);
    assert_eq!(made[0], made[1], "both clients made the most either made: {made:?}");
    assert!(made[0] > 50 && made[0] < 1000, "stopped by the 1 s stonewall at 1 ms a file: {made:?}");
    assert!(lag > 0.0, "the straggler went on after the stonewall to catch up");
    for label in ["File stat", "File removal"] {
        assert_eq!(phase(label).0, made, "{label} takes the files made, no more");
    }
}

/// Issue 28: `--preset io500` on two agents, small: every stage of io500's in its order on
/// the built-in engine, the writes stonewalled and their counts carried to the reads, data
/// verified on read, the find finding mdtest-hard's `*01*` files made after the timestamp;
/// the run told as io500 tells one (its lines, its score, its rules: a 2 s stonewall is
/// invalid), recorded, written as io500's result files, and read back by `bench import`.
#[test]
fn the_io500_preset_runs_every_stage_and_is_told_as_io500_tells_it() {
    let dir = TestDir::new();
    let agents = agents(&dir, 2);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let knobs = [
        "debug.stonewall-time=2",
        "ior-easy.transferSize=64k",
        "ior-easy.blockSize=2m",
        "ior-hard.segmentCount=40",
        "mdtest-easy.n=150",
        "mdtest-hard.n=150",
    ];
    let mut args = vec!["bench", &cluster, "--preset", "io500", "--procs", "2", "--results", "res"];
    for knob in &knobs {
        args.extend(["--set", knob]);
    }
    let out = dir.ctl(&args);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}\n{}", text(&out.stderr));
    let order: Vec<&str> =
        said.lines().filter_map(|l| l.strip_prefix("io500 ")?.strip_suffix(": started")).collect();
    assert_eq!(
        order,
        [
            "ior-easy-write",
            "mdtest-easy-write",
            "timestamp",
            "ior-hard-write",
            "mdtest-hard-write",
            "find",
            "ior-easy-read",
            "mdtest-easy-stat",
            "ior-hard-read",
            "mdtest-hard-stat",
            "mdtest-easy-delete",
            "mdtest-hard-read",
            "mdtest-hard-delete"
        ]
    );
    assert!(said.contains("ERROR INVALID stonewall-time 2s != 300s"), "{said}");
    assert!(
        said.lines().any(|l| l.starts_with("[RESULT]") && l.contains(" find ") && l.contains("kIOPS")),
        "{said}"
    );
    let score_line = said.lines().find(|l| l.starts_with("[SCORE ] Bandwidth ")).expect(&said);
    assert!(score_line.ends_with("[INVALID]"), "{score_line}");

    let runs: Vec<_> =
        std::fs::read_dir(dir.path().join("res")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 1);
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(runs[0].join("results.json")).unwrap()).unwrap();
    assert_eq!(results["tool"], "io500");
    assert_eq!(results["params"]["options"]["stonewall"], 2);
    let io500 = &results["io500"];
    assert_eq!(io500["procs"], 4);
    assert_eq!(io500["phases"].as_array().unwrap().len(), 13);
    let phases = results["phases"].as_array().unwrap();
    let of = |stage: &str, label: &str| -> &Value {
        phases
            .iter()
            .find(|p| p["stage"] == stage && p["phase"] == label)
            .unwrap_or_else(|| panic!("{stage} {label}"))
    };
    // Every task's files were found where io500 puts them, read back whole and verified.
    assert_eq!(of("ior-easy-read", "read")["bytes"], 4 * (2 << 20));
    assert_eq!(of("ior-hard-read", "read")["bytes"], 4 * 40 * 47008);
    assert_eq!(of("mdtest-hard-read", "File read")["ops"], 4 * 150);
    assert_eq!(of("mdtest-hard-read", "File read")["bytes"], 4 * 150 * 3901);
    // The find scanned every file (ior-easy's 4, ior-hard's 1, mdtest's 2 × 600) and found
    // file.mdtest.T.101 of each task's mdtest-hard files.
    let find = of("find", "find");
    assert_eq!((find["ops"].as_u64(), find["found"].as_u64()), (Some(4 + 1 + 1200), Some(4)));
    let scanned: Vec<u64> =
        find["tasks"].as_array().unwrap().iter().map(|t| t["ops"].as_u64().unwrap()).collect();
    assert_eq!(scanned.len(), 2, "both clients scanned their share: {scanned:?}");
    // Changed since the timestamp as the file system's clock says: a directory made on it.
    let command = io500["phases"][5]["command"].as_str().unwrap();
    assert!(command.contains("/timestamp/test-dir.0-0/mdtest_tree.0 -size 3901c -name *01* -C"), "{command}");
    // Nothing is left on the file system: io500 removes what it made.
    let data = std::path::Path::new(results["dir"].as_str().unwrap());
    for family in ["ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard", "timestamp"] {
        let left: Vec<_> = std::fs::read_dir(data.join(family)).map(|d| d.count()).into_iter().collect();
        assert!(left.iter().all(|n| *n == 0), "{family}: {left:?}");
    }

    // The report shows it as it shows an imported io500 run.
    let report = dir.ctl(&["report", runs[0].to_str().unwrap(), "--out", "rep"]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
    let md = std::fs::read_to_string(dir.path().join("rep/report.md")).unwrap();
    assert!(md.contains("## IO500") && md.contains(" | find | "), "{md}");
    assert!(md.contains("- stonewall-time 2s != 300s"), "{md}");

    // io500's files, read back by bench import to the same score.
    let written = runs[0].join("io500");
    let summary = std::fs::read_to_string(written.join("result_summary.txt")).unwrap();
    assert!(summary.contains(score_line), "{summary}");
    let imported = dir.ctl(&["bench", "import", written.to_str().unwrap(), "--results", "imp"]);
    assert_eq!(imported.status.code(), Some(0), "{}", text(&imported.stderr));
    let back: Vec<_> =
        std::fs::read_dir(dir.path().join("imp")).unwrap().map(|e| e.unwrap().path()).collect();
    let back: Value =
        serde_json::from_str(&std::fs::read_to_string(back[0].join("results.json")).unwrap()).unwrap();
    // io500's files hold six decimals.
    let micro = |v: &Value| (v.as_f64().unwrap() * 1e6).round();
    for key in ["bandwidth", "metadata", "total"] {
        assert_eq!(micro(&back["io500"]["score"][key]), micro(&io500["score"][key]), "{key}");
    }
    assert_eq!(back["io500"]["score"]["valid"], false);
}

/// The real io500 that `cargo xtask vendor` (run by `cargo xtask ci`) built from the
/// workplace's shared/vendor archives into target/vendor.
fn real_io500() -> std::path::PathBuf {
    let vendor = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/vendor");
    // The latest recipe's build (their names sort by it) when older ones are still there.
    let mut builds: Vec<_> =
        std::fs::read_dir(&vendor).into_iter().flatten().map(|e| e.unwrap().path()).collect();
    builds.sort();
    let built =
        builds.into_iter().rev().find(|d| d.join(".built").is_file() && d.join("io500/io500").is_file());
    let dir = built.unwrap_or_else(|| {
        panic!("no real io500 in {}: run `cargo xtask vendor` (cargo xtask ci does)", vendor.display())
    });
    std::fs::canonicalize(dir.join("io500/io500")).unwrap()
}

/// Issue 28: `--engine io500` runs the real io500 (built from its own sources) under real
/// mpirun on the client, with the ini the agent wrote from the knobs; its figures arrive as
/// they happen, are kept in the run's record with the time each ended, and are read back by
/// `bench import` to the same score. A program the agent must not run as root is refused.
#[test]
fn engine_io500_runs_the_real_io500_under_mpirun_and_keeps_its_figures() {
    let dir = TestDir::new();
    let agents = agents(&dir, 1);
    let io500 = real_io500();
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let toml = std::fs::read_to_string(&cluster).unwrap().replace(
        "[bench]\n",
        &format!("[bench]\nlauncher = \"mpi\"\nengine = \"io500\"\nio500 = \"{}\"\n", io500.display()),
    );
    std::fs::write(&cluster, toml).unwrap();
    let knobs = [
        "debug.stonewall-time=1",
        "ior-easy.transferSize=64k",
        "ior-easy.blockSize=2m",
        "ior-hard.segmentCount=40",
        "mdtest-easy.n=150",
        "mdtest-hard.n=150",
    ];
    let mut args = vec!["bench", &cluster, "--preset", "io500", "--procs", "2", "--results", "res"];
    for knob in &knobs {
        args.extend(["--set", knob]);
    }
    let out = dir.ctl(&args);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}\n{}", text(&out.stderr));
    // Each stage's start, and each figure once (io500's own line is not shown twice).
    let started: Vec<&str> =
        said.lines().filter_map(|l| l.strip_prefix("io500 ")?.strip_suffix(": started")).collect();
    assert_eq!(started.len(), 13, "{said}");
    assert_eq!((started[0], started[12]), ("ior-easy-write", "mdtest-hard-delete"));
    let results: Vec<&str> = said.lines().filter(|l| l.starts_with("[RESULT]")).collect();
    assert_eq!(results.len(), 12, "{said}");
    assert!(said.contains("ERROR INVALID stonewall-time 1s != 300s"), "{said}");
    let score_line = said.lines().find(|l| l.starts_with("[SCORE ] Bandwidth ")).expect(&said);
    assert!(score_line.ends_with("[INVALID]"), "{score_line}");

    let runs: Vec<_> =
        std::fs::read_dir(dir.path().join("res")).unwrap().map(|e| e.unwrap().path()).collect();
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(runs[0].join("results.json")).unwrap()).unwrap();
    assert_eq!((record["engine"].as_str(), record["launcher"].as_str()), (Some("io500"), Some("mpi")));
    let run = &record["io500"];
    assert_eq!(run["procs"], 2);
    // io500's own banner, as `xtask vendor` built it: its commit, the standard mode.
    assert_eq!(
        (run["version"].as_str(), run["mode"].as_str()),
        (Some("02091cf254d8"), Some("standard")),
        "{run}"
    );
    let phases = run["phases"].as_array().unwrap();
    // io500 02091cf's standard run: the 13 stages and its unscored ior-rnd4K-easy-read.
    assert_eq!(phases.len(), 14, "{run}");
    let started_at = record["started"].as_f64().unwrap();
    let mut last = started_at;
    for p in phases {
        let ended = p["ended"].as_f64().unwrap_or_else(|| panic!("{p}"));
        assert!(ended >= last && ended <= record["finished"].as_f64().unwrap(), "{p}");
        last = ended;
    }
    // The ini the agent wrote, in the run's directory: the knobs, the data and result places.
    let data = std::path::Path::new(record["dir"].as_str().unwrap());
    let ini = std::fs::read_to_string(data.join("io500.ini")).unwrap();
    for line in
        ["stonewall-time = 1", "blockSize = 2m", "segmentCount = 40", "n = 150", "drop-caches = FALSE"]
    {
        assert!(ini.lines().any(|l| l == line), "{line:?} in {ini}");
    }
    assert!(ini.contains(&format!("datadir = {}\n", data.display())), "{ini}");
    // The same ini is kept with the results.
    assert_eq!(std::fs::read_to_string(runs[0].join("raw/io500.ini")).unwrap(), ini);
    // io500 ran in it: its own result files are there, and it removed its data.
    assert!(data.join("io500-results/result_summary.txt").is_file());
    let raw = std::fs::read_to_string(runs[0].join("raw/mpirun.out")).unwrap();
    assert!(raw.contains("[RESULT]       ior-easy-write"), "{raw}");

    // Kept as io500 tells it: bench import reads the run's io500/ back to the same score.
    let written = runs[0].join("io500");
    let imported = dir.ctl(&["bench", "import", written.to_str().unwrap(), "--results", "imp"]);
    assert_eq!(imported.status.code(), Some(0), "{}", text(&imported.stderr));
    let back: Vec<_> =
        std::fs::read_dir(dir.path().join("imp")).unwrap().map(|e| e.unwrap().path()).collect();
    let back: Value =
        serde_json::from_str(&std::fs::read_to_string(back[0].join("results.json")).unwrap()).unwrap();
    let micro = |v: &Value| (v.as_f64().unwrap() * 1e6).round();
    for key in ["bandwidth", "metadata", "total"] {
        assert_eq!(micro(&back["io500"]["score"][key]), micro(&run["score"][key]), "{key}");
    }

    // The report places each phase over the nodes' per-second metrics.
    let report = dir.ctl(&["report", runs[0].to_str().unwrap(), "--out", "rep"]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
    let md = std::fs::read_to_string(dir.path().join("rep/report.md")).unwrap();
    assert!(md.contains("| disks read (MiB/s) | disks written (MiB/s) |"), "{md}");
    let row =
        md.lines().find(|l| l.contains(" | ior-easy-write | ") && l.split('|').count() == 8).expect(&md);
    let from: f64 = row.split('|').nth(3).unwrap().trim().parse().unwrap();
    assert!(from >= 0.0, "{row}");

    // A copy anyone may replace is not run as root, and the agent says why.
    let loose = dir.path().join("loose");
    std::fs::create_dir_all(&loose).unwrap();
    std::fs::copy(&io500, loose.join("io500")).unwrap();
    std::fs::set_permissions(&loose, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let toml = std::fs::read_to_string(&cluster).unwrap().replace(
        &format!("io500 = \"{}\"", io500.display()),
        &format!("io500 = \"{}\"", loose.join("io500").display()),
    );
    std::fs::write(&cluster, toml).unwrap();
    let out = dir.ctl(&args);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("is not run:") && err.contains("can be written by its group or others"), "{err}");

    // Without [bench] io500, nothing runs and the file is named.
    let toml = std::fs::read_to_string(&cluster).unwrap();
    let toml: String = toml.lines().filter(|l| !l.starts_with("io500 =")).map(|l| format!("{l}\n")).collect();
    std::fs::write(&cluster, toml).unwrap();
    let out = dir.ctl(&args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("set [bench] io500 = PATH"), "{}", text(&out.stderr));
}

/// Issue 28: `--drop-caches all` syncs and drops every node's caches before each read (for
/// real: the agents run as root here), says so, and keeps what each drop did in the phase's
/// record; writes are not preceded by a drop. The mpi launcher is refused before anything runs.
/// A sync that takes longer than the coordinator's request timeout (the agents' test seam
/// makes it 3 s, the timeout is 2 s) is waited for: after a buffered write a node's write-back
/// can take minutes.
#[test]
fn drop_caches_before_reads_is_done_on_every_node_and_recorded() {
    let dir = TestDir::new();
    dir.pki();
    let agents: Vec<AgentProcess> = ["n1", "n2"]
        .iter()
        .map(|name| {
            dir.issue_agent(name, "127.0.0.1");
            AgentProcess::start_with_env(&dir, name, "127.0.0.1", &[("PVFS_TEST_SYNC_DELAY_MS", "3000")])
        })
        .collect();
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--timeout",
        "2s",
        "--procs",
        "1",
        "--set",
        "t=64k",
        "--set",
        "b=4m",
        "--set",
        "B=false",
        "--set",
        "i=1",
        "--drop-caches",
        "all",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("iteration 0 read: caches dropped on n1, n2 ("), "{said}");
    let run = std::fs::read_dir(dir.path().join("res")).unwrap().next().unwrap().unwrap().path();
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["drop_caches"], "all");
    let (write, read) = (&results["phases"][0], &results["phases"][1]);
    assert_eq!((write["phase"].as_str(), read["phase"].as_str()), (Some("write"), Some("read")));
    assert!(write.get("caches_dropped").is_none(), "no drop before a write: {write}");
    let drops = read["caches_dropped"].as_array().unwrap();
    let nodes: Vec<&str> = drops.iter().map(|d| d["node"].as_str().unwrap()).collect();
    assert_eq!(nodes, ["n1", "n2"]);
    assert!(drops.iter().all(|d| d["seconds"].as_f64().unwrap() >= 3.0), "each sync took its 3 s: {drops:?}");
    // Both agents are on this machine and drop at once: at least one saw the cache shrink.
    assert!(
        drops.iter().any(|d| d["cached_after_kib"].as_u64() < d["cached_before_kib"].as_u64()),
        "{drops:?}"
    );
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    assert!(events.contains("\"event\":\"caches_dropped\""), "{events}");

    let out =
        dir.ctl(&["bench", &cluster, "--launcher", "mpi", "--drop-caches", "clients", "--results", "res2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("drop_caches needs the agents launcher"), "{}", text(&out.stderr));
    assert!(!dir.path().join("res2").exists(), "nothing was run");
}

/// Issue 28: `bench compare` on two real runs (within a wide threshold: passes), then on a copy
/// of the second whose writes were halved in its record (a regression with significance: exit
/// 1, named), with the settings that differ; an import is refused (exit 2).
#[test]
fn compare_gates_on_a_significant_regression_and_names_what_differs() {
    let dir = TestDir::new();
    let agents = agents(&dir, 2);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let bench = |results: &str, transfer: &str| {
        let out = dir.ctl(&[
            "bench",
            &cluster,
            "--procs",
            "1",
            "--set",
            &format!("t={transfer}"),
            "--set",
            "b=2m",
            "--set",
            "B=false",
            "--set",
            "i=3",
            "--results",
            results,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        std::fs::read_dir(dir.path().join(results)).unwrap().next().unwrap().unwrap().path()
    };
    let (a, b) = (bench("ra", "64k"), bench("rb", "128k"));
    let out =
        dir.ctl(&["bench", "compare", a.to_str().unwrap(), b.to_str().unwrap(), "--threshold", "1000%"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("differs: params.transfer 65536 -> 131072"), "{said}");
    assert!(said.contains("write") && said.contains("MiB/s") && said.contains("p99 latency"), "{said}");
    // Copies of the second run's record with its writes' bandwidth set: a steady baseline
    // (real runs this small vary too much for three iterations to show anything), and half.
    let with_writes = |name: &str, bw: [f64; 3]| {
        let copy = dir.path().join(name);
        std::fs::create_dir(&copy).unwrap();
        let mut record: Value =
            serde_json::from_str(&std::fs::read_to_string(b.join("results.json")).unwrap()).unwrap();
        let writes = record["phases"].as_array_mut().unwrap().iter_mut().filter(|p| p["phase"] == "write");
        for (phase, bw) in writes.zip(bw) {
            phase["bw_mib"] = serde_json::json!(bw);
        }
        std::fs::write(copy.join("results.json"), serde_json::to_string(&record).unwrap()).unwrap();
    };
    with_writes("steady", [100.0, 101.0, 99.0]);
    with_writes("halved", [50.0, 51.0, 49.0]);
    let out = dir.ctl(&["bench", "compare", "steady", "halved", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
    let c = lines(&out.stdout).pop().unwrap();
    let write = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["phase"] == "write" && r["metric"] == "bw_mib")
        .unwrap();
    assert_eq!(write["verdict"], "regressed", "{write}");
    assert!((write["change"].as_f64().unwrap() + 0.5).abs() < 1e-9, "{write}");
    // An import has no iterations to compare.
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../pvfs-bench/testdata/ior");
    let out =
        dir.ctl(&["bench", "import", "--results", "imp", fixtures.join("ior_tput.txt").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let imported = std::fs::read_dir(dir.path().join("imp")).unwrap().next().unwrap().unwrap().path();
    let out = dir.ctl(&["bench", "compare", imported.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("an imported output has no phases or iterations to compare"));
}

#[test]
fn a_metadata_run_reports_mdtest_rows() {
    let dir = TestDir::new();
    let agents = agents(&dir, 1);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--preset",
        "metadata",
        "--set",
        "I=5",
        "--set",
        "i=1",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("mpirun -np 1 mdtest -C -T -i1 -I 5 -z 2 -b 4 -L -u -F -d "), "{stdout}");
    for row in ["Tree creation", "File creation", "File stat"] {
        assert!(stdout.contains(&format!("   {row}")), "{row} missing: {stdout}");
    }
    // -C -T runs only creation and stat; mdtest prints the other rows as zeros.
    let removal =
        stdout.lines().find(|l| l.starts_with("   File removal")).expect("mdtest's File removal row");
    assert_eq!(removal.split_whitespace().skip(2).collect::<Vec<_>>(), ["0.000"; 4], "{stdout}");
}

#[test]
fn a_client_lost_mid_run_ends_it_naming_the_client_and_keeps_what_was_done() {
    let dir = TestDir::new();
    let mut agents = agents(&dir, 2);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let mut child = dir
        .command(&pvfsctl())
        .args([
            "bench",
            &cluster,
            "--json",
            "--set",
            "t=1m",
            "--set",
            "b=64m",
            "--set",
            "i=50",
            "--results",
            "res",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        // After the first phase, take n2 away for good.
        if event["event"] == "phase_done" && seen.iter().all(|e: &Value| e["event"] != "phase_done") {
            agents[1].child.kill().unwrap();
        }
        seen.push(event);
    }
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: the run stopped: iteration ") && stderr.contains("client n2"),
        "{stderr}"
    );
    let summary = seen.last().unwrap();
    assert!(summary["error"].as_str().unwrap().contains("client n2"), "{summary}");
    let run = dir.path().join(summary["results"].as_str().unwrap());
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    assert!(!results["phases"].as_array().unwrap().is_empty(), "the phases before the loss are kept");
    assert!(results["error"].as_str().unwrap().contains("client n2"));
    assert!(run.join("metrics/n1.jsonl").exists(), "the surviving node's metrics are kept");
}

#[test]
fn import_reads_ior_and_mdtest_outputs_and_names_failed_runs() {
    let dir = TestDir::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../pvfs-bench/testdata/ior");
    let tput = fixtures.join("ior_tput.txt");
    let md = fixtures.join("mdtest_paper_pvfs.txt");
    let bad = fixtures.join("err_ior_paper_literal_B.txt");
    let out = dir.ctl(&[
        "bench",
        "import",
        "--json",
        tput.to_str().unwrap(),
        md.to_str().unwrap(),
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "a failed run among the files");
    let per_file = lines(&out.stdout);
    assert_eq!(per_file.len(), 3);
    assert_eq!(per_file[0]["tool"], "ior");
    assert_eq!(per_file[0]["version"], "4.1.0+dev");
    // ior_tput.txt's summary: write Max 760.83, read Mean 873.61.
    assert_eq!(per_file[0]["summary"][0]["bw_max_mib"], 760.83);
    assert_eq!(per_file[0]["summary"][1]["bw_mean_mib"], 873.61);
    assert_eq!(per_file[1]["tool"], "mdtest");
    assert_eq!(per_file[1]["summary"][0]["operation"], "File creation");
    assert_eq!(per_file[1]["summary"][0]["unit"], "ops/sec");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("err_ior_paper_literal_B.txt: the run failed: Error invalid argument: -B"),
        "{stderr}"
    );
    // Two runs stored; the failed one is not.
    assert_eq!(std::fs::read_dir(dir.path().join("pvfs-results")).unwrap().count(), 2);
}

/// Issue 28: a real io500 run (its result directory, and its stdout) imported to the same
/// figures, stored with the files it was read from, and shown by `report` with why io500 called
/// it invalid.
#[test]
fn import_reads_a_real_io500_run_from_its_directory_or_its_stdout() {
    let dir = TestDir::new();
    let run = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pvfs-bench/testdata/io500/small-2procs-stonewall5");
    let results = run.join("results");
    let stdout = run.join("stdout.txt");
    let out = dir.ctl(&["bench", "import", results.to_str().unwrap(), stdout.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("results: IO500 (version not stated) (standard), 14 phases, score Bandwidth 0.236037 GiB/s : IOPS 8.799605 kiops : TOTAL 1.441193 [INVALID]"), "{said}");
    assert!(text(&out.stderr).contains("invalid: stonewall-time 5s != 300s"));
    let mut stored: Vec<_> =
        std::fs::read_dir(dir.path().join("pvfs-results")).unwrap().map(|e| e.unwrap().path()).collect();
    stored.sort();
    assert_eq!(stored.len(), 2);
    let record = |d: &std::path::Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("results.json")).unwrap()).unwrap()
    };
    let (a, b) = (record(&stored[0]), record(&stored[1]));
    assert_eq!((a["tool"].as_str(), b["tool"].as_str()), (Some("io500"), Some("io500")));
    assert_eq!(a["io500"]["score"], b["io500"]["score"]);
    assert_eq!(a["io500"]["score"]["total"], 1.441193);
    assert_eq!(a["io500"]["phases"][0]["unit"], "GiB/s");
    let from_dir = if a["io500"]["procs"] == 2 { &stored[0] } else { &stored[1] };
    for kept in ["result_summary.txt", "result.txt", "config.ini"] {
        assert!(from_dir.join("raw").join(kept).is_file(), "{kept} kept");
    }
    let report = dir.ctl(&["report", from_dir.to_str().unwrap(), "--out", "rep"]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
    let md = std::fs::read_to_string(dir.path().join("rep/report.md")).unwrap();
    assert!(md.contains("## IO500"), "{md}");
    assert!(md.contains("| ior-easy-write | 0.329499 | GiB/s | 3.151 | **INVALID** |"), "{md}");
    assert!(md.contains("| standard | 2 | 0.236037 | 8.799605 | 1.441193 | **INVALID** |"), "{md}");
    assert!(md.contains("- ior-easy-write: Write phase needed 1.517456s instead of stonewall 5s"), "{md}");
    // An edited copy is refused, and nothing is stored for it.
    let edited = dir.path().join("edited");
    std::fs::create_dir(&edited).unwrap();
    let summary = std::fs::read_to_string(results.join("result_summary.txt")).unwrap();
    std::fs::write(edited.join("result_summary.txt"), summary.replace("TOTAL 1.441193", "TOTAL 9.441193"))
        .unwrap();
    let out = dir.ctl(&["bench", "import", "edited"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("the score's total: 9.441193 is printed"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_dir(dir.path().join("pvfs-results")).unwrap().count(), 2);
}

/// Two files of the same name (`a/out.txt`, `b/out.txt`) imported at once, in the same second:
/// each is a run of its own, and neither overwrites the other.
#[test]
fn import_of_two_files_of_one_name_keeps_both() {
    let dir = TestDir::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../pvfs-bench/testdata/ior");
    for (sub, fixture) in [("a", "ior_tput.txt"), ("b", "mdtest_small_Z.txt")] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        std::fs::copy(fixtures.join(fixture), dir.path().join(sub).join("out.txt")).unwrap();
    }
    let out = dir.ctl(&["bench", "import", "a/out.txt", "b/out.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut runs: Vec<_> =
        std::fs::read_dir(dir.path().join("pvfs-results")).unwrap().map(|d| d.unwrap().path()).collect();
    runs.sort();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let mut tools = Vec::new();
    for run in &runs {
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
        assert_eq!(
            doc["run"].as_str(),
            run.file_name().unwrap().to_str(),
            "the record names its own directory"
        );
        assert_eq!(doc["complete"], true);
        tools.push((
            doc["tool"].as_str().unwrap().to_owned(),
            doc["imported_from"].as_str().unwrap().to_owned(),
        ));
        assert!(run.join("raw/out.txt").exists());
    }
    tools.sort();
    assert_eq!(
        tools,
        [("ior".to_owned(), "a/out.txt".to_owned()), ("mdtest".to_owned(), "b/out.txt".to_owned())]
    );
    // mdtest's `SUMMARY time (in ms/op)` table holds seconds per phase (see pvfs_bench::parse::mdtest).
    // Runs are named in the order imported (`-2` when in the same second): b/out.txt is second.
    let md: Value =
        serde_json::from_str(&std::fs::read_to_string(runs[1].join("results.json")).unwrap()).unwrap();
    assert_eq!(md["summary"]["mdtest"][0]["unit"], "sec");
}

/// The README's exit codes: 2 for a file that is not an output (or cannot be read), 1 for a
/// run that failed, 0 otherwise; each error is said once.
#[test]
fn import_exit_codes_follow_the_readme_and_errors_are_said_once() {
    let dir = TestDir::new();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../pvfs-bench/testdata/ior");
    let failed = fixtures.join("err_ior_paper_literal_B.txt");
    let good = fixtures.join("ior_tput.txt");
    dir.write("notes.txt", "not a benchmark output\n");

    let out = dir.ctl(&["bench", "import", "notes.txt"]);
    assert_eq!(out.status.code(), Some(2), "bad input: {}", text(&out.stderr));
    let out = dir.ctl(&["bench", "import", "missing.txt"]);
    assert_eq!(out.status.code(), Some(2), "bad input: {}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("No such file or directory").count(), 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let out = dir.ctl(&["bench", "import", failed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "a failed run: {}", text(&out.stderr));
    let out = dir.ctl(&["bench", "import", failed.to_str().unwrap(), "notes.txt", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "bad input outweighs a failed run: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains("ior_tput.txt: IOR 4.1.0+dev"), "the good file is still imported");
    // The cluster file of a run that cannot be read: the reason once, not once per cause.
    let out = dir.ctl(&["bench", "missing.toml"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("No such file or directory").count(), 1, "{stderr}");
    // An I/O error storing the results (the results path is a file) is said once, exit 2.
    dir.write("taken", "");
    let out = dir.ctl(&["bench", "import", "--results", "taken", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: creating the results directory taken: "), "{stderr}");
}

/// `pvfsctl bench` killed mid-run (no chance to write anything more): the run's directory
/// holds the results.json written when it started, and `report` reads it, naming the run as
/// incomplete.
#[test]
fn a_run_killed_mid_way_leaves_a_directory_report_names_incomplete() {
    let dir = TestDir::new();
    let agents = agents(&dir, 1);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let mut child = dir
        .command(&pvfsctl())
        .args([
            "bench",
            &cluster,
            "--json",
            "--set",
            "t=1m",
            "--set",
            "b=16m",
            "--set",
            "i=200",
            "--results",
            "res",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    for line in BufReader::new(stdout).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["event"] == "phase_done" {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let runs: Vec<_> =
        std::fs::read_dir(dir.path().join("res")).unwrap().map(|d| d.unwrap().path()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(runs[0].join("results.json")).unwrap()).unwrap();
    assert_eq!(results["complete"], false);
    let report = dir.ctl(&["report", runs[0].to_str().unwrap(), "--out", "rep"]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
    let md = std::fs::read_to_string(dir.path().join("rep/report.md")).unwrap();
    assert!(md.contains("(incomplete)` did not finish"), "{md}");
}

/// Ctrl-C (SIGINT) during `pvfsctl bench`: the clients' phase is stopped, results.json is
/// written with the phases that finished and `"complete": false`, and the exit code is 130.
#[test]
fn ctrl_c_keeps_the_finished_phases_and_exits_130() {
    let dir = TestDir::new();
    let agents = agents(&dir, 1);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let mut child = dir
        .command(&pvfsctl())
        .args([
            "bench",
            &cluster,
            "--json",
            "--set",
            "t=1m",
            "--set",
            "b=16m",
            "--set",
            "i=200",
            "--results",
            "res",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut done = 0;
    for line in stdout.by_ref() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["event"] == "phase_done" {
            done += 1;
            break;
        }
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT)
        .unwrap();
    // Phases that finished between the signal and its handling count too.
    let mut last = Value::Null;
    for line in stdout {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["event"] == "phase_done" {
            done += 1;
        }
        last = event;
    }
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("SIGINT: stopping the run"), "{stderr}");
    assert_eq!(last["event"], "summary", "{last}");
    let runs: Vec<_> =
        std::fs::read_dir(dir.path().join("res")).unwrap().map(|d| d.unwrap().path()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(runs[0].join("results.json")).unwrap()).unwrap();
    assert_eq!((results["complete"].as_bool(), results["version"].as_u64()), (Some(false), Some(1)));
    assert!(results["error"].as_str().is_some_and(|e| e.ends_with(": interrupted")), "{results}");
    let phases = results["phases"].as_array().unwrap();
    assert_eq!(phases.len(), done, "{results}");
    assert_eq!(phases[0]["phase"], "write");
    assert!(results["finished"].as_f64().is_some(), "{results}");
    assert_eq!(std::fs::read_to_string(runs[0].join("results.csv")).unwrap().lines().count(), done + 1);
    let events = std::fs::read_to_string(runs[0].join("events.jsonl")).unwrap();
    assert_eq!(events.lines().filter(|l| l.contains("\"event\":\"phase_done\"")).count(), done, "{events}");
}

#[test]
fn a_sweep_runs_each_point_and_tables_them() {
    let dir = TestDir::new();
    let agents = agents(&dir, 1);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let bad =
        dir.ctl(&["bench", &cluster, "--sweep", "transfer=64k,3m", "--set", "b=1m", "--results", "res"]);
    assert_eq!(bad.status.code(), Some(2), "a bad point is refused before anything runs");
    assert!(text(&bad.stderr).contains("multiple of transfer"), "{}", text(&bad.stderr));
    assert!(!dir.path().join("res").exists());
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--sweep",
        "procs=1,3",
        "--set",
        "t=64k",
        "--set",
        "b=512k",
        "--set",
        "i=1",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("== sweep procs=1") && stdout.contains("== sweep procs=3"), "{stdout}");
    assert!(stdout.contains("sweep over procs:"), "{stdout}");
    let runs: Vec<_> =
        std::fs::read_dir(dir.path().join("res")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 2);
    let tasks: Vec<u64> = runs
        .iter()
        .map(|r| {
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(r.join("results.json")).unwrap()).unwrap();
            assert_eq!(doc["sweep"]["key"], "procs");
            doc["summary"]["ior"][0]["tasks"].as_u64().unwrap()
        })
        .collect();
    let mut tasks = tasks;
    tasks.sort_unstable();
    assert_eq!(tasks, [1, 3]);
}

#[test]
fn the_fio_engine_runs_real_fio_on_iors_files() {
    let dir = TestDir::new();
    let agents = agents(&dir, 2);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--engine",
        "fio",
        "--json",
        "--set",
        "t=64k",
        "--set",
        "b=1m",
        "--set",
        "i=2",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = lines(&out.stdout);
    let done: Vec<&Value> = events.iter().filter(|e| e["event"] == "phase_done").collect();
    assert_eq!(done.len(), 4);
    // fio's own counts: 2 tasks x 1 MiB in 64 KiB requests per phase.
    assert!(done.iter().all(|e| e["bytes"] == 2 << 20 && e["ops"] == 32), "{done:?}");
    let summary = events.last().unwrap();
    let run = dir.path().join(summary["results"].as_str().unwrap());
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["engine"], "fio");
    // fio's own latency histograms (json+), merged like the engine's: every I/O, both clients.
    let latency = &results["phases"][0]["latency"];
    assert_eq!(latency["count"], 32, "{latency}");
    assert_eq!(latency["clients"].as_object().unwrap().len(), 2, "{latency}");
    assert!(
        done.iter().all(|e| e["p50_ns"].is_null() && e["latency"]["p50_ns"].as_u64() > Some(0)),
        "{done:?}"
    );
    let bad = dir.ctl(&["bench", &cluster, "--engine", "fio", "--preset", "metadata"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("metadata presets need engine builtin"), "{}", text(&bad.stderr));
}

/// The mpi launcher with the built-in engine: the first client's agent runs real Open MPI
/// `mpirun` over a hostfile of both clients (one machine here, so one merged line), each rank
/// a `pvfs-agent engine --mpi` process, meeting the others in the run's directory.
#[test]
fn the_mpi_launcher_runs_the_engine_as_ranks_under_real_mpirun() {
    let dir = TestDir::new();
    let agents = agents(&dir, 2);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--launcher",
        "mpi",
        "--json",
        "--procs",
        "2",
        "--set",
        "t=64k",
        "--set",
        "b=1m",
        "--set",
        "i=2",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let events = lines(&out.stdout);
    let launched = events.iter().find(|e| e["event"] == "launched").expect("a launched event");
    let command = launched["command"].as_str().unwrap();
    assert_eq!(launched["node"], "n1");
    assert!(command.starts_with("mpirun --hostfile ") && command.contains(" -np 4 "), "{command}");
    assert!(
        command.contains(" engine --mpi --dir ") && command.contains("--set transfer=65536"),
        "{command}"
    );
    assert_eq!(launched["hostfile"], "127.0.0.1 slots=4\n");
    let done: Vec<&Value> = events.iter().filter(|e| e["event"] == "phase_done").collect();
    assert_eq!(done.len(), 4, "write and read, two iterations: {events:?}");
    assert!(done.iter().all(|e| e["bytes"] == 4 << 20 && e["ops"] == 64), "{done:?}");
    // Each rank's last progress line carries its last transfers' times: every phase's seconds
    // hold all 64 transfers, before the phase's end.
    for d in &done {
        let at = events.iter().position(|e| std::ptr::eq(e, *d)).unwrap();
        let counted: u64 = events[..at]
            .iter()
            .filter(|e| {
                e["event"] == "latency_second" && e["iteration"] == d["iteration"] && e["phase"] == d["phase"]
            })
            .map(|e| e["count"].as_u64().unwrap())
            .sum();
        assert_eq!(counted, 64, "{d}: {events:?}");
    }
    // Each phase is told whole before the next one starts, however mpirun interleaves the
    // ranks' lines.
    let order: Vec<&str> = events
        .iter()
        .filter_map(|e| match e["event"].as_str() {
            Some(kind @ ("phase_started" | "phase_done")) => Some(kind),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["phase_started", "phase_done"].repeat(4), "{events:?}");
    let summary = events.last().unwrap();
    assert_eq!(summary["ior"][0]["tasks"], 4);
    let run = dir.path().join(summary["results"].as_str().unwrap());
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    assert_eq!((results["launcher"].as_str(), results["engine"].as_str()), (Some("mpi"), Some("builtin")));
    let nodes: Vec<&str> = results["phases"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["node"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, ["n1", "n1", "n2", "n2"], "ranks fill the first client's slots first");
    let commands = std::fs::read_to_string(run.join("commands.txt")).unwrap();
    assert!(commands.contains("# Run on n1:\nmpirun --hostfile "), "{commands}");
    assert!(run.join("raw/mpirun.out").exists());
    let left: Vec<_> = std::fs::read_dir(dir.path().join("mnt/pvfs-bench"))
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten().map(|e| e.file_name()))
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("mpi-hostfile")], "test files and barriers removed");
}

/// Issue 28: the mpi launcher's ranks of the built-in engine agree a wear-out at a barrier of
/// their own (IOR's Allreduce(MAX) made of files): rank 1 straggles (the debug build's test
/// seam, passed from n1's agent through mpirun), and every rank writes the same count.
#[test]
fn the_mpi_ranks_agree_a_wear_out_at_a_barrier() {
    let dir = TestDir::new();
    let started = paced_agents(&dir, &[("n1", "1,400,2"), ("n2", "1,400,2")]);
    let cluster = cluster(&dir, &started.iter().collect::<Vec<_>>());
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--launcher",
        "mpi",
        "--json",
        "--procs",
        "1",
        "--set",
        "t=4k",
        "--set",
        "b=64m",
        "--set",
        "B=false",
        "--set",
        "i=1",
        "--set",
        "D=1",
        "--set",
        "wear_out=true",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let summary = lines(&out.stdout).pop().unwrap();
    let run = dir.path().join(summary["results"].as_str().unwrap());
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    let write: Vec<u64> = results["phases"][0]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["ops"].as_u64().unwrap())
        .collect();
    assert_eq!(write.len(), 2);
    assert!(write[0] == write[1] && write[0] > 50 && write[0] < 16_384, "{write:?}");
    let tasks = results["phases"][0]["tasks"].as_array().unwrap();
    let end = |task: u64| tasks.iter().find(|t| t["task"] == task).unwrap()["end"].as_f64().unwrap();
    assert!(end(1) > end(0), "the straggler went on after the stonewall to catch up");
    // First done, from the ranks' progress lines: when rank 0 ended, rank 1 had not written
    // all of its part; over that shorter time.
    let phase = &results["phases"][0];
    let first = &phase["first_done"];
    let first_bytes = first["bytes"].as_u64().unwrap_or_else(|| panic!("{phase}"));
    assert!(first_bytes < phase["bytes"].as_u64().unwrap(), "{first}");
    assert!(first["seconds"].as_f64().unwrap() < phase["seconds"].as_f64().unwrap(), "{first}");
}

/// `--engine ior` with the real IOR and mdtest (hpc/ior 5fcf0ba, built by `cargo xtask vendor`
/// beside the real io500) under real mpirun: the agent finds them on its PATH, reads IOR's
/// version from its help, and their own reports are parsed into the run's summary.
#[test]
fn engine_ior_runs_the_real_ior_and_mdtest_under_mpirun() {
    let dir = TestDir::new();
    dir.pki();
    let bin = real_io500().parent().unwrap().join("bin");
    assert!(bin.join("ior").is_file() && bin.join("mdtest").is_file(), "{}", bin.display());
    dir.issue_agent("n1", "127.0.0.1");
    let agent = AgentProcess::start_with_path(&dir, "n1", "127.0.0.1", Some(&bin));
    let cluster = cluster(&dir, &[&agent]);
    let ior = ["t=256k", "b=4m", "i=2", "B=false"];
    let mut args = vec!["bench", &cluster, "--launcher", "mpi", "--engine", "ior", "--json", "--procs", "2"];
    for set in &ior {
        args.extend(["--set", set]);
    }
    args.extend(["--results", "res"]);
    let out = dir.ctl(&args);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let summary = lines(&out.stdout).pop().unwrap();
    let rows = summary["ior"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{summary}");
    for (row, op) in rows.iter().zip(["write", "read"]) {
        assert_eq!((row["operation"].as_str(), row["tasks"].as_u64()), (Some(op), Some(2)), "{row}");
        assert!(row["bw_mean_mib"].as_f64().unwrap() > 0.0, "{row}");
    }
    let run = dir.path().join(summary["results"].as_str().unwrap());
    let raw = std::fs::read_to_string(run.join("raw/mpirun.out")).unwrap();
    // IOR's own account of what it ran: the arguments the agent built.
    assert!(raw.contains("Command line        : ior -w -r -C -i2 -t256k -b4m -F -o "), "{raw}");

    // mdtest, the same way.
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--launcher",
        "mpi",
        "--engine",
        "ior",
        "--json",
        "--preset",
        "metadata",
        "--procs",
        "2",
        "--set",
        "I=20",
        "--set",
        "i=1",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let summary = lines(&out.stdout).pop().unwrap();
    let rows = summary["mdtest"].as_array().unwrap();
    let create =
        rows.iter().find(|r| r["operation"] == "File creation").unwrap_or_else(|| panic!("{summary}"));
    assert!(create["mean"].as_f64().unwrap() > 0.0, "{create}");
}

/// A stand-in for `ior`, for what the real one (run in
/// `engine_ior_runs_the_real_ior_and_mdtest_under_mpirun`) cannot show: the exact arguments and
/// each rank's oom_score_adj, recorded, and a failed IOR whose arguments the plan would have
/// refused first. It answers `ior -h` with IOR 4.1's real help and, as rank 0, prints a real IOR
/// 4.1 output (or a real failed one). mpirun, the agent and the parsing are the real ones.
fn stand_in_ior(dir: &TestDir, output: &str, code: i32) -> std::path::PathBuf {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../pvfs-bench/testdata/ior");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = -h ]; then cat '{help}'; exit 1; fi\n\
         if [ \"${{OMPI_COMM_WORLD_RANK:-0}}\" = 0 ]; then echo \"$@\" > '{args}'; \
         cat /proc/self/oom_score_adj > '{oom}'; cat '{out}'; fi\nexit {code}\n",
        help = data.join("ior_help.txt").display(),
        args = dir.path().join("ior-args").display(),
        oom = dir.path().join("ior-oom").display(),
        out = data.join(output).display(),
    );
    let path = bin.join("ior");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn engine_ior_runs_under_mpirun_and_its_report_is_parsed() {
    let dir = TestDir::new();
    dir.pki();
    let bin = stand_in_ior(&dir, "ior_tput.txt", 0);
    dir.issue_agent("n1", "127.0.0.1");
    let agent = AgentProcess::start_with_path(&dir, "n1", "127.0.0.1", Some(&bin));
    protect_like_the_unit(&agent);
    let cluster = cluster(&dir, &[&agent]);
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--launcher",
        "mpi",
        "--engine",
        "ior",
        "--json",
        "--procs",
        "2",
        "--set",
        "t=1m",
        "--set",
        "b=64m",
        "--set",
        "i=2",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    // IOR 4.1's help lists --posix.odirect, so -B is not used.
    let args = std::fs::read_to_string(dir.path().join("ior-args")).unwrap();
    assert!(args.starts_with("-w -r --posix.odirect -C -i2 -t1m -b64m -F -o "), "{args}");
    // An MPI rank (started by the real mpirun, started by the agent at -500) is not protected.
    let oom = std::fs::read_to_string(dir.path().join("ior-oom")).unwrap();
    assert_eq!(oom.trim(), "500", "the rank's oom_score_adj");
    let summary = lines(&out.stdout).pop().unwrap();
    // The numbers of ior_tput.txt's summary: write 760.66 mean, read 1047.36 max.
    assert_eq!(summary["ior"][0]["operation"], "write");
    assert_eq!(summary["ior"][0]["bw_mean_mib"], 760.66);
    assert_eq!(summary["ior"][1]["bw_max_mib"], 1047.36);
    let run = dir.path().join(summary["results"].as_str().unwrap());
    let raw = std::fs::read_to_string(run.join("raw/mpirun.out")).unwrap();
    assert!(raw.contains("Summary of all tests:"), "{raw}");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["engine"], "ior");

    // A failed IOR: its ERROR line and the node, exit 1.
    std::fs::remove_file(bin.join("ior")).unwrap();
    stand_in_ior(&dir, "err_ior_block_not_multiple_of_xfer.txt", 255);
    let out = dir.ctl(&["bench", &cluster, "--launcher", "mpi", "--engine", "ior", "--results", "res"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("IOR under mpirun on n1 ended with exit"), "{err}");
    assert!(err.contains("ERROR: block size must be a multiple of transfer size"), "{err}");
}

#[test]
fn engine_ior_without_ior_installed_or_with_agents_is_refused_clearly() {
    let dir = TestDir::new();
    let agents = agents(&dir, 1);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let out = dir.ctl(&["bench", &cluster, "--engine", "ior"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("engine \"ior\" runs under launcher \"mpi\""),
        "{}",
        text(&out.stderr)
    );
    let out = dir.ctl(&["bench", &cluster, "--engine", "fio", "--launcher", "mpi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not an MPI program"), "{}", text(&out.stderr));
    let out = dir.ctl(&["bench", &cluster, "--engine", "ior", "--launcher", "mpi", "--results", "res"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("client n1") && err.contains("ior is not installed on this client"), "{err}");
}

/// The agent's systemd unit sets `OOMScoreAdjust=-500`; do the same to the test's agent, so
/// that what its children get is not merely the test runner's 0, and return the score set.
/// Lowering a score needs CAP_SYS_RESOURCE, which some test machines (containers) withhold;
/// there the agent gets a distinctive raised score instead, which its children would equally
/// inherit without the trampoline.
fn protect_like_the_unit(agent: &AgentProcess) -> i32 {
    let path = format!("/proc/{}/oom_score_adj", agent.child.id());
    let score = match std::fs::write(&path, "-500") {
        Ok(()) => -500,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            std::fs::write(&path, "321").unwrap();
            321
        }
        Err(e) => panic!("{path}: {e}"),
    };
    assert_eq!(std::fs::read_to_string(&path).unwrap().trim(), score.to_string());
    score
}

/// The processes whose parent is `pid`, with their command lines.
fn children_of(pid: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid …: the comm may hold spaces, so look after its closing paren.
        let ppid =
            stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid == Some(pid) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            out.push((child, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
        }
    }
    out
}

#[test]
fn oversized_parameters_are_refused_before_anything_runs() {
    let dir = TestDir::new();
    let agents = agents(&dir, 1);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    // What once aborted the agent on a 1 TiB allocation.
    let out = dir.ctl(&["bench", &cluster, "--set", "b=1t", "--set", "t=1t", "--results", "res"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("--set t=1t") && err.contains("transfer 1t is larger than 1g"), "{err}");
    assert!(!dir.path().join("res").exists(), "nothing ran");

    // The same in the cluster file: named at its line.
    let toml = std::fs::read_to_string(&cluster).unwrap() + "[bench.params]\nt = \"1t\"\n";
    let bad = dir.write("bad.toml", &toml);
    let line = toml.lines().count();
    let out = dir.ctl(&["bench", bad.to_str().unwrap(), "--results", "res"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "bad.toml:{line}:5: [bench] params: t = \"1t\": transfer 1t is larger than 1g"
        )),
        "{err}"
    );

    // Within every bound, but more memory than the client has: the agent says so, and serves on.
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--procs",
        "4096",
        "--set",
        "t=1g",
        "--set",
        "b=1g",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("client n1") && err.contains("4096 tasks need about 4.0 TiB of memory"), "{err}");
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--set",
        "t=64k",
        "--set",
        "b=256k",
        "--set",
        "i=1",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// The built-in engine runs as the agent's child, with the highest OOM score whatever the
/// agent's own; killed mid-phase (as the OOM killer would), the phase ends with an error naming
/// the client and the cause, and the agent runs the next benchmark.
#[test]
fn a_killed_engine_ends_the_phase_clearly_and_the_agent_serves_the_next() {
    let dir = TestDir::new();
    let agents = agents(&dir, 1);
    let agent_score = protect_like_the_unit(&agents[0]);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    let mut bench = dir
        .command(&pvfsctl())
        .args([
            "bench",
            &cluster,
            "--json",
            "--set",
            "t=1m",
            "--set",
            "b=64m",
            "--set",
            "i=200",
            "--results",
            "res",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let agent_pid = agents[0].child.id();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (engine, score) = loop {
        assert!(std::time::Instant::now() < deadline, "no engine process appeared under the agent");
        // Once the trampoline has become the engine (its command line no longer says
        // oom-exec), the score it set is in place.
        let found = children_of(agent_pid)
            .into_iter()
            .find(|(_, cmd)| cmd.contains(" engine-phase ") && !cmd.contains("oom-exec"));
        if let Some((pid, _)) = found
            && let Ok(score) = std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj"))
        {
            let killed = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            if killed.is_ok() {
                break (pid, score);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(score.trim(), "1000", "the engine's oom_score_adj (the agent's is {agent_score})");
    let status = bench.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut bench.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("client n1: the agent answered Internal: the built-in engine on n1 (pid {engine}) was killed by SIGKILL (not by the OOM killer")),
        "{stderr}"
    );
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--set",
        "t=64k",
        "--set",
        "b=256k",
        "--set",
        "i=1",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(0), "the agent serves the next run: {}", text(&out.stderr));
}

/// fio starts through the trampoline too: a stand-in records the score it runs with.
#[test]
fn fio_does_not_inherit_the_agents_oom_protection() {
    let dir = TestDir::new();
    dir.pki();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        "#!/bin/sh\ncat /proc/self/oom_score_adj > '{}'\necho 'fio: stand-in' >&2\nexit 1\n",
        dir.path().join("fio-oom").display()
    );
    std::fs::write(bin.join("fio"), script).unwrap();
    std::fs::set_permissions(bin.join("fio"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    dir.issue_agent("n1", "127.0.0.1");
    let agent = AgentProcess::start_with_path(&dir, "n1", "127.0.0.1", Some(&bin));
    protect_like_the_unit(&agent);
    let cluster = cluster(&dir, &[&agent]);
    let out = dir.ctl(&[
        "bench",
        &cluster,
        "--engine",
        "fio",
        "--set",
        "t=64k",
        "--set",
        "b=256k",
        "--results",
        "res",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("fio: stand-in"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.path().join("fio-oom")).unwrap().trim(), "500");
}

#[test]
fn oom_exec_sets_the_score_then_becomes_the_program() {
    let dir = TestDir::new();
    let out = dir
        .command(&pvfs_agent())
        .args(["oom-exec", "--score", "500", "--", "cat", "/proc/self/oom_score_adj"])
        .output()
        .unwrap();
    assert_eq!((out.status.code(), text(&out.stdout).trim()), (Some(0), "500"), "{}", text(&out.stderr));
    let out = dir
        .command(&pvfs_agent())
        .args(["oom-exec", "--score", "500", "--", "/nonexistent/tool"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(
        text(&out.stderr).contains("cannot run /nonexistent/tool: No such file or directory"),
        "{}",
        text(&out.stderr)
    );
}

/// The engine's child process on its own: a planted symlink at a test file's name is an error
/// of that task (its target untouched), and closing its standard input stops every task.
#[test]
fn the_engine_process_follows_no_symlink_and_stops_when_its_input_closes() {
    let dir = TestDir::new();
    let run = dir.path().join("mnt/pvfs-bench/run");
    std::fs::create_dir_all(&run).unwrap();
    let victim = dir.write("victim", "root-owned contents");
    std::os::unix::fs::symlink(&victim, run.join("ior.00000001")).unwrap();
    let phase = |extra: &[&str]| {
        let mut command = dir.command(&pvfs_agent());
        command
            .args([
                "engine-phase",
                "--dir",
                run.to_str().unwrap(),
                "--phase",
                "ior-write",
                "--iteration",
                "0",
            ])
            .args(["--first-task", "0", "--tasks", "2", "--total-tasks", "2", "--tasks-per-client", "2"])
            .args(["--preset", "throughput", "--set", "odirect=false", "--set", "i=1"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command.spawn().unwrap()
    };
    let tasks = |child: std::process::Child, close_now: bool| {
        let mut child = child;
        let stdin = child.stdin.take();
        if close_now {
            drop(stdin);
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let lines: Vec<Value> = lines(&out.stdout);
        assert_eq!(lines.last().unwrap()["pvfs_phase_event"], "done", "{lines:?}");
        lines.into_iter().filter(|l| l["pvfs_phase_event"] == "task").collect::<Vec<_>>()
    };
    let done = tasks(phase(&["--set", "t=64k", "--set", "b=256k"]), false);
    assert_eq!(done.len(), 2);
    assert!(done[0]["error"].is_null() && done[0]["bytes"] == 256 << 10, "{done:?}");
    let err = done[1]["error"].as_str().unwrap();
    assert!(err.contains("run/ior.00000001: it is a symlink, and pvfs never follows symlinks"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root-owned contents");

    std::fs::remove_file(run.join("ior.00000001")).unwrap();
    let stopped = tasks(phase(&["--set", "t=4k", "--set", "b=256m"]), true);
    for task in &stopped {
        assert!(task["error"].as_str().unwrap().contains("nobody is waiting"), "{task}");
        assert!(task["bytes"].as_u64().unwrap() < 256 << 20, "{task}");
    }
}

/// The coordinator goes away mid-phase: the agent closes the engine's standard input and the
/// engine process stops at its next transfer, well before its block is written.
#[test]
fn an_engine_whose_coordinator_went_away_stops_at_its_next_transfer() {
    let dir = TestDir::new();
    let agents = agents(&dir, 1);
    let cluster = cluster(&dir, &agents.iter().collect::<Vec<_>>());
    // 2 GiB in 4 KiB O_DIRECT writes: half a million requests, far longer than the test waits.
    let mut bench = dir
        .command(&pvfsctl())
        .args([
            "bench",
            &cluster,
            "--json",
            "--set",
            "t=4k",
            "--set",
            "b=2g",
            "--set",
            "i=1",
            "--results",
            "res",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let engine = loop {
        assert!(std::time::Instant::now() < deadline, "no engine process appeared under the agent");
        if let Some((pid, _)) =
            children_of(agents[0].child.id()).into_iter().find(|(_, cmd)| cmd.contains(" engine-phase "))
        {
            break pid;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    bench.kill().unwrap();
    bench.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::path::Path::new(&format!("/proc/{engine}")).exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the engine (pid {engine}) still runs 30 s after its coordinator left"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let run = std::fs::read_dir(dir.path().join("mnt/pvfs-bench")).unwrap().next().unwrap().unwrap().path();
    let written = std::fs::metadata(run.join("ior.00000000")).map(|m| m.len()).unwrap_or(0);
    assert!(written < 2 << 30, "the engine wrote its whole block ({written} bytes) for nobody");
}

/// Issue 24, item 9: `bench import` on a FIFO waited forever. Outputs are read only from
/// regular files (of at most 1 GiB), refused with the file named, exit 2, nothing stored.
#[test]
fn import_refuses_fifos_and_devices_at_once() {
    let dir = TestDir::new();
    let fifo = dir.path().join("ior.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let limit = std::time::Duration::from_secs(30);
    for (file, kind) in [("ior.fifo", "a FIFO (named pipe)"), ("/dev/zero", "a character device")] {
        let out = dir.ctl_within(limit, &["bench", "import", file]);
        assert_eq!(out.status.code(), Some(2), "{file}: {}", text(&out.stderr));
        let want = format!(
            "error: {file} is {kind}, not a regular file: pvfs reads an IOR or mdtest output only from a regular \
             file; save it to a file and give that\n"
        );
        assert_eq!(text(&out.stderr), want);
    }
    assert!(!dir.path().join("pvfs-results").exists(), "nothing stored");
    // A report of a directory whose results.json is a FIFO says so too.
    std::fs::create_dir(dir.path().join("run")).unwrap();
    nix::unistd::mkfifo(
        &dir.path().join("run/results.json"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let out = dir.ctl_within(limit, &["report", "run", "--out", "report"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("run/results.json is a FIFO (named pipe), not a regular file"),
        "{}",
        text(&out.stderr)
    );
}

/// A stand-in brick: a process whose command line is a brick's `glusterfsd` (the program name,
/// `-p PIDFILE`, `--brick-name PATH`), so the agent finds it as it finds a real one; a shell
/// loop under it, so SIGKILL ends it as a crash ends a brick.
const STAND_IN_BRICK: &str = "exec -a /usr/sbin/glusterfsd bash -c 'while :; do sleep 1; done' \
    -p /var/run/gluster/vols/gv0/s1-bricks-gv0.pid --brick-name /bricks/gv0";

/// `--fault kill-brick=s1` on a real agent granted faults by its policy file: two seconds into
/// the write its brick's process (a stand-in, found by glusterd's pid file under the agent's
/// root) is killed with SIGKILL, a second later brought back by `gluster volume start gv0
/// force` (a stand-in `gluster` that starts a new brick process), each told as an event with
/// the agent's words; once the write is done, the fault is measured from the write's seconds
/// (the file system here, a local directory, does not notice: no stall, no recovery time).
#[test]
fn a_fault_kills_a_brick_mid_phase_brings_it_back_and_is_measured() {
    let dir = TestDir::new();
    dir.pki();
    dir.issue_agent("s1", "127.0.0.1");
    dir.issue_agent("c1", "127.0.0.1");
    // s1's root: this machine's /proc and /sys, and glusterd's pid file of the stand-in brick.
    let root = dir.path().join("root");
    let pid_file = root.join("run/gluster/vols/gv0/s1-bricks-gv0.pid");
    std::fs::create_dir_all(pid_file.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("/proc", root.join("proc")).unwrap();
    std::os::unix::fs::symlink("/sys", root.join("sys")).unwrap();
    let mut first = std::process::Command::new("bash").args(["-c", STAND_IN_BRICK]).spawn().unwrap();
    std::fs::write(&pid_file, format!("{}\n", first.id())).unwrap();
    // The stand-in `gluster`: `volume start gv0 force` starts the brick again, as glusterd does;
    // `heal info summary` answers as GlusterFS 10.3 did for a brick just back (8 entries
    // pending, its real XML), then as it did once healed.
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let gluster = bin.join("gluster");
    let testdata = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../pvfs-metrics/testdata/gluster");
    let asked = dir.path().join("heal-asked");
    std::fs::write(
        &gluster,
        format!(
            "#!/bin/bash\n\
             if [ \"$*\" = \"--mode=script --xml volume heal gv0 info summary\" ]; then\n\
               if [ -e {asked} ]; then cat {healed}; else touch {asked}; cat {pending}; fi; exit 0\n\
             fi\n\
             [ \"$*\" = \"--mode=script volume start gv0 force\" ] || exit 64\n\
             setsid bash -c \"{brick}\" </dev/null >/dev/null 2>&1 &\necho $! > {pid}\necho 'volume start: gv0: success'\n",
            asked = asked.display(),
            healed = testdata.join("heal-summary.xml").display(),
            pending = testdata.join("heal-summary-after-restart.xml").display(),
            brick = STAND_IN_BRICK.replace('"', "\\\""),
            pid = pid_file.display()
        ),
    )
    .unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(&gluster).unwrap().permissions(),
        0o755,
    );
    std::fs::set_permissions(&gluster, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let policy = dir.write("s1-policy.toml", "faults = true\n");
    let s1 = AgentProcess::start_on(
        &dir,
        "s1",
        "127.0.0.1:0",
        Some(&bin),
        &["--root", root.to_str().unwrap(), "--policy", policy.to_str().unwrap()],
    );
    // The client's transfers take 100 ms each: a write of 40 of them lasts 4 s.
    let c1 = AgentProcess::start_with_env(&dir, "c1", "127.0.0.1", &[("PVFS_TEST_ENGINE_PACE", "0,100,100")]);
    std::fs::create_dir_all(dir.path().join("mnt")).unwrap();
    let cluster = dir.write(
        "cluster.toml",
        &format!(
            "[cluster]\nname = \"f\"\nkind = \"glusterfs\"\n[glusterfs]\nvolume = \"gv0\"\nmount = \"{0}/mnt\"\n\
             [glusterfs.brick]\npath = \"/bricks\"\n\
             [[node]]\nname = \"s1\"\naddress = \"127.0.0.1:{1}\"\nroles = [\"server\"]\ndisks = [\"/dev/pvfs-none\"]\n\
             [[node]]\nname = \"c1\"\naddress = \"127.0.0.1:{2}\"\nroles = [\"client\"]\n",
            dir.path().display(),
            s1.port,
            c1.port
        ),
    );
    let out = dir.ctl(&[
        "bench",
        cluster.to_str().unwrap(),
        "--json",
        "--fault",
        "kill-brick=s1,phase=write,at=2,for=1",
        "--set",
        "t=1m",
        "--set",
        "b=40m",
        "--set",
        "i=1",
        "--results",
        "res",
    ]);
    let events = lines(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}\n{events:?}", text(&out.stderr));
    let faults: Vec<&Value> = events.iter().filter(|e| e["event"] == "fault").collect();
    assert_eq!(faults.len(), 2, "{events:?}");
    assert_eq!((faults[0]["node"].as_str(), faults[0]["action"].as_str()), (Some("s1"), Some("injected")));
    assert_eq!(faults[0]["detail"], format!("killed glusterfsd {} of brick gv0:/bricks/gv0", first.id()));
    assert_eq!(faults[1]["action"], "undone", "{:?}", faults[1]);
    assert!(
        faults[1]["detail"].as_str().unwrap().contains("brick gv0:/bricks/gv0 runs again (glusterfsd "),
        "{:?}",
        faults[1]
    );
    let gap = faults[1]["at"].as_f64().unwrap() - faults[0]["at"].as_f64().unwrap();
    assert!((1.0..6.0).contains(&gap), "undone {gap} s after");
    let phase_at =
        events[events.iter().position(|e| e["event"] == "phase_started").unwrap()]["at"].as_f64().unwrap();
    let into = faults[0]["at"].as_f64().unwrap() - phase_at;
    assert!((2.0..3.5).contains(&into), "injected {into} s into the write");
    // The first brick process died of SIGKILL; the one `gluster` started runs.
    let status = first.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    let second: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(std::path::Path::new(&format!("/proc/{second}")).exists(), "the brick runs again");
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(second), nix::sys::signal::Signal::SIGKILL);
    // Measured once the write was done: the write's rate before, nothing stalled here.
    let started = events.iter().position(|e| e["event"] == "phase_started").unwrap();
    let done = events.iter().position(|e| e["event"] == "phase_done").unwrap();
    let measured = events.iter().position(|e| e["event"] == "fault_measured").expect("the fault measured");
    assert!(started < measured && measured + 1 == done, "told just before the write's end: {events:?}");
    let m = &events[measured];
    assert_eq!((m["node"].as_str(), m["phase"].as_str()), (Some("s1"), Some("write")));
    // The write's seconds before the fault: a client's report lands in the second it arrives
    // in, so its first (3 transfers, the first taking 200 ms) is the phase's second second.
    assert!(m["ops_per_s_before"].as_f64().unwrap() >= 3.0, "{m}");
    assert!(m["undone_at"].as_f64().is_some(), "{m}");
    assert_eq!((m["stall_s"].as_f64(), m["recovery_s"].as_f64()), (Some(0.0), Some(0.0)), "{m}");
    // events.jsonl keeps them too.
    let run = dir.path().join(events.last().unwrap()["results"].as_str().unwrap());
    let kept = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    assert_eq!(kept.lines().filter(|l| l.contains("\"event\":\"fault")).count(), 4, "{kept}");
    // The brick's volume healed: 8 entries pending at first (the real answer's), none at the
    // next question, 2 s later.
    let healed = events.iter().find(|e| e["event"] == "fault_healed").expect("the heal followed");
    assert_eq!(
        (healed["volume"].as_str(), healed["pending_max"].as_u64()),
        (Some("gv0"), Some(8)),
        "{healed}"
    );
    let after = healed["healed_after_s"].as_f64().unwrap_or_else(|| panic!("{healed}"));
    assert!((1.0..10.0).contains(&after), "{healed}");
    // The report's latency section names the fault and shades it on the chart.
    let report = dir.path().join("report");
    let out = dir.ctl(&["report", run.to_str().unwrap(), "--out", report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| s1 | 0 | write | "))
        .unwrap_or_else(|| panic!("no fault row:\n{md}"));
    assert!(
        row.contains(" | 0 | 0.0 | 0 | none | 8 | "),
        "no stall, back at once, no client error, 8 entries healed: {row}"
    );
    let svg = std::fs::read_to_string(
        report.join(format!("latency-seconds-{}.svg", run.file_name().unwrap().to_str().unwrap())),
    )
    .unwrap();
    assert!(svg.contains("fault: s1"), "the chart marks the fault");
}

/// A test's stand-in for a Lustre server's accounting: while `stop` is unset, looks on this
/// machine for a thread named like a phase's tasks (`pv` + 5 hex digits + `code` + iteration,
/// the engine's job tag), and when it finds one, writes `oss`'s OST job_stats as the server's
/// kernel would hold it for that thread's I/O — its `procname_uid` id (`comm.uid`, the uid
/// read from the thread's own status) with `bytes` under `counter` in 1 MiB RPCs. Returns the
/// ids it wrote.
fn lustre_accounting(
    oss: std::path::PathBuf,
    phases: Vec<(&'static str, &'static str, u64)>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut written: Vec<String> = Vec::new();
        let mut jobs = String::from("job_stats:\n");
        // Bounded: 60 s of looking every 10 ms.
        for _ in 0..6000 {
            if stop.load(std::sync::atomic::Ordering::Relaxed) || written.len() == phases.len() {
                break;
            }
            for proc in std::fs::read_dir("/proc").unwrap().flatten() {
                let Ok(threads) = std::fs::read_dir(proc.path().join("task")) else { continue };
                for thread in threads.flatten() {
                    let Ok(comm) = std::fs::read_to_string(thread.path().join("comm")) else { continue };
                    let comm = comm.trim_end();
                    let Some((_, counter, bytes)) = phases.iter().find(|(code, _, _)| {
                        comm.len() == 8 + code.len()
                            && comm.starts_with("pv")
                            && comm[2..7].chars().all(|c| c.is_ascii_hexdigit())
                            && comm[7..].strip_suffix('0') == Some(*code)
                    }) else {
                        continue;
                    };
                    let Ok(status) = std::fs::read_to_string(thread.path().join("status")) else { continue };
                    // Uid: real, effective, saved, fs — the kernel's %u is the fs uid.
                    let uid = status
                        .lines()
                        .find_map(|l| l.strip_prefix("Uid:"))
                        .unwrap()
                        .split_whitespace()
                        .nth(3)
                        .unwrap();
                    let id = format!("{comm}.{uid}");
                    if written.contains(&id) {
                        continue;
                    }
                    jobs += &format!(
                        "- job_id:          {id}\n  snapshot_time:   1800000000.000000000 secs.nsecs\n  \
                         {counter}:     {{ samples: {}, unit: bytes, min: 1048576, max: 1048576, sum: {bytes}, sumsq: 0 }}\n",
                        bytes >> 20
                    );
                    let file = oss.join("proc/fs/lustre/obdfilter/fs-OST0000/job_stats");
                    let temporary = file.with_extension("new");
                    std::fs::write(&temporary, &jobs).unwrap();
                    std::fs::rename(&temporary, &file).unwrap();
                    written.push(id);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        written
    })
}

/// Issue 29, benchmarks attributed to targets: on a Lustre cluster each phase's tasks run
/// under a name of the phase's own; the client's agent (its root holding a Lustre client's
/// `jobid_var = procname_uid`) reports the job id the kernel gives their I/O; the OSS's agent
/// (its root holding the OST's job_stats, written by the test's stand-in for the server's
/// kernel from the thread it saw) is asked for that id once the phase is done; the run tells
/// it per target, keeps it, and `report` finds the OST's bytes equal to the application's.
#[test]
fn a_lustre_phases_bytes_are_read_from_the_servers_job_stats() {
    let dir = TestDir::new();
    dir.pki();
    for name in ["oss1", "c1"] {
        dir.issue_agent(name, "127.0.0.1");
    }
    // Each root: this machine's /proc and /sys entries, the file systems' trees its own.
    let root = |name: &str| {
        let root = dir.path().join(format!("root-{name}"));
        for (tree, own) in [("proc", "fs"), ("sys", "fs")] {
            let at = root.join(tree);
            std::fs::create_dir_all(&at).unwrap();
            for entry in std::fs::read_dir(format!("/{tree}")).unwrap() {
                let entry = entry.unwrap().file_name().into_string().unwrap();
                if entry != own && !entry.starts_with(|c: char| c.is_ascii_digit()) {
                    std::os::unix::fs::symlink(
                        std::path::Path::new("/").join(tree).join(&entry),
                        at.join(&entry),
                    )
                    .unwrap();
                }
            }
        }
        root
    };
    let (oss_root, client_root) = (root("oss1"), root("c1"));
    std::fs::create_dir_all(oss_root.join("proc/fs/lustre/obdfilter/fs-OST0000")).unwrap();
    std::fs::write(oss_root.join("proc/fs/lustre/obdfilter/fs-OST0000/job_stats"), "job_stats:\n").unwrap();
    std::fs::create_dir_all(client_root.join("sys/fs/lustre")).unwrap();
    std::fs::write(client_root.join("sys/fs/lustre/jobid_var"), "procname_uid\n").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // 8 MiB written, then read, by one task.
    let accounting = lustre_accounting(
        oss_root.clone(),
        vec![("w", "write_bytes", 8 << 20), ("r", "read_bytes", 8 << 20)],
        stop.clone(),
    );
    let oss = AgentProcess::start_with_args(
        &dir,
        "oss1",
        "127.0.0.1",
        None,
        &["--root", oss_root.to_str().unwrap()],
    );
    // Each transfer takes 100 ms, so the stand-in sees the tasks' threads.
    let c1 = AgentProcess::start_with_env_args(
        &dir,
        "c1",
        "127.0.0.1",
        &[("PVFS_TEST_ENGINE_PACE", "0,100,100")],
        &["--root", client_root.to_str().unwrap()],
    );
    std::fs::create_dir_all(dir.path().join("mnt")).unwrap();
    // The client's agent checks the run's directory under its root, where the engine (a
    // process of its own) writes the real one: the mount is in both.
    std::fs::create_dir_all(client_root.join(dir.path().join("mnt").strip_prefix("/").unwrap())).unwrap();
    let cluster = dir.write(
        "cluster.toml",
        &format!(
            "[cluster]\nname = \"l\"\nkind = \"lustre\"\n[lustre]\nfsname = \"fs\"\nmount = \"{0}/mnt\"\nlnet = \"tcp\"\n\
             [[node]]\nname = \"oss1\"\naddress = \"127.0.0.1:{1}\"\nroles = [\"mgs\", \"mds\", \"oss\"]\ndisks = [\"/dev/pvfs-none\"]\n\
             [[node]]\nname = \"c1\"\naddress = \"127.0.0.1:{2}\"\nroles = [\"client\"]\n",
            dir.path().display(),
            oss.port,
            c1.port
        ),
    );
    let out = dir.ctl(&[
        "bench",
        cluster.to_str().unwrap(),
        "--json",
        "--set",
        "t=1m",
        "--set",
        "b=8m",
        "--set",
        "i=1",
        "--results",
        "res",
    ]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let ids = accounting.join().unwrap();
    let events = lines(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}\n{events:?}", text(&out.stderr));
    assert_eq!(ids.len(), 2, "the stand-in saw the write's and the read's tasks: {ids:?}");
    let readings: Vec<&Value> = events.iter().filter(|e| e["event"] == "lustre_jobs").collect();
    assert_eq!(readings.len(), 2, "{events:?}");
    for (reading, (phase, counter, id)) in
        readings.iter().zip([("write", "write_bytes", &ids[0]), ("read", "read_bytes", &ids[1])])
    {
        assert_eq!(reading["phase"], phase, "{reading}");
        // The client's agent worked out the id the stand-in derived from the thread itself.
        assert_eq!(reading["clients"], serde_json::json!([{"node": "c1", "job_id": id}]), "{reading}");
        assert_eq!(
            reading["targets"],
            serde_json::json!([{"node": "oss1", "kind": "obdfilter", "target": "fs-OST0000",
                "counters": [{"name": counter, "samples": 8, "sum": 8 << 20}]}]),
            "{reading}"
        );
        // Told right after the phase's end.
        let at = events.iter().position(|e| std::ptr::eq(e, *reading)).unwrap();
        assert_eq!(events[at - 1]["event"], "phase_done", "{events:?}");
    }
    // Kept with the run, and in the report: the OST accounts for the write.
    let run = dir.path().join(events.last().unwrap()["results"].as_str().unwrap());
    let kept = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    assert_eq!(kept.lines().filter(|l| l.contains("\"event\":\"lustre_jobs\"")).count(), 2, "{kept}");
    let report = dir.path().join("report");
    let out = dir.ctl(&["report", run.to_str().unwrap(), "--out", report.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("| write | 0 | fs-OST0000 | oss1 | 0.0 | 8.0 | 0 | 8 | 0 | 100.0 % |"), "{md}");
    assert!(
        md.contains(&format!("- write (iteration 0), job {}: the OSTs counted 8.0 MiB for the application's 8.0 MiB (the OSTs account for the phase within 1 %)", ids[0])),
        "{md}"
    );
}
