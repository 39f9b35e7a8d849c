//! The seed's Lustre tuning as typed steps: the benchmark directory's default layout
//! (`lfs setstripe -c -1 -S 4M DIR`, read back with `lfs getstripe -d DIR`) and client
//! parameters (`lctl set_param NAME=VALUE`, read back with `lctl get_param -n NAME`).
//!
//! Both are idempotent: what the node already says is compared first, and nothing runs when it
//! matches. `lctl set_param` is per client and lasts until the file system is mounted again
//! (the plan sets it on every client on every `up`); `lctl set_param -P` on the MGS would
//! persist it for every client, but it also reaches clients pvfs does not manage, so pvfs does
//! not use it.

use crate::{Action, Assessment, NodeAccess, StepError};
use pvfs_host::{Command, Runner};
use std::fmt;

/// A directory's default layout: new files in it get `count` stripes (-1: every OST) of
/// `size` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LustreStripe {
    pub dir: String,
    pub count: i64,
    pub size: u64,
}

/// What `lfs getstripe -d` says about a directory's default layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Layout {
    /// One RAID0 layout (the one-line form of every version, or one component).
    Plain { count: i64, size: u64 },
    /// A composite (PFL) default with several components.
    Composite { components: u64 },
    /// No default layout on the directory.
    None,
}

/// `lfs getstripe -d` output that does not say the directory's layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GetstripeError {
    #[error("{key}: has no value")]
    NoValue { key: String },
    #[error("{what} {value:?} is not a number")]
    NotANumber { what: &'static str, value: String },
    #[error("no stripe_count and stripe_size pair")]
    NoLayout,
}

/// Reads `lfs getstripe -d DIR` by its field names, which both of lfs's forms share: the
/// one-line directory form (`stripe_count:  -1 stripe_size:   4194304 [pattern: raid0]
/// stripe_offset: -1`, every version) and the multi-line composite form (`lcm_entry_count:`,
/// then per component `lmm_stripe_count:`/`lmm_stripe_size:`, also what `--yaml` prints).
/// The first line may be the directory's name, which is skipped.
pub(crate) fn parse_getstripe(dir: &str, text: &str) -> Result<Layout, GetstripeError> {
    let mut count = None;
    let mut size = None;
    let mut entries = None;
    for line in text.lines().filter(|l| l.trim() != dir) {
        let mut words = line.split_whitespace();
        while let Some(key) = words.next() {
            let Some(key) = key.strip_suffix(':') else { continue };
            let value =
                || words.clone().next().ok_or_else(|| GetstripeError::NoValue { key: key.to_owned() });
            let number = |what, v: &str| GetstripeError::NotANumber { what, value: v.to_owned() };
            match key {
                "stripe_count" | "lmm_stripe_count" if count.is_none() => {
                    let v = value()?;
                    count = Some(v.parse::<i64>().map_err(|_| number("stripe count", v))?);
                }
                "stripe_size" | "lmm_stripe_size" if size.is_none() => {
                    let v = value()?;
                    size = Some(v.parse::<u64>().map_err(|_| number("stripe size", v))?);
                }
                "lcm_entry_count" => {
                    let v = value()?;
                    entries = Some(v.parse::<u64>().map_err(|_| number("entry count", v))?);
                }
                _ => {}
            }
        }
    }
    match (entries, count, size) {
        (Some(n), _, _) if n > 1 => Ok(Layout::Composite { components: n }),
        (_, Some(count), Some(size)) => Ok(Layout::Plain { count, size }),
        (None, None, None) => Ok(Layout::None),
        _ => Err(GetstripeError::NoLayout),
    }
}

/// `4194304` → `4M`: lfs takes the suffixes, and it is what an operator types.
fn size_arg(bytes: u64) -> String {
    for (shift, suffix) in [(30, "G"), (20, "M"), (10, "K")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{suffix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

impl LustreStripe {
    /// `lfs setstripe -c N -S SIZE -- DIR`. lfs's subcommands read their options with
    /// getopt_long() and then take argv[optind..] as the files (lustre/utils/lfs.c:
    /// lfs_setstripe_internal and lfs_getstripe_internal, `do { … argv[optind] … } while
    /// (++optind < argc …)`), so `--` ends the options before the directory. (`-c -1` stays
    /// an option argument: getopt takes the next word whole for an option that needs one.)
    fn setstripe(&self) -> Command {
        Command::new("lfs").args([
            "setstripe",
            "-c",
            &self.count.to_string(),
            "-S",
            &size_arg(self.size),
            "--",
            &self.dir,
        ])
    }

    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        // `--` before the directory, as for setstripe above.
        let probe = Command::new("lfs").args(["getstripe", "-d", "--", &self.dir]);
        let shown = probe.to_string();
        let text = host.probe_ok(probe).await?;
        let layout = parse_getstripe(&self.dir, &text)
            .map_err(|err| StepError::Unexpected { command: shown, message: err.to_string() })?;
        let mut a = Assessment::in_sync();
        let why = match layout {
            Layout::Plain { count, size } if count == self.count && size == self.size => return Ok(a),
            Layout::Plain { count, size } => {
                format!(
                    "{} stripes new files {count} × {} (not {} × {})",
                    self.dir,
                    size_arg(size),
                    self.count,
                    size_arg(self.size)
                )
            }
            Layout::Composite { components } => {
                format!("{} has a composite default layout ({components} components)", self.dir)
            }
            Layout::None => format!("{} has no default layout", self.dir),
        };
        a.change(why, Action::Run(self.setstripe()));
        Ok(a)
    }
}

impl fmt::Display for LustreStripe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = if self.count == -1 { "every OST".to_owned() } else { format!("{} OSTs", self.count) };
        write!(f, "stripe new files in {} over {count}, {} a stripe", self.dir, size_arg(self.size))
    }
}

