//! The options pvfs passes through to `mkfs.xfs` and `mkfs.ext4` (a target's `mkfs_options`),
//! checked against an allow-list per tool.
//!
//! Both the cluster-file validator (`pvfsctl validate`, with file:line:col) and the agent (on
//! every `mkfs` step it is sent, whatever the coordinator) ask this, so the rule lives in one
//! place. It sits in `pvfs-host`, the bottom crate that knows the host's tools, because the
//! config crate cannot depend on `pvfs-steps` (the arrows point from steps to plan to the
//! binary) and both can depend on `pvfs-host`. It is pure: words in, refusals out.
//!
//! The words are read the way the tool's own `getopt` reads them (xfsprogs and e2fsprogs both
//! use plain `getopt`): a word starting with `-` is a cluster of one-letter flags, and a flag
//! that takes a value takes the rest of the word or, if that is empty, the next word. So `-Kf`
//! is `-K` then `-f`, and `-dfile,name=/x` is `-d` with `file,name=/x`, exactly as mkfs sees
//! them. What is refused: force flags however spelled, a second device (external log,
//! journal or realtime section), anything that reads or writes files on the node, options
//! that make something other than a file system or nothing at all, the label and type (the
//! step's own fields), words that are not options (mkfs would read them as a device or a
//! size), and everything not on the list.

use std::fmt;

/// Why an option is refused: the rule, and what it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// `-f`, `-F`, `--force`: pvfs adds the force flag itself, only for wipe-listed devices.
    Force,
    /// An external log or journal, a realtime device, a data file: a device other than the
    /// step's.
    SecondDevice(String),
    /// Reads or writes a file on the node (`mke2fs -d DIR`, `-l FILE`, `-z FILE`, `mkfs.xfs -p`).
    HostFile(String),
    /// `-L`: the step's `label` names the file system (and is what it is recognised by).
    Label,
    /// `mke2fs -t`: the step's `fs` says what file system to make.
    FsType,
    /// Prints, dry-runs or rewrites superblocks only: the step would never converge.
    NoFileSystem(String),
    /// A word that is not an option: mkfs would read it as a device or a size.
    Positional,
    /// A flag that needs a value got none, or a word that is itself a flag: mkfs would take
    /// that, or the device pvfs appends, as the value.
    MissingValue,
    /// Not on the list for this tool.
    Unknown { allowed: String },
    /// A sub-option (`-d name=value,…`) not on the list for this flag.
    UnknownSub { sub: String, allowed: String },
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Force => f.write_str(
                "no force flag (pvfs adds one itself, only for devices listed under the node's `wipe`)",
            ),
            Rule::SecondDevice(what) => write!(
                f,
                "no second device ({what}: pvfs formats only the device the target names; external logs, \
                 journals and realtime devices are not supported)"
            ),
            Rule::HostFile(what) => {
                write!(f, "no files of the node ({what}: a file system is made from nothing but its device)")
            }
            Rule::Label => f.write_str("the label comes from the target's `label`, not from mkfs_options"),
            Rule::FsType => {
                f.write_str("the file system type comes from the target's `fs`, not from mkfs_options")
            }
            Rule::NoFileSystem(what) => {
                write!(
                    f,
                    "must make a file system ({what}: the step would never find the file system it wants)"
                )
            }
            Rule::Positional => f.write_str(
                "options only (a word that is not an option is read by mkfs as a device or a size; write \
                 values after their flag, e.g. \"-i\", \"size=512\")",
            ),
            Rule::MissingValue => f.write_str(
                "a value after the flag (without one mkfs takes the next word as the value, a flag or the \
                 device pvfs appends)",
            ),
            Rule::Unknown { allowed } => write!(f, "allowed options only ({allowed})"),
            Rule::UnknownSub { sub, allowed } => {
                write!(f, "allowed sub-options only ({sub:?} is not one of {allowed})")
            }
        }
    }
}

