use crate::count;
use pipeweave_report::{Block, HtmlReport, Section, html_page};

fn page() -> HtmlReport {
    HtmlReport {
        title: "compare <1f1b> & dualpipe".into(),
        intro: vec!["spec: unit".into()],
        sections: vec![
            Section {
                id: "numbers".into(),
                heading: "Numbers".into(),
                blocks: vec![Block::Table {
                    caption: Some("step".into()),
                    header: vec!["schedule".into(), "bubble".into()],
                    rows: vec![vec!["1f1b".into(), "27.27%".into()]],
                }],
            },
            Section {
                id: "figures".into(),
                heading: "Figures".into(),
                blocks: vec![
                    Block::Figure {
                        svg: "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1\" height=\"1\"></svg>\n"
                            .into(),
                        caption: "a dot".into(),
                        zoom: true,
                    },
                    Block::List(vec!["a < b".into()]),
                    Block::Pre("x & y".into()),
                    Block::Paragraph("done".into()),
                ],
            },
        ],
        footer: "pipeweave".into(),
    }
}

#[test]
fn page_snapshot() {
    let html = page();
    insta::assert_snapshot!(html_page(&html));
}

#[test]
fn page_is_well_formed_without_requests() {
    let html = html_page(&page());
    // The page is also well-formed XML once the doctype is dropped, which catches unbalanced or
    // unescaped markup.
    let body = html.trim_start_matches("<!DOCTYPE html>\n");
    assert_eq!(count(body, "table"), 1);
    assert_eq!(count(body, "svg"), 1);
    for forbidden in ["<script", "<link", "http://", "https://", "@import", "url("] {
        let outside_xmlns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        assert!(!outside_xmlns.contains(forbidden), "{forbidden}");
    }
}
