//! The Python package's result types, generated from the JSON Schemas in `schemas/`: every
//! object a schema describes becomes a `TypedDict` in `python/pipeweave/_results.py`, so that the
//! dicts `pipeweave.simulate()`, `compare()`, `sweep()`, `recommend()` and `synthesize()` return
//! are typed by the same documents that check the command line's JSON. `cargo xtask typed` writes
//! the file; a test (and `cargo xtask test`) fails when the committed file is not what the schemas
//! make.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The schemas typed, with the name of the document's type.
const DOCUMENTS: [(&str, &str); 8] = [
    ("pipeweave-simulate.v2.schema.json", "Simulation"),
    ("pipeweave-compare.v2.schema.json", "Comparison"),
    ("pipeweave-sweep.v2.schema.json", "Sweep"),
    ("pipeweave-recommend.v2.schema.json", "Recommendation"),
    (
        "pipeweave-recommend-measured.v1.schema.json",
        "MeasuredRecommendation",
    ),
    ("pipeweave-synthesize.v1.schema.json", "SynthesisReport"),
    ("pipeweave-list.v1.schema.json", "ScheduleListing"),
    ("pipeweave-diff.v1.schema.json", "PlanDiff"),
];

/// Where the generated module goes.
pub const OUTPUT: &str = "python/pipeweave/_results.py";

/// Python's keywords, which a class body cannot use as a key.
const KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// `snake_case` or `kebab-case` as `CamelCase`.
fn camel(name: &str) -> String {
    name.split(['_', '-', ' '])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

/// One document's generator: its `$defs`, the classes made so far (by name, in order).
struct Generator<'a> {
    document: &'a str,
    defs: &'a Map<String, Value>,
    /// The classes of every document so far, in order.
    classes: &'a mut Vec<Class>,
    /// The class made for each `$defs` entry, once.
    made: BTreeMap<String, String>,
}

