use super::*;

#[test]
fn inner_bindings_shadow_and_blocks_forget_them() {
    let mut names = Names::default();
    names.bind("P", 0);
    names.bind("x", 1);
    let block = names.len();
    assert!(!names.bound_since("x", block));
    names.bind("x", 2);
    assert!(names.bound_since("x", block));
    assert_eq!(names.lookup("x"), Some(2));
    names.truncate(block);
    assert_eq!(names.lookup("x"), Some(1));
    assert_eq!(names.lookup("y"), None);
    names.truncate(0);
    assert_eq!(names.lookup("P"), None);
    assert_eq!(names.listed(), None);
}

#[test]
fn suggestions_and_notes_stay_small() {
    let mut names = Names::default();
    for (slot, n) in ["rounds", "stage", "P"].into_iter().enumerate() {
        names.bind(n, slot);
    }
    assert_eq!(names.suggestion("round"), Some("rounds"));
    assert_eq!(names.suggestion("zzzzz"), None);
    assert_eq!(
        names.listed().as_deref(),
        Some("names defined here: P, rounds, stage")
    );
    // A very long name is not compared (the distance costs the product of the lengths).
    let long = "r".repeat(1_000_000);
    names.bind(&long, 3);
    assert!(names.suggestion(&(long.clone() + "s")).is_none());
    names.truncate(3);
    // Thousands of names: counted, not listed, and not searched for a suggestion.
    for i in 0..1000 {
        names.bind(&format!("x{i}"), 10 + i);
    }
    assert_eq!(
        names.listed().as_deref(),
        Some("1003 names are defined here")
    );
    assert_eq!(names.suggestion("round"), None);
}
