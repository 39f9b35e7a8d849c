//! Workloads: the seed's presets, overrides from the cluster file and the command line, and the
//! exact IOR and mdtest arguments they stand for.

use std::fmt;

/// An IOR workload (the parameters the seed's runs use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IorParams {
    /// `-w`
    pub write: bool,
    /// `-r`
    pub read: bool,
    /// O_DIRECT: the seed's `-B`, which IOR 3.3 replaced with `--posix.odirect`.
    pub odirect: bool,
    /// `-C`: read back what another node's task wrote, so the client cache cannot serve it.
    pub reorder: bool,
    /// `-i`
    pub iterations: u32,
    /// `-t`, bytes.
    pub transfer: u64,
    /// `-b`, bytes per task per segment.
    pub block: u64,
    /// `-s`
    pub segments: u32,
    /// `-F`
    pub file_per_proc: bool,
    /// `-z`: shuffled offsets.
    pub random: bool,
    /// `-e`: fsync at the end of each write phase.
    pub fsync: bool,
}

/// An mdtest workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MdtestParams {
    /// `-C`, `-T`, `-E`, `-r`: the phases; none given means all of them (mdtest's default).
    pub create: bool,
    pub stat: bool,
    pub read: bool,
    pub remove: bool,
    /// `-i`
    pub iterations: u32,
    /// `-I`: items per directory.
    pub items: u32,
    /// `-z`: tree depth.
    pub depth: u32,
    /// `-b`: branching factor.
    pub branch: u32,
    /// `-L`: files only at the leaves.
    pub leaf_only: bool,
    /// `-u`: a directory per task.
    pub unique_dir: bool,
    /// `-F`: files only, no directory items.
    pub files_only: bool,
}

impl MdtestParams {
    /// The phases that run: those asked for, or all of them when none is.
    pub fn phases(&self) -> (bool, bool, bool, bool) {
        if self.create || self.stat || self.read || self.remove {
            (self.create, self.stat, self.read, self.remove)
        } else {
            (true, true, true, true)
        }
    }

    /// Directories in the tree (root included): 1 + b + b² + … + b^z.
    pub fn tree_dirs(&self) -> u64 {
        (0..=self.depth).map(|level| u64::from(self.branch).pow(level)).sum()
    }

    /// Directories that hold items: the leaves with `-L`, all of them otherwise.
    pub fn item_dirs(&self) -> u64 {
        if self.leaf_only { u64::from(self.branch).pow(self.depth) } else { self.tree_dirs() }
    }
}

/// What a benchmark run does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    Ior(IorParams),
    Mdtest(MdtestParams),
}

/// The seed's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// `-w -r -B -C -i4 -t32m -b4G -F`: sequential throughput.
    Throughput,
    /// `-w -r -B -C -i4 -t4k -b320m -F -z`: random 4 KiB IOPS.
    Iops,
    /// mdtest `-C -T -i4 -I 2000 -z 2 -b 4 -L -u -F`.
    Metadata,
    /// mdtest `-I 10 -i 2 -z 5 -b 5` (the seed's Lustre run).
    MetadataLustre,
}

impl Preset {
    pub const ALL: [Preset; 4] = [Preset::Throughput, Preset::Iops, Preset::Metadata, Preset::MetadataLustre];

    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Throughput => "throughput",
            Preset::Iops => "iops",
            Preset::Metadata => "metadata",
            Preset::MetadataLustre => "metadata-lustre",
        }
    }

    pub fn parse(name: &str) -> Result<Preset, ParamError> {
        Preset::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| ParamError::UnknownPreset(name.to_owned()))
    }

    pub fn workload(self) -> Workload {
        const MIB: u64 = 1 << 20;
        let ior = |transfer, block, random| {
            Workload::Ior(IorParams {
                write: true,
                read: true,
                odirect: true,
                reorder: true,
                iterations: 4,
                transfer,
                block,
                segments: 1,
                file_per_proc: true,
                random,
                fsync: false,
            })
        };
        match self {
            Preset::Throughput => ior(32 * MIB, 4096 * MIB, false),
            Preset::Iops => ior(4096, 320 * MIB, true),
            Preset::Metadata => Workload::Mdtest(MdtestParams {
                create: true,
                stat: true,
                read: false,
                remove: false,
                iterations: 4,
                items: 2000,
                depth: 2,
                branch: 4,
                leaf_only: true,
                unique_dir: true,
                files_only: true,
            }),
            Preset::MetadataLustre => Workload::Mdtest(MdtestParams {
                create: false,
                stat: false,
                read: false,
                remove: false,
                iterations: 2,
                items: 10,
                depth: 5,
                branch: 5,
                leaf_only: false,
                unique_dir: false,
                files_only: false,
            }),
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A bad preset name or parameter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("unknown preset {0:?}: use throughput, iops, metadata or metadata-lustre")]
    UnknownPreset(String),
    #[error("unknown {tool} parameter {key:?}: use {known}")]
    UnknownKey { tool: &'static str, key: String, known: &'static str },
    #[error("{key} = {value:?}: {why}")]
    BadValue { key: String, value: String, why: String },
    #[error("{0}")]
    Inconsistent(String),
}

