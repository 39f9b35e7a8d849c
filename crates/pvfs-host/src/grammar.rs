//! The grammar of the values that reach a file or a command line on a node, one rule each.
//!
//! A value the cluster-file validator accepts must be one the agent's policy accepts, or
//! `validate` would pass a file whose plan the agents refuse (and, the other way, refuse what
//! they would take). Both therefore call these functions: `pvfs-config`'s grammar puts the
//! refusal at the value's `file:line:col`, `pvfs-steps`' policy names its rule. They live here,
//! under both, for the reason `mount_options` and `paths` do (the config crate cannot depend on
//! `pvfs-steps`). Each rule follows its tool's own grammar, cited at the function; where the
//! two copies these replaced had drifted apart, the stricter one was kept.

use crate::paths::canonical_problem;

/// Why a value is refused, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// A clause that starts with the value, quoted: `"sda" is not absolute`.
    pub problem: String,
    /// What to do, in one sentence.
    pub fix: &'static str,
}

impl Refusal {
    fn new(problem: String, fix: &'static str) -> Refusal {
        Refusal { problem, fix }
    }
}

/// No control character (newline, tab, NUL, escape, …): the one rule every value obeys, since
/// a newline is how a value turns into a second line of a file.
pub fn no_control(value: &str) -> Result<(), Refusal> {
    match value.chars().find(|c| c.is_control()) {
        Some(c) => Err(Refusal::new(
            format!("{value:?} holds the control character {c:?}"),
            "give a one-line value without control characters",
        )),
        None => Ok(()),
    }
}

/// A block device: a canonical absolute path under `/dev` (`/dev/sdc`,
/// `/dev/disk/azure/scsi1/lun0`), not in one of `/dev`'s pseudo file systems.
pub fn device_path(path: &str) -> Result<(), Refusal> {
    let first = path.strip_prefix("/dev/").map(|rest| rest.split('/').next().unwrap_or_default());
    let problem = match canonical_problem(path) {
        Some(problem) => problem,
        None if first.is_none() => "is not under /dev",
        None if first.is_some_and(|f| DEV_PSEUDO.contains(&f)) => "is not a block device",
        None => return Ok(()),
    };
    Err(Refusal::new(
        format!("{path:?} {problem}"),
        "name a block device by its canonical path under /dev, e.g. /dev/disk/azure/scsi1/lun0",
    ))
}

/// An md array: `/dev/mdN` or `/dev/md/NAME` (mdadm(8), "DEVICE NAMES"), NAME at most 32 of
/// letters, digits and `_ . + -`, not starting with `-` or `.`.
pub fn md_device(path: &str) -> Result<(), Refusal> {
    device_path(path)?;
    let numbered =
        path.strip_prefix("/dev/md").is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    let named = path.strip_prefix("/dev/md/").is_some_and(|n| {
        !n.is_empty()
            && n.len() <= 32
            && !n.starts_with(['-', '.'])
            && n.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-'))
    });
    if numbered || named {
        return Ok(());
    }
    Err(Refusal::new(
        format!("{path:?} is not an md array"),
        "name it /dev/mdN (such as /dev/md0) or /dev/md/NAME",
    ))
}

/// `/dev`'s pseudo file systems and its links to a process's own descriptors: nothing under
/// them is a block device.
const DEV_PSEUDO: [&str; 8] = ["shm", "pts", "mqueue", "hugepages", "fd", "stdin", "stdout", "stderr"];

/// Names every Linux system's `/dev` holds (devtmpfs and udev make them at boot), besides
/// [`DEV_PSEUDO`]: lvm(8) "VALID NAMES" says a volume group "cannot be called anything that
/// exists in /dev/ at the time of creation", since its volumes appear as `/dev/VG/LV`.
const DEV_NAMES: [&str; 25] = [
    "block",
    "btrfs-control",
    "bus",
    "char",
    "console",
    "core",
    "cpu",
    "disk",
    "dri",
    "full",
    "fuse",
    "input",
    "kmsg",
    "log",
    "loop-control",
    "mapper",
    "md",
    "mem",
    "net",
    "null",
    "ptmx",
    "random",
    "tty",
    "urandom",
    "zero",
];

/// A volume group name: an [`lvm_name`] that is not a name every system's `/dev` holds
/// (lvm(8): a VG "cannot be called anything that exists in /dev/"; its volumes are
/// `/dev/VG/LV`, which must be a block device's path).
pub fn vg_name(name: &str) -> Result<(), Refusal> {
    lvm_name(name)?;
    if DEV_PSEUDO.contains(&name) || DEV_NAMES.contains(&name) {
        return Err(Refusal::new(
            format!("{name:?} is a name /dev already holds, which lvm(8) refuses for a volume group"),
            "choose another name (its volumes appear as /dev/VG/LV)",
        ));
    }
    Ok(())
}

