//! Whether a node can run the binary bootstrap installs: what the binary needs (its machine and
//! the newest glibc symbol version it links, read from its own ELF headers) against what the
//! node has (`uname -m`, and `getconf GNU_LIBC_VERSION` or the first line of `ldd --version`,
//! read by the probe), so that a node that cannot run it is refused before anything is written
//! there, rather than left with an agent that fails to start.
//!
//! The requirement is read from the binary rather than written down here because it depends on
//! how that binary was built: `cargo xtask dist` builds against glibc 2.17 (EL7), while a plain
//! `cargo build` on the coordinator's machine links that machine's newest symbol versions
//! (2.34 on Debian 12), and either may be given to `--from`.

use std::fmt;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// A glibc version, as symbol versions (`GLIBC_2.3.4`) and `getconf` (`glibc 2.17`) name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct GlibcVersion(pub u32, pub u32, pub u32);

impl GlibcVersion {
    /// `2.17` or `2.3.4`; `None` for anything else (`PRIVATE`, `2.36-9+deb12u4`).
    pub fn parse(text: &str) -> Option<GlibcVersion> {
        let mut parts = text.split('.').map(|p| p.parse::<u32>().ok());
        let major = parts.next()??;
        let minor = parts.next()??;
        let patch = match parts.next() {
            None => 0,
            Some(p) => p?,
        };
        parts.next().is_none().then_some(GlibcVersion(major, minor, patch))
    }
}

impl fmt::Display for GlibcVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GlibcVersion(major, minor, 0) => write!(f, "{major}.{minor}"),
            GlibcVersion(major, minor, patch) => write!(f, "{major}.{minor}.{patch}"),
        }
    }
}

/// What the binary needs of a node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// The machine as `uname -m` names it (`x86_64`, `aarch64`); `None` when the ELF machine is
    /// not one of those bootstrap knows, which is then not checked.
    pub machine: Option<&'static str>,
    /// The newest `GLIBC_` version among the binary's symbol version references; `None` for a
    /// binary that names none (static, or not linked against glibc).
    pub glibc: Option<GlibcVersion>,
}

/// The C library a node reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Libc {
    Glibc(GlibcVersion),
    /// Something else answered (musl's loader, say): its first line, as it said it.
    Other(String),
}

/// Reads the probe's answer: `getconf GNU_LIBC_VERSION` (glibc's `confstr`, `glibc 2.17`) or,
/// where getconf does not know the variable, the first line of `ldd --version`
/// (`ldd (GNU libc) 2.17`, `ldd (Debian GLIBC 2.36-9+deb12u14) 2.36`: the version is the last
/// word). `None` when nothing answered.
pub fn parse_libc(text: &str) -> Option<Libc> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    if let Some(version) = line.strip_prefix("glibc ").and_then(|v| GlibcVersion::parse(v.trim())) {
        return Some(Libc::Glibc(version));
    }
    // glibc's ldd names itself "ldd (… libc …)" or "ldd (… GLIBC …)", whatever the distribution
    // puts in the parentheses (Gentoo: "ldd (Gentoo 2.43-r2 (patchset 3)) 2.43"), and ends with
    // the upstream version.
    if line.starts_with("ldd (")
        && let Some(version) = line.rsplit(' ').next().and_then(GlibcVersion::parse)
    {
        return Some(Libc::Glibc(version));
    }
    Some(Libc::Other(line.to_owned()))
}

/// Why `needs` cannot run on a node that reported `machine` and `libc`; `None` when it can.
pub fn refusal(node: &str, needs: &Needs, machine: Option<&str>, libc: Option<&Libc>) -> Option<String> {
    if let Some(wanted) = needs.machine {
        match machine {
            Some(m) if m == wanted => {}
            Some(m) => {
                return Some(format!(
                    "node {node}: it is {m} (uname -m), and the binary to install is built for {wanted}; \
                     give --from (or --deb) a build for {m}, or leave this node out with --node"
                ));
            }
            None => {
                return Some(format!(
                    "node {node}: `uname -m` did not answer there, so whether it can run a binary built \
                     for {wanted} is unknown; nothing was installed"
                ));
            }
        }
    }
    let wanted = needs.glibc?;
    let what = match libc {
        Some(Libc::Glibc(have)) if *have >= wanted => return None,
        Some(Libc::Glibc(have)) => format!("glibc {have}"),
        Some(Libc::Other(said)) => format!("no glibc (`ldd --version` says {said:?})"),
        None => "no glibc that `getconf GNU_LIBC_VERSION` or `ldd --version` could name".to_owned(),
    };
    Some(format!(
        "node {node}: it has {what}, and the binary to install needs glibc {wanted} or newer; nothing \
         was installed (the binaries `cargo xtask dist` builds need 2.17: EL7 and later)"
    ))
}