const IOR_KEYS: &str = "transfer (t), block (b), segments (s), iterations (i), file_per_proc (F), random (z), \
                        fsync (e), reorder (C), odirect (B), write (w), read (r)";
const MDTEST_KEYS: &str = "items (I), depth (z), branch (b), iterations (i), create (C), stat (T), read (E), \
                           remove (r), leaf_only (L), unique_dir (u), files_only (F)";

impl Workload {
    /// Sets one parameter by name (or by its IOR/mdtest letter), checking the value and the
    /// workload as it then stands.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), ParamError> {
        self.assign(key, value)?;
        self.check().map_err(|why| ParamError::BadValue { key: key.to_owned(), value: value.to_owned(), why })
    }

    /// Sets every pair, then checks the whole: a full set of values (as [`Workload::settings`]
    /// gives) may pass through combinations that are invalid only halfway.
    pub fn set_all<'a>(
        &mut self,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), ParamError> {
        for (key, value) in pairs {
            self.assign(key, value)?;
        }
        self.check().map_err(ParamError::Inconsistent)
    }

    /// Every parameter as `(name, value)`, in words `set` takes back: how a workload travels
    /// on a command line (`pvfs-agent engine --set …` under mpirun).
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        match self {
            Workload::Ior(p) => vec![
                ("write", p.write.to_string()),
                ("read", p.read.to_string()),
                ("odirect", p.odirect.to_string()),
                ("reorder", p.reorder.to_string()),
                ("iterations", p.iterations.to_string()),
                ("transfer", p.transfer.to_string()),
                ("block", p.block.to_string()),
                ("segments", p.segments.to_string()),
                ("file_per_proc", p.file_per_proc.to_string()),
                ("random", p.random.to_string()),
                ("fsync", p.fsync.to_string()),
            ],
            Workload::Mdtest(p) => vec![
                ("create", p.create.to_string()),
                ("stat", p.stat.to_string()),
                ("read", p.read.to_string()),
                ("remove", p.remove.to_string()),
                ("iterations", p.iterations.to_string()),
                ("items", p.items.to_string()),
                ("depth", p.depth.to_string()),
                ("branch", p.branch.to_string()),
                ("leaf_only", p.leaf_only.to_string()),
                ("unique_dir", p.unique_dir.to_string()),
                ("files_only", p.files_only.to_string()),
            ],
        }
    }

    /// Sets one parameter without checking the workload as a whole.
    fn assign(&mut self, key: &str, value: &str) -> Result<(), ParamError> {
        let bad = |why: &str| ParamError::BadValue {
            key: key.to_owned(),
            value: value.to_owned(),
            why: why.to_owned(),
        };
        let flag = || parse_bool(value).ok_or_else(|| bad("expected true or false"));
        let count = || {
            value.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| bad("expected a whole number above 0"))
        };
        match self {
            Workload::Ior(p) => match key {
                "transfer" | "t" => {
                    p.transfer =
                        parse_size(value).ok_or_else(|| bad("expected a size such as 4k, 32m, 4g"))?
                }
                "block" | "b" => {
                    p.block = parse_size(value).ok_or_else(|| bad("expected a size such as 320m, 4g"))?
                }
                "segments" | "s" => p.segments = count()?,
                "iterations" | "i" => p.iterations = count()?,
                "file_per_proc" | "F" => p.file_per_proc = flag()?,
                "random" | "z" => p.random = flag()?,
                "fsync" | "e" => p.fsync = flag()?,
                "reorder" | "C" => p.reorder = flag()?,
                "odirect" | "B" => p.odirect = flag()?,
                "write" | "w" => p.write = flag()?,
                "read" | "r" => p.read = flag()?,
                _ => {
                    return Err(ParamError::UnknownKey { tool: "IOR", key: key.to_owned(), known: IOR_KEYS });
                }
            },
            Workload::Mdtest(p) => match key {
                "items" | "I" => p.items = count()?,
                "depth" | "z" => p.depth = value.parse().map_err(|_| bad("expected a whole number"))?,
                "branch" | "b" => p.branch = count()?,
                "iterations" | "i" => p.iterations = count()?,
                "create" | "C" => p.create = flag()?,
                "stat" | "T" => p.stat = flag()?,
                "read" | "E" => p.read = flag()?,
                "remove" | "r" => p.remove = flag()?,
                "leaf_only" | "L" => p.leaf_only = flag()?,
                "unique_dir" | "u" => p.unique_dir = flag()?,
                "files_only" | "F" => p.files_only = flag()?,
                _ => {
                    return Err(ParamError::UnknownKey {
                        tool: "mdtest",
                        key: key.to_owned(),
                        known: MDTEST_KEYS,
                    });
                }
            },
        }
        Ok(())
    }

    /// Combinations IOR itself would refuse, said before anything runs.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Workload::Ior(p) => {
                if p.transfer == 0 || p.block == 0 {
                    return Err("transfer and block must be above 0".into());
                }
                if p.block % p.transfer != 0 {
                    return Err(format!(
                        "block ({}) must be a multiple of transfer ({}), as IOR requires",
                        format_size(p.block),
                        format_size(p.transfer)
                    ));
                }
                if p.odirect && p.transfer % 512 != 0 {
                    return Err("O_DIRECT needs transfers in multiples of 512 bytes".into());
                }
                if !p.write && !p.read {
                    return Err("neither write nor read: nothing to do".into());
                }
                Ok(())
            }
            Workload::Mdtest(p) => {
                if p.depth > 0 && p.branch == 0 {
                    return Err("a tree deeper than 0 needs branch >= 1".into());
                }
                if p.tree_dirs() > 10_000_000 {
                    return Err(format!(
                        "a tree of depth {} and branch {} has too many directories",
                        p.depth, p.branch
                    ));
                }
                Ok(())
            }
        }
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// `4k`, `32m`, `4G`, `320m`, `1048576`: IOR's size syntax (binary multiples).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        (i, 't' | 'T') => (&s[..i], 1 << 40),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

