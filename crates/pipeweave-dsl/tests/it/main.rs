//! Integration tests of the schedule language: library orders against the reference
//! implementations, validation over many parameters, properties, and the compile API.

mod bubbles;
mod common;
mod deep;
mod params;
mod properties;
mod reference;
mod validate;
