//! The words of a request's errors in the front end's own spelling: `--strict-spec` on the
//! command line is `strict_spec=` in Python, so that an error names what the user typed.

/// A number a user gave, as an error quotes it: plain where that is short (`40`, `0.5`), with an
/// exponent where it is not (`1e308`, `1e-9`), never hundreds of digits.
pub fn number(x: f64) -> String {
    let magnitude = x.abs();
    if x.is_finite() && magnitude != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

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
    /// How the layers are split over the parts.
    Split,
    /// Each part's recomputation.
    Recompute,
    /// Uniform costs.
    Costs,
    /// A measured-costs file.
    CostsFrom,
    /// The plan a run's traces ran.
    Plan,
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
    /// A schedule's own parameter (`--set NAME=VALUE`; a keyword argument in Python).
    Set,
    /// The pipelines of an actions file.
    Pipelines,
    /// How to read a plan file.
    PlanFormat,
}

impl FrontEnd {
    /// `flag` given `value`, as this front end writes it: `--memory-limit 40`, `memory_limit=40`.
    pub fn given(self, flag: Flag, value: impl std::fmt::Display) -> String {
        let name = self.flag(flag);
        match self {
            FrontEnd::CommandLine => format!("{name} {value}"),
            // A schedule's own parameter is its keyword: `NAME=VALUE` as given.
            FrontEnd::Python if name.is_empty() || name.ends_with('=') => format!("{name}{value}"),
            FrontEnd::Python => format!("{name}={value}"),
        }
    }

    /// `flag` as this front end spells it.
    pub fn flag(self, flag: Flag) -> &'static str {
        match self {
            FrontEnd::CommandLine => match flag {
                Flag::Spec => "--spec",
                Flag::StrictSpec => "--strict-spec",
                Flag::KeepDp => "--keep-dp",
                Flag::GlobalBatch => "--global-batch",
                Flag::Split => "--split",
                Flag::Recompute => "--recompute",
                Flag::Costs => "--costs",
                Flag::CostsFrom => "--costs-from",
                Flag::Plan => "--plan",
                Flag::From => "--from",
                Flag::To => "--to",
                Flag::MemoryLimit => "--memory-limit",
                Flag::Activations => "--activations",
                Flag::LibraryMemory => "--library-memory",
                Flag::Ranks => "--ranks/-p",
                Flag::Microbatches => "--microbatches/-m",
                Flag::StagesPerRank => "--stages-per-rank",
                Flag::Over => "--over",
                Flag::Placement => "--placement",
                Flag::RankRange => "--rank-range",
                Flag::Set => "--set",
                Flag::Pipelines => "--pipelines",
                Flag::PlanFormat => "--plan-format",
            },
            // Keyword arguments that take a value are written with `=`; switches bare.
            FrontEnd::Python => match flag {
                Flag::Spec => "spec=",
                Flag::StrictSpec => "strict_spec",
                Flag::KeepDp => "keep_dp",
                Flag::GlobalBatch => "global_batch",
                Flag::Split => "split",
                Flag::Recompute => "recompute",
                Flag::Costs => "costs=",
                Flag::CostsFrom => "costs_from=",
                Flag::Plan => "plan=",
                Flag::From => "start=",
                Flag::To => "end=",
                Flag::MemoryLimit => "memory_limit=",
                Flag::Activations => "activations=",
                Flag::LibraryMemory => "library_memory",
                Flag::Ranks => "ranks=",
                Flag::Microbatches => "microbatches=",
                Flag::StagesPerRank => "stages_per_rank=",
                Flag::Over => "over=",
                Flag::Placement => "placement=",
                Flag::RankRange => "ranks=",
                Flag::Set => "",
                Flag::Pipelines => "pipelines=",
                Flag::PlanFormat => "plan_format=",
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_stay_short() {
        assert_eq!(number(40.0), "40");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(1e308), "1e308");
        assert_eq!(number(1e299), "1e299");
        assert_eq!(number(-2.5e-9), "-2.5e-9");
        assert_eq!(number(f64::INFINITY), "inf");
    }

    #[test]
    fn flags_in_each_front_ends_words() {
        let cli = FrontEnd::CommandLine;
        let py = FrontEnd::Python;
        assert_eq!(cli.given(Flag::MemoryLimit, 40), "--memory-limit 40");
        assert_eq!(py.given(Flag::MemoryLimit, 40), "memory_limit=40");
        assert_eq!(py.given(Flag::KeepDp, true), "keep_dp=true");
        assert_eq!(cli.given(Flag::Set, "activations=K"), "--set activations=K");
        assert_eq!(py.given(Flag::Set, "activations=K"), "activations=K");
    }
}
