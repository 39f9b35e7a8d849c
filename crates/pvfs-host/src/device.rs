//! Proof that a block device may be destroyed: it is a block device nothing uses, claimed
//! exclusively, and (unless the node's `wipe` list names it) it reads as zeros where data and
//! signatures live.
//!
//! Every destructive step (mkfs, `mkfs.lustre`, `mdadm --create`, `pvcreate`, `wipefs --all`)
//! asks this on the node just before it acts, so the rules live in one place:
//!
//! 1. the path resolves (links followed: `/dev/disk/azure/scsi1/lun0` → `/dev/sdc`) to a
//!    *block device* (S_ISBLK), known by its `major:minor`;
//! 2. neither it nor any of its partitions is *mounted* (`/proc/self/mountinfo`, matched by
//!    `major:minor`: the kernel's view, not a tool's);
//! 3. neither it nor any of its partitions has *holders* (`/sys/class/block/NAME/holders`: an
//!    md array, a device-mapper or LVM mapping built on it);
//! 4. neither it nor any of its partitions is active *swap* (`/proc/swaps`);
//! 5. neither it nor any of its partitions *backs a loop device* (`/sys/block/loopN/loop/
//!    backing_file` naming it, or a file on a file system that lives on it), nor holds an
//!    active swap *file*: loop and swap open their backing without claiming it, so it has no
//!    holders link and the exclusive open below succeeds (`losetup -f /dev/loop3` and then
//!    mkfs on loop3 destroys what loop4 shows);
//! 6. it can be *opened `O_EXCL`*: the kernel refuses that while anything has the device
//!    claimed, which also covers what the files above cannot show (a mount in another mount
//!    namespace, another program's exclusive open);
//! 7. its first and last MiB, and the other places signatures live, read as *zeros* — a
//!    condition the `wipe` list waives; the others it never does.
//!
//! device-mapper and md tables need no rule of their own: both link their members' `holders`
//! (rule 3), and a member they have open is refused by rule 6 as well.
//!
//! `/proc` and `/sys` are read under the [`Root`] seam, so unit tests drive rules 2–5 with
//! recorded trees; the device itself is always opened and read for real.

use crate::{Root, RootError};
use std::fmt;
use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// Where signatures live beyond the first and last MiB: btrfs's superblock mirrors at 64 MiB
/// and 256 GiB, and the first ext2/3/4 backup superblock with 4 KiB blocks (group 1, block
/// 32768 = 128 MiB), which survives a wipe of the primary. 64 KiB is read at each.
const SIGNATURE_PLACES: &[(u64, &str)] = &[
    (64 * MIB, "btrfs superblock mirror"),
    (128 * MIB, "ext4 backup superblock"),
    (256 << 30, "btrfs superblock mirror"),
];
const PLACE_LEN: u64 = 64 << 10;

/// A block device number, as sysfs and mountinfo write it (`8:32`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DevNum {
    pub major: u32,
    pub minor: u32,
}

impl DevNum {
    fn from_rdev(rdev: u64) -> DevNum {
        // Both fit in u32 by construction (12+20 bits today, 32+32 at most in glibc's encoding).
        DevNum {
            major: u32::try_from(nix::sys::stat::major(rdev)).unwrap_or(u32::MAX),
            minor: u32::try_from(nix::sys::stat::minor(rdev)).unwrap_or(u32::MAX),
        }
    }

    /// Parses `8:32`.
    pub fn parse(text: &str) -> Option<DevNum> {
        let (major, minor) = text.trim().split_once(':')?;
        Some(DevNum { major: major.parse().ok()?, minor: minor.parse().ok()? })
    }
}

impl fmt::Display for DevNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

/// Which block device a path names, as the kernel knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The path as given, e.g. `/dev/disk/azure/scsi1/lun0`.
    pub path: String,
    /// The device node it resolves to, e.g. `/dev/sdc` (a host path).
    pub node: String,
    /// The kernel's name, e.g. `sdc` (from `/sys/dev/block/MAJ:MIN`).
    pub name: String,
    pub dev: DevNum,
}

/// What the places data and signatures live in hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// Every byte read was zero.
    Zeros,
    /// A non-zero byte at `offset` (the first one found).
    Data { offset: u64, place: &'static str },
}

impl fmt::Display for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Content::Zeros => f.write_str("zeros"),
            Content::Data { offset, place } => write!(f, "data at byte {offset} ({place})"),
        }
    }
}

