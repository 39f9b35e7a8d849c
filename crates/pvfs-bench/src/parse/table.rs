//! Tables read by their header line: a row's cells are found by column name, never by position,
//! because every IOR version adds, drops or moves columns.

use super::ParseError;

/// A table's header as the tool printed it.
#[derive(Debug, Clone)]
pub(super) struct Header {
    /// Which table, for error messages ("IOR Results", "IOR summary", …).
    pub table: &'static str,
    pub names: Vec<String>,
    /// 1-based line of the header.
    pub line: usize,
}

impl Header {
    pub fn new(table: &'static str, names: Vec<String>, line: usize) -> Header {
        Header { table, names, line }
    }

    fn position(&self, names: &[&str]) -> Option<usize> {
        names.iter().find_map(|name| self.names.iter().position(|n| n == name))
    }

    /// Binds `cells` (one per column) to this header, or says how wide the row was.
    pub fn row<'h, 'c>(&'h self, cells: Vec<&'c str>, line: usize) -> Result<Row<'h, 'c>, ParseError> {
        if cells.len() != self.names.len() {
            return Err(ParseError::RowWidth {
                table: self.table,
                line,
                header_line: self.line,
                found: cells.len(),
                expected: self.names.len(),
            });
        }
        Ok(Row { header: self, cells, line })
    }
}

/// One row of a table, its cells looked up by column name. Each lookup takes the names a
/// column has had across versions, and answers `None` when the header has none of them.
pub(super) struct Row<'h, 'c> {
    header: &'h Header,
    cells: Vec<&'c str>,
    line: usize,
}

impl<'c> Row<'_, 'c> {
    pub fn text(&self, names: &[&str]) -> Option<&'c str> {
        self.header.position(names).map(|i| self.cells[i])
    }

    /// A number; IOR and mdtest print `NA`, `-` (or nothing, in CSV) where there is none.
    pub fn f64(&self, names: &[&str]) -> Result<Option<f64>, ParseError> {
        let Some((column, cell)) = self.cell(names) else { return Ok(None) };
        number(cell).map_err(|()| self.bad(column, cell, "a number or NA"))
    }

    pub fn u64(&self, names: &[&str]) -> Result<Option<u64>, ParseError> {
        let Some((column, cell)) = self.cell(names) else { return Ok(None) };
        whole(cell).map_err(|()| self.bad(column, cell, "a whole number or NA"))
    }

    /// IOR's 0/1 flags (`fPP`).
    pub fn flag(&self, names: &[&str]) -> Result<Option<bool>, ParseError> {
        Ok(self.u64(names)?.map(|n| n != 0))
    }

    /// The number in column `index`.
    pub fn f64_at(&self, index: usize) -> Result<Option<f64>, ParseError> {
        let (column, cell) = (self.header.names[index].as_str(), self.cells[index]);
        number(cell).map_err(|()| self.bad(column, cell, "a number or NA"))
    }

    fn cell(&self, names: &[&str]) -> Option<(&str, &'c str)> {
        let i = self.header.position(names)?;
        Some((self.header.names[i].as_str(), self.cells[i]))
    }

    fn bad(&self, column: &str, cell: &str, expected: &'static str) -> ParseError {
        ParseError::Value {
            table: self.header.table,
            line: self.line,
            column: column.to_owned(),
            value: cell.to_owned(),
            expected,
        }
    }
}

/// Whether a cell stands for "no value": IOR prints `NA` (Stonewall columns), `-` (the remove
/// row) and, for failed statistics, `nan` or `-nan`; CSV leaves the field empty.
pub(super) fn is_absent(cell: &str) -> bool {
    matches!(cell.trim(), "" | "NA" | "-" | "nan" | "-nan" | "NaN" | "-NaN")
}

/// A number cell: `Ok(None)` when absent, `Err` when it is something else.
pub(super) fn number(cell: &str) -> Result<Option<f64>, ()> {
    if is_absent(cell) {
        return Ok(None);
    }
    match cell.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(Some(v)),
        // `inf` is what C prints for a rate over a zero time: no value either.
        Ok(v) if v.is_infinite() => Ok(None),
        _ => Err(()),
    }
}

/// A whole-number cell (`67108864`, or `2.0` from a tool that printed it with `%f`).
pub(super) fn whole(cell: &str) -> Result<Option<u64>, ()> {
    if let Ok(n) = cell.trim().parse::<u64>() {
        return Ok(Some(n));
    }
    match number(cell)? {
        None => Ok(None),
        Some(v) if v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64 => Ok(Some(v as u64)),
        Some(_) => Err(()),
    }
}
