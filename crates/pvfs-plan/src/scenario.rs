//! Scenario tests: an example cluster file applied for real (`run_unit`, not a dry run) to
//! simulated bare nodes, unit by unit in plan order, until it converges; then a second run
//! that must find every step in sync.
//!
//! A [`SimNode`] behaves like a bare Enterprise Linux node whose state changes as apply's
//! commands run: `yum install` makes `rpm -q` answer installed, `systemctl enable/start` make
//! `is-enabled/is-active` answer so, `mdadm --create` makes the array appear in /sys and in
//! `mdadm --detail`, the LVM tools keep their report, `mkfs` makes `blkid -p` find the file
//! system, `mount` adds a line to the node's `/proc/self/mountinfo`, and `gluster` keeps its
//! pool and volumes. For Lustre, the nodes share an LNet: `systemctl start lnet` puts the
//! node's NID on it for `lctl ping`, `mkfs.lustre` writes disk data `tunefs.lustre --dryrun`
//! prints (unregistered until the first mount), a target's `mount -t lustre` registers it and
//! a client's makes `lfs check servers` list each target `active.` and gives it an llite
//! instance whose parameters `lctl get_param -n`/`set_param` read and write until it unmounts,
//! `lfs setstripe` keeps a directory's default layout for `lfs getstripe -d`; `rpm -q kernel` lists
//! every installed kernel and `/proc/sys/kernel/osrelease` names the running one, which
//! [`Node::reboot`] changes. For BeeGFS, `yum`/`dnf install` lays down the packaged
//! configuration files (the real default `beegfs-storage.conf`), `beegfs-setup-*` writes what
//! ThinkParQ's scripts write (format.conf, the ID files, the keys they `sed`), a service's start
//! registers it with the management daemon for `beegfs-check-servers` (the shape of pvfs-steps'
//! testdata/beegfs-7/check-servers-seed.txt) and `beegfs-ctl --listnodes`, and the client
//! service mounts what `beegfs-mounts.conf` lists. Block-queue tuning goes to the kernel: each
//! disk's `/sys/block/NAME` is the sysfs directory of its real loop device, so the scheduler,
//! `nr_requests` and read-ahead are written to and read back from the running kernel (an md
//! array, being simulated, has only its read-ahead). Every probe answers in the real tool's format (the shapes of the
//! recorded outputs in pvfs-steps' testdata and reference/setup-anchors.md). The node's disks
//! are real: every device name is a device node of one zeroed loop device, so the device
//! rules (block device, unused, claimable, zeros) run against the kernel, as in the plan
//! snapshots.
//!
//! firewalld runs on every node, as on a default EL install: `firewall-cmd --state` answers
//! `running`, `--permanent --add-port` adds to the permanent configuration and `--reload` makes
//! it the running one, and `[--permanent] --list-ports` lists each as firewall-cmd prints it
//! (pvfs-steps' testdata/firewalld).
//!
//! The node's programs are its packages' (`crate::programs`): a bare node has a minimal EL
//! install's, `yum`/`dnf install` adds each package's executables at the paths its real file
//! list gives, and a command is looked up as the agent's runner looks it up (execvp with
//! systemd's PATH for services), so a program run by a name or path that no installed package
//! provides fails here as on a node (`could not be started`). `mount -t lustre|glusterfs` needs
//! the helper the file system's package installs (/sbin/mount.TYPE).
//!
//! To add an example, teach [`SimNode::answer`] the example's tools (their
//! probes in the recorded formats, their actions as state changes) and add a test like
//! [`glusterfs_converges_and_then_changes_nothing`].

use crate::plan;
use pvfs_host::testing::{DeviceRoot, LoopDevice};
use pvfs_host::{Command, CommandError, Output, Root, Runner};
use pvfs_policy::Policy;
use pvfs_steps::{NodeAccess, Outcome, StepEvent, run_unit};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// `firewall-cmd --list-ports`: space separated, sorted by protocol and then first port
/// (src/firewall-cmd.in), one line.
fn list_ports(ports: &BTreeSet<String>) -> String {
    let mut sorted: Vec<&String> = ports.iter().collect();
    let key = |p: &str| {
        let (range, proto) = p.split_once('/').unwrap_or((p, ""));
        let first: u32 = range.split('-').next().and_then(|f| f.parse().ok()).unwrap_or(0);
        (proto.to_owned(), first)
    };
    sorted.sort_by_key(|p| key(p));
    let words: Vec<&str> = sorted.iter().map(|p| p.as_str()).collect();
    format!("{}\n", words.join(" "))
}

fn out(code: i32, stdout: &str, stderr: &str) -> Output {
    Output { code: Some(code), stdout: stdout.into(), stderr: stderr.into() }
}

/// What the node holds, as its tools would report it.
#[derive(Debug, Default)]
struct State {
    /// Package → every installed version as rpm's `%{EVR}.%{ARCH}` (kernels install side by side).
    packages: BTreeMap<String, Vec<String>>,
    enabled: BTreeSet<String>,
    /// Running unit → the CLOCK_MONOTONIC µs it entered the active state.
    active: BTreeMap<String, u64>,
    /// md device → members, as given to `mdadm --create`.
    arrays: BTreeMap<String, Vec<String>>,
    /// PV → its volume group ("" for none).
    pvs: BTreeMap<String, String>,
    vgs: BTreeSet<String>,
    /// (vg, lv) → (segtype, pool, zero).
    lvs: BTreeMap<(String, String), (String, String, bool)>,
    /// device → file system type.
    filesystems: BTreeMap<String, String>,
    next_mount_id: u32,
    peers: Vec<String>,
    /// volume → (bricks, started).
    volumes: BTreeMap<String, (Vec<String>, bool)>,
    /// firewalld's ports (`988/tcp`, `8003-8008/udp`): permanent, and running since the last
    /// reload.
    firewall_permanent: BTreeSet<String>,
    firewall_running: BTreeSet<String>,
    /// device → the Lustre target `mkfs.lustre` made there.
    lustre: BTreeMap<String, LustreDisk>,
    /// Mounted Lustre clients by mount point: each is one llite instance (its mdc/osc devices
    /// exist while it is mounted) with its parameters, which start at the defaults and are lost
    /// at unmount.
    llite: BTreeMap<String, Llite>,
    /// BeeGFS service (`meta`, `storage`, `mgmtd`) → the node ID its setup script was given.
    beegfs_ids: BTreeMap<String, u32>,
}

/// One mounted Lustre client: `llite.lustre-ffff88003bfbd000.*` in `lctl get_param`'s names.
#[derive(Debug, Clone)]
struct Llite {
    /// The instance name, `FSNAME-` and the superblock's address in hex (llite_lib.c's
    /// ll_fill_super names it so).
    instance: String,
    /// The file system the client mounted, for its directories' layouts.
    fsname: String,
    /// Parameter → value, as `lctl get_param -n` reads its file.
    params: BTreeMap<String, String>,
}

/// The llite parameters the simulated client has, with their values at mount. max_read_ahead_mb:
/// llite_lib.c's ll_init_sbi sets min(RAM / 32, SBI_DEFAULT_READ_AHEAD_MAX); the simulated
/// client has 8 GiB of RAM, so 256 (MiB). A parameter not listed does not exist, and lctl finds
/// nothing for it.
const LLITE_DEFAULTS: &[(&str, &str)] = &[("max_read_ahead_mb", "256")];

/// fnmatch(3) on one component of an lctl parameter name (`*` and `?`), as glob(3) matches the
/// path lctl makes of the name.
fn glob_matches(pattern: &str, name: &str) -> bool {
    match pattern.chars().next() {
        None => name.is_empty(),
        Some('*') => (0..=name.len())
            .filter(|i| name.is_char_boundary(*i))
            .any(|i| glob_matches(&pattern[1..], &name[i..])),
        Some(c) => {
            let mut rest = name.chars();
            match rest.next() {
                Some(n) if c == '?' || c == n => glob_matches(&pattern[c.len_utf8()..], rest.as_str()),
                _ => false,
            }
        }
    }
}

/// `4M` → 4194304: the sizes `lfs setstripe -S` takes (a plain number is bytes).
fn stripe_size(arg: &str) -> Option<u64> {
    let (digits, shift) = match arg.char_indices().last()? {
        (i, 'k' | 'K') => (&arg[..i], 10),
        (i, 'm' | 'M') => (&arg[..i], 20),
        (i, 'g' | 'G') => (&arg[..i], 30),
        _ => (arg, 0),
    };
    digits.parse::<u64>().ok().map(|n| n << shift)
}

/// The permanent disk data of a Lustre target (lustre_disk.h's `lustre_disk_data`).
#[derive(Debug, Clone)]
struct LustreDisk {
    fsname: String,
    /// `MDT` or `OST`.
    kind: &'static str,
    index: u32,
    /// LDD_F_SV_TYPE_* bits, plus LDD_F_VIRGIN (0x20) and LDD_F_UPDATE (0x40) until the
    /// target's first mount registers it with the MGS.
    flags: u32,
    mgsnode: Option<String>,
}

impl LustreDisk {
    fn registered(&self) -> bool {
        self.flags & 0x20 == 0
    }

    /// `lustre-OST0001` once registered; `lustre:OST0001` before (mkfs_lustre.c names an
    /// unregistered target with a colon).
    fn target(&self) -> String {
        let sep = if self.registered() { '-' } else { ':' };
        format!("{}{sep}{}{:04x}", self.fsname, self.kind, self.index)
    }
}