/// `uname -m`'s name for an ELF `e_machine`.
fn machine_name(e_machine: u16) -> Option<&'static str> {
    match e_machine {
        62 => Some("x86_64"),
        183 => Some("aarch64"),
        21 => Some("ppc64le"),
        243 => Some("riscv64"),
        _ => None,
    }
}

/// An ELF file bootstrap cannot read its needs from.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a 64-bit little-endian ELF executable ({0})")]
    NotElf(&'static str),
}

/// `SHT_GNU_verneed`: the section of symbol version references (`.gnu.version_r`).
const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
/// Bounds on what is read, far above any real binary's, so a corrupt header cannot make this
/// allocate gigabytes.
const MAX_SECTION_HEADERS: u64 = 1 << 16;
const MAX_VERNEED: u64 = 1 << 20;
const MAX_DYNSTR: u64 = 16 << 20;

/// Reads the machine and the glibc symbol versions `path` needs from its ELF headers: the ELF
/// header's `e_machine`, and the version references of `.gnu.version_r` (every `Vernaux` named
/// `GLIBC_x.y[.z]`, weak ones included: `objdump -T` lists those too, and the check in
/// `cargo xtask dist` counts them).
pub fn needs(path: &Path) -> Result<Needs, ElfError> {
    let mut file = std::fs::File::open(path)?;
    let mut header = [0u8; 64];
    file.read_exact(&mut header).map_err(|_| ElfError::NotElf("shorter than an ELF header"))?;
    if header[..4] != *b"\x7fELF" {
        return Err(ElfError::NotElf("no ELF magic"));
    }
    if header[4] != 2 || header[5] != 1 {
        return Err(ElfError::NotElf("32-bit or big-endian"));
    }
    let machine = machine_name(u16_at(&header, 18));
    let shoff = u64_at(&header, 0x28);
    let shentsize = u64::from(u16_at(&header, 0x3a));
    let shnum = u64::from(u16_at(&header, 0x3c));
    if shnum == 0 {
        // No section table (stripped of it): the version references cannot be found this way.
        return Ok(Needs { machine, glibc: None });
    }
    if shentsize != 64 || shnum > MAX_SECTION_HEADERS {
        return Err(ElfError::NotElf("a section header table of an unknown shape"));
    }
    let table = read_at(&mut file, shoff, shnum * shentsize)?;
    let section = |i: u64| -> Option<&[u8]> {
        let start = usize::try_from(i * shentsize).ok()?;
        table.get(start..start + 64)
    };
    let Some(verneed) = (0..shnum).filter_map(section).find(|s| u32_at(s, 4) == SHT_GNU_VERNEED) else {
        return Ok(Needs { machine, glibc: None });
    };
    let (offset, size, link) = (u64_at(verneed, 24), u64_at(verneed, 32), u32_at(verneed, 40));
    let strings = section(u64::from(link)).ok_or(ElfError::NotElf("version references without strings"))?;
    if size > MAX_VERNEED || u64_at(strings, 32) > MAX_DYNSTR {
        return Err(ElfError::NotElf("implausibly large version sections"));
    }
    let refs = read_at(&mut file, offset, size)?;
    let strings = read_at(&mut file, u64_at(strings, 24), u64_at(strings, 32))?;
    Ok(Needs { machine, glibc: glibc_references(&refs, &strings).into_iter().max() })
}

/// The `GLIBC_` versions among the `Verneed`/`Vernaux` chains of a `.gnu.version_r` section.
/// Every offset is checked; a chain that leaves the section ends there.
fn glibc_references(refs: &[u8], strings: &[u8]) -> Vec<GlibcVersion> {
    let name = |offset: u32| -> Option<&str> {
        let rest = strings.get(usize::try_from(offset).ok()?..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&rest[..end]).ok()
    };
    let mut versions = Vec::new();
    let mut need = 0usize;
    // At most one visit per 16-byte record: a looping chain cannot spin.
    for _ in 0..refs.len() / 16 {
        let Some(entry) = refs.get(need..need + 16) else { break };
        let mut aux = need.saturating_add(u32_at(entry, 8) as usize);
        for _ in 0..u16_at(entry, 2) {
            let Some(record) = refs.get(aux..aux + 16) else { break };
            if let Some(version) =
                name(u32_at(record, 8)).and_then(|n| n.strip_prefix("GLIBC_")).and_then(GlibcVersion::parse)
            {
                versions.push(version);
            }
            match u32_at(record, 12) {
                0 => break,
                next => aux = aux.saturating_add(next as usize),
            }
        }
        match u32_at(entry, 12) {
            0 => break,
            next => need = need.saturating_add(next as usize),
        }
    }
    versions
}

