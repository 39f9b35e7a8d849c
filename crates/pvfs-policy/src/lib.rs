//! The agent's authorization policy: THE list of what a step may make a node do.
//!
//! A coordinator certificate lets its holder converge a node to a described state; it must not
//! be a remote root shell. Every step that reaches an agent is checked here twice: when the
//! agent decodes an `Apply` request (the whole unit is refused before anything runs, dry runs
//! included), and again inside [`pvfs_steps::run_unit`]/[`pvfs_steps::execute`], which ask
//! [`Policy`] as their [`Guard`], before each step is assessed and before each action is
//! performed, so that a bug in a step's assessment cannot turn into a write outside this list.
//! Each refusal is a [`PolicyError`] naming a short, stable rule id, the offending value and
//! what to do.
//!
//! The agent's security boundary is this crate and nothing else: it depends on `pvfs-steps`
//! for the step types it judges, and nothing in `pvfs-steps` knows a rule.
//!
//! Where each rule lives: `step` (each kind of step, a unit's restart order, the site's
//! devices), `action` (the backstop: each kind's actions, programs and command forms), `files`
//! (the places, modes and contents of what is written), `values` (the grammar of every value a
//! step carries) and `node` (what needs the node: owners, symbolic links, device names); this
//! module holds the policy itself, the site's narrowing and the lists a site can change.
//!
//! # The rules
//!
//! **Paths** (`path-canonical`, `path-hidden`): absolute and canonical — no `.` or `..`
//! component, no `//`, no trailing `/` — at most 4095 bytes (255 a component), no control
//! characters, and no component starting with `.` (dotfiles: `.bashrc`,
//! `.ssh/authorized_keys`). On the node (`symlink`), no existing component of a path a step
//! writes, creates or mounts on may be a symbolic link: a link is how a data path becomes
//! `/etc/cron.d`.
//!
//! **System trees** (`system-tree`): `/` itself and everything under [`SYSTEM_TREES`] (`/bin`,
//! `/boot`, `/dev`, `/etc`, `/lib*`, `/opt`, `/proc`, `/root`, `/run`, `/sbin`, `/sys`, `/usr`,
//! `/var`, and `/nix`, `/snap` whose stores hold programs too). No step creates a directory in
//! them, mounts on them, or uses them as a brick, target, data directory or probe. Everything
//! else is a *data path*; a site may narrow data paths to its `data_roots` (`data-root`).
//! The only places in system trees a step may write are listed below, each for one step kind.
//!
//! **Files** (`file-place`, `file-mode`, `file-content`): a `File` step may write
//! - `/etc/modprobe.d/NAME.conf`, whose lines may only be comments or
//!   `options MODULE key=value…` (an `install` or `remove` line runs a shell command as root);
//! - `/etc/lnet.conf` (LNet's own YAML configuration, read by `lnetctl import`);
//! - `/etc/beegfs/connauthfile` (BeeGFS's shared secret, mode 0400: no group or other bits),
//!   `/etc/beegfs/interfaces` and `/etc/beegfs/netfilter` (one interface name or subnet per
//!   line);
//! - `/etc/beegfs/beegfs-mounts.conf`, lines `MOUNTPOINT /etc/beegfs/beegfs-client*.conf` with
//!   the mount point a data path. *Refinement*: not every `/etc/beegfs/*.conf`, because
//!   `beegfs-client-autobuild.conf` carries `make` arguments for the client module build, and
//!   `make CC=…` runs any program as root;
//! - files under data paths.
//!
//! Modes never carry setuid, setgid or sticky bits, are never world-writable, and — a
//! refinement of "no execute bits under data paths" — carry no execute bit anywhere: every
//! file pvfs writes is data or configuration, never a program.
//! `/etc/fstab` is written only by `Mount` (its own line), `/etc/mdadm.conf` and
//! `/etc/mdadm/mdadm.conf` only by `Raid0` (whose `conf` must be one of them),
//! `/etc/yum.repos.d/NAME.repo`, `/etc/apt/sources.list.d/pvfs-NAME.sources` (deb822 lines of
//! `Types`, `URIs`, `Suites`, `Components`, `Signed-By` and `Trusted` only) and
//! `/etc/apt/keyrings/pvfs-NAME.asc` (one ASCII-armored OpenPGP public key block, nothing
//! else) only by `Packages`, which may also create `/etc/apt/keyrings` and run
//! `apt-get update`, and `/etc/udev/rules.d/` only by
//! `BlockQueue`, one file `99-pvfs-queue-NAME.rules` whose content the agent generates itself
//! (`udev-rule`): udev rules can RUN programs, so every line must be a comment or plain
//! `KEY=="value"` matches (ACTION, SUBSYSTEM, KERNEL, SYMLINK, ENV{DEVTYPE|MD_DEVNAME|DM_NAME},
//! ATTRS{wwid}) followed by `ATTR{queue/scheduler|nr_requests|read_ahead_kb}="value"`
//! assignments — no RUN, PROGRAM, IMPORT, OPTIONS, GOTO or anything else.
//!
//! **Settings** (`config-keys`): `ConfigKeys` only edits the BeeGFS service configurations
//! ([`BEEGFS_SERVICE_CONFS`]); keys are identifiers, values have no control characters, and a
//! value that is a path (the `*File`/`*Directory` keys: logs, connection files, store
//! directories) must be a data path or lie under `/etc/beegfs/` or `/var/log/beegfs/`: a log
//! file name is otherwise a way to make a root daemon write wherever it is told.
//!
//! Files pvfs writes are root's alone (`file-owner`, on the node): a file step never replaces
//! a file another user owns, nor writes into a directory another user owns (a home, someone's
//! scratch), and never writes a file directly under `/` (`file-place`).
//!
//! **Directories** (`dir-mode`): data paths only; no setuid or setgid bit, not world-writable.
//!
//! **Benchmark directories** (`bench-dir`, for `BenchPhase` and `Launch`): a data path (the
//! rules above, the site's data roots), no symbolic link on the way (`symlink`), and on a
//! directory that exists directly under `/` (the cluster's mount, a data root): a benchmark
//! never creates a top-level directory, so a request for `/pvfs-bench/x` cannot start writing
//! to whatever file system `/` is. The agent also refuses a write phase its file system has no
//! room for (not here: it needs the phase's size).
//!
//! **Packages** (`package-name`, `package-version`): names by the union of Debian's and rpm's
//! grammars (letters, digits, `.+-_`, never starting with `-` or `.`), versions by grammar.
//! Install commands also put `--` before the package arguments.
//!
//! **Repositories** (`repo-name`, `repo-url`, `repo-prefix`, `repo-suite`, `repo-unsigned`): the name is a
//! file name; apt suites and components are words of `[A-Za-z0-9._+~/-]` (not starting with
//! `-`); `baseurl` and `gpgkey` are `https://` URLs — plain `http://` only when the
//! cluster file's `[[repo]]` says `allow_http = true` — and must start with one of the
//! agent's allowed prefixes ([`DEFAULT_REPOSITORIES`], the upstreams the example cluster files
//! use; a site replaces the list with its mirrors). An apt repository's `gpgkey` may only name
//! a keyring already on the node (`file:///usr/share/keyrings/…`, `file:///etc/apt/keyrings/…`):
//! apt fetches no keys; a key the cluster file ships is one armored public key block. GPG checks stay on unless the cluster file
//! says `gpgcheck = false`, which `--plan` shows as a warning; a site may refuse unsigned
//! repositories outright. Why so strict: adding a repository and installing a package from it
//! *is* a remote root shell, because package scriptlets run as root.
//!
//! **Services** (`service-unit`, `restart-order`): unit names by grammar (a `.service` suffix
//! or none), and by default only the units pvfs's plans manage ([`DEFAULT_SERVICES`]); a site
//! may add more. (`debug-shell.service` is a root shell on tty9.) A service step only enables,
//! starts or restarts its unit; the files it names as its configuration are canonical paths,
//! and no later step of the unit may change one of them (its restart would come too early).
//!
//! **Block devices** (`device-path`, `device-not-allowed`, `name`, `size`, `fstype`, `nid`,
//! `wipe`, `queue-value`): devices are canonical paths under `/dev` (never its pseudo file
//! systems `/dev/shm`, `/dev/pts`, `/dev/mqueue`, `/dev/hugepages`, `/dev/fd`), arrays are
//! `/dev/mdN` or `/dev/md/NAME`; LVM names, labels, fsnames, NIDs and sizes by grammar; file
//! system types from a fixed set. A site may list the devices this node may format, put in an
//! array or make a physical volume (globs, matched against the path as given and as resolved
//! through `/dev/disk/by-*` links); arrays and LVM volumes that an earlier step of the same
//! unit makes from allowed devices are allowed too. (Whether a device is *empty* is
//! `block::prove_empty`'s business, not this module's.)
//!
//! **Mounts** (`mount-fstype`, `mount-source`, `mount-options`, `mount-target`): the target
//! is a data path; the source is a `/dev` path for xfs, ext4 and Lustre targets,
//! `host:/volume` for glusterfs, `nid[:nid…]:/fsname` for Lustre clients, `beegfs_nodev` for
//! BeeGFS; options are `key[=value]` words without whitespace, `#` or control characters
//! (they reach fstab), with no value naming a path, and none of the options that make a
//! mount write host files or bring in other devices or programs (`helper=`, `logdev=`,
//! `rtdev=`, `journal_path=`, `journal_dev=`, `log-file=`, `dump-fuse=`, SELinux contexts,
//! `x-systemd.*` dependencies, which pull arbitrary units in at boot). A mount onto a
//! non-empty directory that is not already this mount is refused when the step is assessed
//! (`mount-target`): it would hide data, or shadow someone's home with another's files.
//!
//! **Gluster, BeeGFS, gates** (`name`, `gluster-option`, `nid`): volume names, peer hosts and
//! brick hosts by grammar, brick paths data paths, option keys by grammar and values without
//! control characters (a value that is a path must be a data path); BeeGFS data directories
//! are data paths and the management host a host name; the `Writable` and `MountedAs` gates'
//! directories are data paths (and `MountedAs`'s type one `Mount` mounts) and `LnetPing`'s and `LnetNid`'s NID
//! is a NID.
//!
//! **Teardown** (`pvfsctl down`): `unmount` takes the same rules as a mount (a data path, the
//! source and type a mount step would be allowed) and may only run `umount TARGET` and rewrite
//! `/etc/fstab`; `service-stopped` only `systemctl stop|disable` a unit pvfs manages;
//! `gluster-volume-gone` and `gluster-peers-detached` only run `gluster` on a volume name or
//! host by grammar. `wipe` (`down --wipe`) names canonical devices under `/dev`, its array
//! `/dev/mdN`, its volume group by LVM's grammar, and the site's device list applies to every
//! device it destroys as it does to mkfs; it may only run `vgchange --activate n VG`, `mdadm
//! --stop ARRAY`, `mdadm --zero-superblock DEV` and `wipefs --all DEV` on those, and zero
//! them (`Action::Zero`). Its destructive actions are `Action::Destroy`/`Action::Zero`, each
//! re-proving the device unused (not mounted, held or swap, claimable `O_EXCL`) just before.
//!
//! **Lustre tuning** (`stripe`, `lctl-param`): `lfs setstripe` only on a data path, with a
//! stripe count of -1 or 1 to 2000 and a stripe size a multiple of 64 KiB below 4 GiB;
//! `lctl set_param` only for client parameters — names by the grammar `[a-z0-9_.*-]+` under
//! `llite.`, `osc.`, `mdc.`, `lov.`, `lmv.` or `ldlm.`, never naming an `upcall` (server
//! upcalls name programs run as root) — and values of one word without whitespace or control
//! characters.
//!
//! **MPI over SSH** (`mpi-ssh-off`, `mpi-ssh`): `mpi-ssh` gives root SSH from every client to
//! every other (`[bench] mpi_ssh`), so it is refused unless the agent's policy file says
//! `mpi_ssh = true`: an operator grants that on purpose. It writes only
//! `/etc/pvfs/mpi/id_ed25519` (0600: an OpenSSH private key block), `/etc/pvfs/mpi/known_hosts`
//! (0644) and root's `/root/.ssh/authorized_keys` (0600), and makes only `/etc/pvfs/mpi` and
//! `/root/.ssh` (0700); keys are `TYPE BASE64` words, names host names or addresses, the cluster
//! a name by grammar (it is the marker of pvfs's one line). `mpi-ssh-gone` (`down`) needs no
//! opt-in, since it only takes the grant away: it rewrites `authorized_keys` and removes the two
//! files, nothing else.
//!
//! **Faults** (`faults-off`, `name`, `fault-interface`): `pvfsctl bench --fault` takes a server
//! down on purpose, so every fault is refused unless the agent's policy file says
//! `faults = true`. A brick is killed only by its volume's name (by grammar) and its data path;
//! a network cut names one interface by the kernel's grammar (at most 15 characters), never
//! the loopback (`lo`: the node's own services, not its network), lasts 1 to 600 seconds, and
//! is undone by the agent itself; a stopped service is a unit pvfs manages (`service-unit`).
//!
//! **Firewall** (`firewall-port`, `name`): `firewall` opens only the ports pvfs's file systems
//! listen on ([`FIREWALL_PORTS`]: Lustre's LNet 988/tcp, BeeGFS's 8003–8008 tcp and udp,
//! glusterd's 24007–24008/tcp and the brick ports glusterd hands out, 49152–60999/tcp), each
//! as tcp or udp, in the default zone or one named by firewalld's grammar. It runs
//! `firewall-cmd` in two forms only: `--permanent [--zone=ZONE] --add-port=PORT/PROTO` with a
//! port of its step, and `--reload`; never `--remove-*`, `--set-*`, `--direct`, `--panic-on`
//! or any other argument.
//!
//! **Kinds** (`kind-not-allowed`): a site may list the step kinds its node runs. Gates change
//! nothing (they only probe) and are always allowed.
//!
//! **Actions** (`action-kind`, `program`): the backstop. Each step kind may only produce its
//! own kinds of action on its own places (a `mount` step: mkdir of its target, `/etc/fstab`,
//! `mount`), and `Action::Run` only its own programs ([`programs_of`]).