/// What the simulated nodes share: the LNet network and the Lustre servers registered on it.
#[derive(Debug, Default)]
struct Net {
    /// NIDs whose node runs LNet.
    lnet: BTreeSet<String>,
    /// Mounted (registered) targets: `lustre-MDT0000`, `lustre-OST0001`.
    targets: BTreeSet<String>,
    /// (fsname, directory below the mount point) → its default layout (stripe count, stripe
    /// size): kept by the MDT, so it outlives every client mount.
    layouts: BTreeMap<(String, String), (i64, u64)>,
    /// BeeGFS servers registered with the management daemon, by section (`Management`,
    /// `Metadata`, `Storage`) and node name: their ID and `IP:PORT`.
    beegfs: BTreeMap<(&'static str, String), (u32, String)>,
    /// BeeGFS targets registered by their daemons (`meta`, `storage`; target ID) → node ID.
    /// A metadata server's target is its node ID; a storage server's the setup's `-i`.
    beegfs_targets: BTreeMap<(&'static str, u32), u32>,
}

fn monotonic_us() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
    t.tv_sec() as u64 * 1_000_000 + t.tv_nsec() as u64 / 1000
}

/// Splits yum/dnf's `NAME-VERSION` (`kmod-lustre-2.15.4`, `kernel-3.10.0-514.el7_lustre`) at
/// the first `-` before a digit; the rpm `%{EVR}.%{ARCH}` it installs (a release added where
/// the pin gave none).
fn installed_as(arg: &str) -> (String, String) {
    let split = arg
        .match_indices('-')
        .map(|(i, _)| i)
        .find(|i| arg[i + 1..].starts_with(|c: char| c.is_ascii_digit()));
    match split {
        Some(i) if arg[i + 1..].contains('-') => (arg[..i].to_owned(), format!("{}.x86_64", &arg[i + 1..])),
        Some(i) => (arg[..i].to_owned(), format!("{}-1.el7.x86_64", &arg[i + 1..])),
        None => (arg.to_owned(), "1.0-1.el7.x86_64".to_owned()),
    }
}

/// A simulated bare EL node (see the module documentation).
#[derive(Clone)]
struct SimNode {
    dir: PathBuf,
    state: Arc<Mutex<State>>,
    /// This node's LNet NID (`10.0.0.4@tcp`), when it has one.
    nid: Option<String>,
    net: Arc<Mutex<Net>>,
    /// The node's name and IP address, as BeeGFS lists its servers.
    name: String,
    ip: String,
}

/// BeeGFS 7's default `beegfs-storage.conf`, as the package installs it.
const BEEGFS_STORAGE_CONF: &str = include_str!("../../pvfs-steps/testdata/beegfs-7/beegfs-storage.conf");

impl SimNode {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn mountinfo_append(&self, line: &str) {
        let path = self.dir.join("proc/self/mountinfo");
        let table = std::fs::read_to_string(&path).unwrap();
        std::fs::write(path, table + line).unwrap();
    }

    /// Where the simulated Lustre file system `fsname` keeps its contents while no client has it
    /// mounted here (outside the node's paths).
    fn lustre_store(&self, fsname: &str) -> String {
        format!("/.sim-lustre/{fsname}")
    }