/// An LVM volume group, thin pool or logical volume name, by lvm(8) "VALID NAMES": at most 127
/// of `a-z A-Z 0-9 + _ . -`, not starting with `-` (nor `.`: hidden names are never pvfs's), not
/// starting with `snapshot` or `pvmove`, and without the suffixes LVM uses for its own hidden
/// volumes.
pub fn lvm_name(name: &str) -> Result<(), Refusal> {
    let chars = !name.is_empty()
        && name.len() <= 127
        && !name.starts_with(['-', '.'])
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '_' | '.' | '-'));
    if !chars {
        return Err(Refusal::new(
            format!("{name:?} is not an LVM name"),
            "write 1 to 127 letters, digits, '+', '_', '.' or '-', not starting with '-' or '.' (lvm(8), VALID NAMES)",
        ));
    }
    const RESERVED: [&str; 13] = [
        "_cdata", "_cmeta", "_corig", "_iorig", "_mimage", "_mlog", "_pmspare", "_rimage", "_rmeta",
        "_tdata", "_tmeta", "_vorigin", "_vdata",
    ];
    if name.starts_with("snapshot") || name.starts_with("pvmove") || RESERVED.iter().any(|r| name.contains(r))
    {
        return Err(Refusal::new(
            format!("{name:?} is a name LVM reserves for its own volumes"),
            "choose another name",
        ));
    }
    Ok(())
}

/// A package name, as both rpm and dpkg take one: letters, digits, `.`, `+`, `-` or `_`,
/// starting with a letter or digit (Debian Policy 5.6.1; rpm's own names are a superset,
/// Fedora's naming guidelines keep them to these). Never starting with `-`: a package manager
/// would read `-oDPkg::Pre-Invoke::=…` as an option.
pub fn package_name(name: &str) -> Result<(), Refusal> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_'));
    if ok {
        return Ok(());
    }
    Err(Refusal::new(
        format!("{name:?} is not a package name"),
        "package names are letters, digits, '.', '+', '-' or '_', starting with a letter or digit (never '-': that is an option)",
    ))
}

/// A version pin: dpkg's `[epoch:]upstream[-revision]` (deb-version(7): alphanumerics and
/// `. + - ~ :`) or rpm's `version[-release]` (alphanumerics and `. _ + ~ ^`), starting with a
/// letter or digit.
pub fn package_version(version: &str) -> Result<(), Refusal> {
    let ok = !version.is_empty()
        && version.len() <= 128
        && version.starts_with(|c: char| c.is_ascii_alphanumeric())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_' | '~' | ':' | '^'));
    if ok {
        return Ok(());
    }
    Err(Refusal::new(
        format!("{version:?} is not a package version"),
        "versions are letters, digits and . + - _ ~ : ^, starting with a letter or digit",
    ))
}

/// An apt suite or component, as a deb822 source lists them (sources.list(5): whitespace-
/// separated words; a suite may be a path such as `stable/updates`, or an exact path ending in
/// `/`): letters, digits and `. _ + ~ / -`, not starting with `-`.
pub fn apt_word(word: &str) -> Result<(), Refusal> {
    let ok = !word.is_empty()
        && word.len() <= 128
        && !word.starts_with('-')
        && word.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '~' | '/' | '-'));
    if ok {
        return Ok(());
    }
    Err(Refusal::new(
        format!("{word:?} is not an apt suite or component"),
        "write one word of letters, digits and . _ + ~ / -, not starting with '-' (bookworm, jammy-updates, main)",
    ))
}

/// An ASCII-armored OpenPGP public key block (RFC 4880, 6.2) and nothing else, what apt reads
/// from a `.asc` keyring named by `Signed-By` (sources.list(5)): the BEGIN line, armor
/// headers, base64 and its checksum, the END line, at most 64 KiB.
pub fn armored_key(text: &str) -> Result<(), Refusal> {
    const BEGIN: &str = "-----BEGIN PGP PUBLIC KEY BLOCK-----";
    const END: &str = "-----END PGP PUBLIC KEY BLOCK-----";
    let body = text.trim_end().strip_prefix(BEGIN).and_then(|rest| rest.strip_suffix(END));
    let plain = |c: char| c.is_ascii_graphic() || matches!(c, ' ' | '\n' | '\r');
    match body {
        Some(body) if text.len() <= 65536 && body.chars().all(plain) && !body.contains("-----") => Ok(()),
        _ => Err(Refusal::new(
            "it is not one ASCII-armored OpenPGP public key (BEGIN PGP PUBLIC KEY BLOCK … END, at most 64 KiB)".into(),
            "export one with `gpg --armor --export FINGERPRINT`, or from a binary keyring with \
             `gpg --no-default-keyring --keyring ./KEYRING.gpg --armor --export`",
        )),
    }
}

