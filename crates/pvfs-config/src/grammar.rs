//! The grammar of every cluster-file value that reaches a file or a command line on a node.
//!
//! Each value that pvfs writes into a file (fstab, a `.repo` file, a BeeGFS `.conf`) or passes
//! as an argument (package installs, lvcreate, mkfs, mount, gluster) is checked here, so that
//! `validate` refuses it with its `file:line:col` instead of a node running it. The rules follow
//! each tool's own (cited at each function) and are never looser than the agent's policy
//! (`pvfs_policy`, the second lock on the node), so a file that validates has a plan
//! the agents accept. No value anywhere may hold a control character: a newline is how a value
//! turns into a second line of a file.
//!
//! Each check returns the reason and what to write instead, as one sentence for a diagnostic.

/// Refuses control characters (newline, tab, NUL, escape, ...): the one rule every value obeys.
pub(crate) fn no_control(what: &str, value: &str) -> Result<(), String> {
    pvfs_host::grammar::no_control(value).map_err(|r| said(what, r))
}

/// A node name: 1 to 64 letters, digits, `-`, `_` or `.`, not starting with `-` or `.`. It
/// names the node's certificate files (`NAME.crt`), its agent (`pvfs-agent --name`) and
/// labels its metrics, so it must be a plain file name that is never read as an option.
pub fn node_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['.', '-'])
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        return Ok(());
    }
    Err(format!(
        "node name {name:?} must be 1 to 64 letters, digits, '-', '_' or '.', not starting with '-' or '.' \
         (it names the node's certificate file)"
    ))
}

/// A path on a node: absolute, at most PATH_MAX, no control characters, no empty, `.` or `..`
/// components and no trailing `/`, the form the agent's policy compares paths in (so that
/// `/mnt/../etc` can never pass for a path under `/mnt`).
pub(crate) fn absolute_path(what: &str, path: &str) -> Result<(), String> {
    match path_problem(path) {
        Some(problem) => Err(format!(
            "{what} {path:?} {problem}: give an absolute path without `.`/`..` components, `//` or a trailing `/`"
        )),
        None => Ok(()),
    }
}

/// What keeps `path` from being a normalised absolute path, if anything.
fn path_problem(path: &str) -> Option<&'static str> {
    if !path.starts_with('/') {
        return Some("is not an absolute path");
    }
    if path.len() > 4095 {
        return Some("is longer than PATH_MAX");
    }
    if path.chars().any(char::is_control) {
        return Some("holds a control character");
    }
    if path == "/" {
        return None;
    }
    if path.ends_with('/') {
        return Some("ends with '/'");
    }
    path[1..].split('/').find_map(|component| match component {
        "" => Some("has an empty component (`//`)"),
        "." | ".." => Some("has a `.` or `..` component"),
        c if c.len() > 255 => Some("has a component longer than 255 bytes"),
        _ => None,
    })
}

/// A benchmark directory (`[bench] mount`): a normalised absolute path outside `/` and the
/// system trees, without hidden components — the agents' `bench-dir` rule
/// (`pvfs_policy::Policy::check_bench_dir`), so a file that validates names a directory they
/// take. (That its top-level directory exists, and that its file system has room, only the
/// node can say.)
pub(crate) fn bench_dir(path: &str) -> Result<(), String> {
    if let Some(problem) = pvfs_host::paths::canonical_problem(path) {
        return Err(format!(
            "[bench] mount {path:?} {problem}: give an absolute path such as /mnt/lustre/bench"
        ));
    }
    if pvfs_host::paths::is_system(path) {
        return Err(format!(
            "[bench] mount {path:?} is in a system tree (or is /): benchmarks write only in the cluster's file \
             system or a data directory, such as /mnt/lustre/bench"
        ));
    }
    Ok(())
}

/// The real io500 on the clients (`[bench] io500`): a normalised absolute path to a file named
/// `io500`, as the agents take it (they run no other program by this setting).
pub(crate) fn io500_program(path: &str) -> Result<(), String> {
    if let Some(problem) = pvfs_host::paths::canonical_problem(path) {
        return Err(format!(
            "[bench] io500 {path:?} {problem}: give the absolute path of the io500 program built by io500's \
             prepare.sh, such as /opt/io500/io500"
        ));
    }
    if !path.ends_with("/io500") {
        return Err(format!(
            "[bench] io500 {path:?}: the program's file is named io500 (the agents run no other program for \
             engine io500); give the path of the io500 program built by io500's prepare.sh"
        ));
    }
    Ok(())
}

