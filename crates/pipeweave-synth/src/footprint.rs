//! What a synthesis holds at once, asked for before the work: the work graph, the best plan so far
//! and the one being checked (their programs, the validator's and the simulator's tables), the
//! local search's timing, and the proofs' exact tables. Its big tables are allocated fallibly too
//! (`pipeweave_plan::memory`), so memory that runs out later is an error naming the size, not an
//! abort; what is asked for here first makes that unlikely, since the process cannot be given it
//! all at once otherwise.

use crate::greedy::Act;
use crate::problem::Graph;
use pipeweave_plan::memory::{self, OutOfMemory};

/// Bytes a synthesis holds at most per operation of its work graph: measured with heaptrack on
/// every placement from 12,000 to 258,000 operations, with the local search running or the plan
/// proved against the bound, 244 to 251 bytes (its tables are all sized up front, so none grows by
/// doubling), and a fifth more. Not more than that: what is asked for here is refused as a whole,
/// so room to spare would refuse syntheses that fit.
const BYTES_PER_OPERATION: usize = 300;

/// And per rank (its programs, timing and tables are vectors of their own).
const BYTES_PER_RANK: usize = 2048;

/// What the tables are for, as an error says.
const WHAT: &str = "the synthesis's tables";

/// The bytes a synthesis of `operations` operations on `ranks` ranks holds at most at once.
pub(crate) fn bytes(operations: usize, ranks: u32) -> usize {
    operations
        .saturating_mul(BYTES_PER_OPERATION)
        .saturating_add((ranks as usize).saturating_mul(BYTES_PER_RANK))
}

/// Asks for the bytes a synthesis of `operations` operations on `ranks` ranks will hold, and
/// gives them back: an error naming the size when they are more than `budget` or than the
/// process can have.
pub(crate) fn reserve(operations: usize, ranks: u32, budget: usize) -> Result<(), OutOfMemory> {
    let bytes = bytes(operations, ranks);
    if bytes > budget {
        return Err(OutOfMemory { bytes, what: WHAT });
    }
    drop(memory::with_capacity::<u8>(bytes, WHAT)?);
    Ok(())
}

/// Every rank's program with room for the most entries it can have (one per operation it hosts),
/// so that growing it never allocates again: empty.
pub(crate) fn programs(g: &Graph, what: &'static str) -> Result<Vec<Vec<Act>>, OutOfMemory> {
    let mut out = memory::with_capacity(g.ranks as usize, what)?;
    for stages in &g.on_rank {
        out.push(memory::with_capacity(
            stages.len() * g.per_pipeline as usize * 3,
            what,
        )?);
    }
    Ok(out)
}

/// A copy of `programs` with the room of [`programs`].
pub(crate) fn copy(
    g: &Graph,
    programs: &[Vec<Act>],
    what: &'static str,
) -> Result<Vec<Vec<Act>>, OutOfMemory> {
    let mut out = self::programs(g, what)?;
    for (to, from) in out.iter_mut().zip(programs) {
        to.extend_from_slice(from);
    }
    Ok(out)
}
