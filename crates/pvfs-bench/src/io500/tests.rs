//! io500's own output (a real run, `testdata/io500/`) read back, and its score worked out
//! again as io500 works it out.

use super::*;

fn fixture(name: &str) -> String {
    let path = format!("{}/testdata/io500/small-2procs-stonewall5/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn a_real_runs_phases_score_and_reasons_read_back() {
    let out = parse_summary(&fixture("stdout.txt")).expect("reads");
    assert_eq!(out.phases.len(), 14);
    let names: Vec<&str> = out.phases.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(&names[..4], ["ior-easy-write", "mdtest-easy-write", "timestamp", "ior-hard-write"]);
    let first = &out.phases[0];
    assert_eq!(
        *first,
        PhaseResult {
            name: "ior-easy-write".into(),
            value: 0.329499,
            unit: Unit::GiBPerS,
            seconds: 3.151,
            scored: true,
            valid: false,
        }
    );
    let unscored: Vec<&str> = out.phases.iter().filter(|p| !p.scored).map(|p| p.name.as_str()).collect();
    assert_eq!(unscored, ["timestamp", "ior-rnd4K-easy-read"]);
    assert_eq!(out.phases.iter().filter(|p| !p.valid).count(), 4);
    assert_eq!(
        out.score,
        Some(Score { bandwidth: 0.236037, metadata: 8.799605, total: 1.441193, valid: false })
    );
    assert_eq!(out.extended, None);
    assert_eq!(out.invalid_reasons[0], "stonewall-time 5s != 300s");
    assert_eq!(out.invalid_reasons.len(), 10);
    // result_summary.txt holds the same phases and score, without the reasons.
    let summary = parse_summary(&fixture("results/result_summary.txt")).expect("reads");
    assert_eq!(summary.phases, out.phases);
    assert_eq!(summary.score, out.score);
    assert!(summary.invalid_reasons.is_empty());
}

#[test]
fn the_score_worked_out_again_is_io500s() {
    let out = parse_summary(&fixture("stdout.txt")).expect("reads");
    let printed = out.score.expect("a score");
    let ours = score(&out.phases, false);
    // io500 works from unrounded figures; these are its printed six decimals.
    for (a, b) in
        [(ours.bandwidth, printed.bandwidth), (ours.metadata, printed.metadata), (ours.total, printed.total)]
    {
        assert!((a - b).abs() / b < 2e-6, "{ours} against {printed}");
    }
    assert!(!ours.valid);
    assert_eq!(ours.to_string().split(" : ").count(), 3);
}

fn phase(name: &str, value: f64, valid: bool) -> PhaseResult {
    let unit = if name.starts_with('i') { Unit::GiBPerS } else { Unit::KIops };
    PhaseResult { name: name.into(), value, unit, seconds: 300.0, scored: true, valid }
}

#[test]
fn zero_phases_are_left_out_and_optional_ones_count_only_when_extended() {
    let phases = vec![
        phase("ior-easy-write", 4.0, true),
        phase("ior-hard-write", 0.0, true),
        phase("ior-easy-read", 1.0, true),
        phase("mdtest-easy-write", 2.0, true),
        phase("find-easy", 32.0, false),
    ];
    let standard = score(&phases, false);
    // BW: (4 × 1)^(1/2), the zero left out; MD: 2 alone; the invalid optional phase ignored.
    assert_eq!((standard.bandwidth, standard.metadata, standard.total), (2.0, 2.0, 2.0));
    assert!(standard.valid);
    let extended = score(&phases, true);
    assert_eq!(extended.metadata, 8.0);
    assert_eq!(extended.total, 4.0);
    assert!(!extended.valid);
    // A group with no phase above zero scores 0, and so does the total.
    let none = score(&[phase("ior-easy-write", 3.0, true)], false);
    assert_eq!((none.metadata, none.total), (0.0, 0.0));
}

#[test]
fn a_broken_line_is_an_error_naming_it() {
    let text =
        "IO500 version  (standard)\n[RESULT]       ior-easy-write        fast GiB/s : time 3.151 seconds\n";
    let err = parse_summary(text).unwrap_err();
    assert_eq!(err.line, 2);
    assert!(err.to_string().contains("line 2"), "{err}");
    for bad in [
        "[RESULT] ior-easy-write 1.0 MB/s : time 3.1 seconds",
        "[RESULT] ior-easy-write 1.0 GiB/s",
        "[SCORE ] Bandwidth 1.0 GiB/s : IOPS x kiops : TOTAL 1.0",
        "[RESULT] ior-easy-write -1.0 GiB/s : time 3.1 seconds",
    ] {
        assert!(parse_summary(bad).is_err(), "{bad}");
    }
}

#[test]
fn result_txt_keeps_each_phases_command_score_and_reasons() {
    let sections = parse_result_txt(&fixture("results/result.txt")).expect("reads");
    let names: Vec<&str> = sections.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names.first(), Some(&"run"));
    assert_eq!(names.last(), Some(&"SCORE"));
    let run = &sections[0];
    assert_eq!(run.get("procs"), Some("2"));
    assert_eq!(run.invalid_reasons, ["stonewall-time 5s != 300s"]);
    let hard = sections.iter().find(|s| s.name == "ior-hard-write").expect("ior-hard-write");
    assert_eq!(hard.get("score"), Some("0.059007"));
    assert_eq!(hard.get("throughput-stonewall"), Some("0.09"));
    assert!(hard.get("exe").is_some_and(|e| e.contains("-t 47008 -b 47008 -s 2000")), "{hard:?}");
    assert_eq!(hard.invalid_reasons.len(), 3);
    assert!(hard.invalid_reasons[0].starts_with("Write phase needed 2.967744s"), "{hard:?}");
    // The same figures as the summary's lines, phase by phase.
    let summary = parse_summary(&fixture("results/result_summary.txt")).expect("reads");
    for phase in summary.phases.iter().filter(|p| p.name != "timestamp") {
        let section = sections.iter().find(|s| s.name == phase.name).expect("a section");
        let score: f64 = section.get("score").expect("score").parse().expect("a number");
        assert_eq!(score, phase.value, "{}", phase.name);
        // The summary rounds the phase's time to milliseconds, result.txt to 0.1 ms.
        let delta: f64 = section.get("t_delta").expect("t_delta").parse().expect("a number");
        assert!((delta - phase.seconds).abs() <= 0.0006, "{}: {delta} against {}", phase.name, phase.seconds);
        // A phase marked invalid has its reasons in its section.
        assert_eq!(!phase.valid, !section.invalid_reasons.is_empty(), "{}", phase.name);
    }
    assert_eq!(sections.last().and_then(|s| s.get("SCORE")), Some("1.441193 [INVALID]"));
    assert!(parse_result_txt("procs = 2\n").is_err());
    assert!(parse_result_txt("[run]\nprocs 2\n").is_err());
}

