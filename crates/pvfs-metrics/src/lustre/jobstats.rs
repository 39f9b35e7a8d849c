//! A target's `job_stats`, read a job at a time in memory that does not grow with the jobs.
//!
//! The format is `lprocfs_jobstats_seq_show`'s (lustre/obdclass/lprocfs_jobstats.c):
//!
//! ```text
//! job_stats:
//! - job_id:          "SLURM_JOB10:0:client"
//!   snapshot_time:   1723114484.795259864 secs.nsecs
//!   start_time:      1723114286.476248961 secs.nsecs
//!   elapsed_time:    198.319010903 secs.nsecs
//!   write_bytes:     { samples:          17, unit: bytes, min:  1409024, max: 16777216, sum: 204177408, sumsq: 2952969330884608, hist: { 2M: 1, 16M: 11 } }
//!   punch:           { samples:           2, unit: usecs, min:       46, max:       49, sum:        95, sumsq:     4517 }
//! ```
//!
//! A counter prints `samples`, then `unit` when it has one, `min`/`max`/`sum` when it keeps
//! them, `sumsq` when it keeps that too (2.12 on), and `hist` when it has a histogram (2.15
//! on); before 2.12 a job's times were `snapshot_time: SECONDS` alone. A job id with a
//! character other than letters, digits and `.@-_:/` has it written `\xHH` and is quoted, as
//! is one with a `:` or starting with `@`; [`JobReader`] gives the id as the job set it.
//!
//! Why a reader rather than a parse of the whole text: a busy server's job_stats holds tens of
//! thousands of jobs at ~2 KB each (lustrefs-exporter's PR #68 was an exporter whose memory grew
//! with that output); [`JobReader::next_job`] reads one line at a time into one buffer and fills
//! one [`Job`] whose strings and counters are reused, so reading 25,000 jobs allocates no more
//! than reading one (tested by counting allocations).

use super::{Stat, StatsError, Times};
use std::io::BufRead;

/// The longest line read; a longer one is refused (no job_stats line is near it: a counter with
/// a full histogram is ~600 bytes), so hostile input cannot grow the buffer.
const MAX_LINE: usize = 64 * 1024;

/// One job of one target, as read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Job {
    /// The parameter it came from when the input is `lctl get_param`'s output
    /// (`obdfilter.fs-OST0001.job_stats`); empty when a job_stats file is read directly.
    pub param: String,
    /// As the job set it (quotes removed, `\xHH` decoded).
    pub job_id: String,
    pub times: Times,
    /// Every counter printed, in the kernel's order (zeros too: job_stats prints them all).
    pub counters: Vec<Stat>,
    /// How many of `counters` belong to this job; the rest are spare, kept for reuse.
    len: usize,
}

impl Job {
    /// This job's counters.
    pub fn counters(&self) -> &[Stat] {
        &self.counters[..self.len]
    }

    /// The counter `name`.
    pub fn get(&self, name: &str) -> Option<&Stat> {
        self.counters().iter().find(|s| s.name == name)
    }

    /// The target's name (`fs-OST0001`) and kind (`obdfilter`, `mdt`) from [`Job::param`].
    pub fn target(&self) -> Option<(&str, &str)> {
        let (kind, rest) = self.param.split_once('.')?;
        Some((kind, rest.strip_suffix(".job_stats")?))
    }

    fn clear(&mut self) {
        self.job_id.clear();
        self.times = Times::default();
        self.len = 0;
    }

    /// The next counter slot, reusing a spare one's strings.
    fn push(&mut self) -> &mut Stat {
        if self.len == self.counters.len() {
            self.counters.push(Stat {
                name: String::new(),
                units: String::new(),
                samples: 0,
                min: None,
                max: None,
                sum: None,
                sumsquare: None,
            });
        }
        self.len += 1;
        &mut self.counters[self.len - 1]
    }
}

