//! Command-line flags: what each personality accepts.
//!
//! The cluster file says *what* the cluster is; these flags say *how to run this command*.
//! Values are checked here (parsers for durations, addresses); resolving them against files
//! and the environment happens in the commands.

use clap::{Args, Parser, Subcommand, ValueEnum};
use pvfs_bench::launch::{Engine, Launcher};
use pvfs_bench::params::Preset;
use pvfs_bench::request::DropCaches;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

const AFTER_CTL: &str = "\
Exit status: 0 success, 1 the command ran and found failures (e.g. an unreachable node), 2 bad input.

Start here: `pvfsctl demo` runs a local cluster of agents on this machine.";

/// `pvfs`: both programs in one, by subcommand.
#[derive(Debug, Parser)]
#[command(name = "pvfs", version, about = "Parallel file systems: set up, benchmark, watch")]
pub struct PvfsCli {
    #[command(subcommand)]
    pub command: PvfsCommand,
}

#[derive(Debug, Subcommand)]
pub enum PvfsCommand {
    /// The coordinator CLI (same as running `pvfsctl`).
    Ctl(CtlCli),
    /// The node agent (same as running `pvfs-agent`).
    Agent(Box<AgentCli>),
}

/// `pvfsctl`: the coordinator.
#[derive(Debug, Parser)]
#[command(
    name = "pvfsctl",
    version,
    about = "Stand up, benchmark and watch a parallel file system (Lustre, GlusterFS, BeeGFS) across its nodes",
    after_help = AFTER_CTL
)]
pub struct CtlCli {
    #[command(flatten)]
    pub log: LogArgs,
    #[command(subcommand)]
    pub command: CtlCommand,
}

#[derive(Debug, Subcommand)]
pub enum CtlCommand {
    /// Create the cluster CA and issue certificates.
    #[command(subcommand)]
    Ca(CaCommand),
    /// Check a cluster file and print every error with its position.
    Validate(ValidateArgs),
    /// Ask every agent for its node's facts.
    Nodes(NodesArgs),
    /// Install and start the agent on every node over SSH (binary, unit, certificates from the
    /// cluster CA), until each answers over mutual TLS; a second run changes nothing.
    Bootstrap(Box<BootstrapArgs>),
    /// Create the cluster's Azure VMs (`[azure]`: size, image, data disks, NIC, zone) and write
    /// their private IPs to NAME.state.toml beside the cluster file; `--plan` changes nothing.
    /// Needs a pvfs built with `--features azure`.
    Provision(ProvisionArgs),
    /// Delete the Azure VMs (with their NICs and disks) that carry this cluster's tag, after
    /// listing them and asking for the cluster's name. Needs a pvfs built with `--features azure`.
    Deprovision(DeprovisionArgs),
    /// Converge every node to the cluster file (packages, RAID0, LVM, mkfs, mounts, services,
    /// tuning, validation), in dependency order across nodes; `--plan` changes nothing.
    Up(UpCli),
    /// Take the cluster apart in the reverse order of `up`: clients unmount, the gluster volume
    /// goes, targets unmount, services stop; `--wipe` also destroys the targets' disks (after
    /// the cluster's name is typed). `--plan` changes nothing.
    Down(DownArgs),
    /// Run the seed's IOR/mdtest methodology on the clients and record every node's metrics.
    Bench(Box<BenchCli>),
    /// Write a Markdown report with SVG and PNG charts over one or more benchmark runs.
    Report(ReportArgs),
    /// Every node's disks, network, CPU and memory, second by second.
    Top(TopArgs),
    /// Run as a long-lived coordinator exporting every node's metrics for Prometheus.
    Serve(Box<ServeArgs>),
    /// Start a local cluster of agents on loopback and show it.
    Demo(DemoArgs),
    /// Write shell completions and man pages (used by `cargo xtask dist`).
    #[command(hide = true)]
    Generate(GenerateArgs),
}

#[derive(Debug, Subcommand)]
pub enum CaCommand {
    /// Create a new cluster CA (DIR/ca.crt, DIR/ca.key). Never overwrites one.
    Init {
        /// Directory for the CA (created mode 0700 if missing).
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
    },
    /// Issue DIR/NAME.crt and DIR/NAME.key, signed by the CA in DIR; prints its serial.
    Issue(IssueArgs),
    /// Revoke a certificate: add its serial to DIR/revoked.txt, the list agents refuse. Copy
    /// the file to every node's TLS directory; agents re-read it without a restart.
    Revoke(RevokeArgs),
}