/// One Lustre client parameter (`llite.*.max_read_ahead_mb` = `64`), set with `lctl set_param`
/// on this node. A wildcard matches one parameter per mounted file system instance; every one
/// must hold the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LctlParam {
    pub name: String,
    pub value: String,
}

impl LctlParam {
    pub(crate) async fn assess<R: Runner>(&self, host: &NodeAccess<R>) -> Result<Assessment, StepError> {
        // No `--` for lctl: its parameter commands did not always use getopt (lctl before
        // 2.4 read `argv[1]` as the path, lustre_cfg.c jt_lcfg_setparam, and would take a
        // `--` for a parameter name), so lctl relies on the grammar: a name starts with one
        // of the client prefixes (`llite.`, `osc.`, …, `pvfs_policy::Policy::check_step`), never with `-`.
        let probe = Command::new("lctl").args(["get_param", "-n", &self.name]);
        let shown = probe.to_string();
        let out = host.probe(probe).await?;
        if !out.success() {
            return Err(StepError::Command {
                command: shown,
                code: out.code,
                stderr: crate::error_tail(&out),
                hint: Some(format!(
                    "no parameter matches {}: is the Lustre client module loaded and the file system mounted here?",
                    self.name
                )),
            });
        }
        // `-n`: the values only, one line per matching parameter for single-value tunables.
        // Structured ones print `key: value` lines (`llite.*.max_cached_mb`: `users:`,
        // `max_cached_mb:`, …) that cannot be compared with one value: refused, not guessed.
        let values: Vec<&str> = out.stdout.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        if values.is_empty() {
            return Err(StepError::Unexpected { command: shown, message: "no value printed".into() });
        }
        if let Some(line) = values.iter().find(|v| v.contains(": ") || v.ends_with(':')) {
            return Err(StepError::Unexpected {
                command: shown,
                message: format!(
                    "{line:?} is part of a structured value; pvfs sets only parameters that read back as one value"
                ),
            });
        }
        let mut a = Assessment::in_sync();
        let mut differ: Vec<&str> = values.iter().copied().filter(|v| *v != self.value).collect();
        differ.dedup();
        if !differ.is_empty() {
            a.change(
                format!("{} is {} (want {})", self.name, differ.join(", "), self.value),
                Action::Run(
                    Command::new("lctl").args(["set_param", &format!("{}={}", self.name, self.value)]),
                ),
            );
        }
        Ok(a)
    }
}

