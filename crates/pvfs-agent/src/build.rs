//! The agent's build identity: the SHA-256 of its own executable as it runs, which `Info`
//! reports so that whoever installed a binary (`pvfsctl bootstrap`) can tell that the agent
//! answering is that binary and not another left running — a version number cannot tell two
//! builds of one version apart, and the file on disk may have been replaced since the process
//! started.
//!
//! `/proc/self/exe` opens the image the process was started from even after its file was
//! deleted or renamed over, so the hash is always the running build's.

use std::io::Read;
use std::path::Path;

/// Where Linux keeps the running executable.
const SELF_EXE: &str = "/proc/self/exe";

/// Which build runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Build {
    /// SHA-256 in lowercase hex; empty when it could not be read.
    pub sha256: String,
    /// The executable's path as the kernel gives it (` (deleted)` at the end when replaced).
    pub executable: String,
}

impl Build {
    /// This process's build; a part that cannot be read is left empty (and logged), since
    /// `Info` must answer regardless.
    pub fn read() -> Build {
        let executable = match std::fs::read_link(SELF_EXE) {
            Ok(path) => path.to_string_lossy().into_owned(),
            Err(err) => {
                tracing::warn!(error = %err, path = SELF_EXE, "cannot read the agent's executable path");
                String::new()
            }
        };
        let sha256 = match sha256_file(Path::new(SELF_EXE)) {
            Ok(sum) => sum,
            Err(err) => {
                tracing::warn!(error = %err, path = SELF_EXE, "cannot hash the agent's executable");
                String::new()
            }
        };
        Build { sha256, executable }
    }
}

/// The SHA-256 of the file at `path`, streamed.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        context.update(&buf[..n]);
    }
    Ok(context.finish().as_ref().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running test binary's own hash, against one computed from its path by another tool
    /// (coreutils' sha256sum): the same bytes, read through /proc/self/exe.
    #[test]
    fn the_build_is_the_running_executables_sha256() {
        let build = Build::read();
        let exe = std::env::current_exe().unwrap();
        assert_eq!(build.executable, exe.to_string_lossy());
        let out = std::process::Command::new("sha256sum").arg(&exe).output().unwrap();
        let sum = String::from_utf8_lossy(&out.stdout);
        assert_eq!(build.sha256, sum.split_whitespace().next().unwrap());
    }

    #[test]
    fn an_empty_file_has_the_known_digest() {
        let dir = std::env::temp_dir().join(format!("pvfs-build-test-{}", std::process::id()));
        std::fs::write(&dir, b"").unwrap();
        let sum = sha256_file(&dir).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(sum, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