    /// Moves every entry of the node's directory `from` into `to`: a mount's contents appearing
    /// on, or leaving, its mount point.
    fn move_entries(&self, from: &str, to: &str) {
        let (from, to) =
            (self.dir.join(from.trim_start_matches('/')), self.dir.join(to.trim_start_matches('/')));
        let Ok(entries) = std::fs::read_dir(&from) else { return };
        std::fs::create_dir_all(&to).unwrap();
        for entry in entries {
            let entry = entry.unwrap();
            std::fs::rename(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }

    fn write_file(&self, abs: &str, text: &str) {
        let p = self.dir.join(abs.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// `sed -i "s/\(^KEY.*=\).*/\1 VALUE/"`, as the BeeGFS setup scripts change their config.
    fn sed_key(&self, conf: &str, key: &str, value: &str) {
        let text = std::fs::read_to_string(self.dir.join(conf.trim_start_matches('/'))).unwrap();
        let lines: Vec<String> = text
            .lines()
            .map(|l| {
                if l.starts_with(key) && l.contains('=') { format!("{key} = {value}") } else { l.to_owned() }
            })
            .collect();
        self.write_file(conf, &(lines.join("\n") + "\n"));
    }

    /// What installing `package` puts on the node besides its rpm entry: BeeGFS's packaged
    /// configuration files (the keys pvfs and the setup scripts change, with their packaged
    /// values), and kernel-devel's build tree for the running kernel with the link the kernel
    /// package makes to it.
    fn lay_down(&self, package: &str) {
        let packaged = |service: &str, extra: &str| {
            format!(
                "sysMgmtdHost                 =\nconnAuthFile                 =\nconnDisableAuthentication    = false\n\
                 connInterfacesFile           =\nconnNetFilterFile            =\nconnMaxInternodeNum          = 12\n{extra}\
                 logStdFile                   = /var/log/beegfs-{service}.log\n"
            )
        };
        match package {
            "beegfs-mgmtd" => self.write_file(
                "/etc/beegfs/beegfs-mgmtd.conf",
                &packaged("mgmtd", "storeMgmtdDirectory          =\nstoreAllowFirstRunInit       = true\n"),
            ),
            "beegfs-meta" => self.write_file(
                "/etc/beegfs/beegfs-meta.conf",
                &packaged(
                    "meta",
                    "storeMetaDirectory           =\nstoreAllowFirstRunInit       = true\nstoreFsUUID                  =\ntuneNumWorkers               = 0\n",
                ),
            ),
            "beegfs-storage" => self.write_file("/etc/beegfs/beegfs-storage.conf", BEEGFS_STORAGE_CONF),
            "beegfs-client" => self.write_file("/etc/beegfs/beegfs-client.conf", &packaged("client", "")),
            "beegfs-helperd" => self.write_file(
                "/etc/beegfs/beegfs-helperd.conf",
                "connAuthFile       =\nconnDisableAuthentication = false\nconnHelperdPortTCP = 8006\n",
            ),
            "kernel-devel" => {
                let release =
                    std::fs::read_to_string(self.dir.join("proc/sys/kernel/osrelease")).unwrap().trim().to_owned();
                std::fs::create_dir_all(self.dir.join(format!("usr/src/kernels/{release}"))).unwrap();
                std::fs::create_dir_all(self.dir.join(format!("lib/modules/{release}"))).unwrap();
                let link = self.dir.join(format!("lib/modules/{release}/build"));
                if std::fs::symlink_metadata(&link).is_err() {
                    std::os::unix::fs::symlink(format!("/usr/src/kernels/{release}"), link).unwrap();
                }
            }
            _ => {}
        }
    }

    /// What `beegfs-setup-SERVICE ARGS` leaves behind (ThinkParQ/beegfs,
    /// */build/dist/sbin/beegfs-setup-*): in the store directory (`-p`, which must be empty)
    /// format.conf and the ID files, and in the service's configuration the store directory,
    /// `storeAllowFirstRunInit = false` and the management host (`-m`).
    fn beegfs_setup(&self, s: &mut State, service: &str, args: &[&str]) -> Output {
        let arg = |flag: &str| args.iter().position(|a| *a == flag).and_then(|i| args.get(i + 1).copied());
        let conf = format!("/etc/beegfs/beegfs-{service}.conf");
        if let Some(dir) = arg("-p") {
            if std::fs::read_dir(self.dir.join(dir.trim_start_matches('/')))
                .is_ok_and(|mut d| d.next().is_some())
            {
                return out(1, " * ERROR: Storage target directory is not empty.\n", "");
            }
            self.write_file(
                &format!("{dir}/format.conf"),
                "# This file was auto-generated. Do not modify it!\nversion=3\n",
            );
            for (flag, file) in [("-i", "targetNumID"), ("-s", "nodeNumID")] {
                if let Some(id) = arg(flag) {
                    self.write_file(&format!("{dir}/{file}"), &format!("{id}\n"));
                }
            }
            let key = match service {
                "mgmtd" => "storeMgmtdDirectory",
                "meta" => "storeMetaDirectory",
                _ => "storeStorageDirectory",
            };
            self.sed_key(&conf, key, dir);
            if service != "mgmtd" {
                self.sed_key(&conf, "storeAllowFirstRunInit", "false");
            }
        }
        if let Some(host) = arg("-m") {
            self.sed_key(&conf, "sysMgmtdHost", host);
        }
        let id = arg("-s").and_then(|id| id.parse().ok()).unwrap_or(1);
        s.beegfs_ids.insert(service.to_owned(), id);
        if let Some(target) = arg("-i").and_then(|t| t.parse().ok()) {
            s.beegfs_ids.insert(format!("{service}-target"), target);
        }
        out(0, "All done.\n", "")
    }

    /// A BeeGFS daemon that starts registers with the management daemon (and the management
    /// daemon is itself the one `Management` entry), at its service's port (BeeGFS 7's
    /// defaults: mgmtd 8008, meta 8005, storage 8003).
    fn beegfs_register(&self, s: &State, unit: &str) {
        let (section, service, port) = match unit {
            "beegfs-mgmtd" => ("Management", "mgmtd", 8008),
            "beegfs-meta" => ("Metadata", "meta", 8005),
            "beegfs-storage" => ("Storage", "storage", 8003),
            _ => return,
        };
        let id = s.beegfs_ids.get(service).copied().unwrap_or(1);
        let mut net = self.net.lock().unwrap();
        net.beegfs.insert((section, self.name.clone()), (id, format!("{}:{port}", self.ip)));
        match service {
            "meta" => drop(net.beegfs_targets.insert(("meta", id), id)),
            "storage" => {
                let target = s.beegfs_ids.get("storage-target").copied().unwrap_or(id);
                net.beegfs_targets.insert(("storage", target), id);
            }
            _ => {}
        }
    }

    /// The client service mounts what beegfs-mounts.conf lists (`MOUNTPOINT CONFIG`), once.
    fn beegfs_client_mount(&self) {
        let mounts =
            std::fs::read_to_string(self.dir.join("etc/beegfs/beegfs-mounts.conf")).unwrap_or_default();
        let Some(point) = mounts.split_whitespace().next() else { return };
        let table = std::fs::read_to_string(self.dir.join("proc/self/mountinfo")).unwrap();
        if !table.contains(" - beegfs ") {
            self.mountinfo_append(&format!(
                "120 1 0:52 / {point} rw,relatime shared:64 - beegfs beegfs_nodev rw,cfgFile=/etc/beegfs/beegfs-client.conf\n"
            ));
        }
    }

    fn answer(&self, program: &str, args: &[&str]) -> Option<Output> {
        let mut s = self.state();
        Some(match (program, args) {
            // rpm 4.x: `package NAME is not installed` on stdout, exit 1; installed, one line
            // of the query format per instance (every installed kernel: the shape of
            // pvfs-steps' testdata/packages/rpm-q-kernel-*.txt).
            ("rpm", ["-q", "--qf", "%{EVR}.%{ARCH}\\n", name]) => match s.packages.get(*name) {
                Some(versions) => out(0, &versions.iter().map(|v| format!("{v}\n")).collect::<String>(), ""),
                None => out(1, &format!("package {name} is not installed\n"), ""),
            },
            ("yum" | "dnf", ["install", "-y", "--", names @ ..]) => {
                for arg in names {
                    let (name, version) = installed_as(arg);
                    crate::programs::install(&self.dir, &name);
                    self.lay_down(&name);
                    let versions = s.packages.entry(name).or_default();
                    if !versions.contains(&version) {
                        versions.push(version);
                    }
                }
                out(0, "Complete!\n", "")
            }
            ("firewall-cmd", ["--state"]) => {
                if s.active.contains_key("firewalld") {
                    out(0, "running\n", "")
                } else {
                    out(252, "not running\n", "")
                }
            }
            ("firewall-cmd", ["--permanent", "--list-ports"]) => {
                out(0, &list_ports(&s.firewall_permanent), "")
            }
            ("firewall-cmd", ["--list-ports"]) => out(0, &list_ports(&s.firewall_running), ""),
            ("firewall-cmd", ["--permanent", add]) if add.starts_with("--add-port=") => {
                s.firewall_permanent.insert(add["--add-port=".len()..].to_owned());
                out(0, "success\n", "")
            }
            ("firewall-cmd", ["--reload"]) => {
                s.firewall_running = s.firewall_permanent.clone();
                out(0, "success\n", "")
            }
            ("systemctl", ["is-enabled", unit]) => {
                if s.enabled.contains(*unit) {
                    out(0, "enabled\n", "")
                } else {
                    out(1, "disabled\n", "")
                }
            }
            ("systemctl", ["is-active", unit]) => {
                if s.active.contains_key(*unit) {
                    out(0, "active\n", "")
                } else {
                    out(3, "inactive\n", "")
                }
            }
            ("systemctl", ["enable", unit]) => {
                s.enabled.insert((*unit).to_owned());
                out(0, "", "")
            }
            ("systemctl", ["start" | "restart", unit]) => {
                s.active.insert((*unit).to_owned(), monotonic_us());
                if *unit == "lnet" {
                    self.net.lock().unwrap().lnet.extend(self.nid.clone());
                }
                self.beegfs_register(&s, unit);
                if *unit == "beegfs-client" {
                    self.beegfs_client_mount();
                }
                out(0, "", "")
            }
            (setup, rest) if setup.starts_with("beegfs-setup-") => {
                self.beegfs_setup(&mut s, &setup["beegfs-setup-".len()..], rest)
            }
            // beegfs-ctl --listnodes --reachable: each reachable node as `NAME [ID: N]`; with
            // --errorcodes a failure exit when the management daemon does not answer.
            ("beegfs-ctl", ["--listnodes", "--nodetype=management", "--reachable", "--errorcodes"]) => {
                let net = self.net.lock().unwrap();
                match net.beegfs.iter().find(|((section, _), _)| *section == "Management") {
                    Some(((_, name), (id, _))) => out(0, &format!("{name} [ID: {id}]\n"), ""),
                    None => out(1, "", "Unable to connect to management daemon\n"),
                }
            }
            // beegfs-ctl --listtargets --state (ModeListTargets, 7.x): a heading, a rule, a row
            // per registered target, right-aligned; every target a started daemon registered is
            // Online and Good here.
            ("beegfs-ctl", ["--listtargets", nodetype, "--state"]) => {
                let kind = match *nodetype {
                    "--nodetype=meta" => "meta",
                    "--nodetype=storage" => "storage",
                    _ => return None,
                };
                let net = self.net.lock().unwrap();
                let mut text = "TargetID     Reachability  Consistency   NodeID\n".to_owned();
                text += "========     ============  ===========   ======\n";
                for ((_, target), node) in net.beegfs_targets.iter().filter(|((k, _), _)| *k == kind) {
                    text += &format!("{target:>8} {:>16} {:>12} {node:>8}\n", "Online", "Good");
                }
                out(0, &text, "")
            }
            // beegfs-check-servers (utils/scripts/beegfs-check-servers, 7.x): each section's
            // heading, a rule, one line per registered server, a blank line.
            ("beegfs-check-servers", []) => {
                let net = self.net.lock().unwrap();
                let mut text = String::new();
                for section in ["Management", "Metadata", "Storage"] {
                    text += &format!("{section}\n==========\n");
                    for ((_, name), (id, at)) in net.beegfs.iter().filter(|((s, _), _)| *s == section) {
                        text += &format!("{name} [ID: {id}]: reachable at {at} (protocol: TCP)\n");
                    }
                    text += "\n";
                }
                out(0, &text, "")
            }
            ("systemctl", ["stop", unit]) => {
                s.active.remove(*unit);
                if *unit == "lnet" {
                    let mut net = self.net.lock().unwrap();
                    if let Some(nid) = &self.nid {
                        net.lnet.remove(nid);
                    }
                }
                out(0, "", "")
            }
            ("systemctl", ["disable", unit]) => {
                s.enabled.remove(*unit);
                out(0, "", "")
            }
            // umount(8): silent on success; the kernel drops the mount from mountinfo. A Lustre
            // target's unmount takes it off the file system; a client's removes its mdc/osc.
            ("umount", ["--", target]) => {
                let path = self.dir.join("proc/self/mountinfo");
                let table = std::fs::read_to_string(&path).unwrap();
                let (gone, kept): (Vec<&str>, Vec<&str>) =
                    table.lines().partition(|l| l.split(' ').nth(4) == Some(*target));
                let line = gone.first()?;
                let (fstype, source) = line.split_once(" - ")?.1.split_once(' ')?;
                let source = source.split(' ').next()?;
                if fstype == "lustre" {
                    match s.lustre.get(source) {
                        Some(disk) => {
                            self.net.lock().unwrap().targets.remove(&disk.target());
                        }
                        None => {
                            if let Some(llite) = s.llite.remove(*target) {
                                // What the client wrote is on the file system, not on the mount
                                // point: it leaves with the mount.
                                self.move_entries(target, &self.lustre_store(&llite.fsname));
                            }
                        }
                    }
                }
                std::fs::write(path, kept.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
                out(0, "", "")
            }
            // systemd's `show` prints PROPERTY=VALUE; a unit never started has 0.
            ("systemctl", ["show", "--property=ActiveEnterTimestampMonotonic", unit]) => out(
                0,
                &format!("ActiveEnterTimestampMonotonic={}\n", s.active.get(*unit).copied().unwrap_or(0)),
                "",
            ),
            // lctl ping (lustre/utils/portals.c jt_ptl_ping): the peer's NIDs, one a line, as
            // `12345-NID`; an unreachable peer is the error pvfs-steps' gate tests record.
            ("lctl", ["ping", nid]) => {
                if self.nid.is_some()
                    && s.active.contains_key("lnet")
                    && self.net.lock().unwrap().lnet.contains(*nid)
                {
                    out(0, &format!("12345-0@lo\n12345-{nid}\n"), "")
                } else {
                    out(5, "", &format!("failed to ping {nid}: Input/output error\n"))
                }
            }
            // lctl list_nids (portals.c jt_ptl_list_nids): the node's own NIDs, one a line, once
            // LNet is up; before that the ioctl's error, as pvfs-steps' gate tests record.
            ("lctl", ["list_nids"]) => match &self.nid {
                Some(nid) if s.active.contains_key("lnet") => out(0, &format!("{nid}\n"), ""),
                _ => out(1, "", "IOC_LIBCFS_GET_NI error 100: Network is down\n"),
            },
            // mkfs.lustre writes the target's disk data, still unregistered.
            ("mkfs.lustre", [args @ .., "--", device]) => {
                let value = |key: &str| args.iter().find_map(|a| a.strip_prefix(key)).map(str::to_owned);
                let has = |flag: &str| args.contains(&flag);
                let role =
                    u32::from(has("--mdt")) | (u32::from(has("--ost")) << 1) | (u32::from(has("--mgs")) << 2);
                let disk = LustreDisk {
                    fsname: value("--fsname=")?,
                    kind: if has("--ost") { "OST" } else { "MDT" },
                    index: value("--index=").map_or(Some(0), |i| i.parse().ok())?,
                    flags: role | 0x20 | 0x40,
                    mgsnode: value("--mgsnode="),
                };
                s.lustre.insert((*device).to_owned(), disk);
                out(0, "", "")
            }
            // tunefs.lustre --dryrun: print_ldd() of lustre/utils/mkfs_lustre.c, as in
            // pvfs-steps' lustre tests (setup-anchors §2b); a device without Lustre data is
            // exit 19 (ENODEV) with the FATAL line.
            ("tunefs.lustre", ["--dryrun", "--", device]) => match s.lustre.get(*device) {
                None => out(
                    19,
                    "",
                    &format!(
                        "\ntunefs.lustre FATAL: Device {device} has not been formatted with mkfs.lustre\n"
                    ),
                ),
                Some(disk) => {
                    let kinds = [(0x1, "MDT"), (0x2, "OST"), (0x4, "MGS")];
                    let kinds: String = kinds
                        .iter()
                        .filter(|(bit, _)| disk.flags & bit != 0)
                        .map(|(_, k)| format!("{k} "))
                        .collect();
                    let params = disk.mgsnode.as_ref().map_or(String::new(), |m| format!("mgsnode={m}"));
                    let ldd = format!(
                        "Target:     {}\nIndex:      {}\nLustre FS:  {}\nMount type: ldiskfs\nFlags:      {:#x}\n              ({kinds})\nPersistent mount opts: errors=remount-ro\nParameters: {params}\n",
                        disk.target(),
                        disk.index,
                        disk.fsname,
                        disk.flags
                    );
                    out(
                        0,
                        &format!(
                            "checking for existing Lustre data: found\n\n   Read previous values:\n{ldd}\n\n   Permanent disk data:\n{ldd}\nexiting before disk write.\n"
                        ),
                        "",
                    )
                }
            },
            // lfs check servers (liblustreapi's do_target_check, as pvfs-steps' gate reads
            // it and testdata/lustre/lfs-check-servers-2.10.txt shows): `DEVICE active.` for
            // each mdc and osc of a mounted client; nothing without a client mount.
            ("lfs", ["check", "servers"]) => {
                if s.llite.is_empty() {
                    return Some(out(0, "", ""));
                }
                let net = self.net.lock().unwrap();
                let lines: String = net
                    .targets
                    .iter()
                    .map(|t| {
                        let dev = if t.contains("-OST") { "osc" } else { "mdc" };
                        format!("{t}-{dev}-ffff88003bfbd000 active.\n")
                    })
                    .collect();
                out(0, &lines, "")
            }
            // lctl get_param -n / set_param (lustre/utils/lustre_cfg.c, param_display): the name
            // becomes a path (`llite/*/max_read_ahead_mb`, clean_path) that glob(3) matches
            // against every mounted client's parameters. get_param -n prints each match's value,
            // one a line (read_param; testdata/lustre/get-param-n-two-mounts.txt); set_param
            // writes each and prints `NAME=VALUE` with the instance's name (write_param). No
            // match, as without a client mount: `error: OP: param_path 'PATH': No such file or
            // directory` on stderr and a failure exit (the one pvfs-steps' lustre_tuning test
            // records).
            ("lctl", ["get_param", "-n", name]) | ("lctl", ["set_param", name]) => {
                let set = args[0] == "set_param";
                let (name, value) = if set { name.split_once('=')? } else { (*name, "") };
                let pattern: Vec<&str> = name.split('.').collect();
                let mut shown = String::new();
                for llite in s.llite.values_mut() {
                    let instance = llite.instance.clone();
                    for (param, current) in &mut llite.params {
                        let full = ["llite", instance.as_str(), param.as_str()];
                        if pattern.len() == 3 && pattern.iter().zip(full).all(|(p, n)| glob_matches(p, n)) {
                            if set {
                                value.clone_into(current);
                                shown += &format!("llite.{instance}.{param}={value}\n");
                            } else {
                                shown += &format!("{current}\n");
                            }
                        }
                    }
                }
                if shown.is_empty() {
                    let op = if set { "set_param" } else { "get_param" };
                    out(
                        2,
                        "",
                        &format!(
                            "error: {op}: param_path '{}': No such file or directory\n",
                            name.replace('.', "/")
                        ),
                    )
                } else {
                    out(0, &shown, "")
                }
            }
            // lfs getstripe -d DIR: the directory's own default layout in the one-line form of
            // a 2.12+ lfs (testdata/lustre/getstripe-d-2.12.txt, `pattern:` between size and
            // offset); a directory without one shows the file system's default, 1 stripe of
            // 1 MiB (lfs-setstripe(1): "default stripe count 1", "stripe size 1MiB"). lfs
            // setstripe -c N -S SIZE DIR sets it, silently. Only directories under a mounted
            // client are simulated.
            ("lfs", ["getstripe", "-d", "--", dir]) | ("lfs", ["setstripe", "-c", _, "-S", _, "--", dir]) => {
                let (mount, llite) = s
                    .llite
                    .iter()
                    .filter(|(m, _)| Path::new(dir).starts_with(m))
                    .max_by_key(|(m, _)| m.len())?;
                if !self.dir.join(dir.trim_start_matches('/')).is_dir() {
                    return None;
                }
                let below = format!("/{}", Path::new(dir).strip_prefix(mount).ok()?.display());
                let key = (llite.fsname.clone(), below);
                let mut net = self.net.lock().unwrap();
                if let ["setstripe", "-c", count, "-S", size, "--", _] = args {
                    net.layouts.insert(key, (count.parse().ok()?, stripe_size(size)?));
                    return Some(out(0, "", ""));
                }
                let (count, size) = net.layouts.get(&key).copied().unwrap_or((1, 1 << 20));
                out(
                    0,
                    &format!(
                        "stripe_count:  {count} stripe_size:   {size} pattern:       raid0 stripe_offset: -1\n"
                    ),
                    "",
                )
            }
            ("mdadm", ["--examine", "--export", member]) => {
                out(1, "", &format!("mdadm: No md superblock detected on {member}.\n"))
            }
            ("mdadm", ["--create", device, rest @ ..]) => {
                let members: Vec<String> =
                    rest.iter().filter(|a| a.starts_with('/')).map(|m| (*m).to_owned()).collect();
                let name = device.rsplit('/').next().unwrap();
                let md = self.dir.join(format!("sys/block/{name}/md"));
                std::fs::create_dir_all(&md).unwrap();
                std::fs::write(md.join("level"), "raid0\n").unwrap();
                // A bio-based array: of the queue settings, only read-ahead (the kernel's
                // default, 128 KiB).
                let queue = self.dir.join(format!("sys/block/{name}/queue"));
                std::fs::create_dir_all(&queue).unwrap();
                std::fs::write(queue.join("read_ahead_kb"), "128\n").unwrap();
                s.arrays.insert((*device).to_owned(), members);
                out(0, "", &format!("mdadm: array {device} started.\n"))
            }
            // mdadm 4.x Detail.c, --export: the array's fields, then each member's role and node.
            ("mdadm", ["--detail", "--export", device]) => {
                let members = s.arrays.get(*device)?;
                let mut text = format!(
                    "MD_LEVEL=raid0\nMD_DEVICES={}\nMD_METADATA=1.2\nMD_UUID={}\nMD_NAME=sim:0\n",
                    members.len(),
                    Self::uuid(device)
                );
                for (role, member) in members.iter().enumerate() {
                    let key: String = member
                        .trim_start_matches('/')
                        .chars()
                        .map(|c| if c.is_alphanumeric() { c } else { '_' })
                        .collect();
                    text += &format!("MD_DEVICE_{key}_ROLE={role}\nMD_DEVICE_{key}_DEV={member}\n");
                }
                out(0, &text, "")
            }
            ("mdadm", ["--detail", "--brief", device]) => {
                s.arrays.get(*device)?;
                out(0, &format!("ARRAY {device} metadata=1.2 name=sim:0 UUID={}\n", Self::uuid(device)), "")
            }
            // lvm2 2.03: a missing object is exit 5 with an empty report.
            ("pvs", [.., pv]) => match s.pvs.get(*pv) {
                Some(vg) => {
                    out(0, &format!(r#"{{"report":[{{"pv":[{{"pv_name":"{pv}","vg_name":"{vg}"}}]}}]}}"#), "")
                }
                None => out(
                    5,
                    r#"{"report":[{"pv":[]}]}"#,
                    &format!("  Failed to find physical volume \"{pv}\".\n"),
                ),
            },
            ("pvcreate", [.., pv]) => {
                s.pvs.insert((*pv).to_owned(), String::new());
                out(0, &format!("  Physical volume \"{pv}\" successfully created.\n"), "")
            }
            ("vgcreate", [.., vg, pv]) => {
                s.vgs.insert((*vg).to_owned());
                s.pvs.insert((*pv).to_owned(), (*vg).to_owned());
                out(0, "", "")
            }
            ("vgs", [.., vg]) => {
                if s.vgs.contains(*vg) {
                    out(0, &format!(r#"{{"report":[{{"vg":[{{"vg_name":"{vg}"}}]}}]}}"#), "")
                } else {
                    out(5, r#"{"report":[{"vg":[]}]}"#, &format!("  Volume group \"{vg}\" not found\n"))
                }
            }
            ("lvs", [.., vg]) => {
                if !s.vgs.contains(*vg) {
                    return Some(out(
                        5,
                        r#"{"report":[{"lv":[]}]}"#,
                        &format!("  Volume group \"{vg}\" not found\n"),
                    ));
                }
                let rows: Vec<String> = s
                    .lvs
                    .iter()
                    .filter(|((v, _), _)| v == vg)
                    .map(|((_, lv), (segtype, pool, zero))| {
                        format!(
                            r#"{{"lv_name":"{lv}","segtype":"{segtype}","pool_lv":"{pool}","zero":"{}"}}"#,
                            u8::from(*zero)
                        )
                    })
                    .collect();
                out(0, &format!(r#"{{"report":[{{"lv":[{}]}}]}}"#, rows.join(",")), "")
            }
            ("lvcreate", ["-L" | "-l", _, "-T", .., "--", spec]) => {
                let (vg, pool) = spec.split_once('/')?;
                s.lvs.insert((vg.into(), pool.into()), ("thin-pool".into(), String::new(), true));
                out(0, "", "")
            }
            ("lvcreate", ["-V", _, "-T", "-n", lv, "--", spec]) => {
                let (vg, pool) = spec.split_once('/')?;
                s.lvs.insert((vg.into(), (*lv).into()), ("thin".into(), pool.into(), false));
                out(0, "", "")
            }
            ("lvchange", ["--zero", "n", "--", spec]) => {
                let (vg, pool) = spec.split_once('/')?;
                s.lvs.get_mut(&(vg.into(), pool.into()))?.2 = false;
                out(0, "", "")
            }
            // blkid -p: exit 2 and silence for nothing found (util-linux blkid(8)).
            ("blkid", ["-p", "-o", "export", device]) => match s.filesystems.get(*device) {
                Some(fstype) => out(
                    0,
                    &format!(
                        "DEVNAME={device}\nUUID=4c1d5e6f-0000-4000-8000-000000000001\nTYPE={fstype}\nUSAGE=filesystem\n"
                    ),
                    "",
                ),
                None => out(2, "", ""),
            },
            ("wipefs", ["--no-act", "--", _]) => out(0, "", ""),
            (mkfs, [.., device]) if mkfs.starts_with("mkfs.") && mkfs != "mkfs.lustre" => {
                s.filesystems.insert((*device).to_owned(), mkfs["mkfs.".len()..].to_owned());
                out(0, "", "")
            }
            // mount(8) hands these types to the helper their package installs; without it the
            // kernel has no such file system (util-linux 2.32's message, exit 32).
            ("mount", ["-t", fstype @ ("lustre" | "glusterfs"), _, _, _, _, target])
                if !crate::programs::has(&self.dir, &format!("/sbin/mount.{fstype}")) =>
            {
                out(32, "", &format!("mount: {target}: unknown filesystem type '{fstype}'.\n"))
            }
            ("mount", ["-t", fstype, "-o", options, "--", source, target]) => {
                s.next_mount_id += 1;
                let id = 100 + s.next_mount_id;
                if *fstype == "lustre" {
                    // A server's first mount registers its target with the MGS (clears
                    // LDD_F_VIRGIN|LDD_F_UPDATE); a client's mount sets up its mdc/osc devices.
                    match s.lustre.get_mut(*source) {
                        Some(disk) => {
                            disk.flags &= 0x7;
                            let name = disk.target();
                            if disk.flags & 0x3 != 0 {
                                self.net.lock().unwrap().targets.insert(name);
                            }
                        }
                        None if source.contains(":/") => {
                            let fsname = source.rsplit_once(":/")?.1.to_owned();
                            let instance = format!("{fsname}-ffff8800{:08x}", 0x3bfb_d000_u32 + id * 0x1000);
                            let params = LLITE_DEFAULTS
                                .iter()
                                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                                .collect();
                            // The file system's contents (what earlier client mounts wrote) appear.
                            self.move_entries(&self.lustre_store(&fsname), target);
                            s.llite.insert((*target).to_owned(), Llite { instance, fsname, params });
                        }
                        None => return None,
                    }
                }
                let (dev, shown) = if source.starts_with('/') {
                    let id = pvfs_host::device::identify(&Root::at(&self.dir), source).ok()?;
                    (id.dev.to_string(), (*fstype).to_owned())
                } else {
                    (
                        format!("0:{id}"),
                        if *fstype == "glusterfs" { "fuse.glusterfs".into() } else { (*fstype).to_owned() },
                    )
                };
                drop(s);
                // The kernel keeps the VFS flags among the per-mount options (mount(8)), the
                // rest it hands to the file system (the super block options).
                let mut vfs = vec!["rw"];
                vfs.extend(options.split(',').filter(|o| ["nosuid", "nodev", "noexec"].contains(o)));
                vfs.push("relatime");
                self.mountinfo_append(&format!(
                    "{id} 1 {dev} / {target} {} shared:{id} - {shown} {source} {options}\n",
                    vfs.join(",")
                ));
                out(0, "", "")
            }
            ("gluster", ["--mode=script", "peer", "probe", peer]) => {
                s.peers.push((*peer).to_owned());
                out(0, "peer probe: success\n", "")
            }
            // The shapes of testdata/gluster-10.3 (glusterfs 10.3's --xml answers).
            ("gluster", ["--xml", "peer", "status"]) => {
                let peers: String = s
                    .peers
                    .iter()
                    .map(|p| {
                        format!(
                            "<peer><uuid>fc72846d-f378-4ebd-8eeb-d1484b43860f</uuid><hostname>{p}</hostname>\
                             <hostnames><hostname>{p}</hostname></hostnames><connected>1</connected><state>3</state>\
                             <stateStr>Peer in Cluster</stateStr></peer>"
                        )
                    })
                    .collect();
                out(0, &Self::xml(&format!("<peerStatus>{peers}</peerStatus>")), "")
            }
            ("gluster", ["--mode=script", "volume", "create", name, rest @ ..]) => {
                let bricks = rest.iter().filter(|a| a.contains(":/")).map(|b| (*b).to_owned()).collect();
                s.volumes.insert((*name).to_owned(), (bricks, false));
                out(
                    0,
                    &format!("volume create: {name}: success: please start the volume to access data\n"),
                    "",
                )
            }
            ("gluster", ["--mode=script", "volume", "start", name]) => {
                s.volumes.get_mut(*name)?.1 = true;
                out(0, &format!("volume start: {name}: success\n"), "")
            }
            ("gluster", ["--xml", "volume", "info", name]) => match s.volumes.get(*name) {
                None => out(
                    0,
                    &format!(
                        "<?xml version=\"1.0\"?><cliOutput><opRet>-1</opRet><opErrno>30806</opErrno><opErrstr>Volume {name} does not exist</opErrstr></cliOutput>"
                    ),
                    "",
                ),
                Some((bricks, started)) => {
                    let bricks: String = bricks
                        .iter()
                        .map(|b| {
                            format!("<brick uuid=\"0\">{b}<name>{b}</name><isArbiter>0</isArbiter></brick>")
                        })
                        .collect();
                    let status = if *started { "Started" } else { "Created" };
                    out(
                        0,
                        &Self::xml(&format!(
                            "<volInfo><volumes><volume><name>{name}</name><statusStr>{status}</statusStr>\
                             <typeStr>Distribute</typeStr><bricks>{bricks}</bricks><options/></volume></volumes></volInfo>"
                        )),
                        "",
                    )
                }
            },
            // The simulated pool never adds bricks, so no rebalance ever runs: glusterd's
            // answer for that (cli-rpc-ops.c, "Rebalance not started for volume %s.").
            ("gluster", ["--xml", "volume", "rebalance", name, "status"]) => {
                s.volumes.get(*name)?;
                out(
                    0,
                    &format!(
                        "<?xml version=\"1.0\"?><cliOutput><opRet>-1</opRet><opErrno>0</opErrno><opErrstr>Rebalance not started for volume {name}.</opErrstr></cliOutput>"
                    ),
                    "",
                )
            }
            ("gluster", ["--xml", "volume", "status", name]) => {
                let (bricks, started) = s.volumes.get(*name)?;
                let nodes: String = bricks
                    .iter()
                    .map(|b| {
                        let (host, path) = b.split_once(':').unwrap();
                        format!(
                            "<node><hostname>{host}</hostname><path>{path}</path><status>{}</status></node>",
                            u8::from(*started)
                        )
                    })
                    .collect();
                out(
                    0,
                    &Self::xml(&format!(
                        "<volStatus><volumes><volume><volName>{name}</volName>{nodes}</volume></volumes></volStatus>"
                    )),
                    "",
                )
            }
            _ => return None,
        })
    }

    fn xml(body: &str) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<cliOutput><opRet>0</opRet><opErrno>0</opErrno><opErrstr/>{body}</cliOutput>\n"
        )
    }

    /// A stable array UUID in mdadm's `8:8:8:8` hex form.
    fn uuid(device: &str) -> String {
        let n = device.bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        format!("{n:08x}:34dcb6dc:d1bcbb9c:f3e05134")
    }
}

impl Runner for SimNode {
    async fn run(&self, command: &Command) -> Result<Output, CommandError> {
        let args: Vec<&str> = command.args.iter().map(String::as_str).collect();
        // Only a program the node has runs; it answers as itself, whatever path named it.
        let program = crate::programs::find(&self.dir, command)?;
        self.answer(&program, &args).ok_or_else(|| CommandError::NotRecorded { command: command.to_string() })
    }
}

/// One simulated node: its temp root (each disk a device node of a loop device of its own,
/// as apply claims an array's members together; its own mount table) and its tools.
struct Node {
    _root: DeviceRoot,
    _disks: Vec<LoopDevice>,
    host: NodeAccess<SimNode>,
}

impl Node {
    fn bare_el(devices: &[&str]) -> Node {
        Node::bare(devices, "3.10.0-514.el7.x86_64", None, &Arc::default())
    }

    /// A bare node running `release` (its only installed kernel), on the LNet `net` as `nid`.
    fn bare(devices: &[&str], release: &str, nid: Option<&str>, net: &Arc<Mutex<Net>>) -> Node {
        let root = DeviceRoot::new();
        let dir = root.dir.path().to_owned();
        // The node's own kernel table, not the build machine's.
        std::fs::remove_file(dir.join("proc")).unwrap();
        let touch = |path: &str, text: &str| {
            let p = dir.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        touch(
            "/proc/self/mountinfo",
            "1 0 253:0 / / rw,relatime shared:1 - xfs /dev/mapper/centos-root rw\n",
        );
        touch("/proc/sys/kernel/osrelease", &format!("{release}\n"));
        crate::programs::base(&dir, release);
        touch("/etc/fstab", "");
        std::fs::create_dir_all(dir.join("run/systemd/system")).unwrap();
        std::fs::create_dir_all(dir.join("etc/yum.repos.d")).unwrap();
        // kmod's directory, on every EL install.
        std::fs::create_dir_all(dir.join("etc/modprobe.d")).unwrap();
        // udev's rules directory, where block-queue settings are kept for the next boot.
        std::fs::create_dir_all(dir.join("etc/udev/rules.d")).unwrap();
        let disks: Vec<LoopDevice> = devices.iter().map(|_| LoopDevice::new(8 << 20)).collect();
        std::fs::create_dir_all(dir.join("sys/block")).unwrap();
        for (dev, disk) in devices.iter().zip(&disks) {
            root.node(dev, &disk.path);
            // The disk's queue is its loop device's, in the kernel's own sysfs (an array's
            // is simulated when mdadm makes it).
            let name = dev.rsplit('/').next().unwrap();
            if !dev.starts_with("/dev/md") {
                let real = disk.path.rsplit('/').next().unwrap();
                std::os::unix::fs::symlink(
                    format!("/sys/block/{real}"),
                    dir.join(format!("sys/block/{name}")),
                )
                .unwrap();
            }
        }
        let sim = SimNode {
            dir: dir.clone(),
            state: Arc::new(Mutex::new(State {
                packages: [("kernel".to_owned(), vec![release.to_owned()])].into(),
                // A default install's firewall, enabled and running.
                enabled: ["firewalld".to_owned()].into(),
                active: [("firewalld".to_owned(), monotonic_us())].into(),
                ..State::default()
            })),
            nid: nid.map(str::to_owned),
            net: Arc::clone(net),
            name: String::new(),
            ip: String::new(),
        };
        let host = NodeAccess::new(Root::at(Path::new(&dir)), sim);
        Node { _root: root, _disks: disks, host }
    }

    /// Reboots into `release`: the kernel says so, mounts are gone, enabled units start.
    fn reboot(&self, release: &str) {
        let dir = &self.host.runner.dir;
        std::fs::write(dir.join("proc/sys/kernel/osrelease"), format!("{release}\n")).unwrap();
        let table = std::fs::read_to_string(dir.join("proc/self/mountinfo")).unwrap();
        std::fs::write(dir.join("proc/self/mountinfo"), table.lines().next().unwrap().to_owned() + "\n")
            .unwrap();
        let mut s = self.host.runner.state();
        for (mount, llite) in std::mem::take(&mut s.llite) {
            self.host.runner.move_entries(&mount, &self.host.runner.lustre_store(&llite.fsname));
        }
        let enabled = s.enabled.clone();
        s.active = enabled.into_iter().map(|u| (u, monotonic_us())).collect();
    }
}

/// Applies every unit of `plan` in order on its node, as `up` does: a unit after one that did
/// not finish (a failure, a node that must boot) does not run. Returns each step's outcome,
/// as `node #unit: step`.
async fn apply(plan: &crate::Plan, nodes: &BTreeMap<String, Node>) -> Vec<(String, Outcome)> {
    let mut all = Vec::new();
    let mut unfinished = BTreeSet::new();
    for unit in &plan.units {
        if unit.after.iter().any(|id| unfinished.contains(id)) {
            unfinished.insert(unit.id);
            continue;
        }
        let node = &nodes[&unit.node];
        let mut outcomes = Vec::new();
        run_unit(
            &unit.steps,
            &node.host,
            &Policy::default(),
            false,
            false,
            |e| {
                if let StepEvent::Done { index, outcome, .. } = e {
                    outcomes.push((index as usize, outcome));
                }
            },
            || true,
        )
        .await;
        if outcomes.len() < unit.steps.len()
            || outcomes.iter().any(|(_, o)| !matches!(o, Outcome::Ok { .. } | Outcome::Changed { .. }))
        {
            unfinished.insert(unit.id);
        }
        for (index, outcome) in outcomes {
            all.push((format!("{} #{}: {}", unit.node, unit.id, unit.steps[index]), outcome));
        }
    }
    all
}

/// What issue 25 found on real nodes, here: ThinkParQ's beegfs-storage puts its setup script
/// in /opt/beegfs/sbin, which is on no service's PATH, so the script by its bare name (as pvfs
/// ran it) is not found, nor at a path the package does not install; by its full path it runs.
/// Nor does a program run before the package that brings it is installed.
#[tokio::test]
async fn the_simulated_node_runs_only_what_its_packages_installed_where_they_put_it() {
    let node = Node::bare_el(&[]);
    let runner = &node.host.runner;
    let setup =
        |program: &str| Command::new(program).args(["-p", "/data/beegfs/storage", "-s", "1", "-i", "101"]);
    async fn not_found(runner: &SimNode, command: Command) -> bool {
        match runner.run_action(&command).await {
            Err(CommandError::Spawn { source, .. }) => source.kind() == std::io::ErrorKind::NotFound,
            other => panic!("{command}: {other:?}"),
        }
    }
    let full = pvfs_steps::BeegfsService::Storage.setup_script();
    assert!(not_found(runner, setup(&full)).await, "not before its package");
    // An EL7 node: yum, not dnf.
    assert!(not_found(runner, Command::new("dnf")).await);
    let yum = |package: &str| Command::new("yum").args(["install", "-y", "--", package]);
    assert!(runner.run_action(&yum("beegfs-storage")).await.unwrap().success());
    for wrong in
        ["beegfs-setup-storage", "/usr/sbin/beegfs-setup-storage", "/usr/local/bin/beegfs-setup-storage"]
    {
        assert!(not_found(runner, setup(wrong)).await, "{wrong}");
    }
    let out = runner.run_action(&setup(&full)).await.unwrap();
    assert_eq!(out.stdout, "All done.\n");
    // beegfs-ctl comes with beegfs-utils, on PATH.
    let ctl = Command::new("beegfs-ctl").args([
        "--listnodes",
        "--nodetype=management",
        "--reachable",
        "--errorcodes",
    ]);
    assert!(not_found(runner, ctl.clone()).await);
    runner.run_action(&yum("beegfs-utils")).await.unwrap();
    assert_eq!(runner.run(&ctl).await.unwrap().code, Some(1), "no management daemon registered yet");
}

#[tokio::test]
async fn glusterfs_converges_and_then_changes_nothing() {
    let cluster = {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/glusterfs.toml");
        pvfs_config::load(&path).unwrap_or_else(|e| panic!("{e}"))
    };
    let plan = plan(&cluster);
    let mut disks: Vec<String> = (0..10).map(|i| format!("/dev/disk/azure/scsi1/lun{i}")).collect();
    disks.extend(["/dev/md0".into(), "/dev/rhgs-data/brick1".into()]);
    let disks: Vec<&str> = disks.iter().map(String::as_str).collect();
    // Servers have the seed's ten data disks; clients none.
    let servers: BTreeSet<&str> =
        plan.units.iter().filter(|u| u.label == "brick").map(|u| u.node.as_str()).collect();
    let nodes: BTreeMap<String, Node> = plan
        .units
        .iter()
        .map(|u| u.node.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|name| {
            let node = Node::bare_el(if servers.contains(name.as_str()) { &disks } else { &[] });
            (name, node)
        })
        .collect();

    let first = apply(&plan, &nodes).await;
    let failed: Vec<String> = first
        .iter()
        .filter(|(_, o)| !matches!(o, Outcome::Changed { .. } | Outcome::Ok { .. }))
        .map(|(what, o)| format!("{what}: {o:?}"))
        .collect();
    assert!(failed.is_empty(), "the first run converges:\n{}", failed.join("\n"));
    assert!(first.iter().any(|(_, o)| matches!(o, Outcome::Changed { .. })), "bare nodes change");

    let second = apply(&plan, &nodes).await;
    let changed: Vec<String> = second
        .iter()
        .filter(|(_, o)| !matches!(o, Outcome::Ok { .. }))
        .map(|(what, o)| format!("{what}: {o:?}"))
        .collect();
    assert!(changed.is_empty(), "a second run changes nothing:\n{}", changed.join("\n"));
    assert_eq!(second.len(), first.len());

    // What the nodes hold now is what the cluster file describes.
    let server = &nodes["glusterserver1"].host.runner;
    let mounts = pvfs_host::mountinfo::read(&nodes["glusterserver1"].host.root).unwrap();
    assert_eq!(pvfs_host::mountinfo::visible_at(&mounts, "/rhs/brick1").unwrap().fstype, "xfs");
    assert_eq!(server.state().volumes["dist-vol"].0.len(), 2);
    let client = pvfs_host::mountinfo::read(&nodes["client00"].host.root).unwrap();
    assert_eq!(pvfs_host::mountinfo::visible_at(&client, "/mnt/gluster").unwrap().fstype, "fuse.glusterfs");
    // firewalld lets glusterd and the node's one brick through, permanently and now; clients
    // take no connections and keep their firewall as it was.
    let open = |node: &str| {
        let (permanent, running) = firewall_ports(&nodes[node]);
        (permanent.join(" "), running.join(" "))
    };
    assert_eq!(
        open("glusterserver1"),
        ("24007-24008/tcp 49152/tcp".into(), "24007-24008/tcp 49152/tcp".into())
    );
    assert_eq!(open("client00"), (String::new(), String::new()));
}

/// A simulated node's firewalld ports: (permanent, running).
fn firewall_ports(node: &Node) -> (Vec<String>, Vec<String>) {
    let s = node.host.runner.state();
    (s.firewall_permanent.iter().cloned().collect(), s.firewall_running.iter().cloned().collect())
}

/// Every node of `cluster`, bare, running `release`: its disks (and `/dev/md0` where it has
/// several, for the OST's array), its NID on the shared LNet from its address.
fn lustre_nodes(cluster: &pvfs_config::Cluster, release: &str) -> BTreeMap<String, Node> {
    let net = Arc::default();
    cluster
        .nodes
        .iter()
        .map(|n| {
            let mut disks: Vec<String> = n.disks.iter().map(|d| d.display().to_string()).collect();
            if disks.len() > 1 {
                disks.push("/dev/md0".into());
            }
            let disks: Vec<&str> = disks.iter().map(String::as_str).collect();
            let nid = match &n.address.host {
                pvfs_config::model::Host::Ip(ip) => format!("{ip}@tcp"),
                other => panic!("{other:?}"),
            };
            (n.name.clone(), Node::bare(&disks, release, Some(&nid), &net))
        })
        .collect()
}

fn load(name: &str) -> pvfs_config::Cluster {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config").join(name);
    pvfs_config::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Every outcome but those `keep` accepts, one a line.
fn other_than(run: &[(String, Outcome)], keep: fn(&Outcome) -> bool) -> String {
    run.iter().filter(|(_, o)| !keep(o)).map(|(what, o)| format!("{what}: {o:?}\n")).collect()
}

fn done(o: &Outcome) -> bool {
    matches!(o, Outcome::Changed { .. } | Outcome::Ok { .. })
}

fn in_sync(o: &Outcome) -> bool {
    matches!(o, Outcome::Ok { .. })
}

/// What a converged Lustre cluster holds: the targets mounted as lustre and registered, the
/// client mounted, and every step of the plan run.
fn assert_lustre_converged(
    plan: &crate::Plan,
    nodes: &BTreeMap<String, Node>,
    run: &[(String, Outcome)],
    fsname: &str,
) {
    let steps: usize = plan.units.iter().map(|u| u.steps.len()).sum();
    assert_eq!(run.len(), steps, "every step of every unit ran");
    for (node, path) in [
        ("mgsmds00", "/mnt/mgsmds"),
        ("oss00", "/mnt/oss"),
        ("oss01", "/mnt/oss"),
        ("client00", "/mnt/lustre"),
    ] {
        let mounts = pvfs_host::mountinfo::read(&nodes[node].host.root).unwrap();
        let m = pvfs_host::mountinfo::visible_at(&mounts, path).unwrap_or_else(|| panic!("{node}: {path}"));
        assert_eq!(m.fstype, "lustre", "{node}: {path}");
    }
    // LNet's port on every node, servers and client, permanently and now.
    for (name, node) in nodes {
        let lnet = vec!["988/tcp".to_owned()];
        assert_eq!(firewall_ports(node), (lnet.clone(), lnet), "{name}");
    }
    let net = nodes["client00"].host.runner.net.lock().unwrap();
    let want: BTreeSet<String> =
        ["MDT0000", "OST0000", "OST0001"].iter().map(|t| format!("{fsname}-{t}")).collect();
    assert_eq!(net.targets, want);
    assert_eq!(
        nodes["oss01"].host.runner.state().lustre["/dev/md0"].index,
        1,
        "the index from the cluster file"
    );
}

#[tokio::test]
async fn lustre_2_15_on_el8_converges_and_then_changes_nothing() {
    let cluster = load("lustre-2.15-el8.toml");
    let plan = plan(&cluster);
    // Rocky 8.9's stock kernel: the patchless servers run it.
    let nodes = lustre_nodes(&cluster, "4.18.0-513.5.1.el8_9.x86_64");

    let first = apply(&plan, &nodes).await;
    let failed = other_than(&first, done);
    assert!(failed.is_empty(), "the first run converges:\n{failed}");
    assert!(first.iter().any(|(_, o)| matches!(o, Outcome::Changed { .. })), "bare nodes change");
    assert_lustre_converged(&plan, &nodes, &first, "lustre");
    // The tuning of the cluster file: the benchmark directory's layout, the client's read-ahead.
    let client = &nodes["client00"].host.runner;
    let layout = client.net.lock().unwrap().layouts.get(&("lustre".into(), "/bench".into())).copied();
    assert_eq!(layout, Some((-1, 4 << 20)));
    let llite = client.state().llite["/mnt/lustre"].clone();
    assert_eq!(llite.params["max_read_ahead_mb"], "64", "{llite:?}");

    let second = apply(&plan, &nodes).await;
    let changed = other_than(&second, in_sync);
    assert!(changed.is_empty(), "a second run changes nothing:\n{changed}");
    assert_eq!(second.len(), first.len());
}

/// `server`'s unit in `run` stopped at its packages step with MustBoot naming the Lustre
/// kernel: every step before done, every step after skipped for the kernel, nothing of Lustre
/// set up on the wrong kernel.
fn assert_stops_for_the_kernel(run: &[(String, Outcome)], nodes: &BTreeMap<String, Node>, server: &str) {
    const LUSTRE_KERNEL: &str = "3.10.0-514.el7_lustre.x86_64";
    let outcomes: Vec<&(String, Outcome)> =
        run.iter().filter(|(w, _)| w.starts_with(&format!("{server} "))).collect();
    let boot = outcomes
        .iter()
        .position(|(_, o)| matches!(o, Outcome::MustBoot { .. }))
        .unwrap_or_else(|| panic!("{server} does not stop for the kernel: {outcomes:#?}"));
    let (what, outcome) = outcomes[boot];
    assert!(what.contains(": packages kernel=3.10.0-514.el7_lustre "), "{what}");
    assert!(
        matches!(outcome, Outcome::MustBoot { kernel, running } if kernel == LUSTRE_KERNEL && running == "3.10.0-514.el7.x86_64"),
        "{what}: {outcome:?}"
    );
    for (what, outcome) in &outcomes[..boot] {
        assert!(done(outcome), "{what}: {outcome:?}");
    }
    for (what, outcome) in &outcomes[boot + 1..] {
        assert!(
            matches!(outcome, Outcome::Skipped { reason } if reason.contains(LUSTRE_KERNEL)),
            "{what}: {outcome:?}"
        );
    }
    let state = nodes[server].host.runner.state();
    assert_eq!(state.packages["kernel"], ["3.10.0-514.el7.x86_64", LUSTRE_KERNEL], "{server}");
    assert!(
        state.lustre.is_empty() && !state.active.contains_key("lnet"),
        "{server}: nothing on the wrong kernel"
    );
}

fn ran(run: &[(String, Outcome)], node: &str) -> bool {
    run.iter().any(|(w, _)| w.starts_with(&format!("{node} ")))
}

#[tokio::test]
async fn lustre_on_el7_boots_the_lustre_kernel_then_converges_and_then_changes_nothing() {
    let cluster = load("lustre.toml");
    let plan = plan(&cluster);
    // CentOS 7.3's kernel, which the seed's nodes ran before installing Lustre's.
    let nodes = lustre_nodes(&cluster, "3.10.0-514.el7.x86_64");
    const LUSTRE_KERNEL: &str = "3.10.0-514.el7_lustre.x86_64";

    // First run: the MGS/MDS installs the Lustre kernel and stops there; the OSS units and
    // the client come after it (as pvfs-coord's converge runs them) and do not run.
    let first = apply(&plan, &nodes).await;
    assert_stops_for_the_kernel(&first, &nodes, "mgsmds00");
    assert!(!ran(&first, "oss00") && !ran(&first, "oss01") && !ran(&first, "client00"), "{first:#?}");

    // The operator reboots it into the Lustre kernel; the next run brings up the MGS/MDT and
    // the OSS nodes install the kernel and stop in turn.
    nodes["mgsmds00"].reboot(LUSTRE_KERNEL);
    let second = apply(&plan, &nodes).await;
    let mgs: Vec<(String, Outcome)> =
        second.iter().filter(|(w, _)| w.starts_with("mgsmds00 ")).cloned().collect();
    let failed = other_than(&mgs, done);
    assert!(failed.is_empty(), "{failed}");
    assert!(nodes["mgsmds00"].host.runner.net.lock().unwrap().targets.contains("LustreFS-MDT0000"));
    assert_stops_for_the_kernel(&second, &nodes, "oss00");
    assert_stops_for_the_kernel(&second, &nodes, "oss01");
    assert!(!ran(&second, "client00"), "the client waits for every server");

    for server in ["oss00", "oss01"] {
        nodes[server].reboot(LUSTRE_KERNEL);
    }
    let third = apply(&plan, &nodes).await;
    let failed = other_than(&third, done);
    assert!(failed.is_empty(), "after the reboots the run converges:\n{failed}");
    assert_lustre_converged(&plan, &nodes, &third, "LustreFS");

    let fourth = apply(&plan, &nodes).await;
    let changed = other_than(&fourth, in_sync);
    assert!(changed.is_empty(), "then a run changes nothing:\n{changed}");
}

/// `pvfsctl down` after `up` on the 2.15 cluster: nothing of Lustre stays mounted or running,
/// the targets keep their data (no wipe), a second down changes nothing, and `up` afterwards
/// only mounts and starts again.
#[tokio::test]
async fn lustre_down_after_up_leaves_nothing_mounted_and_a_second_down_changes_nothing() {
    let cluster = load("lustre-2.15-el8.toml");
    let up = plan(&cluster);
    let down = crate::down(&cluster, false);
    let nodes = lustre_nodes(&cluster, "4.18.0-513.5.1.el8_9.x86_64");
    let failed = other_than(&apply(&up, &nodes).await, done);
    assert!(failed.is_empty(), "{failed}");

    let first = apply(&down, &nodes).await;
    let failed = other_than(&first, done);
    assert!(failed.is_empty(), "down runs through:\n{failed}");
    assert_eq!(
        first
            .iter()
            .filter(|(w, o)| w.contains(": unmount ") && matches!(o, Outcome::Changed { .. }))
            .count(),
        4,
        "three targets and the client unmount"
    );
    for (name, node) in &nodes {
        let mounts = pvfs_host::mountinfo::read(&node.host.root).unwrap();
        assert!(mounts.iter().all(|m| m.fstype != "lustre"), "{name}: {mounts:?}");
        let fstab = std::fs::read_to_string(node.host.runner.dir.join("etc/fstab")).unwrap();
        assert!(!fstab.contains("lustre"), "{name}: {fstab}");
        let s = node.host.runner.state();
        assert!(!s.active.contains_key("lnet") && !s.enabled.contains("lnet"), "{name}");
    }
    assert!(nodes["oss00"].host.runner.net.lock().unwrap().lnet.is_empty());
    assert_eq!(nodes["oss01"].host.runner.state().lustre["/dev/md0"].index, 1, "the targets are kept");

    let second = apply(&down, &nodes).await;
    let changed = other_than(&second, in_sync);
    assert!(changed.is_empty(), "a second down changes nothing:\n{changed}");

    // Up again: the kept targets are recognised, not formatted; they mount and LNet starts.
    let again = apply(&up, &nodes).await;
    let failed = other_than(&again, done);
    assert!(failed.is_empty(), "{failed}");
    let changed: Vec<&String> =
        again.iter().filter(|(_, o)| matches!(o, Outcome::Changed { .. })).map(|(w, _)| w).collect();
    assert!(changed.iter().all(|w| !w.contains(": lustre ") && !w.contains(": packages ")), "{changed:#?}");
    assert_eq!(changed.iter().filter(|w| w.contains(": mount ")).count(), 4, "{changed:#?}");
    assert_lustre_converged(&up, &nodes, &again, "lustre");
}

/// Every node of a BeeGFS cluster file, bare, running `release`: its data and metadata disks
/// and, where it has them, the arrays the plan makes of them.
fn beegfs_nodes(cluster: &pvfs_config::Cluster, release: &str) -> BTreeMap<String, Node> {
    let pvfs_config::KindSpec::Beegfs { meta, storage, .. } = &cluster.spec else {
        panic!("not a BeeGFS cluster: {}", cluster.name)
    };
    let net = Arc::default();
    cluster
        .nodes
        .iter()
        .map(|n| {
            let mut disks: Vec<String> =
                n.disks.iter().chain(&n.meta_disks).map(|d| d.display().to_string()).collect();
            if !n.disks.is_empty() {
                disks.push(storage.raid.clone());
            }
            if !n.meta_disks.is_empty() {
                disks.push(meta.raid.clone());
            }
            let disks: Vec<&str> = disks.iter().map(String::as_str).collect();
            let mut node = Node::bare(&disks, release, None, &net);
            node.host.runner.name = n.name.clone();
            node.host.runner.ip = match &n.address.host {
                pvfs_config::model::Host::Ip(ip) => ip.to_string(),
                other => panic!("{other:?}"),
            };
            (n.name.clone(), node)
        })
        .collect()
}

/// A queue attribute of one of `node`'s disks, as the kernel reads it back.
fn queue_attr(node: &Node, disk: &str, attr: &str) -> String {
    let name = disk.rsplit('/').next().unwrap();
    node.host.root.read_trimmed(&format!("/sys/block/{name}/queue/{attr}")).unwrap()
}

/// What a converged BeeGFS cluster holds: every server's arrays formatted and mounted, its
/// daemons registered under their IDs, its member disks tuned in the kernel (the scheduler
/// the kernel calls `mq-deadline`, `nr_requests` as the plan clamps it, read-ahead) and the
/// arrays' read-ahead, the settings kept in a udev rule; every client a BeeGFS mount.
fn assert_beegfs_converged(cluster: &pvfs_config::Cluster, nodes: &BTreeMap<String, Node>) {
    let mut servers = Vec::new();
    for n in &cluster.nodes {
        let node = &nodes[&n.name];
        let mounts = pvfs_host::mountinfo::read(&node.host.root).unwrap();
        let fstype = |path: &str| {
            pvfs_host::mountinfo::visible_at(&mounts, path).map(|m| m.fstype.clone()).unwrap_or_default()
        };
        if n.has(pvfs_config::Role::Client) {
            assert_eq!(fstype("/mnt/beegfs"), "beegfs", "{}", n.name);
        }
        // Each service's port open in firewalld (the management daemon's 8008, a client's
        // 8004/udp), as the plan's firewall step lists them.
        let want: Vec<String> = crate::ports_of(cluster, n)
            .iter()
            .map(ToString::to_string)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(firewall_ports(node), (want.clone(), want), "{}", n.name);
        if !n.has(pvfs_config::Role::Storage) {
            continue;
        }
        servers.push(n.name.clone());
        assert_eq!(fstype("/data/beegfs/storage"), "xfs", "{}", n.name);
        assert_eq!(fstype("/data/beegfs/meta"), "ext4", "{}", n.name);
        // Table 11 on the storage disks (4096 requests clamped to the 2048 a multi-queue
        // kernel allows with a scheduler), Table 12 on the metadata disks.
        for (disks, nr_requests, read_ahead) in [(&n.disks, "2048", "32768"), (&n.meta_disks, "128", "128")] {
            for disk in disks {
                let disk = disk.display().to_string();
                let scheduler = queue_attr(node, &disk, "scheduler");
                assert!(scheduler.contains("[mq-deadline]"), "{}: {disk}: {scheduler}", n.name);
                assert_eq!(queue_attr(node, &disk, "nr_requests"), nr_requests, "{}: {disk}", n.name);
                assert_eq!(queue_attr(node, &disk, "read_ahead_kb"), read_ahead, "{}: {disk}", n.name);
            }
        }
        assert_eq!(queue_attr(node, "/dev/md10", "read_ahead_kb"), "32768", "{}", n.name);
        let rule =
            std::fs::read_to_string(node.host.runner.dir.join("etc/udev/rules.d/99-pvfs-queue-md10.rules"))
                .unwrap();
        assert!(
            rule.contains(r#"SYMLINK=="disk/azure/scsi1/lun0", ATTR{queue/scheduler}="mq-deadline""#),
            "{rule}"
        );
        let conf =
            std::fs::read_to_string(node.host.runner.dir.join("etc/beegfs/beegfs-storage.conf")).unwrap();
        for line in
            ["sysMgmtdHost = 10.0.0.4", "connAuthFile = /etc/beegfs/connauthfile", "tuneNumWorkers = 64"]
        {
            assert!(conf.lines().any(|l| l == line), "{}: {line:?} in\n{conf}", n.name);
        }
    }
    let net = nodes["mgmt"].host.runner.net.lock().unwrap();
    let registered: Vec<String> =
        net.beegfs.iter().map(|((section, name), (id, _))| format!("{section} {name} {id}")).collect();
    assert_eq!(
        registered,
        [
            "Management mgmt 1",
            &format!("Metadata {} 1", servers[0]),
            &format!("Metadata {} 2", servers[1]),
            &format!("Storage {} 1", servers[0]),
            &format!("Storage {} 2", servers[1]),
        ]
    );
}

/// Runs `cluster`'s plan on bare nodes until it converges, then again: the second run finds
/// every step in sync.
async fn beegfs_converges_and_then_changes_nothing(cluster: &pvfs_config::Cluster, release: &str) {
    let plan = plan(cluster);
    let nodes = beegfs_nodes(cluster, release);
    let first = apply(&plan, &nodes).await;
    let failed = other_than(&first, done);
    assert!(failed.is_empty(), "the first run converges:\n{failed}");
    let steps: usize = plan.units.iter().map(|u| u.steps.len()).sum();
    assert_eq!(first.len(), steps, "every step of every unit ran");
    assert!(first.iter().any(|(w, o)| w.contains(": queue of ") && matches!(o, Outcome::Changed { .. })));
    assert_beegfs_converged(cluster, &nodes);

    let second = apply(&plan, &nodes).await;
    let changed = other_than(&second, in_sync);
    assert!(changed.is_empty(), "a second run changes nothing:\n{changed}");
    assert_eq!(second.len(), first.len());
}

#[tokio::test]
async fn beegfs_7_4_on_el8_converges_from_bare_nodes_and_then_changes_nothing() {
    // Rocky 8.9's stock kernel.
    beegfs_converges_and_then_changes_nothing(&load("beegfs-7.4-el8.toml"), "4.18.0-513.5.1.el8_9.x86_64")
        .await;
}

/// The seed's BeeGFS (7.2 on CentOS 7, yum): RAID0 arrays of six and ten disks, Tables 11–12
/// on their members and the arrays' read-ahead.
#[tokio::test]
async fn beegfs_seed_arrays_and_tuning_converge_from_bare_nodes_and_then_change_nothing() {
    // CentOS 7.9's kernel.
    beegfs_converges_and_then_changes_nothing(&load("beegfs.toml"), "3.10.0-1160.el7.x86_64").await;
}