/// Why a device may not be destroyed, or could not be examined. Each names the rule, the
/// device, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("{path}: no such device on this node ({source}); name a disk the node has")]
    Missing {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "{path} is {kind}, not a block device (rule: only block devices are formatted, made array members \
         or physical volumes); name the disk's device node, e.g. /dev/sdc or /dev/disk/azure/scsi1/lun0"
    )]
    NotBlock { path: String, kind: String },
    #[error(
        "{path} ({what}) is mounted on {mount_point} (rule: a mounted device is never formatted, even when \
         listed under `wipe`); unmount it and remove it from /etc/fstab first, or name another disk"
    )]
    Mounted { path: String, what: String, mount_point: String },
    #[error(
        "{path} ({what}) is held by {holders} (rule: a device an md array or a device-mapper/LVM mapping is \
         built on is never formatted, even when listed under `wipe`); stop the array or remove the mapping \
         first, or name another disk"
    )]
    Held { path: String, what: String, holders: String },
    #[error(
        "{path} ({what}) is active swap (rule: swap is never formatted, even when listed under `wipe`); \
         swapoff it and remove it from /etc/fstab first, or name another disk"
    )]
    Swap { path: String, what: String },
    #[error(
        "{path} ({what}) backs loop device {loop_dev} ({backing}) (rule: a device a loop device reads from is \
         never formatted, even when listed under `wipe`: the loop device would show what mkfs writes); detach \
         it first (`losetup --detach {loop_dev}`), or name another disk"
    )]
    BacksLoop { path: String, what: String, loop_dev: String, backing: String },
    #[error(
        "{path} ({what}) holds the active swap file {file} (rule: swap is never formatted, even when listed \
         under `wipe`); swapoff it and remove it from /etc/fstab first, or name another disk"
    )]
    SwapFile { path: String, what: String, file: String },
    #[error(
        "{path} ({node}) cannot be opened exclusively: {source} (rule: pvfs acts only on a device the kernel \
         lets it claim, and it refuses while anything holds one: a mount in any namespace, md, device-mapper, \
         another program's exclusive open, even when listed under `wipe`); find the user with `lsblk` and \
         `fuser -v {node}`"
    )]
    Busy {
        path: String,
        node: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "{path} is now device {now}, not {was} as when it was assessed (rule: the device acted on is the one \
         checked); nothing was done: run again to assess the device the path names now"
    )]
    Changed { path: String, was: DevNum, now: DevNum },
    #[error("cannot read {path} ({node}) to prove what it holds: {source}")]
    Unreadable {
        path: String,
        node: String,
        #[source]
        source: io::Error,
    },
    /// The kernel's mount table held a line pvfs cannot read: nothing is assumed unmounted.
    #[error("cannot tell whether {path} is mounted: {message}")]
    Mountinfo { path: String, message: String },
    #[error("cannot examine {path}: {source}")]
    Host {
        path: String,
        #[source]
        source: RootError,
    },
}

impl DeviceError {
    /// The rule a refusal is about, in a few words (`None` for failures to examine).
    pub fn rule(&self) -> Option<&'static str> {
        match self {
            DeviceError::NotBlock { .. } => Some("block device"),
            DeviceError::Mounted { .. } => Some("not mounted"),
            DeviceError::Held { .. } => Some("no holders"),
            DeviceError::Swap { .. } | DeviceError::SwapFile { .. } => Some("not swap"),
            DeviceError::BacksLoop { .. } => Some("no loop device on it"),
            DeviceError::Busy { .. } => Some("exclusive open"),
            DeviceError::Changed { .. } => Some("same device"),
            DeviceError::Missing { .. }
            | DeviceError::Unreadable { .. }
            | DeviceError::Mountinfo { .. }
            | DeviceError::Host { .. } => None,
        }
    }
}

/// Resolves `path` to the block device it names (rule 1).
pub fn identify(root: &Root, path: &str) -> Result<Identity, DeviceError> {
    resolve(root, path).map(|(identity, _)| identity)
}

