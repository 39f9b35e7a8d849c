//! Flags over the cluster file over the defaults, and every refusal as `pvfsctl bench` words it.

use super::*;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

/// A local cluster of one server and two clients, `bench` as its `[bench]` section's body.
fn cluster(bench: &str) -> Cluster {
    let text = format!(
        "[cluster]\nname = \"x\"\nkind = \"local\"\n[local]\nmount = \"/m\"\n\
         [[node]]\nname = \"s\"\naddress = \"10.0.0.1\"\nroles = [\"server\"]\n\
         [[node]]\nname = \"a\"\naddress = \"10.0.0.2\"\nroles = [\"client\"]\n\
         [[node]]\nname = \"b\"\naddress = \"10.0.0.3\"\nroles = [\"client\"]\n\
         [bench]\n{bench}"
    );
    match pvfs_config::parse(Path::new("/etc/pvfs/cluster.toml"), &text) {
        Ok(cluster) => cluster,
        Err(err) => panic!("{err}"),
    }
}

/// 2026-11-23T19:30:00Z
fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_795_462_200)
}

fn flags() -> BenchFlags {
    BenchFlags { results: "res".into(), ..BenchFlags::default() }
}

/// The error as `pvfsctl bench` prints it: each cause after `: `.
fn refusal(cluster: &Cluster, flags: &BenchFlags) -> String {
    let err = match BenchPlan::resolve(cluster, flags, now()) {
        Ok(plan) => panic!("resolved: {plan:?}"),
        Err(err) => err,
    };
    let mut text = err.to_string();
    let mut cause = std::error::Error::source(&err);
    while let Some(c) = cause {
        text += &format!(": {c}");
        cause = c.source();
    }
    text
}

/// The run's directory as its results directory names it, made under a temporary base.
fn run_dir(plan: &BenchPlan) -> (tempfile::TempDir, RunDir) {
    let base = tempfile::tempdir().unwrap();
    let run = RunDir::create(base.path(), plan.name()).unwrap();
    (base, run)
}

#[test]
fn defaults_then_the_file_then_the_flags() {
    let plan = BenchPlan::resolve(&cluster(""), &flags(), now()).unwrap();
    assert_eq!((plan.runner(), plan.preset()), (Runner::AgentsBuiltin, Preset::Throughput));
    assert_eq!((plan.servers, plan.clients(), plan.tasks_per_client()), (1, 2, 1));
    assert_eq!(plan.name(), "x-throughput-20261123T193000");
    assert_eq!(plan.results_base(), Path::new("res"));
    let (_base, run) = run_dir(&plan);
    assert_eq!(plan.client_dir(&run), Path::new("/m/pvfs-bench/x-throughput-20261123T193000"));

    let file = cluster(
        "mount = \"/scratch\"\nlauncher = \"mpi\"\nengine = \"ior\"\npreset = \"iops\"\nprocs_per_client = 4\n",
    );
    let plan = BenchPlan::resolve(&file, &flags(), now()).unwrap();
    assert_eq!((plan.runner(), plan.preset()), (Runner::MpiIor, Preset::Iops));
    assert_eq!(plan.tasks_per_client(), 4);
    let (_base, run) = run_dir(&plan);
    assert_eq!(plan.client_dir(&run), Path::new("/scratch/pvfs-bench/x-iops-20261123T193000"));

    let over = BenchFlags {
        engine: Some(Engine::Builtin),
        preset: Some(Preset::Metadata),
        procs: Some(2),
        dir: Some("/elsewhere".into()),
        sweep_point: Some(("procs".into(), "2".into())),
        ..flags()
    };
    let plan = BenchPlan::resolve(&file, &over, now()).unwrap();
    assert_eq!(plan.runner(), Runner::MpiBuiltin);
    assert_eq!((plan.preset(), plan.tasks_per_client()), (Preset::Metadata, 2));
    assert_eq!(plan.name(), "x-metadata-20261123T193000-procs2");
    let (_base, run) = run_dir(&plan);
    assert_eq!(plan.client_dir(&run), Path::new("/elsewhere/pvfs-bench/x-metadata-20261123T193000-procs2"));
}

