//! How a cluster-wide run ended, node by node: the one vocabulary that `converge` (`pvfsctl
//! up`, `down`) and `pvfs-bootstrap` report in, so that their recaps count the same things
//! under the same names.

use std::time::Duration;

/// One node's counts of what a run found (with `--plan`) or did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Already as it should be (`up`: steps in sync and gates that hold; bootstrap: files and
    /// the service that needed nothing).
    pub ok: usize,
    /// Changed, or with `--plan` would change.
    pub changed: usize,
    pub failed: usize,
    /// Not run, because something before them failed (`up`'s steps and units).
    pub skipped: usize,
    /// `--plan` only: gates not holding yet, steps that depend on earlier changes (`up`).
    pub pending: usize,
}

/// How a run ended: counts per node (in cluster-file order), the failures — `F` is what a
/// failure carries: a line naming node, unit and step for `up`, the command, its stderr and
/// the journal for bootstrap — and how long it took.
#[derive(Debug, Clone)]
pub struct Recap<F> {
    pub nodes: Vec<(String, Counts)>,
    pub failures: Vec<F>,
    pub elapsed: Duration,
}

// By hand: a derived `Default` would ask `F: Default`, which no failure type needs to be.
impl<F> Default for Recap<F> {
    fn default() -> Recap<F> {
        Recap { nodes: Vec::new(), failures: Vec::new(), elapsed: Duration::ZERO }
    }
}

impl<F> Recap<F> {
    pub fn failed(&self) -> bool {
        !self.failures.is_empty()
    }

    /// Everything changed on every node (with `--plan`: everything that would change).
    pub fn changed(&self) -> usize {
        self.nodes.iter().map(|(_, c)| c.changed).sum()
    }
}