/// Mount options for fstab and `mount -o` (fstab(5)): comma-separated `key` or `key=value` of
/// letters, digits and `_ - . : @ +`, so no whitespace or `#` (fstab's field and comment
/// separators), no path and no quote; and none that makes a mount use other files, devices or
/// units ([`crate::mount_options::is_refused`]).
pub fn mount_options(options: &str) -> Result<(), Refusal> {
    if options.is_empty() || options.len() > 1024 {
        return Err(Refusal::new(
            format!("mount options {options:?} are empty or longer than 1024 bytes"),
            "write comma-separated options such as \"defaults,noatime\"",
        ));
    }
    for option in options.split(',') {
        let (key, value) = option.split_once('=').unwrap_or((option, ""));
        let chars_ok = |s: &str| {
            s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '@' | '+'))
        };
        if key.is_empty() || !chars_ok(key) || !chars_ok(value) {
            return Err(Refusal::new(
                format!(
                    "mount option {option:?} holds a character fstab cannot carry (whitespace, '#', '/', quotes, \
                     control characters) or is empty"
                ),
                "write comma-separated options such as \"defaults,noatime\"",
            ));
        }
        if crate::mount_options::is_refused(key) {
            return Err(Refusal::new(
                format!("mount option {key} makes the mount use other files, devices, programs or users"),
                "leave it out: pvfs does not set it (mount by hand if this node needs it)",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_takes_its_tools_forms_and_refuses_the_rest() {
        assert!(device_path("/dev/disk/azure/scsi1/lun0").is_ok());
        for bad in [
            "sda",
            "/dev/../etc/shadow",
            "/dev/shm/x",
            "/etc/passwd",
            "/dev/sdc/",
            "/dev/sd\nc",
            "/dev/fd/3",
            "/dev/stdin",
        ] {
            assert!(device_path(bad).is_err(), "{bad}");
        }
        // A pseudo tree is a whole name under /dev, not a prefix of one.
        assert!(device_path("/dev/stdata/lv").is_ok() && device_path("/dev/fdvg/lv").is_ok());
        // A volume group is never a name /dev holds (lvm(8)): its volumes are /dev/VG/LV.
        assert!(vg_name("vg_pvfs").is_ok() && vg_name("fdata").is_ok());
        for bad in ["fd", "shm", "disk", "mapper", "stdout", "urandom", "-vg"] {
            assert!(vg_name(bad).is_err(), "{bad}");
        }
        assert!(md_device("/dev/md0").is_ok() && md_device("/dev/md/data").is_ok());
        assert!(md_device("/dev/md/-x").is_err() && md_device("/dev/sdc").is_err());
        assert!(lvm_name("vg_pvfs").is_ok());
        for bad in ["-vg", ".vg", "snapshot1", "pool_tdata", "lv_rimage_0", "a b", ""] {
            assert!(lvm_name(bad).is_err(), "{bad}");
        }
        assert!(package_name("lustre-client").is_ok() && package_name("_x").is_err());
        assert!(package_name("-oDPkg::Pre-Invoke::=x").is_err());
        assert!(package_version("2.15.4-1.el8").is_ok() && package_version("1:2.0~rc1").is_ok());
        assert!(package_version("-1").is_err());
        assert!(apt_word("stable/updates").is_ok() && apt_word("-x").is_err() && apt_word("a b").is_err());
        assert!(mount_options("defaults,noatime,_netdev").is_ok());
        for bad in ["", "defaults noatime", "x-systemd.requires=/dev/sdb", "users", "loop=/dev/loop0"] {
            assert!(mount_options(bad).is_err(), "{bad}");
        }
        assert!(no_control("x\ny").is_err() && no_control("x y").is_ok());
        let key =
            "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBF==\n=abcd\n-----END PGP PUBLIC KEY BLOCK-----\n";
        assert!(armored_key(key).is_ok() && armored_key("ssh-ed25519 AAAA").is_err());
    }
}
