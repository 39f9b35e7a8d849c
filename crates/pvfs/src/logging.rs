//! Structured logs to stderr with `tracing`: text for people, JSON for log pipelines.
//!
//! Values in the agent's logs come from the wire (a unit's label, a refused value, a peer's
//! error): a newline in one was written raw and forged whole lines (`INFO pvfs-agent
//! stopped`). JSON escapes them already; the text format writes every field value and the
//! message through [`EscapingFields`], here, once, rather than trusting each call site.

use crate::cli::{LogArgs, LogFormat};
use anyhow::Context;
use std::fmt;
use std::io::IsTerminal;
use tracing_subscriber::field::{MakeVisitor, Visit, VisitFmt, VisitOutput};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::{DefaultVisitor, Writer};
use tracing_subscriber::prelude::*;

/// Installs the global subscriber. `default` is the level when `--log`/`PVFS_LOG` is unset.
pub(crate) fn init(args: &LogArgs, default: &str) -> anyhow::Result<()> {
    let spec = args.log.as_deref().unwrap_or(default);
    let filter: Targets = spec
        .parse()
        .with_context(|| format!("invalid --log {spec:?}: use a level (error, warn, info, debug, trace) or targets like pvfs_agent=debug,info"))?;
    let registry = tracing_subscriber::registry().with(filter);
    match args.log_format {
        LogFormat::Text => {
            registry.with(text_layer(std::io::stderr, std::io::stderr().is_terminal())).try_init()
        }
        LogFormat::Json => registry.with(json_layer(std::io::stderr)).try_init(),
    }
    .context("installing the log subscriber")
}

/// The text format: `TIME LEVEL message field=value …`, one event a line, whatever its values
/// hold.
fn text_layer<S, W>(writer: W, ansi: bool) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + 'static,
{
    tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(ansi)
        .with_target(false)
        .fmt_fields(EscapingFields)
}

/// The JSON format, an object a line (serde_json escapes control characters in strings).
fn json_layer<S, W>(writer: W) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + 'static,
{
    tracing_subscriber::fmt::layer().json().with_writer(writer).flatten_event(true)
}

/// tracing-subscriber's field formatter (0.3.23: it escapes ANSI escapes in messages, and
/// writes `str` fields with `{:?}`, but writes `%value` fields, `?value` fields whose `Debug`
/// is hand-written, errors and the message's own text as they are, newlines included), with
/// every control character in a value or the message written as an escape (`\n`, `\r`, `\t`,
/// `\u{1b}`, …), and the Unicode line separators and bidirectional overrides too, which some
/// viewers render as a line break or reorder.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EscapingFields;

impl<'a> MakeVisitor<Writer<'a>> for EscapingFields {
    type Visitor = Escaping<'a>;

    fn make_visitor(&self, target: Writer<'a>) -> Escaping<'a> {
        Escaping(DefaultVisitor::new(target, true))
    }
}

/// [`EscapingFields`]' visitor: tracing-subscriber's own, handed escaped values.
pub(crate) struct Escaping<'a>(DefaultVisitor<'a>);

impl Visit for Escaping<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.0.record_debug(field, &Escaped(&format_args!("{value}")));
        } else {
            // `{:?}` of a `str`: quoted, with its control characters already escaped.
            self.record_debug(field, &value);
        }
    }

    fn record_error(&mut self, field: &tracing::field::Field, value: &(dyn std::error::Error + 'static)) {
        self.0.record_debug(field, &Escaped(&format_args!("{}", Chain(value))));
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        self.0.record_debug(field, &Escaped(value));
    }
}

impl VisitOutput<fmt::Result> for Escaping<'_> {
    fn finish(self) -> fmt::Result {
        self.0.finish()
    }
}

impl VisitFmt for Escaping<'_> {
    fn writer(&mut self) -> &mut dyn fmt::Write {
        self.0.writer()
    }
}

