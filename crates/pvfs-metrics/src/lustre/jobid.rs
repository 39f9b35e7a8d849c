//! The job id a Lustre client gives a process's I/O, worked out as the client's kernel works it
//! out, so that a benchmark can read its own tasks' counters from the servers' `job_stats`.
//!
//! Written to lustre-release's `lustre/obdclass/jobid.c` (`lustre_get_jobid`,
//! `jobid_interpret_string`; 2.13 and later, read at commit f563d722): the client's `jobid_var`
//! says where the id comes from —
//! - `disable`: none;
//! - `procname_uid`: `%e.%u` (the process's `comm` and its fs uid), whatever `jobid_name` says;
//! - `nodelocal`: `jobid_name` expanded, the same for every process of the node;
//! - `session`, or any other word (the name of an environment variable, such as
//!   `SLURM_JOB_ID`): the session's id (`jobid_this_session`) or that variable's value in the
//!   process's environment — unless `jobid_name` holds `%j`, or nothing was found, when
//!   `jobid_name` expanded is the id. A process whose `comm` starts with one of Lustre's own
//!   threads' names (`ll_ping`, `ptlrpc`, `ldlm`, `ll_sa`) gets none.
//!
//! `jobid_name`'s escapes: `%e` comm, `%g` fs gid, `%h` the node's name, `%H` it up to the first
//! dot, `%j` the environment's (or session's) id, `%p` the pid, `%u` fs uid; an unknown escape
//! is dropped, the format's whitespace is dropped (not an expansion's), other characters are
//! copied; the id holds at most
//! [`MAX_LEN`] characters (`LUSTRE_JOBID_SIZE` 32 with its NUL).

use super::params;
use pvfs_host::Root;

/// The longest job id (`LUSTRE_JOBID_SIZE` less its terminating NUL).
pub const MAX_LEN: usize = 31;

/// A client's job id settings (`jobid_var`, `jobid_name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub var: String,
    pub name: String,
}

impl Setting {
    /// The node's settings, from the kernel's files where lctl finds them; `None` on a node
    /// without a Lustre client (no `jobid_var`). A missing `jobid_name` is the kernel's
    /// default, `%e.%u`.
    pub fn read(root: &Root) -> Option<Setting> {
        if !params::present(root) {
            return None;
        }
        let value = |name: &str| {
            let found = params::find(root, name).into_iter().next()?;
            params::read(root, &found).map(|v| v.trim().to_owned())
        };
        Some(Setting {
            var: value("jobid_var")?,
            name: value("jobid_name").unwrap_or_else(|| "%e.%u".into()),
        })
    }
}

/// What the kernel knows of the process whose I/O it tags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Process<'a> {
    /// Its `comm` (a thread's name, at most 15 characters).
    pub comm: &'a str,
    pub pid: u32,
    pub uid: u32,
    pub gid: u32,
    /// The node's name (`uname -n`).
    pub nodename: &'a str,
    /// The value of the variable `jobid_var` names in its environment, or its session's id,
    /// when it has one.
    pub environment: Option<&'a str>,
}

/// The job id the client gives `process`'s I/O; `None` when it gives none.
pub fn job_id(setting: &Setting, process: &Process<'_>) -> Option<String> {
    let id = match setting.var.as_str() {
        "disable" => return None,
        "nodelocal" => interpret(&setting.name, process),
        "procname_uid" => interpret("%e.%u", process),
        _ => {
            if !valid_comm(process.comm) {
                return None;
            }
            match process.environment {
                Some(id) if !setting.name.contains("%j") => truncated(id),
                _ => interpret(&setting.name, process),
            }
        }
    };
    Some(id)
}

/// How a phase's task threads, all named `tag`, get a job id on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tagged {
    /// The environment variable the client reads the id from (its `jobid_var`), which the
    /// engine's process is started with, set to the tag.
    pub env: Option<String>,
    /// The id their I/O carries, or why there is none that is theirs alone.
    pub id: Result<String, String>,
}

