//! Typed columns: each rates struct's columns as an enum whose variants know their exact
//! iostat/sar name, and the struct's JSON form keyed by those names.
//!
//! [`columns!`] writes, from one list of `Variant => field = "name"` in the tool's order: the
//! enum (`ALL`, `name`, `from_name`), the struct's `get`, and its `Serialize`/`Deserialize`.
//! The names live only in that list, so a reader asks `disk.get(DiskColumn::Util)` (or reads
//! the field) and never spells `"%util"`.
//!
//! The JSON form is the one every metrics line has always had, written once, straight from the
//! struct (no `serde_json::Value` in between):
//! - keys in byte order of their names (the order of `serde_json::Value`'s sorted maps, through
//!   which the lines were once written), not the tool's order;
//! - each value in its field's type: a count (`kbmemfree`, `runq-sz`) an integer, a rate a
//!   float; a float JSON cannot hold (NaN, ±inf) is written `null` (serde_json's rule) and
//!   read back as NaN.
//!
//! Reading is lenient, so a line from another version still reads: a column the line lacks
//! keeps the struct's default, 0 (which is what the report always took a missing column for),
//! and a column this version does not know is skipped. Such a line is therefore not written
//! back as it was; every line pvfs has written (all versions had every column) is.

use serde::de::{self, Deserialize, Deserializer};

/// A column enum, for the key reader below. Implemented by [`columns!`].
pub(crate) trait Column: Copy {
    fn from_name(name: &str) -> Option<Self>;
}

/// A map key read as one of `C`'s columns: `None` for a name `C` does not have.
pub(crate) struct Key<C>(pub Option<C>);

impl<'de, C: Column> Deserialize<'de> for Key<C> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor<C>(std::marker::PhantomData<C>);
        impl<C: Column> de::Visitor<'_> for Visitor<C> {
            type Value = Key<C>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a column name")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Key<C>, E> {
                Ok(Key(C::from_name(name)))
            }
        }
        deserializer.deserialize_str(Visitor(std::marker::PhantomData))
    }
}

/// A column's value type: how it reads as a number and from JSON.
pub(crate) trait Value: Copy {
    fn as_f64(self) -> f64;
    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
}

impl Value for f64 {
    fn as_f64(self) -> f64 {
        self
    }

    /// `null` is how serde_json writes NaN and infinities: it reads back as NaN.
    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
    }
}

impl Value for u64 {
    fn as_f64(self) -> f64 {
        self as f64
    }

    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        u64::deserialize(deserializer)
    }
}

impl Value for u32 {
    fn as_f64(self) -> f64 {
        f64::from(self)
    }

    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
        u32::deserialize(deserializer)
    }
}

/// One value read as its [`Value`] type reads it (a float's `null` as NaN).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Cell<T>(pub T);

impl<'de, T: Value> Deserialize<'de> for Cell<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::read(deserializer).map(Cell)
    }
}

/// Whether `a` comes before `b` in byte order, as `str`'s `Ord` compares them (which is not
/// `const`): the order of a JSON object's keys.
pub(crate) const fn name_before(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

/// The column enum of a rates struct and the struct's `get`, `Serialize` and `Deserialize`,
/// from its columns in the tool's order (see the module's doc). Every field of the struct must
/// be listed: the struct is destructured field by field, so one left out does not compile.
macro_rules! columns {
    (
        $(#[$meta:meta])*
        $group:ident => $column:ident ($tool:literal) {
            $($variant:ident => $field:ident = $name:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $column {
            $($variant,)+
        }

        impl $column {
            /// How many columns there are.
            pub const COUNT: usize = [$($name),+].len();

            /// Every column, in the order the tool prints them.
            pub const ALL: [$column; $column::COUNT] = [$($column::$variant),+];

            /// Every column in byte order of its name: the order of the keys in JSON.
            const BY_NAME: [$column; $column::COUNT] = {
                // An insertion sort, at compile time.
                let mut columns = $column::ALL;
                let mut i = 1;
                while i < columns.len() {
                    let mut j = i;
                    while j > 0 && $crate::rates::columns::name_before(columns[j].name(), columns[j - 1].name()) {
                        columns.swap(j, j - 1);
                        j -= 1;
                    }
                    i += 1;
                }
                columns
            };

            /// The column's name as the tool prints it, and as every JSON key spells it.
            pub const fn name(self) -> &'static str {
                match self {
                    $($column::$variant => $name,)+
                }
            }

            /// The column the tool calls `name`.
            pub fn from_name(name: &str) -> Option<$column> {
                match name {
                    $($name => Some($column::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $column {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl $crate::rates::columns::Column for $column {
            fn from_name(name: &str) -> Option<$column> {
                $column::from_name(name)
            }
        }

        impl $group {
            /// A column's value, as a float (counts included).
            pub fn get(&self, column: $column) -> f64 {
                match column {
                    $($column::$variant => $crate::rates::columns::Value::as_f64(self.$field),)+
                }
            }
        }

        // Every field is a column: a field missing from the list above fails here.
        const _: fn(&$group) = |group| {
            let $group { $($field: _),+ } = group;
        };

        impl serde::Serialize for $group {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(Some($column::COUNT))?;
                for column in $column::BY_NAME {
                    match column {
                        $($column::$variant => map.serialize_entry($name, &self.$field)?,)+
                    }
                }
                map.end()
            }
        }

        impl<'de> serde::Deserialize<'de> for $group {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl<'de> serde::de::Visitor<'de> for Visitor {
                    type Value = $group;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!($tool, " columns by name"))
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$group, A::Error> {
                        use $crate::rates::columns::{Cell, Key};
                        let mut group = $group::default();
                        while let Some(Key(column)) = map.next_key::<Key<$column>>()? {
                            match column {
                                $(Some($column::$variant) => group.$field = map.next_value::<Cell<_>>()?.0,)+
                                None => {
                                    map.next_value::<serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        Ok(group)
                    }
                }
                deserializer.deserialize_map(Visitor)
            }
        }
    };
}
pub(crate) use columns;