fn fixture_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/io500/small-2procs-stonewall5")
}

#[test]
fn a_result_directory_reads_with_each_phases_command_and_reasons() {
    let (run, files) = read_run(&fixture_dir().join("results")).expect("reads");
    let names: Vec<_> = files.iter().map(|f| f.file_name().unwrap().to_str().unwrap()).collect();
    assert_eq!(names, ["result_summary.txt", "result.txt", "config.ini"]);
    assert_eq!((run.procs, run.mode.as_deref(), run.version.as_deref()), (Some(2), Some("standard"), None));
    assert_eq!(run.phases.len(), 14);
    assert_eq!(run.invalid_reasons, ["stonewall-time 5s != 300s"]);
    let easy = &run.phases[0];
    assert_eq!(easy.result.name, "ior-easy-write");
    assert!(
        easy.command.as_deref().unwrap().starts_with("./ior --dataPacketType=timestamp -g -G 1838094280")
    );
    assert_eq!(easy.invalid_reasons.len(), 3);
    assert!(easy.invalid_reasons[0].starts_with("Write phase needed 1.517456s instead of stonewall 5s"));
    let find = run.phases.iter().find(|p| p.result.name == "find").unwrap();
    assert!(find.invalid_reasons.is_empty() && find.result.valid);
    assert!(!run.valid());
    // stdout says the same figures; its reasons are not placed in phases.
    let (out, files) = read_run(&fixture_dir().join("stdout.txt")).expect("reads");
    assert_eq!(files.len(), 1);
    let figures = |r: &Io500Run| r.phases.iter().map(|p| p.result.clone()).collect::<Vec<_>>();
    assert_eq!((figures(&out), out.score), (figures(&run), run.score));
    assert_eq!(out.invalid_reasons.len(), 10);
    assert!(out.phases.iter().all(|p| p.command.is_none() && p.invalid_reasons.is_empty()));
    assert_eq!(out.mode.as_deref(), Some("standard"));
}

