//! `pvfsctl serve`'s history: every node's seconds, as the agents stream them, consolidated
//! into points of 10 s (kept 7 days), 1 min (90 days) and 10 min (2 years), each holding the
//! average, minimum and maximum of every series over its seconds, in one embedded store on
//! local disk that survives restarts and crashes. The agents' own rings stay the 1 s tier for
//! their last hour.
//!
//! - [`tier`]: the tiers and where a second falls in them.
//! - [`series`]: a second's values, one per column of each group and device.
//! - [`consolidate`]: seconds into points.
//! - [`codec`]: points as stored rows (a point as closed; a compressed chunk of them).
//! - [`store`]: the store — one [`Writer`] that commits closed points, [`Reader`]s beside it.
//!
//! This crate knows neither the wire nor HTTP: `pvfs-serve` feeds it rates and serves what it
//! reads.

pub mod codec;
pub mod consolidate;
pub mod series;
pub mod store;
pub mod tier;

pub use consolidate::{Point, Stat};
pub use series::{Group, SeriesKey};
pub use store::{Committed, HistoryError, Range, Reader, TierBytes, Writer, open};
pub use tier::{TIERS, Tier};
