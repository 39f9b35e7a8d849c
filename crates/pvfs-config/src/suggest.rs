//! "Did you mean" for misspelt keys and values.

/// The known key nearest to a misspelt one, if it is near enough to be a typo.
pub(crate) fn closest(name: &str, known: &[&'static str]) -> Option<&'static str> {
    known
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 3))
        .min()
        .map(|(_, k)| k)
}

/// Levenshtein distance; keys are a few characters, so the quadratic table is nothing.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_misses_only() {
        let known = ["name", "address", "roles", "disks"];
        assert_eq!(closest("rolse", &known), Some("roles"));
        assert_eq!(closest("adress", &known), Some("address"));
        assert_eq!(closest("hostname", &known), None);
    }
}
