//! The last line of defence for figures: [`non_finite`] walks any of eval's values (they are
//! `Serialize`) and names the first number that is infinite or NaN, so that a command refuses to
//! print `inf`, `NaN%` or JSON `null` for a figure. The inputs are bounded so that this never
//! happens (specs and costs are checked where they are read); this catches what slips through.
//! The application layer applies [`finite`] once to every result it makes.

use pipeweave_diagnostics::Diagnostic;
use serde::ser::{self, Serialize};
use std::fmt;

/// `value` (the figures of `what`), or the error that names its first figure that is not a finite
/// number: the inputs are bounded so that this does not happen, and a figure printed as `inf` or
/// `NaN%` would be wrong silently.
pub fn finite<T: Serialize>(what: &str, value: T) -> Result<T, Diagnostic> {
    match non_finite(&value) {
        None => Ok(value),
        Some((path, x)) => Err(Diagnostic::error(format!(
            "{what}: the figure `{path}` came out as {x}, not a finite number; an input is too \
             large or too small for pipeweave to compute with"
        ))),
    }
}

/// The path (`rows[1].figures.step_time_s`) and value of the first non-finite number in `value`.
pub fn non_finite(value: &impl Serialize) -> Option<(String, f64)> {
    match value.serialize(Walk(String::new())) {
        Err(Stop::Found(path, x)) => Some((path, x)),
        Err(Stop::Other) | Ok(()) => None,
    }
}

/// Why the walk stopped.
#[derive(Debug)]
enum Stop {
    Found(String, f64),
    /// A value's own serialization failed (not a figure; nothing to report).
    Other,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stop::Found(path, x) => write!(f, "{path} is {x}"),
            Stop::Other => f.write_str("could not walk the value"),
        }
    }
}

impl std::error::Error for Stop {}

impl ser::Error for Stop {
    fn custom<T: fmt::Display>(_: T) -> Stop {
        Stop::Other
    }
}

/// Walks one value at a path.
struct Walk(String);

impl Walk {
    fn float(self, x: f64) -> Result<(), Stop> {
        if x.is_finite() {
            Ok(())
        } else {
            Err(Stop::Found(self.0, x))
        }
    }

    fn field(&self, name: &str) -> Walk {
        if self.0.is_empty() {
            Walk(name.to_owned())
        } else {
            Walk(format!("{}.{name}", self.0))
        }
    }

    fn item(&self, i: usize) -> Walk {
        Walk(format!("{}[{i}]", self.0))
    }
}

/// The members of a sequence, map or struct at a path.
struct Members {
    at: Walk,
    next: usize,
    key: Option<String>,
}

impl Members {
    fn of(at: Walk) -> Members {
        Members {
            at,
            next: 0,
            key: None,
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        let walk = self.at.item(self.next);
        self.next += 1;
        value.serialize(walk)
    }
}

macro_rules! ignore {
    ($($name:ident: $t:ty),* $(,)?) => {
        $(fn $name(self, _: $t) -> Result<(), Stop> { Ok(()) })*
    };
}

impl ser::Serializer for Walk {
    type Ok = ();
    type Error = Stop;
    type SerializeSeq = Members;
    type SerializeTuple = Members;
    type SerializeTupleStruct = Members;
    type SerializeTupleVariant = Members;
    type SerializeMap = Members;
    type SerializeStruct = Members;
    type SerializeStructVariant = Members;

    ignore!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_char: char,
        serialize_str: &str,
        serialize_bytes: &[u8],
        serialize_unit_struct: &'static str,
    );

    fn serialize_f32(self, v: f32) -> Result<(), Stop> {
        self.float(f64::from(v))
    }

    fn serialize_f64(self, v: f64) -> Result<(), Stop> {
        self.float(v)
    }

