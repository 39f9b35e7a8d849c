//! The rules that need the node itself: who owns a file and its directory, symbolic links on
//! a path, and what a device name resolves to for the site's device globs.

use crate::PolicyError;
use pvfs_host::Root;

/// `file-owner`: `path` and the directory it is in, where they exist, belong to the user the
/// agent runs as (root in production). Replacing another user's file takes their data; writing
/// into their directory leaves root's file where they expect theirs, in a place they control.
pub(crate) fn agents_own(root: &Root, path: &str) -> Result<(), PolicyError> {
    use std::os::unix::fs::MetadataExt;
    let agent = nix::unistd::geteuid().as_raw();
    let parent = path.rsplit_once('/').map_or("/", |(p, _)| if p.is_empty() { "/" } else { p });
    for (what, at) in [("file", path), ("directory", parent)] {
        match std::fs::symlink_metadata(root.path(at)) {
            Ok(meta) if meta.uid() != agent => {
                return Err(PolicyError::new(
                    "file-owner",
                    path,
                    format!(
                        "the {what} {at} belongs to uid {}, not to the agent's user (uid {agent}); pvfs never writes \
                         another user's files or into their directories",
                        meta.uid()
                    ),
                    "write the file under a directory pvfs made (the cluster's mount points and targets)",
                ));
            }
            Ok(_) => {}
            Err(err)
                if matches!(err.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            }
            Err(err) => {
                return Err(PolicyError::new(
                    "file-owner",
                    path,
                    format!("cannot check who owns {at}: {err}"),
                    "check the path's permissions",
                ));
            }
        }
    }
    Ok(())
}

/// No existing component of `path` (under `root`) is a symbolic link.
pub(crate) fn no_symlink(root: &Root, path: &str) -> Result<(), PolicyError> {
    let mut prefix = String::new();
    for component in path.trim_start_matches('/').split('/').filter(|c| !c.is_empty()) {
        prefix.push('/');
        prefix.push_str(component);
        match std::fs::symlink_metadata(root.path(&prefix)) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(root.path(&prefix))
                    .map(|t| t.display().to_string())
                    .unwrap_or_default();
                return Err(PolicyError::new(
                    "symlink",
                    path,
                    format!("{prefix} is a symbolic link (to {target}), so {path} may not be where it says"),
                    "use the real path, or remove the link",
                ));
            }
            Ok(_) => {}
            // What does not exist yet cannot be a link; the step creates it. A file where a
            // directory should be is no link either: the step itself reports that.
            Err(err)
                if matches!(err.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) =>
            {
                return Ok(());
            }
            Err(err) => {
                return Err(PolicyError::new(
                    "symlink",
                    path,
                    format!("cannot check {prefix} for symbolic links: {err}"),
                    "check the path's permissions",
                ));
            }
        }
    }
    Ok(())
}

/// The real path behind a device name under `root`; unresolvable paths come back unchanged.
pub(crate) fn resolve(root: &Root, path: &str) -> String {
    match std::fs::canonicalize(root.path(path)) {
        Ok(real) => match real.strip_prefix(root.base()) {
            Ok(rel) => format!("/{}", rel.display()),
            Err(_) => real.display().to_string(),
        },
        Err(_) => path.to_owned(),
    }
}

/// Shell-style glob: `*` any run of characters but `/`, `?` one character but `/`.
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // Classic backtracking over the last `*`.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == t[ti] || (p[pi] == '?' && t[ti] != '/')) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star
            && t[st] != '/'
        {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}
