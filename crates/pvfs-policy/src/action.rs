//! The backstop: which actions each step kind may perform, and the programs and command forms
//! it runs ([`Policy::check_action`], [`programs_of`]).

use crate::files::{
    beegfs_conf, deb822_source, mdadm_conf, misplaced, mpi_ssh_write, plain_mode, udev_queue_rule,
    udev_rule_path,
};
use crate::node::{agents_own, no_symlink};
use crate::values::{
    armored_key, device_path, firewall_port, firewalld_zone, lvm_name, md_device, no_control, repo_name,
    simple_name,
};
use crate::{Policy, PolicyError};
use pvfs_host::Root;
use pvfs_steps::Action;

impl Policy {
    /// The backstop: may a step of kind `step_kind` perform `action`?
    ///
    /// One arm per (step kind, action) pair, in an order that matters (guards, and the
    /// catch-all `Run` before the block steps' `Destroy`); the arms whose check is more than a
    /// line or two call a function named for what it allows, so the match reads as the table.
    pub fn check_action(&self, step_kind: &str, action: &Action) -> Result<(), PolicyError> {
        no_control_in_command(action)?;
        match (step_kind, action) {
            ("file", Action::Write { path, contents, mode }) => self.file_write(path, contents, *mode),
            ("packages", Action::Write { path, contents, mode }) => {
                packages_write(step_kind, path, contents, *mode)
            }
            // The one directory a packages step makes, as apt's package ships it.
            ("packages", Action::Mkdir { path, mode }) if path == pvfs_steps::APT_KEYRINGS => {
                apt_keyrings_mode(path, *mode)
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
                self.unmount_command(step_kind, command)
            }
            ("service-stopped", Action::Run(command)) => {
                program(step_kind, &command.program)?;
                self.service_stopped_command(step_kind, command)
            }
            ("wipe", Action::Run(command)) => {
                program(step_kind, &command.program)?;
                wipe_command(step_kind, command)
            }
            ("wipe", Action::Destroy { command, .. }) => {
                program(step_kind, &command.program)?;
                wipe_destroy(step_kind, command)
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
                queue_rule_write(path, contents, *mode)
            }
            ("service", Action::Run(command)) => {
                program(step_kind, &command.program)?;
                self.service_command(command)
            }
            ("packages", Action::Run(command)) => {
                program(step_kind, &command.program)?;
                packages_command(command)
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
                self.lustre_stripe_command(step_kind, command)
            }
            (_, Action::Run(command)) => program(step_kind, &command.program),
            // Destroying is for the block steps only, with their own programs; the devices
            // themselves were checked with the step (paths, the site's `devices`) and are
            // proven unused and empty again right before the command.
            // mkfs.*, mkfs.lustre and pvcreate end with `-- DEVICE`; nothing else may follow
            // the options.
            ("lvm-thin" | "mkfs" | "lustre-target", Action::Destroy { command, .. }) => {
                program(step_kind, &command.program)?;
                device_last(step_kind, command)
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

    /// An unmount step's command, its program already allowed: `umount -- DIR`, DIR a data
    /// path.
    fn unmount_command(&self, step_kind: &str, command: &pvfs_host::Command) -> Result<(), PolicyError> {
        match command.args.as_slice() {
            [dd, target] if dd == "--" => self.data_path(target, "a mount point"),
            _ => Err(bug_command(step_kind, command, "only unmounts one mount point (umount -- DIR)")),
        }
    }

    /// A service-stopped step's command, its program already allowed: stop or disable a unit
    /// the site allows.
    fn service_stopped_command(
        &self,
        step_kind: &str,
        command: &pvfs_host::Command,
    ) -> Result<(), PolicyError> {
        match command.args.as_slice() {
            [verb, unit] if verb == "stop" || verb == "disable" => self.service(unit),
            _ => Err(bug_command(step_kind, command, "only stops or disables a unit")),
        }
    }

    /// A service step's command, its program already allowed: enable, start or restart a
    /// unit the site allows.
    fn service_command(&self, command: &pvfs_host::Command) -> Result<(), PolicyError> {
        match command.args.as_slice() {
            [verb, unit] if verb == "enable" || verb == "start" || verb == "restart" => self.service(unit),
            _ => Err(PolicyError::new(
                "program",
                &command.to_string(),
                format!("a service step only enables, starts or restarts a unit, not `{command}`"),
                "this is a bug in pvfs; report it",
            )),
        }
    }

    /// A lustre-stripe step's command, its program already allowed: `lfs setstripe -c N -S
    /// SIZE -- DIR`, DIR a data path.
    fn lustre_stripe_command(
        &self,
        step_kind: &str,
        command: &pvfs_host::Command,
    ) -> Result<(), PolicyError> {
        match command.args.as_slice() {
            [verb, c, _, s, _, dd, dir] if verb == "setstripe" && c == "-c" && s == "-S" && dd == "--" => {
                self.data_path(dir, "a Lustre directory to stripe")
            }
            _ => Err(bug_command(
                step_kind,
                command,
                "only sets a directory's default layout (lfs setstripe -c N -S SIZE -- DIR)",
            )),
        }
    }
}

/// No control character in any word of a command an action runs, whatever the step.
fn no_control_in_command(action: &Action) -> Result<(), PolicyError> {
    if let Action::Run(command) | Action::Destroy { command, .. } = action {
        for word in std::iter::once(&command.program).chain(&command.args) {
            no_control(word, "command argument")?;
        }
    }
    Ok(())
}

/// The udev rule a block-queue step writes: its path and its one rule checked.
fn queue_rule_write(path: &str, contents: &str, mode: u32) -> Result<(), PolicyError> {
    udev_rule_path(path)?;
    udev_queue_rule(path, contents)?;
    plain_mode(path, mode)
}

/// A file a packages step writes: a yum repository, or a pvfs-named deb822 source or armored
/// key where apt reads them, each with its contents checked; anywhere else is misplaced.
fn packages_write(step_kind: &str, path: &str, contents: &str, mode: u32) -> Result<(), PolicyError> {
    let within = |dir: &str, suffix: &str| {
        path.strip_prefix(dir).and_then(|n| n.strip_prefix('/')).and_then(|n| n.strip_suffix(suffix))
    };
    if let Some(name) = within("/etc/yum.repos.d", ".repo") {
        repo_name(name)?;
    } else if let Some(name) =
        within(pvfs_steps::APT_SOURCES, ".sources").and_then(|n| n.strip_prefix("pvfs-"))
    {
        repo_name(name)?;
        deb822_source(path, contents)?;
    } else if let Some(name) = within(pvfs_steps::APT_KEYRINGS, ".asc").and_then(|n| n.strip_prefix("pvfs-"))
    {
        repo_name(name)?;
        armored_key(path, contents)?;
    } else {
        return Err(misplaced(step_kind, path));
    }
    plain_mode(path, mode)
}

/// The apt keyrings directory a packages step makes: 0755, apt's own mode for it.
fn apt_keyrings_mode(path: &str, mode: u32) -> Result<(), PolicyError> {
    if mode == 0o755 {
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

/// A packages step's command, its program already allowed: `apt-get update`, or an install.
fn packages_command(command: &pvfs_host::Command) -> Result<(), PolicyError> {
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

/// A wipe step's command, its program already allowed: deactivate its volume group or stop
/// its array, both named by their grammar.
fn wipe_command(step_kind: &str, command: &pvfs_host::Command) -> Result<(), PolicyError> {
    match (command.program.as_str(), command.args.as_slice()) {
        ("vgchange", [flag, n, dd, vg]) if flag == "--activate" && n == "n" && dd == "--" => {
            lvm_name("volume group", vg)
        }
        ("mdadm", [flag, md]) if flag == "--stop" => md_device(md),
        _ => Err(bug_command(step_kind, command, "only deactivates its volume group or stops its array")),
    }
}

/// A wipe step's destructive command, its program already allowed: erase a device's
/// signatures, and nothing else.
fn wipe_destroy(step_kind: &str, command: &pvfs_host::Command) -> Result<(), PolicyError> {
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

/// A block step's destructive command (lvm-thin, mkfs, lustre-target), its program already
/// allowed: its options end with `--` and the one device after it.
fn device_last(step_kind: &str, command: &pvfs_host::Command) -> Result<(), PolicyError> {
    match command.args.as_slice() {
        [.., dd, device] if dd == "--" => device_path(device),
        _ => Err(bug_command(step_kind, command, "ends its options with `--` before the device")),
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