/// One refused option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub program: &'static str,
    /// Which word of the list it is in (0-based), so a caller can point at it.
    pub index: usize,
    /// The word as written, e.g. `-Kf`.
    pub word: String,
    /// The option as mkfs reads it, e.g. `-f` or `-l logdev=/dev/sdb`.
    pub option: String,
    pub rule: Rule,
}

impl fmt::Display for Refused {
    /// `mkfs.xfs option -f (in "-Kf"): no force flag (…)`; the word is shown when the option
    /// as mkfs reads it is not plainly that word.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} option {}", self.program, self.option)?;
        if !self.option.starts_with(self.word.as_str()) {
            write!(f, " (in {:?})", self.word)?;
        }
        write!(f, ": {}", self.rule)
    }
}

impl std::error::Error for Refused {}

/// What a flag is.
#[derive(Clone, Copy)]
enum Flag {
    /// A flag without a value.
    Plain,
    /// A flag with a value, accepted as it is (sizes, counts, UUIDs: mkfs checks those).
    Value,
    /// A flag with a `name[=value],…` list checked by the function.
    Subopts(fn(&str, Option<&str>) -> Result<(), Rule>),
    /// A flag (with a value or not) that is refused.
    Refused { value: bool, rule: fn() -> Rule },
}

/// A tool's grammar: its flags, in getopt's terms.
struct Grammar {
    program: &'static str,
    flags: &'static [(char, Flag)],
}

impl Grammar {
    fn flag(&self, c: char) -> Option<Flag> {
        self.flags.iter().find(|(f, _)| *f == c).map(|(_, flag)| *flag)
    }

    fn allowed(&self) -> String {
        let mut names: Vec<String> = self
            .flags
            .iter()
            .filter(|(_, flag)| !matches!(flag, Flag::Refused { .. }))
            .map(|(c, _)| format!("-{c}"))
            .collect();
        names.sort();
        names.join(" ")
    }
}

/// mkfs.xfs, xfsprogs 5.x–6.x (`mkfs/xfs_mkfs.c`: getopt "b:c:d:fi:l:L:m:n:KNp:qr:s:CfV").
const XFS: Grammar = Grammar {
    program: "mkfs.xfs",
    flags: &[
        ('b', Flag::Subopts(xfs_b)),
        ('m', Flag::Subopts(xfs_m)),
        ('d', Flag::Subopts(xfs_d)),
        ('i', Flag::Subopts(xfs_i)),
        ('l', Flag::Subopts(xfs_l)),
        ('n', Flag::Subopts(xfs_n)),
        ('r', Flag::Subopts(xfs_r)),
        ('s', Flag::Subopts(xfs_s)),
        ('K', Flag::Plain),
        ('q', Flag::Plain),
        ('f', Flag::Refused { value: false, rule: || Rule::Force }),
        ('L', Flag::Refused { value: true, rule: || Rule::Label }),
        (
            'N',
            Flag::Refused { value: false, rule: || Rule::NoFileSystem("-N only prints the geometry".into()) },
        ),
        (
            'V',
            Flag::Refused { value: false, rule: || Rule::NoFileSystem("-V only prints the version".into()) },
        ),
        ('p', Flag::Refused { value: true, rule: || Rule::HostFile("-p populates from a protofile".into()) }),
        (
            'c',
            Flag::Refused { value: true, rule: || Rule::HostFile("-c options= reads a config file".into()) },
        ),
        // -C: "do not allow to run on a device in use" is xfsprogs 6's -f counterpart; it only
        // adds a check pvfs makes anyway, but it is not on the list for simplicity.
    ],
};

