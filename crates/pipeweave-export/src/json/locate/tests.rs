use super::*;

fn at<'a>(source: &'a str, path: &[Seg]) -> Option<&'a str> {
    locate(source, &[path.to_vec()])[0]
        .clone()
        .map(|r| &source[r])
}

#[test]
fn values_are_found_by_path() {
    let doc = r#"{"a": 1, "b": [true, "x\"]", {"c": [null, -2.5e3]}], "d": {}}"#;
    assert_eq!(at(doc, &[key("a")]), Some("1"));
    assert_eq!(at(doc, &[key("b"), index(0)]), Some("true"));
    assert_eq!(at(doc, &[key("b"), index(1)]), Some(r#""x\"]""#));
    assert_eq!(
        at(doc, &[key("b"), index(2), key("c"), index(1)]),
        Some("-2.5e3")
    );
    assert_eq!(
        at(doc, &[key("b"), index(2)]),
        Some(r#"{"c": [null, -2.5e3]}"#)
    );
    assert_eq!(at(doc, &[key("d")]), Some("{}"));
    assert_eq!(at(doc, &[key("b"), index(3)]), None);
    assert_eq!(at(doc, &[key("e")]), None);
    assert_eq!(at(doc, &[]), Some(doc));
}

#[test]
fn a_value_over_several_lines_is_its_first_character() {
    let doc = "{\n  \"programs\": [\n    {\"rank\": 0}\n  ]\n}\n";
    assert_eq!(at(doc, &[key("programs")]), Some("["));
    assert_eq!(
        at(doc, &[key("programs"), index(0), key("rank")]),
        Some("0")
    );
    assert_eq!(at(doc, &[]), Some("{"));
}

#[test]
fn many_paths_in_one_pass() {
    let steps: Vec<String> = (0..1000).map(|i| format!("{{\"s\":{i}}}")).collect();
    let doc = format!("{{\"steps\":[{}]}}", steps.join(","));
    let paths: Vec<Vec<Seg>> = (0..1000)
        .rev()
        .map(|i| vec![key("steps"), index(i), key("s")])
        .collect();
    let found = locate(&doc, &paths);
    for (k, r) in found.iter().enumerate() {
        let r = r.clone().expect("found");
        assert_eq!(doc[r].parse::<usize>().ok(), Some(999 - k));
    }
}
