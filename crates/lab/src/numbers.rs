//! A live section's measured numbers as a typed struct.
//!
//! Each live section declares the numbers one run measures with
//! [`numbers!`](crate::numbers!): a struct of `f64` fields (units in the
//! names). The run hands the struct over; results.json keeps it as a map
//! from field name to value ([`Measured`]); the section's `evaluate` gets
//! the struct back ([`crate::section::ScenarioRun::numbers`]) and reads
//! fields, so a misspelt name is a compile error, not a missing key.

use std::collections::BTreeMap;

/// A run's numbers as results.json keeps them: field name to value.
pub type Measured = BTreeMap<String, f64>;

/// A struct of measured numbers, kept in a [`Measured`] map under its
/// field names, each after an optional prefix (for a struct nested in
/// another, such as one per flow).
pub trait Numbers: Sized {
    /// Writes every field into `into` under `prefix` + its name.
    fn write(&self, prefix: &str, into: &mut Measured);
    /// Reads every field from `from`; `Err` names the first key missing.
    fn read(prefix: &str, from: &Measured) -> Result<Self, String>;

    /// The numbers as a map.
    fn to_measured(&self) -> Measured {
        let mut m = Measured::new();
        self.write("", &mut m);
        m
    }
}

/// Declares a struct of `f64` numbers that implements [`Numbers`] with
/// its field names as keys.
#[macro_export]
macro_rules! numbers {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($(#[doc = $doc:literal])* $field:ident,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq)]
        $vis struct $name {
            $($(#[doc = $doc])* pub $field: f64,)*
        }

        impl $crate::numbers::Numbers for $name {
            fn write(&self, prefix: &str, into: &mut $crate::numbers::Measured) {
                $(into.insert(format!("{prefix}{}", stringify!($field)), self.$field);)*
            }

            fn read(prefix: &str, from: &$crate::numbers::Measured) -> Result<Self, String> {
                let get = |field: &str| {
                    let key = format!("{prefix}{field}");
                    from.get(&key).copied().ok_or(key)
                };
                Ok($name {
                    $($field: get(stringify!($field))?,)*
                })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::numbers! {
        /// Two numbers, for the tests.
        struct Pair {
            /// A time.
            first_ms,
            second_bytes,
        }
    }

    #[test]
    fn numbers_round_trip_through_the_map_under_their_names() {
        let p = Pair {
            first_ms: 1.5,
            second_bytes: f64::NAN,
        };
        let m = p.to_measured();
        assert_eq!(m.keys().collect::<Vec<_>>(), ["first_ms", "second_bytes"]);
        let back = Pair::read("", &m).unwrap();
        assert_eq!(back.first_ms, 1.5);
        assert!(back.second_bytes.is_nan());
        let mut prefixed = Measured::new();
        p.write("a_", &mut prefixed);
        assert!(prefixed.contains_key("a_first_ms"));
        assert_eq!(Pair::read("", &prefixed).unwrap_err(), "first_ms");
        assert_eq!(Pair::read("a_", &prefixed).unwrap().first_ms, 1.5);
    }
}