/// The job id a client with `setting` gives the I/O of task threads named `tag`, run by `uid`,
/// `gid` on `nodename` in a process started with [`Tagged::env`] set to `tag`; refused when the
/// id would not be the phase's alone: the client gives none, gives every process of the node
/// the same (`nodelocal`, or a `jobid_name` without the tag in it), or gives each thread its
/// own (`%p`: the kernel's `current->pid` is the thread's).
pub fn tagged(setting: &Setting, tag: &str, uid: u32, gid: u32, nodename: &str) -> Tagged {
    let env = match setting.var.as_str() {
        "disable" | "procname_uid" | "nodelocal" | "session" => None,
        var => Some(var.to_owned()),
    };
    let id = |comm: &str, pid: u32| {
        let environment = env.as_ref().map(|_| comm);
        job_id(setting, &Process { comm, pid, uid, gid, nodename, environment })
    };
    let id = match (id(tag, 1), id(tag, 2), id("pvfs-other", 1)) {
        (None, ..) => {
            Err(format!("the Lustre client's jobid_var is {:?}: its I/O carries no job id", setting.var))
        }
        (Some(a), Some(b), _) if a != b => Err(format!(
            "the Lustre client's jobid_name {:?} gives each thread an id of its own (%p)",
            setting.name
        )),
        (Some(a), _, Some(other)) if a == other => Err(format!(
            "the Lustre client's jobid_var {:?} and jobid_name {:?} give every process of the node the id {a:?}: \
             the servers cannot tell this phase's I/O from the rest",
            setting.var, setting.name
        )),
        (Some(a), ..) if env.as_deref().is_some_and(|v| !env_name(v)) => Err(format!(
            "the Lustre client's jobid_var {:?} is no environment variable a process can be started with \
             (the id would be {a:?})",
            setting.var
        )),
        (Some(a), ..) => Ok(a),
    };
    Tagged { env, id }
}

/// A name a process's environment can hold as a variable: `[A-Za-z_][A-Za-z0-9_]*`.
fn env_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `jobid_name_is_valid`: not one of Lustre's own threads.
fn valid_comm(comm: &str) -> bool {
    !comm.is_empty() && !["ll_ping", "ptlrpc", "ldlm", "ll_sa"].iter().any(|r| comm.starts_with(r))
}

/// `jobid_interpret_string`: `format`'s escapes expanded for `process`, whitespace dropped, at
/// most [`MAX_LEN`] characters.
pub fn interpret(format: &str, process: &Process<'_>) -> String {
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c.is_ascii_whitespace() {
            continue;
        }
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('e') => out.push_str(process.comm),
            Some('g') => out.push_str(&process.gid.to_string()),
            Some('h') => out.push_str(process.nodename),
            Some('H') => out.push_str(process.nodename.split('.').next().unwrap_or_default()),
            Some('j') => out.push_str(process.environment.unwrap_or_default()),
            Some('p') => out.push_str(&process.pid.to_string()),
            Some('u') => out.push_str(&process.uid.to_string()),
            // `%` at the end, or an escape the kernel does not know: dropped.
            None => break,
            Some(_) => {}
        }
    }
    truncated(&out)
}