/// An error and its causes, `error: cause: cause`, each said once.
struct Chain<'a>(&'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(err) = cause {
            let said = err.to_string();
            if !text.ends_with(&said) {
                text.push_str(": ");
                text.push_str(&said);
            }
            cause = err.source();
        }
        f.write_str(&text)
    }
}

/// Formats its value's `Debug` with every character that could end or rewrite a log line
/// escaped.
struct Escaped<'a>(&'a dyn fmt::Debug);

impl fmt::Debug for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        write!(EscapingWriter(f), "{:?}", self.0)
    }
}

/// Writes through to a formatter, escaping as it goes (a piece is copied only when it has
/// something to escape).
struct EscapingWriter<'a, 'b>(&'a mut fmt::Formatter<'b>);

impl fmt::Write for EscapingWriter<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.write_str(&crate::output::escaped(s, &[]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Everything written, for the assertions.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'w> MakeWriter<'w> for Captured {
        type Writer = Captured;

        fn make_writer(&'w self) -> Captured {
            self.clone()
        }
    }

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("refused {0}")]
    struct Refused(String);

    /// What a hostile coordinator sent (issue 24, item 10), in every way a value reaches a log.
    fn log_hostile_values() {
        let forged = "x\nINFO pvfs-agent stopped\r\n\u{1b}[2K\u{2028}INFO converged unit=FORGED2 ok=1";
        let span = tracing::info_span!("apply", label = %forged);
        let _entered = span.enter();
        tracing::warn!(unit = %forged, value = ?forged, debug = ?Refused(forged.into()), "refused {forged}");
        tracing::info!(unit = forged, "converging");
        let err = Refused(forged.into());
        tracing::warn!(error = &err as &(dyn std::error::Error + 'static), "step failed");
    }

    #[test]
    fn text_logs_keep_one_event_a_line_whatever_a_value_holds() {
        let out = Captured::default();
        let subscriber = tracing_subscriber::registry().with(text_layer(out.clone(), false));
        tracing::subscriber::with_default(subscriber, log_hostile_values);
        let text = out.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        for line in &lines {
            // `2026-05-01T12:00:00.123456Z  WARN apply{label=…}: …`
            let (time, rest) = line.split_once(' ').unwrap();
            assert!(time.ends_with('Z') && time.as_bytes()[4] == b'-', "{line}");
            let level = rest.trim_start().split(' ').next().unwrap();
            assert!(["INFO", "WARN"].contains(&level), "{line}");
            assert!(
                !line.contains('\u{1b}') && !line.contains('\r') && !line.contains('\u{2028}'),
                "{line:?}"
            );
        }
        // The value as every line shows it: escaped, on one line.
        let shown = r"x\nINFO pvfs-agent stopped\r\n\u{1b}[2K\u{2028}INFO converged unit=FORGED2 ok=1";
        let want = format!("refused {shown} unit={shown} value=\"{shown}\" debug=Refused(\"{shown}\")");
        assert!(lines[0].ends_with(&want), "{}\n{want}", lines[0]);
        assert!(lines[0].contains(r"apply{label=x\nINFO pvfs-agent stopped"), "{}", lines[0]);
        assert!(lines[2].contains(r"step failed error=refused x\nINFO pvfs-agent stopped"), "{}", lines[2]);
    }

    #[test]
    fn json_logs_keep_one_object_a_line() {
        let out = Captured::default();
        let subscriber = tracing_subscriber::registry().with(json_layer(out.clone()));
        tracing::subscriber::with_default(subscriber, log_hostile_values);
        let text = out.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        for line in lines {
            let event: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(event["level"].is_string(), "{line}");
        }
    }

    #[test]
    fn only_what_could_rewrite_a_line_is_escaped() {
        let shown = format!("{:?}", Escaped(&format_args!("naïve\tlabel\u{7f}\u{85}\u{202e}ok")));
        assert_eq!(shown, r"naïve\tlabel\u{7f}\u{85}\u{202e}ok");
    }
}
