//! Parsers (being written).
