//! Unit tests of the generators: requirements, small orders by hand, structural laws.

use crate::*;
use pipeweave_plan::testing::program_lines;

#[test]
fn requirements_are_plain_errors() {
    let d = DualOptions::default();
    let cases = [
        (
            dualpipe(3, 8, d),
            "dualpipe needs an even number of ranks, got 3",
        ),
        (
            dualpipe(4, 9, d),
            "dualpipe needs an even number of micro-batches, got 9",
        ),
        (
            dualpipe(4, 6, d),
            "dualpipe needs at least twice as many micro-batches as ranks (8), got 6",
        ),
        (dualpipe(0, 6, d), "dualpipe needs at least one rank"),
        (
            dualpipev(4, 7, d),
            "dualpipev needs at least twice as many micro-batches as ranks (8), got 7",
        ),
        (
            dualpipe(1 << 12, 1 << 12, d),
            "dualpipe supports at most 4194304 ranks × micro-batches, got 4096 × 4096",
        ),
    ];
    for (result, expected) in cases {
        assert_eq!(result.unwrap_err(), expected);
    }
    let c = ChimeraOptions::default();
    let k4 = ChimeraOptions {
        pipelines: 4,
        joins: Joins::Direct,
    };
    let doubled = ChimeraOptions {
        joins: Joins::Doubling,
        ..c
    };
    let halved = ChimeraOptions {
        joins: Joins::Halving,
        ..c
    };
    let cases = [
        (
            chimera(5, 10, c),
            "chimera needs an even number of stages (ranks), got 5",
        ),
        (
            chimera(
                4,
                8,
                ChimeraOptions {
                    pipelines: 3,
                    joins: Joins::Direct,
                },
            ),
            "chimera needs an even number of pipelines (at least 2), got 3",
        ),
        (
            chimera(6, 6, k4),
            "chimera with 4 pipelines needs a number of stages that 4 divides, got 6",
        ),
        (
            chimera(4, 2, c),
            "chimera with 4 stages and 2 pipelines needs at least 4 micro-batches (one basic unit) and a multiple of 2 (the micro-batches of one pipeline in a unit), got 2",
        ),
        (
            chimera(4, 5, c),
            "chimera with 4 stages and 2 pipelines needs at least 4 micro-batches (one basic unit) and a multiple of 2 (the micro-batches of one pipeline in a unit), got 5",
        ),
    ];
    for (result, expected) in cases {
        assert_eq!(result.unwrap_err(), expected);
    }
    assert_eq!(
        chimera(4, 6, doubled).unwrap_err(),
        "chimera with 4 stages and 2 pipelines with forward doubling needs at least 8 micro-batches (one basic unit) and a multiple of 4 (the micro-batches of one pipeline in a unit), got 6"
    );
    assert_eq!(
        chimera(4, 10, halved).unwrap_err(),
        "chimera with 4 stages and 2 pipelines with backward halving needs at least 8 micro-batches (one basic unit) and a multiple of 4 (the micro-batches of one pipeline in a unit), got 10"
    );
}

#[test]
fn chimera_forward_doubling_puts_two_microbatches_in_every_slot() {
    let opts = ChimeraOptions {
        pipelines: 2,
        joins: Joins::Doubling,
    };
    let doubled = chimera(4, 8, opts).unwrap();
    assert_eq!(
        program_lines(&doubled)[0],
        "0F0,0F1,0F2,0F3,7F4,7F5,7B4,7B5,7F6,7F7,7B6,7B7,0B0,0B1,0B2,0B3"
    );
    assert_eq!(doubled.pipelines()[0].microbatches, [0, 1, 2, 3]);
}

/// Backward halving builds forward doubling's order (its micro-batches are half the size, which a
/// plan expresses through M); the option names the pairing the cost search gives it.
#[test]
fn chimera_backward_halving_has_forward_doublings_order() {
    for (d, k, m) in [(4, 2, 8), (4, 2, 16), (8, 4, 16), (8, 2, 32)] {
        let with = |joins| {
            chimera(
                d,
                m,
                ChimeraOptions {
                    pipelines: k,
                    joins,
                },
            )
            .unwrap()
        };
        assert_eq!(
            with(Joins::Halving),
            with(Joins::Doubling),
            "D={d} K={k} M={m}"
        );
        assert_ne!(
            with(Joins::Halving),
            with(Joins::Direct),
            "D={d} K={k} M={m}"
        );
    }
    assert_eq!(
        Joins::ALL.map(|j| Joins::from_name(j.name())),
        Joins::ALL.map(Some)
    );
    assert_eq!(Joins::from_name("double"), None);
}

#[test]
fn chimera_basic_unit_is_the_authors_table() {
    // formulas.md, D = 4, M = 4, in the global numbering (down stages 0..3, up stages 4..7).
    let plan = chimera(4, 4, ChimeraOptions::default()).unwrap();
    assert_eq!(
        program_lines(&plan),
        [
            "0F0,0F1,7F2,7B2,7F3,7B3,0B0,0B1",
            "1F0,6F2,1F1,6F3,6B2,1B0,6B3,1B1",
            "5F2,2F0,5F3,2F1,2B0,5B2,2B1,5B3",
            "4F2,4F3,3F0,3B0,3F1,3B1,4B2,4B3",
        ]
    );
    assert_eq!(plan.pipelines()[1].placement, [3, 2, 1, 0]);
}

#[test]
fn dualpipe_middle_rank_runs_its_first_pair_apart() {
    // P = 2: both ranks are middle ranks (h = H − 1 = 0).
    let plan = dualpipe(2, 4, DualOptions::default()).unwrap();
    assert_eq!(
        program_lines(&plan),
        [
            "0F0,3F2,0F1,3B2,(3F3;0B0)OVERLAP_F_B,3B3,0I1,0W1",
            "2F2,1F0,2F3,1B0,(1F1;2B2)OVERLAP_F_B,1B1,2I3,2W3",
        ]
    );
}

#[test]
fn dualpipev_on_one_rank_is_a_v_of_two_stages() {
    let plan = dualpipev(1, 2, DualOptions::default()).unwrap();
    assert_eq!(
        program_lines(&plan),
        ["0F0,1F0,0F1,1B0,(1F1;0B0)OVERLAP_F_B,1B1,0I1,0W1"]
    );
    assert_eq!(plan.pipelines()[0].placement, [0, 0]);
}

#[test]
fn generator_metadata_round_trips_through_the_protocol() {
    use pipeweave_plugin_api::{Generator, protocol};
    for meta in [
        DualPipe::metadata(),
        DualPipeV::metadata(),
        Chimera::metadata(),
    ] {
        let bytes = protocol::encode_metadata(&meta);
        assert_eq!(protocol::decode_metadata(&bytes), Ok(meta));
    }
}