use pvfs_host::Root;
use pvfs_steps::{Action, Guard, Step};
/// A refusal, and a unit's: the step runner's vocabulary ([`Guard`]), which this policy
/// answers in.
pub use pvfs_steps::{PolicyError, StepRefused};
use std::collections::BTreeSet;
use std::fmt;

/// Directories no step may create things in, mount on, or use as data paths (and `/` itself);
/// the list is `pvfs-host`'s, which the cluster-file validator shares.
pub use pvfs_host::paths::SYSTEM_TREES;
use pvfs_host::paths::under;

mod action;
mod files;
mod node;
mod step;
mod values;

pub use action::programs_of;
use node::no_symlink;
use values::{canonical, device_path, not_system, simple_name, unit_name, url_chars};

/// Repository URL prefixes allowed by default: the upstreams the example cluster files (and
/// the packages they install, such as centos-release-gluster and epel-release) use. Compared
/// without the scheme, so an `allow_http` repository on the same host still matches.
pub const DEFAULT_REPOSITORIES: &[&str] = &[
    "https://downloads.whamcloud.com/public/",
    "https://www.beegfs.io/release/",
    "https://download.gluster.org/pub/gluster/",
    "https://mirror.centos.org/",
    "https://vault.centos.org/",
    "https://dl.fedoraproject.org/pub/epel/",
    "https://download.fedoraproject.org/pub/epel/",
];

