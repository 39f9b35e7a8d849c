//! `cargo xtask bench-agent`: pvfs-agent against gmond (Debian's ganglia-monitor, polled over
//! TCP every 15 s as gmetad polls it) and prometheus-node-exporter (scraped every second), in
//! rounds.
//!
//! Every daemon runs for the whole benchmark, each driven as in production: the agent sampling
//! every second and streaming to a follower (`pvfsctl top --json`, over mTLS), a second agent
//! whose follower also asks for its processes (`top --processes`), a third on a Lustre
//! server's files (a root holding a real 2.15 server's parameters), a fourth on a BeeGFS
//! storage server's (its configuration and IDs, and a stand-in `beegfs-ctl` on its PATH printing
//! as BeeGFS 7.4.7's does: the agent's reading and parsing are measured, the stand-in's own CPU
//! is its process's, not the agent's). After a warm-up, each round
//! measures all of them over the same window (CPU from /proc/PID/task/*/schedstat, RSS and its
//! anonymous part every second), so whatever else the machine does in a round weighs on every
//! daemon alike; each round is printed with the load average. Then per daemon the median over
//! the rounds and, for pvfs-agent against gmond and node_exporter, the ratio of medians with a
//! 95 % bootstrap interval: an interval that spans 1.0 is "undecided", not a ratio.

use crate::bench::cpu_ns;
use crate::util::{self, KillOnDrop, free_port, median, ratio_interval};
use anyhow::Context;
use std::process::Command;
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// Each round's window.
    #[arg(long, default_value_t = 30)]
    pub seconds: u64,
    /// Rounds (at least 5 for an interval worth reading).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// Warm-up before the first round.
    #[arg(long, default_value_t = 15)]
    pub warmup: u64,
    /// The agent's build: `dist` (the shipped binary: fat LTO, glibc 2.17) or `release` (what
    /// the README's build makes).
    #[arg(long, value_enum, default_value = "dist")]
    pub build: crate::bench_engine::Build,
    /// Measure this pvfs binary instead of building the tree's (another branch's build, to
    /// compare before and after); the agents run from the `pvfs-agent` program beside it when
    /// there is one (a build that has it), else from it.
    #[arg(long, value_name = "PATH", conflicts_with = "build")]
    pub binary: Option<std::path::PathBuf>,
}

/// A daemon measured, and what drives it.
struct Daemon {
    name: &'static str,
    load: &'static str,
    pid: u32,
    /// Per round: CPU % of one core, peak RSS MB, peak anonymous RSS MB.
    rounds: Vec<(f64, f64, f64)>,
}