fn read_at(file: &mut std::fs::File, offset: u64, len: u64) -> Result<Vec<u8>, ElfError> {
    let len = usize::try_from(len).map_err(|_| ElfError::NotElf("section too large"))?;
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = vec![0u8; len];
    file.read_exact(&mut buf).map_err(|_| ElfError::NotElf("a section lies beyond the end of the file"))?;
    Ok(buf)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2).map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).map_or(0, |s| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(s);
        u64::from_le_bytes(bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real answers of the probe's two commands, first lines only (what the probe keeps):
    /// - `getconf GNU_LIBC_VERSION` prints `"glibc " VERSION` (glibc's posix/confstr.c,
    ///   `_CS_GNU_LIBC_VERSION`, the same in 2.17, 2.28 and 2.36); the Debian 12 line was run on
    ///   this project's build machine (libc6 2.36-9+deb12u14).
    /// - `ldd --version`: CentOS 7 and 8 from `docker run centos:7 ldd --version` and
    ///   `centos:8` in wazuh/wazuh-packages issue 2154; Debian 12 run on the build machine;
    ///   Gentoo's from zbirenbaum/copilot.lua pull request 738; Alpine's musl loader from
    ///   sgerrand/alpine-pkg-glibc issue 46, and the error an older one prints to
    ///   `--version` from appsignal/appsignal-nodejs issue 369.
    #[test]
    fn the_probes_answers_are_read_on_el7_el8_and_debian_12() {
        let glibc = |major, minor| Some(Libc::Glibc(GlibcVersion(major, minor, 0)));
        // EL7 (CentOS 7.3, the seed's image): glibc 2.17.
        assert_eq!(parse_libc("glibc 2.17\n"), glibc(2, 17));
        assert_eq!(parse_libc("ldd (GNU libc) 2.17\n"), glibc(2, 17));
        // EL8: glibc 2.28.
        assert_eq!(parse_libc("glibc 2.28\n"), glibc(2, 28));
        assert_eq!(parse_libc("ldd (GNU libc) 2.28\n"), glibc(2, 28));
        // Debian 12: glibc 2.36.
        assert_eq!(parse_libc("glibc 2.36\n"), glibc(2, 36));
        assert_eq!(parse_libc("ldd (Debian GLIBC 2.36-9+deb12u14) 2.36\n"), glibc(2, 36));
        assert_eq!(parse_libc("ldd (Gentoo 2.43-r2 (patchset 3)) 2.43\n"), glibc(2, 43));
        // Not glibc: said as it was said.
        assert_eq!(parse_libc("musl libc (x86_64)\n"), Some(Libc::Other("musl libc (x86_64)".into())));
        assert_eq!(
            parse_libc("/lib/ld-musl-x86_64.so.1: cannot load --version: No such file or directory\n"),
            Some(Libc::Other(
                "/lib/ld-musl-x86_64.so.1: cannot load --version: No such file or directory".into()
            ))
        );
        assert_eq!(parse_libc(""), None);
        assert_eq!(parse_libc("\n  \n"), None);
    }

    #[test]
    fn versions_are_ordered_as_numbers() {
        let v = |t| GlibcVersion::parse(t).unwrap();
        assert!(v("2.17") < v("2.28") && v("2.9") < v("2.17") && v("2.3.4") < v("2.4"));
        assert_eq!(v("2.3.4").to_string(), "2.3.4");
        assert_eq!(v("2.17").to_string(), "2.17");
        assert_eq!(GlibcVersion::parse("PRIVATE"), None);
        assert_eq!(GlibcVersion::parse("2.36-9+deb12u14"), None);
        assert_eq!(GlibcVersion::parse("2"), None);
    }

    #[test]
    fn a_node_is_refused_naming_what_it_has_and_what_is_needed() {
        let needs = Needs { machine: Some("x86_64"), glibc: Some(GlibcVersion(2, 17, 0)) };
        let el7 = parse_libc("ldd (GNU libc) 2.17\n");
        assert_eq!(refusal("n1", &needs, Some("x86_64"), el7.as_ref()), None);
        assert_eq!(refusal("n1", &needs, Some("x86_64"), parse_libc("glibc 2.36").as_ref()), None);
        let el6 = parse_libc("ldd (GNU libc) 2.12\n");
        expect_test::expect![[r#"node n1: it has glibc 2.12, and the binary to install needs glibc 2.17 or newer; nothing was installed (the binaries `cargo xtask dist` builds need 2.17: EL7 and later)"#]]
            .assert_eq(&refusal("n1", &needs, Some("x86_64"), el6.as_ref()).unwrap());
        expect_test::expect![[r#"node n2: it is aarch64 (uname -m), and the binary to install is built for x86_64; give --from (or --deb) a build for aarch64, or leave this node out with --node"#]]
            .assert_eq(&refusal("n2", &needs, Some("aarch64"), el7.as_ref()).unwrap());
        let musl = parse_libc("musl libc (x86_64)");
        expect_test::expect![[r#"node n3: it has no glibc (`ldd --version` says "musl libc (x86_64)"), and the binary to install needs glibc 2.17 or newer; nothing was installed (the binaries `cargo xtask dist` builds need 2.17: EL7 and later)"#]]
            .assert_eq(&refusal("n3", &needs, Some("x86_64"), musl.as_ref()).unwrap());
        assert!(refusal("n4", &needs, Some("x86_64"), None).unwrap().contains("could name"));
        assert!(refusal("n5", &needs, None, el7.as_ref()).unwrap().contains("uname -m"));
        // A binary that names no glibc version runs on any C library.
        let static_binary = Needs { machine: Some("x86_64"), glibc: None };
        assert_eq!(refusal("n3", &static_binary, Some("x86_64"), musl.as_ref()), None);
    }

    /// The test binary itself: built for this machine, against this machine's glibc, so it
    /// needs at most the glibc `getconf` reports here, and at least 2.2.5 (x86_64's first).
    #[test]
    fn a_real_binarys_needs_are_read_from_its_headers() {
        let needs = needs(&std::env::current_exe().unwrap()).unwrap();
        let uname = std::process::Command::new("uname").arg("-m").output().unwrap();
        assert_eq!(needs.machine, Some(String::from_utf8_lossy(&uname.stdout).trim()));
        let here = std::process::Command::new("getconf").arg("GNU_LIBC_VERSION").output().unwrap();
        let Some(Libc::Glibc(here)) = parse_libc(&String::from_utf8_lossy(&here.stdout)) else {
            panic!("this machine's glibc is unknown");
        };
        let needed = needs.glibc.expect("a Rust test binary links glibc with versioned symbols");
        assert!(needed >= GlibcVersion(2, 2, 5) && needed <= here, "needs {needed}, this machine has {here}");
    }

    #[test]
    fn what_is_not_an_elf_executable_is_said_so() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in
            [("short", &b"\x7fELF"[..]), ("script", b"#!/bin/sh\necho hello, this is no binary\n")]
        {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            assert!(matches!(needs(&path), Err(ElfError::NotElf(_))), "{name}");
        }
    }

    #[test]
    fn version_chains_are_read_and_bounded() {
        // One Verneed (libc.so.6) with three Vernaux: GLIBC_2.2.5, GLIBC_2.17 and GLIBC_PRIVATE
        // (not a version), then a second Verneed whose offsets point beyond the section.
        let strings = b"\0libc.so.6\0GLIBC_2.2.5\0GLIBC_2.17\0GLIBC_PRIVATE\0";
        let mut refs = Vec::new();
        let verneed = |cnt: u16, aux: u32, next: u32| {
            let mut r = vec![1, 0];
            r.extend(cnt.to_le_bytes());
            r.extend(1u32.to_le_bytes());
            r.extend(aux.to_le_bytes());
            r.extend(next.to_le_bytes());
            r
        };
        let vernaux = |name: u32, next: u32| {
            let mut r = vec![0; 8];
            r.extend(name.to_le_bytes());
            r.extend(next.to_le_bytes());
            r
        };
        refs.extend(verneed(3, 16, 64));
        refs.extend(vernaux(11, 16));
        refs.extend(vernaux(23, 16));
        refs.extend(vernaux(34, 0));
        refs.extend(verneed(1, 0, u32::MAX - 10));
        assert_eq!(glibc_references(&refs, strings), [GlibcVersion(2, 2, 5), GlibcVersion(2, 17, 0)]);
        // Truncated anywhere: whatever is whole is read, nothing panics.
        for cut in 0..refs.len() {
            let _ = glibc_references(&refs[..cut], strings);
        }
    }
}
