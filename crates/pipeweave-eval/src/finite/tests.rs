use super::*;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
struct Rank {
    rank: u32,
    busy: f64,
}

#[derive(Serialize)]
struct Report {
    name: String,
    ranks: Vec<Rank>,
    by_name: BTreeMap<String, f64>,
    point: Option<(u32, f32)>,
}

fn report() -> Report {
    Report {
        name: "1f1b".into(),
        ranks: vec![Rank { rank: 0, busy: 1.0 }, Rank { rank: 1, busy: 2.0 }],
        by_name: [("step".to_owned(), 3.0)].into_iter().collect(),
        point: Some((4, 0.5)),
    }
}

#[test]
fn finite_figures_pass() {
    assert_eq!(non_finite(&report()), None);
}

#[test]
fn the_first_non_finite_figure_is_named_by_its_path() {
    let mut r = report();
    r.ranks[1].busy = f64::NAN;
    let (path, x) = non_finite(&r).expect("found");
    assert_eq!(path, "ranks[1].busy");
    assert!(x.is_nan());
    let mut r = report();
    r.by_name.insert("tokens".into(), f64::INFINITY);
    assert_eq!(
        non_finite(&r),
        Some(("by_name.tokens".into(), f64::INFINITY))
    );
    let mut r = report();
    r.point = Some((4, f32::NEG_INFINITY));
    assert_eq!(non_finite(&r), Some(("point[1]".into(), f64::NEG_INFINITY)));
}