/// mkfs.ext4 = mke2fs, e2fsprogs 1.45–1.47 (`misc/mke2fs.c`:
/// getopt "b:cd:e:g:i:jl:m:no:qr:s:t:vC:DE:FG:I:J:KL:M:N:O:R:ST:U:Vz:").
const EXT4: Grammar = Grammar {
    program: "mkfs.ext4",
    flags: &[
        ('b', Flag::Value),
        ('c', Flag::Plain),
        ('e', Flag::Value),
        ('g', Flag::Value),
        ('i', Flag::Value),
        ('j', Flag::Plain),
        ('m', Flag::Value),
        ('o', Flag::Value),
        ('q', Flag::Plain),
        ('r', Flag::Value),
        ('s', Flag::Value),
        ('v', Flag::Plain),
        ('C', Flag::Value),
        ('D', Flag::Plain),
        ('E', Flag::Subopts(ext4_e)),
        ('R', Flag::Subopts(ext4_e)),
        ('G', Flag::Value),
        ('I', Flag::Value),
        ('J', Flag::Subopts(ext4_j)),
        ('K', Flag::Plain),
        ('M', Flag::Value),
        ('N', Flag::Value),
        ('O', Flag::Subopts(ext4_o)),
        ('T', Flag::Value),
        ('U', Flag::Value),
        ('F', Flag::Refused { value: false, rule: || Rule::Force }),
        ('L', Flag::Refused { value: true, rule: || Rule::Label }),
        ('t', Flag::Refused { value: true, rule: || Rule::FsType }),
        (
            'd',
            Flag::Refused {
                value: true,
                rule: || Rule::HostFile("-d populates from a directory or tarball".into()),
            },
        ),
        ('l', Flag::Refused { value: true, rule: || Rule::HostFile("-l reads a bad blocks list".into()) }),
        ('z', Flag::Refused { value: true, rule: || Rule::HostFile("-z writes an undo file".into()) }),
        ('n', Flag::Refused { value: false, rule: || Rule::NoFileSystem("-n is a dry run".into()) }),
        (
            'S',
            Flag::Refused {
                value: false,
                rule: || Rule::NoFileSystem("-S rewrites superblocks only".into()),
            },
        ),
        (
            'V',
            Flag::Refused { value: false, rule: || Rule::NoFileSystem("-V only prints the version".into()) },
        ),
    ],
};

/// Checks `name[=value]` against the allowed names; `deny` is consulted first.
fn subopt(name: &str, allowed: &[&str], deny: impl FnOnce() -> Option<Rule>) -> Result<(), Rule> {
    if let Some(rule) = deny() {
        return Err(rule);
    }
    if allowed.contains(&name) {
        Ok(())
    } else {
        Err(Rule::UnknownSub { sub: name.to_owned(), allowed: allowed.join(",") })
    }
}

fn xfs_b(name: &str, _: Option<&str>) -> Result<(), Rule> {
    subopt(name, &["size", "log"], || None)
}

fn xfs_m(name: &str, _: Option<&str>) -> Result<(), Rule> {
    subopt(
        name,
        &["crc", "finobt", "uuid", "rmapbt", "reflink", "inobtcount", "bigtime", "autofsck", "metadir"],
        || None,
    )
}

fn xfs_d(name: &str, _: Option<&str>) -> Result<(), Rule> {
    let allowed = [
        "agcount",
        "agsize",
        "cowextsize",
        "size",
        "sunit",
        "swidth",
        "su",
        "sw",
        "noalign",
        "rtinherit",
        "projinherit",
        "extszinherit",
        "daxinherit",
        "concurrency",
    ];
    subopt(name, &allowed, || {
        matches!(name, "file" | "name").then(|| {
            Rule::SecondDevice(format!("-d {name} makes the data section in another file or device"))
        })
    })
}

fn xfs_i(name: &str, _: Option<&str>) -> Result<(), Rule> {
    subopt(
        name,
        &[
            "size",
            "log",
            "perblock",
            "maxpct",
            "align",
            "attr",
            "projid32bit",
            "sparse",
            "nrext64",
            "exchange",
        ],
        || None,
    )
}