/// [`identify`], and where the device node is on this machine (under the root, or where a
/// link out of a test root led).
fn resolve(root: &Root, path: &str) -> Result<(Identity, PathBuf), DeviceError> {
    let missing = |source| DeviceError::Missing { path: path.to_owned(), source };
    let real = std::fs::canonicalize(root.path(path)).map_err(missing)?;
    let meta = std::fs::metadata(&real).map_err(missing)?;
    let kind = meta.file_type();
    if !kind.is_block_device() {
        let kind = if kind.is_file() {
            "a regular file"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_char_device() {
            "a character device"
        } else {
            "a special file"
        };
        return Err(DeviceError::NotBlock { path: path.to_owned(), kind: kind.into() });
    }
    let dev = DevNum::from_rdev(meta.rdev());
    let node = host_path(root, &real);
    let link = format!("/sys/dev/block/{dev}");
    let target =
        root.read_link(&link).map_err(|source| DeviceError::Host { path: path.to_owned(), source })?;
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok((Identity { path: path.to_owned(), node, name, dev }, real))
}

/// `real` as the host sees it (without the test root's prefix).
fn host_path(root: &Root, real: &Path) -> String {
    match real.strip_prefix(root.base()) {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => real.display().to_string(),
    }
}

/// A block device and its partitions, as the kernel names them.
struct Family {
    /// `(kernel name, device number)`, the device itself first.
    members: Vec<(String, DevNum)>,
}

impl Family {
    fn of(root: &Root, id: &Identity) -> Result<Family, DeviceError> {
        let host = |source| DeviceError::Host { path: id.path.clone(), source };
        let mut members = vec![(id.name.clone(), id.dev)];
        // Partitions are the subdirectories of the disk's sysfs directory that hold a
        // `partition` attribute (Documentation/ABI/stable/sysfs-block).
        let dir = format!("/sys/class/block/{}", id.name);
        for entry in root.list_dir(&dir).map_err(host)? {
            let part = format!("{dir}/{entry}");
            if root.exists(&format!("{part}/partition")) {
                let dev = root.read_trimmed(&format!("{part}/dev")).map_err(host)?;
                if let Some(dev) = DevNum::parse(&dev) {
                    members.push((entry, dev));
                }
            }
        }
        Ok(Family { members })
    }

    /// `sdc` for the device itself, `partition sdc1 of sdc` for a partition.
    fn what(&self, id: &Identity, name: &str) -> String {
        if name == id.name { format!("{}, {}", id.name, id.dev) } else { format!("its partition {name}") }
    }

    fn find_dev(&self, dev: DevNum) -> Option<&str> {
        self.members.iter().find(|(_, d)| *d == dev).map(|(n, _)| n.as_str())
    }

    fn find_name(&self, name: &str) -> Option<&str> {
        self.members.iter().find(|(n, _)| n == name).map(|(n, _)| n.as_str())
    }
}

/// Rules 2–5 over `/proc` and `/sys` under `root`: nothing mounts, holds, swaps on or reads
/// through a loop device from the device or any of its partitions.
pub fn check_unused(root: &Root, id: &Identity) -> Result<(), DeviceError> {
    let host = |source| DeviceError::Host { path: id.path.clone(), source };
    let family = Family::of(root, id)?;

    let mounts = crate::mountinfo::read(root).map_err(|err| match err {
        crate::mountinfo::MountinfoError::Read(source) => host(source),
        other => DeviceError::Mountinfo { path: id.path.clone(), message: other.to_string() },
    })?;
    for mount in mounts {
        // By number; btrfs shows an anonymous 0:N there instead, and its source is the device
        // node, matched by the kernel's name (the O_EXCL open catches it anyway; this names it).
        let anonymous = mount.dev.major == 0 && mount.source.starts_with("/dev/");
        let hit = family
            .find_dev(mount.dev)
            .or_else(|| anonymous.then(|| family.find_name(kernel_name(&mount.source))).flatten());
        if let Some(name) = hit {
            return Err(DeviceError::Mounted {
                path: id.path.clone(),
                what: family.what(id, name),
                mount_point: mount.mount_point,
            });
        }
    }

    for (name, _) in &family.members {
        let holders = root.list_dir(&format!("/sys/class/block/{name}/holders")).or_else(|err| {
            // A recorded tree, or an old kernel, may lack the directory: nothing holds it.
            if err.is_not_found() { Ok(Vec::new()) } else { Err(host(err)) }
        })?;
        if !holders.is_empty() {
            return Err(DeviceError::Held {
                path: id.path.clone(),
                what: family.what(id, name),
                holders: holders.join(", "),
            });
        }
    }

    let swaps = match root.read_to_string("/proc/swaps") {
        Ok(text) => text,
        // A kernel built without swap has no /proc/swaps: nothing is swap.
        Err(err) if err.is_not_found() => String::new(),
        Err(err) => return Err(host(err)),
    };
    for line in swaps.lines().skip(1) {
        // `Filename Type Size Used Priority`. A swap *file* lives on a file system, and a
        // mounted one is refused above. The kernel prints a swap device by its devtmpfs node
        // (`/dev/sdc2`, `/dev/dm-1`), so its last component is the kernel's name.
        let mut fields = line.split_whitespace();
        let (Some(file), Some(kind)) = (fields.next().map(crate::mountinfo::unescape), fields.next()) else {
            continue;
        };
        if kind == "partition" {
            if let Some(name) = family.find_name(kernel_name(&file)) {
                return Err(DeviceError::Swap { path: id.path.clone(), what: family.what(id, name) });
            }
        } else if let Some(name) = lives_on(root, &family, &file) {
            // A swap file whose file system is mounted is refused above; this is the one
            // whose file system was lazily unmounted (`umount -l`) and lives on for swap.
            return Err(DeviceError::SwapFile { path: id.path.clone(), what: family.what(id, name), file });
        }
    }

    check_loops(root, id, &family)
}

/// Rule 5's loop half: no loop device reads from the device (its backing file is the device
/// node, or a file on a file system on it). `/sys/block/loopN/loop/backing_file` is the
/// kernel's path of what loop opened (`d_path`, with ` (deleted)` when unlinked); it is
/// resolved and compared by device number, so another name for the same device still counts.
fn check_loops(root: &Root, id: &Identity, family: &Family) -> Result<(), DeviceError> {
    let host = |source| DeviceError::Host { path: id.path.clone(), source };
    let blocks = match root.list_dir("/sys/block") {
        Ok(names) => names,
        // A recorded tree (or a test root showing only some devices) without it: no loops.
        Err(err) if err.is_not_found() => return Ok(()),
        Err(err) => return Err(host(err)),
    };
    for loop_name in blocks.iter().filter(|n| n.starts_with("loop") && **n != id.name) {
        let backing = match root.read_to_string(&format!("/sys/block/{loop_name}/loop/backing_file")) {
            Ok(text) => text.trim_end_matches('\n').to_owned(),
            // Not bound to anything: the attribute exists only while a file is attached.
            Err(err) if err.is_not_found() => continue,
            Err(err) => return Err(host(err)),
        };
        let file = backing.strip_suffix(" (deleted)").unwrap_or(&backing);
        if let Some(name) = lives_on(root, family, file) {
            return Err(DeviceError::BacksLoop {
                path: id.path.clone(),
                what: family.what(id, name),
                loop_dev: format!("/dev/{loop_name}"),
                backing,
            });
        }
    }
    Ok(())
}

/// The member of `family` that `file` (a host path) is, or whose file system holds it: a
/// block device node by its device number, anything else by the device of its file system.
/// A path that cannot be examined (gone since the kernel printed it) is no one's.
fn lives_on<'a>(root: &Root, family: &'a Family, file: &str) -> Option<&'a str> {
    let meta = std::fs::metadata(root.path(file)).ok()?;
    let dev = if meta.file_type().is_block_device() { meta.rdev() } else { meta.dev() };
    family.find_dev(DevNum::from_rdev(dev))
}

