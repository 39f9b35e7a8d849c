//! The ini file the real io500 runs with under the mpi launcher (`--engine io500`), written
//! from the run's typed knobs ([`Options`]) and the run's directory — never from text a request
//! carried, so nothing but these keys can reach io500.
//!
//! io500 02091cf reads a line as `KEY = VALUE` where VALUE holds no `#` or `;` (either starts a
//! comment, `src/ini-parse.c`'s `r_str`) and lines end at `\n`: a directory holding any of them
//! would be cut short or read as another key, so it is refused here. The data and result
//! directories are the run's own (unique per run), so io500's timestamp suffixes are turned off
//! and the result files land where the run looks for them.

use super::plan::Options;
use crate::params::format_size;
use std::path::{Path, PathBuf};

/// The io500 results directory's name inside the run's directory.
pub const RESULTS: &str = "io500-results";

/// The command io500 runs on every rank before each phase when caches are to be dropped. io500
/// runs it through `system(3)` as the rank's user (root under the agent), so no `sudo`; a `;`
/// would end the ini value, hence `&&`.
pub const DROP_CACHES_CMD: &str = "sh -c \"sync && echo 3 > /proc/sys/vm/drop_caches\"";

/// A directory io500's ini cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the run's directory {} cannot go into io500's ini file: {why} (io500 ends a value at `#`, `;` and a line's end); \
     use a directory without them",
    .dir.display()
)]
pub struct IniError {
    pub dir: PathBuf,
    pub why: &'static str,
}

/// The ini text for a run in `dir` (datadir `dir`, results in `dir/io500-results`), with io500's
/// own cache dropping when `drop_caches`.
pub fn ini(options: &Options, dir: &Path, drop_caches: bool) -> Result<String, IniError> {
    let text = dir.to_str().ok_or(IniError { dir: dir.to_owned(), why: "it is not UTF-8" })?;
    let why = if text.contains(['#', ';']) {
        Some("it holds `#` or `;`")
    } else if text.chars().any(char::is_control) {
        Some("it holds a control character")
    } else if text.trim() != text {
        Some("it starts or ends with white space")
    } else {
        None
    };
    if let Some(why) = why {
        return Err(IniError { dir: dir.to_owned(), why });
    }
    let flag = |on: bool| if on { "TRUE" } else { "FALSE" };
    let mut out = String::from("; written by pvfs for this run: the run's directory and io500's knobs\n");
    out += "[global]\n";
    out += &format!("datadir = {text}\n");
    out += &format!("resultdir = {text}/{RESULTS}\n");
    out += "timestamp-datadir = FALSE\ntimestamp-resultdir = FALSE\n";
    out += &format!("drop-caches = {}\n", flag(drop_caches));
    if drop_caches {
        out += &format!("drop-caches-cmd = {DROP_CACHES_CMD}\n");
    }
    out += &format!("scc = {}\n", flag(options.scc));
    out += &format!("\n[debug]\nstonewall-time = {}\n", options.stonewall);
    out += &format!(
        "\n[ior-easy]\ntransferSize = {}\nblockSize = {}\nfilePerProc = {}\n",
        format_size(options.ior_easy_transfer),
        format_size(options.ior_easy_block),
        flag(options.ior_easy_file_per_proc)
    );
    out += &format!("\n[ior-hard]\nsegmentCount = {}\n", options.ior_hard_segments);
    out += &format!("\n[mdtest-easy]\nn = {}\n", options.mdtest_easy_files);
    out += &format!("\n[mdtest-hard]\nn = {}\n", options.mdtest_hard_files);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ini_carries_every_knob_and_the_run_directory() {
        let mut options = Options::default();
        for (k, v) in [
            ("debug.stonewall-time", "5"),
            ("ior-easy.transferSize", "1m"),
            ("ior-easy.blockSize", "64m"),
            ("ior-easy.filePerProc", "false"),
            ("ior-hard.segmentCount", "400"),
            ("mdtest-easy.n", "2000"),
            ("mdtest-hard.n", "300"),
            ("global.scc", "true"),
        ] {
            options.set(k, v).unwrap();
        }
        let text = ini(&options, Path::new("/mnt/pfs/pvfs-bench/run-1"), true).unwrap();
        for line in [
            "datadir = /mnt/pfs/pvfs-bench/run-1",
            "resultdir = /mnt/pfs/pvfs-bench/run-1/io500-results",
            "timestamp-datadir = FALSE",
            "drop-caches = TRUE",
            "drop-caches-cmd = sh -c \"sync && echo 3 > /proc/sys/vm/drop_caches\"",
            "scc = TRUE",
            "stonewall-time = 5",
            "transferSize = 1m",
            "blockSize = 64m",
            "filePerProc = FALSE",
            "segmentCount = 400",
            "n = 2000",
            "n = 300",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
        // io500's defaults go in as they are: its own 9920000m block.
        let text = ini(&Options::default(), Path::new("/d"), false).unwrap();
        assert!(text.contains("blockSize = 9920000m\n") && text.contains("drop-caches = FALSE\n"), "{text}");
        assert!(!text.contains("drop-caches-cmd"), "{text}");
    }

    #[test]
    fn a_directory_io500_would_misread_is_refused() {
        for (dir, why) in [
            ("/mnt/a;b", "`#` or `;`"),
            ("/mnt/a#b", "`#` or `;`"),
            ("/mnt/a\nresultdir = /etc", "control character"),
            ("/mnt/a ", "white space"),
        ] {
            let err = ini(&Options::default(), Path::new(dir), false).unwrap_err();
            assert!(err.to_string().contains(why), "{dir:?}: {err}");
        }
    }
}
