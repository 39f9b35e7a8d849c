//! The CLI's output layer: the only place that writes to stdout and stderr directly.
//!
//! A closed stdout (`pvfsctl nodes | head -1`) is not an error: writes report it as a broken
//! pipe and `main` exits quietly.

#![allow(clippy::print_stderr)]

use std::io::Write;

/// Writes `text` to stdout.
pub(crate) fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes one line of JSON to stdout.
pub(crate) fn json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut line = serde_json::to_string(value)?;
    line.push('\n');
    Ok(print(&line)?)
}

/// A message for the operator (progress, warnings, per-item failures) on stderr.
pub(crate) fn note(text: &str) {
    eprintln!("{text}");
}

/// The final error of a command, with its chain of causes.
pub(crate) fn error(err: &anyhow::Error) {
    eprintln!("error: {}", chain(err));
}

/// `err: cause: cause's cause`, as `{:#}` prints it, but leaving out a cause that the message
/// before it already says: many errors name their cause in their own message and also chain it
/// as their `source()` (`cannot read cluster file x: No such file or directory`), some with a
/// hint after it (`cannot read tls/ca.crt: No such file … (create the CA with …)`), which `{:#}`
/// would print twice.
fn chain(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

pub(crate) fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .any(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}

/// "23.4 GiB", "512 MiB": sizes as an operator reads them.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value >= 100.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cause_the_message_already_names_is_printed_once() {
        /// As library errors are: the cause in the message and as `source()`.
        #[derive(Debug)]
        struct Read {
            source: std::io::Error,
        }
        impl std::fmt::Display for Read {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "cannot read x.toml: {}", self.source)
            }
        }
        impl std::error::Error for Read {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.source)
            }
        }
        let io = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let err = anyhow::Error::from(Read { source: io() }).context("loading the cluster");
        assert_eq!(super::chain(&err), format!("loading the cluster: cannot read x.toml: {}", io()));
        let err = anyhow::Error::from(io()).context("copying x");
        assert_eq!(super::chain(&err), format!("copying x: {}", io()));
        // pvfs-tls's: the cause, then a hint after it.
        let err = anyhow::Error::from(pvfs_tls::TlsError::Read { path: "tls/ca.crt".into(), source: io() });
        let text = super::chain(&err);
        assert_eq!(text.matches(&io().to_string()).count(), 1, "{text}");
        assert!(text.ends_with("`pvfsctl ca issue NAME --dir DIR`)"), "{text}");
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(super::bytes(512), "512 B");
        assert_eq!(super::bytes(24_598_836 * 1024), "23.5 GiB");
        assert_eq!(super::bytes(1 << 40), "1.0 TiB");
        assert_eq!(super::bytes(300 << 30), "300 GiB");
    }
}