fn xfs_l(name: &str, value: Option<&str>) -> Result<(), Rule> {
    let allowed = ["internal", "size", "version", "sunit", "su", "lazy-count", "concurrency"];
    subopt(name, &allowed, || match (name, value) {
        ("logdev", _) => Some(Rule::SecondDevice("-l logdev puts the log on another device".into())),
        ("internal", Some(v)) if v != "1" => {
            Some(Rule::SecondDevice("-l internal=0 needs an external log device".into()))
        }
        _ => None,
    })
}

fn xfs_n(name: &str, _: Option<&str>) -> Result<(), Rule> {
    subopt(name, &["size", "log", "version", "ftype", "parent"], || None)
}

fn xfs_r(name: &str, _: Option<&str>) -> Result<(), Rule> {
    subopt(name, &["extsize", "size", "noalign"], || {
        (name == "rtdev")
            .then(|| Rule::SecondDevice("-r rtdev puts the realtime section on another device".into()))
    })
}

fn xfs_s(name: &str, _: Option<&str>) -> Result<(), Rule> {
    subopt(name, &["size", "log"], || None)
}

fn ext4_e(name: &str, _: Option<&str>) -> Result<(), Rule> {
    let allowed = [
        "mmp_update_interval",
        "stride",
        "stripe_width",
        "stripe-width",
        "resize",
        "packed_meta_blocks",
        "lazy_itable_init",
        "lazy_journal_init",
        "assume_storage_prezeroed",
        "no_copy_xattrs",
        "num_backup_sb",
        "root_owner",
        "root_perms",
        "test_fs",
        "discard",
        "nodiscard",
        "quotatype",
        "encoding",
        "encoding_flags",
        "orphan_file_size",
        "offset",
    ];
    subopt(name, &allowed, || {
        (name == "android_sparse")
            .then(|| Rule::NoFileSystem("-E android_sparse writes a sparse image, not the device".into()))
    })
}

fn ext4_j(name: &str, _: Option<&str>) -> Result<(), Rule> {
    subopt(name, &["size", "fast_commit_size", "location"], || {
        (name == "device").then(|| Rule::SecondDevice("-J device= puts the journal on another device".into()))
    })
}

/// `-O` takes features, each optionally negated with `^`.
fn ext4_o(name: &str, value: Option<&str>) -> Result<(), Rule> {
    let feature = name.trim_start_matches('^');
    if feature == "journal_dev" && !name.starts_with('^') {
        return Err(Rule::NoFileSystem("-O journal_dev makes an external journal, not a file system".into()));
    }
    // Feature names are many and grow with each release; mke2fs refuses unknown ones itself,
    // and none of them reaches another device or a file.
    if value.is_some()
        || feature.is_empty()
        || !feature.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(Rule::UnknownSub {
            sub: name.to_owned(),
            allowed: "feature names, optionally prefixed by ^".into(),
        });
    }
    Ok(())
}

/// The grammar for a file system type, `None` for one pvfs does not make.
fn grammar(fstype: &str) -> Option<&'static Grammar> {
    match fstype {
        "xfs" => Some(&XFS),
        "ext4" => Some(&EXT4),
        _ => None,
    }
}

/// The file systems pvfs makes with `mkfs.<type>`.
pub const FS_TYPES: &[&str] = &["xfs", "ext4"];

