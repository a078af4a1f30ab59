use super::*;
use proptest::prelude::*;

/// The members listed, for [`Spread::of`].
fn listed(offsets: &[u64], stride: u64, count: u64) -> Vec<u64> {
    offsets
        .iter()
        .flat_map(|&o| (0..count).map(move |k| o + k * stride))
        .collect()
}

fn check(offsets: &[u64], stride: u64, count: u64, gpn: u64) {
    let want = Spread::of(&listed(offsets, stride, count), gpn);
    let got = Spread::of_progressions(offsets, stride, count, gpn);
    assert_eq!(
        got, want,
        "offsets {offsets:?}, stride {stride}, count {count}, gpn {gpn}"
    );
}

#[test]
fn one_progression_on_every_small_shape() {
    for gpn in 1..=12 {
        for stride in 1..=20 {
            for count in [1, 2, 3, 7, 70, 700] {
                for o in [0, 1, 5, 13] {
                    check(&[o], stride, count, gpn);
                }
            }
        }
    }
}

#[test]
fn pipeline_ranks_innermost_interleave_within_a_stride() {
    // GPU = (dp_rank·tp + tp_rank)·pp + pp_rank: two ranks' data-parallel groups interleave
    for gpn in [3, 4, 8, 9, 16] {
        for (pp, tp) in [(4, 1), (6, 2), (8, 1), (5, 3)] {
            for ranks in [vec![0, 3], vec![1, 2], vec![0, 1, 2, 3], vec![2, 2]] {
                for count in [1, 5, 200, 1000] {
                    check(&ranks, pp * tp, count, gpn);
                }
            }
        }
    }
}

#[test]
fn pipeline_ranks_outermost_lie_apart() {
    // GPU = pp_rank·dp·tp + dp_rank·tp + tp_rank: blocks of dp·tp GPUs, meeting on shared nodes
    for gpn in [3, 8, 12] {
        for (dp, tp, e) in [(2, 1, 1), (3, 2, 1), (1000, 1, 1), (600, 2, 3), (5, 4, 1)] {
            let block = dp * tp;
            for ranks in [vec![0], vec![0, 1], vec![1, 6], vec![0, 1, 2, 3]] {
                let offsets: Vec<u64> = ranks.iter().map(|r| r * block).collect();
                check(&offsets, tp * e, (dp / e).max(1), gpn);
            }
        }
    }
}

#[test]
fn progressions_that_interleave_farther_apart_are_walked() {
    check(&[0, 25], 7, 40, 8);
    check(&[3, 100, 101], 10, 30, 16);
}

#[test]
fn a_million_members_cost_no_more_than_a_few() {
    // a node of eight GPUs, every GPU of a million-GPU cluster: counted, not listed
    let s = Spread::of_progressions(&[0], 1, 1 << 20, 8);
    assert_eq!(
        s,
        Spread {
            nodes: 131_072.0,
            per_node: 8.0
        }
    );
    // the largest shapes a spec allows: 2^20 data-parallel ranks on nodes of 2^20 − 1 GPUs
    let s = Spread::of_progressions(&[0, 7], 65_536 * 13, 1 << 20, (1 << 20) - 1);
    assert!(s.nodes > 1.0 && s.per_node >= 1.0, "{s:?}");
}

proptest! {
    #[test]
    fn equal_to_the_members_listed(
        offsets in prop::collection::vec(0u64..400, 1..5),
        stride in 1u64..40,
        count in 1u64..300,
        gpn in 1u64..50,
    ) {
        check(&offsets, stride, count, gpn);
    }

    #[test]
    fn equal_to_the_members_listed_in_one_stride(
        base in 0u64..1000,
        deltas in prop::collection::vec(0u64..1000, 1..5),
        stride in 1u64..60,
        count in 1u64..400,
        gpn in 1u64..70,
    ) {
        let offsets: Vec<u64> = deltas.iter().map(|d| base + d % stride).collect();
        check(&offsets, stride, count, gpn);
    }
}