/// Reads jobs one at a time from a job_stats file or from `lctl get_param …job_stats`' output.
pub struct JobReader<R> {
    input: R,
    line: Vec<u8>,
    number: usize,
    /// The parameter the lines belong to (lctl's output).
    param: String,
    /// A `- job_id:` line read while finishing the job before it.
    pending: bool,
    /// A quoted job id's bytes while its escapes are decoded.
    scratch: Vec<u8>,
    /// Jobs read so far.
    pub jobs: usize,
}

const WHAT: &str = "Lustre's job_stats";

impl<R: BufRead> JobReader<R> {
    pub fn new(input: R) -> Self {
        JobReader {
            input,
            line: Vec::new(),
            number: 0,
            param: String::new(),
            pending: false,
            scratch: Vec::new(),
            jobs: 0,
        }
    }

    /// Fills `job` with the next job; `Ok(false)` at the end. Lines other than a job's (the
    /// `job_stats:` heading, a parameter's `NAME=` line) are taken in passing.
    pub fn next_job(&mut self, job: &mut Job) -> Result<bool, StatsError> {
        job.clear();
        let mut inside = false;
        loop {
            if !self.pending && !self.read_line()? {
                return Ok(inside);
            }
            self.pending = false;
            let line = std::str::from_utf8(&self.line).map_err(|_| self.error("a line that is not UTF-8"))?;
            let line = line.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty() || line.trim_end() == "job_stats:" {
                continue;
            }
            if let Some(id) = line.strip_prefix("- job_id:") {
                if inside {
                    // The next job's first line: kept for the next call.
                    self.pending = true;
                    return Ok(true);
                }
                if !job_id(id.trim(), &mut self.scratch, &mut job.job_id) {
                    return Err(self.error("a job id that is not as Lustre quotes it"));
                }
                job.param.clear();
                job.param.push_str(&self.param);
                inside = true;
                self.jobs += 1;
                continue;
            }
            if let Some(name) = line.strip_suffix('=').filter(|n| !n.starts_with(' ') && !n.contains(' ')) {
                if inside {
                    self.pending = true;
                    return Ok(true);
                }
                self.param.clear();
                self.param.push_str(name);
                continue;
            }
            let Some(field) = line.strip_prefix("  ") else {
                return Err(self.error("neither a job's line, `job_stats:` nor a parameter's name"));
            };
            if !inside {
                return Err(self.error("a job's line before any `- job_id:`"));
            }
            let (name, value) =
                field.split_once(':').ok_or_else(|| self.error("not a `NAME: VALUE` line"))?;
            let name = name.trim();
            if let Some(read) = job.times.read(name, value.split_ascii_whitespace()) {
                read.map_err(|why| self.error(why))?;
                continue;
            }
            let value = value.trim();
            if !value.starts_with('{') {
                // A field a later Lustre adds beside the times: not a counter, and not ours.
                continue;
            }
            let slot = job.push();
            counter(name, value, slot).map_err(|why| self.error(why))?;
        }
    }

    /// The next line into the buffer; `false` at the end.
    fn read_line(&mut self) -> Result<bool, StatsError> {
        self.line.clear();
        let read = std::io::Read::take(&mut self.input, MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.line)
            .map_err(|_| StatsError {
                what: WHAT,
                line: self.number + 1,
                text: String::new(),
                why: "unreadable",
            })?;
        if read == 0 {
            return Ok(false);
        }
        self.number += 1;
        if self.line.len() > MAX_LINE {
            self.line.truncate(80);
            return Err(self.error("a line longer than 64 KiB"));
        }
        Ok(true)
    }

    fn error(&self, why: &'static str) -> StatsError {
        StatsError {
            what: WHAT,
            line: self.number,
            text: String::from_utf8_lossy(&self.line).trim_end().to_owned(),
            why,
        }
    }
}