#[derive(Debug, Args)]
pub struct RevokeArgs {
    /// A holder's name (revokes DIR/NAME.crt), or a certificate serial in hexadecimal (as
    /// `ca issue` prints it, or `openssl x509 -serial` shows it).
    #[arg(value_name = "NAME|SERIAL")]
    pub target: String,
    /// Directory holding the CA and the list (DIR/revoked.txt).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct IssueArgs {
    /// The holder: a node name (an agent), or `pvfsctl` for the coordinator.
    pub name: String,
    /// Directory holding the CA; the certificate and key are written there.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// An IP address or DNS name the certificate is valid for (repeatable). Give agents the
    /// address the cluster file dials them at.
    #[arg(long = "san", value_name = "IP_OR_DNS")]
    pub sans: Vec<String>,
    /// What the certificate is for; by default `pvfsctl` gets a coordinator (client)
    /// certificate and every other name an agent (server) certificate.
    #[arg(long, value_enum)]
    pub usage: Option<UsageArg>,
    /// Replace an existing NAME.crt/NAME.key (never the CA's files: `ca` is not a holder's
    /// name). Revoke the old certificate too if it may have leaked.
    #[arg(long)]
    pub force: bool,
    /// How long the certificate is valid, in days (default 825). A short lifetime limits what
    /// a lost coordinator certificate is worth; re-issue before it runs out.
    #[arg(long, value_name = "N")]
    pub days: Option<u32>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum UsageArg {
    Agent,
    Coordinator,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The cluster file.
    #[arg(value_name = "CLUSTER.toml")]
    pub cluster: PathBuf,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// How the coordinator connects to agents.
#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// Directory with ca.crt and the coordinator's certificate; defaults to the cluster file's
    /// `[tls] dir`.
    #[arg(long, value_name = "DIR", env = "PVFS_TLS_DIR")]
    pub tls_dir: Option<PathBuf>,
    /// Name of the coordinator's certificate in the TLS directory.
    #[arg(long, value_name = "NAME", default_value = pvfs_tls::COORDINATOR_NAME)]
    pub cert_name: String,
    /// Removed: agents serve only mutual TLS. Kept so that passing it explains what to do.
    #[arg(long, hide = true)]
    pub insecure: bool,
    /// Give up on a node after this long (connect and each request).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub timeout: Duration,
}

#[derive(Debug, Args)]
pub struct NodesArgs {
    /// The cluster file.
    #[arg(value_name = "CLUSTER.toml")]
    pub cluster: PathBuf,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Print `{"nodes":[…]}` instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct UpArgs {
    /// The cluster file.
    #[arg(value_name = "CLUSTER.toml")]
    pub cluster: PathBuf,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Show every step that would change, why, and the exact commands; change nothing.
    #[arg(long)]
    pub plan: bool,
    /// One JSON object per event (unit and step starts, commands, outcomes), then a recap.
    #[arg(long)]
    pub json: bool,
    /// Also list steps that were already in sync.
    #[arg(long, short)]
    pub verbose: bool,
}

#[derive(Debug, Args)]
pub struct BootstrapArgs {
    /// The cluster file: the nodes, and the addresses both SSH and the coordinator use.
    #[arg(value_name = "CLUSTER.toml")]
    pub cluster: PathBuf,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Log in as USER (default: the SSH configuration's `User`, else yours).
    #[arg(long, value_name = "USER")]
    pub ssh_user: Option<String>,
    /// An SSH private key to offer, besides those of the SSH configuration and ssh-agent.
    #[arg(long, value_name = "KEY")]
    pub identity: Option<PathBuf>,
    /// Use FILE as the SSH configuration instead of ~/.ssh/config (`ssh -F FILE`).
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// Trust a node's SSH host key on first contact and record it
    /// (StrictHostKeyChecking=accept-new). A key that changed is refused all the same.
    #[arg(long)]
    pub accept_new_host_keys: bool,
    /// Run the commands on the nodes through `sudo -n` (for a login that is not root).
    #[arg(long)]
    pub sudo: bool,
    /// Install this binary as the agent (e.g. `bin/pvfs-agent` from a dist tarball). By
    /// default: the `pvfs-agent` program beside this one, else this program itself (which runs
    /// as the agent under that name).
    #[arg(long, value_name = "PATH")]
    pub from: Option<PathBuf>,
    /// Install this .deb (`cargo xtask dist`'s) with `dpkg -i` on nodes that have dpkg; the
    /// others get the binary and the unit.
    #[arg(long, value_name = "FILE")]
    pub deb: Option<PathBuf>,
    /// Act on this node of the cluster file only (repeatable): its certificate, its SSH
    /// session, its agent. Default: every node.
    #[arg(long = "node", value_name = "NAME")]
    pub nodes: Vec<String>,
    /// Read every node and list what would change; issue and change nothing.
    #[arg(long)]
    pub plan: bool,
    /// One JSON object per event, then a recap.
    #[arg(long)]
    pub json: bool,
    /// Nodes handled at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub parallel: u16,
    /// How long an agent has to answer over mutual TLS after it is (re)started.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub wait: Duration,
    /// SSH's ConnectTimeout.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub ssh_timeout: Duration,
    /// A new SSH connection for every command, instead of one per node that carries all of
    /// them (OpenSSH's ControlMaster, its socket in a private temporary directory).
    #[arg(long)]
    pub no_multiplex: bool,
    /// Show a failed command line whole (without it, a long one is cut).
    #[arg(long, short)]
    pub verbose: bool,
}

/// `pvfsctl up`: `UpArgs` (which `down` shares) and when nodes may be rebooted.
#[derive(Debug, Args)]
pub struct UpCli {
    #[command(flatten)]
    pub up: UpArgs,
    /// Reboot any node that must boot into another kernel (the Lustre server kernel `up`
    /// installed): its agent makes the kernel the boot default and reboots, and `up` waits for
    /// the node to come back running it, then goes on. Without it, only nodes with `reboot =
    /// true` in the cluster file are rebooted; the others stop with the next step to take.
    #[arg(long)]
    pub allow_reboot: bool,
    /// How long a rebooting node has to come back running its kernel.
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = parse_duration)]
    pub reboot_timeout: Duration,
    /// First `provision` the cluster's Azure VMs, then `bootstrap` their agents (as the
    /// `[azure] admin_user`, with sudo, accepting the new VMs' host keys), then converge.
    #[arg(long, conflicts_with = "plan")]
    pub provision: bool,
    /// Boxed: most runs of `up` do not provision, and the command enum stays small.
    #[command(flatten)]
    pub azure: Box<AzureArgs>,
}

/// How to reach Azure Resource Manager (hidden: for tests against a local endpoint).
#[derive(Debug, Clone, Args)]
pub struct AzureArgs {
    /// The ARM endpoint instead of https://management.azure.com.
    #[arg(long, hide = true, value_name = "URL", env = "PVFS_AZURE_ENDPOINT")]
    pub azure_endpoint: Option<String>,
    /// A PEM root certificate to trust for that endpoint.
    #[arg(long, hide = true, value_name = "PEM", env = "PVFS_AZURE_CA")]
    pub azure_ca: Option<PathBuf>,
    /// A bearer token to send instead of finding credentials.
    #[arg(long, hide = true, value_name = "TOKEN", env = "PVFS_AZURE_TOKEN")]
    pub azure_token: Option<String>,
}

#[derive(Debug, Args)]
pub struct ProvisionArgs {
    /// The cluster file, with an `[azure]` section.
    #[arg(value_name = "CLUSTER.toml")]
    pub cluster: PathBuf,
    /// List the VMs to create, change and leave, with their disks, and check the region's
    /// quotas; create nothing.
    #[arg(long)]
    pub plan: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub azure: AzureArgs,
}

#[derive(Debug, Args)]
pub struct DeprovisionArgs {
    /// The cluster file, with an `[azure]` section.
    #[arg(value_name = "CLUSTER.toml")]
    pub cluster: PathBuf,
    /// Delete without asking for the cluster's name.
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub azure: AzureArgs,
}

#[derive(Debug, Args)]
pub struct DownArgs {
    /// The same cluster file, connection and output flags as `up`.
    #[command(flatten)]
    pub up: UpArgs,
    /// Also destroy every target: arrays stopped, signatures erased and the disks zeroed where
    /// data starts and ends, so the next `up` formats them anew. The devices are listed first,
    /// and nothing happens until the cluster's name is typed (or given with --yes-wipe).
    #[arg(long)]
    pub wipe: bool,
    /// Confirm --wipe without a prompt: the cluster's name, exactly as the prompt asks for it.
    #[arg(long, value_name = "NAME", requires = "wipe")]
    pub yes_wipe: Option<String>,
}

/// `pvfsctl bench CLUSTER.toml …` runs a benchmark; `pvfsctl bench import FILE…` reads
/// existing IOR/mdtest outputs.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BenchCli {
    #[command(subcommand)]
    pub command: Option<BenchCommand>,
    #[command(flatten)]
    pub run: BenchArgs,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Read existing IOR (3.2–4.1: text, JSON, CSV) and mdtest outputs, and io500 runs (its
    /// result directory or stdout), into the results store, as if pvfs had run them; `--json`
    /// prints what each file says.
    Import(ImportArgs),
    /// Each run against a baseline, per phase and metric (bandwidth, operations a second,
    /// p50 and p99 latency): the change with its 95 % interval over the iterations (Welch's),
    /// the settings that differ, and exit 1 when a metric got worse by more than the threshold
    /// with significance (to gate a change on it).
    Compare(CompareArgs),
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline run's results directory.
    #[arg(value_name = "BASELINE", required = true)]
    pub baseline: PathBuf,
    /// The runs' results directories, each compared to the baseline.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<PathBuf>,
    /// How much worse a metric may get before it fails the gate: `5%` or `0.05`.
    #[arg(long, default_value = "5%", value_parser = threshold)]
    pub threshold: f64,
    /// One JSON object per run compared: its differences and rows.
    #[arg(long)]
    pub json: bool,
}

/// `5%` or `0.05`: a fraction between 0 and 10 (1,000 %).
fn threshold(text: &str) -> Result<f64, String> {
    let (number, scale) = match text.trim().strip_suffix('%') {
        Some(n) => (n, 0.01),
        None => (text.trim(), 1.0),
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * scale)
        .filter(|v| v.is_finite() && (0.0..=10.0).contains(v))
        .ok_or_else(|| {
            format!("{text:?}: a threshold is a percentage such as 5% (or a fraction such as 0.05)")
        })
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// IOR or mdtest output files (stdout, or stdout and stderr together), or io500 result
    /// directories or stdout files.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// Where the imported runs go (a directory per file is made inside).
    #[arg(long, value_name = "DIR", default_value = "pvfs-results")]
    pub results: PathBuf,
    /// Per file: {"file","tool","version","command","summary":[…]}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// The cluster file.
    #[arg(value_name = "CLUSTER.toml", required = true)]
    pub cluster: Option<PathBuf>,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// throughput (-w -r -B -C -i4 -t32m -b4G -F), iops (-t4k -b320m -z), metadata (mdtest -C -T
    /// -i4 -I 2000 -z 2 -b 4 -L -u -F), metadata-lustre (-I 10 -i 2 -z 5 -b 5), io500 (the
    /// IO500's stages, io500's rules and score) or io500-scc (a 30 s stonewall); default: the
    /// cluster file's [bench] preset, else throughput.
    #[arg(long, value_parser = named(&Preset::ALL, |p| p.as_str()))]
    pub preset: Option<Preset>,
    /// Tasks (IOR processes) per client; default: [bench] procs_per_client, else 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub procs: Option<u32>,
    /// Override a parameter after the preset and [bench] params: transfer, block, segments,
    /// iterations, file_per_proc, random, fsync, reorder, odirect, packet (IOR's -l:
    /// timestamp, offset, incompressible, random), deadline, wear_out, signature, verify, keep;
    /// items, per_task, depth, branch, iterations, create, stat, read, remove, leaf_only,
    /// unique_dir, files_only, stride, write_bytes, read_bytes, verify, seed, deadline, sync,
    /// fsync (mdtest); or their letters (t=1m, b=64m, i=2, D=300, n=1000, W=300); for io500,
    /// its ini names (debug.stonewall-time=300, ior-easy.blockSize=4g). Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// builtin (default), ior, fio, or io500 (the real io500 at [bench] io500, under
    /// --launcher mpi, for the io500 presets).
    #[arg(long, value_parser = named(&Engine::ALL, |e| e.as_str()))]
    pub engine: Option<Engine>,
    /// agents (default) or mpi.
    #[arg(long, value_parser = named(&Launcher::ALL, |l| l.as_str()))]
    pub launcher: Option<Launcher>,
    /// Drop caches (sync, then the page cache, dentries and inodes) before every read and stat
    /// phase: on the clients, or on every node of the cluster ("all"); default: the cluster
    /// file's [bench] drop_caches, else none. Each drop is in the run's record.
    #[arg(long, value_name = "WHERE", value_parser = named(&DropCaches::ALL, |d| d.as_str()))]
    pub drop_caches: Option<DropCaches>,
    /// The directory on the clients to run in (a `pvfs-bench/RUN` directory is made inside);
    /// default: [bench] mount, else the file system's mount.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Where results go (a directory per run is made inside).
    #[arg(long, value_name = "DIR", default_value = "pvfs-results")]
    pub results: PathBuf,
    /// One JSON object per event (phase starts, progress, phase results), then a summary.
    #[arg(long, conflicts_with = "watch")]
    pub json: bool,
    /// Run once per value, e.g. `procs=16,32,64,128` or `transfer=1m,4m,32m`: a results directory
    /// per point, and a table across them at the end (`pvfsctl report` draws them side by side).
    #[arg(long, value_name = "KEY=V1,V2,…")]
    pub sweep: Option<String>,
    /// The sweep point this run is (set by --sweep for each of its runs).
    #[arg(skip)]
    pub sweep_point: Option<(String, String)>,
    /// Show the run live in the terminal: phase, elapsed, aggregate MiB/s and ops/s with a
    /// per-second chart, and every node's disk and network rates (`q` leaves the view; the run
    /// goes on). Lines when stdout is not a terminal.
    #[arg(long)]
    pub watch: bool,
    /// Record every node's busiest processes each second in metrics/NODE.jsonl (`--processes`
    /// or `--processes=N`): the top N by CPU and top N by I/O bytes (default 5, at most 64). `--watch` records the top 5 unless
    /// this says otherwise. Agents scan their processes only while asked.
    #[arg(long, value_name = "N", num_args = 0..=1, require_equals = true, default_missing_value = "5",
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub processes: Option<u32>,
    /// Fail something during a phase and undo it, measuring the stall and the recovery:
    /// `kill-brick=NODE` (its GlusterFS brick), `stop-service=NODE[,unit=UNIT]` (systemctl stop,
    /// then start; glusterd by default on GlusterFS) or `cut-network=NODE[,interface=IFACE]` (one
    /// interface down, by default the one pvfs reaches the node through; the node's agent
    /// brings it back up itself), then `[,phase=write][,iteration=0][,at=5][,for=10]` (seconds
    /// into the phase, and for how long). Only on nodes whose agent policy file says `faults =
    /// true`; undone when the run ends, however it ends. Repeatable.
    #[arg(long, value_name = "SPEC")]
    pub fault: Vec<String>,
    /// Take GlusterFS's own profile of the volume over each phase (`gluster volume profile`:
    /// every brick's file operations, calls and latencies, and bytes), started before the run
    /// and stopped after it if it was off. Profiling times every call on every brick, so it is
    /// on only when asked.
    #[arg(long)]
    pub gluster_profile: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Results directories of runs (`pvfs-results/RUN`), e.g. the same preset at several server
    /// counts for the scale-out figure.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<PathBuf>,
    /// Where report.md and its charts go.
    #[arg(long, value_name = "DIR", default_value = "pvfs-report")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct TopArgs {
    /// The cluster file.
    #[arg(value_name = "CLUSTER.toml")]
    pub cluster: PathBuf,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// One JSON object per node per second (the keys of `pvfs-agent metrics --json`, plus
    /// "node"), and a line when a node goes down or comes back.
    #[arg(long)]
    pub json: bool,
    /// Stop after N seconds of samples from every node that is up.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Remember how far each node's stream got in FILE, and on the next start resume from
    /// there: every second in between is printed, none twice (as long as the agents still hold
    /// them; an hour by default).
    #[arg(long, value_name = "FILE")]
    pub cursor_file: Option<PathBuf>,
    /// Also show each node's busiest processes every second (`--processes` or
    /// `--processes=N`): its top N by CPU and top N by I/O bytes (default 5, at most 64), in a panel for the selected node (↑/↓) or in every
    /// line. Agents scan their processes only while asked.
    #[arg(long, value_name = "N", num_args = 0..=1, require_equals = true, default_missing_value = "5",
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub processes: Option<u32>,
    /// With --processes, the node whose processes the full screen shows first.
    #[arg(long, value_name = "NODE", requires = "processes")]
    pub node: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The cluster file.
    #[arg(value_name = "CLUSTER.toml")]
    pub cluster: PathBuf,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Where to serve /metrics (Prometheus text format, or OpenMetrics when asked for).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9477")]
    pub metrics_listen: SocketAddr,
    /// Keep history in DIR/CLUSTER.redb: every node's 10 s points for 7 days, 1 min for 90
    /// days and 10 min for 2 years, each with its average, minimum and maximum, for the web
    /// view's node, compare and heatmap views. Off unless asked: it costs serve a thread's
    /// worth of CPU at 1,000 nodes of 1,400 series each (see the README).
    #[arg(long, value_name = "DIR")]
    pub history: Option<PathBuf>,
    /// Where `pvfsctl bench` keeps its runs (its --results): the web view draws their phases
    /// over its charts and lists them.
    #[arg(long, value_name = "DIR", default_value = "pvfs-results")]
    pub results: PathBuf,
    /// Serve the web view and /metrics over HTTPS with NAME.crt and NAME.key from the cluster's
    /// TLS directory: a server certificate of the cluster's CA (`pvfsctl ca issue NAME --san
    /// HOST`); browsers then trust the cluster's ca.crt.
    #[arg(long, value_name = "NAME")]
    pub web_tls: Option<String>,
    /// Push every node's every second, with /metrics' names and labels and the sample's own
    /// time, to a Prometheus remote-write receiver (Prometheus with
    /// --web.enable-remote-write-receiver: http://HOST:9090/api/v1/write; Mimir, Thanos,
    /// VictoriaMetrics, Cortex). A bounded queue; what it drops is counted on /metrics.
    #[arg(long, value_name = "URL")]
    pub remote_write: Option<String>,
    /// A file holding the Authorization header's value for --remote-write (e.g. `Bearer TOKEN`
    /// or `Basic BASE64`): credentials never go on the command line.
    #[arg(long, value_name = "FILE", requires = "remote_write")]
    pub remote_write_auth_file: Option<PathBuf>,
    /// The CA certificates (PEM) that --remote-write's https store is checked against, instead
    /// of the system's.
    #[arg(long, value_name = "FILE", requires = "remote_write")]
    pub remote_write_ca: Option<PathBuf>,
    /// Answer as gmetad's XML port (its 8651): the whole grid — every node as a Ganglia host
    /// with gmond's metrics and its disks' iostat columns — to each connection. A gmetad can
    /// poll it as a `data_source` (with `scalable off` to keep each host's RRDs). Plain TCP
    /// with no authentication, as gmetad's: bind it where only trusted hosts reach.
    #[arg(long, value_name = "ADDR")]
    pub gmetad_xml: Option<SocketAddr>,
    /// Answer as gmetad's interactive port (its 8652, which ganglia-web queries): one request
    /// line such as `/CLUSTER/HOST` or `/?filter=summary`, then that part of the grid. Plain
    /// TCP with no authentication, as gmetad's.
    #[arg(long, value_name = "ADDR")]
    pub gmetad_interactive: Option<SocketAddr>,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// How many agents to start.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=50))]
    pub agents: u8,
    /// Keep the demo's files (CA, certificates, cluster file, agent logs) in DIR; by default
    /// they go to a temporary directory that is removed on exit.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Exit after showing the cluster instead of waiting for Ctrl-C (the default when stdout
    /// is not a terminal).
    #[arg(long, conflicts_with = "hold")]
    pub once: bool,
    /// Keep the agents running until Ctrl-C or SIGTERM even when stdout is not a terminal
    /// (to use the local cluster from scripts).
    #[arg(long)]
    pub hold: bool,
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Directory to write `completions/` and `man/` into.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// `pvfs-agent`: the daemon on every node.
#[derive(Debug, Parser)]
#[command(
    name = "pvfs-agent",
    version,
    about = "The pvfs node agent: serves node facts, per-second metrics and typed setup steps (later, benchmarks) to pvfsctl over mutual TLS",
    after_help = "Every flag can also be set in the environment (e.g. PVFS_AGENT_LISTEN), as the systemd unit does."
)]
pub struct AgentCli {
    /// Run a tool instead of serving.
    #[command(subcommand)]
    pub command: Option<AgentCommand>,
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", env = "PVFS_AGENT_LISTEN", default_value = "0.0.0.0:7070")]
    pub listen: SocketAddr,
    /// This node's name (the cluster file's node name, and the certificate's name); defaults
    /// to the host name.
    #[arg(long, value_name = "NAME", env = "PVFS_AGENT_NAME")]
    pub name: Option<String>,
    /// Directory with ca.crt, NAME.crt and NAME.key.
    #[arg(long, value_name = "DIR", env = "PVFS_AGENT_TLS_DIR", default_value = "/etc/pvfs/tls")]
    pub tls_dir: PathBuf,
    /// Removed: the agent serves only mutual TLS. Kept (with PVFS_AGENT_INSECURE) so that
    /// passing it explains what to do.
    #[arg(long, hide = true)]
    pub insecure: bool,
    /// Directory for the agent's state.
    #[arg(long, value_name = "DIR", env = "PVFS_AGENT_STATE_DIR", default_value = "/var/lib/pvfs")]
    pub state_dir: PathBuf,
    /// How much per-second history to keep for coordinators that reconnect (memory: about
    /// 150 bytes per second on a node with a few disks).
    #[arg(long, value_name = "DURATION", env = "PVFS_AGENT_HISTORY", default_value = "1h", value_parser = parse_duration)]
    pub history: Duration,
    /// Also answer TCP connections on ADDR with a gmond-compatible XML dump (Ganglia 3.7.2's
    /// layout, standard metrics plus per-disk iostat), for an unmodified gmetad to poll as a
    /// data_source. Plain TCP and unauthenticated, like gmond: bind it to a management network.
    #[arg(long, value_name = "ADDR", env = "PVFS_AGENT_GMOND_XML")]
    pub gmond_xml: Option<SocketAddr>,
    /// The CLUSTER NAME in the gmond dump.
    #[arg(long, value_name = "NAME", env = "PVFS_AGENT_GMOND_CLUSTER", default_value = "pvfs")]
    pub gmond_cluster: String,
    /// The site's policy file: what this node lets a coordinator ask of it (step kinds,
    /// devices, data roots, repository mirrors, units). Default: /etc/pvfs/policy.toml if it
    /// exists, else the built-in policy; a file named here must exist.
    #[arg(long, value_name = "FILE", env = "PVFS_AGENT_POLICY")]
    pub policy: Option<PathBuf>,
    /// Check the configuration (certificates, addresses, state directory, policy), print what
    /// would be served, and exit: 0 if it would start, 2 if not.
    #[arg(long)]
    pub check_config: bool,
    /// Testing aid: read and write the node's files (/proc, /sys, /dev, /boot, /etc) under DIR
    /// instead of /, as node_exporter's --path.rootfs does; the programs the agent runs still
    /// act on the real system. Lets tests give an agent a kernel release and boot id of their
    /// own (a reboot cannot be tried for real there).
    #[arg(long, value_name = "DIR", hide = true)]
    pub root: Option<PathBuf>,
    #[command(flatten)]
    pub log: LogArgs,
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Print this machine's disk, network, CPU, memory and load rates every interval, with
    /// iostat -x / sar column names; no coordinator needed.
    Metrics(MetricsArgs),
    /// Run the built-in IOR/mdtest engine on this machine (no coordinator, no IOR needed):
    /// the seed's presets or any parameters, IOR's summary as a table or JSON.
    Engine(EngineArgs),
    /// Serve many simulated agents from one process (for load-testing a coordinator): agent i
    /// listens on the --listen port + i and streams this machine's samples.
    #[command(hide = true)]
    Simulate(SimulateArgs),
    /// One phase of the built-in engine for this client's tasks, as the agent runs it: a child
    /// process of its own (its memory, threads and crashes cannot take the agent down), JSON
    /// lines on standard output, stopping at the next transfer once standard input closes.
    #[command(hide = true)]
    EnginePhase(EnginePhaseArgs),
    /// Set this process's OOM score, then become PROGRAM: how the agent starts benchmark
    /// processes (the engine, fio, mpirun and its ranks) so they do not inherit its own
    /// protection from the OOM killer.
    #[command(hide = true)]
    OomExec(OomExecArgs),
}