#[test]
fn refusals_say_what_is_wrong_as_the_cli_prints_them() {
    let file = cluster("");
    let with = |f: BenchFlags| refusal(&file, &f);
    assert!(
        with(BenchFlags { engine: Some(Engine::Ior), ..flags() })
            .starts_with("engine \"ior\" runs under launcher \"mpi\": IOR is an MPI program"),
    );
    assert_eq!(
        with(BenchFlags { engine: Some(Engine::Fio), launcher: Some(Launcher::Mpi), ..flags() }),
        "engine \"fio\" is not an MPI program: use it with launcher \"agents\", or use engine \"builtin\" or \
         \"ior\" with launcher \"mpi\""
    );
    assert_eq!(with(BenchFlags { set: vec!["t".into()], ..flags() }), "--set \"t\": expected KEY=VALUE");
    assert!(
        with(BenchFlags { set: vec!["bogus=1".into()], ..flags() })
            .starts_with("--set bogus=1: unknown IOR parameter \"bogus\": use "),
    );
    assert_eq!(
        with(BenchFlags { engine: Some(Engine::Fio), preset: Some(Preset::Metadata), ..flags() }),
        "engine fio runs IOR-style presets (throughput, iops); metadata presets need engine builtin"
    );
    let size = with(BenchFlags { set: vec!["b=1t".into(), "s=100".into()], ..flags() });
    assert_eq!(
        size,
        "--set s=100: s = \"100\": block 1t x 100 segments is more than 16t per task (ext4's largest file); use \
         fewer segments or a smaller block"
    );
}

#[test]
fn the_equivalent_command_is_ior_or_mdtest_for_every_task() {
    let plan = BenchPlan::resolve(&cluster("procs_per_client = 3\n"), &flags(), now()).unwrap();
    let (_base, run) = run_dir(&plan);
    assert_eq!(
        plan.equivalent(&run),
        "mpirun -np 6 ior -w -r --posix.odirect -C -i4 -t32m -b4g -F -o \
         /m/pvfs-bench/x-throughput-20261123T193000/ior"
    );
    let plan =
        BenchPlan::resolve(&cluster(""), &BenchFlags { preset: Some(Preset::Metadata), ..flags() }, now())
            .unwrap();
    let (_base, run) = run_dir(&plan);
    let equivalent = plan.equivalent(&run);
    assert!(equivalent.starts_with("mpirun -np 2 mdtest "), "{equivalent}");
    assert!(equivalent.contains("/m/pvfs-bench/x-metadata-20261123T193000"), "{equivalent}");
}

/// A second run of the same name in the same second gets `-2`, here and on the clients; the
/// plan itself is not changed by it.
#[test]
fn a_taken_run_name_renames_the_run_and_its_directory_on_the_clients() {
    let plan = BenchPlan::resolve(&cluster(""), &flags(), now()).unwrap();
    let base = tempfile::tempdir().unwrap();
    let first = RunDir::create(base.path(), plan.name()).unwrap();
    let second = RunDir::create(base.path(), plan.name()).unwrap();
    assert_eq!(second.name(), "x-throughput-20261123T193000-2");
    assert_eq!(plan.client_dir(&first), Path::new("/m/pvfs-bench/x-throughput-20261123T193000"));
    assert_eq!(plan.client_dir(&second), Path::new("/m/pvfs-bench/x-throughput-20261123T193000-2"));
    assert_eq!(plan.record(&second, &BenchOutcome::default(), &BTreeMap::new(), false).run, second.name());
}

