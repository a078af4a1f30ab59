use super::*;
use proptest::prelude::*;

fn sync(kinds: &[(f64, f64)]) -> GradSync {
    GradSync {
        buckets: kinds
            .iter()
            .map(|&(count, seconds)| Buckets { count, seconds })
            .collect(),
        ..GradSync::default()
    }
}

/// Windows one after another, as a rank's actions are: (start, width, gap before the next).
fn stages<'a>(windows: &[(f64, f64)], syncs: &'a [GradSync]) -> Vec<StageBuckets<'a>> {
    let mut t = 0.0;
    windows
        .iter()
        .zip(syncs)
        .map(|(&(gap, width), sync)| {
            let start = t + gap;
            t = start + width;
            StageBuckets {
                start,
                end: t,
                sync,
            }
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

#[test]
fn one_kind_in_closed_form_is_the_fold() {
    // 10 buckets of 0.3 s over [2, 4]: the channel is busy from the first on, 2.2 + 3 = 5.2;
    // 10 of 0.1 s: each waits for its gradients, the last ends at 4 + 0.1.
    for (d, want) in [(0.3, 5.2), (0.1, 4.1)] {
        let s = [sync(&[(10.0, d)])];
        let st = [StageBuckets {
            start: 2.0,
            end: 4.0,
            sync: &s[0],
        }];
        assert!(close(channel_end(&st, true), want));
        assert!(close(channel_end(&st, false), want), "{d}");
    }
}

#[test]
fn a_billion_buckets_are_counted_not_listed() {
    // `grad_bucket_params = 1` on a 70B model's part: a billion buckets of a microsecond each,
    // over a window of a second; the one-by-one fold is refused past its limit
    let s = [sync(&[(1e9, 1e-6)])];
    let st = [StageBuckets {
        start: 10.0,
        end: 11.0,
        sync: &s[0],
    }];
    assert!(s[0].bucket_count() > BUCKETS_ONE_BY_ONE);
    let end = channel_end(&st, true);
    assert!(close(end, 10.0 + 1e-9 + 1e3), "{end}");
}

#[test]
fn every_bucket_waiting_for_the_rank_is_a_sum() {
    let s = [sync(&[(3.0, 0.5), (2.0, 0.25)]), sync(&[(4.0, 1.0)])];
    let st: Vec<StageBuckets> = s
        .iter()
        .map(|sync| StageBuckets {
            start: 7.0,
            end: 7.0,
            sync,
        })
        .collect();
    assert!(close(channel_end(&st, true), 7.0 + 1.5 + 0.5 + 4.0));
    assert!(close(channel_end(&st, false), 7.0 + 1.5 + 0.5 + 4.0));
}

proptest! {
    #[test]
    fn closed_form_equals_the_fold_with_one_kind_per_stage(
        windows in prop::collection::vec((0.0f64..3.0, 0.0f64..5.0), 1..6),
        kinds in prop::collection::vec((1u32..200, 0.0f64..0.2), 6),
    ) {
        let syncs: Vec<GradSync> = kinds
            .iter()
            .map(|&(n, d)| sync(&[(f64::from(n), d)]))
            .collect();
        let st = stages(&windows, &syncs);
        let (fold, closed) = (channel_end(&st, true), channel_end(&st, false));
        prop_assert!(close(fold, closed), "{fold} vs {closed}");
    }

    #[test]
    fn with_two_kinds_per_stage_within_one_bucket_of_each(
        windows in prop::collection::vec((0.0f64..3.0, 0.0f64..5.0), 1..6),
        kinds in prop::collection::vec(((1u32..200, 0.0f64..0.2), (1u32..200, 0.0f64..0.2)), 6),
    ) {
        let syncs: Vec<GradSync> = kinds
            .iter()
            .map(|&((n, d), (m, e))| sync(&[(f64::from(n), d), (f64::from(m), e)]))
            .collect();
        let st = stages(&windows, &syncs);
        let (fold, closed) = (channel_end(&st, true), channel_end(&st, false));
        // the closed form takes the largest of values the fold reaches: never above it
        prop_assert!(closed <= fold + 1e-9 * fold.max(1.0), "{fold} vs {closed}");
        let slack: f64 = kinds.iter().map(|&((_, d), (_, e))| d.max(e)).fold(0.0, f64::max);
        prop_assert!(fold <= closed + 2.0 * slack + 1e-9, "{fold} vs {closed}");
    }
}
