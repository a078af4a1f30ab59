use super::*;

const SCHEDULE: &str = "param lag: int in 0..=4 = 1 \"how far behind\"
stages P
place loop
let half = M / 2
program {
  for i in 0..half + lag {
    if i >= r { F }
  }
  repeat min(M, P) { B }
}
";

fn text(span: &Range<usize>) -> &str {
    &SCHEDULE[span.clone()]
}

#[test]
fn every_definition_is_found_with_its_kind() {
    let names = names(SCHEDULE);
    let found: Vec<(&str, NameKind)> = names
        .definitions
        .iter()
        .map(|d| (text(&d.span), d.kind))
        .collect();
    assert_eq!(
        found,
        [
            ("lag", NameKind::Parameter),
            ("half", NameKind::Let),
            ("i", NameKind::Loop),
        ]
    );
}

#[test]
fn uses_point_at_their_definitions_or_built_ins() {
    let names = names(SCHEDULE);
    let mut seen: Vec<(&str, String)> = names
        .uses
        .iter()
        .map(|u| {
            let means = match u.meaning {
                Meaning::Defined(i) => format!("defined at {}", names.definitions[i].span.start),
                Meaning::BuiltIn(name) => format!("built-in {name}"),
            };
            (text(&u.span), means)
        })
        .collect();
    seen.sort();
    let at = |name: &str| format!("defined at {}", SCHEDULE.find(name).expect("defined"));
    let lag = format!("defined at {}", SCHEDULE.find("lag").expect("lag"));
    let i = format!("defined at {}", SCHEDULE.find("for i").expect("for") + 4);
    let mut expected = vec![
        ("P", "built-in P".to_owned()),
        ("M", "built-in M".to_owned()),
        ("half", at("half")),
        ("lag", lag),
        ("i", i),
        ("r", "built-in r".to_owned()),
        ("M", "built-in M".to_owned()),
        ("P", "built-in P".to_owned()),
    ];
    expected.sort();
    assert_eq!(seen, expected);
}

#[test]
fn a_use_is_found_at_its_end_too() {
    let names = names(SCHEDULE);
    let start = SCHEDULE.find("half + lag").expect("use");
    for offset in [start, start + 2, start + 4] {
        let u = names.use_at(offset).expect("a use");
        assert_eq!(text(&u.span), "half");
    }
    assert!(names.use_at(0).is_none());
    let def = names.definition_at(SCHEDULE.find("lag").expect("lag") + 1);
    assert_eq!(def.map(|d| d.name.as_str()), Some("lag"));
}

#[test]
fn a_file_with_errors_still_names_what_it_can() {
    let broken = "param v = 2\nstages v * P\nprogram { F( B unknown }\nlet x = v +\n";
    let names = names(broken);
    assert!(names.definitions.iter().any(|d| d.name == "v"));
    let v_use = broken.find("v * P").expect("use");
    let u = names.use_at(v_use).expect("v is used");
    assert_eq!(u.meaning, Meaning::Defined(0));
    // Unknown names are not uses of anything.
    let unknown = broken.find("unknown").expect("unknown");
    assert!(names.use_at(unknown + 1).is_none());
}

#[test]
fn the_word_lists_cover_the_grammar() {
    let grammar = include_str!("../weave.pest");
    for w in KEYWORDS.iter().chain(FUNCTIONS) {
        assert!(
            grammar.contains(&format!("\"{}\"", w.word)),
            "`{}` is no word of the grammar",
            w.word
        );
        assert!(!w.help.is_empty() && !w.help.ends_with('.'), "{}", w.help);
    }
    // Every keyword the grammar reserves is listed.
    let reserved = grammar
        .split("keyword = _{")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .expect("the keyword rule");
    for quoted in reserved.split('"').skip(1).step_by(2) {
        assert!(
            KEYWORDS.iter().any(|w| w.word == quoted),
            "the keyword `{quoted}` is not listed"
        );
    }
}
