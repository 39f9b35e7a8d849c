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
use pvfs_steps::{Action, Gate, GateKind, Guard, MadeDevices, Step};
/// A refusal, and a unit's: the step runner's vocabulary ([`Guard`]), which this policy
/// answers in.
pub use pvfs_steps::{PolicyError, StepRefused};
use std::collections::{BTreeSet, HashMap};
use std::fmt;

/// Directories no step may create things in, mount on, or use as data paths (and `/` itself);
/// the list is `pvfs-host`'s, which the cluster-file validator shares.
pub use pvfs_host::paths::SYSTEM_TREES;
use pvfs_host::paths::{is_system, under};

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

/// Where a `gpgkey` may also point: the keys a distribution's release packages install
/// (yum's, then apt's keyring packages' and keyrings an administrator placed).
const LOCAL_GPG_KEYS: &[&str] =
    &["file:///etc/pki/rpm-gpg/", "file:///usr/share/keyrings/", "file:///etc/apt/keyrings/"];

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

/// The file BeeGFS's client service reads its mounts from.
const BEEGFS_MOUNTS: &str = "/etc/beegfs/beegfs-mounts.conf";

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

/// File systems `Mkfs` makes.
const MKFS_TYPES: &[&str] = &["xfs", "ext4"];

/// File systems `Mount` mounts.
const MOUNT_TYPES: &[&str] = &["xfs", "ext4", "lustre", "glusterfs", "beegfs"];

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
            cluster_hosts: None,
        }
    }
}