/// A block device: a normalised absolute path under `/dev` (`/dev/sdc`,
/// `/dev/disk/azure/scsi1/lun0`), not in one of `/dev`'s pseudo file systems.
pub(crate) fn device_path(what: &str, path: &str) -> Result<(), String> {
    pvfs_host::grammar::device_path(path).map_err(|r| said(what, r))
}

/// An md array: `/dev/mdN` or `/dev/md/NAME` (mdadm(8), "DEVICE NAMES").
pub(crate) fn md_device(path: &str) -> Result<(), String> {
    pvfs_host::grammar::md_device(path).map_err(|r| said("raid", r))
}

/// An LVM volume group, thin pool or logical volume name, by lvm(8) "VALID NAMES": at most
/// 127 of `a-z A-Z 0-9 + _ . -`, not starting with `-`, not `.` or `..`, not starting with
/// `snapshot` or `pvmove` and without the suffixes LVM uses for its own hidden volumes. Also
/// not starting with `.`: the agent's policy refuses hidden names.
pub(crate) fn lvm_name(what: &str, name: &str) -> Result<(), String> {
    let check =
        if what == "volume group" { pvfs_host::grammar::vg_name } else { pvfs_host::grammar::lvm_name };
    check(name).map_err(|r| said(&format!("LVM {what} name"), r))
}

/// An lvcreate/pvcreate/vgcreate size: a number with an optional unit (`9216g`, `256K`,
/// `1.5T`), or for the pool an extent share (`95%FREE`, `100%VG`) as lvcreate(8) `-l` takes it.
pub(crate) fn lvm_size(what: &str, value: &str, share: bool) -> Result<(), String> {
    let (number, unit) = match value.split_once('%') {
        Some((n, of)) if share => (n, if ["FREE", "VG", "PVS", "ORIGIN"].contains(&of) { "" } else { "?" }),
        Some(_) => ("", ""),
        None => {
            let split = value.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(value.len());
            (&value[..split], &value[split..])
        }
    };
    let number_ok = !number.is_empty()
        && number.len() <= 20
        && number.starts_with(|c: char| c.is_ascii_digit())
        && number.chars().all(|c| c.is_ascii_digit() || c == '.')
        && number.matches('.').count() <= 1;
    let unit_ok = unit.is_empty() || (unit.len() == 1 && "bBsSkKmMgGtTpPeE".contains(unit));
    if number_ok && unit_ok {
        return Ok(());
    }
    let forms = if share { " or a share of the volume group (95%FREE)" } else { "" };
    Err(format!(
        "LVM {what} {value:?} is not a size: write a number with an optional unit (256K, 9216g){forms}"
    ))
}

/// A package name, as both rpm and dpkg take one: letters, digits, `.`, `+`, `-` or `_`,
/// starting with a letter or digit (Debian Policy 5.6.1 for dpkg; rpm's own names are a
/// superset, Fedora's naming guidelines keep them to these). Never starting with `-`: a
/// package manager would read `-oDPkg::Pre-Invoke::=…` as an option.
pub(crate) fn package_name(name: &str) -> Result<(), String> {
    pvfs_host::grammar::package_name(name)
        .map_err(|r| format!("{}: {}; write `name` or `name=version`", r.problem, r.fix))
}

/// A version pin: dpkg's `[epoch:]upstream[-revision]` (deb-version(7): alphanumerics and
/// `. + - ~ :`) or rpm's `version[-release]` (alphanumerics and `. _ + ~ ^`), starting with a
/// digit or letter.
pub(crate) fn package_version(name: &str, version: &str) -> Result<(), String> {
    pvfs_host::grammar::package_version(version).map_err(|r| format!("{} of {name}: {}", r.problem, r.fix))
}

/// A repository URL written into a `.repo` file: one parsed by the URL standard with one of
/// `schemes`, and written exactly as given (no whitespace, quotes, `\` or `#`, which the
/// parser would silently drop or a `.repo` reader would cut at).
pub(crate) fn url(what: &str, value: &str, schemes: &[&str]) -> Result<(), String> {
    let shown = match schemes.iter().map(|s| format!("{s}://")).collect::<Vec<_>>().as_slice() {
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
        [] => String::new(),
    };
    if let Some(c) = value
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '\\' | '#' | '<' | '>'))
    {
        return Err(format!(
            "{what} {value:?} holds {c:?}, which a .repo file cannot carry in a URL (a newline would add a line to it): \
             give an {shown} URL, percent-encoding such characters"
        ));
    }
    if value.len() > 2048 {
        return Err(format!("{what} is longer than 2048 bytes: give an {shown} URL"));
    }
    let parsed = url::Url::parse(value)
        .map_err(|err| format!("{what} {value:?} is not a URL ({err}): give an {shown} URL"))?;
    if !schemes.contains(&parsed.scheme()) {
        return Err(format!("{what} {value:?} must be an {shown} URL"));
    }
    if parsed.scheme() != "file" && parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("{what} {value:?} names no host: give an {shown} URL"));
    }
    Ok(())
}