#[derive(Debug, Args)]
pub struct EnginePhaseArgs {
    /// The run's directory on this client.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// ior-write, ior-read, ior-cleanup, md-tree-create, md-file-create, …
    #[arg(long)]
    pub phase: String,
    #[arg(long)]
    pub iteration: u32,
    /// The first of this client's tasks (global task number).
    #[arg(long)]
    pub first_task: u32,
    /// This client's tasks.
    #[arg(long)]
    pub tasks: u32,
    /// Tasks across every client.
    #[arg(long)]
    pub total_tasks: u32,
    /// Tasks per client (for -C's read-back from the next client).
    #[arg(long)]
    pub tasks_per_client: u32,
    /// throughput (IOR) or metadata (mdtest): the workload's kind; --set gives every value.
    /// Transfers each task makes at most (a read after a stonewalled write).
    #[arg(long)]
    pub stop_after: Option<u64>,
    /// The task threads' name (a Lustre client's job id comes from it with `procname_uid`).
    #[arg(long)]
    pub job_tag: Option<String>,
    #[arg(long)]
    pub preset: String,
    /// Every parameter, as `engine --set` takes them.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

#[derive(Debug, Args)]
pub struct OomExecArgs {
    /// The score to set in /proc/self/oom_score_adj (-1000 to 1000; higher is killed first).
    #[arg(long, allow_hyphen_values = true, value_parser = clap::value_parser!(i32).range(-1000..=1000))]
    pub score: i32,
    /// The name PROGRAM runs as (its argv[0]), when not its path: this binary picks its
    /// personality from it.
    #[arg(long, value_name = "NAME")]
    pub arg0: Option<std::ffi::OsString>,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "PROGRAM")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct EngineArgs {
    /// Directory to run in (on the file system to measure).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// throughput, iops, metadata or metadata-lustre.
    #[arg(long, default_value = "throughput")]
    pub preset: String,
    /// Parallel tasks (threads), as IOR's processes.
    #[arg(long, default_value_t = 1)]
    pub tasks: u32,
    /// Override a parameter: transfer, block, segments, iterations, file_per_proc, random,
    /// fsync, reorder, odirect, write, read, packet (IOR); items, depth, branch, iterations, create,
    /// stat, read, remove, leaf_only, unique_dir, files_only (mdtest); or their IOR/mdtest
    /// letters (t=1m, b=64m, i=2, z=true). Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// One JSON object with the summary rows instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Do not time each transfer (no latency percentiles): the same run without the clock
    /// reads and histograms, to measure what they cost (`cargo xtask bench-engine`).
    #[arg(long, conflicts_with = "mpi")]
    pub untimed: bool,
    /// Run as one rank of an MPI job (started by mpirun, as the mpi launcher does): task RANK
    /// of SIZE from mpirun's environment, meeting the other ranks in DIR between phases, a JSON
    /// line per phase on standard output.
    #[arg(long, conflicts_with_all = ["tasks", "json"])]
    pub mpi: bool,
    /// With --mpi: ranks per client (for -C's read-back from the next client).
    #[arg(long, default_value_t = 1, requires = "mpi")]
    pub tasks_per_node: u32,
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// How many agents.
    #[arg(long, default_value_t = 100)]
    pub agents: u16,
    /// The first agent's address.
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Directory with ca.crt and the certificate NAME.crt/.key all simulated agents use (and
    /// revoked.txt, if any): simulated agents serve mutual TLS like real ones.
    #[arg(long, value_name = "DIR")]
    pub tls_dir: PathBuf,
    /// The certificate's name in --tls-dir.
    #[arg(long, value_name = "NAME", default_value = "sim")]
    pub cert_name: String,
}

#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// Time between reports; samples are taken on multiples of it since the epoch, so every
    /// node reports the same seconds.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    pub interval: Duration,
    /// Stop after this many reports (default: until interrupted).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// One JSON object per interval instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Only these block devices (partitions allowed), shown even when idle; by default every
    /// whole device that has done any I/O since boot, as iostat shows.
    #[arg(long, value_name = "DEV,…", value_delimiter = ',')]
    pub devices: Vec<String>,
    /// When samples are taken: on multiples of the interval since the epoch (the same seconds
    /// on every node, as the agent does), or from the moment the command starts (as iostat
    /// and sar do, to compare with them sample for sample).
    #[arg(long, value_enum, default_value = "wall-clock")]
    pub align: Align,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Align {
    WallClock,
    Start,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Log filter: a level (error, warn, info, debug, trace) or per-target levels such as
    /// `pvfs_agent=debug,info`.
    #[arg(long, value_name = "FILTER", env = "PVFS_LOG", global = true)]
    pub log: Option<String>,
    /// Log format on stderr.
    #[arg(long, value_enum, env = "PVFS_LOG_FORMAT", default_value = "text", global = true)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// "5s", "500ms", "1m30s".
fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{e} (examples: 5s, 500ms, 1m)"))?;
    if d.is_zero() { Err("must be more than zero".into()) } else { Ok(d) }
}

/// A flag whose values are the names of `all` (as clap's `ValueEnum` would list them in
/// `--help` and in its usage error), parsed into the type itself. The pure crates that own
/// these types do not depend on clap, and the orphan rule keeps `ValueEnum` off them here, so
/// the names are clap's possible values and the parse is a lookup among `all`.
fn named<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(&T) -> &'static str,
) -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(all.iter().map(name)).try_map(move |given: String| {
        all.iter().copied().find(|t| name(t) == given).ok_or_else(|| format!("unknown value {given:?}"))
    })
}

