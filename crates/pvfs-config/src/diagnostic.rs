//! Errors in a cluster file, each with the position it refers to.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// One problem in a cluster file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic at byte offset `span.start` of `source`.
    pub(crate) fn at(source: &str, span: Range<usize>, message: impl Into<String>) -> Diagnostic {
        let (line, column) = line_column(source, span.start);
        Diagnostic { line, column, message: message.into() }
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// A cluster file that could not be loaded, with every problem found in it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read cluster file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}", Invalid { path, diagnostics })]
    Invalid { path: PathBuf, diagnostics: Vec<Diagnostic> },
}

/// Renders `file:line:col: message`, one per line, as compilers do, so editors can jump to them.
struct Invalid<'a> {
    path: &'a PathBuf,
    diagnostics: &'a [Diagnostic],
}

impl fmt::Display for Invalid<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}:{}:{}: {}", self.path.display(), d.line, d.column, d.message)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_and_count_characters() {
        let src = "a = 1\nbé = \"x\"\n";
        assert_eq!(line_column(src, 0), (1, 1));
        assert_eq!(line_column(src, 6), (2, 1));
        // "é" is two bytes but one column.
        assert_eq!(line_column(src, src.rfind('=').unwrap()), (2, 4));
    }
}