/// An apt suite or component, as a deb822 source lists them (sources.list(5): whitespace-separated
/// words; a suite may be a path such as `stable/updates`, or an exact path ending in `/`):
/// letters, digits and `. _ + ~ / -`, not starting with `-`. The agent's policy holds the same.
pub(crate) fn apt_word(what: &str, word: &str) -> Result<(), String> {
    pvfs_host::grammar::apt_word(word).map_err(|r| said(what, r))
}

/// An ASCII-armored OpenPGP public key block (RFC 4880, 6.2), what apt reads from a `.asc`
/// keyring named by `Signed-By` (sources.list(5)): the BEGIN line, armor headers, base64 and
/// its checksum, the END line, at most 64 KiB. The agent's policy holds the same.
pub(crate) fn armored_key(text: &str) -> Result<(), String> {
    pvfs_host::grammar::armored_key(text).map_err(|r| format!("{}; {}", r.problem, r.fix))
}

/// Mount options for fstab and `mount -o` (fstab(5)): comma-separated `key` or `key=value` of
/// letters, digits and `_ - . : @ +`, so no whitespace or `#` (fstab's field and comment
/// separators), no path and no quote. Options that make a mount read or write other files or
/// devices or pull in other units are refused, as the agent's policy refuses them.
pub(crate) fn mount_options(options: &str) -> Result<(), String> {
    pvfs_host::grammar::mount_options(options).map_err(|r| format!("{}: {}", r.problem, r.fix))
}

/// A refusal of the shared grammar as a diagnostic: what the value is, why, and what to write.
fn said(what: &str, r: pvfs_host::grammar::Refusal) -> String {
    format!("{what} {}: {}", r.problem, r.fix)
}

/// A file system label for `mkfs -L`: xfs takes at most 12 bytes (mkfs.xfs(8)), ext4 16
/// (mke2fs(8)); letters, digits, `_ . + -`, not starting with `-` (an option) or `.`.
pub(crate) fn label(fs: &str, label: &str) -> Result<(), String> {
    let max = if fs == "xfs" { 12 } else { 16 };
    let ok = !label.is_empty()
        && label.len() <= max
        && !label.starts_with(['-', '.'])
        && label.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-'));
    if ok {
        return Ok(());
    }
    Err(format!(
        "label {label:?} must be 1 to {max} letters, digits, '_', '.', '+' or '-' for {fs}, not starting with '-' or '.'"
    ))
}

/// An I/O scheduler name as `/sys/block/DEV/queue/scheduler` lists them (`mq-deadline`,
/// `none`, `bfq`, `kyber`, `deadline`, `noop`, `cfq`).
pub(crate) fn scheduler(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && !name.starts_with('-')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        return Ok(());
    }
    Err(format!(
        "{name:?} is not an I/O scheduler name: use one the kernel lists in /sys/block/DEV/queue/scheduler \
         (mq-deadline, none, bfq, kyber)"
    ))
}

/// A key of a BeeGFS service's `.conf` file: BeeGFS's keys are camel-case words
/// (`tuneNumWorkers`, `connMaxInternodeNum`), read by `key = value` lines.
pub(crate) fn beegfs_key(key: &str) -> Result<(), String> {
    let ok = !key.is_empty()
        && key.len() <= 64
        && key.starts_with(|c: char| c.is_ascii_alphabetic())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        return Ok(());
    }
    Err(format!("{key:?} is not a BeeGFS configuration key (letters and digits, such as tuneNumWorkers)"))
}

/// A BeeGFS `.conf` value: one line (the file is `key = value` lines), no `#` (BeeGFS's
/// config reader cuts a comment there), not empty.
pub(crate) fn beegfs_value(key: &str, value: &str) -> Result<(), String> {
    no_control(key, value)?;
    if value.trim().is_empty() || value.len() > 1024 || value.contains('#') {
        return Err(format!(
            "{key} = {value:?}: a BeeGFS setting is one non-empty line without '#' (at most 1024 bytes)"
        ));
    }
    // A value the daemon uses as a path: the agent's rule (pvfs_host::paths), word for word.
    pvfs_host::paths::setting_paths(pvfs_host::paths::Tool::Beegfs, key, value).map(drop)
}