/// The `pvfs` command tree, for completions and man pages.
pub fn commands() -> [clap::Command; 3] {
    use clap::CommandFactory;
    [CtlCli::command(), AgentCli::command(), PvfsCli::command()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definitions_are_consistent() {
        CtlCli::command().debug_assert();
        AgentCli::command().debug_assert();
        PvfsCli::command().debug_assert();
    }

    #[test]
    fn timeouts_parse_as_durations() {
        let cli = CtlCli::try_parse_from(["pvfsctl", "nodes", "c.toml", "--timeout", "1500ms"]).unwrap();
        let CtlCommand::Nodes(args) = cli.command else { panic!() };
        assert_eq!(args.connect.timeout, Duration::from_millis(1500));
        let err = CtlCli::try_parse_from(["pvfsctl", "nodes", "c.toml", "--timeout", "0s"]).unwrap_err();
        assert!(err.to_string().contains("more than zero"), "{err}");
    }

    #[test]
    fn bench_names_parse_into_their_types_and_others_are_usage_errors() {
        let cli = CtlCli::try_parse_from([
            "pvfsctl",
            "bench",
            "c.toml",
            "--engine",
            "ior",
            "--launcher",
            "mpi",
            "--preset",
            "metadata-lustre",
        ])
        .unwrap();
        let CtlCommand::Bench(bench) = cli.command else { panic!() };
        let run = &bench.run;
        assert_eq!(
            (run.engine, run.launcher, run.preset),
            (Some(Engine::Ior), Some(Launcher::Mpi), Some(Preset::MetadataLustre))
        );
        let err = CtlCli::try_parse_from(["pvfsctl", "bench", "c.toml", "--engine", "iozone"]).unwrap_err();
        assert!(err.to_string().contains("[possible values: builtin, fio, ior, io500]"), "{err}");
    }

    #[test]
    fn pvfs_reaches_both_personalities() {
        let cli = PvfsCli::try_parse_from(["pvfs", "agent", "--listen", "127.0.0.1:0"]).unwrap();
        assert!(matches!(cli.command, PvfsCommand::Agent(agent) if !agent.check_config));
        let cli = PvfsCli::try_parse_from(["pvfs", "ctl", "validate", "c.toml"]).unwrap();
        assert!(matches!(cli.command, PvfsCommand::Ctl(_)));
    }
}
