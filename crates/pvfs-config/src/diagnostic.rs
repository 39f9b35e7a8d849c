//! Errors in a cluster file, each with the position it refers to.

use std::cell::Cell;
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
    pub(crate) fn at(source: &Source<'_>, span: Range<usize>, message: impl Into<String>) -> Diagnostic {
        let (line, column) = source.line_column(span.start);
        Diagnostic { line, column, message: message.into() }
    }
}

/// The text of a cluster file with the byte offset of each line's start, found in one pass
/// when the file is read. Every position is looked up here by binary search, so a file with
/// an error on each of its 50,000 nodes costs 50,000 lookups of `log n`, never a rescan of
/// the text before each error (which made `validate` quadratic).
pub(crate) struct Source<'a> {
    pub(crate) text: &'a str,
    /// Byte offset of the start of each line; the first is 0.
    line_starts: Vec<usize>,
    /// Whether each line is ASCII, so that its columns are byte offsets.
    ascii: Vec<bool>,
    /// Bytes read to answer positions after the index was built (columns on non-ASCII
    /// lines), so a test can check that answering costs no more than the errors' own lines.
    scanned: Cell<usize>,
}

impl<'a> Source<'a> {
    pub(crate) fn new(text: &'a str) -> Source<'a> {
        let mut line_starts = vec![0];
        let mut ascii = Vec::new();
        let mut line_ascii = true;
        for (i, byte) in text.bytes().enumerate() {
            line_ascii &= byte.is_ascii();
            if byte == b'\n' {
                line_starts.push(i + 1);
                ascii.push(line_ascii);
                line_ascii = true;
            }
        }
        ascii.push(line_ascii);
        Source { text, line_starts, ascii, scanned: Cell::new(0) }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub(crate) fn line_column(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        // The last line starting at or before `offset`.
        let index = self.line_starts.partition_point(|&start| start <= offset) - 1;
        let start = self.line_starts[index];
        let column = if self.ascii[index] {
            offset - start
        } else {
            // A non-ASCII line counts characters up to the offset (never past the line).
            self.scanned.set(self.scanned.get() + (offset - start));
            self.text.get(start..offset).map_or(offset - start, |s| s.chars().count())
        };
        (index + 1, column + 1)
    }

    /// 1-based line of a byte offset.
    pub(crate) fn line(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&start| start <= offset.min(self.text.len()))
    }

    /// Bytes read to answer positions since the index was built (see `scanned`).
    #[cfg(test)]
    pub(crate) fn scanned(&self) -> usize {
        self.scanned.get()
    }
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
    /// Not a regular file, or larger than [`crate::CLUSTER_FILE`] allows: refused unread.
    #[error(transparent)]
    File(pvfs_host::local_file::LocalFileError),
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
        let src = Source::new("a = 1\nbé = \"x\"\n");
        assert_eq!(src.line_column(0), (1, 1));
        assert_eq!(src.line_column(6), (2, 1));
        // "é" is two bytes but one column.
        assert_eq!(src.line_column(src.text.rfind('=').unwrap()), (2, 4));
        // The newline belongs to its line; the end of the text is on the last (empty) line.
        assert_eq!(src.line_column(5), (1, 6));
        assert_eq!(src.line_column(src.text.len()), (3, 1));
        assert_eq!(src.line_column(usize::MAX), (3, 1));
        assert_eq!(src.line(7), 2);
    }

    #[test]
    fn ascii_lines_are_never_rescanned() {
        let text = "k = 1\n".repeat(10_000);
        let src = Source::new(&text);
        for offset in (0..text.len()).step_by(7) {
            src.line_column(offset);
        }
        assert_eq!(src.scanned(), 0);
        let text = "é = 1\n".repeat(1_000);
        let src = Source::new(&text);
        for line in 0..1_000 {
            assert_eq!(src.line_column(line * 7 + 3), (line + 1, 3));
        }
        // Each lookup reads its own line's prefix, not the text before it.
        assert_eq!(src.scanned(), 1_000 * 3);
    }
}