impl Generator<'_> {
    /// The Python type of `schema`, at `name` (a class name for an object defined here).
    fn ty(&mut self, schema: &Value, name: &str) -> Result<String, String> {
        let Some(obj) = schema.as_object() else {
            return Ok("object".into());
        };
        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            let key = r
                .strip_prefix("#/$defs/")
                .ok_or_else(|| format!("{}: a $ref outside #/$defs: {r}", self.document))?;
            if let Some(made) = self.made.get(key) {
                return Ok(made.clone());
            }
            let def = self
                .defs
                .get(key)
                .ok_or_else(|| format!("{}: no $defs entry `{key}`", self.document))?
                .clone();
            let class = format!("{}{}", self.document, camel(key));
            let ty = self.ty(&def, &class)?;
            self.made.insert(key.to_owned(), ty.clone());
            return Ok(ty);
        }
        // Alternatives beside properties only say which keys are required together: the object
        // is typed by its properties (those keys not required).
        for key in ["oneOf", "anyOf"] {
            if let Some(options) = obj
                .get(key)
                .and_then(Value::as_array)
                .filter(|_| !obj.contains_key("properties"))
            {
                // A value or null keeps the name; several kinds of object are numbered.
                let objects = options.iter().filter(|o| !is_null(o)).count();
                let mut types = Vec::new();
                for (i, option) in options.iter().enumerate() {
                    let at = if objects > 1 {
                        format!("{name}{}", i + 1)
                    } else {
                        name.to_owned()
                    };
                    let t = self.ty(option, &at)?;
                    if !types.contains(&t) {
                        types.push(t);
                    }
                }
                return Ok(types.join(" | "));
            }
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            return literal(values);
        }
        if let Some(value) = obj.get("const") {
            return literal(std::slice::from_ref(value));
        }
        let types: Vec<&str> = match obj.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if obj.contains_key("properties") => vec!["object"],
            _ => return Ok("object".into()),
        };
        let mut out = Vec::new();
        for t in types {
            out.push(match t {
                "integer" => "int".to_owned(),
                "number" => "float".to_owned(),
                "string" => "str".to_owned(),
                "boolean" => "bool".to_owned(),
                "null" => "None".to_owned(),
                "array" => {
                    let items = obj.get("items").cloned().unwrap_or(Value::Null);
                    format!("list[{}]", self.ty(&items, &singular(name))?)
                }
                "object" => self.object(obj, name)?,
                other => return Err(format!("{}: unknown type `{other}`", self.document)),
            });
        }
        Ok(out.join(" | "))
    }

    /// A `TypedDict` for an object with properties (its required keys required, the others not);
    /// `dict[str, T]` for a map.
    fn object(&mut self, obj: &Map<String, Value>, name: &str) -> Result<String, String> {
        let Some(properties) = obj.get("properties").and_then(Value::as_object) else {
            let values = match obj.get("additionalProperties") {
                Some(v @ Value::Object(_)) => self.ty(v, &format!("{name}Value"))?,
                _ => "object".into(),
            };
            return Ok(format!("dict[str, {values}]"));
        };
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields = Vec::new();
        for (key, schema) in properties {
            let ty = self.ty(schema, &format!("{name}{}", camel(key)))?;
            let doc = schema
                .get("description")
                .and_then(Value::as_str)
                .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "));
            fields.push(Field {
                key: key.clone(),
                ty,
                doc,
                required: required.contains(&key.as_str()),
            });
        }
        let doc = obj
            .get("title")
            .or_else(|| obj.get("description"))
            .and_then(Value::as_str)
            .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "));
        // Keys that are not always there: a class of the required keys, and a `total=False`
        // class of the others on top (what every Python from 3.10 reads at run time, unlike
        // `NotRequired` in a module that postpones its annotations).
        let (always, sometimes): (Vec<&Field>, Vec<&Field>) =
            fields.iter().partition(|f| f.required);
        let class = if sometimes.is_empty() {
            class_text(name, "TypedDict", doc.as_deref(), &always)
        } else if always.is_empty() {
            class_text(name, "TypedDict, total=False", doc.as_deref(), &sometimes)
        } else {
            let base = format!("_{name}Required");
            class_text(&base, "TypedDict", None, &always)
                + "\n\n"
                + &class_text(
                    name,
                    &format!("{base}, total=False"),
                    doc.as_deref(),
                    &sometimes,
                )
        };
        if let Some(same) = self.classes.iter().find(|c| c.name == name) {
            if same.text != class {
                return Err(format!("two different classes named {name}"));
            }
            return Ok(name.to_owned());
        }
        // A class alike another document's (the same keys of the same types: the breakdown of a
        // step in simulate, compare and recommend) is that class under a second name, so that a
        // value of one is a value of the other.
        let shape = class.replace(name, "\u{0}");
        let same = self
            .classes
            .iter()
            .find(|c| c.shape == shape && !c.alias)
            .map(|c| c.name.clone());
        let (text, alias, canonical) = match same {
            Some(first) => (format!("{name} = {first}\n"), true, first),
            None => (class, false, name.to_owned()),
        };
        self.classes.push(Class {
            name: name.to_owned(),
            text,
            shape,
            alias,
        });
        Ok(canonical)
    }
}

/// A class of the module: a `TypedDict`, or another name of one alike.
struct Class {
    name: String,
    /// Its text (an alias's is its one line).
    text: String,
    /// Its text with its own name left out: what makes two classes alike.
    shape: String,
    /// Whether it is another name of an earlier class.
    alias: bool,
}

/// Whether `schema` is `{"type": "null"}`.
fn is_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// The name of one item of a list named `name`: `Rows` → `Row`, `Points` → `Point`; a name that
/// is no plural gets `Item`.
fn singular(name: &str) -> String {
    if name.ends_with("ss") || name.ends_with("Series") || !name.ends_with('s') {
        format!("{name}Item")
    } else if let Some(stem) = name.strip_suffix("ies") {
        format!("{stem}y")
    } else {
        name[..name.len() - 1].to_owned()
    }
}

/// A key of a typed dict.
struct Field {
    key: String,
    ty: String,
    doc: Option<String>,
    required: bool,
}

/// A `class NAME(BASES):` with `fields`, or the functional form where a key is a Python keyword.
fn class_text(name: &str, bases: &str, doc: Option<&str>, fields: &[&Field]) -> String {
    let mut class = String::new();
    if fields.iter().any(|f| KEYWORDS.contains(&f.key.as_str())) {
        let total = if bases.contains("total=False") {
            ", total=False"
        } else {
            ""
        };
        let _ = writeln!(class, "{name} = TypedDict(\n    \"{name}\",\n    {{");
        for f in fields {
            let _ = writeln!(class, "        \"{}\": {},", f.key, f.ty);
        }
        let _ = writeln!(class, "    }}{total},\n)");
        return class;
    }
    let _ = writeln!(class, "class {name}({bases}):");
    if let Some(doc) = doc {
        let _ = writeln!(class, "    \"\"\"{}\"\"\"\n", doc.replace('"', "'"));
    }
    if fields.is_empty() {
        let _ = writeln!(class, "    pass");
    }
    for f in fields {
        let _ = writeln!(class, "    {}: {}", f.key, f.ty);
        if let Some(doc) = &f.doc {
            let _ = writeln!(class, "    \"\"\"{}\"\"\"", doc.replace('"', "'"));
        }
    }
    class
}