pub fn run_agent(args: &AgentArgs) -> anyhow::Result<()> {
    util::ensure_programs(&[
        ("gmond", "ganglia-monitor"),
        ("prometheus-node-exporter", "prometheus-node-exporter"),
        ("curl", "curl"),
    ])?;
    anyhow::ensure!(args.rounds > 0 && args.seconds > 0, "--rounds and --seconds must be at least 1");
    let (binary, build) = match &args.binary {
        Some(binary) => (std::path::absolute(binary)?, "given"),
        None => (crate::bench_engine::build(args.build)?, args.build.name()),
    };
    let (dir, tls_arg) = util::bench_dir(&binary, "bench-agent", &["bench"])?;

    // Every daemon and its driver, started once; they all run until the end.
    let mut keep = Vec::new();
    let mut daemons = Vec::new();
    let (agent, cluster) = start_agent(&binary, &dir, &tls_arg, "plain", &[])?;
    keep.push(KillOnDrop::spawn(Command::new(&binary).args(["ctl", "top", "--json"]).arg(&cluster))?);
    daemons.push(Daemon {
        name: "pvfs-agent",
        load: "samples every 1 s, streamed live to pvfsctl over mTLS",
        pid: agent.pid(),
        rounds: Vec::new(),
    });
    keep.push(agent);
    let (agent, cluster) = start_agent(&binary, &dir, &tls_arg, "ps", &[])?;
    keep.push(KillOnDrop::spawn(
        Command::new(&binary).args(["ctl", "top"]).arg(&cluster).args(["--json", "--processes"]),
    )?);
    daemons.push(Daemon {
        name: "pvfs-agent +ps",
        load: "as above, and its top 5 processes by CPU and I/O each second (top --processes)",
        pid: agent.pid(),
        rounds: Vec::new(),
    });
    keep.push(agent);
    let root = lustre_root(&dir)?;
    let root = root.to_string_lossy().into_owned();
    let (agent, cluster) = start_agent(&binary, &dir, &tls_arg, "lustre", &["--root", &root])?;
    keep.push(KillOnDrop::spawn(Command::new(&binary).args(["ctl", "top", "--json"]).arg(&cluster))?);
    daemons.push(Daemon {
        name: "pvfs-agent +lustre",
        load: "as the first, on a Lustre server's files (3 targets) read every second",
        pid: agent.pid(),
        rounds: Vec::new(),
    });
    keep.push(agent);
    let root = beegfs_root(&dir)?;
    let path = format!("{}:{}", dir.join("beegfs-bin").display(), std::env::var("PATH").unwrap_or_default());
    let (agent, cluster) = start_agent_with(
        &binary,
        &dir,
        &tls_arg,
        "beegfs",
        &["--root", &root.to_string_lossy()],
        &[("PATH", &path)],
    )?;
    keep.push(KillOnDrop::spawn(Command::new(&binary).args(["ctl", "top", "--json"]).arg(&cluster))?);
    daemons.push(Daemon {
        name: "pvfs-agent +beegfs",
        load: "as the first, on a BeeGFS storage server (its statistics every second, its target's space every second and state every 10 s)",
        pid: agent.pid(),
        rounds: Vec::new(),
    });
    keep.push(agent);
    let ours_count = daemons.len();
    // gmond on loopback with Debian's configuration (its default metric set and schedule).
    let (udp, tcp) = (free_port()?, free_port()?);
    let conf = gmond_loopback_conf(&std::fs::read_to_string("/etc/ganglia/gmond.conf")?, udp, tcp);
    std::fs::write(dir.join("gmond.conf"), conf)?;
    let gmond = KillOnDrop::spawn(Command::new("gmond").arg("-c").arg(dir.join("gmond.conf")).arg("-f"))?;
    daemons.push(Daemon {
        name: "gmond 3.7.2",
        load: "own schedule (20-80 s), XML polled every 15 s",
        pid: gmond.pid(),
        rounds: Vec::new(),
    });
    keep.push(gmond);
    let ne_port = free_port()?;
    let exporter = KillOnDrop::spawn(
        Command::new("prometheus-node-exporter").arg(format!("--web.listen-address=127.0.0.1:{ne_port}")),
    )?;
    daemons.push(Daemon {
        name: "node_exporter",
        load: "scraped every 1 s",
        pid: exporter.pid(),
        rounds: Vec::new(),
    });
    keep.push(exporter);

    let url = format!("http://127.0.0.1:{ne_port}/metrics");
    let (mut last_poll, mut last_scrape) = (None::<Instant>, None::<Instant>);
    let mut drive = || {
        if last_poll.is_none_or(|t| t.elapsed() >= Duration::from_secs(15)) {
            last_poll = Some(Instant::now());
            let _ = std::net::TcpStream::connect(("127.0.0.1", tcp))
                .and_then(|mut s| std::io::copy(&mut s, &mut std::io::sink()));
        }
        if last_scrape.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            last_scrape = Some(Instant::now());
            let _ = util::capture(Command::new("curl").args(["-s", "-o", "/dev/null", &url]));
        }
    };
    eprintln!(
        "xtask bench-agent: {} ({build} build): {}s warm-up, then {} rounds of {}s",
        pvfs_host::paths::agent_program(&binary).display(),
        args.warmup,
        args.rounds,
        args.seconds
    );
    eprintln!("xtask bench-agent: this machine: {}", machine_load_of_a_sample()?);
    let until = Instant::now() + Duration::from_secs(args.warmup);
    while Instant::now() < until {
        drive();
        std::thread::sleep(Duration::from_millis(100));
    }
    for round in 0..args.rounds {
        let load = crate::engine_vs_real::load_average();
        let cpu0: Vec<u64> = daemons
            .iter()
            .map(|d| cpu_ns(d.pid).with_context(|| format!("{} exited", d.name)))
            .collect::<anyhow::Result<_>>()?;
        let t0 = Instant::now();
        let mut peaks = vec![(0.0f64, 0.0f64); daemons.len()];
        let mut next_rss = Instant::now();
        while t0.elapsed() < Duration::from_secs(args.seconds) {
            drive();
            if Instant::now() >= next_rss {
                for (d, peak) in daemons.iter().zip(&mut peaks) {
                    let (rss, anon) = rss_mb(d.pid).with_context(|| format!("{} exited", d.name))?;
                    *peak = (peak.0.max(rss), peak.1.max(anon));
                }
                next_rss += Duration::from_secs(1);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let wall = t0.elapsed().as_secs_f64();
        let mut line = Vec::new();
        for ((d, before), peak) in daemons.iter_mut().zip(cpu0).zip(peaks) {
            let cpu = (cpu_ns(d.pid)? - before) as f64 / 1e9 / wall * 100.0;
            d.rounds.push((cpu, peak.0, peak.1));
            line.push(format!("{} {cpu:.4} %", d.name));
        }
        println!("round {round} (load {load}): {}", line.join(", "));
    }
    // A follower that exited early (a flag refused) would have measured an agent asked for
    // nothing.
    for follower in keep.iter_mut() {
        if let Some(status) = follower.0.try_wait()? {
            anyhow::bail!("a follower or daemon exited ({status}) during the measurement");
        }
    }

    println!(
        "\n{:<19} {:>9} {:>19} {:>13} {:>13}  load",
        "daemon", "CPU %", "[min, max]", "peak RSS MB", "of it anon MB"
    );
    let of = |d: &Daemon, f: fn(&(f64, f64, f64)) -> f64| -> Vec<f64> { d.rounds.iter().map(f).collect() };
    for d in &daemons {
        let cpu = of(d, |r| r.0);
        let (lo, hi) =
            (cpu.iter().copied().fold(f64::MAX, f64::min), cpu.iter().copied().fold(0.0, f64::max));
        println!(
            "{:<19} {:>9.4} {:>19} {:>13.2} {:>13.2}  {}",
            d.name,
            median(&mut cpu.clone()),
            format!("[{lo:.4}, {hi:.4}]"),
            median(&mut of(d, |r| r.1)),
            median(&mut of(d, |r| r.2)),
            d.load
        );
    }
    let ours = &daemons[0];
    println!("\npvfs-agent ÷ (median, [95 % bootstrap interval]; \"undecided\" where it spans 1.0):");
    for other in &daemons[ours_count..] {
        for (what, f) in [
            ("CPU", (|r: &(f64, f64, f64)| r.0) as fn(&(f64, f64, f64)) -> f64),
            ("peak RSS", |r| r.1),
            ("anon RSS", |r| r.2),
        ] {
            let (a, b) = (of(ours, f), of(other, f));
            let ratio = median(&mut a.clone()) / median(&mut b.clone());
            let (lo, hi) = ratio_interval(&a, &b);
            let verdict = if lo <= 1.0 && hi >= 1.0 {
                "undecided"
            } else if hi < 1.0 {
                "below"
            } else {
                "above"
            };
            println!("  {:<14} {what:<9} {ratio:.3} [{lo:.3}, {hi:.3}] {verdict}", other.name);
        }
    }
    Ok(())
}

/// VmRSS and RssAnon of `pid`, in MB.
fn rss_mb(pid: u32) -> anyhow::Result<(f64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let mb = |key: &str| {
        let kb = status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok());
        kb.unwrap_or(0.0) / 1024.0
    };
    Ok((mb("VmRSS:"), mb("RssAnon:")))
}

