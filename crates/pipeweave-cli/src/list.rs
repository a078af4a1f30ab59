//! `pipeweave list` and `pipeweave check`, as the command line writes them.

use crate::args::Format;
use crate::output::emit;
use pipeweave_app::Session;
use pipeweave_source::Failure;

/// `pipeweave list`: every schedule available by name as one table, or as JSON
/// (`schemas/pipeweave-list.v1.schema.json`).
pub fn list(session: &mut Session<'_>, format: Format) -> Result<(), Failure> {
    let listing = pipeweave_app::list(session);
    emit(
        None,
        &match format {
            Format::Text => pipeweave_report::listing_text(&listing, pipeweave_param::SPELLINGS),
            Format::Json => pipeweave_report::json(&listing),
        },
    )
}

/// `pipeweave check FILE`: syntax and names, then the plans on a small grid of P and M.
pub fn check(session: &mut Session<'_>, arg: &str) -> Result<(), Failure> {
    let c = pipeweave_app::check(session, arg)?;
    let text = pipeweave_report::check_text(
        &c.name,
        c.combinations,
        c.nothing_compiled.as_deref(),
        pipeweave_source::GRID_RANKS,
    );
    emit(None, &text)
}