/// A job id as printed, into `id`: bare, or quoted with `\xHH` escapes (which the kernel's
/// write handler decodes the same way). `false` when it is neither.
fn job_id(printed: &str, scratch: &mut Vec<u8>, id: &mut String) -> bool {
    let Some(inner) = printed.strip_prefix('"') else {
        id.push_str(printed);
        return !printed.is_empty() && !printed.contains('"');
    };
    let Some(inner) = inner.strip_suffix('"') else { return false };
    scratch.clear();
    let mut rest = inner.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b != b'\\' {
            scratch.push(b);
            rest = tail;
            continue;
        }
        let Some(hex) = tail.get(1..3).filter(|_| tail.first() == Some(&b'x')) else { return false };
        let Some(byte) = std::str::from_utf8(hex).ok().and_then(|h| u8::from_str_radix(h, 16).ok()) else {
            return false;
        };
        scratch.push(byte);
        rest = &tail[3..];
    }
    match std::str::from_utf8(scratch) {
        Ok(text) => id.push_str(text),
        // Not UTF-8 once decoded (a job named in another encoding): shown as near as it can be.
        Err(_) => id.push_str(&String::from_utf8_lossy(scratch)),
    }
    true
}

/// `{ samples: N, unit: U, min: A, max: B, sum: C, sumsq: D, hist: { … } }` into `slot`.
fn counter(name: &str, value: &str, slot: &mut Stat) -> Result<(), &'static str> {
    let body =
        value.strip_prefix('{').and_then(|v| v.strip_suffix('}')).ok_or("a counter not within `{ … }`")?;
    // The histogram comes last and has commas of its own.
    let (fields, hist) = match body.split_once("hist:") {
        Some((fields, hist)) => (fields, Some(hist.trim())),
        None => (body, None),
    };
    if let Some(hist) = hist
        && !(hist.starts_with('{') && hist.ends_with('}'))
    {
        return Err("a histogram not within `{ … }`");
    }
    slot.name.clear();
    slot.name.push_str(name);
    slot.units.clear();
    (slot.min, slot.max, slot.sum, slot.sumsquare) = (None, None, None, None);
    let mut samples = None;
    for field in fields.split(',') {
        let field = field.trim();
        if field.is_empty() {
            continue;
        }
        let (key, value) = field.split_once(':').ok_or("a counter's field that is not `KEY: VALUE`")?;
        let (key, value) = (key.trim(), value.trim());
        if key == "unit" {
            slot.units.push_str(value);
            continue;
        }
        let number = value.parse::<u64>().map_err(|_| "a counter's figure that is not a whole number")?;
        match key {
            "samples" => samples = Some(number),
            "min" => slot.min = Some(number),
            "max" => slot.max = Some(number),
            "sum" => slot.sum = Some(number),
            "sumsq" => slot.sumsquare = Some(number),
            // A figure a later Lustre adds.
            _ => {}
        }
    }
    slot.samples = samples.ok_or("a counter without `samples`")?;
    Ok(())
}

/// One job's counters on one target, as [`of_ids`] found them.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetJob {
    /// `obdfilter` (an OST) or `mdt`.
    pub kind: String,
    pub target: String,
    pub job_id: String,
    /// The counters the kernel printed for it, zeros left out.
    pub counters: Vec<Stat>,
}