/// An agent on a free loopback port, its state in `dir/state-NAME`, with `extra` flags; and a
/// one-node cluster file naming it, for its follower.
fn start_agent(
    binary: &std::path::Path,
    dir: &std::path::Path,
    tls: &str,
    name: &str,
    extra: &[&str],
) -> anyhow::Result<(KillOnDrop, std::path::PathBuf)> {
    start_agent_with(binary, dir, tls, name, extra, &[])
}

/// [`start_agent`] with `env` set for the agent.
fn start_agent_with(
    binary: &std::path::Path,
    dir: &std::path::Path,
    tls: &str,
    name: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<(KillOnDrop, std::path::PathBuf)> {
    let port = free_port()?;
    let cluster = dir.join(format!("cluster-{name}.toml"));
    std::fs::write(
        &cluster,
        format!(
            "[cluster]\nname = \"bench\"\nkind = \"local\"\n[local]\nmount = \"/tmp\"\n[[node]]\nname = \"bench\"\naddress = \"127.0.0.1:{port}\"\nroles = [\"server\"]\n"
        ),
    )?;
    // The agent's own program, as the package and bootstrap install it (or `binary` itself
    // when a given build has none beside it).
    let program = pvfs_host::paths::agent_program(binary);
    let agent = KillOnDrop::spawn(
        Command::new(&program)
            .args(util::agent_args(&program))
            .args(["--name", "bench", "--listen", &format!("127.0.0.1:{port}"), "--tls-dir", tls])
            .arg("--state-dir")
            .arg(dir.join(format!("state-{name}")))
            .args(extra)
            .envs(env.iter().copied()),
    )?;
    Ok((agent, cluster))
}

/// A root for an agent on a BeeGFS storage server: this machine's /proc and /sys, the server's
/// configuration naming its storage directory, the IDs its server and management daemon wrote
/// there (`nodeNumID` 3, `targetNumID` 101); and beside it `beegfs-bin/beegfs-ctl`, the stand-in
/// pvfs-metrics' tests use (its header says how it prints).
fn beegfs_root(dir: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    let root = dir.join("beegfs-root");
    std::fs::create_dir_all(&root)?;
    for tree in ["proc", "sys"] {
        let link = root.join(tree);
        if !link.exists() {
            std::os::unix::fs::symlink(format!("/{tree}"), link)?;
        }
    }
    for (path, text) in [
        ("etc/beegfs/beegfs-storage.conf", "storeStorageDirectory = /data/beegfs/t1\n"),
        ("data/beegfs/t1/nodeNumID", "3\n"),
        ("data/beegfs/t1/targetNumID", "101\n"),
    ] {
        let at = root.join(path);
        std::fs::create_dir_all(at.parent().context("a directory")?)?;
        std::fs::write(at, text)?;
    }
    let bin = dir.join("beegfs-bin");
    std::fs::create_dir_all(&bin)?;
    std::fs::copy(
        util::root().join("crates/pvfs-metrics/testdata/beegfs/stand-in-beegfs-ctl.sh"),
        bin.join("beegfs-ctl"),
    )?;
    std::fs::set_permissions(bin.join("beegfs-ctl"), std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    Ok(root)
}

/// A root for an agent (`--root`): links to this machine's /proc and /sys entries, and a real
/// Lustre 2.15 server's `lctl get_param` output (pvfs-metrics' testdata, from
/// whamcloud/lustrefs-exporter) laid out as its kernel holds it: one-value parameters under
/// /sys/fs/lustre, multi-line ones under /proc/fs/lustre. xtask links none of the workspace's
/// crates, so lctl's `NAME=` lines are split here.
fn lustre_root(dir: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    let root = dir.join("lustre-root");
    for tree in ["proc", "sys"] {
        let at = root.join(tree);
        std::fs::create_dir_all(&at)?;
        for entry in std::fs::read_dir(format!("/{tree}"))? {
            let name = entry?.file_name().into_string().unwrap_or_default();
            if name != "fs" && !name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()) {
                std::os::unix::fs::symlink(std::path::Path::new("/").join(tree).join(&name), at.join(&name))?;
            }
        }
    }
    let lctl =
        std::fs::read_to_string(util::root().join("crates/pvfs-metrics/testdata/lustre/valid_valid.txt"))?;
    let mut params: Vec<(String, String)> = Vec::new();
    for line in lctl.lines() {
        let is_name =
            |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || "._-@:".contains(c));
        match line.split_once('=') {
            Some((name, value)) if is_name(name) => params.push((name.to_owned(), value.to_owned())),
            _ => {
                if let Some((_, value)) = params.last_mut() {
                    value.push('\n');
                    value.push_str(line);
                }
            }
        }
    }
    for (name, value) in params.iter().filter(|(n, _)| !n.contains(".exports.")) {
        let tree = if value.contains('\n') { "proc/fs/lustre" } else { "sys/fs/lustre" };
        let file = root.join(tree).join(name.replace('.', "/"));
        std::fs::create_dir_all(file.parent().context("a parameter's directory")?)?;
        std::fs::write(&file, format!("{}\n", value.trim_start_matches('\n')))?;
    }
    Ok(root)
}

