//! Typed columns: each rates struct's columns as an enum whose variants know their exact
//! iostat/sar name.
//!
//! [`columns!`] writes, from one list of `Variant => field = "name"` in the tool's order, the
//! enum (`ALL`, `name`, `from_name`, [`Column`]) and the struct's `get` and [`Group`] (its
//! `value`, a count or a float as the field holds it). The names live only in that list, so a reader asks `disk.get(DiskColumn::Util)`
//! (or reads the field) and never spells `"%util"`; the JSON line
//! ([`crate::line::Columns`]) writes each column under its name.

/// One column of a group (iostat -x's, sar -n DEV's, …). Implemented by [`columns!`].
pub trait Column: Copy + Ord + 'static {
    /// Every column in byte order of its name: the order of the keys in JSON (once written
    /// through `serde_json::Value`, whose maps are sorted, and still written so).
    const BY_NAME: &'static [Self];

    /// The column's name as the tool prints it.
    fn name(self) -> &'static str;

    /// The column the tool calls `name`.
    fn from_name(name: &str) -> Option<Self>;
}

/// A rates struct: its columns and their values.
pub trait Group {
    type Column: Column;

    fn value(&self, column: Self::Column) -> Value;
}

/// A column's value in its own type: a count (kB of memory, tasks) or a rate, a size or a
/// percentage. JSON keeps the difference (`12` and `12.0`), so the line does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Count(u64),
    Real(f64),
}

impl Value {
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Count(n) => n as f64,
            Value::Real(x) => x,
        }
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Value {
        Value::Count(n)
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::Count(n.into())
    }
}

impl From<f64> for Value {
    fn from(x: f64) -> Value {
        Value::Real(x)
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

/// The column enum of a rates struct and the struct's `get`, `value` and [`Group`], from its
/// columns in the tool's order. Every field of the struct must be listed: the struct is
/// destructured field by field, so one left out does not compile.
macro_rules! columns {
    (
        $(#[$meta:meta])*
        $group:ident => $column:ident {
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

            /// [`ALL`](Self::ALL) in byte order of the names, sorted at compile time.
            const BY_NAME: [$column; $column::COUNT] = {
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

        impl $crate::rates::Column for $column {
            const BY_NAME: &'static [$column] = &$column::BY_NAME;

            fn name(self) -> &'static str {
                $column::name(self)
            }

            fn from_name(name: &str) -> Option<$column> {
                $column::from_name(name)
            }
        }

        impl $group {
            /// A column's value, as a float (counts included).
            pub fn get(&self, column: $column) -> f64 {
                $crate::rates::Group::value(self, column).as_f64()
            }
        }

        impl $crate::rates::Group for $group {
            type Column = $column;

            fn value(&self, column: $column) -> $crate::rates::Value {
                match column {
                    $($column::$variant => self.$field.into(),)+
                }
            }
        }

        // Every field is a column: a field missing from the list above fails here.
        const _: fn(&$group) = |group| {
            let $group { $($field: _),+ } = group;
        };
    };
}
pub(crate) use columns;