/// The systemd units pvfs's plans manage (`pvfs-plan`: lustre, glusterfs, beegfs).
pub const DEFAULT_SERVICES: &[&str] = &[
    "lnet",
    "glusterd",
    "glusterfsd",
    "beegfs-mgmtd",
    "beegfs-meta",
    "beegfs-storage",
    "beegfs-client",
    "beegfs-helperd",
];

/// The BeeGFS service configurations `ConfigKeys` and `BeegfsSetup` may edit.
pub const BEEGFS_SERVICE_CONFS: &[&str] = &[
    "/etc/beegfs/beegfs-mgmtd.conf",
    "/etc/beegfs/beegfs-meta.conf",
    "/etc/beegfs/beegfs-storage.conf",
    "/etc/beegfs/beegfs-client.conf",
    "/etc/beegfs/beegfs-helperd.conf",
];

/// Where `Raid0` records its arrays (Debian's and RHEL's).
pub const MDADM_CONFS: &[&str] = &["/etc/mdadm/mdadm.conf", "/etc/mdadm.conf"];

/// BeeGFS's shared secret (`connAuthFile`), the same on every node.
pub const BEEGFS_AUTH_FILE: &str = "/etc/beegfs/connauthfile";

/// BeeGFS's `connInterfacesFile`: one interface name per line.
pub const BEEGFS_INTERFACES: &str = "/etc/beegfs/interfaces";

