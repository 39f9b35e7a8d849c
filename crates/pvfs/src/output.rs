//! The CLI's output layer: the only place that writes to stdout and stderr directly.
//!
//! A closed stdout (`pvfsctl nodes | head -1`) is not an error: writes report it as a broken
//! pipe and `main` exits quietly.
//!
//! Text for a person goes through [`printable`] on its way out: much of it is what agents
//! sent (their errors, their nodes' process names, Lustre target and client names, brick
//! paths), and a process's name is anyone's on that node to choose. A terminal takes ESC's
//! sequences as commands (retitle the window, move the cursor, rewrite what was shown), so
//! none reaches it unescaped; names in table rows also go through [`name`], so that a
//! newline in one cannot make a row of its own. JSON is written as serde_json writes it
//! (control characters escaped), for the scripts that read it.

#![allow(clippy::print_stderr)]

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write;

/// Writes `text` to stdout, [`printable`].
pub(crate) fn print(text: &str) -> std::io::Result<()> {
    write_out(&printable(text))
}

fn write_out(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes one line of JSON to stdout.
pub(crate) fn json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut line = serde_json::to_string(value)?;
    line.push('\n');
    Ok(write_out(&line)?)
}

/// A message for the operator (progress, warnings, per-item failures) on stderr, [`printable`].
pub(crate) fn note(text: &str) {
    eprintln!("{}", printable(text));
}

/// The final error of a command, with its chain of causes, [`printable`].
pub(crate) fn error(err: &anyhow::Error) {
    eprintln!("error: {}", printable(&chain(err)));
}

/// `text` as it may reach a terminal: every character that could move the cursor, rewrite or
/// reorder what is shown — the C0 and C1 controls but newline and tab, DEL, and so ESC and
/// every sequence it starts, the Unicode line separators, the bidirectional overrides — as an
/// escape (`\r`, `\u{1b}`), the way the log writes them.
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    escaped(text, &['\n', '\t'])
}

/// A name an agent sent, for a cell of a table: as [`printable`], newlines and tabs escaped
/// too.
pub(crate) fn name(text: &str) -> Cow<'_, str> {
    escaped(text, &[])
}

/// `text` with every character [`needs_escape`] names but those in `keep`
/// written as an escape; borrowed when there is none.
pub(crate) fn escaped<'a>(text: &'a str, keep: &[char]) -> Cow<'a, str> {
    let escape = |c: char| !keep.contains(&c) && needs_escape(c);
    if !text.contains(escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            c if !escape(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
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

/// C0 and C1 controls and DEL (`\n`, `\r`, ESC …), the Unicode line and paragraph separators,
/// and the bidirectional embeddings, overrides and isolates.
pub(crate) fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
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

    /// What a process on a node may call itself (prctl's PR_SET_NAME takes any bytes but NUL)
    /// reaches the terminal as text: an OSC that would retitle the window, a CSI that would
    /// clear the line, a carriage return, a bidirectional override; lines stay lines.
    #[test]
    fn what_a_terminal_would_obey_is_printed_as_escapes() {
        let sent = "ok\n\u{1b}]0;owned\u{7}\u{1b}[2K\rfake\u{202e}txt\tcol\u{9b}31m";
        let shown = super::printable(sent);
        assert_eq!(shown, "ok\n\\u{1b}]0;owned\\u{7}\\u{1b}[2K\\rfake\\u{202e}txt\tcol\\u{9b}31m");
        assert!(!shown.contains(|c: char| c.is_control() && c != '\n' && c != '\t'), "{shown}");
        // A name in a row: its newline and tab escaped too.
        assert_eq!(super::name("a\nb\tc"), "a\\nb\\tc");
        // Nothing to escape: the text itself, not a copy.
        assert!(matches!(super::printable("sda 12.5 µs ümlaut"), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(super::bytes(512), "512 B");
        assert_eq!(super::bytes(24_598_836 * 1024), "23.5 GiB");
        assert_eq!(super::bytes(1 << 40), "1.0 TiB");
        assert_eq!(super::bytes(300 << 30), "300 GiB");
    }
}
