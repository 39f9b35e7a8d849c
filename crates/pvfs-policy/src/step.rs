//! The rules for each kind of step: as the plan gives it ([`Policy::check_step`], pure), for a
//! whole unit ([`Policy::check_unit`]: the restart order too), and with what the node holds
//! ([`Policy::check_step_on`]: links, file owners, the site's devices).

use crate::files::{beegfs_conf, mdadm_conf, udev_rule_path};
use crate::node::{agents_own, glob_match, no_symlink, resolve};
use crate::values::{
    apt_word, armored_key, canonical, device_path, firewall_port, firewalld_zone, fsname, host, lctl_param,
    lvm_name, md_device, mount_options, nid, nid_list, one_of, openssh_private_key, package_name,
    package_version, repo_name, simple_name, size, ssh_public_key, stripe, unit_name, url_chars,
};
use crate::{Policy, PolicyError, StepRefused};
use pvfs_host::Root;
use pvfs_steps::{Gate, GateKind, MadeDevices, Step};
use std::collections::HashMap;

/// Where a `gpgkey` may also point: the keys a distribution's release packages install
/// (yum's, then apt's keyring packages' and keyrings an administrator placed).
const LOCAL_GPG_KEYS: &[&str] =
    &["file:///etc/pki/rpm-gpg/", "file:///usr/share/keyrings/", "file:///etc/apt/keyrings/"];

/// File systems `Mkfs` makes.
const MKFS_TYPES: &[&str] = &["xfs", "ext4"];

/// File systems `Mount` mounts.
const MOUNT_TYPES: &[&str] = &["xfs", "ext4", "lustre", "glusterfs", "beegfs"];

impl Policy {
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
            Step::Packages(p) => self.packages(p),
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
            Step::Raid0(r) => raid0(r),
            Step::LvmThin(l) => lvm_thin(l),
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
            Step::BlockQueue(q) => block_queue(q),
            Step::GlusterPeers(p) => {
                p.peers.iter().try_for_each(|peer| self.cluster_host("gluster peer", peer))
            }
            Step::GlusterVolume(v) => self.gluster_volume(v),
            Step::BeegfsSetup(b) => self.beegfs_setup(b),
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
            Step::WipeTarget(w) => wipe_target(w),
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

    /// `packages`: every package name and version by apt's and rpm's grammar, every repository
    /// by the site's list.
    fn packages(&self, p: &pvfs_steps::Packages) -> Result<(), PolicyError> {
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

    /// `gluster-volume`: the name, every brick and every option.
    fn gluster_volume(&self, v: &pvfs_steps::GlusterVolume) -> Result<(), PolicyError> {
        simple_name("gluster volume name", &v.name, 64, "")?;
        for brick in &v.bricks {
            self.brick(brick)?;
        }
        for (key, value) in &v.options {
            self.gluster_option(key, value)?;
        }
        Ok(())
    }

    /// `beegfs-setup`: the data directory in a data path, the management host in the cluster.
    fn beegfs_setup(&self, b: &pvfs_steps::BeegfsSetup) -> Result<(), PolicyError> {
        if let Some(path) = &b.path {
            self.data_path(path, "a BeeGFS data directory")?;
        }
        if let Some(mgmt) = &b.mgmt_host {
            self.cluster_host("BeeGFS management host", mgmt)?;
        }
        Ok(())
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

    pub(crate) fn service(&self, unit: &str) -> Result<(), PolicyError> {
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

/// `raid0`: the array and its members by the device grammars; only members are wiped.
fn raid0(r: &pvfs_steps::Raid0) -> Result<(), PolicyError> {
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

/// `lvm-thin`: the physical volume, LVM's names and every size by their grammars.
fn lvm_thin(l: &pvfs_steps::LvmThin) -> Result<(), PolicyError> {
    device_path(&l.pv)?;
    for (what, name) in [("volume group", &l.vg), ("thin pool", &l.pool), ("logical volume", &l.lv)] {
        lvm_name(what, name)?;
    }
    size(&l.pool_size)?;
    size(&l.virtual_size)?;
    for value in [&l.chunk, &l.data_alignment, &l.extent_size].into_iter().flatten() {
        size(value)?;
    }
    Ok(())
}

/// `block-queue`: the devices, the udev rule's path and the scheduler's name.
fn block_queue(q: &pvfs_steps::BlockQueue) -> Result<(), PolicyError> {
    device_path(&q.device)?;
    for member in &q.members {
        device_path(member)?;
    }
    udev_rule_path(&q.rule_path())?;
    if let Some(scheduler) = &q.scheduler
        && (scheduler.is_empty()
            || scheduler.len() > 32
            || !scheduler.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
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

/// `wipe`: the disks, the array and the volume group by their grammars.
fn wipe_target(w: &pvfs_steps::WipeTarget) -> Result<(), PolicyError> {
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