/// The jobs `ids` on every target of the node (`obdfilter.*.job_stats`, `mdt.*.job_stats`,
/// found where lctl finds them), in the targets' order. Each file is read a job at a time
/// ([`JobReader`]), so what is kept grows with the ids asked for and the targets, never with
/// the jobs a server holds. A file that cannot be read or parsed is named with why in the
/// second list, and the other targets are still read.
pub fn of_ids(root: &pvfs_host::Root, ids: &[&str]) -> (Vec<TargetJob>, Vec<String>) {
    let (mut found, mut errors) = (Vec::new(), Vec::new());
    if !super::params::present(root) {
        return (found, errors);
    }
    let trees = super::params::trees(root);
    for pattern in ["obdfilter.*.job_stats", "mdt.*.job_stats"] {
        for param in super::params::find_in(root, &trees, pattern) {
            let mut parts = param.name.splitn(3, '.');
            let (Some(kind), Some(target)) = (parts.next(), parts.next()) else { continue };
            let file = match std::fs::File::open(root.path(&param.path)) {
                Ok(file) => file,
                // Unmounted since it was found: nothing of it to tell.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    errors.push(format!("{}: {e}", param.path));
                    continue;
                }
            };
            let mut reader = JobReader::new(std::io::BufReader::new(file));
            let mut job = Job::default();
            loop {
                match reader.next_job(&mut job) {
                    Ok(false) => break,
                    Ok(true) if ids.contains(&job.job_id.as_str()) => found.push(TargetJob {
                        kind: kind.to_owned(),
                        target: target.to_owned(),
                        job_id: job.job_id.clone(),
                        counters: job.counters().iter().filter(|c| c.samples > 0).cloned().collect(),
                    }),
                    Ok(true) => {}
                    // Where and why, not the line itself: the answer goes to a caller, and
                    // what a root-only file holds is not for it to read.
                    Err(e) => {
                        errors.push(format!("{}: line {}: {}", param.path, e.line, e.why));
                        break;
                    }
                }
            }
        }
    }
    (found, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/lustre").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn all(text: &str) -> Vec<Job> {
        let mut reader = JobReader::new(text.as_bytes());
        let mut jobs = Vec::new();
        let mut job = Job::default();
        while reader.next_job(&mut job).unwrap() {
            jobs.push(job.clone());
        }
        assert_eq!(reader.jobs, jobs.len());
        jobs
    }

    /// An OST's job_stats of a 2.15 server (lctl's output): every job, its quoted and bare
    /// ids, times, the counters with their histograms left out and every figure kept.
    #[test]
    fn an_osts_jobs_read_one_by_one() {
        let jobs = all(&fixture("job_stats_ost.txt"));
        assert_eq!(jobs.len(), 16);
        assert!(
            jobs.iter().all(|j| j.target() == Some(("obdfilter", "es01a-OST0001"))),
            "{:?}",
            jobs[0].param
        );
        assert_eq!(jobs[0].job_id, "SLURM_JOB10:0:es18kxe-co-client");
        let j29 = jobs.iter().find(|j| j.job_id == "SLURM_JOB29").expect("a bare id");
        let write = j29.get("write_bytes").unwrap();
        assert_eq!(
            (write.samples, write.units.as_str(), write.min, write.max, write.sum, write.sumsquare),
            (17, "bytes", Some(1409024), Some(16777216), Some(204177408), Some(2952969330884608))
        );
        assert_eq!(j29.get("punch").map(|p| (p.samples, p.sum)), Some((2, Some(95))));
        assert!((j29.times.elapsed_time.unwrap() - 198.319_010_903).abs() < 1e-6);
        assert!((j29.times.snapshot_time.unwrap() - 1_723_114_484.795_26).abs() < 1e-5);
        // Every job prints every counter of the target, in one order.
        let names: Vec<_> = jobs[0].counters().iter().map(|s| s.name.clone()).collect();
        assert_eq!(names.len(), 15, "{names:?}");
        assert!(jobs.iter().all(|j| j.counters().iter().map(|s| &s.name).eq(names.iter())));
    }

    /// Two MDTs' job_stats in one lctl output: each job carries its own target's parameter.
    #[test]
    fn jobs_of_two_targets_keep_their_target() {
        let jobs = all(&fixture("job_stats_mdt.txt"));
        assert_eq!(jobs.len(), 12);
        let targets: std::collections::BTreeSet<_> = jobs.iter().filter_map(|j| j.target()).collect();
        assert_eq!(
            targets.into_iter().collect::<Vec<_>>(),
            [("mdt", "es01a-MDT0000"), ("mdt", "es02a-MDT0000")]
        );
        let fio = jobs.iter().find(|j| j.job_id == "fio:0:es-2-virt3-cosp").unwrap();
        assert_eq!(
            fio.get("open").map(|s| (s.samples, s.units.as_str(), s.sum)),
            Some((123, "usecs", Some(5455)))
        );
        assert_eq!(fio.get("sync").and_then(|s| s.sumsquare), Some(1639641835225));
    }

    /// The forms the kernel prints that the fixtures do not show: a counter with no unit and
    /// no figures, one before `sumsq` (2.10's), a time with no fraction, an escaped id, an
    /// empty job_stats file; and a bad line is named by its number.
    #[test]
    fn the_printed_forms_read_and_a_bad_line_is_named() {
        // Written here to lprocfs_jobstats_seq_show's format, and that of 2.10's, which
        // printed `snapshot_time: SECONDS` and no sumsq.
        let text = "job_stats:\n\
            - job_id:          \"dd\\x20job:7\"\n\
            \x20 snapshot_time:   1352084992\n\
            \x20 read_bytes:      { samples:           2, unit: bytes, min:       4, max:       8, sum:              12 }\n\
            \x20 setattr:         { samples:           1, unit:  reqs }\n\
            \x20 quotactl:        { samples:           0 }\n\
            - job_id:          \"@host\"\n\
            \x20 snapshot_time:   1352084993\n";
        let jobs = all(text);
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0].job_id, "dd job:7");
        assert_eq!(jobs[0].times.snapshot_time, Some(1352084992.0));
        let read = jobs[0].get("read_bytes").unwrap();
        assert_eq!((read.samples, read.sum, read.sumsquare), (2, Some(12), None));
        assert_eq!(jobs[0].get("setattr").map(|s| (s.units.as_str(), s.min)), Some(("reqs", None)));
        assert_eq!(jobs[0].get("quotactl").map(|s| (s.samples, s.units.as_str())), Some((0, "")));
        assert_eq!((jobs[1].job_id.as_str(), jobs[1].counters().len()), ("@host", 0));
        assert!(all("job_stats:\n").is_empty());

        let bad = "job_stats:\n- job_id: a\n  read_bytes: { samples: many }\n";
        let mut job = Job::default();
        let err = JobReader::new(bad.as_bytes()).next_job(&mut job).unwrap_err();
        assert_eq!((err.line, err.why), (3, "a counter's figure that is not a whole number"), "{err}");
        let unquoted = "job_stats:\n- job_id: \"a\\q\"\n";
        assert!(JobReader::new(unquoted.as_bytes()).next_job(&mut job).is_err());
    }

    /// 25,000 jobs read with as many allocations as 100: nothing is kept per job.
    #[test]
    fn reading_many_jobs_allocates_no_more_than_reading_a_few() {
        let text = fixture("job_stats_ost.txt");
        let one_job: String = {
            let start = text.find("- job_id:          SLURM_JOB29").unwrap();
            let end = start + text[start + 1..].find("- job_id:").unwrap() + 1;
            text[start..end].to_owned()
        };
        let output = |jobs: usize| {
            let mut out = String::from("obdfilter.es01a-OST0001.job_stats=\njob_stats:\n");
            for i in 0..jobs {
                out.push_str(&one_job.replacen("SLURM_JOB29", &format!("SLURM_JOB{i}"), 1));
            }
            out
        };
        let count = |text: &str| {
            let mut reader = JobReader::new(std::io::BufReader::with_capacity(8192, text.as_bytes()));
            let mut job = Job::default();
            let mut bytes = 0;
            let info = allocation_counter::measure(|| {
                while reader.next_job(&mut job).unwrap() {
                    bytes += job.get("write_bytes").and_then(|w| w.sum).unwrap_or_default();
                }
            });
            (reader.jobs, bytes, info.count_total)
        };
        let (few, few_bytes, few_allocations) = count(&output(100));
        let (many, many_bytes, many_allocations) = count(&output(25_000));
        assert_eq!((few, many), (100, 25_000));
        assert_eq!((few_bytes, many_bytes), (100 * 204177408, 25_000 * 204177408));
        assert!(
            many_allocations <= few_allocations,
            "{many_allocations} allocations for 25,000 jobs, {few_allocations} for 100"
        );
    }

    /// A server's root holding each target's job_stats file as the kernel prints it (the
    /// fixtures' lctl output split at its `PARAM=` lines): only the jobs asked for come back,
    /// each with its target and its non-zero counters, OSTs before MDTs; a file that does
    /// not parse is named and the others are still read; no Lustre, nothing.
    #[test]
    fn the_jobs_asked_for_are_found_on_every_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = pvfs_host::Root::at(dir.path());
        assert_eq!(of_ids(&root, &["SLURM_JOB29"]), (vec![], vec![]));
        for name in ["job_stats_ost.txt", "job_stats_mdt.txt"] {
            let text = fixture(name);
            let mut current: Option<std::path::PathBuf> = None;
            for line in text.lines() {
                if let Some((param, rest)) = line.split_once('=').filter(|(p, _)| p.ends_with(".job_stats")) {
                    let (kind, target) = param.trim_end_matches(".job_stats").split_once('.').unwrap();
                    let at = dir.path().join("proc/fs/lustre").join(kind).join(target);
                    std::fs::create_dir_all(&at).unwrap();
                    std::fs::write(at.join("job_stats"), format!("{rest}\n")).unwrap();
                    current = Some(at.join("job_stats"));
                    continue;
                }
                let path = current.as_ref().expect("a parameter first");
                let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
                std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes()).unwrap();
            }
        }
        let all_ost = all(&fixture("job_stats_ost.txt"));
        let id = all_ost.iter().find(|j| j.job_id == "SLURM_JOB29").unwrap();
        let (jobs, errors) = of_ids(&root, &["SLURM_JOB29", "SLURM_JOB10:0:es18kxe-co-client", "not-there"]);
        assert!(errors.is_empty(), "{errors:?}");
        let on_ost: Vec<_> = jobs.iter().filter(|j| j.kind == "obdfilter").collect();
        assert_eq!(on_ost.len(), 2, "{jobs:?}");
        let j29 = on_ost.iter().find(|j| j.job_id == "SLURM_JOB29").unwrap();
        assert_eq!(j29.target, "es01a-OST0001");
        let nonzero: Vec<&Stat> = id.counters().iter().filter(|c| c.samples > 0).collect();
        assert_eq!(j29.counters.iter().collect::<Vec<_>>(), nonzero);
        assert!(j29.counters.iter().any(|c| c.name == "write_bytes" && c.sum == Some(204177408)));
        let first_mdt = jobs.iter().position(|j| j.kind == "mdt");
        assert!(first_mdt.is_none_or(|at| jobs[at..].iter().all(|j| j.kind == "mdt")), "{jobs:?}");
        // A target whose file does not parse is named; the others are read.
        let ost = dir.path().join("proc/fs/lustre/obdfilter/es01a-OST0001/job_stats");
        let good = std::fs::read_to_string(&ost).unwrap();
        std::fs::write(&ost, "job_stats:\n- job_id: x\n  write_bytes: { samples: lots }\n").unwrap();
        let (jobs, errors) = of_ids(&root, &["SLURM_JOB29"]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("es01a-OST0001/job_stats: line 3: "), "{errors:?}");
        assert!(!errors[0].contains("lots"), "the line itself is not told: {errors:?}");
        assert!(jobs.iter().all(|j| j.kind == "mdt"), "{jobs:?}");
        std::fs::write(&ost, good).unwrap();
    }
}
