//! Values by their grammar: paths, devices, names, hosts and NIDs, sizes, packages and
//! repositories, units, keys, ports. Each refusal names its rule; the rules `validate` shares
//! come from `pvfs_host::grammar`, wrapped here in this policy's rule ids.

use crate::{FIREWALL_PORTS, PolicyError};
use pvfs_host::paths::{SYSTEM_TREES, is_system};

/// Absolute, canonical, printable, no hidden components.
pub(crate) fn canonical(path: &str) -> Result<(), PolicyError> {
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

pub(crate) fn not_system(path: &str) -> Result<(), PolicyError> {
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
pub(crate) fn device_path(path: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::device_path(path).map_err(|r| refused("device-path", path, r))
}

/// A refusal of the grammar `validate` shares ([`pvfs_host::grammar`]) under this policy's rule.
fn refused(rule: &'static str, value: &str, r: pvfs_host::grammar::Refusal) -> PolicyError {
    PolicyError::new(rule, value, r.problem, r.fix)
}

/// `/dev/mdN` or `/dev/md/NAME`.
pub(crate) fn md_device(path: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::md_device(path).map_err(|r| refused("device-path", path, r))
}

pub(crate) fn no_control(value: &str, what: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::no_control(value).map_err(|r| {
        refused("name", value, pvfs_host::grammar::Refusal { problem: format!("{what} {}", r.problem), ..r })
    })
}

/// Letters, digits, `_.+-`; not starting with `-` or `.`; at most `max` bytes.
pub(crate) fn simple_name(what: &str, value: &str, max: usize, shown: &str) -> Result<(), PolicyError> {
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

/// An LVM name; a volume group's also not one `/dev` holds ([`pvfs_host::grammar::vg_name`]).
pub(crate) fn lvm_name(what: &str, value: &str) -> Result<(), PolicyError> {
    let check =
        if what == "volume group" { pvfs_host::grammar::vg_name } else { pvfs_host::grammar::lvm_name };
    check(value).map_err(|r| {
        refused("name", value, pvfs_host::grammar::Refusal { problem: format!("{what} {}", r.problem), ..r })
    })
}

pub(crate) fn fsname(value: &str) -> Result<(), PolicyError> {
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
pub(crate) fn stripe(count: i64, size: u64) -> Result<(), PolicyError> {
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
pub(crate) fn lctl_param(name: &str, value: &str) -> Result<(), PolicyError> {
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

pub(crate) fn firewall_port(port: &pvfs_steps::PortRange) -> Result<(), PolicyError> {
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
pub(crate) fn firewalld_zone(zone: &str) -> Result<(), PolicyError> {
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

/// A host name or an IP address.
pub(crate) fn host(what: &str, value: &str) -> Result<(), PolicyError> {
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
pub(crate) fn nid(value: &str) -> Result<(), PolicyError> {
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
pub(crate) fn nid_list(value: &str) -> Result<(), PolicyError> {
    value.split([':', ',']).try_for_each(nid).map_err(|e| PolicyError { value: value.to_owned(), ..e })
}

/// `9216g`, `256K`, `1.5T`, `100%FREE`.
pub(crate) fn size(value: &str) -> Result<(), PolicyError> {
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

pub(crate) fn one_of(
    rule: &'static str,
    value: &str,
    allowed: &[&str],
    what: &str,
) -> Result<(), PolicyError> {
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

pub(crate) fn package_name(name: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::package_name(name).map_err(|r| refused("package-name", name, r))
}

pub(crate) fn package_version(name: &str, version: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::package_version(version).map_err(|r| {
        refused(
            "package-version",
            version,
            pvfs_host::grammar::Refusal { problem: format!("{} of {name}", r.problem), ..r },
        )
    })
}

pub(crate) fn repo_name(name: &str) -> Result<(), PolicyError> {
    simple_name("repository name", name, 64, "").map_err(|e| PolicyError { rule: "repo-name", ..e })
}

/// An apt suite or component (sources.list(5)): a word of letters, digits and `. _ + ~ / -`
/// (a suite may be an exact path such as `./` or `stable/updates`), not starting with `-`. No
/// whitespace: the deb822 fields are whitespace-separated lists, and a newline would add a
/// field.
pub(crate) fn apt_word(word: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::apt_word(word).map_err(|r| refused("repo-suite", word, r))
}

/// An ASCII-armored OpenPGP public key block (RFC 4880, 6.2) and nothing else: what apt reads
/// from a `.asc` keyring named by `Signed-By`.
pub(crate) fn armored_key(what: &str, key: &str) -> Result<(), PolicyError> {
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
pub(crate) fn url_chars(url: &str) -> Result<(), PolicyError> {
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

pub(crate) fn unit_name(unit: &str) -> Result<(), PolicyError> {
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

pub(crate) fn mount_options(options: &str) -> Result<(), PolicyError> {
    pvfs_host::grammar::mount_options(options).map_err(|r| refused("mount-options", options, r))
}

/// `TYPE BASE64`: one line that cannot carry `authorized_keys` options (`command=`, `from=`).
pub(crate) fn ssh_public_key(what: &str, key: &str) -> Result<(), PolicyError> {
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
pub(crate) fn openssh_private_key(key: &str) -> Result<(), PolicyError> {
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