/// BeeGFS's `connNetFilterFile`: one subnet (`ADDRESS/BITS`) per line.
pub const BEEGFS_NET_FILTER: &str = "/etc/beegfs/netfilter";

/// The ports a `firewall` step may open: what pvfs's file systems listen on, each range the
/// widest one documented. Lustre: LNet's acceptor, 988/tcp (lnet's `accept_port`); BeeGFS 7:
/// the services' default ports, 8003 storage, 8004 client, 8005 metadata, 8006 helperd, 8007
/// mon, 8008 management, each tcp and udp (`connStoragePortTCP`/`UDP` … in the services'
/// configuration files); GlusterFS: glusterd's 24007 and 24008 (glusterfs's own firewalld
/// service, extras/firewalld/glusterfs.xml) and the brick ports glusterd hands out from
/// `base-port` 49152 to `max-port` 60999 (extras/glusterd.vol.in).
pub const FIREWALL_PORTS: &[pvfs_steps::PortRange] = {
    use pvfs_steps::{PortRange, Protocol};
    &[
        PortRange::one(988, Protocol::Tcp),
        PortRange::range(8003, 8008, Protocol::Tcp),
        PortRange::range(8003, 8008, Protocol::Udp),
        PortRange::range(24007, 24008, Protocol::Tcp),
        PortRange::range(49152, 60999, Protocol::Tcp),
    ]
};