/// The last component of a device path (`/dev/sdc2` → `sdc2`).
fn kernel_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A device that passed rules 1–6, held open `O_EXCL`: while this lives, the kernel lets no
/// one else claim it (no mount, no array, no other exclusive opener).
#[derive(Debug)]
pub struct Claim {
    identity: Identity,
    file: File,
    size: u64,
}

/// Rules 1–6 on `path`: the device it names, unused, claimed exclusively.
pub fn claim(root: &Root, path: &str) -> Result<Claim, DeviceError> {
    claim_for(root, path, false)
}

/// [`claim`], opened for writing too when `write` (for [`zero`]).
fn claim_for(root: &Root, path: &str, write: bool) -> Result<Claim, DeviceError> {
    let (identity, real) = resolve(root, path)?;
    // The files first, for a refusal that names the user (the mount point, the array). The
    // exclusive open is what holds: once it succeeds no mount, array, mapping or swap can
    // take the device until the claim is dropped, and one that appeared after the files
    // were read makes the open fail.
    check_unused(root, &identity)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        // On a block device O_EXCL without O_CREAT asks the kernel for an exclusive claim
        // (open(2)); it fails with EBUSY while anything else has one.
        .custom_flags(nix::libc::O_EXCL)
        .open(&real)
        .map_err(|source| match source.raw_os_error() {
            Some(nix::libc::EBUSY) => {
                DeviceError::Busy { path: path.to_owned(), node: identity.node.clone(), source }
            }
            _ => DeviceError::Unreadable { path: path.to_owned(), node: identity.node.clone(), source },
        })?;
    // The descriptor is the device identified, not one swapped in under the same name since.
    let meta = file.metadata().map_err(|source| DeviceError::Unreadable {
        path: path.to_owned(),
        node: identity.node.clone(),
        source,
    })?;
    let opened = DevNum::from_rdev(meta.rdev());
    if opened != identity.dev {
        return Err(DeviceError::Changed { path: path.to_owned(), was: identity.dev, now: opened });
    }
    let size = (&file).seek(SeekFrom::End(0)).map_err(|source| DeviceError::Unreadable {
        path: path.to_owned(),
        node: identity.node.clone(),
        source,
    })?;
    Ok(Claim { identity, file, size })
}

