//! The HTML report: one self-contained page (inline CSS and SVG; no scripts, fonts or any other
//! request, enforced by a Content-Security-Policy that forbids loading anything) holding tables,
//! figures and notes in sections.
//!
//! Figures fit the page's width (their SVG scaled through its viewBox); a wide one gets a zoom
//! control made of radio buttons and CSS alone, so it needs no script.
//!
//! The page is assembled from [`Block`]s, so whoever computes the figures decides what goes in;
//! this module only lays them out and escapes every piece of text.

use crate::svg::esc;
use std::fmt::Write;

/// One piece of a section.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A paragraph of plain text.
    Paragraph(String),
    /// A table of plain-text cells; cells that start with a number are right-aligned.
    Table {
        /// What the table shows, above it.
        caption: Option<String>,
        /// The column names.
        header: Vec<String>,
        /// One row of cells per line.
        rows: Vec<Vec<String>>,
    },
    /// An SVG drawn by this crate ([`crate::timelines_svg`], [`crate::sweep_svg`]), inserted as
    /// markup, with a caption. Only pass SVG this crate produced: it is not escaped.
    Figure {
        /// The SVG markup.
        svg: String,
        /// Whether it gets a zoom control (fit to the page, 2×, 4×, its own size), for figures
        /// too detailed to read at the page's width.
        zoom: bool,
        /// What the figure shows, under it.
        caption: String,
    },
    /// Preformatted text (e.g. a text table or timeline).
    Pre(String),
    /// A bulleted list of plain-text items.
    List(Vec<String>),
}

/// A titled part of the page.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The fragment id (`#id`) used by the page's table of contents.
    pub id: String,
    /// The section's heading.
    pub heading: String,
    /// Its content, in order.
    pub blocks: Vec<Block>,
}

/// A whole page.
#[derive(Debug, Clone, PartialEq)]
pub struct HtmlReport {
    /// The page's title and heading.
    pub title: String,
    /// Lines under the title (what was compared, on which spec).
    pub intro: Vec<String>,
    /// The sections, in order (with a table of contents when there are several).
    pub sections: Vec<Section>,
    /// A line at the bottom (e.g. the tool and its version); no dates, so pages are reproducible.
    pub footer: String,
}