/// `Literal[...]` of JSON scalars.
fn literal(values: &[Value]) -> Result<String, String> {
    let items: Vec<String> = values
        .iter()
        .map(|v| match v {
            Value::String(s) => Ok(format!("{s:?}")),
            Value::Bool(true) => Ok("True".into()),
            Value::Bool(false) => Ok("False".into()),
            Value::Null => Ok("None".into()),
            Value::Number(n) => Ok(n.to_string()),
            other => Err(format!("a literal of {other}")),
        })
        .collect::<Result<_, _>>()?;
    Ok(format!("Literal[{}]", items.join(", ")))
}

/// The module the schemas in `schemas` make.
pub fn generate(schemas: &Path) -> Result<String, String> {
    let mut out = String::from(
        "\"\"\"The results of pipeweave's commands as typed dicts, generated from the JSON Schemas in\n\
         `schemas/` by `cargo xtask typed` (do not edit: a test checks this file against them).\n\
         \n\
         Each document type is what the command line prints with `--format json` and the package\n\
         returns: `Simulation` (`simulate`), `Comparison` (`compare`), `Sweep` (`sweep`),\n\
         `Recommendation` (`recommend`), `SynthesisReport` (`synthesize`), `ScheduleListing`\n\
         (`list`).\n\
         \"\"\"\n\n\
         from typing import Literal, TypedDict\n\n\
         __all__ = [\n",
    );
    let mut classes: Vec<Class> = Vec::new();
    for (file, name) in DOCUMENTS {
        let text = std::fs::read_to_string(schemas.join(file))
            .map_err(|e| format!("cannot read schemas/{file}: {e}"))?;
        let schema: Value =
            serde_json::from_str(&text).map_err(|e| format!("schemas/{file}: {e}"))?;
        let empty = Map::new();
        let defs = schema
            .get("$defs")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut g = Generator {
            document: name,
            defs,
            classes: &mut classes,
            made: BTreeMap::new(),
        };
        let top = g.ty(&schema, name)?;
        if top != name {
            return Err(format!("schemas/{file} is not an object with properties"));
        }
    }
    for c in &classes {
        let _ = writeln!(out, "    \"{}\",", c.name);
    }
    out.push_str("]\n");
    for c in &classes {
        // An alias follows the class before it with one blank line; a class gets two.
        out.push_str(if c.alias { "\n" } else { "\n\n" });
        out.push_str(&c.text);
    }
    Ok(out)
}

/// `cargo xtask typed`: writes the module.
pub fn write(root: &Path) -> Result<(), String> {
    let text = generate(&root.join("schemas"))?;
    std::fs::write(root.join(OUTPUT), text).map_err(|e| format!("cannot write {OUTPUT}: {e}"))
}

/// Fails when the committed module is not what the schemas make.
pub fn check(root: &Path) -> Result<(), String> {
    let want = generate(&root.join("schemas"))?;
    let have = std::fs::read_to_string(root.join(OUTPUT)).unwrap_or_default();
    if have == want {
        Ok(())
    } else {
        Err(format!(
            "{OUTPUT} is not what schemas/ make: run `cargo xtask typed` and commit it"
        ))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_results_module_is_generated_from_the_schemas() {
        let root = super::super::root();
        if let Err(e) = super::check(&root) {
            panic!("{e}");
        }
    }

    #[test]
    fn names_and_literals() {
        assert_eq!(super::camel("rejected_shapes"), "RejectedShapes");
        assert_eq!(super::singular("SweepSeries"), "SweepSeriesItem");
        assert_eq!(super::singular("ComparisonRows"), "ComparisonRow");
        assert_eq!(super::singular("Verdicts"), "Verdict");
        let l = super::literal(&[serde_json::json!("a"), serde_json::json!(true)]).unwrap();
        assert_eq!(l, "Literal[\"a\", True]");
    }
}