impl Policy {
    /// The default policy narrowed by `site`; every unusable value is reported.
    pub fn new(site: Site) -> Result<Policy, Vec<SiteError>> {
        let mut errors = Vec::new();
        let mut policy =
            Policy { refuse_unsigned: site.refuse_unsigned, mpi_ssh: site.mpi_ssh, ..Policy::default() };
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

    /// The pure rules for one step (everything but what needs the node: symbolic links, the
    /// site's device list). See [`Policy::check_step_on`].
    pub fn check_step(&self, step: &Step) -> Result<(), PolicyError> {
        if !matches!(step, Step::Gate(_))
            && let Some(kinds) = &self.kinds
            && !kinds.contains(step.kind())
        {
            return Err(PolicyError::new(
                "kind-not-allowed",
                step.kind(),
                format!("this node's policy does not run {} steps", step.kind()),
                "run this role on another node, or add the kind to `kinds` in the agent's policy file",
            ));
        }
        match step {
            Step::Packages(p) => {
                for package in p.apt.iter().chain(&p.rpm) {
                    package_name(&package.name)?;
                    if let Some(version) = &package.version {
                        package_version(&package.name, version)?;
                    }
                }
                for repo in &p.repos {
                    self.repo(repo)?;
                }
                Ok(())
            }
            Step::File(f) => self.file_write(&f.path, &f.contents, f.mode),
            Step::ConfigKeys(c) => {
                beegfs_conf(&c.path)?;
                for (key, value) in &c.keys {
                    self.config_key(&c.path, key, value)?;
                }
                Ok(())
            }
            Step::Directory(d) => self.mkdir(&d.path, d.mode),
            Step::Service(s) => {
                self.service(&s.unit)?;
                s.configs.iter().try_for_each(|c| canonical(c))
            }
            Step::Raid0(r) => {
                md_device(&r.device)?;
                for member in &r.members {
                    device_path(member)?;
                }
                if let Some(extra) = r.wipe.iter().find(|w| !r.members.contains(w)) {
                    return Err(PolicyError::new(
                        "wipe",
                        extra,
                        format!("{extra} is listed for wiping but is not a member of {}", r.device),
                        "list only the array's members under `wipe`",
                    ));
                }
                if let Some(conf) = &r.conf {
                    mdadm_conf(conf)?;
                }
                Ok(())
            }
            Step::LvmThin(l) => {
                device_path(&l.pv)?;
                for (what, name) in
                    [("volume group", &l.vg), ("thin pool", &l.pool), ("logical volume", &l.lv)]
                {
                    lvm_name(what, name)?;
                }
                size(&l.pool_size)?;
                size(&l.virtual_size)?;
                for value in [&l.chunk, &l.data_alignment, &l.extent_size].into_iter().flatten() {
                    size(value)?;
                }
                Ok(())
            }
            Step::Mkfs(m) => {
                device_path(&m.device)?;
                one_of("fstype", &m.fstype, MKFS_TYPES, "file system")?;
                if let Some(label) = &m.label {
                    simple_name("file system label", label, 16, "")?;
                }
                Ok(())
            }
            Step::LustreTarget(t) => {
                device_path(&t.device)?;
                fsname(&t.fsname)?;
                if let Some(mgs) = &t.mgsnode {
                    self.cluster_nids(mgs)?;
                }
                // ZFS targets name a pool/dataset, not a device: not something pvfs plans.
                one_of("fstype", &t.backfstype, &["ldiskfs"], "Lustre backing file system")
            }
            Step::LustreStripe(s) => {
                self.data_path(&s.dir, "a Lustre directory to stripe")?;
                stripe(s.count, s.size)
            }
            Step::LctlParam(p) => lctl_param(&p.name, &p.value),
            Step::Mount(m) => {
                self.mount(m)?;
                client_mount_flags(m)
            }
            Step::BlockQueue(q) => {
                device_path(&q.device)?;
                for member in &q.members {
                    device_path(member)?;
                }
                udev_rule_path(&q.rule_path())?;
                if let Some(scheduler) = &q.scheduler
                    && (scheduler.is_empty()
                        || scheduler.len() > 32
                        || !scheduler
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
                {
                    return Err(PolicyError::new(
                        "queue-value",
                        scheduler,
                        format!("{scheduler:?} is not an I/O scheduler name"),
                        "use one the kernel lists in /sys/block/DEV/queue/scheduler (mq-deadline, none, …)",
                    ));
                }
                Ok(())
            }
            Step::GlusterPeers(p) => {
                p.peers.iter().try_for_each(|peer| self.cluster_host("gluster peer", peer))
            }
            Step::GlusterVolume(v) => {
                simple_name("gluster volume name", &v.name, 64, "")?;
                for brick in &v.bricks {
                    self.brick(brick)?;
                }
                for (key, value) in &v.options {
                    self.gluster_option(key, value)?;
                }
                Ok(())
            }
            Step::BeegfsSetup(b) => {
                if let Some(path) = &b.path {
                    self.data_path(path, "a BeeGFS data directory")?;
                }
                if let Some(mgmt) = &b.mgmt_host {
                    self.cluster_host("BeeGFS management host", mgmt)?;
                }
                Ok(())
            }
            Step::Gate(gate) => self.gate(gate),
            Step::Unmount(u) => self.mount(&u.0),
            Step::ServiceStopped(s) => self.service(&s.unit),
            Step::GlusterVolumeGone(v) => simple_name("gluster volume name", &v.name, 64, ""),
            Step::GlusterPeersDetached(p) => {
                p.peers.iter().try_for_each(|peer| self.cluster_host("gluster peer", peer))
            }
            Step::MpiSsh(m) => self.mpi_ssh(m),
            Step::Firewall(f) => firewall_ports(f),
            Step::MpiSshGone(g) => simple_name("cluster name", &g.cluster, 64, ""),
            Step::WipeTarget(w) => {
                for disk in &w.disks {
                    device_path(disk)?;
                }
                if let Some(md) = &w.array {
                    md_device(md)?;
                }
                if let Some(vg) = &w.vg {
                    lvm_name("volume group", vg)?;
                }
                Ok(())
            }
        }
    }

    /// [`Policy::check_step`], plus the rules that need the node: no symbolic link on the
    /// paths the step writes, creates or mounts on, and the site's device list (checked
    /// against each device as given and as resolved under `root`). `made` lists the devices
    /// earlier steps of the same unit create (`/dev/md0`, `/dev/vg/lv`).
    pub fn check_step_on(&self, step: &Step, root: &Root, made: &[String]) -> Result<(), PolicyError> {
        self.check_step(step)?;
        for path in touched_paths(step) {
            no_symlink(root, &path)?;
        }
        if let Step::File(f) = step {
            agents_own(root, &f.path)?;
        }
        if let Some(globs) = &self.devices {
            for device in consumed_devices(step) {
                if made.contains(&device) {
                    continue;
                }
                let resolved = resolve(root, &device);
                if !globs.iter().any(|g| glob_match(g, &device) || glob_match(g, &resolved)) {
                    let shown =
                        if resolved == device { device.clone() } else { format!("{device} (= {resolved})") };
                    return Err(PolicyError::new(
                        "device-not-allowed",
                        &device,
                        format!("this node's policy does not allow {} on {shown}", step.kind()),
                        format!(
                            "name one of the devices the agent's policy file lists ({}), or add it to `devices` there",
                            globs.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every step of a unit, in order, with the node's checks: the first refusal, naming the
    /// step. Devices an earlier step makes from allowed ones (arrays, thin volumes) are
    /// allowed for the steps after it.
    pub fn check_unit_on(&self, steps: &[Step], root: &Root) -> Result<(), StepRefused> {
        restart_order(steps)?;
        let made = MadeDevices::of(steps);
        for (index, step) in steps.iter().enumerate() {
            self.check_step_on(step, root, made.before(index)).map_err(|error| StepRefused {
                index,
                step: step.to_string(),
                error,
            })?;
        }
        Ok(())
    }

    /// The pure rules for every step of a unit (what can be said without the node).
    pub fn check_unit(&self, steps: &[Step]) -> Result<(), StepRefused> {
        restart_order(steps)?;
        for (index, step) in steps.iter().enumerate() {
            self.check_step(step).map_err(|error| StepRefused { index, step: step.to_string(), error })?;
        }
        Ok(())
    }

    /// The backstop: may a step of kind `step_kind` perform `action`?
    pub fn check_action(&self, step_kind: &str, action: &Action) -> Result<(), PolicyError> {
        if let Action::Run(command) | Action::Destroy { command, .. } = action {
            for word in std::iter::once(&command.program).chain(&command.args) {
                no_control(word, "command argument")?;
            }
        }
        match (step_kind, action) {
            ("file", Action::Write { path, contents, mode }) => self.file_write(path, contents, *mode),
            ("packages", Action::Write { path, contents, mode }) => {
                let within = |dir: &str, suffix: &str| {
                    path.strip_prefix(dir)
                        .and_then(|n| n.strip_prefix('/'))
                        .and_then(|n| n.strip_suffix(suffix))
                };
                if let Some(name) = within("/etc/yum.repos.d", ".repo") {
                    repo_name(name)?;
                } else if let Some(name) =
                    within(pvfs_steps::APT_SOURCES, ".sources").and_then(|n| n.strip_prefix("pvfs-"))
                {
                    repo_name(name)?;
                    deb822_source(path, contents)?;
                } else if let Some(name) =
                    within(pvfs_steps::APT_KEYRINGS, ".asc").and_then(|n| n.strip_prefix("pvfs-"))
                {
                    repo_name(name)?;
                    armored_key(path, contents)?;
                } else {
                    return Err(misplaced(step_kind, path));
                }
                plain_mode(path, *mode)
            }
            // The one directory a packages step makes, as apt's package ships it.
            ("packages", Action::Mkdir { path, mode }) if path == pvfs_steps::APT_KEYRINGS => {
                if *mode == 0o755 {
                    Ok(())
                } else {
                    Err(PolicyError::new(
                        "dir-mode",
                        &format!("{mode:04o}"),
                        format!("{path} is made 0755 (apt's own mode for it), not {mode:04o}"),
                        "this is a bug in pvfs; report it",
                    ))
                }
            }
            ("config-keys" | "beegfs-setup", Action::Write { path, mode, .. }) => {
                beegfs_conf(path)?;
                plain_mode(path, *mode)
            }
            ("mount" | "unmount", Action::Write { path, mode, .. }) if path == "/etc/fstab" => {
                plain_mode(path, *mode)
            }
            // `--` before every positional word that came from the cluster file, where the
            // tool takes it (each step's builder cites the tool's source); the form without it
            // is refused, so a word that starts with `-` can never become an option.
            ("unmount", Action::Run(command)) => {
                program(step_kind, &command.program)?;
                match command.args.as_slice() {
                    [dd, target] if dd == "--" => self.data_path(target, "a mount point"),
                    _ => {
                        Err(bug_command(step_kind, command, "only unmounts one mount point (umount -- DIR)"))
                    }
                }
            }
            ("service-stopped", Action::Run(command)) => {
                program(step_kind, &command.program)?;
                match command.args.as_slice() {
                    [verb, unit] if verb == "stop" || verb == "disable" => self.service(unit),
                    _ => Err(bug_command(step_kind, command, "only stops or disables a unit")),
                }
            }
            ("wipe", Action::Run(command)) => {
                program(step_kind, &command.program)?;
                match (command.program.as_str(), command.args.as_slice()) {
                    ("vgchange", [flag, n, dd, vg]) if flag == "--activate" && n == "n" && dd == "--" => {
                        lvm_name("volume group", vg)
                    }
                    ("mdadm", [flag, md]) if flag == "--stop" => md_device(md),
                    _ => Err(bug_command(
                        step_kind,
                        command,
                        "only deactivates its volume group or stops its array",
                    )),
                }
            }
            ("wipe", Action::Destroy { command, .. }) => {
                program(step_kind, &command.program)?;
                match (command.program.as_str(), command.args.as_slice()) {
                    ("wipefs", [flag, dd, device]) if flag == "--all" && dd == "--" => device_path(device),
                    // mdadm takes no `--` (block.rs, "mdadm and `--`"): the device grammar
                    // (canonical, under /dev) is what keeps it from being an option.
                    ("mdadm", [flag, device]) if flag == "--zero-superblock" => device_path(device),
                    _ => Err(bug_command(
                        step_kind,
                        command,
                        "only erases signatures (wipefs --all, mdadm --zero-superblock)",
                    )),
                }
            }
            ("wipe", Action::Zero { device }) => device_path(&device.path),
            ("mpi-ssh" | "mpi-ssh-gone", Action::Write { path, contents, mode }) => {
                mpi_ssh_write(step_kind, path, contents, *mode)
            }
            ("mpi-ssh", Action::Mkdir { path, mode })
                if (path == pvfs_steps::MPI_DIR || path == pvfs_steps::ROOT_SSH_DIR) && *mode == 0o700 =>
            {
                Ok(())
            }
            ("mpi-ssh-gone", Action::Remove { path })
                if path == pvfs_steps::MPI_KEY || path == pvfs_steps::MPI_KNOWN_HOSTS =>
            {
                Ok(())
            }
            ("directory" | "mount", Action::Mkdir { path, mode }) => self.mkdir(path, *mode),
            ("raid0", Action::PersistMdadm { device, conf }) => {
                md_device(device)?;
                mdadm_conf(conf)
            }
            ("block-queue", Action::Attribute { path, .. }) => queue_attribute(path),
            ("block-queue", Action::Write { path, contents, mode }) => {
                udev_rule_path(path)?;
                udev_queue_rule(path, contents)?;
                plain_mode(path, *mode)
            }
            ("service", Action::Run(command)) => {
                program(step_kind, &command.program)?;
                match command.args.as_slice() {
                    [verb, unit] if verb == "enable" || verb == "start" || verb == "restart" => {
                        self.service(unit)
                    }
                    _ => Err(PolicyError::new(
                        "program",
                        &command.to_string(),
                        format!("a service step only enables, starts or restarts a unit, not `{command}`"),
                        "this is a bug in pvfs; report it",
                    )),
                }
            }
            ("packages", Action::Run(command)) => {
                program(step_kind, &command.program)?;
                // apt reads a changed source only on `apt-get update`, which takes no argument.
                if command.program == "apt-get" && command.args == ["update"] {
                    return Ok(());
                }
                if command.args.first().map(String::as_str) != Some("install") {
                    return Err(PolicyError::new(
                        "program",
                        &command.to_string(),
                        format!("a packages step only installs, not `{command}`"),
                        "this is a bug in pvfs; report it",
                    ));
                }
                Ok(())
            }
            ("raid0", Action::Run(command) | Action::Destroy { command, .. }) => {
                program(step_kind, &command.program)?;
                raid0_command(command)
            }
            ("firewall", Action::Run(command)) => {
                program(step_kind, &command.program)?;
                firewall_command(command)
            }
            ("lustre-stripe", Action::Run(command)) => {
                program(step_kind, &command.program)?;
                match command.args.as_slice() {
                    [verb, c, _, s, _, dd, dir]
                        if verb == "setstripe" && c == "-c" && s == "-S" && dd == "--" =>
                    {
                        self.data_path(dir, "a Lustre directory to stripe")
                    }
                    _ => Err(bug_command(
                        step_kind,
                        command,
                        "only sets a directory's default layout (lfs setstripe -c N -S SIZE -- DIR)",
                    )),
                }
            }
            (_, Action::Run(command)) => program(step_kind, &command.program),
            // Destroying is for the block steps only, with their own programs; the devices
            // themselves were checked with the step (paths, the site's `devices`) and are
            // proven unused and empty again right before the command.
            // mkfs.*, mkfs.lustre and pvcreate end with `-- DEVICE`; nothing else may follow
            // the options.
            ("lvm-thin" | "mkfs" | "lustre-target", Action::Destroy { command, .. }) => {
                program(step_kind, &command.program)?;
                match command.args.as_slice() {
                    [.., dd, device] if dd == "--" => device_path(device),
                    _ => Err(bug_command(step_kind, command, "ends its options with `--` before the device")),
                }
            }
            (_, other) => Err(PolicyError::new(
                "action-kind",
                &other.to_string(),
                format!("a {step_kind} step may not `{other}`"),
                "this is a bug in pvfs (a step produced an action outside its place); report it",
            )),
        }
    }

    /// [`Policy::check_action`], plus no symbolic link on the path the action writes or
    /// creates.
    pub fn check_action_on(&self, step_kind: &str, action: &Action, root: &Root) -> Result<(), PolicyError> {
        self.check_action(step_kind, action)?;
        if let ("file", Action::Write { path, .. }) = (step_kind, action) {
            agents_own(root, path)?;
        }
        match action {
            Action::Write { path, .. } | Action::Mkdir { path, .. } | Action::Remove { path } => {
                no_symlink(root, path)
            }
            Action::PersistMdadm { conf, .. } => no_symlink(root, conf),
            Action::Run(_) | Action::Destroy { .. } | Action::Attribute { .. } | Action::Zero { .. } => {
                Ok(())
            }
        }
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
        ]
    }

    /// `mpi-ssh`: only where the site opted in; every value by its grammar.
    fn mpi_ssh(&self, m: &pvfs_steps::MpiSsh) -> Result<(), PolicyError> {
        if !self.mpi_ssh {
            return Err(PolicyError::new(
                "mpi-ssh-off",
                &m.cluster,
                "this node's policy does not give root ssh between the clients to mpirun ([bench] mpi_ssh)",
                "that is a grant an operator makes on purpose: add `mpi_ssh = true` to the agent's policy file \
                 (/etc/pvfs/policy.toml) on every client and restart the agent, or set up ssh for mpirun yourself \
                 and leave mpi_ssh out of the cluster file",
            ));
        }
        simple_name("cluster name", &m.cluster, 64, "")?;
        ssh_public_key("the cluster's MPI public key", &m.public_key)?;
        openssh_private_key(&m.private_key)?;
        for known in &m.known_hosts {
            ssh_public_key("a client's host key", &known.key)?;
            if known.names.is_empty() {
                return Err(PolicyError::new(
                    "mpi-ssh",
                    &known.key,
                    "a known host without a name",
                    "this is a bug in pvfs; report it",
                ));
            }
            for name in &known.names {
                host("known host", name)?;
            }
        }
        Ok(())
    }

    fn repo(&self, repo: &pvfs_steps::Repo) -> Result<(), PolicyError> {
        repo_name(&repo.name)?;
        self.repo_url(repo, "baseurl", &repo.baseurl)?;
        for word in repo.suites.iter().chain(&repo.components) {
            apt_word(word)?;
        }
        if let Some(key) = &repo.key {
            if !repo.is_apt() {
                return Err(PolicyError::new(
                    "repo-url",
                    &repo.name,
                    format!(
                        "repository {} ships a key but names no suites (only apt repositories do)",
                        repo.name
                    ),
                    "this is a bug in pvfs; report it",
                ));
            }
            armored_key(&repo.name, key)?;
        }
        if let Some(key) = &repo.gpgkey {
            if repo.is_apt() && !key.starts_with("file://") {
                return Err(PolicyError::new(
                    "repo-url",
                    key,
                    format!(
                        "apt does not fetch signing keys, and gpgkey {key} of repository {} is a download",
                        repo.name
                    ),
                    "save the key next to the cluster file and name it with gpgkey_file",
                ));
            }
            if !LOCAL_GPG_KEYS.iter().any(|prefix| key.starts_with(prefix)) {
                self.repo_url(repo, "gpgkey", key)?;
            } else {
                url_chars(key)?;
                canonical(&key["file://".len()..])?;
            }
        }
        if !repo.gpgcheck && self.refuse_unsigned {
            return Err(PolicyError::new(
                "repo-unsigned",
                &repo.name,
                format!(
                    "repository {} has gpgcheck = false, and this node's policy refuses unsigned repositories",
                    repo.name
                ),
                "use a signed repository (gpgcheck on, with its gpgkey), or ask the node's administrator",
            ));
        }
        Ok(())
    }

    fn repo_url(&self, repo: &pvfs_steps::Repo, what: &str, url: &str) -> Result<(), PolicyError> {
        url_chars(url)?;
        let literal = self.repositories.iter().any(|p| url.starts_with(p.as_str()));
        if url.starts_with("http://") && !repo.allow_http {
            return Err(PolicyError::new(
                "repo-url",
                url,
                format!(
                    "{what} {url} of repository {} is plain http: anyone on the path can swap the packages",
                    repo.name
                ),
                "use https, or say allow_http = true in the cluster file's [[repo]] if this is really wanted",
            ));
        }
        if !url.starts_with("https://") && !url.starts_with("http://") && !literal {
            return Err(PolicyError::new(
                "repo-url",
                url,
                format!("{what} {url} of repository {} is not an https URL", repo.name),
                "use https (other schemes only where the agent's policy file lists the prefix)",
            ));
        }
        let scheme_less = |u: &str| u.split_once("://").map_or(u.to_owned(), |(_, rest)| rest.to_owned());
        let allowed = self.repositories.iter().any(|p| scheme_less(url).starts_with(&scheme_less(p)));
        if !allowed {
            return Err(PolicyError::new(
                "repo-prefix",
                url,
                format!("{what} {url} of repository {} is not under an allowed repository prefix", repo.name),
                format!(
                    "use one of {}, or add your mirror to `repositories` in the agent's policy file \
                     (a repository is root on the node: its packages' scripts run as root)",
                    self.repositories.join(", ")
                ),
            ));
        }
        Ok(())
    }

    fn service(&self, unit: &str) -> Result<(), PolicyError> {
        unit_name(unit)?;
        let bare = unit.strip_suffix(".service").unwrap_or(unit);
        if !self.services.contains(bare) {
            return Err(PolicyError::new(
                "service-unit",
                unit,
                format!("{unit} is not a unit pvfs manages"),
                format!(
                    "pvfs starts only {}; add the unit to `services` in the agent's policy file if this node should",
                    self.services.iter().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        Ok(())
    }

    /// A directory, a mount point, a brick, a target: canonical, outside the system trees,
    /// under a site's data roots.
    fn data_path(&self, path: &str, what: &str) -> Result<(), PolicyError> {
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

    fn mkdir(&self, path: &str, mode: u32) -> Result<(), PolicyError> {
        self.data_path(path, "a directory")?;
        if mode & !0o7777 != 0 || mode & 0o6000 != 0 || mode & 0o002 != 0 {
            return Err(PolicyError::new(
                "dir-mode",
                &format!("{mode:04o}"),
                format!(
                    "directory {path} with mode {mode:04o}: setuid, setgid and world-writable directories are never made by pvfs"
                ),
                "use a mode such as 0755 or 0750",
            ));
        }
        Ok(())
    }

    /// A whole file written by a `File` step (or its action).
    fn file_write(&self, path: &str, contents: &str, mode: u32) -> Result<(), PolicyError> {
        canonical(path)?;
        if let Some(name) = path.strip_prefix("/etc/modprobe.d/") {
            simple_name("modprobe file", name.strip_suffix(".conf").unwrap_or("-"), 64, path).map_err(
                |e| PolicyError { rule: "file-place", fix: "write /etc/modprobe.d/NAME.conf".into(), ..e },
            )?;
            modprobe_contents(path, contents)?;
        } else if path == BEEGFS_MOUNTS {
            self.beegfs_mounts(contents)?;
        } else if path == BEEGFS_AUTH_FILE {
            if mode & 0o077 != 0 {
                return Err(PolicyError::new(
                    "file-mode",
                    &format!("{mode:04o}"),
                    format!("{path} holds BeeGFS's shared secret: mode {mode:04o} lets others read it"),
                    "use 0400 (root only)",
                ));
            }
        } else if path == BEEGFS_INTERFACES || path == BEEGFS_NET_FILTER {
            beegfs_list(path, contents)?;
        } else if path != "/etc/lnet.conf" {
            if let Some(fix) = reserved(path) {
                return Err(PolicyError::new(
                    "file-place",
                    path,
                    format!("{path} may not be written by a file step"),
                    fix,
                ));
            }
            if path.matches('/').count() == 1 {
                return Err(PolicyError::new(
                    "file-place",
                    path,
                    format!("{path} is a file directly under /"),
                    "write files under the directories the cluster file names (mount points, targets), never in /",
                ));
            }
            self.data_path(path, "a file").map_err(|e| {
                if e.rule == "system-tree" {
                    PolicyError::new(
                        "file-place",
                        path,
                        format!("{path} is not a place a file step may write"),
                        "file steps write /etc/modprobe.d/NAME.conf, /etc/lnet.conf, /etc/beegfs/beegfs-mounts.conf, \
                         BeeGFS's connauthfile, interfaces and netfilter, and files under data paths; nothing else \
                         in the system trees",
                    )
                } else {
                    e
                }
            })?;
        }
        if contents.contains('\0') {
            return Err(PolicyError::new(
                "file-content",
                path,
                format!("{path}: contents hold a NUL byte"),
                "write text",
            ));
        }
        plain_mode(path, mode)
    }

    fn beegfs_mounts(&self, contents: &str) -> Result<(), PolicyError> {
        for line in contents.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let words: Vec<&str> = line.split_whitespace().collect();
            let ok = match words.as_slice() {
                [mount, conf] => {
                    self.data_path(mount, "a BeeGFS mount point")?;
                    conf.starts_with("/etc/beegfs/beegfs-client")
                        && conf.ends_with(".conf")
                        && canonical(conf).is_ok()
                }
                _ => false,
            };
            if !ok {
                return Err(PolicyError::new(
                    "file-content",
                    line,
                    format!("{BEEGFS_MOUNTS}: {line:?} is not `MOUNTPOINT /etc/beegfs/beegfs-client.conf`"),
                    "write one mount point and its client configuration per line",
                ));
            }
        }
        Ok(())
    }

    fn config_key(&self, path: &str, key: &str, value: &str) -> Result<(), PolicyError> {
        let key_ok = !key.is_empty()
            && key.len() <= 64
            && key.starts_with(|c: char| c.is_ascii_alphabetic())
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !key_ok {
            return Err(PolicyError::new(
                "config-keys",
                key,
                format!("{key:?} is not a BeeGFS configuration key (in {path})"),
                "keys are identifiers such as tuneNumWorkers",
            ));
        }
        if value.chars().any(char::is_control) {
            return Err(PolicyError::new(
                "config-keys",
                value,
                format!("the value of {key} in {path} holds a control character"),
                "write the value on one line",
            ));
        }
        self.setting_paths(
            "config-keys",
            pvfs_host::paths::Tool::Beegfs,
            key,
            value,
            "BeeGFS logs go under /var/log/beegfs (or /var/log/beegfs-NAME.log), files it reads under /etc/beegfs \
             or a data path, its data under a data path",
        )
    }

    /// The one rule for a setting whose value a daemon uses as a path (`pvfs_host::paths`):
    /// absolute, canonical, in its kind's place — refused under `rule` with `fix` — and data
    /// paths within the site's data roots too.
    fn setting_paths(
        &self,
        rule: &'static str,
        tool: pvfs_host::paths::Tool,
        key: &str,
        value: &str,
        fix: &str,
    ) -> Result<(), PolicyError> {
        let paths = pvfs_host::paths::setting_paths(tool, key, value)
            .map_err(|problem| PolicyError::new(rule, value, problem, fix))?;
        for p in paths.iter().filter(|p| p.place == pvfs_host::paths::Place::Data) {
            self.data_path(p.path, &format!("a path in the setting {key}"))?;
        }
        Ok(())
    }

    fn mount(&self, m: &pvfs_steps::Mount) -> Result<(), PolicyError> {
        one_of("mount-fstype", &m.fstype, MOUNT_TYPES, "mount type")?;
        self.data_path(&m.target, "a mount point")?;
        let bad_source = |expected: &str| {
            PolicyError::new(
                "mount-source",
                &m.source,
                format!("{:?} is not a {} source", m.source, m.fstype),
                format!("a {} mount's source is {expected}", m.fstype),
            )
        };
        match m.fstype.as_str() {
            "xfs" | "ext4" => device_path(&m.source).map_err(|_| bad_source("a device path under /dev"))?,
            "lustre" if m.source.starts_with('/') => {
                device_path(&m.source).map_err(|_| bad_source("a device path, or NID[:NID…]:/fsname"))?;
            }
            "lustre" => {
                let (nids, fs) = m.source.split_once(":/").ok_or_else(|| bad_source("NID[:NID…]:/fsname"))?;
                nid_list(nids).map_err(|_| bad_source("NID[:NID…]:/fsname"))?;
                fsname(fs).map_err(|_| bad_source("NID[:NID…]:/fsname"))?;
            }
            "glusterfs" => {
                let (server, volume) = m.source.split_once(":/").ok_or_else(|| bad_source("HOST:/VOLUME"))?;
                host("gluster server", server).map_err(|_| bad_source("HOST:/VOLUME"))?;
                simple_name("gluster volume", volume, 64, "").map_err(|_| bad_source("HOST:/VOLUME"))?;
            }
            _ if m.source != "beegfs_nodev" => return Err(bad_source("beegfs_nodev")),
            _ => {}
        }
        mount_options(&m.options)?;
        // The servers, by grammar above, must be the cluster's: the source's, and glusterfs's
        // fallback servers for the volume file.
        let in_cluster = |e: PolicyError| PolicyError { rule: "mount-source", ..e };
        match (m.fstype.as_str(), m.source.split_once(":/")) {
            ("lustre", Some((nids, _))) => self.cluster_nids(nids).map_err(in_cluster)?,
            ("glusterfs", Some((server, _))) => {
                self.cluster_host("gluster server", server).map_err(in_cluster)?
            }
            _ => {}
        }
        for option in m.options.split(',') {
            if let Some(("backup-volfile-servers" | "backupvolfile-server", hosts)) = option.split_once('=') {
                for server in hosts.split(':') {
                    self.cluster_host("gluster server", server).map_err(in_cluster)?;
                }
            }
        }
        Ok(())
    }

    /// `value` names a host (by grammar) of this unit's cluster, when the unit names its
    /// cluster (`cluster-host`).
    fn cluster_host(&self, what: &str, value: &str) -> Result<(), PolicyError> {
        host(what, value)?;
        match &self.cluster_hosts {
            Some(hosts) if !hosts.contains(value) => Err(PolicyError::new(
                "cluster-host",
                value,
                if hosts.is_empty() {
                    format!(
                        "{value} ({what}) is not a node of this unit's cluster: the request names no cluster nodes"
                    )
                } else {
                    format!(
                        "{value} ({what}) is not a node of this unit's cluster ({})",
                        hosts.iter().cloned().collect::<Vec<_>>().join(", ")
                    )
                },
                "name a node of the cluster file by its address: pvfs mounts from, peers with and serves only \
                 the cluster's own nodes",
            )),
            _ => Ok(()),
        }
    }

    /// NIDs (`ADDR@NET`, `:`/`,`-separated) whose addresses are hosts of this unit's cluster
    /// (`0@lo`, the node itself, is always one).
    fn cluster_nids(&self, value: &str) -> Result<(), PolicyError> {
        nid_list(value)?;
        for one in value.split([':', ',']) {
            match one.split_once('@') {
                Some(("0", _)) => {}
                Some((addr, _)) => self.cluster_host("Lustre NID", addr)?,
                None => {}
            }
        }
        Ok(())
    }

    fn brick(&self, brick: &str) -> Result<(), PolicyError> {
        let Some((server, path)) = brick.split_once(":/") else {
            return Err(PolicyError::new(
                "name",
                brick,
                format!("{brick:?} is not a brick"),
                "bricks are HOST:/PATH, the path a directory under the brick's mount",
            ));
        };
        self.cluster_host("brick host", server)?;
        self.data_path(&format!("/{path}"), "a brick")
    }

    fn gluster_option(&self, key: &str, value: &str) -> Result<(), PolicyError> {
        let key_ok = !key.is_empty()
            && key.len() <= 128
            && key.starts_with(|c: char| c.is_ascii_alphabetic())
            && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
        if !key_ok {
            return Err(PolicyError::new(
                "gluster-option",
                key,
                format!("{key:?} is not a gluster volume option"),
                "option keys look like performance.cache-size",
            ));
        }
        if value.is_empty() || value.len() > 1024 || value.chars().any(char::is_control) {
            return Err(PolicyError::new(
                "gluster-option",
                value,
                format!("the value of {key} is empty, too long or holds a control character"),
                "give a one-line value",
            ));
        }
        self.setting_paths(
            "gluster-option",
            pvfs_host::paths::Tool::Gluster,
            key,
            value,
            "gluster logs go under /var/log/glusterfs, files it reads under /etc/glusterfs, /etc/ssl or a data \
             path, its data under a data path",
        )
    }

    fn gate(&self, gate: &Gate) -> Result<(), PolicyError> {
        match &gate.kind {
            GateKind::GlusterPeersInCluster { peers } => {
                peers.iter().try_for_each(|p| self.cluster_host("gluster peer", p))
            }
            GateKind::GlusterBricksOnline { volume, bricks } => {
                simple_name("gluster volume name", volume, 64, "")?;
                bricks.iter().try_for_each(|b| self.brick(b))
            }
            GateKind::GlusterRebalanced { volume } => simple_name("gluster volume name", volume, 64, ""),
            GateKind::LnetPing { nid: n } | GateKind::LnetNid { nid: n } => {
                nid(n)?;
                self.cluster_nids(n)
            }
            GateKind::LfsCheckServers
            | GateKind::BeegfsMgmtdReachable
            | GateKind::BeegfsCheckServers
            | GateKind::BeegfsTargetsGood { .. }
            | GateKind::KernelBuildTree => Ok(()),
            GateKind::Writable { dir } => self.data_path(dir, "a directory to probe"),
            GateKind::MountedAs { dir, fstype } => {
                self.data_path(dir, "a mount point to check")?;
                one_of("mount-fstype", fstype, MOUNT_TYPES, "mount type")
            }
        }
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

/// The programs a step kind's actions may run (derived from each step's `assess` and
/// `exec::perform`).
///
/// A bare name is a distribution's tool, found through the agent's PATH: where a distribution
/// puts it differs (`mdadm`, `wipefs` and the LVM tools in /sbin on Debian without merged
/// /usr, /usr/sbin on EL, which links /sbin there; ThinkParQ's `beegfs-ctl` link in /usr/bin in
/// its rpm, /usr/sbin in its deb), and systemd's PATH for services holds every one of those
/// places (src/basic/path-util.h, DEFAULT_PATH: /usr/local/sbin, /usr/local/bin, /usr/sbin,
/// /usr/bin, and /sbin, /bin where /usr is not merged), which config/pvfs-agent.service keeps.
/// A program installed outside them, as BeeGFS's setup scripts are, is named by its full path.
pub fn programs_of(step_kind: &str) -> &'static [&'static str] {
    match step_kind {
        "packages" => &["apt-get", "dnf", "yum"],
        "service" => &["systemctl"],
        // wipefs --all for members listed under `wipe`; update-initramfs from PersistMdadm.
        "raid0" => &["mdadm", "wipefs", "update-initramfs"],
        "lvm-thin" => &["pvcreate", "vgcreate", "lvcreate", "lvchange"],
        "mkfs" => &["mkfs.xfs", "mkfs.ext4"],
        "lustre-target" => &["mkfs.lustre"],
        "lustre-stripe" => &["lfs"],
        "lctl-param" => &["lctl"],
        "firewall" => &["firewall-cmd"],
        "mount" => &["mount"],
        "gluster-peers" | "gluster-volume" | "gluster-volume-gone" | "gluster-peers-detached" => &["gluster"],
        "unmount" => &["umount"],
        "service-stopped" => &["systemctl"],
        // vgchange --activate n, mdadm --stop / --zero-superblock, wipefs --all.
        "wipe" => &["wipefs", "mdadm", "vgchange"],
        // By their full path, where ThinkParQ's packages put them (`beegfs::SETUP_DIR`): no
        // service's PATH names /opt/beegfs/sbin, and a same-named program elsewhere on PATH
        // must not stand in for them.
        "beegfs-setup" => &[
            "/opt/beegfs/sbin/beegfs-setup-mgmtd",
            "/opt/beegfs/sbin/beegfs-setup-meta",
            "/opt/beegfs/sbin/beegfs-setup-storage",
            "/opt/beegfs/sbin/beegfs-setup-client",
        ],
        _ => &[],
    }
}

fn program(step_kind: &str, name: &str) -> Result<(), PolicyError> {
    let allowed = programs_of(step_kind);
    if allowed.contains(&name) {
        return Ok(());
    }
    Err(PolicyError::new(
        "program",
        name,
        format!("a {step_kind} step may not run {name}"),
        if allowed.is_empty() {
            format!("{step_kind} steps run no programs; this is a bug in pvfs, report it")
        } else {
            format!("{step_kind} steps run only {}; this is a bug in pvfs, report it", allowed.join(", "))
        },
    ))
}

/// A command a step's own assessment built that its kind never runs: always a bug in pvfs.
fn bug_command(step_kind: &str, command: &pvfs_host::Command, what: &str) -> PolicyError {
    PolicyError::new(
        "program",
        &command.to_string(),
        format!("a {step_kind} step {what}, not `{command}`"),
        "this is a bug in pvfs; report it",
    )
}

/// `TYPE BASE64`: one line that cannot carry `authorized_keys` options (`command=`, `from=`).
fn ssh_public_key(what: &str, key: &str) -> Result<(), PolicyError> {
    let mut words = key.split(' ');
    let ok = match (words.next(), words.next(), words.next()) {
        (Some(kind), Some(blob), None) => {
            (kind.starts_with("ssh-") || kind.starts_with("ecdsa-") || kind.starts_with("sk-"))
                && kind.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '@'))
                && !blob.is_empty()
                && blob.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='))
        }
        _ => false,
    };
    if ok {
        return Ok(());
    }
    Err(PolicyError::new(
        "mpi-ssh",
        key,
        format!("{what} is not an OpenSSH public key (`ssh-ed25519 BASE64`)"),
        "this is a bug in pvfs (keys come from ssh-keygen and the agents' reports); report it",
    ))
}

/// One `OPENSSH PRIVATE KEY` block, base64 lines only.
fn openssh_private_key(key: &str) -> Result<(), PolicyError> {
    let lines: Vec<&str> = key.lines().collect();
    let ok = lines.len() >= 3
        && lines[0] == "-----BEGIN OPENSSH PRIVATE KEY-----"
        && lines[lines.len() - 1] == "-----END OPENSSH PRIVATE KEY-----"
        && lines[1..lines.len() - 1].iter().all(|l| {
            !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='))
        });
    if ok {
        return Ok(());
    }
    Err(PolicyError::new(
        "mpi-ssh",
        "(private key, not shown)",
        "the cluster's MPI private key is not one OpenSSH private key block",
        "make it again: remove mpi_ed25519 and mpi_ed25519.pub from the cluster's TLS directory and run `pvfsctl up`",
    ))
}

/// The three files `mpi-ssh` writes, each with its one mode; `mpi-ssh-gone` only rewrites
/// `authorized_keys`. Every line written is printable.
fn mpi_ssh_write(step_kind: &str, path: &str, contents: &str, mode: u32) -> Result<(), PolicyError> {
    use pvfs_steps::{AUTHORIZED_KEYS, MPI_KEY, MPI_KNOWN_HOSTS};
    let want = match path {
        AUTHORIZED_KEYS => 0o600,
        MPI_KEY | MPI_KNOWN_HOSTS if step_kind == "mpi-ssh" => {
            if path == MPI_KEY {
                0o600
            } else {
                0o644
            }
        }
        _ => return Err(misplaced(step_kind, path)),
    };
    if mode != want {
        return Err(PolicyError::new(
            "file-mode",
            &format!("{mode:04o}"),
            format!("{path} is written {want:04o}, not {mode:04o}"),
            "this is a bug in pvfs; report it",
        ));
    }
    if contents.lines().any(|l| l.chars().any(char::is_control)) {
        return Err(PolicyError::new(
            "file-content",
            path,
            format!("{path} would hold a control character"),
            "remove it from the file on the node; pvfs writes printable lines only",
        ));
    }
    Ok(())
}

fn misplaced(step_kind: &str, path: &str) -> PolicyError {
    PolicyError::new(
        "action-kind",
        path,
        format!("a {step_kind} step may not write {path}"),
        "this is a bug in pvfs (a step produced a write outside its place); report it",
    )
}

/// Places in the system trees that only a typed step writes, and which one.
fn reserved(path: &str) -> Option<&'static str> {
    if path == "/etc/fstab" {
        Some("/etc/fstab is written only by mount steps, one line per mount")
    } else if MDADM_CONFS.contains(&path) {
        Some("mdadm.conf is written only by raid0 steps, from the array's own `mdadm --detail --brief`")
    } else if under(path, "/etc/yum.repos.d") || under(path, "/etc/apt") {
        Some("repositories are written only by packages steps ([[repo]] in the cluster file)")
    } else if under(path, "/etc/udev") {
        Some(
            "udev rules can run programs; they are reserved for a typed step whose content the agent writes itself",
        )
    } else if under(path, "/etc/beegfs") {
        Some("BeeGFS service configurations change only through config-keys and beegfs-setup steps")
    } else {
        None
    }
}

/// Absolute, canonical, printable, no hidden components.
fn canonical(path: &str) -> Result<(), PolicyError> {
    let bad = |problem: &str| {
        PolicyError::new(
            "path-canonical",
            path,
            format!("{path:?} {problem}"),
            "give an absolute path without `.`/`..` components, `//` or a trailing `/`",
        )
    };
    if !path.starts_with('/') {
        return Err(bad("is not absolute"));
    }
    if path.len() > 4095 {
        return Err(bad("is longer than PATH_MAX"));
    }
    if path.chars().any(char::is_control) {
        return Err(bad("holds a control character"));
    }
    if path == "/" {
        return Ok(());
    }
    if path.ends_with('/') {
        return Err(bad("ends with '/'"));
    }
    for component in path[1..].split('/') {
        match component {
            "" => return Err(bad("has an empty component (`//`)")),
            "." | ".." => return Err(bad("has a `.` or `..` component")),
            c if c.len() > 255 => return Err(bad("has a component longer than 255 bytes")),
            c if c.starts_with('.') => {
                return Err(PolicyError::new(
                    "path-hidden",
                    path,
                    format!(
                        "{path:?} has a hidden component {c:?} (dotfiles such as .bashrc or .ssh are never pvfs's)"
                    ),
                    "use a path without components starting with '.'",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

fn not_system(path: &str) -> Result<(), PolicyError> {
    if is_system(path) {
        return Err(PolicyError::new(
            "system-tree",
            path,
            format!("{path} is in a system tree"),
            format!(
                "use a data path outside / and {} (for example under /data, /mnt or /srv)",
                SYSTEM_TREES.join(" ")
            ),
        ));
    }
    Ok(())
}

/// A device path: canonical, under /dev, not one of its pseudo file systems.
fn device_path(path: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::device_path(path).map_err(|r| refused("device-path", path, r))
}

/// A refusal of the grammar `validate` shares ([`pvfs_host::grammar`]) under this policy's rule.
fn refused(rule: &'static str, value: &str, r: pvfs_host::grammar::Refusal) -> PolicyError {
    PolicyError::new(rule, value, r.problem, r.fix)
}

/// The commands a raid0 step runs: `wipefs --all -- MEMBER`, and `mdadm --create` /
/// `--assemble` with the array, the options pvfs passes, and members. mdadm takes no `--`
/// (block.rs, "mdadm and `--`"), so every word is checked here instead: the array by the md
/// grammar, each other word an option pvfs itself writes or a device path — never a word
/// from the cluster file that starts with `-`.
fn raid0_command(command: &pvfs_host::Command) -> Result<(), PolicyError> {
    let bug = |what: &str| bug_command("raid0", command, what);
    match (command.program.as_str(), command.args.as_slice()) {
        ("wipefs", [flag, dd, device]) if flag == "--all" && dd == "--" => device_path(device),
        ("wipefs", _) => Err(bug("only wipes a member (wipefs --all -- DEV)")),
        ("mdadm", [mode, md, rest @ ..]) if mode == "--create" || mode == "--assemble" => {
            md_device(md)?;
            let numeric = |word: &str, key: &str| {
                word.strip_prefix(key).is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
            };
            let mut members = 0;
            for word in rest {
                if word.starts_with('-') {
                    let known = mode == "--create"
                        && (word == "--run"
                            || word == "--level=0"
                            || numeric(word, "--raid-devices=")
                            || numeric(word, "--chunk="));
                    if !known {
                        return Err(bug("passes only --run, --level=0, --raid-devices=N and --chunk=N"));
                    }
                } else {
                    device_path(word)?;
                    members += 1;
                }
            }
            if members == 0 {
                return Err(bug("names the array's members"));
            }
            Ok(())
        }
        ("mdadm", _) => Err(bug("only creates or assembles its array")),
        _ => Ok(()),
    }
}

/// `/dev/mdN` or `/dev/md/NAME`.
fn md_device(path: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::md_device(path).map_err(|r| refused("device-path", path, r))
}

fn mdadm_conf(conf: &str) -> Result<(), PolicyError> {
    if MDADM_CONFS.contains(&conf) {
        return Ok(());
    }
    Err(PolicyError::new(
        "file-place",
        conf,
        format!("{conf} is not where mdadm reads its arrays"),
        format!("use {} (or leave it out: the node's own is picked)", MDADM_CONFS.join(" or ")),
    ))
}

fn beegfs_conf(path: &str) -> Result<(), PolicyError> {
    if BEEGFS_SERVICE_CONFS.contains(&path) {
        return Ok(());
    }
    Err(PolicyError::new(
        "file-place",
        path,
        format!("{path} is not a BeeGFS service configuration"),
        format!("settings steps edit only {}", BEEGFS_SERVICE_CONFS.join(", ")),
    ))
}

/// Modes of files pvfs writes: data and configuration, never programs.
fn plain_mode(path: &str, mode: u32) -> Result<(), PolicyError> {
    let problem = if mode & !0o7777 != 0 {
        Some("is not a permission mode")
    } else if mode & 0o4000 != 0 {
        Some("has the setuid bit")
    } else if mode & 0o2000 != 0 {
        Some("has the setgid bit")
    } else if mode & 0o1000 != 0 {
        Some("has the sticky bit")
    } else if mode & 0o002 != 0 {
        Some("is world-writable")
    } else if mode & 0o111 != 0 {
        Some("has an execute bit (pvfs writes data and configuration, never programs)")
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(PolicyError::new(
            "file-mode",
            &format!("{mode:04o}"),
            format!("mode {mode:04o} for {path} {problem}"),
            "use a mode such as 0644 or 0600",
        )),
    }
}

fn modprobe_contents(path: &str, contents: &str) -> Result<(), PolicyError> {
    for line in contents.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or_default();
        let module = words.next().unwrap_or_default();
        let params_ok = words.all(|w| {
            let (key, value) = w.split_once('=').unwrap_or((w, "x"));
            !key.is_empty()
                && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
                && !value.is_empty()
                && value.chars().all(|c| c.is_ascii_graphic())
        });
        let module_ok =
            !module.is_empty() && module.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
        if first != "options" || !module_ok || !params_ok {
            return Err(PolicyError::new(
                "file-content",
                line,
                format!("{path}: {line:?} is not an `options MODULE key=value…` line"),
                "modprobe files written by pvfs hold only comments and options lines (an install or remove line runs a shell command as root)",
            ));
        }
    }
    Ok(())
}

/// BeeGFS's interface and subnet lists: one short word of letters, digits and `.:/@_-` per
/// line (an interface name, or a subnet such as 10.0.0.0/24).
fn beegfs_list(path: &str, contents: &str) -> Result<(), PolicyError> {
    for line in contents.lines() {
        let ok = !line.is_empty()
            && line.len() <= 64
            && line
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '/' | '@' | '_' | '-'));
        if !ok {
            return Err(PolicyError::new(
                "file-content",
                line,
                format!("{path}: {line:?} is not an interface name or a subnet"),
                "write one interface (eth0) or subnet (10.0.0.0/24) per line",
            ));
        }
    }
    Ok(())
}

fn no_control(value: &str, what: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::no_control(value).map_err(|r| {
        refused("name", value, pvfs_host::grammar::Refusal { problem: format!("{what} {}", r.problem), ..r })
    })
}

/// Letters, digits, `_.+-`; not starting with `-` or `.`; at most `max` bytes.
fn simple_name(what: &str, value: &str, max: usize, shown: &str) -> Result<(), PolicyError> {
    let ok = !value.is_empty()
        && value.len() <= max
        && !value.starts_with(['-', '.'])
        && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-'));
    if ok {
        return Ok(());
    }
    let shown = if shown.is_empty() { value } else { shown };
    Err(PolicyError::new(
        "name",
        shown,
        format!("{shown:?} is not a valid {what}"),
        format!("a {what} is 1 to {max} letters, digits, '_', '.', '+' or '-', not starting with '-' or '.'"),
    ))
}

fn lvm_name(what: &str, value: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::lvm_name(value).map_err(|r| {
        refused("name", value, pvfs_host::grammar::Refusal { problem: format!("{what} {}", r.problem), ..r })
    })
}

fn fsname(value: &str) -> Result<(), PolicyError> {
    let ok = !value.is_empty()
        && value.len() <= 8
        && value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        && !value.starts_with('-');
    if ok {
        return Ok(());
    }
    Err(PolicyError::new(
        "name",
        value,
        format!("{value:?} is not a Lustre file system name"),
        "a Lustre fsname is 1 to 8 letters, digits, '_' or '-'",
    ))
}

/// Lustre's limits on a default layout (lov_user_md: `lmm_stripe_count` is a u16 where
/// 0xffff (-1) means every OST, at most 2000 stripes (LOV_MAX_STRIPE_COUNT); the stripe size a
/// multiple of 64 KiB (LOV_MIN_STRIPE_SIZE) below 4 GiB).
fn stripe(count: i64, size: u64) -> Result<(), PolicyError> {
    if count != -1 && !(1..=2000).contains(&count) {
        return Err(PolicyError::new(
            "stripe",
            &count.to_string(),
            format!("a stripe count of {count} is not one Lustre takes"),
            "use -1 (every OST) or 1 to 2000",
        ));
    }
    if size == 0 || !size.is_multiple_of(64 << 10) || size >= 4 << 30 {
        return Err(PolicyError::new(
            "stripe",
            &size.to_string(),
            format!("a stripe size of {size} bytes is not one Lustre takes"),
            "use a multiple of 64 KiB below 4 GiB, such as 1M or 4M",
        ));
    }
    Ok(())
}

/// Where a client parameter may live: the client's own layers. Not `mdt.`/`mds.`/`ost.`
/// (server tunables; `mdt.*.identity_upcall` names a program the MDS runs as root), not
/// `lnet.`/`debug*` (the node's networking and kernel logging), not a leading `*`.
const LCTL_PREFIXES: &[&str] = &["llite.", "osc.", "mdc.", "lov.", "lmv.", "ldlm."];

/// `lctl set_param NAME=VALUE`: NAME by the grammar `[a-z0-9_.*-]+` (lctl's dotted parameter
/// path with globs, nothing that could be an option, an `=` or a path), under
/// [`LCTL_PREFIXES`], naming no upcall; VALUE one word without whitespace or control
/// characters (it is one argument, and upcall-like values never reach a parameter allowed here).
fn lctl_param(name: &str, value: &str) -> Result<(), PolicyError> {
    let grammar = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '*' | '-'));
    if !grammar
        || !LCTL_PREFIXES.iter().any(|p| name.starts_with(p))
        || name.contains("upcall")
        || name.contains("..")
    {
        return Err(PolicyError::new(
            "lctl-param",
            name,
            format!("{name:?} is not a Lustre client parameter pvfs sets"),
            format!(
                "name a client parameter of letters, digits, '_', '.', '*' or '-' under {} (such as llite.*.max_read_ahead_mb)",
                LCTL_PREFIXES.join(", ")
            ),
        ));
    }
    if value.is_empty() || value.len() > 256 || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(PolicyError::new(
            "lctl-param",
            value,
            format!("{value:?} is not a one-word value for {name}"),
            "give the value without spaces or control characters, such as \"64\"",
        ));
    }
    Ok(())
}

/// A `firewall` step: every port within [`FIREWALL_PORTS`], the zone a firewalld zone name.
fn firewall_ports(step: &pvfs_steps::FirewallPorts) -> Result<(), PolicyError> {
    if step.ports.is_empty() {
        return Err(PolicyError::new(
            "firewall-port",
            "",
            "a firewall step opens no port",
            "this is a bug in pvfs (the plan leaves a node with no port out); report it",
        ));
    }
    for port in &step.ports {
        firewall_port(port)?;
    }
    if let Some(zone) = &step.zone {
        firewalld_zone(zone)?;
    }
    Ok(())
}

fn firewall_port(port: &pvfs_steps::PortRange) -> Result<(), PolicyError> {
    if port.first <= port.last && FIREWALL_PORTS.iter().any(|allowed| port.within(allowed)) {
        return Ok(());
    }
    let allowed: Vec<String> = FIREWALL_PORTS.iter().map(ToString::to_string).collect();
    Err(PolicyError::new(
        "firewall-port",
        &port.to_string(),
        format!("{port} is not a port pvfs's file systems listen on"),
        format!("pvfs opens only {}; open other ports yourself", allowed.join(", ")),
    ))
}

/// firewalld's zone names are file names under /etc/firewalld/zones: letters, digits, `_`,
/// `-`, and at most 17 characters (firewalld's zone name limit, from the iptables chain
/// names it derives from them).
fn firewalld_zone(zone: &str) -> Result<(), PolicyError> {
    simple_name("firewalld zone", zone, 17, "")?;
    if zone.contains(['.', '+']) {
        return Err(PolicyError::new(
            "name",
            zone,
            format!("{zone:?} is not a valid firewalld zone"),
            "a firewalld zone is 1 to 17 letters, digits, '_' or '-'",
        ));
    }
    Ok(())
}

/// `firewall-cmd --permanent [--zone=ZONE] --add-port=PORT/PROTO` or `firewall-cmd --reload`,
/// nothing else.
fn firewall_command(command: &pvfs_host::Command) -> Result<(), PolicyError> {
    let add = |arg: &str| -> Result<(), PolicyError> {
        let port = arg
            .strip_prefix("--add-port=")
            .and_then(|p| p.parse::<pvfs_steps::PortRange>().ok())
            .ok_or_else(|| bug_command("firewall", command, "only adds a port or reloads"))?;
        firewall_port(&port)
    };
    match command.args.as_slice() {
        [reload] if reload == "--reload" => Ok(()),
        [permanent, port] if permanent == "--permanent" => add(port),
        [permanent, zone, port] if permanent == "--permanent" => {
            let name = zone
                .strip_prefix("--zone=")
                .ok_or_else(|| bug_command("firewall", command, "only adds a port or reloads"))?;
            firewalld_zone(name)?;
            add(port)
        }
        _ => Err(bug_command(
            "firewall",
            command,
            "only adds a port permanently (firewall-cmd --permanent [--zone=ZONE] --add-port=PORT/PROTO) or reloads",
        )),
    }
}

/// A host name or an IP address.
fn host(what: &str, value: &str) -> Result<(), PolicyError> {
    let hostname = !value.is_empty()
        && value.len() <= 253
        && value.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
    if hostname || value.parse::<std::net::IpAddr>().is_ok() {
        return Ok(());
    }
    Err(PolicyError::new(
        "name",
        value,
        format!("{value:?} is not a valid {what} (a host name or an IP address)"),
        "give the node's address as the cluster file's `address` does",
    ))
}

/// `ADDR@NET` (`10.0.0.4@tcp`, `mgs@o2ib1`, `0@lo`).
fn nid(value: &str) -> Result<(), PolicyError> {
    let ok = value.split_once('@').is_some_and(|(addr, net)| {
        (addr == "0" || host("", addr).is_ok())
            && net.len() <= 16
            && net.starts_with(|c: char| c.is_ascii_lowercase())
            && net.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    });
    if ok {
        return Ok(());
    }
    Err(PolicyError::new(
        "nid",
        value,
        format!("{value:?} is not a Lustre NID"),
        "a NID is ADDRESS@NETWORK, such as 10.0.0.4@tcp",
    ))
}

/// NIDs separated by `:` (failover) or `,` (several NIDs of one node).
fn nid_list(value: &str) -> Result<(), PolicyError> {
    value.split([':', ',']).try_for_each(nid).map_err(|e| PolicyError { value: value.to_owned(), ..e })
}

/// `9216g`, `256K`, `1.5T`, `100%FREE`.
fn size(value: &str) -> Result<(), PolicyError> {
    let (number, unit) = match value.split_once('%') {
        Some((n, of)) => (n, if ["FREE", "VG", "PVS", "ORIGIN"].contains(&of) { "" } else { "?" }),
        None => {
            let split = value.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(value.len());
            (&value[..split], &value[split..])
        }
    };
    let number_ok = !number.is_empty()
        && number.len() <= 20
        && number.chars().all(|c| c.is_ascii_digit() || c == '.')
        && number.matches('.').count() <= 1
        && number.starts_with(|c: char| c.is_ascii_digit());
    let unit_ok = unit.is_empty() || (unit.len() == 1 && "bBsSkKmMgGtTpPeE".contains(unit));
    if number_ok && unit_ok {
        return Ok(());
    }
    Err(PolicyError::new(
        "size",
        value,
        format!("{value:?} is not a size"),
        "write a number with an optional unit (256K, 9216g) or a percentage (100%FREE)",
    ))
}

fn one_of(rule: &'static str, value: &str, allowed: &[&str], what: &str) -> Result<(), PolicyError> {
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(PolicyError::new(
        rule,
        value,
        format!("{value:?} is not a {what} pvfs uses"),
        format!("use {}", allowed.join(", ")),
    ))
}

fn package_name(name: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::package_name(name).map_err(|r| refused("package-name", name, r))
}

fn package_version(name: &str, version: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::package_version(version).map_err(|r| {
        refused(
            "package-version",
            version,
            pvfs_host::grammar::Refusal { problem: format!("{} of {name}", r.problem), ..r },
        )
    })
}

fn repo_name(name: &str) -> Result<(), PolicyError> {
    simple_name("repository name", name, 64, "").map_err(|e| PolicyError { rule: "repo-name", ..e })
}

/// An apt suite or component (sources.list(5)): a word of letters, digits and `. _ + ~ / -`
/// (a suite may be an exact path such as `./` or `stable/updates`), not starting with `-`. No
/// whitespace: the deb822 fields are whitespace-separated lists, and a newline would add a
/// field.
fn apt_word(word: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::apt_word(word).map_err(|r| refused("repo-suite", word, r))
}

/// The fields pvfs writes into a deb822 source (sources.list(5)); any other (an `Options`-like
/// field, or `Check-Valid-Until: no`) would change how apt trusts the repository.
const DEB822_FIELDS: &[&str] = &["Types", "URIs", "Suites", "Components", "Signed-By", "Trusted"];

/// A `.sources` file as `packages::sources_file` writes it: comments and `Field: value` lines
/// of [`DEB822_FIELDS`], one paragraph (no blank line: a second paragraph is a second source).
fn deb822_source(path: &str, contents: &str) -> Result<(), PolicyError> {
    for line in contents.lines() {
        if line.starts_with('#') {
            continue;
        }
        let field = line.split_once(": ").map(|(f, _)| f);
        if !field.is_some_and(|f| DEB822_FIELDS.contains(&f)) || line.chars().any(char::is_control) {
            return Err(PolicyError::new(
                "file-content",
                path,
                format!("{line:?} is not a line pvfs writes into an apt source"),
                "this is a bug in pvfs (apt sources hold Types, URIs, Suites, Components, Signed-By and Trusted); report it",
            ));
        }
    }
    Ok(())
}

/// An ASCII-armored OpenPGP public key block (RFC 4880, 6.2) and nothing else: what apt reads
/// from a `.asc` keyring named by `Signed-By`.
fn armored_key(what: &str, key: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::armored_key(key).map_err(|r| {
        refused(
            "file-content",
            what,
            pvfs_host::grammar::Refusal { problem: format!("the signing key of {what}: {}", r.problem), ..r },
        )
    })
}

/// Characters a URL written into a .repo file may hold: no whitespace (a newline would add
/// lines such as `gpgcheck=0`), quotes, backslashes or `#`.
fn url_chars(url: &str) -> Result<(), PolicyError> {
    let bad = url
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '\\' | '#' | '<' | '>'));
    if url.is_empty() || url.len() > 2048 || bad.is_some() {
        return Err(PolicyError::new(
            "repo-url",
            url,
            format!("{url:?} is not a plain URL"),
            "give a URL without whitespace, quotes, '\\' or '#'",
        ));
    }
    Ok(())
}

fn unit_name(unit: &str) -> Result<(), PolicyError> {
    let bare = unit.strip_suffix(".service").unwrap_or(unit);
    let ok = !bare.is_empty()
        && bare.len() <= 240
        && !bare.starts_with(['-', '.'])
        && bare.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '_' | '.' | '@' | '-'))
        && !bare.contains('.');
    if ok {
        return Ok(());
    }
    Err(PolicyError::new(
        "service-unit",
        unit,
        format!("{unit:?} is not a service unit name"),
        "name a service unit (letters, digits, ':', '_', '@', '-'; optionally ending in .service)",
    ))
}

/// A client mount of a cluster file system (a network source: glusterfs, a Lustre client,
/// BeeGFS) carries `nosuid` and `nodev`, and neither `suid` nor `dev`: its files come from
/// other machines, so a setuid program or a device node there would be root on this node to
/// whoever can write the file system. Only `mount` steps: `unmount` must still undo a mount
/// made before this rule. Local targets (a `/dev` source) are this node's own disks.
fn client_mount_flags(m: &pvfs_steps::Mount) -> Result<(), PolicyError> {
    if m.source.starts_with('/') {
        return Ok(());
    }
    let words: Vec<&str> = m.options.split(',').collect();
    let problem = if let Some(bad) = words.iter().find(|w| matches!(**w, "suid" | "dev")) {
        Some(format!("{bad}: files another machine serves would run setuid or open devices as root here"))
    } else if !words.contains(&"nosuid") || !words.contains(&"nodev") {
        Some("a client mount of a cluster file system without nosuid and nodev".to_owned())
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(PolicyError::new(
            "mount-options",
            &m.options,
            format!("{} on {} ({}): {problem}", m.source, m.target, m.options),
            "client mounts of cluster file systems carry nosuid,nodev (pvfs's plans add them); mount by hand if \
             this node really needs setuid programs or devices from the cluster",
        )),
    }
}

fn mount_options(options: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::mount_options(options).map_err(|r| refused("mount-options", options, r))
}

fn queue_attribute(path: &str) -> Result<(), PolicyError> {
    let ok = path.strip_prefix("/sys/block/").and_then(|rest| rest.split_once("/queue/")).is_some_and(
        |(name, attr)| {
            simple_name("", name, 64, "").is_ok()
                && ["scheduler", "nr_requests", "read_ahead_kb"].contains(&attr)
        },
    );
    if ok {
        return Ok(());
    }
    Err(misplaced("block-queue", path))
}

/// `restart-order`: no step changes a file that a service step *before* it in the unit
/// reads (its `configs`): that service would keep running with the old settings, since its
/// restart comes at its own step.
///
/// One pass, with the first service step reading each file kept in a map as it is met: the
/// check is linear in the unit's size. (Scanning the steps before every step made a unit of
/// 80,000 steps take 39 s on the agent, issue 24.)
fn restart_order(steps: &[Step]) -> Result<(), StepRefused> {
    let mut first_reader: HashMap<&str, &pvfs_steps::Service> = HashMap::new();
    for (index, step) in steps.iter().enumerate() {
        for file in step.configures() {
            if let Some(service) = first_reader.get(file.as_str()) {
                return Err(StepRefused {
                    index,
                    step: step.to_string(),
                    error: PolicyError::new(
                        "restart-order",
                        &file,
                        format!("{file} changes after the step that restarts {} for it", service.unit),
                        "this is a bug in pvfs's planner (configuration steps come before their service's); report it",
                    ),
                });
            }
        }
        // After its own files are checked (a service step configures none): a service is
        // "before" the steps that follow it only.
        if let Step::Service(service) = step {
            for file in &service.configs {
                first_reader.entry(file.as_str()).or_insert(service);
            }
        }
    }
    Ok(())
}

/// `/etc/udev/rules.d/99-pvfs-queue-NAME.rules`, the one place a block-queue step writes.
fn udev_rule_path(path: &str) -> Result<(), PolicyError> {
    let name = path.strip_prefix("/etc/udev/rules.d/99-pvfs-queue-").and_then(|n| n.strip_suffix(".rules"));
    match name {
        Some(name) if simple_name("", name, 64, "").is_ok() => Ok(()),
        _ => Err(misplaced("block-queue", path)),
    }
}

/// A queue-settings rule as [`pvfs_steps::BlockQueue`] writes it: comments, and lines of
/// `KEY=="value"` matches on a few identity keys followed by `ATTR{queue/…}="value"`
/// assignments. Nothing that runs, imports or jumps.
fn udev_queue_rule(path: &str, contents: &str) -> Result<(), PolicyError> {
    const MATCH_KEYS: &[&str] = &[
        "ACTION",
        "SUBSYSTEM",
        "KERNEL",
        "SYMLINK",
        "ENV{DEVTYPE}",
        "ENV{MD_DEVNAME}",
        "ENV{DM_NAME}",
        "ATTRS{wwid}",
    ];
    const ASSIGN_KEYS: &[&str] =
        &["ATTR{queue/scheduler}", "ATTR{queue/nr_requests}", "ATTR{queue/read_ahead_kb}"];
    let bad = |line: &str, problem: &str| {
        PolicyError::new(
            "udev-rule",
            line,
            format!("{path}: {line:?} {problem}"),
            "this is a bug in pvfs (block-queue rules hold only identity matches and queue settings); report it",
        )
    };
    for line in contents.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let mut assigned = false;
        for pair in line.split(", ") {
            let (key, op, value) = if let Some((k, v)) = pair.split_once("==") {
                (k, "==", v)
            } else if let Some((k, v)) = pair.split_once('=') {
                (k, "=", v)
            } else {
                return Err(bad(line, "is not a list of KEY==\"value\" and ATTR{…}=\"value\""));
            };
            let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or("\"");
            if value.contains(['"', '\\']) || value.chars().any(char::is_control) {
                return Err(bad(line, "has a value that is not one plain quoted string"));
            }
            match op {
                "==" if !assigned && MATCH_KEYS.contains(&key) => {}
                "=" if ASSIGN_KEYS.contains(&key) => assigned = true,
                _ => return Err(bad(line, &format!("uses {key}{op}, which a queue rule never does"))),
            }
        }
        if !assigned {
            return Err(bad(line, "sets no queue attribute"));
        }
    }
    Ok(())
}

/// The paths a step writes, creates or mounts on, on this node (for the symlink rule).
fn touched_paths(step: &Step) -> Vec<String> {
    match step {
        Step::File(f) => vec![f.path.clone()],
        Step::ConfigKeys(c) => vec![c.path.clone()],
        Step::Directory(d) => vec![d.path.clone()],
        Step::Mount(m) | Step::Unmount(pvfs_steps::Unmount(m)) => {
            let mut paths = vec![m.target.clone()];
            if m.fstab {
                paths.push("/etc/fstab".into());
            }
            paths
        }
        Step::Packages(p) => {
            p.repos.iter().flat_map(|r| std::iter::once(r.path()).chain(r.keyring_path())).collect()
        }
        Step::Raid0(r) => r.conf.iter().cloned().collect(),
        Step::BlockQueue(q) => vec![q.rule_path()],
        Step::BeegfsSetup(b) => b.path.iter().cloned().chain([b.service.conf()]).collect(),
        Step::Gate(Gate { kind: GateKind::Writable { dir }, .. }) => vec![dir.clone()],
        Step::LustreStripe(s) => vec![s.dir.clone()],
        Step::MpiSsh(_) | Step::MpiSshGone(_) => {
            use pvfs_steps::{AUTHORIZED_KEYS, MPI_KEY, MPI_KNOWN_HOSTS};
            vec![MPI_KEY.into(), MPI_KNOWN_HOSTS.into(), AUTHORIZED_KEYS.into()]
        }
        _ => vec![],
    }
}

/// The devices a step formats, puts in an array or makes a physical volume (for the site's
/// device list).
fn consumed_devices(step: &Step) -> Vec<String> {
    match step {
        Step::Raid0(r) => r.members.clone(),
        Step::LvmThin(l) => vec![l.pv.clone()],
        Step::Mkfs(m) => vec![m.device.clone()],
        Step::LustreTarget(t) => vec![t.device.clone()],
        // The disks: the array over them is theirs (as an array a raid0 step makes is).
        Step::WipeTarget(w) => w.disks.clone(),
        _ => vec![],
    }
}

/// `file-owner`: `path` and the directory it is in, where they exist, belong to the user the
/// agent runs as (root in production). Replacing another user's file takes their data; writing
/// into their directory leaves root's file where they expect theirs, in a place they control.
fn agents_own(root: &Root, path: &str) -> Result<(), PolicyError> {
    use std::os::unix::fs::MetadataExt;
    let agent = nix::unistd::geteuid().as_raw();
    let parent = path.rsplit_once('/').map_or("/", |(p, _)| if p.is_empty() { "/" } else { p });
    for (what, at) in [("file", path), ("directory", parent)] {
        match std::fs::symlink_metadata(root.path(at)) {
            Ok(meta) if meta.uid() != agent => {
                return Err(PolicyError::new(
                    "file-owner",
                    path,
                    format!(
                        "the {what} {at} belongs to uid {}, not to the agent's user (uid {agent}); pvfs never writes \
                         another user's files or into their directories",
                        meta.uid()
                    ),
                    "write the file under a directory pvfs made (the cluster's mount points and targets)",
                ));
            }
            Ok(_) => {}
            Err(err)
                if matches!(err.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            }
            Err(err) => {
                return Err(PolicyError::new(
                    "file-owner",
                    path,
                    format!("cannot check who owns {at}: {err}"),
                    "check the path's permissions",
                ));
            }
        }
    }
    Ok(())
}

/// No existing component of `path` (under `root`) is a symbolic link.
fn no_symlink(root: &Root, path: &str) -> Result<(), PolicyError> {
    let mut prefix = String::new();
    for component in path.trim_start_matches('/').split('/').filter(|c| !c.is_empty()) {
        prefix.push('/');
        prefix.push_str(component);
        match std::fs::symlink_metadata(root.path(&prefix)) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(root.path(&prefix))
                    .map(|t| t.display().to_string())
                    .unwrap_or_default();
                return Err(PolicyError::new(
                    "symlink",
                    path,
                    format!("{prefix} is a symbolic link (to {target}), so {path} may not be where it says"),
                    "use the real path, or remove the link",
                ));
            }
            Ok(_) => {}
            // What does not exist yet cannot be a link; the step creates it. A file where a
            // directory should be is no link either: the step itself reports that.
            Err(err)
                if matches!(err.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) =>
            {
                return Ok(());
            }
            Err(err) => {
                return Err(PolicyError::new(
                    "symlink",
                    path,
                    format!("cannot check {prefix} for symbolic links: {err}"),
                    "check the path's permissions",
                ));
            }
        }
    }
    Ok(())
}

/// The real path behind a device name under `root`; unresolvable paths come back unchanged.
fn resolve(root: &Root, path: &str) -> String {
    match std::fs::canonicalize(root.path(path)) {
        Ok(real) => match real.strip_prefix(root.base()) {
            Ok(rel) => format!("/{}", rel.display()),
            Err(_) => real.display().to_string(),
        },
        Err(_) => path.to_owned(),
    }
}

/// Shell-style glob: `*` any run of characters but `/`, `?` one character but `/`.
fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // Classic backtracking over the last `*`.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == t[ti] || (p[pi] == '?' && t[ti] != '/')) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star
            && t[st] != '/'
        {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests;