/// Every step kind ([`Step::kind`] of the non-gate steps), for site policies.
pub const STEP_KINDS: &[&str] = &[
    "packages",
    "file",
    "config-keys",
    "directory",
    "service",
    "raid0",
    "lvm-thin",
    "mkfs",
    "lustre-target",
    "lustre-stripe",
    "lctl-param",
    "mount",
    "block-queue",
    "gluster-peers",
    "gluster-volume",
    "beegfs-setup",
    "unmount",
    "service-stopped",
    "gluster-volume-gone",
    "gluster-peers-detached",
    "wipe",
    "mpi-ssh",
    "mpi-ssh-gone",
    "firewall",
    // Not a step: the agent's Reboot call (boot into an installed kernel). A site that lists
    // its kinds and leaves this out never has its node rebooted by pvfs.
    REBOOT,
];

/// The kind a site lists to let pvfs reboot its node into an installed kernel.
pub const REBOOT: &str = "reboot";

/// The longest a benchmark's fault may keep a node's network cut.
pub const MAX_CUT_SECONDS: u32 = 600;

/// A site's narrowing of the default policy (the agent's policy file). Every field left out
/// keeps the default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Site {
    /// Step kinds this node runs ([`STEP_KINDS`]); `None`: all.
    pub kinds: Option<Vec<String>>,
    /// Globs (`*`, `?`) of the devices this node may format, put in an array or make a
    /// physical volume; `None`: any device under `/dev`.
    pub devices: Option<Vec<String>>,
    /// Where directories, mounts, bricks and targets may be; `None`: any data path.
    pub data_roots: Option<Vec<String>>,
    /// Repository URL prefixes; replaces [`DEFAULT_REPOSITORIES`].
    pub repositories: Option<Vec<String>>,
    /// Units allowed on top of [`DEFAULT_SERVICES`].
    pub services: Vec<String>,
    /// Refuse repositories with `gpgcheck = false`, whatever the cluster file says.
    pub refuse_unsigned: bool,
    /// Allow `mpi-ssh` steps: root SSH between the clients for mpirun (default: refused).
    pub mpi_ssh: bool,
    /// Allow `pvfsctl bench --fault` to kill this node's bricks mid-run (default: refused).
    pub faults: bool,
}

/// A value in a site policy that cannot be used: which key, which entry, why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}[{index}]: {message}")]
pub struct SiteError {
    pub key: &'static str,
    pub index: usize,
    pub message: String,
}