fn truncated(id: &str) -> String {
    id.chars().take(MAX_LEN).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process<'a>(comm: &'a str, environment: Option<&'a str>) -> Process<'a> {
        Process { comm, pid: 4242, uid: 1000, gid: 100, nodename: "c01.cluster.example", environment }
    }

    fn setting(var: &str, name: &str) -> Setting {
        Setting { var: var.into(), name: name.into() }
    }

    #[test]
    fn the_escapes_expand_as_the_kernel_expands_them() {
        let p = process("ior", Some("7781"));
        assert_eq!(interpret("%e.%u", &p), "ior.1000");
        assert_eq!(interpret("%e.%u.%g.%p", &p), "ior.1000.100.4242");
        assert_eq!(interpret("%H-%j", &p), "c01-7781");
        assert_eq!(interpret("%h", &p), "c01.cluster.example");
        // Unknown escapes and whitespace dropped, a trailing % too.
        assert_eq!(interpret("a %x b%", &p), "ab");
        // Only the format's own whitespace is dropped: an expansion is copied as it is (a
        // thread named `task 0` tags its I/O `task 0.1000`, which job_stats prints quoted).
        assert_eq!(interpret("%e.%u", &process("task 0", None)), "task 0.1000");
        // At most 31 characters.
        assert_eq!(interpret("%h%h", &p).len(), MAX_LEN);
    }

    #[test]
    fn jobid_var_says_where_the_id_comes_from() {
        let p = process("ior", Some("7781"));
        assert_eq!(job_id(&setting("disable", "%e.%u"), &p), None);
        assert_eq!(
            job_id(&setting("procname_uid", "%H"), &p).as_deref(),
            Some("ior.1000"),
            "jobid_name unused"
        );
        assert_eq!(job_id(&setting("nodelocal", "bench_%H"), &p).as_deref(), Some("bench_c01"));
        assert_eq!(job_id(&setting("SLURM_JOB_ID", "%e.%u"), &p).as_deref(), Some("7781"));
        assert_eq!(job_id(&setting("session", "%e.%u"), &p).as_deref(), Some("7781"));
        // No such variable in the environment: jobid_name is the fallback.
        assert_eq!(
            job_id(&setting("SLURM_JOB_ID", "%e.%u"), &process("ior", None)).as_deref(),
            Some("ior.1000")
        );
        // jobid_name holding %j: expanded, with the environment's id in it.
        assert_eq!(job_id(&setting("SLURM_JOB_ID", "%j.%H"), &p).as_deref(), Some("7781.c01"));
        // Lustre's own threads get none.
        assert_eq!(job_id(&setting("SLURM_JOB_ID", "%e"), &process("ptlrpcd_00", Some("1"))), None);
    }

    /// Each way a client can be set: the id the phase's tagged threads get, and the variable
    /// the engine is started with, or why no id is the phase's alone.
    #[test]
    fn a_phases_tagged_threads_get_an_id_of_their_own_or_why_not() {
        let of = |var: &str, name: &str| tagged(&setting(var, name), "pvabcdew0", 0, 0, "c01.example");
        assert_eq!(of("procname_uid", "%e.%u"), Tagged { env: None, id: Ok("pvabcdew0.0".into()) });
        assert_eq!(of("procname_uid", "%p"), Tagged { env: None, id: Ok("pvabcdew0.0".into()) }, "unused");
        assert_eq!(
            of("SLURM_JOB_ID", "%e.%u"),
            Tagged { env: Some("SLURM_JOB_ID".into()), id: Ok("pvabcdew0".into()) }
        );
        assert_eq!(of("SLURM_JOB_ID", "%j.%H").id.as_deref(), Ok("pvabcdew0.c01"));
        assert_eq!(of("session", "%e.%u").id.as_deref(), Ok("pvabcdew0.0"), "no session id: jobid_name");
        let why = |var: &str, name: &str| of(var, name).id.unwrap_err();
        assert!(why("disable", "%e.%u").contains("carries no job id"), "{}", why("disable", "%e.%u"));
        assert!(why("nodelocal", "bench_%H").contains("every process of the node the id \"bench_c01\""));
        assert!(why("session", "%H.%u").contains("every process of the node"));
        assert!(why("session", "%e.%p").contains("(%p)"));
        assert!(why("SLURM JOB", "%e").contains("no environment variable"));
    }

    /// A client's settings from the kernel's files (sysfs, as 2.9 and later hold them); the
    /// default jobid_name when the file is not there; no client, no settings.
    #[test]
    fn a_clients_settings_are_read_from_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        assert_eq!(Setting::read(&root), None);
        std::fs::create_dir_all(dir.path().join("sys/fs/lustre")).unwrap();
        std::fs::write(dir.path().join("sys/fs/lustre/jobid_var"), "procname_uid\n").unwrap();
        assert_eq!(Setting::read(&root), Some(setting("procname_uid", "%e.%u")));
        std::fs::write(dir.path().join("sys/fs/lustre/jobid_name"), "%e.%u.%H\n").unwrap();
        assert_eq!(Setting::read(&root), Some(setting("procname_uid", "%e.%u.%H")));
    }
}