impl fmt::Display for LctlParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lctl {}={}", self.name, self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvfs_host::{RecordedRunner, Root};

    use crate::without_header as fixture;

    fn host(runner: RecordedRunner) -> (tempfile::TempDir, NodeAccess<RecordedRunner>) {
        let dir = tempfile::tempdir().unwrap();
        let host = NodeAccess::new(Root::at(dir.path()), runner);
        (dir, host)
    }

    const D_2_10: &str = include_str!("../testdata/lustre/getstripe-d-2.10.txt");
    const D_2_12: &str = include_str!("../testdata/lustre/getstripe-d-2.12.txt");
    const COMPOSITE: &str = include_str!("../testdata/lustre/getstripe-composite.txt");

    #[test]
    fn getstripe_reads_both_one_line_forms_and_the_composite_form() {
        assert_eq!(
            parse_getstripe("/mnt/lustre/test1", &fixture(D_2_10)),
            Ok(Layout::Plain { count: -1, size: 4 << 20 })
        );
        assert_eq!(
            parse_getstripe("/scratch/users/<login>/", &fixture(D_2_12)),
            Ok(Layout::Plain { count: -1, size: 1 << 20 })
        );
        // One component: its lmm_ fields are the layout.
        assert_eq!(
            parse_getstripe("/mnt/testfs/file2", &fixture(COMPOSITE)),
            Ok(Layout::Plain { count: 2, size: 8 << 20 })
        );
        let two = fixture(COMPOSITE).replace("lcm_entry_count:   1", "lcm_entry_count:   2");
        assert_eq!(parse_getstripe("/mnt/testfs/file2", &two), Ok(Layout::Composite { components: 2 }));
        assert_eq!(parse_getstripe("/d", "/d\n"), Ok(Layout::None));
        assert!(parse_getstripe("/d", "stripe_count:  x stripe_size: 1").is_err());
        assert!(parse_getstripe("/d", "stripe_count:  4\n").is_err());
    }

    const NO_FILE: &str = include_str!("../testdata/lustre/setstripe-no-file-2.15.txt");

    /// lfs prints a usage error's cause first and its usage after it (issue 25, item 8): the
    /// failure keeps the cause, and the end of what it printed.
    #[tokio::test]
    async fn a_setstripe_usage_error_keeps_its_cause() {
        let (_d, h) = host(
            RecordedRunner::new()
                .record("lfs getstripe -d -- /mnt/lustre/test1", 0, &fixture(D_2_12), "")
                .record("lfs setstripe -c -1 -S 4M -- /mnt/lustre/test1", 4, "", &fixture(NO_FILE)),
        );
        let step = crate::Step::LustreStripe(stripe());
        let outcome = crate::execute(&step, &h, &crate::Unguarded, false, |_| {}).await;
        let crate::Outcome::Failed(failure) = outcome else { panic!("{outcome:?}") };
        assert_eq!(failure.code, Some(4));
        assert_eq!(
            failure.stderr_tail,
            "lfs setstripe setstripe: FILE must be specified\n\
             To create a file with specified striping/composite layout, or\n\
             … (52 lines left out)\n\
             To create a file with a foreign (free format) layout:\n\
             usage: setstripe --foreign[=FOREIGN_TYPE]\n\
             \x20                --xattr|-x LAYOUT_STRING [--flags HEX]\n\
             \x20                [--mode MODE] <filename>"
        );
    }

    fn stripe() -> LustreStripe {
        LustreStripe { dir: "/mnt/lustre/test1".into(), count: -1, size: 4 << 20 }
    }

    #[tokio::test]
    async fn a_directory_already_striped_so_is_left_alone_and_another_is_set() {
        let (_d, h) = host(RecordedRunner::new().record(
            "lfs getstripe -d -- /mnt/lustre/test1",
            0,
            &fixture(D_2_10),
            "",
        ));
        assert!(stripe().assess(&h).await.unwrap().is_in_sync());

        let (_d, h) = host(RecordedRunner::new().record(
            "lfs getstripe -d -- /mnt/lustre/test1",
            0,
            &fixture(D_2_12),
            "",
        ));
        // The same 2.12 line satisfies a 1M layout (the fixture's own directory name differs,
        // and is not a field).
        let (_d2, h2) = host(RecordedRunner::new().record(
            "lfs getstripe -d -- /mnt/lustre/test1",
            0,
            &fixture(D_2_12),
            "",
        ));
        assert!(LustreStripe { size: 1 << 20, ..stripe() }.assess(&h2).await.unwrap().is_in_sync());
        let a = stripe().assess(&h).await.unwrap();
        assert_eq!(a.actions.len(), 1);
        assert_eq!(a.actions[0].to_string(), "lfs setstripe -c -1 -S 4M -- /mnt/lustre/test1");
        assert_eq!(a.diff, ["/mnt/lustre/test1 stripes new files -1 × 1M (not -1 × 4M)"]);

        let (_d, h) = host(RecordedRunner::new().record(
            "lfs getstripe -d -- /mnt/lustre/test1",
            0,
            "garbage: x\nstripe_size: 1\n",
            "",
        ));
        let err = stripe().assess(&h).await.unwrap_err();
        assert!(
            err.to_string().contains("`lfs getstripe -d -- /mnt/lustre/test1` answered something unexpected"),
            "{err}"
        );
    }

    const GET_PARAM: &str = include_str!("../testdata/lustre/get-param-n-two-mounts.txt");

    fn param() -> LctlParam {
        LctlParam { name: "llite.*.max_read_ahead_mb".into(), value: "64".into() }
    }

    #[tokio::test]
    async fn a_parameter_is_set_unless_every_instance_already_holds_the_value() {
        let cmd = "lctl get_param -n 'llite.*.max_read_ahead_mb'";
        let (_d, h) = host(RecordedRunner::new().record(cmd, 0, &fixture(GET_PARAM), ""));
        let a = param().assess(&h).await.unwrap();
        assert_eq!(a.actions[0].to_string(), "lctl set_param 'llite.*.max_read_ahead_mb=64'");
        assert_eq!(a.diff, ["llite.*.max_read_ahead_mb is 40 (want 64)"]);

        let (_d, h) = host(RecordedRunner::new().record(cmd, 0, "64\n64\n", ""));
        assert!(param().assess(&h).await.unwrap().is_in_sync());

        let (_d, h) = host(RecordedRunner::new().record(cmd, 0, "users: 2\nmax_cached_mb: 2048\n", ""));
        let err = param().assess(&h).await.unwrap_err().to_string();
        assert!(err.contains("part of a structured value"), "{err}");

        let (_d, h) = host(RecordedRunner::new().record(cmd, 0, "\n", ""));
        assert!(matches!(param().assess(&h).await, Err(StepError::Unexpected { .. })));

        let (_d, h) = host(RecordedRunner::new().record(
            cmd,
            2,
            "",
            "error: get_param: param_path 'llite/*/max_read_ahead_mb': No such file or directory\n",
        ));
        let err = param().assess(&h).await.unwrap_err().to_string();
        assert!(err.contains("file system mounted here"), "{err}");
    }
}