/// What the agent allows. [`Policy::default`] is the built-in policy; [`Policy::new`] narrows
/// it with a site's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    kinds: Option<BTreeSet<String>>,
    devices: Option<Vec<String>>,
    data_roots: Option<Vec<String>>,
    repositories: Vec<String>,
    services: BTreeSet<String>,
    refuse_unsigned: bool,
    mpi_ssh: bool,
    faults: bool,
    /// The cluster's nodes as the unit's request names them (addresses, names, LNet
    /// addresses); `None` where no request is in hand (the coordinator's own pre-check).
    cluster_hosts: Option<BTreeSet<String>>,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            kinds: None,
            devices: None,
            data_roots: None,
            repositories: DEFAULT_REPOSITORIES.iter().map(|s| (*s).to_owned()).collect(),
            services: DEFAULT_SERVICES.iter().map(|s| (*s).to_owned()).collect(),
            refuse_unsigned: false,
            mpi_ssh: false,
            faults: false,
            cluster_hosts: None,
        }
    }
}

impl Policy {
    /// The default policy narrowed by `site`; every unusable value is reported.
    pub fn new(site: Site) -> Result<Policy, Vec<SiteError>> {
        let mut errors = Vec::new();
        let mut policy = Policy {
            refuse_unsigned: site.refuse_unsigned,
            mpi_ssh: site.mpi_ssh,
            faults: site.faults,
            ..Policy::default()
        };
        let mut err = |key: &'static str, index: usize, message: String| {
            errors.push(SiteError { key, index, message });
        };
        if let Some(kinds) = site.kinds {
            for (i, kind) in kinds.iter().enumerate() {
                if !STEP_KINDS.contains(&kind.as_str()) {
                    err("kinds", i, format!("unknown step kind {kind:?}: use {}", STEP_KINDS.join(", ")));
                }
            }
            policy.kinds = Some(kinds.into_iter().collect());
        }
        if let Some(devices) = site.devices {
            for (i, glob) in devices.iter().enumerate() {
                if let Err(e) = device_path(glob) {
                    err("devices", i, format!("{glob:?} is not a device path under /dev: {}", e.problem));
                }
            }
            policy.devices = Some(devices);
        }
        if let Some(roots) = site.data_roots {
            for (i, root) in roots.iter().enumerate() {
                if let Err(e) = canonical(root).and_then(|()| not_system(root)) {
                    err("data_roots", i, format!("{root:?} cannot be a data root: {}", e.problem));
                }
            }
            policy.data_roots = Some(roots);
        }
        if let Some(prefixes) = site.repositories {
            for (i, prefix) in prefixes.iter().enumerate() {
                let scheme_ok =
                    ["https://", "http://", "file:///", "ftp://"].iter().any(|s| prefix.starts_with(s));
                let host_end = prefix.split_once("://").is_some_and(|(_, rest)| rest.contains('/'));
                if !scheme_ok || !host_end || !prefix.ends_with('/') || url_chars(prefix).is_err() {
                    err(
                        "repositories",
                        i,
                        format!(
                            "{prefix:?} must be a URL prefix such as \"https://mirror.example.com/lustre/\", \
                             ending in '/' (so that \"https://mirror.example.com.evil.org/\" cannot match)"
                        ),
                    );
                }
            }
            policy.repositories = prefixes;
        }
        for (i, unit) in site.services.iter().enumerate() {
            if let Err(e) = unit_name(unit) {
                err("services", i, e.problem);
            }
            policy.services.insert(unit.strip_suffix(".service").unwrap_or(unit).to_owned());
        }
        if errors.is_empty() { Ok(policy) } else { Err(errors) }
    }

    /// This policy for one unit of a cluster whose nodes are `hosts` (`ApplyRequest.
    /// cluster_hosts`): every host a step names — a client mount's server, a gluster peer or
    /// brick, an MGS NID, the BeeGFS management host — must be one of them (`cluster-host`). An
    /// empty list allows no remote host at all, which is what a hand-built request without
    /// one gets.
    pub fn for_cluster(&self, hosts: impl IntoIterator<Item = String>) -> Policy {
        Policy { cluster_hosts: Some(hosts.into_iter().collect()), ..self.clone() }
    }

    /// Whether the node may be rebooted into `kernel` (a release as `uname -r` prints it):
    /// the site's kinds allow it (`kind-not-allowed`) and the release is one word of the
    /// characters kernel releases use (`kernel-release`), so it names one file under /boot.
    pub fn check_reboot(&self, kernel: &str) -> Result<(), PolicyError> {
        if let Some(kinds) = &self.kinds
            && !kinds.contains(REBOOT)
        {
            return Err(PolicyError::new(
                "kind-not-allowed",
                REBOOT,
                "this node's policy does not let pvfs reboot it",
                "reboot the node into the kernel by hand, or add \"reboot\" to `kinds` in the agent's policy file",
            ));
        }
        let ok = !kernel.is_empty()
            && kernel.len() <= 128
            && kernel.starts_with(|c: char| c.is_ascii_alphanumeric())
            && kernel.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_' | '~'));
        if ok {
            return Ok(());
        }
        Err(PolicyError::new(
            "kernel-release",
            kernel,
            format!("{kernel:?} is not a kernel release"),
            "name the release as `uname -r` prints it (3.10.0-514.el7_lustre.x86_64)",
        ))
    }

    /// Whether `pvfsctl bench --fault` may kill the brick `path` of GlusterFS volume `volume` on
    /// this node: only where the site granted it (`faults-off`: a benchmark that takes a
    /// server down on purpose is an operator's decision, as `mpi_ssh` is), the volume a gluster
    /// volume name, the brick a data path (canonical, outside the system trees, under the
    /// site's data roots).
    pub fn check_fault_brick(&self, volume: &str, path: &str) -> Result<(), PolicyError> {
        self.faults_granted(path)?;
        simple_name("gluster volume name", volume, 64, "")?;
        self.data_path(path, "a brick")
    }

    /// Whether `pvfsctl bench --fault` may cut this node's network interface `interface` for
    /// `seconds`: only where the site granted faults, an interface name by the kernel's
    /// grammar (IFNAMSIZ: 15 characters), not the loopback, 1 to [`MAX_CUT_SECONDS`].
    pub fn check_fault_network(&self, interface: &str, seconds: u32) -> Result<(), PolicyError> {
        self.faults_granted(interface)?;
        simple_name("network interface name", interface, 15, "")?;
        if interface == "lo" {
            return Err(PolicyError::new(
                "fault-interface",
                interface,
                "lo is the node's loopback: taking it down breaks the node's own services, not its network",
                "name the interface the cluster's traffic uses (eth0, ib0, ...), or leave it out to cut the \
                 one the coordinator reaches the node through",
            ));
        }
        if !(1..=MAX_CUT_SECONDS).contains(&seconds) {
            return Err(PolicyError::new(
                "fault-interface",
                interface,
                format!("a network cut of {seconds} s: it lasts 1 to {MAX_CUT_SECONDS} seconds"),
                "give the fault a duration (for=SECONDS) within that",
            ));
        }
        Ok(())
    }

    /// Whether `pvfsctl bench --fault` may stop the service `unit` on this node for a while:
    /// only where the site granted faults, and only a unit pvfs manages (the `service-unit`
    /// rule `up`'s service steps follow: the file systems' daemons, never sshd or the agent).
    pub fn check_fault_service(&self, unit: &str) -> Result<(), PolicyError> {
        self.faults_granted(unit)?;
        self.service(unit)
    }

    /// Whether a benchmark run with `--gluster-profile` may start, read and stop GlusterFS's
    /// profile of `volume` (it sets the volume's diagnostics options, as `gluster volume
    /// profile` does): a volume by name, where the site's kinds allow `gluster-volume`.
    pub fn check_gluster_profile(&self, volume: &str) -> Result<(), PolicyError> {
        if let Some(kinds) = &self.kinds
            && !kinds.contains("gluster-volume")
        {
            return Err(PolicyError::new(
                "kind-not-allowed",
                "gluster-volume",
                "this node's policy does not let pvfs change GlusterFS volumes (a profile sets a volume's \
                 diagnostics options)",
                "run the benchmark without --gluster-profile, or add \"gluster-volume\" to `kinds` in the \
                 agent's policy file",
            ));
        }
        simple_name("gluster volume name", volume, 64, "")
    }

    /// Whether a fault's measure may ask how far GlusterFS volume `volume`'s heal has got (it
    /// runs `gluster volume heal VOL info summary`, which asks every brick): granted with
    /// faults, a volume by name.
    pub fn check_fault_heal(&self, volume: &str) -> Result<(), PolicyError> {
        self.faults_granted(volume)?;
        simple_name("gluster volume name", volume, 64, "")
    }

    fn faults_granted(&self, value: &str) -> Result<(), PolicyError> {
        if self.faults {
            return Ok(());
        }
        Err(PolicyError::new(
            "faults-off",
            value,
            "this node's policy does not let a benchmark inject faults (`pvfsctl bench --fault`)",
            "that is a grant an operator makes on purpose: add `faults = true` to the agent's policy file \
             on each node a fault may hit",
        ))
    }

    /// Whether a benchmark may run in `dir` on this node (`bench-dir`): see the module's rules.
    pub fn check_bench_dir(&self, dir: &str, root: &Root) -> Result<(), PolicyError> {
        self.data_path(dir, "a benchmark directory").map_err(|e| PolicyError {
            fix: format!(
                "{}; benchmarks run in the cluster's mount or the cluster file's [bench] mount",
                e.fix
            ),
            ..e
        })?;
        let top = dir.split('/').nth(1).map(|c| format!("/{c}")).unwrap_or_default();
        if top == dir || !root.is_dir(&top) {
            return Err(PolicyError::new(
                "bench-dir",
                dir,
                if top == dir {
                    format!("{dir} is a directory directly under /, which a benchmark would make")
                } else {
                    format!("{top} does not exist, and a benchmark never makes a directory directly under /")
                },
                "run the benchmark in the cluster's mount (mounted: `pvfsctl up` first) or a directory under                  an existing one",
            ));
        }
        no_symlink(root, dir)
    }

    /// The policy, one line per rule that a site can change, for `--check-config`.
    pub fn describe(&self) -> Vec<String> {
        let list = |items: &mut dyn Iterator<Item = &String>| items.cloned().collect::<Vec<_>>().join(", ");
        vec![
            match &self.kinds {
                Some(kinds) => format!("step kinds: {} (and gates)", list(&mut kinds.iter())),
                None => "step kinds: all".to_owned(),
            },
            match &self.devices {
                Some(devices) => format!("devices: {}", list(&mut devices.iter())),
                None => "devices: any canonical path under /dev".to_owned(),
            },
            match &self.data_roots {
                Some(roots) => format!("data roots: {}", list(&mut roots.iter())),
                None => format!("data roots: anything outside / and {}", SYSTEM_TREES.join(" ")),
            },
            format!("repositories: {}", list(&mut self.repositories.iter())),
            format!(
                "unsigned repositories: {}",
                if self.refuse_unsigned {
                    "refused"
                } else {
                    "only where the cluster file says gpgcheck = false"
                }
            ),
            format!("services: {}", list(&mut self.services.iter())),
            format!(
                "mpi ssh (root ssh between clients for mpirun): {}",
                if self.mpi_ssh { "allowed" } else { "refused (mpi_ssh = true allows it)" }
            ),
            format!(
                "faults (bench --fault killing this node's bricks, cutting its network, stopping its services): {}",
                if self.faults { "allowed" } else { "refused (faults = true allows it)" }
            ),
        ]
    }

    /// A directory, a mount point, a brick, a target: canonical, outside the system trees,
    /// under a site's data roots.
    pub(crate) fn data_path(&self, path: &str, what: &str) -> Result<(), PolicyError> {
        canonical(path)?;
        not_system(path).map_err(|e| PolicyError { problem: format!("{} ({what})", e.problem), ..e })?;
        if let Some(roots) = &self.data_roots
            && !roots.iter().any(|root| under(path, root))
        {
            return Err(PolicyError::new(
                "data-root",
                path,
                format!("{path} ({what}) is outside this node's data roots"),
                format!(
                    "use a path under {}, or add a root to `data_roots` in the agent's policy file",
                    roots.join(", ")
                ),
            ));
        }
        Ok(())
    }
}

/// The runner's questions are the policy's checks with the node.
impl Guard for Policy {
    fn check_unit_on(&self, steps: &[Step], root: &Root) -> Result<(), StepRefused> {
        Policy::check_unit_on(self, steps, root)
    }

    fn check_step_on(&self, step: &Step, root: &Root, made: &[String]) -> Result<(), PolicyError> {
        Policy::check_step_on(self, step, root, made)
    }

    fn check_action_on(&self, step_kind: &str, action: &Action, root: &Root) -> Result<(), PolicyError> {
        Policy::check_action_on(self, step_kind, action, root)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe().join("\n"))
    }
}

#[cfg(test)]
mod tests;
