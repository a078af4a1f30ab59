//! The pest grammar of `.weave` files (`weave.pest`), generated into `Rule` and [`WeaveParser`]:
//! what the parser runs and what `words.rs` names in plain words. Apart from both, so neither
//! imports the other.

use pest_derive::Parser;

/// The parser pest generates from `weave.pest`.
#[derive(Parser)]
#[grammar = "weave.pest"]
pub(crate) struct WeaveParser;