/// A copy of the fixture's result directory with `edit` applied to one of its files.
fn edited(file: &str, edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in ["result_summary.txt", "result.txt"] {
        let text = std::fs::read_to_string(fixture_dir().join("results").join(name)).unwrap();
        let text = if name == file { edit(text) } else { text };
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

#[test]
fn files_that_disagree_are_refused_naming_what() {
    // A phase's figure changed in the summary only.
    let dir = edited("result_summary.txt", |t| t.replace("0.329499 GiB/s", "0.429499 GiB/s"));
    let err = read_run(dir.path()).unwrap_err().to_string();
    assert!(err.contains("phase ior-easy-write's score: 0.329499 is printed"), "{err}");
    // Without result.txt to hold the phase to, the printed score is still not the phases'.
    let dir = edited("result_summary.txt", |t| t.replace("0.329499 GiB/s", "0.429499 GiB/s"));
    std::fs::remove_file(dir.path().join("result.txt")).unwrap();
    let err = read_run(dir.path()).unwrap_err().to_string();
    assert!(err.contains("the score's bandwidth: 0.236037 is printed"), "{err}");
    // The total alone.
    let dir = edited("result_summary.txt", |t| t.replace("TOTAL 1.441193", "TOTAL 1.441209"));
    let err = read_run(dir.path()).unwrap_err().to_string();
    assert!(err.contains("the score's total: 1.441209 is printed, but 1.44119"), "{err}");
    // The last decimal of every figure as printed still agrees.
    let dir = edited("result_summary.txt", |t| t.replace("TOTAL 1.441193", "TOTAL 1.441194"));
    assert!(read_run(dir.path()).is_ok());
}

#[test]
fn what_is_not_an_io500_output_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let err = read_run(dir.path()).unwrap_err().to_string();
    assert!(err.contains("not an io500 result directory: it has no result_summary.txt"), "{err}");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "hello\n").unwrap();
    let err = read_run(&notes).unwrap_err().to_string();
    assert!(err.contains("no io500 phase or score line in it"), "{err}");
    assert!(!looks_like_io500("hello\n[RESULTS] x"));
    assert!(looks_like_io500(&fixture("stdout.txt")));
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, "[RESULT] ior-easy-write lots GiB/s : time 1 seconds\n").unwrap();
    let err = read_run(&bad).unwrap_err().to_string();
    assert!(err.contains("line 1 of the io500 output: not a phase's result"), "{err}");
}

/// io500's rules applied again to the facts its own files give (each phase's `t_delta` and
/// score from result.txt; an IOR write's time and stonewall hit from its IOR output) find the
/// same reasons, phase by phase, as io500 wrote: the same rule, in the same order, the same
/// text up to the figures (which io500 knew to more digits than its files keep).
#[test]
fn the_rules_find_what_io500_found_in_its_own_run() {
    use rules::*;
    let sections = parse_result_txt(&fixture("results/result.txt")).unwrap();
    let run = RunFacts { stonewall_s: 5, scc: false, dry_run: false };
    let words =
        |text: &str| text.split(|c: char| c.is_ascii_digit() || c == '(').next().unwrap_or("").to_owned();
    let ours: Vec<String> = run_reasons(&run).iter().map(ToString::to_string).collect();
    assert_eq!(ours, sections.iter().find(|s| s.name == "run").unwrap().invalid_reasons);
    let mut checked = 0;
    for section in sections.iter().filter(|s| s.get("t_delta").is_some()) {
        let number = |key: &str| section.get(key).and_then(|v| v.parse::<f64>().ok());
        // IOR's report of a write: its Results row's total(s), and the stonewall's line.
        let ior_write =
            section.name.starts_with("ior-").then(|| section.name.ends_with("-write")).filter(|w| *w).map(
                |_| {
                    let out = fixture(&format!("results/{}.txt", section.name));
                    let row = out.lines().rfind(|l| l.starts_with("write ")).unwrap();
                    let total: f64 = row.split_whitespace().nth(9).unwrap().parse().unwrap();
                    let hit = out.lines().find_map(|l| l.split("time: ").nth(1)).unwrap();
                    (total, hit.trim_end_matches('s').parse().unwrap())
                },
            );
        let facts = PhaseFacts {
            name: &section.name,
            runtime_s: number("t_delta").unwrap(),
            score: number("score").unwrap_or(0.0),
            ior_write,
            found: (section.name == "find").then_some(Some(1)),
            ..PhaseFacts::default()
        };
        let ours: Vec<String> = phase_reasons(&run, &facts).iter().map(ToString::to_string).collect();
        let theirs = &section.invalid_reasons;
        assert_eq!(ours.len(), theirs.len(), "{}: ours {ours:?}, io500's {theirs:?}", section.name);
        for (a, b) in ours.iter().zip(theirs) {
            assert_eq!(words(a), words(b), "{}: ours {a:?}, io500's {b:?}", section.name);
        }
        checked += 1;
    }
    assert_eq!(checked, 14, "every phase of the run");
    // The full rule texts, as io500 prints them.
    let write = PhaseFacts {
        name: "ior-easy-write",
        runtime_s: 3.150635,
        score: 0.33,
        ior_write: Some((1.517456, 0.4)),
        ..PhaseFacts::default()
    };
    let texts: Vec<String> = phase_reasons(&run, &write).iter().map(ToString::to_string).collect();
    assert_eq!(
        texts,
        [
            "Write phase needed 1.517456s instead of stonewall 5s. Stonewall was hit at 0.4s",
            "Runtime of phase (3.150635) is below stonewall time. This shouldn't happen!",
            "Runtime is smaller than expected minimum runtime"
        ]
    );
    // A valid phase at the rules' 300 s; the scc mode's 30 s; a find that found nothing.
    let rules = RunFacts { stonewall_s: 300, scc: false, dry_run: false };
    let long = PhaseFacts { runtime_s: 301.0, ior_write: Some((300.5, 300.0)), ..write };
    assert!(run_reasons(&rules).is_empty() && phase_reasons(&rules, &long).is_empty());
    assert!(run_reasons(&RunFacts { stonewall_s: 30, scc: true, dry_run: false }).is_empty());
    let find = PhaseFacts {
        name: "find",
        runtime_s: 1.0,
        score: 0.0,
        found: Some(Some(0)),
        ..PhaseFacts::default()
    };
    let texts: Vec<String> = phase_reasons(&rules, &find).iter().map(ToString::to_string).collect();
    assert_eq!(
        texts,
        ["Find didn't find anything, this is likely invalid.", "Resulting score shouldn't be 0.0"]
    );
}