    fn serialize_none(self) -> Result<(), Stop> {
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Stop> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Stop> {
        Ok(())
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Stop> {
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(self.field(variant))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Members, Stop> {
        Ok(Members::of(self))
    }

    fn serialize_tuple(self, _: usize) -> Result<Members, Stop> {
        Ok(Members::of(self))
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Members, Stop> {
        Ok(Members::of(self))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Members, Stop> {
        Ok(Members::of(self.field(variant)))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Members, Stop> {
        Ok(Members::of(self))
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Members, Stop> {
        Ok(Members::of(self))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Members, Stop> {
        Ok(Members::of(self.field(variant)))
    }
}

impl ser::SerializeSeq for Members {
    type Ok = ();
    type Error = Stop;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        self.element(value)
    }

    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeTuple for Members {
    type Ok = ();
    type Error = Stop;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        self.element(value)
    }

    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Members {
    type Ok = ();
    type Error = Stop;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        self.element(value)
    }

    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Members {
    type Ok = ();
    type Error = Stop;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        self.element(value)
    }

    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeMap for Members {
    type Ok = ();
    type Error = Stop;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Stop> {
        // Keys are names (strings or numbers): their text names the member.
        self.key = Some(
            key.serialize(KeyText)
                .unwrap_or_else(|_| self.next.to_string()),
        );
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Stop> {
        let name = self.key.take().unwrap_or_else(|| self.next.to_string());
        self.next += 1;
        value.serialize(self.at.field(&name))
    }

    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeStruct for Members {
    type Ok = ();
    type Error = Stop;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(self.at.field(name))
    }

    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Members {
    type Ok = ();
    type Error = Stop;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(self.at.field(name))
    }

    fn end(self) -> Result<(), Stop> {
        Ok(())
    }
}

/// A map key as text, for the path (eval's maps have string keys; any other key is named by
/// its position).
struct KeyText;

macro_rules! not_text {
    ($($name:ident: $t:ty),* $(,)?) => {
        $(fn $name(self, _: $t) -> Result<String, Stop> { Err(Stop::Other) })*
    };
}

macro_rules! not_compound {
    ($($name:ident -> $out:ident ($($t:ty),*)),* $(,)?) => {
        $(fn $name(self, $(_: $t),*) -> Result<Self::$out, Stop> { Err(Stop::Other) })*
    };
}

impl ser::Serializer for KeyText {
    type Ok = String;
    type Error = Stop;
    type SerializeSeq = ser::Impossible<String, Stop>;
    type SerializeTuple = ser::Impossible<String, Stop>;
    type SerializeTupleStruct = ser::Impossible<String, Stop>;
    type SerializeTupleVariant = ser::Impossible<String, Stop>;
    type SerializeMap = ser::Impossible<String, Stop>;
    type SerializeStruct = ser::Impossible<String, Stop>;
    type SerializeStructVariant = ser::Impossible<String, Stop>;

    fn serialize_str(self, v: &str) -> Result<String, Stop> {
        Ok(v.to_owned())
    }

    not_text!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_f32: f32,
        serialize_f64: f64,
        serialize_char: char,
        serialize_bytes: &[u8],
        serialize_unit_struct: &'static str,
    );

    fn serialize_none(self) -> Result<String, Stop> {
        Err(Stop::Other)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, Stop> {
        Err(Stop::Other)
    }

    fn serialize_unit(self) -> Result<String, Stop> {
        Err(Stop::Other)
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, Stop> {
        Ok(variant.to_owned())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<String, Stop> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Stop> {
        Err(Stop::Other)
    }

    not_compound!(
        serialize_seq -> SerializeSeq (Option<usize>),
        serialize_tuple -> SerializeTuple (usize),
        serialize_tuple_struct -> SerializeTupleStruct (&'static str, usize),
        serialize_tuple_variant -> SerializeTupleVariant (&'static str, u32, &'static str, usize),
        serialize_map -> SerializeMap (Option<usize>),
        serialize_struct -> SerializeStruct (&'static str, usize),
        serialize_struct_variant -> SerializeStructVariant (&'static str, u32, &'static str, usize),
    );
}

#[cfg(test)]
mod tests;