/// A size as IOR takes it, in the largest exact unit: `32m`, `4g`, `4k`.
pub fn format_size(bytes: u64) -> String {
    for (unit, shift) in [("t", 40), ("g", 30), ("m", 20), ("k", 10)] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// An IOR version, from its banner (`IOR-4.1.0+dev: MPI Coordinated Test of Parallel I/O`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct IorVersion(pub u32, pub u32, pub u32);

impl IorVersion {
    /// From the first `IOR-x.y.z` in `text` (`ior -h`, `ior --version` or a run's output).
    pub fn from_banner(text: &str) -> Option<IorVersion> {
        let at = text.find("IOR-")? + 4;
        let version: String = text[at..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
        Some(IorVersion(
            parts.next()??,
            parts.next().flatten().unwrap_or(0),
            parts.next().flatten().unwrap_or(0),
        ))
    }

    /// From `ior -h`, which states no version in 3.3 and later: a banner if there is one,
    /// else 3.3 when the options list `--posix.odirect` (added in 3.3, when `-B` went), else
    /// 3.2. Only the `-B` question depends on it.
    pub fn from_help(text: &str) -> IorVersion {
        IorVersion::from_banner(text).unwrap_or(if text.contains("--posix.odirect") {
            IorVersion(3, 3, 0)
        } else {
            IorVersion(3, 2, 0)
        })
    }

    /// IOR 3.3 removed `-B`; O_DIRECT is `--posix.odirect` since.
    pub fn has_dash_b(self) -> bool {
        self < IorVersion(3, 3, 0)
    }
}

/// IOR's arguments for `p`, writing to `test_file`, in the seed's order.
pub fn ior_args(p: &IorParams, version: IorVersion, test_file: &str) -> Vec<String> {
    let mut args = Vec::new();
    if p.write {
        args.push("-w".to_owned());
    }
    if p.read {
        args.push("-r".to_owned());
    }
    if p.odirect {
        args.push(if version.has_dash_b() { "-B" } else { "--posix.odirect" }.to_owned());
    }
    if p.reorder {
        args.push("-C".to_owned());
    }
    args.push(format!("-i{}", p.iterations));
    args.push(format!("-t{}", format_size(p.transfer)));
    args.push(format!("-b{}", format_size(p.block)));
    if p.segments > 1 {
        args.push(format!("-s{}", p.segments));
    }
    if p.file_per_proc {
        args.push("-F".to_owned());
    }
    if p.random {
        args.push("-z".to_owned());
    }
    if p.fsync {
        args.push("-e".to_owned());
    }
    args.extend(["-o".to_owned(), test_file.to_owned()]);
    args
}

/// mdtest's arguments for `p` in `dir`.
pub fn mdtest_args(p: &MdtestParams, dir: &str) -> Vec<String> {
    let mut args = Vec::new();
    for (on, flag) in [(p.create, "-C"), (p.stat, "-T"), (p.read, "-E"), (p.remove, "-r")] {
        if on {
            args.push(flag.to_owned());
        }
    }
    args.extend([format!("-i{}", p.iterations), "-I".into(), p.items.to_string()]);
    args.extend(["-z".into(), p.depth.to_string(), "-b".into(), p.branch.to_string()]);
    for (on, flag) in [(p.leaf_only, "-L"), (p.unique_dir, "-u"), (p.files_only, "-F")] {
        if on {
            args.push(flag.to_owned());
        }
    }
    args.extend(["-d".to_owned(), dir.to_owned()]);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_the_seed_commands() {
        let new = IorVersion(4, 1, 0);
        let old = IorVersion(3, 0, 1);
        let Workload::Ior(tput) = Preset::Throughput.workload() else { panic!() };
        assert_eq!(
            ior_args(&tput, old, "/mnt/lustre/ior").join(" "),
            "-w -r -B -C -i4 -t32m -b4g -F -o /mnt/lustre/ior"
        );
        assert_eq!(
            ior_args(&tput, new, "/mnt/lustre/ior").join(" "),
            "-w -r --posix.odirect -C -i4 -t32m -b4g -F -o /mnt/lustre/ior"
        );
        let Workload::Ior(iops) = Preset::Iops.workload() else { panic!() };
        assert_eq!(ior_args(&iops, old, "f").join(" "), "-w -r -B -C -i4 -t4k -b320m -F -z -o f");
        let Workload::Mdtest(md) = Preset::Metadata.workload() else { panic!() };
        assert_eq!(mdtest_args(&md, "/d").join(" "), "-C -T -i4 -I 2000 -z 2 -b 4 -L -u -F -d /d");
        let Workload::Mdtest(lustre) = Preset::MetadataLustre.workload() else { panic!() };
        assert_eq!(mdtest_args(&lustre, "/d").join(" "), "-i2 -I 10 -z 5 -b 5 -d /d");
        assert_eq!(lustre.phases(), (true, true, true, true));
        assert_eq!(lustre.tree_dirs(), 1 + 5 + 25 + 125 + 625 + 3125);
        assert_eq!(md.item_dirs(), 16);
    }

    #[test]
    fn versions_come_from_the_banner() {
        assert_eq!(IorVersion::from_banner("IOR-4.1.0+dev: MPI Coordinated Test"), Some(IorVersion(4, 1, 0)));
        assert_eq!(IorVersion::from_banner("IOR-3.2.1: MPI Coordinated"), Some(IorVersion(3, 2, 1)));
        assert!(IorVersion(3, 2, 1).has_dash_b() && !IorVersion(3, 3, 0).has_dash_b());
        assert_eq!(IorVersion::from_banner("mdtest-4.1.0"), None);
        // `ior -h` of 4.1 states no version, but lists --posix.odirect (3.3 and later).
        let help = include_str!("../testdata/ior/ior_help.txt");
        assert!(!IorVersion::from_help(help).has_dash_b());
        assert!(IorVersion::from_help("  -B  useO_DIRECT -- uses O_DIRECT for POSIX").has_dash_b());
    }

    #[test]
    fn overrides_are_checked() {
        let mut w = Preset::Throughput.workload();
        w.set("t", "1m").unwrap();
        w.set("block", "64m").unwrap();
        w.set("iterations", "2").unwrap();
        let Workload::Ior(p) = &w else { panic!() };
        assert_eq!((p.transfer, p.block, p.iterations), (1 << 20, 64 << 20, 2));
        assert_eq!(
            w.set("t", "3m").unwrap_err().to_string(),
            "t = \"3m\": block (64m) must be a multiple of transfer (3m), as IOR requires"
        );
        assert!(w.set("items", "10").unwrap_err().to_string().starts_with("unknown IOR parameter \"items\""));
        assert!(w.set("i", "0").is_err());
        let mut md = Preset::Metadata.workload();
        md.set("I", "10").unwrap();
        md.set("z", "0").unwrap();
        assert_eq!(parse_size("4G"), Some(4 << 30));
        assert_eq!(format_size(320 << 20), "320m");
        assert_eq!(format_size(4097), "4097");
        assert_eq!(
            Preset::parse("iopz").unwrap_err().to_string(),
            "unknown preset \"iopz\": use throughput, iops, metadata or metadata-lustre"
        );
    }
}