#[test]
fn the_record_names_the_run_as_the_user_did() {
    let file = cluster("launcher = \"mpi\"\nengine = \"ior\"\nvm_limit_mib = 1000\n");
    let plan = BenchPlan::resolve(
        &file,
        &BenchFlags { sweep_point: Some(("t".into(), "1m".into())), ..flags() },
        now(),
    )
    .unwrap();
    let (_base, run) = run_dir(&plan);
    let record = plan.record(&run, &BenchOutcome::default(), &BTreeMap::new(), false);
    assert_eq!((record.engine, record.launcher), (Some(Engine::Ior), Some(Launcher::Mpi)));
    assert_eq!(record.preset.as_deref(), Some("throughput"));
    assert_eq!((record.servers, record.clients, record.vm_limit_mib), (Some(1), Some(2), Some(1000.0)));
    assert!(!record.complete);
    assert_eq!(record.sweep.map(|s| (s.key, s.value)), Some(("t".into(), "1m".into())));
}

/// Issue 24, item 4: `--dir /etc` (or a path that is not canonical) is refused before any
/// client is asked, in the agents' words.
#[test]
fn a_benchmark_directory_in_a_system_tree_is_refused_before_any_client_is_asked() {
    for (dir, says) in [
        ("/etc", "the benchmark directory /etc is in a system tree (or is /)"),
        ("/", "the benchmark directory / is in a system tree (or is /)"),
        ("/root/bench", "is in a system tree"),
        ("/mnt/../etc", "has a `.` or `..` component"),
        ("relative/dir", "is not absolute"),
    ] {
        let text = refusal(&cluster(""), &BenchFlags { dir: Some(dir.into()), ..flags() });
        assert!(text.contains(says), "{dir}: {text}");
        assert!(
            text.ends_with(
                "benchmarks run in the cluster's mount or a data directory (--dir, [bench] mount)"
            )
        );
    }
    let plan =
        BenchPlan::resolve(&cluster(""), &BenchFlags { dir: Some("/scratch".into()), ..flags() }, now());
    let plan = plan.unwrap();
    let (_base, run) = run_dir(&plan);
    assert_eq!(plan.client_dir(&run), Path::new("/scratch/pvfs-bench/x-throughput-20261123T193000"));
}

/// `--sweep`: its form, and each point resolved as its own run (procs the tasks per client,
/// any other key a parameter set after every `--set`), refused in the point's own words.
#[test]
fn a_sweep_is_its_points_each_resolved_as_a_run() {
    assert_eq!(
        Sweep::parse("procs=1, 4,,8").unwrap(),
        Sweep { key: "procs".into(), values: vec!["1".into(), "4".into(), "8".into()] }
    );
    assert_eq!(Sweep::parse("procs").unwrap_err().to_string(), "--sweep \"procs\": expected KEY=V1,V2,…");
    assert_eq!(Sweep::parse("t=,").unwrap_err().to_string(), "--sweep \"t=,\": no values");

    let file = cluster("");
    let base = BenchFlags { set: vec!["t=64k".into()], ..flags() };
    let plans: Vec<BenchPlan> = Sweep::parse("procs=1,3")
        .unwrap()
        .points(&base)
        .iter()
        .map(|point| BenchPlan::resolve(&file, point, now()).unwrap())
        .collect();
    assert_eq!(plans.iter().map(BenchPlan::tasks_per_client).collect::<Vec<_>>(), [1, 3]);
    assert_eq!(plans[1].name(), "x-throughput-20261123T193000-procs3");

    let points = Sweep::parse("t=1m").unwrap().points(&base);
    let plan = BenchPlan::resolve(&file, &points[0], now()).unwrap();
    let Workload::Ior(p) = plan.workload() else { panic!("an IOR workload") };
    assert_eq!(p.transfer, 1 << 20, "the sweep's value comes after --set t=64k");

    let refused = |text: &str| refusal(&file, &Sweep::parse(text).unwrap().points(&base)[0]);
    assert_eq!(refused("procs=0"), "--sweep procs=0: not a count");
    assert!(
        refused("bogus=1").starts_with("--sweep bogus=1: unknown IOR parameter \"bogus\""),
        "{}",
        refused("bogus=1")
    );
}