/// A `gluster volume set` option name: dotted lower-case words (`performance.cache-size`).
pub(crate) fn gluster_key(key: &str) -> Result<(), String> {
    let ok = !key.is_empty()
        && key.len() <= 128
        && key.starts_with(|c: char| c.is_ascii_alphabetic())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if ok {
        return Ok(());
    }
    Err(format!("{key:?} is not a GlusterFS volume option name (such as performance.cache-size)"))
}

/// A `gluster volume set` value: one argument, so no control characters, not empty and not
/// starting with `-` (the gluster CLI would read it as an option).
pub(crate) fn gluster_value(key: &str, value: &str) -> Result<(), String> {
    no_control(key, value)?;
    if value.is_empty() || value.len() > 1024 || value.starts_with('-') {
        return Err(format!(
            "{key} = {value:?}: a GlusterFS option value is 1 to 1024 characters, not starting with '-'"
        ));
    }
    pvfs_host::paths::setting_paths(pvfs_host::paths::Tool::Gluster, key, value).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_grammar_takes_the_tools_forms_and_refuses_injections() {
        let ok: [Result<(), String>; 18] = [
            node_name("oss00.cluster-1_a"),
            device_path("disk", "/dev/disk/azure/scsi1/lun0"),
            md_device("/dev/md0"),
            md_device("/dev/md/brick"),
            lvm_name("volume group", "rhgs-data"),
            lvm_name("logical volume", "brick+1.x_y"),
            lvm_size("pool size", "95%FREE", true),
            lvm_size("size", "9216g", false),
            package_name("lustre-client-dkms"),
            package_version("kernel", "1:3.10.0-1160.el7_lustre.x86_64"),
            url(
                "baseurl",
                "https://downloads.whamcloud.com/public/lustre/el7/",
                &["https", "http", "ftp", "file"],
            ),
            url("baseurl", "file:///srv/repo", &["https", "file"]),
            mount_options("defaults,noatime,logbsize=256k,x-systemd.mount-timeout=90"),
            label("xfs", "brick1"),
            beegfs_value("tuneNumWorkers", "64"),
            gluster_value("performance.cache-size", "1GB"),
            beegfs_value("logStdFile", "/var/log/beegfs-storage.log"),
            gluster_value("diagnostics.client-log-file", "/var/log/glusterfs/client.log"),
        ];
        for (i, r) in ok.iter().enumerate() {
            assert!(r.is_ok(), "{i}: {r:?}");
        }
        let refused: [Result<(), String>; 27] = [
            node_name("-rf"),
            node_name("a\nb"),
            node_name(".hidden"),
            device_path("disk", "/etc/passwd"),
            device_path("disk", "/dev/../etc/shadow"),
            device_path("disk", "/dev/shm/x"),
            md_device("/dev/sdc"),
            lvm_name("volume group", "-ffy"),
            lvm_name("logical volume", "lv\nx"),
            lvm_name("logical volume", "pool_tdata"),
            lvm_name("volume group", "fd"),
            lvm_size("size", "1g;reboot", false),
            lvm_size("size", "95%FREE", false),
            package_name("-oDPkg::Pre-Invoke::=touch /tmp/x"),
            package_version("fio", "3.1\n"),
            url("baseurl", "https://example.com/\n[evil]", &["https"]),
            url("baseurl", "gopher://example.com/", &["https"]),
            url("baseurl", "https://", &["https"]),
            mount_options("defaults\n/dev/sdz /etc xfs defaults 0 0"),
            mount_options("helper=/bin/sh"),
            label("xfs", "-L"),
            beegfs_value("tuneNumWorkers", "8\nsysMgmtdHost = evil"),
            gluster_value("auth.allow", "--mode=script"),
            // Paths a daemon would use: the agent's rule (pvfs_host::paths).
            beegfs_value("logStdFile", "/etc/beegfs/../cron.d/evil"),
            beegfs_value("connAuthFile", "../../etc/shadow"),
            gluster_value("diagnostics.client-log-file", "../../etc/cron.d/x"),
            mount_options("users,suid"),
        ];
        for (i, r) in refused.iter().enumerate() {
            assert!(r.is_err(), "{i} was accepted");
        }
    }
}
