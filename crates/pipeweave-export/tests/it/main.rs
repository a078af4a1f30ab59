//! Integration tests of the export formats against the reference vectors and random plans.

mod actions;
mod common;
mod comms;
mod formats;
mod json;
mod roundtrip;
mod split;