/// The io500 presets: io500's knobs from the file (quoted, by their ini names) and the flags,
/// seeds drawn when the run is planned, the io500 command it stands for; any runner but the
/// built-in engine through the agents is refused, naming the pair.
#[test]
fn the_io500_presets_take_ini_knobs_and_run_on_the_agents_or_as_the_real_io500() {
    let file = cluster("preset = \"io500\"\n[bench.params]\n\"debug.stonewall-time\" = \"30\"\n");
    let set = BenchFlags { set: vec!["mdtest-hard.n=5000".into()], ..flags() };
    let plan = BenchPlan::resolve(&file, &set, now()).unwrap();
    let Workload::Io500(params) = plan.workload() else { panic!("{:?}", plan.workload()) };
    assert_eq!((params.options.stonewall, params.options.mdtest_hard_files), (30, 5000));
    assert_eq!(
        params.seeds,
        pvfs_bench::io500::plan::Seeds::from(1_795_462_200),
        "drawn from the run's start"
    );
    let (_base, run) = run_dir(&plan);
    let command = plan.equivalent(&run);
    assert!(
        command
            .starts_with("mpirun -np 2 io500 io500.ini  # datadir = /m/pvfs-bench/x-io500-20261123T193000; "),
        "{command}"
    );
    assert!(command.ends_with("debug.stonewall-time = 30; mdtest-hard.n = 5000"), "{command}");

    let scc = BenchFlags { preset: Some(Preset::Io500Scc), ..flags() };
    let Workload::Io500(params) = BenchPlan::resolve(&cluster(""), &scc, now()).unwrap().workload().clone()
    else {
        panic!()
    };
    assert_eq!((params.options.scc, params.options.stonewall), (true, 30));

    let mpi = BenchFlags { launcher: Some(Launcher::Mpi), ..set.clone() };
    assert_eq!(
        refusal(&file, &mpi),
        "the io500 presets run on the built-in engine through the agents launcher (engine builtin, launcher agents) \
         or as the real io500 under mpirun (engine io500, launcher mpi), not engine builtin under launcher mpi"
    );
    // The real io500: where it is comes from the file, and only the io500 presets run on it.
    let real = BenchFlags { engine: Some(Engine::Io500), ..mpi.clone() };
    assert!(refusal(&file, &real).starts_with(
        "engine io500 runs the real io500, and /etc/pvfs/cluster.toml does not say where it is: set [bench] io500 = PATH"
    ));
    let placed = cluster("preset = \"io500\"\nio500 = \"/opt/io500/io500\"\n");
    let plan = BenchPlan::resolve(&placed, &real, now()).unwrap();
    assert_eq!(plan.io500_program(), Some(Path::new("/opt/io500/io500")));
    let (_base, run) = run_dir(&plan);
    assert!(plan.equivalent(&run).starts_with("mpirun -np 2 /opt/io500/io500 io500.ini  # datadir = "));
    let not_io500 = BenchFlags { preset: Some(Preset::Throughput), set: vec![], ..real.clone() };
    assert_eq!(
        refusal(&placed, &not_io500),
        "engine io500 runs the io500 presets (--preset io500 or io500-scc), not preset throughput"
    );
    // io500 drops the caches itself, on its ranks: the clients' only.
    let clients = BenchFlags { drop_caches: Some(DropCaches::Clients), ..real.clone() };
    assert_eq!(BenchPlan::resolve(&placed, &clients, now()).unwrap().drop_caches(), DropCaches::Clients);
    let all = BenchFlags { drop_caches: Some(DropCaches::All), ..real.clone() };
    assert!(refusal(&placed, &all).starts_with("engine io500 drops caches with io500's own drop-caches"));
    let unknown = BenchFlags { set: vec!["ior-easy.blocksize=1m".into()], ..flags() };
    let err = refusal(&file, &unknown);
    assert!(
        err.contains("unknown io500 parameter \"ior-easy.blocksize\": use debug.stonewall-time"),
        "{err}"
    );
}