/// What the agent's every second reads and sends on this machine, which its CPU follows: every
/// device that has done I/O since boot is encoded and sent, as iostat lists it, and those with
/// a size are read from their sysfs stat files (`pvfs_metrics::sample` finds them in
/// /proc/diskstats, whose every line the kernel formats on each read: a machine that has run
/// the test suite lists 120 loop devices that did I/O once and were detached).
fn machine_load_of_a_sample() -> anyhow::Result<String> {
    use pvfs_metrics::sample::{DeviceFilter, Sampler, has_size};
    let root = pvfs_host::Root::system();
    // The agent's own sampler and rule, so the devices counted are the ones it sends and reads.
    let sample = Sampler::new(root.clone(), DeviceFilter::WholeDevices).sample()?;
    let lines = std::fs::read_to_string("/proc/diskstats")?.lines().count();
    let sized = sample.disks.iter().filter(|d| has_size(&root, &d.name) == Some(true)).count();
    Ok(format!(
        "/proc/diskstats {lines} lines, {} whole devices with I/O since boot (each in every sample; {sized} with a size, \
         read each second); {} NICs",
        sample.disks.len(),
        sample.nics.len()
    ))
}

/// Debian's gmond.conf, kept as it is (its metric modules and collection schedule) except for
/// what a benchmark on a shared machine needs: foreground, no setuid, unicast on loopback to
/// free ports, metadata resent (required with unicast).
fn gmond_loopback_conf(debian: &str, udp: u16, tcp: u16) -> String {
    let mut conf = debian
        .replace("daemonize = yes", "daemonize = no")
        .replace("setuid = yes", "setuid = no")
        .replace("send_metadata_interval = 0", "send_metadata_interval = 30");
    for (block, body) in [
        ("udp_send_channel {", format!("host = 127.0.0.1\n  port = {udp}\n  ttl = 1\n")),
        ("udp_recv_channel {", format!("port = {udp}\n  bind = 127.0.0.1\n")),
        ("tcp_accept_channel {", format!("port = {tcp}\n  bind = 127.0.0.1\n")),
    ] {
        if let Some(start) = conf.find(block) {
            let open = start + block.len();
            if let Some(len) = conf[open..].find('}') {
                conf.replace_range(open..open + len, &format!("\n  {body}"));
            }
        }
    }
    conf
}