/// [`claim`], refusing unless `path` still names the device `was` (assessment recorded it;
/// apply checks again just before acting).
pub fn reclaim(root: &Root, path: &str, was: DevNum) -> Result<Claim, DeviceError> {
    let identity = identify(root, path)?;
    if identity.dev != was {
        return Err(DeviceError::Changed { path: path.to_owned(), was, now: identity.dev });
    }
    claim(root, path).and_then(|claim| {
        if claim.identity.dev == was {
            Ok(claim)
        } else {
            Err(DeviceError::Changed { path: path.to_owned(), was, now: claim.identity.dev })
        }
    })
}

impl Claim {
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The device's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Rule 7: reads the first and last MiB and the other places signatures live
    /// ([`SIGNATURE_PLACES`]) through the claimed descriptor.
    pub fn content(&self) -> Result<Content, DeviceError> {
        let mut buf = vec![0u8; MIB as usize];
        for (offset, len, place) in places(self.size) {
            let chunk = &mut buf[..len as usize];
            self.file.read_exact_at(chunk, offset).map_err(|source| DeviceError::Unreadable {
                path: self.identity.path.clone(),
                node: self.identity.node.clone(),
                source,
            })?;
            if let Some(at) = chunk.iter().position(|b| *b != 0) {
                return Ok(Content::Data { offset: offset + at as u64, place });
            }
        }
        Ok(Content::Zeros)
    }
}

/// Where data and signatures are looked for on a device of `size` bytes: `(offset, length,
/// what)`, each at most a MiB. [`Claim::content`] reads these and [`zero`] clears them, so a
/// zeroed device proves empty by construction.
fn places(size: u64) -> Vec<(u64, u64, &'static str)> {
    let mut places = vec![(0, size.min(MIB), "first MiB")];
    if size > MIB {
        let start = size.saturating_sub(MIB).max(MIB);
        places.push((start, size - start, "last MiB"));
    }
    for &(offset, place) in SIGNATURE_PLACES {
        if offset + PLACE_LEN <= size.saturating_sub(MIB) {
            places.push((offset, PLACE_LEN, place));
        }
    }
    places
}

/// Destroys what `path` holds as far as any "empty" proof can tell: zeros over its first and
/// last MiB and the other places signatures live ([`places`]), through an exclusive claim on
/// the device assessed (`was`), so rules 1–6 hold while it writes. What `pvfsctl down --wipe`
/// does last to a target's devices, after `wipefs --all`: wipefs erases only the signature
/// bytes, and the next `up` formats only devices that read as zeros where data lives (unless
/// the cluster file lists them under `wipe`). Returns the bytes written.
pub fn zero(root: &Root, path: &str, was: DevNum) -> Result<u64, DeviceError> {
    let identity = identify(root, path)?;
    if identity.dev != was {
        return Err(DeviceError::Changed { path: path.to_owned(), was, now: identity.dev });
    }
    let claim = claim_for(root, path, true)?;
    if claim.identity.dev != was {
        return Err(DeviceError::Changed { path: path.to_owned(), was, now: claim.identity.dev });
    }
    let failed =
        |source| DeviceError::Unreadable { path: path.to_owned(), node: claim.identity.node.clone(), source };
    let zeros = vec![0u8; MIB as usize];
    let mut written = 0;
    for (offset, len, _) in places(claim.size) {
        claim.file.write_all_at(&zeros[..len as usize], offset).map_err(failed)?;
        written += len;
    }
    // On the device before the claim ends: the next reader (blkid, mkfs) sees zeros.
    claim.file.sync_all().map_err(failed)?;
    Ok(written)
}

#[cfg(test)]
mod tests;
