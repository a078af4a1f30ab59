//! The words of a request's errors in the front end's own spelling: `--strict-spec` on the
//! command line is `strict_spec=` in Python, so that an error names what the user typed.

/// The front end a session answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FrontEnd {
    /// The `pipeweave` command: flags.
    #[default]
    CommandLine,
    /// The Python package: keyword arguments.
    Python,
}

/// An option a request's error may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// The cluster spec.
    Spec,
    /// Refuse a plan of another shape than the spec's.
    StrictSpec,
    /// Keep the spec's data parallelism.
    KeepDp,
    /// Keep the spec's global batch.
    GlobalBatch,
    /// Uniform costs.
    Costs,
    /// The start of a drawing's window.
    From,
    /// The end of a drawing's window.
    To,
    /// The memory per GPU a synthesized plan may use.
    MemoryLimit,
    /// The activations a rank may hold.
    Activations,
    /// A synthesized plan held to the library's memory.
    LibraryMemory,
    /// Ranks P.
    Ranks,
    /// Micro-batches M.
    Microbatches,
    /// Stages per rank v.
    StagesPerRank,
    /// What a sweep varies.
    Over,
    /// A synthesis's placement.
    Placement,
    /// The ranks a text drawing shows.
    RankRange,
}

impl FrontEnd {
    /// `flag` as this front end spells it.
    pub fn flag(self, flag: Flag) -> &'static str {
        match self {
            FrontEnd::CommandLine => match flag {
                Flag::Spec => "--spec",
                Flag::StrictSpec => "--strict-spec",
                Flag::KeepDp => "--keep-dp",
                Flag::GlobalBatch => "--global-batch",
                Flag::Costs => "--costs",
                Flag::From => "--from",
                Flag::To => "--to",
                Flag::MemoryLimit => "--memory-limit",
                Flag::Activations => "--activations",
                Flag::LibraryMemory => "--library-memory",
                Flag::Ranks => "-p",
                Flag::Microbatches => "-m",
                Flag::StagesPerRank => "--stages-per-rank",
                Flag::Over => "--over",
                Flag::Placement => "--placement",
                Flag::RankRange => "--rank-range",
            },
            FrontEnd::Python => match flag {
                Flag::Spec => "spec",
                Flag::StrictSpec => "strict_spec",
                Flag::KeepDp => "keep_dp",
                Flag::GlobalBatch => "global_batch",
                Flag::Costs => "costs",
                Flag::From => "start",
                Flag::To => "end",
                Flag::MemoryLimit => "memory_limit",
                Flag::Activations => "activations",
                Flag::LibraryMemory => "library_memory",
                Flag::Ranks => "ranks",
                Flag::Microbatches => "microbatches",
                Flag::StagesPerRank => "stages_per_rank",
                Flag::Over => "over",
                Flag::Placement => "placement",
                Flag::RankRange => "ranks",
            },
        }
    }
}
