//! The kernel's table of mounts, `/proc/self/mountinfo`, read under a [`Root`].
//!
//! Every question "what is mounted where" goes through here — the Mount step, the proof that
//! a device is unused (`device`), and checks that a client mount is the file system it should
//! be (beegfs, lustre, fuse.glusterfs) — so that one reader, written to the kernel's format,
//! answers them all. The kernel is asked rather than `findmnt`: its format has been the same
//! since Linux 2.6.26, while findmnt's options moved across util-linux versions (`-J` needs
//! 2.27; EL7 ships 2.23, which exits 1 with nothing printed, read as "nothing mounted").
//!
//! The format (Documentation/filesystems/proc.rst, "3.5 /proc/<pid>/mountinfo"):
//!
//! ```text
//! 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//! (1)(2)(3)   (4)   (5)      (6)      (7)   (8) (9)   (10)         (11)
//! ```
//!
//! mount ID, parent ID, `major:minor` of the file system's device (`st_dev`), the root of the
//! mount within the file system (not `/` for a bind mount of a directory), the mount point,
//! per-mount options, zero or more optional fields (`shared:N`, `master:N`, …) ended by a lone
//! `-`, the file system type, the source (may be empty), and the super block's options. Space,
//! tab, newline and backslash inside a field are written as octal escapes (`\040`); a mount
//! point whose directory was removed ends in `\040(deleted)`.

use crate::device::DevNum;
use crate::{Root, RootError};

/// Where the kernel publishes the calling process's mounts.
pub const PATH: &str = "/proc/self/mountinfo";

/// One line of mountinfo, with the escapes undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountInfo {
    pub id: u32,
    pub parent: u32,
    /// The device of the file system (`st_dev`). `0:N` for file systems without one (tmpfs,
    /// FUSE, NFS, Lustre, BeeGFS) and for btrfs, whose subvolumes get anonymous numbers.
    pub dev: DevNum,
    /// The directory of the file system mounted here: `/` for a whole file system, the
    /// directory for a bind mount of part of one.
    pub root: String,
    pub mount_point: String,
    /// Per-mount options (`rw,relatime`).
    pub options: String,
    /// `shared:N`, `master:N`, `propagate_from:N`, `unbindable`: mount propagation.
    pub optional: Vec<String>,
    /// `xfs`, `lustre`, `beegfs`, `fuse.glusterfs` (FUSE mounts are `fuse.SUBTYPE`).
    pub fstype: String,
    /// What was mounted: `/dev/md0`, `10.0.0.4@tcp:/LustreFS`, `server:/gv0`, `beegfs_nodev`;
    /// empty when the mount had none.
    pub source: String,
    /// Super block options (`rw,attr2,inode64`).
    pub super_options: String,
}

impl MountInfo {
    /// Whether this mounts a whole file system, not a bind mount of a directory inside one.
    pub fn is_whole(&self) -> bool {
        self.root == "/"
    }
}

/// mountinfo could not be read, or holds a line that is not in the kernel's format.
#[derive(Debug, thiserror::Error)]
pub enum MountinfoError {
    #[error("cannot read {PATH}: {0}")]
    Read(#[source] RootError),
    #[error(
        "{PATH} line {line}: {problem} in {text:?}; the kernel writes `ID PARENT MAJ:MIN ROOT MOUNT-POINT \
         OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS` (Documentation/filesystems/proc.rst), so this \
         is not the kernel's file: check what is mounted on /proc"
    )]
    Line { line: usize, text: String, problem: &'static str },
}

/// Reads and parses the mount table of the process, under `root` (`/` in production).
pub fn read(root: &Root) -> Result<Vec<MountInfo>, MountinfoError> {
    let text = root.read_to_string(PATH).map_err(MountinfoError::Read)?;
    parse(&text)
}

/// Parses mountinfo text. Any line not in the kernel's format is an error, never skipped: a
/// mount left out could be the one a safety check is looking for.
pub fn parse(text: &str) -> Result<Vec<MountInfo>, MountinfoError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, l)| {
            parse_line(l).map_err(|problem| MountinfoError::Line { line: i + 1, text: l.to_owned(), problem })
        })
        .collect()
}

fn parse_line(line: &str) -> Result<MountInfo, &'static str> {
    // Single spaces separate fields; an empty source shows as two spaces in a row, so the
    // line is split on each space, not on runs of whitespace.
    let mut fields = line.split(' ');
    let mut next = |what: &'static str| fields.next().ok_or(what);
    let id = next("no mount ID")?.parse().map_err(|_| "mount ID is not a number")?;
    let parent = next("no parent ID")?.parse().map_err(|_| "parent ID is not a number")?;
    let dev = DevNum::parse(next("no device number")?).ok_or("device number is not MAJOR:MINOR")?;
    let root = unescape(next("no root")?);
    let mount_point = unescape(next("no mount point")?);
    let options = next("no mount options")?.to_owned();
    let mut optional = Vec::new();
    loop {
        match next("no ` - ` separator before the file system type")? {
            "-" => break,
            field => optional.push(field.to_owned()),
        }
    }
    let fstype = unescape(next("no file system type")?);
    if fstype.is_empty() {
        return Err("empty file system type");
    }
    let source = unescape(next("no source")?);
    // Super options are the rest (older kernels end the line here for some file systems).
    let super_options = fields.collect::<Vec<_>>().join(" ");
    Ok(MountInfo { id, parent, dev, root, mount_point, options, optional, fstype, source, super_options })
}

/// The mount a process sees at `mount_point`, if any: of several mounts stacked on one
/// directory, the topmost (the one no other mount at that directory sits on); with no such
/// link between them, the last listed, as the kernel lists mounts in the order they were made.
pub fn visible_at<'a>(mounts: &'a [MountInfo], mount_point: &str) -> Option<&'a MountInfo> {
    let path = normalize(mount_point);
    let here: Vec<&MountInfo> = mounts.iter().filter(|m| m.mount_point == path).collect();
    let covered = |m: &MountInfo| here.iter().any(|other| other.parent == m.id && other.id != m.id);
    here.iter().rev().find(|m| !covered(m)).or_else(|| here.last()).copied()
}

/// `/mnt/gv0/` → `/mnt/gv0` (the kernel writes mount points without a trailing slash).
fn normalize(path: &str) -> &str {
    match path.trim_end_matches('/') {
        "" => "/",
        trimmed => trimmed,
    }
}

/// Undoes the kernel's octal escapes in mountinfo and /proc/swaps (`\040` for a space,
/// `\011` tab, `\012` newline, `\134` backslash). A backslash not followed by three octal
/// digits is kept as it is.
pub fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(digits)) => {
                out.push(digits.iter().fold(0u8, |n, d| n.wrapping_mul(8).wrapping_add(d - b'0')));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod tests;
