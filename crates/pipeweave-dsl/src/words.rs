//! Plain words for grammar rules, so that users read "expected a number", never a rule name.

use crate::grammar::Rule;

/// The functions of the language, in the order messages list them.
pub(crate) const FUNCTIONS: &[&str] = &["min", "max"];

/// What a grammar rule stands for, in words a user knows.
fn word(rule: Rule) -> &'static str {
    match rule {
        Rule::EOI => "end of file",
        Rule::unit => "a top-level item",
        Rule::doc_item
        | Rule::same_item
        | Rule::param_item
        | Rule::pipelines_item
        | Rule::stages_item
        | Rule::place_item
        | Rule::program_item => {
            "a top-level item (doc, param, let, require, pipelines, stages, place or program)"
        }
        Rule::kw_same | Rule::kw_as | Rule::kw_plugin => "`same as plugin NAME`",
        Rule::plugin_name => "a plugin name",
        Rule::type_bool
        | Rule::type_int
        | Rule::type_choice
        | Rule::kw_int
        | Rule::kw_choice
        | Rule::param_type => "a type (bool, int or choice(...))",
        Rule::kw_in => "`in`",
        Rule::int_range | Rule::range_incl | Rule::range_excl => "a range (`0..=8`, `1..`)",
        Rule::bound => "a number",
        Rule::multiple | Rule::kw_multiple | Rule::kw_of => "`multiple of`",
        Rule::option => "an option name",
        Rule::unknown_call | Rule::unknown_func | Rule::call_group => "an expression",
        Rule::place_loop | Rule::place_vshape | Rule::place_mirror => {
            "a placement (loop, vshape, mirror or `= expression`)"
        }
        Rule::block => "`{`",
        Rule::let_stmt => "let",
        Rule::require_stmt => "require",
        Rule::repeat_stmt => "repeat",
        Rule::for_stmt => "for",
        Rule::if_stmt => "if",
        Rule::steps | Rule::pair | Rule::action | Rule::kind => "an action (F, B, I or W)",
        Rule::chunk_lit | Rule::chunk_expr => "a chunk",
        Rule::stage_expr => "a stage",
        Rule::microbatch => "a micro-batch",
        Rule::optional => "`?`",
        Rule::expr | Rule::conditional | Rule::call | Rule::func | Rule::boolean => "an expression",
        Rule::neg | Rule::not => "an expression",
        Rule::add
        | Rule::sub
        | Rule::mul
        | Rule::div
        | Rule::rem
        | Rule::le
        | Rule::ge
        | Rule::eq
        | Rule::ne
        | Rule::lt
        | Rule::gt
        | Rule::and
        | Rule::or => "an operator",
        Rule::int => "a number",
        Rule::name => "a name",
        Rule::reserved => "a keyword",
        Rule::string | Rule::string_inner => "a quoted string",
        Rule::item => {
            "a top-level item (doc, param, let, require, pipelines, stages, place or program)"
        }
        Rule::stmt | Rule::step => "an action (F, B, I or W)",
        Rule::target => "a chunk",
        Rule::prefix | Rule::primary | Rule::atom => "an expression",
        Rule::infix => "an operator",
        Rule::ident_char => "a name",
        Rule::keyword => "a keyword",
        Rule::WHITESPACE | Rule::COMMENT => "a space",
    }
}

/// "a, b or c" for a set of rules, deduplicated, in a stable order.
pub(crate) fn expected(rules: &[Rule]) -> String {
    let mut words: Vec<&str> = Vec::new();
    for &r in rules {
        let w = word(r);
        if !words.contains(&w) {
            words.push(w);
        }
    }
    // Inside a block: say which statements may come, not the parts of an action.
    if words.contains(&"let") {
        words.retain(|w| !matches!(*w, "a chunk" | "a stage" | "a micro-batch" | "`?`"));
        words.push("`}`");
    }
    // A name, a number or a quoted string is an expression too; say the most general thing once.
    if words.contains(&"an expression") {
        words.retain(|w| *w != "a number" && *w != "a name" && *w != "a quoted string");
    }
    words.sort_by_key(|w| rank(w));
    match words.as_slice() {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// Orders the words so the most likely intent comes first.
fn rank(w: &str) -> u8 {
    match w {
        "a number" | "a name" | "an expression" => 0,
        "an action (F, B, I or W)" => 1,
        "an operator" => 3,
        "end of file" => 9,
        _ => 2,
    }
}

/// The length in bytes of the token at `at` (at least one character, zero at the end).
pub(crate) fn token_len(source: &str, at: usize) -> usize {
    let Some(rest) = source.get(at..) else {
        return 0;
    };
    let mut chars = rest.char_indices();
    let Some((_, first)) = chars.next() else {
        return 0;
    };
    if first.is_ascii_alphanumeric() || first == '_' {
        rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len())
    } else {
        first.len_utf8()
    }
}

/// How to name the token found at `at`: "`foo`", "end of file", "a new line".
pub(crate) fn found(source: &str, at: usize) -> String {
    let len = token_len(source, at);
    match source.get(at..at + len) {
        None | Some("") => "end of file".to_owned(),
        Some("\n") | Some("\r") => "end of line".to_owned(),
        Some(tok) if tok.chars().all(|c| c.is_ascii_digit()) => format!("number `{tok}`"),
        Some(tok) => format!("`{}`", tok.escape_debug()),
    }
}

/// A hint for common slips, when one applies.
pub(crate) fn help(
    source: &str,
    at: usize,
    variant: &pest::error::ErrorVariant<Rule>,
) -> Option<String> {
    let tok = source.get(at..at + token_len(source, at)).unwrap_or("");
    let positives: &[Rule] = match variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } => positives,
        pest::error::ErrorVariant::CustomError { .. } => &[],
    };
    match tok {
        "&&" | "&" if positives.iter().any(|r| word(*r) == "an operator") => {
            Some("write `and` for a logical and; `&` joins an overlapped pair: F0 & B1".into())
        }
        "||" | "|" => Some("write `or` for a logical or".into()),
        "!" => Some("write `not` for a logical not".into()),
        "=" if positives.iter().any(|r| word(*r) == "an operator") => {
            Some("compare with `==`".into())
        }
        _ if matches!(tok, "F" | "B" | "I" | "W")
            || (tok.len() > 1
                && tok.starts_with(['F', 'B', 'I', 'W'])
                && tok[1..].chars().all(|c| c.is_ascii_digit())) =>
        {
            Some("F, B, I and W followed by digits are actions, not names".into())
        }
        _ => None,
    }
}
