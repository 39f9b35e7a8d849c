//! The field names a serde struct accepts, asked of the struct itself.
//!
//! serde's `deny_unknown_fields` stops at the first unknown key. To report every unknown key
//! (with a "did you mean"), the loader checks keys itself before deserializing, against the
//! names the derived `Deserialize` passes to `deserialize_struct` (the same trick as
//! `serde_aux::serde_introspect`; written here because it is 30 lines and keeps a dependency
//! out). Taking the names from the struct means the schema is written once.

use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::fmt;

/// The keys `T` accepts. `T` must be a plain (non-flattened) struct.
pub(crate) fn of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(FieldNames { fields: &mut fields });
    fields
}

struct FieldNames<'a> {
    fields: &'a mut &'static [&'static str],
}

#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field names collected")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Stop
    }
}

impl<'de> Deserializer<'de> for FieldNames<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Stop> {
        *self.fields = fields;
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Example {
        name: String,
        #[serde(rename = "address")]
        addr: String,
    }

    #[test]
    fn names_come_from_the_derive() {
        assert_eq!(super::of::<Example>(), ["name", "address"]);
    }
}