const CSS: &str = "\
:root{color-scheme:light}
body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:0;color:#1b1b1b;background:#fafafa;line-height:1.45}
header,main,footer{max-width:1280px;margin:0 auto;padding:0 24px}
header{padding-top:20px}
h1{font-size:1.6em;margin:0 0 6px}
h2{font-size:1.25em;margin:28px 0 10px;border-bottom:1px solid #ddd;padding-bottom:4px}
.intro{color:#444;margin:2px 0}
nav ul{list-style:none;padding:0;margin:12px 0;display:flex;flex-wrap:wrap;gap:14px}
nav a{color:#2a5d9f;text-decoration:none}
table{border-collapse:collapse;background:#fff;margin:8px 0 16px;font-size:0.9em}
caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border:1px solid #d8d8d8;padding:4px 9px;vertical-align:top}
th{background:#f0f3f7;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:10px 0 18px;background:#fff;border:1px solid #e2e2e2;padding:8px}
figure .scroll{overflow-x:auto}
figure svg{display:block;max-width:100%;height:auto}
.zoom-name{font-size:0.85em;color:#444}
.zoomable input{margin:0 3px 6px 12px;vertical-align:middle}
.zoomable label{font-size:0.85em;color:#333;vertical-align:middle}
.z-2:checked~.scroll>svg{max-width:none;width:200%}
.z-4:checked~.scroll>svg{max-width:none;width:400%}
.z-1:checked~.scroll>svg{max-width:none}
figcaption{color:#444;font-size:0.9em;margin-top:6px}
pre{background:#fff;border:1px solid #e2e2e2;padding:8px;overflow-x:auto;font-size:0.85em}
footer{color:#777;font-size:0.85em;padding-bottom:24px;margin-top:24px}
";

/// Whether a cell reads as a quantity (`27.27%`, `1.5 ms`, `3.2k`, `-4`, `12.0 GiB`), to
/// right-align it; a name (`1f1b`) or a phrase (`4 ranks, 1 pipeline`) is not one.
fn is_numeric(cell: &str) -> bool {
    let t = cell.trim().trim_start_matches(['-', '−', '+']);
    let mut words = t.split_whitespace();
    let token = words.next().unwrap_or("");
    let unit_ok = match (words.next(), words.next()) {
        (None, _) => true,
        (Some(u), None) => u.len() <= 3 && u.chars().all(|c| c.is_alphabetic()),
        _ => false,
    };
    let body = token.trim_end_matches(['k', 'M', 'G', 'T', 'x', '×']);
    unit_ok
        && body.starts_with(|c: char| c.is_ascii_digit())
        && body
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '%'))
        && token.len() - body.len() <= '×'.len_utf8()
}

/// Renders the page.
pub fn html_page(report: &HtmlReport) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\"/>\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<header>\n<h1>{}</h1>\n",
        esc(&report.title),
        esc(&report.title)
    );
    for line in &report.intro {
        let _ = writeln!(out, "<p class=\"intro\">{}</p>", esc(line));
    }
    if report.sections.len() > 1 {
        out.push_str("<nav><ul>");
        for s in &report.sections {
            let _ = write!(
                out,
                "<li><a href=\"#{}\">{}</a></li>",
                esc(&s.id),
                esc(&s.heading)
            );
        }
        out.push_str("</ul></nav>\n");
    }
    out.push_str("</header>\n<main>\n");
    let mut figures = 0;
    for s in &report.sections {
        let _ = writeln!(
            out,
            "<section id=\"{}\">\n<h2>{}</h2>",
            esc(&s.id),
            esc(&s.heading)
        );
        for b in &s.blocks {
            block(&mut out, b, &mut figures);
        }
        out.push_str("</section>\n");
    }
    let _ = write!(
        out,
        "</main>\n<footer>{}</footer>\n</body>\n</html>\n",
        esc(&report.footer)
    );
    out
}

/// The zoom levels of a figure: (class, label); the CSS above gives each its width.
const ZOOMS: [(&str, &str); 4] = [
    ("z-fit", "fit to page"),
    ("z-2", "2×"),
    ("z-4", "4×"),
    ("z-1", "own size"),
];

/// A figure's markup; `figures` numbers the zoomable ones, so their radio buttons stay apart.
fn figure(out: &mut String, svg: &str, caption: &str, zoom: bool, figures: &mut usize) {
    if zoom {
        *figures += 1;
        out.push_str("<figure class=\"zoomable\">\n<span class=\"zoom-name\">zoom:</span>");
        for (i, (class, label)) in ZOOMS.iter().enumerate() {
            let id = format!("zoom-{figures}-{}", &class[2..]);
            let checked = if i == 0 { " checked=\"checked\"" } else { "" };
            let _ = write!(
                out,
                "<input type=\"radio\" name=\"zoom-{figures}\" id=\"{id}\" class=\"{class}\"{checked}/>\
                 <label for=\"{id}\">{label}</label>"
            );
        }
        out.push('\n');
    } else {
        out.push_str("<figure>\n");
    }
    let _ = writeln!(
        out,
        "<div class=\"scroll\">\n{}\n</div>\n<figcaption>{}</figcaption>\n</figure>",
        svg.trim_end(),
        esc(caption)
    );
}

fn block(out: &mut String, b: &Block, figures: &mut usize) {
    match b {
        Block::Paragraph(text) => {
            let _ = writeln!(out, "<p>{}</p>", esc(text));
        }
        Block::Table {
            caption,
            header,
            rows,
        } => {
            out.push_str("<table>");
            if let Some(c) = caption {
                let _ = write!(out, "<caption>{}</caption>", esc(c));
            }
            out.push_str("\n<thead><tr>");
            for h in header {
                let _ = write!(out, "<th>{}</th>", esc(h));
            }
            out.push_str("</tr></thead>\n<tbody>\n");
            for row in rows {
                out.push_str("<tr>");
                for cell in row {
                    let class = if is_numeric(cell) {
                        " class=\"num\""
                    } else {
                        ""
                    };
                    let _ = write!(out, "<td{class}>{}</td>", esc(cell));
                }
                out.push_str("</tr>\n");
            }
            out.push_str("</tbody></table>\n");
        }
        Block::Figure { svg, caption, zoom } => figure(out, svg, caption, *zoom, figures),
        Block::Pre(text) => {
            let _ = writeln!(out, "<pre>{}</pre>", esc(text.trim_end()));
        }
        Block::List(items) => {
            out.push_str("<ul>\n");
            for i in items {
                let _ = writeln!(out, "<li>{}</li>", esc(i));
            }
            out.push_str("</ul>\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_numeric;

    #[test]
    fn quantities() {
        for yes in [
            "27.27%", "1.5 ms", "3.2k", "-4", "1,024", "2×", "0", "12.0 GiB",
        ] {
            assert!(is_numeric(yes), "{yes}");
        }
        for no in [
            "1f1b",
            "zb-h1",
            "",
            "-",
            "yes",
            "M ≥ 2P",
            "4 ranks, 1 pipeline",
        ] {
            assert!(!is_numeric(no), "{no}");
        }
    }
}
