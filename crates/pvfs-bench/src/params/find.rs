//! pfind's search, as io500's find phase gives it (VI4IO/pfind aaba722): files changed since
//! a time, of a size, whose name matches a pattern.

/// What a find looks for (serialised as results.json's `params` keep it).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct FindParams {
    /// `-newer FILE`: found only if changed (`st_ctime`, seconds since the epoch) no earlier
    /// than FILE was; 0: any time.
    #[serde(default)]
    pub changed_since: i64,
    /// `-size Nc`: found only at exactly this many bytes.
    #[serde(default)]
    pub size: Option<u64>,
    /// `-name`: "" for any name.
    #[serde(default)]
    pub name: String,
    /// `-newer FILE` as pfind takes it: a directory below the scanned one (a relative path of
    /// plain names) whose change time is the threshold, read by the find itself, so the
    /// threshold is the file system's clock as the files' are (io500 makes its timestamp file
    /// there for that). "": `changed_since` is the threshold.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub newer: String,
}

impl FindParams {
    /// `newer`, checked: relative, plain names only (the find stays below its directory).
    pub fn newer_path(&self) -> Result<Option<&std::path::Path>, String> {
        use std::path::{Component, Path};
        if self.newer.is_empty() {
            return Ok(None);
        }
        let path = Path::new(&self.newer);
        let plain = path.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain || self.newer.len() > 4096 || self.newer.contains('\0') {
            return Err(format!(
                "newer {:?}: a path below the scanned directory, of plain names (no /, .., .)",
                self.newer
            ));
        }
        Ok(Some(path))
    }

    /// The name pattern, checked (none: any name).
    pub fn name_pattern(&self) -> Result<Option<NamePattern>, PatternError> {
        if self.name.is_empty() { Ok(None) } else { NamePattern::parse(&self.name).map(Some) }
    }
}

/// pfind's `-name`: it turns the pattern into a regular expression (`*` as `.*`, `.` as a
/// literal dot) that may match anywhere in the name, so `*01*` finds names holding `01` and
/// `a*b` names holding an `a` with a `b` somewhere after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamePattern {
    /// The literal pieces between the stars, in order.
    pieces: Vec<Vec<u8>>,
}

/// A `-name` pattern pfind would read as more than stars and letters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "name pattern {0:?}: pfind reads [ ] ^ $ \\ as a regular expression's; pvfs's find takes * and literal characters"
)]
pub struct PatternError(pub String);

impl NamePattern {
    pub fn parse(pattern: &str) -> Result<NamePattern, PatternError> {
        if pattern.contains(['[', ']', '^', '$', '\\']) {
            return Err(PatternError(pattern.to_owned()));
        }
        // pfind erases quotes.
        let bare: String = pattern.chars().filter(|c| *c != '"').collect();
        let pieces = bare.split('*').filter(|p| !p.is_empty()).map(|p| p.as_bytes().to_vec()).collect();
        Ok(NamePattern { pieces })
    }

    pub fn matches(&self, name: &[u8]) -> bool {
        let mut rest = name;
        for piece in &self.pieces {
            match rest.windows(piece.len()).position(|w| w == piece.as_slice()) {
                Some(at) => rest = &rest[at + piece.len()..],
                None => return false,
            }
        }
        true
    }
}
