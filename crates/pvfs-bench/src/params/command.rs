//! IOR's and mdtest's command lines read back into workloads: the options pvfs's engine runs,
//! as IOR 4 and mdtest 4 parse them (`-t 1m`, `-t1m`, `-t=1m`; `-O key=value`; long options as
//! `--name=value`), so that a command io500 or a user ran can be compared with, or run as, a
//! pvfs workload. What only changes a tool's output (`-P`, `-v`, where it writes its CSV or
//! stonewall file) is read and set aside; an option the engine does not run is an error
//! naming it, never silently dropped.

use super::{IorParams, MdtestParams, ParamError, Workload};

/// What a command line says beyond its workload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paths {
    /// IOR's `-o` (the test file) or mdtest's `-d` (the test directory).
    pub target: Option<String>,
}

/// Why a command line is not a workload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("{tool} option {option} needs a value")]
    NoValue { tool: &'static str, option: String },
    #[error("{tool} option {option} is not one pvfs's engine runs{}", .hint.as_deref().map(|h| format!(" ({h})")).unwrap_or_default())]
    Unsupported { tool: &'static str, option: String, hint: Option<String> },
    /// The options together break a rule (one mdtest or IOR would refuse, or a bound).
    #[error("{tool}: {violation}")]
    Invalid { tool: &'static str, violation: super::Violation },
    #[error("{tool} option {option}: {source}")]
    Value {
        tool: &'static str,
        option: String,
        #[source]
        source: ParamError,
    },
}

/// mdtest's defaults: one iteration, one directory (depth 0, branch 1), every phase.
fn mdtest_defaults() -> MdtestParams {
    MdtestParams { iterations: 1, branch: 1, ..MdtestParams::default() }
}

/// One option and its value, however it was spelled.
struct Options<'a> {
    tool: &'static str,
    args: std::slice::Iter<'a, String>,
}

impl<'a> Options<'a> {
    /// The next option as `(name, inline value)`: `-t1m` and `-t=1m` carry theirs; `None` at
    /// the end. A word that is no option is returned as its own name.
    fn next(&mut self, valued: &[char]) -> Option<(String, Option<String>)> {
        let arg = self.args.next()?;
        if let Some(long) = arg.strip_prefix("--") {
            return Some(match long.split_once('=') {
                Some((name, value)) => (format!("--{name}"), Some(value.to_owned())),
                None => (arg.clone(), None),
            });
        }
        let mut chars = arg.chars();
        match (chars.next(), chars.next()) {
            (Some('-'), Some(letter)) if arg.len() > 2 && valued.contains(&letter) => {
                let rest = &arg[2..];
                Some((format!("-{letter}"), Some(rest.strip_prefix('=').unwrap_or(rest).to_owned())))
            }
            _ => Some((arg.clone(), None)),
        }
    }

    /// The option's value: its inline one, or the next word.
    fn value(&mut self, option: &str, inline: Option<String>) -> Result<String, CommandError> {
        inline
            .or_else(|| self.args.next().cloned())
            .ok_or_else(|| CommandError::NoValue { tool: self.tool, option: option.to_owned() })
    }
}

/// Sets `key` of `workload` to `value`, the error naming the option as it was written.
fn set(
    workload: &mut Workload,
    tool: &'static str,
    option: &str,
    key: &str,
    value: &str,
) -> Result<(), CommandError> {
    workload.assign(key, value).map_err(|source| CommandError::Value {
        tool,
        option: option.to_owned(),
        source,
    })
}

fn unsupported(tool: &'static str, option: &str, hint: Option<&str>) -> CommandError {
    CommandError::Unsupported { tool, option: option.to_owned(), hint: hint.map(str::to_owned) }
}

/// An IOR command line (without the program's name) as a workload, and its test file.
pub fn ior_command(args: &[String]) -> Result<(Workload, Paths), CommandError> {
    const TOOL: &str = "IOR";
    let mut w = Workload::Ior(IorParams::default());
    let mut paths = Paths::default();
    let mut opts = Options { tool: TOOL, args: args.iter() };
    let valued = ['t', 'b', 's', 'i', 'D', 'G', 'Q', 'o', 'a', 'l', 'O'];
    while let Some((option, inline)) = opts.next(&valued) {
        let flag = match option.as_str() {
            "-w" => Some("write"),
            "-r" => Some("read"),
            "-C" => Some("reorder"),
            "-F" => Some("file_per_proc"),
            "-e" => Some("fsync"),
            "-k" => Some("keep"),
            "-R" => Some("verify"),
            "-B" | "--posix.odirect" => Some("odirect"),
            _ => None,
        };
        if let Some(key) = flag {
            set(&mut w, TOOL, &option, key, "true")?;
            continue;
        }
        match option.as_str() {
            "-t" | "-b" | "-s" | "-i" | "-D" | "-G" | "-l" | "--dataPacketType" => {
                let value = opts.value(&option, inline)?;
                let key = match option.as_str() {
                    "--dataPacketType" => "packet",
                    letter => &letter[1..],
                };
                set(&mut w, TOOL, &option, key, &value)?;
            }
            "-z" => {
                if let Workload::Ior(p) = &w
                    && p.random
                {
                    return Err(unsupported(
                        TOOL,
                        "-z -z",
                        Some("random offsets that may repeat, IOR's randomOffset 2"),
                    ));
                }
                set(&mut w, TOOL, &option, "random", "true")?;
            }
            "-o" => paths.target = Some(opts.value(&option, inline)?),
            "-a" => {
                let api = opts.value(&option, inline)?;
                if api != "POSIX" {
                    return Err(unsupported(TOOL, &format!("-a {api}"), Some("the engine does POSIX I/O")));
                }
            }
            // The engine starts each phase on every task at once; -g's further barriers, between
            // a phase's open, transfers and close, change only how IOR splits its timers.
            "-g" | "-v" => {}
            "-Q" => {
                let offset = opts.value(&option, inline)?;
                if offset != "1" {
                    return Err(unsupported(
                        TOOL,
                        &format!("-Q {offset}"),
                        Some("-C reads the next client's files (-Q 1)"),
                    ));
                }
            }
            "-O" => {
                let value = opts.value(&option, inline)?;
                let (key, setting) = value.split_once('=').unwrap_or((&value, "1"));
                match key {
                    "stoneWallingWearOut" => {
                        set(&mut w, TOOL, "-O stoneWallingWearOut", "wear_out", setting)?
                    }
                    // Where IOR keeps its count and its per-rank CSV: pvfs carries the count and
                    // records every task itself.
                    "stoneWallingStatusFile" | "saveRankPerformanceDetailsCSV" => {}
                    _ => return Err(unsupported(TOOL, &format!("-O {value}"), None)),
                }
            }
            _ => return Err(unsupported(TOOL, &option, None)),
        }
    }
    w.check().map_err(|violation| CommandError::Invalid { tool: TOOL, violation })?;
    Ok((w, paths))
}

/// An mdtest command line (without the program's name) as a workload, and its directory.
pub fn mdtest_command(args: &[String]) -> Result<(Workload, Paths), CommandError> {
    const TOOL: &str = "mdtest";
    let mut w = Workload::Mdtest(mdtest_defaults());
    let mut paths = Paths::default();
    let mut opts = Options { tool: TOOL, args: args.iter() };
    let valued = ['n', 'I', 'z', 'b', 'i', 'N', 'w', 'e', 'G', 'W', 'd', 'x', 'a'];
    while let Some((option, inline)) = opts.next(&valued) {
        let flag = match option.as_str() {
            "-C" => Some("create"),
            "-T" => Some("stat"),
            "-E" => Some("read"),
            "-r" => Some("remove"),
            "-u" => Some("unique_dir"),
            "-L" => Some("leaf_only"),
            "-F" => Some("files_only"),
            "-X" | "--verify-read" => Some("verify"),
            "-Y" => Some("sync"),
            "-y" => Some("fsync"),
            _ => None,
        };
        if let Some(key) = flag {
            set(&mut w, TOOL, &option, key, "true")?;
            continue;
        }
        match option.as_str() {
            "-n" | "-I" | "-z" | "-b" | "-i" | "-N" | "-w" | "-e" | "-G" | "-W" => {
                let value = opts.value(&option, inline)?;
                set(&mut w, TOOL, &option, &option[1..], &value)?;
            }
            "--dataPacketType" => {
                let packet = opts.value(&option, inline)?;
                if packet != "timestamp" && packet != "t" {
                    return Err(unsupported(
                        TOOL,
                        &format!("--dataPacketType={packet}"),
                        Some("mdtest's files are written with timestamp data"),
                    ));
                }
            }
            "-d" => paths.target = Some(opts.value(&option, inline)?),
            "-a" => {
                let api = opts.value(&option, inline)?;
                if api != "POSIX" {
                    return Err(unsupported(TOOL, &format!("-a {api}"), Some("the engine does POSIX I/O")));
                }
            }
            // Where mdtest keeps its stonewall count and per-rank details: pvfs carries the
            // count and records every task itself.
            "-x" => drop(opts.value(&option, inline)?),
            "--saveRankPerformanceDetails" => drop(opts.value(&option, inline)?),
            // -P prints rate and time (pvfs records both); -t times the unique directories'
            // creation into the phase, which without -u (io500's mdtest-hard) is nothing.
            "-P" | "-v" => {}
            "-t" => {
                if let Workload::Mdtest(p) = &w
                    && p.unique_dir
                {
                    return Err(unsupported(
                        TOOL,
                        "-t with -u",
                        Some("the engine times a phase from its first item"),
                    ));
                }
            }
            _ => return Err(unsupported(TOOL, &option, None)),
        }
    }
    w.check().map_err(|violation| CommandError::Invalid { tool: TOOL, violation })?;
    Ok((w, paths))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn every_spelling_of_a_value_reads_the_same() {
        for line in ["-w -t 1m -b 4m", "-w -t1m -b4m", "-w -t=1m -b=4m"] {
            let (w, _) = ior_command(&words(line)).unwrap();
            let Workload::Ior(p) = w else { panic!() };
            assert_eq!((p.write, p.transfer, p.block), (true, 1 << 20, 4 << 20), "{line}");
        }
        let err = ior_command(&words("-w -a MPIIO")).unwrap_err().to_string();
        assert_eq!(err, "IOR option -a MPIIO is not one pvfs's engine runs (the engine does POSIX I/O)");
        let err = ior_command(&words("-w -t")).unwrap_err().to_string();
        assert_eq!(err, "IOR option -t needs a value");
        let err = ior_command(&words("-w -O useO_DIRECT=1")).unwrap_err().to_string();
        assert_eq!(err, "IOR option -O useO_DIRECT=1 is not one pvfs's engine runs");
        let err = mdtest_command(&words("-n 10 -S")).unwrap_err().to_string();
        assert_eq!(err, "mdtest option -S is not one pvfs's engine runs");
        let err = ior_command(&words("-w -t 3m -b 4m")).unwrap_err().to_string();
        assert_eq!(err, "IOR: block (4m) must be a multiple of transfer (3m), as IOR requires");
        let err = ior_command(&words("-w -s x")).unwrap_err().to_string();
        assert!(err.starts_with("IOR option -s: s = \"x\": expected a whole number"), "{err}");
    }
}