/// Every refusal for `options` as `mkfs.<fstype>` would read them; empty when all are
/// allowed. A type pvfs does not make refuses nothing here (the caller refuses the type).
pub fn check(fstype: &str, options: &[String]) -> Vec<Refused> {
    let Some(grammar) = grammar(fstype) else { return Vec::new() };
    let mut refused = Vec::new();
    let mut i = 0;
    while i < options.len() {
        let index = i;
        let word = &options[i];
        i += 1;
        let mut refuse = |option: String, rule: Rule| {
            refused.push(Refused { program: grammar.program, index, word: word.clone(), option, rule });
        };
        if word == "--force" {
            refuse(word.clone(), Rule::Force);
            continue;
        }
        let Some(flags) = word.strip_prefix('-').filter(|f| !f.is_empty() && !f.starts_with('-')) else {
            // Plain words, "-", "--" and long options: none is on any list.
            if word.starts_with("--") && word.len() > 2 {
                refuse(word.clone(), Rule::Unknown { allowed: grammar.allowed() });
            } else {
                refuse(word.clone(), Rule::Positional);
            }
            continue;
        };
        for (at, c) in flags.char_indices() {
            let Some(flag) = grammar.flag(c) else {
                refuse(format!("-{c}"), Rule::Unknown { allowed: grammar.allowed() });
                // getopt would go on with the next letter; so do we, to report them all.
                continue;
            };
            let takes_value =
                matches!(flag, Flag::Value | Flag::Subopts(_) | Flag::Refused { value: true, .. });
            if !takes_value {
                if let Flag::Refused { rule, .. } = flag {
                    refuse(format!("-{c}"), rule());
                }
                continue;
            }
            // The rest of the word, or the next word, is the value (getopt's rule).
            let rest = &flags[at + c.len_utf8()..];
            let value = if !rest.is_empty() {
                Some(rest.to_owned())
            } else if i < options.len() && !options[i].starts_with('-') {
                i += 1;
                Some(options[i - 1].clone())
            } else {
                None
            };
            match (flag, value) {
                (_, None) => refuse(format!("-{c}"), Rule::MissingValue),
                (Flag::Refused { rule, .. }, Some(value)) => refuse(format!("-{c} {value}"), rule()),
                (Flag::Subopts(check), Some(value)) => {
                    for part in value.split(',') {
                        let (name, sub) = match part.split_once('=') {
                            Some((n, v)) => (n, Some(v)),
                            None => (part, None),
                        };
                        if let Err(rule) = check(name, sub) {
                            refuse(format!("-{c} {part}"), rule);
                        }
                    }
                }
                _ => {}
            }
            break;
        }
    }
    refused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn refusals(fstype: &str, s: &str) -> Vec<String> {
        check(fstype, &words(s)).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn every_default_and_example_passes() {
        for (fstype, options) in [
            ("xfs", "-i size=512"),
            ("xfs", "-K -i size=512 -n size=8192"),
            ("xfs", "-d su=256k,sw=4 -l internal,size=128m,lazy-count=1 -m crc=1,reflink=1 -b size=4096"),
            ("xfs", "-Kq -isize=512"),
            ("ext4", "-i 2048 -I 512 -J size=400 -O dir_index,filetype"),
            ("ext4", "-E stride=128,stripe_width=512,lazy_itable_init=0 -O ^has_journal -m 0 -T largefile"),
            ("ext4", "-jq -b4096"),
        ] {
            assert_eq!(refusals(fstype, options), Vec::<String>::new(), "{fstype} {options}");
        }
    }

    #[test]
    fn force_flags_are_refused_however_spelled() {
        for options in ["-f", "-Kf", "-fK", "-qKf", "--force", "-K -f"] {
            let got = check("xfs", &words(options));
            assert_eq!(got.len(), 1, "{options}: {got:?}");
            assert_eq!(got[0].rule, Rule::Force, "{options}");
            assert_eq!(got[0].option, if options == "--force" { "--force" } else { "-f" });
        }
        assert_eq!(check("ext4", &words("-F -F")).len(), 2);
        assert_eq!(
            refusals("ext4", "-qF"),
            [
                r#"mkfs.ext4 option -F (in "-qF"): no force flag (pvfs adds one itself, only for devices listed under the node's `wipe`)"#
            ]
        );
    }

    #[test]
    fn a_second_device_is_refused() {
        for (fstype, options, option) in [
            ("xfs", "-l logdev=/dev/sdb,size=64m", "-l logdev=/dev/sdb"),
            ("xfs", "-llogdev=/dev/sdb", "-l logdev=/dev/sdb"),
            ("xfs", "-l internal=0", "-l internal=0"),
            ("xfs", "-r rtdev=/dev/sdc", "-r rtdev=/dev/sdc"),
            ("xfs", "-d file,name=/var/tmp/img", "-d file"),
            ("xfs", "-K -dname=/dev/sdz", "-d name=/dev/sdz"),
            ("ext4", "-J device=/dev/sdb", "-J device=/dev/sdb"),
            ("ext4", "-J device=UUID=0b0e8c7e", "-J device=UUID=0b0e8c7e"),
        ] {
            let got = check(fstype, &words(options));
            assert!(
                got.iter().any(|r| r.option == option && matches!(r.rule, Rule::SecondDevice(_))),
                "{fstype} {options}: {got:?}"
            );
        }
        assert_eq!(
            refusals("xfs", "-l logdev=/dev/sdb"),
            ["mkfs.xfs option -l logdev=/dev/sdb: no second device (-l logdev puts the log on \
              another device: pvfs formats only the device the target names; external logs, journals and realtime \
              devices are not supported)"]
        );
    }

    #[test]
    fn host_files_type_label_and_dry_runs_are_refused() {
        let rule = |fstype: &str, options: &str| check(fstype, &words(options)).remove(0).rule;
        assert!(matches!(rule("ext4", "-d /etc"), Rule::HostFile(_)));
        assert!(matches!(rule("ext4", "-d/etc"), Rule::HostFile(_)));
        assert!(matches!(rule("ext4", "-z /root/undo"), Rule::HostFile(_)));
        assert!(matches!(rule("ext4", "-l /tmp/badblocks"), Rule::HostFile(_)));
        assert!(matches!(rule("xfs", "-p /etc/proto"), Rule::HostFile(_)));
        assert!(matches!(rule("xfs", "-c options=/etc/x.conf"), Rule::HostFile(_)));
        assert_eq!(rule("ext4", "-t ext2"), Rule::FsType);
        assert_eq!(rule("xfs", "-L other"), Rule::Label);
        assert!(matches!(rule("xfs", "-N"), Rule::NoFileSystem(_)));
        assert!(matches!(rule("ext4", "-n"), Rule::NoFileSystem(_)));
        assert!(matches!(rule("ext4", "-S"), Rule::NoFileSystem(_)));
        assert!(matches!(rule("ext4", "-O journal_dev"), Rule::NoFileSystem(_)));
        assert!(matches!(rule("ext4", "-E android_sparse"), Rule::NoFileSystem(_)));
    }

    #[test]
    fn words_that_are_not_options_or_lack_a_value_are_refused() {
        // A second device by position, an option with no value that would swallow the device
        // pvfs appends, the end of options, and a long option no tool here has.
        assert_eq!(check("xfs", &words("-K /dev/sdb")).remove(0).rule, Rule::Positional);
        assert_eq!(check("xfs", &words("--")).remove(0).rule, Rule::Positional);
        assert_eq!(check("ext4", &words("-K -J")).remove(0).rule, Rule::MissingValue);
        assert_eq!(check("xfs", &words("-i")).remove(0).rule, Rule::MissingValue);
        assert!(matches!(check("xfs", &words("--protofile=/x")).remove(0).rule, Rule::Unknown { .. }));
        assert!(matches!(check("xfs", &words("-Z")).remove(0).rule, Rule::Unknown { .. }));
        assert!(matches!(check("xfs", &words("-d bogus=1")).remove(0).rule, Rule::UnknownSub { .. }));
        // getopt would take "-F" as -b's value (and mke2fs reject it as a block size); a value
        // that looks like a flag is refused rather than reasoned about.
        let got = check("ext4", &words("-b -F"));
        assert_eq!((got[0].rule.clone(), got[1].rule.clone()), (Rule::MissingValue, Rule::Force));
        assert!(
            check("btrfs", &words("-f")).is_empty(),
            "types pvfs does not make are the caller's to refuse"
        );
    }
}