/// Each phase's workload is what io500 gave IOR or mdtest in a real run: the fixture's
/// `exe` lines read back as workloads equal the plan's for the run's own ini knobs (and its
/// seeds), phase by phase, in io500's order.
#[test]
fn the_plans_workloads_are_the_commands_io500_ran() {
    use crate::params::{ior_command, mdtest_command};
    use plan::{Options, Seeds, Stage};
    let sections = parse_result_txt(&fixture("results/result.txt")).unwrap();
    // The run's knobs, from the ini it ran with.
    let mut options = Options::default();
    let mut section = String::new();
    for line in fixture("small.ini").lines() {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
        } else if let Some((key, value)) = line.split_once('=')
            && section != "global"
        {
            options.set(&format!("{section}.{}", key.trim()), value.trim()).unwrap();
        }
    }
    assert_eq!(
        options.changed(),
        [
            ("debug.stonewall-time", "5".to_owned()),
            ("ior-easy.transferSize", "1m".to_owned()),
            ("ior-easy.blockSize", "256m".to_owned()),
            ("ior-hard.segmentCount", "2000".to_owned()),
            ("mdtest-easy.n", "5000".to_owned()),
            ("mdtest-hard.n", "2000".to_owned()),
        ]
    );
    let seeds = Seeds {
        ior_easy: 1_838_094_280,
        ior_hard: 1_838_104_968,
        mdtest_easy: -1_570_695_222i32 as u32,
        mdtest_hard: -1_570_684_534i32 as u32,
    };
    let ran: Vec<&str> =
        sections.iter().map(|s| s.name.as_str()).filter(|n| Stage::parse(n).is_some()).collect();
    assert_eq!(ran, Stage::ALL.map(Stage::name), "io500's order");
    for stage in Stage::ALL {
        let Some(exe) = sections.iter().find(|s| s.name == stage.name()).and_then(|s| s.get("exe")) else {
            assert_eq!(stage, Stage::Timestamp, "only the timestamp runs no command");
            continue;
        };
        let mut words: Vec<String> = exe.split_whitespace().map(str::to_owned).collect();
        let program = words.remove(0);
        let ran = match program.as_str() {
            "./ior" => ior_command(&words).map(|(w, paths)| (Some(w), paths.target)),
            "./mdtest" => mdtest_command(&words).map(|(w, paths)| (Some(w), paths.target)),
            _ => Ok((None, None)),
        };
        let (ran, target) = ran.unwrap_or_else(|e| panic!("{stage}: {e}: {exe}"));
        assert_eq!(ran, plan::workload(stage, &options, &seeds), "{stage}: {exe}");
        if let (Some(family), Some(target)) = (stage.family(), target) {
            assert!(target.starts_with(&format!("/tmp/io500run/datafiles/{}", family.dir())), "{target}");
        }
    }
    // The timestamp is no phase of the engine's; the find reads every family's files.
    assert_eq!(Stage::Timestamp.engine_phases(), (vec![], None));
    assert_eq!(plan::counted_by(Stage::MdtestHardRead), Some(Stage::MdtestHardWrite));
    assert_eq!(plan::counted_by(Stage::IorEasyWrite), None);
}

/// io500's knobs by their ini names; anything else is refused naming what is known.
#[test]
fn io500_knobs_are_set_by_their_ini_names() {
    let mut options = plan::Options::default();
    options.set("ior-easy.filePerProc", "FALSE").unwrap();
    options.set("global.scc", "true").unwrap();
    assert_eq!(
        options.changed(),
        [("global.scc", "TRUE".to_owned()), ("ior-easy.filePerProc", "FALSE".to_owned())]
    );
    let err = options.set("ior-easy.transfersize", "1m").unwrap_err().to_string();
    assert!(
        err.starts_with("unknown io500 option \"ior-easy.transfersize\": use debug.stonewall-time"),
        "{err}"
    );
    let err = options.set("mdtest-hard.n", "0").unwrap_err().to_string();
    assert_eq!(err, "io500 option mdtest-hard.n = \"0\": expected a whole number above 0");
    let seeds = plan::Seeds::from(1_800_000_000);
    assert!([seeds.ior_easy, seeds.ior_hard, seeds.mdtest_easy, seeds.mdtest_hard].iter().all(|s| *s != 0));
    assert_ne!(seeds.ior_easy, seeds.ior_hard);
}

/// A run of the built-in engine is told as io500 tells one: figures in io500's units over
/// each stage's time, the rules in io500's words (the same reasons the real run with a 5 s
/// stonewall was given), and result files that `bench import` reads back to the same figures
/// and score.
#[test]
fn an_engine_run_is_told_as_io500_tells_one_and_reads_back() {
    use crate::summary::PhaseTotals;
    use assemble::{StageOutcome, assemble, result_txt, summary_text};
    use plan::{Io500Params, Stage};
    let mut params = Io500Params::default();
    params.options.stonewall = 5;
    let totals =
        |bw_mib: f64, ops_per_sec: f64| PhaseTotals { bw_mib, ops_per_sec, ..PhaseTotals::default() };
    let stages: Vec<StageOutcome> = Stage::ALL
        .iter()
        .enumerate()
        .map(|(i, stage)| StageOutcome {
            stage: *stage,
            seconds: if *stage == Stage::Timestamp { 0.0001 } else { 6.0 + i as f64 },
            totals: (*stage != Stage::Timestamp)
                .then(|| totals(512.0 * (i + 1) as f64, 1000.0 * (i + 1) as f64)),
            found: (*stage == Stage::Find).then_some(12),
            command: Some(format!("tool {i}")),
            ended: Some(1_700_000_000.0 + i as f64),
        })
        .collect();
    let run = assemble(&params, 4, &stages);
    assert_eq!(run.invalid_reasons, ["stonewall-time 5s != 300s"]);
    let phase = |name: &str| run.phases.iter().find(|p| p.result.name == name).unwrap();
    assert_eq!(phase("ior-easy-write").result.value, 0.5, "512 MiB/s is 0.5 GiB/s");
    assert_eq!(phase("ior-easy-write").result.unit, Unit::GiBPerS);
    assert_eq!(phase("mdtest-easy-write").result.value, 2.0, "2000 ops/s is 2 kIOPS");
    assert_eq!(
        phase("mdtest-easy-write").invalid_reasons,
        ["Runtime is smaller than expected minimum runtime"]
    );
    assert!(phase("find").result.valid && phase("ior-easy-read").result.valid);
    assert!(!phase("timestamp").result.scored);
    let score = run.score.unwrap();
    assert!(!score.valid, "a 5 s stonewall is not the rules'");

    // Written as io500 writes them, and read back as an io500 run.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("result_summary.txt"), summary_text(&run)).unwrap();
    std::fs::write(dir.path().join("result.txt"), result_txt(&run)).unwrap();
    let (back, _) = read_run(dir.path()).unwrap();
    assert_eq!(back.phases.len(), 13);
    assert_eq!(back.score.map(|s| (s.total * 1e6).round()), Some((score.total * 1e6).round()));
    assert_eq!(back.phases[0].command.as_deref(), Some("tool 0"));
    assert_eq!(back.phases[1].invalid_reasons, phase("mdtest-easy-write").invalid_reasons);
    assert_eq!(back.mode.as_deref(), Some("standard"));
    assert_eq!(back.procs, Some(4));

    // A run that stopped before its last stage has no score.
    let partial = assemble(&params, 4, &stages[..5]);
    assert_eq!(partial.score, None);
}
